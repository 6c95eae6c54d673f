import { describe, expect, it } from 'vitest';
import { readUntilSteady, type SteadyReadOptions } from './steady-count';

/** A fake clock that `sleep` advances, and a reader returning `values` (the last one repeats). */
function scripted(values: (number | null)[]): { read: () => Promise<number | null>; o: SteadyReadOptions; reads: () => number } {
  let t = 0;
  let i = 0;
  return {
    read: () => Promise.resolve(values[Math.min(i++, values.length - 1)] ?? null),
    reads: () => i,
    o: { intervalMs: 100, steadyMs: 500, maxMs: 3_000, now: () => t, sleep: (ms) => ((t += ms), Promise.resolve()) },
  };
}

describe('readUntilSteady', () => {
  it('keeps reading while the count still grows and returns the settled value (a single read returned the first, stale one)', async () => {
    // The emulator moves messages on a moment after the visibility reset: 0, then 3.
    const s = scripted([0, 0, 3]);
    const r = await readUntilSteady(s.read, s.o);
    expect(r).toMatchObject({ value: 3, steady: true });
    // 0 at t=0 and t=100, 3 at t=200, then steady until t=700: readings at 300..700.
    expect(r.readings).toBe(8);
    expect(r.spanMs).toBe(700);
  });

  it('a count that never changes costs the steady period only', async () => {
    const s = scripted([5]);
    const r = await readUntilSteady(s.read, s.o);
    expect(r).toEqual({ value: 5, readings: 6, spanMs: 500, steady: true });
  });

  it('a count that keeps changing stops at maxMs with the last reading, not steady', async () => {
    const s = scripted(Array.from({ length: 100 }, (_, k) => k));
    const r = await readUntilSteady(s.read, s.o);
    expect(r.steady).toBe(false);
    expect(r.spanMs).toBe(3_000);
    expect(r.value).toBe(30);
  });

  it('null is a value like any other; errors of the reader propagate', async () => {
    const s = scripted([null]);
    expect(await readUntilSteady(s.read, s.o)).toMatchObject({ value: null, steady: true });
    await expect(readUntilSteady(() => Promise.reject(new Error('boom')), s.o)).rejects.toThrow('boom');
  });
});
