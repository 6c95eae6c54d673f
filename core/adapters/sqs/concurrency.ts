/**
 * Runs `fn` over `items` with at most `concurrency` calls in flight, keeping the input order in
 * the result. Stops starting new calls once one fails or `signal` is aborted; the first error is
 * rethrown after the calls already running have settled (so no request is left dangling).
 *
 * (Kept here instead of adding `p-limit` as a dependency: it is the only place the SQS adapter
 * needs bounded concurrency, and it must also stop on an AbortSignal.)
 */
export async function mapWithConcurrency<T, R>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T, index: number) => Promise<R>,
  signal?: AbortSignal,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  // Shared by the workers (an object, so the flag reads as mutable across the closures).
  const state: { next: number; failed: boolean; errors: unknown[] } = { next: 0, failed: false, errors: [] };
  const worker = async (): Promise<void> => {
    while (!state.failed && state.next < items.length && signal?.aborted !== true) {
      const i = state.next++;
      try {
        results[i] = await fn(items[i] as T, i);
      } catch (e) {
        state.failed = true;
        state.errors.push(e);
      }
    }
  };
  const n = Math.max(1, Math.min(concurrency, items.length));
  await Promise.all(Array.from({ length: n }, worker));
  if (state.failed) throw state.errors[0];
  return results;
}
