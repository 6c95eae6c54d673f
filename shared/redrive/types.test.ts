import { describe, expect, it } from 'vitest';
import { QueuescopeError } from '../domain/errors';
import { checkPendingMinIdle, formatIdleThreshold, MAX_PENDING_MIN_IDLE_MS } from './types';

describe('pending entries idle threshold', () => {
  it('is written exactly, in the largest whole unit', () => {
    expect(formatIdleThreshold(60_000)).toBe('60 s');
    expect(formatIdleThreshold(90_000)).toBe('90 s');
    expect(formatIdleThreshold(150_000)).toBe('150 s');
    expect(formatIdleThreshold(600_000)).toBe('10 min');
    expect(formatIdleThreshold(5_400_000)).toBe('90 min');
    expect(formatIdleThreshold(7_200_000)).toBe('2 h');
    expect(formatIdleThreshold(1500)).toBe('1500 ms');
    expect(formatIdleThreshold(1)).toBe('1 ms');
  });

  it('accepts whole ms from 1 ms to 7 days and refuses the rest with INVALID_INPUT naming the option', () => {
    for (const ok of [undefined, 1, 60_000, MAX_PENDING_MIN_IDLE_MS]) expect(() => checkPendingMinIdle(ok)).not.toThrow();
    for (const bad of [0, -5, 1.5, NaN, Infinity, MAX_PENDING_MIN_IDLE_MS + 1]) {
      let caught: unknown;
      try {
        checkPendingMinIdle(bad, '--pending-min-idle');
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(QueuescopeError);
      expect((caught as QueuescopeError).code).toBe('INVALID_INPUT');
      expect((caught as QueuescopeError).message).toBe(
        `--pending-min-idle must be a whole number of milliseconds from 1 ms to 7 days (604800000 ms), got ${String(bad)} ms; to move pending entries however recently they were delivered, use --include-pending instead.`,
      );
    }
  });
});
