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

/** Per parent signal: the child controllers of the calls in flight (see {@link withCallSignal}). */
const relays = new WeakMap<AbortSignal, Set<AbortController>>();

/**
 * Runs `run` with a signal of its own that aborts when `parent` aborts (with the parent's
 * reason). However many calls run at once on one parent, the parent carries at most ONE abort
 * listener (added the first time, removed by `once` when it fires); each call's child signal
 * is dropped from the relay when the call settles. Use it around client calls that add their own
 * abort listener per request (the AWS SDK's HTTP handler does, until the socket closes), so
 * concurrent calls sharing one operation signal do not pile listeners on it (Node's
 * `MaxListenersExceededWarning` at 11). `parent` undefined → `run(undefined)`; an already aborted
 * parent is passed as is.
 * @returns whatever `run` resolves to; rejects with whatever it rejects with.
 */
export async function withCallSignal<T>(parent: AbortSignal | undefined, run: (signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
  if (parent === undefined || parent.aborted) return run(parent);
  let calls = relays.get(parent);
  if (calls === undefined) {
    const set = new Set<AbortController>();
    calls = set;
    relays.set(parent, set);
    parent.addEventListener(
      'abort',
      () => {
        for (const c of set) c.abort(parent.reason);
        set.clear();
        relays.delete(parent);
      },
      { once: true },
    );
  }
  const child = new AbortController();
  calls.add(child);
  try {
    return await run(child.signal);
  } finally {
    calls.delete(child);
  }
}
