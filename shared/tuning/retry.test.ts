import { describe, expect, it } from 'vitest';
import { checkRetrySchedule, policyFromBullmqOptions, retryDelayMs } from './retry';

describe('retry schedule (ms)', () => {
  it('BullMQ exponential delay 1000, attempts 5: waits 1, 2, 4, 8 s (attempts include the first try)', () => {
    const p = policyFromBullmqOptions({ attempts: 5, backoff: { type: 'exponential', delay: 1000 } })!;
    const s = checkRetrySchedule(p);
    expect(s.steps.map((x) => x.delayMs)).toEqual([1000, 2000, 4000, 8000]);
    expect(s.steps.map((x) => x.attempt)).toEqual([2, 3, 4, 5]);
    expect(s.totalToDlqMs).toBe(15_000);
    const codes = s.flags.map((f) => f.code);
    expect(codes).toContain('exponential-without-jitter');
    expect(codes).toContain('exponential-without-cap');
  });

  it('without jitter all 100 messages retry at the same instant; full jitter spreads them over [0, max)', () => {
    const p = policyFromBullmqOptions({ attempts: 4, backoff: { type: 'exponential', delay: 1000 } })!;
    const s = checkRetrySchedule(p);
    expect(new Set(s.asConfigured.retries[0]).size).toBe(1);
    expect(s.asConfigured.peakPerBin).toBe(100);
    const first = s.fullJitter.retries[0]!;
    expect(first).toHaveLength(100);
    expect(Math.min(...first)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...first)).toBeLessThan(1000);
    expect(new Set(first).size).toBeGreaterThan(80);
    expect(s.fullJitter.peakPerBin).toBeLessThan(20);
  });

  it('BullMQ jitter is a fraction: 0.5 keeps waits in [max/2, max)', () => {
    const p = policyFromBullmqOptions({ attempts: 3, backoff: { type: 'exponential', delay: 1000, jitter: 0.5 } })!;
    const s = checkRetrySchedule(p);
    expect(s.flags.map((f) => f.code)).not.toContain('exponential-without-jitter');
    const second = s.asConfigured.retries[1]!; // first wait in [500,1000) + second in [1000,2000)
    expect(Math.min(...second)).toBeGreaterThanOrEqual(1500);
    expect(Math.max(...second)).toBeLessThan(3000);
    expect(s.steps[0]!.minDelayMs).toBe(500);
  });

  it('cap bounds exponential waits', () => {
    expect(retryDelayMs({ attempts: 10, type: 'exponential', delayMs: 1000, jitter: 1, capMs: 5000 }, 8)).toBe(5000);
    const s = checkRetrySchedule({ attempts: 10, type: 'exponential', delayMs: 1000, jitter: 1, capMs: 5000 });
    expect(s.flags).toEqual([]);
  });

  it('SQS: retries at the fixed visibility-timeout interval are flagged; time to DLQ = maxReceiveCount × timeout', () => {
    const s = checkRetrySchedule({ attempts: 3, type: 'visibility-timeout', delayMs: 30_000, jitter: 0, capMs: null });
    expect(s.steps.map((x) => x.atMs)).toEqual([30_000, 60_000]);
    expect(s.flags.map((f) => f.code)).toEqual(['fixed-visibility-timeout']);
  });

  it('numeric backoff = fixed; custom strategies are unknown; invalid policies throw', () => {
    expect(policyFromBullmqOptions({ attempts: 3, backoff: 500 })).toEqual({ attempts: 3, type: 'fixed', delayMs: 500, jitter: 0, capMs: null });
    expect(policyFromBullmqOptions({ attempts: 3, backoff: { type: 'mine', delay: 5 } })).toBeNull();
    expect(policyFromBullmqOptions(null)).toEqual({ attempts: 1, type: 'fixed', delayMs: 0, jitter: 0, capMs: null });
    expect(() => checkRetrySchedule({ attempts: 0, type: 'fixed', delayMs: 1, jitter: 0, capMs: null })).toThrow(/attempts/);
    expect(() => checkRetrySchedule({ attempts: 3, type: 'fixed', delayMs: 1, jitter: 2, capMs: null })).toThrow(/jitter/);
  });
});
