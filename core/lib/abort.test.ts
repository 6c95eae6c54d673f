import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { withCallSignal } from './abort';

/** A call that adds its own abort listener per request (like the AWS SDK's HTTP handler) and removes it when done. */
function fakeRequest(signal: AbortSignal | undefined, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(t);
      reject(new Error(`aborted: ${String(signal?.reason)}`));
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve('ok');
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

describe('withCallSignal', () => {
  it('keeps one abort listener on the parent however many calls run at once, none on the children after', async () => {
    const parent = new AbortController();
    const children: AbortSignal[] = [];
    const calls = Array.from({ length: 40 }, (_, i) =>
      withCallSignal(parent.signal, (s) => {
        if (s !== undefined) children.push(s);
        return fakeRequest(s, 5 + (i % 7));
      }),
    );
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
    expect(await Promise.all(calls)).toEqual(Array.from({ length: 40 }, () => 'ok'));
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
    expect(children).toHaveLength(40);
    expect(new Set(children).size).toBe(40);
    for (const c of children) expect(getEventListeners(c, 'abort')).toHaveLength(0);
    // Later calls reuse the same single listener.
    await withCallSignal(parent.signal, (s) => fakeRequest(s, 1));
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
  });

  it('aborts the calls in flight with the parent’s reason, and not the finished ones', async () => {
    const parent = new AbortController();
    const done: AbortSignal[] = [];
    await withCallSignal(parent.signal, (s) => {
      if (s !== undefined) done.push(s);
      return fakeRequest(s, 1);
    });
    const inFlight = Array.from({ length: 12 }, () => withCallSignal(parent.signal, (s) => fakeRequest(s, 10_000)));
    setTimeout(() => parent.abort('stop'), 5);
    const settled = await Promise.allSettled(inFlight);
    expect(settled.every((r) => r.status === 'rejected' && String(r.reason).includes('aborted: stop'))).toBe(true);
    expect(done[0]?.aborted).toBe(false);
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
  });

  it('passes an absent or already aborted parent as is', async () => {
    expect(await withCallSignal(undefined, (s) => Promise.resolve(s))).toBeUndefined();
    const aborted = AbortSignal.abort('x');
    expect(await withCallSignal(aborted, (s) => Promise.resolve(s))).toBe(aborted);
  });
});
