import { describe, expect, it } from 'vitest';
import { describeMovedOn, movedOnByReading, type MovedOnByReading } from '../../shared/redrive/types';
import { sumMovedOn } from './engine';

const m = (count: number | null, measuredBy = 'measured'): MovedOnByReading => ({ queue: 'dlq2', maxReceiveCount: 3, count, measuredBy });

describe('messages moved on by reading a chained DLQ', () => {
  it('sums the passes of one run (native backup pass, then client-side); unknown when one pass is unknown', () => {
    expect(sumMovedOn([undefined, undefined])).toBeUndefined();
    expect(sumMovedOn([m(2)])).toEqual(m(2));
    expect(sumMovedOn([m(2, 'a'), undefined, m(3, 'b')])).toEqual({ queue: 'dlq2', maxReceiveCount: 3, count: 5, measuredBy: 'pass 1: 2, a; pass 2: 3, b' });
    expect(sumMovedOn([m(2), m(null, 'no count')])?.count).toBeNull();
  });

  it('counts as "not all done" when some were moved on or the number is unknown, and says so in words', () => {
    expect(movedOnByReading(undefined)).toBe(false);
    expect(movedOnByReading(m(0))).toBe(false);
    expect(movedOnByReading(m(1))).toBe(true);
    expect(movedOnByReading(m(null))).toBe(true);
    expect(describeMovedOn(m(0), 'The reads', 'dlq')).toBeNull();
    expect(describeMovedOn(m(1, '0 → 1'), 'The reads', 'dlq')).toBe(
      "The reads moved 1 message of dlq on to dlq2 (at the maxReceiveCount 3 of dlq's own RedrivePolicy) instead of returning it: it left the DLQ without being redriven and is in dlq2 now, not lost — redrive dlq2 to move it (0 → 1).",
    );
    expect(describeMovedOn({ queue: null, maxReceiveCount: null, count: null, measuredBy: 'the policy cannot be read' }, 'The reads', 'dlq')).toBe(
      "The reads may have moved messages of dlq on to another queue (dlq's own RedrivePolicy) instead of returning them; how many could not be measured: the policy cannot be read.",
    );
  });
});
