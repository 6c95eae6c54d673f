import { QueuescopeError } from '../../shared/domain';

/** The error every cancelled call throws (`CANCELLED`). */
export function cancelledError(): QueuescopeError {
  return new QueuescopeError('CANCELLED', 'The operation was cancelled.');
}

/** @throws QueuescopeError `CANCELLED` when `signal` is aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw cancelledError();
}

/**
 * Resolves like `p`, or rejects with `CANCELLED` as soon as `signal` aborts. `p` keeps running
 * (a broker call cannot be withdrawn); callers clean up after it where that matters.
 * Non-Error rejections are wrapped in an Error.
 */
export function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return p;
  throwIfAborted(signal);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(cancelledError());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
