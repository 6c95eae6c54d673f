import { describe, expect, it } from 'vitest';
import { mapWithConcurrency } from './concurrency';

const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('mapWithConcurrency', () => {
  it('keeps input order and never runs more than the bound at once', async () => {
    let running = 0;
    let peak = 0;
    const out = await mapWithConcurrency(Array.from({ length: 40 }, (_, i) => i), 16, async (n) => {
      running++;
      peak = Math.max(peak, running);
      await tick(n % 3);
      running--;
      return n * 2;
    });
    expect(out).toEqual(Array.from({ length: 40 }, (_, i) => i * 2));
    expect(peak).toBe(16);
  });

  it('rethrows the first error after the running calls settle, and starts no new ones', async () => {
    const started: number[] = [];
    const p = mapWithConcurrency([0, 1, 2, 3, 4, 5], 2, async (n) => {
      started.push(n);
      await tick(5);
      if (n === 1) throw new Error('boom 1');
      return n;
    });
    await expect(p).rejects.toThrow('boom 1');
    expect(started).toEqual([0, 1, 2]);
  });

  it('stops starting work once the signal is aborted', async () => {
    const ac = new AbortController();
    const seen: number[] = [];
    await mapWithConcurrency([0, 1, 2, 3], 1, async (n) => {
      seen.push(n);
      if (n === 1) ac.abort();
      await tick(1);
      return n;
    }, ac.signal);
    expect(seen).toEqual([0, 1]);
  });
});
