import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { computeStats, formatMs, percentile, shareAbove } from './stats';
import { seededRandom } from './retry';

/** Exponential samples with the given mean (inverse transform), ms. */
function exponential(n: number, meanMs: number, seed: number): number[] {
  const r = seededRandom(seed);
  return Array.from({ length: n }, () => -meanMs * Math.log(1 - r()));
}

describe('computeStats (ms)', () => {
  it('1..1000 ms: nearest-rank percentiles are exact', () => {
    const s = computeStats(Array.from({ length: 1000 }, (_, i) => i + 1))!;
    expect(s.n).toBe(1000);
    expect(s.meanMs).toBeCloseTo(500.5, 10);
    expect(s.p50Ms).toBe(500);
    expect(s.p90Ms).toBe(900);
    expect(s.p95Ms).toBe(950);
    expect(s.p99Ms).toBe(990);
    expect(s.maxMs).toBe(1000);
    expect(s.longTail).toBe(false);
    expect(s.histogram.reduce((a, b) => a + b.count, 0)).toBe(1000);
    expect(s.histogram[s.histogram.length - 1]!.cumulative).toBe(1);
    expect(s.cdf[s.cdf.length - 1]).toEqual({ atMs: 1000, fraction: 1 });
  });

  it('constant 200 ms service time', () => {
    const s = computeStats(new Array<number>(500).fill(200))!;
    expect([s.meanMs, s.p50Ms, s.p99Ms, s.maxMs]).toEqual([200, 200, 200, 200]);
    expect(s.tailRatio).toBe(1);
  });

  it('exponential(mean 200 ms): mean ≈ 200, p99 ≈ 200·ln 100 ≈ 921, long tail (p99/p50 = ln100/ln2 ≈ 6.6)', () => {
    const s = computeStats(exponential(50_000, 200, 42))!;
    expect(s.meanMs).toBeGreaterThan(195);
    expect(s.meanMs).toBeLessThan(205);
    expect(s.p50Ms).toBeGreaterThan(200 * Math.LN2 * 0.95);
    expect(s.p50Ms).toBeLessThan(200 * Math.LN2 * 1.05);
    expect(s.p99Ms).toBeGreaterThan(921 * 0.93);
    expect(s.p99Ms).toBeLessThan(921 * 1.07);
    expect(s.longTail).toBe(true);
  });

  it('drops negative and non-finite samples; null when none remain', () => {
    expect(computeStats([-1, Number.NaN, Number.POSITIVE_INFINITY])).toBeNull();
    expect(computeStats([-5, 10, 20])!.n).toBe(2);
  });

  it('properties: p50 ≤ p90 ≤ p95 ≤ p99 ≤ max, min ≤ mean ≤ max, histogram counts sum to n', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 1e7, noNaN: true }), { minLength: 1, maxLength: 300 }), (xs) => {
        const s = computeStats(xs)!;
        expect(s.p50Ms).toBeLessThanOrEqual(s.p90Ms);
        expect(s.p90Ms).toBeLessThanOrEqual(s.p95Ms);
        expect(s.p95Ms).toBeLessThanOrEqual(s.p99Ms);
        expect(s.p99Ms).toBeLessThanOrEqual(s.maxMs);
        expect(s.meanMs).toBeGreaterThanOrEqual(s.minMs - 1e-6);
        expect(s.meanMs).toBeLessThanOrEqual(s.maxMs + 1e-6);
        expect(s.histogram.reduce((a, b) => a + b.count, 0)).toBe(xs.length);
        expect(s.histogram.length).toBeLessThanOrEqual(201);
      }),
    );
  });

  it('percentile and shareAbove', () => {
    expect(percentile([1, 2, 3, 4], 50)).toBe(2);
    expect(percentile([7], 99)).toBe(7);
    expect(shareAbove([100, 200, 300, 400], 250)).toBe(0.5);
    expect(shareAbove([], 1)).toBe(0);
  });

  it('formatMs', () => {
    expect(formatMs(850)).toBe('850 ms');
    expect(formatMs(1500)).toBe('1.5 s');
    expect(formatMs(250_000)).toBe('4 min 10 s');
    expect(formatMs(7_500_000)).toBe('2 h 5 min');
  });
});
