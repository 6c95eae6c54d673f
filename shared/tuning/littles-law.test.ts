import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { littlesLawFromPeriods } from './littles-law';

describe("Little's law from one-minute periods", () => {
  it('4 in flight, 1,200 deleted per minute (20/s) → 200 ms', () => {
    const t = [0, 60_000, 120_000];
    const r = littlesLawFromPeriods(
      t.map((x) => ({ t: x, value: 4 })),
      t.map((x) => ({ t: x, value: 1200 })),
      60_000,
    )!;
    expect(r.meanMs).toBeCloseTo(200, 10);
    expect(r.perSecond).toBe(20);
    expect(r.periods).toBe(3);
  });

  it('idle periods and periods missing a metric are left out; nothing usable → null', () => {
    const r = littlesLawFromPeriods(
      [
        { t: 0, value: 2 },
        { t: 60_000, value: 0 },
      ],
      [
        { t: 0, value: 600 },
        { t: 60_000, value: 0 },
        { t: 120_000, value: 900 },
      ],
      60_000,
    )!;
    expect(r.periods).toBe(1);
    expect(r.meanMs).toBeCloseTo(200, 10);
    expect(littlesLawFromPeriods([{ t: 0, value: 1 }], [{ t: 0, value: 0 }], 60_000)).toBeNull();
    expect(littlesLawFromPeriods([], [], 0)).toBeNull();
  });

  it('W × λ = L for any steady state', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.01, max: 1000, noNaN: true }), fc.double({ min: 0.01, max: 10_000, noNaN: true }), (L, lambda) => {
        const r = littlesLawFromPeriods([{ t: 0, value: L }], [{ t: 0, value: lambda * 60 }], 60_000)!;
        expect((r.meanMs / 1000) * r.perSecond).toBeCloseTo(L, 6);
      }),
    );
  });
});
