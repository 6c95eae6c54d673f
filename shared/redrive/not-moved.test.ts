import { describe, expect, it } from 'vitest';
import { MAX_NOT_MOVED_RANGES, notMovedKindAt, notMovedRecordOf, NotMovedTracker } from './not-moved';

const fail = (id: string, message = 'publish refused', details?: Record<string, unknown>) => ({ id, error: { message, ...(details !== undefined ? { details } : {}) } });

describe('NotMovedTracker', () => {
  it('records the backup ordinals of backed-up messages that did not move, by reason, as ranges', () => {
    const t = new NotMovedTracker();
    t.written([{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }], 0);
    // 'x' failed before it was backed up (cannot move): not in the backup, not recorded.
    t.settle({ moved: [{ id: 'a' }], possibleDuplicates: [{ id: 'd' }], failed: [fail('b', 'Entry b was taken', { leftDlq: true }), fail('c', 'Entry c was taken', { leftDlq: true }), fail('x')] });
    t.written([{ id: 'e' }, { id: 'f' }, { id: 'g' }], 4);
    t.settle({ moved: [], possibleDuplicates: [], failed: [fail('e'), fail('f', 'Outcome unknown: connection lost')] });
    // 'g' was never settled (the run ended): outcome unknown.
    const r = t.finish();
    expect(r).toEqual({
      count: 5,
      stayed: 1,
      taken: 2,
      unknown: 2,
      ranges: [
        [1, 2, 'taken'],
        [4, 4, 'stayed'],
        [5, 6, 'unknown'],
      ],
      complete: true,
      sample: [
        { n: 1, id: 'b', why: 'taken' },
        { n: 2, id: 'c', why: 'taken' },
        { n: 4, id: 'e', why: 'stayed' },
        { n: 5, id: 'f', why: 'unknown' },
        { n: 6, id: 'g', why: 'unknown' },
      ],
    });
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((n) => notMovedKindAt(r, n))).toEqual([null, 'taken', 'taken', null, 'stayed', 'unknown', 'unknown', null]);
  });

  it('tells apart messages with the same id by ordinal (identical list entries), and records none as count 0', () => {
    const t = new NotMovedTracker();
    t.written([{ id: 'same' }, { id: 'same' }], 10);
    t.settle({ moved: [{ id: 'same' }], possibleDuplicates: [], failed: [fail('same', 'taken', { leftDlq: true })] });
    expect(t.finish().ranges).toEqual([[11, 11, 'taken']]);
    const none = new NotMovedTracker();
    none.written([{ id: 'a' }], 0);
    none.settle({ moved: [{ id: 'a' }], possibleDuplicates: [], failed: [] });
    expect(none.finish()).toMatchObject({ count: 0, ranges: [], complete: true });
  });

  it('keeps at most MAX_NOT_MOVED_RANGES ranges and says the record is incomplete', () => {
    const t = new NotMovedTracker();
    const n = MAX_NOT_MOVED_RANGES + 5;
    // Every other message fails: one range each.
    const ids = Array.from({ length: 2 * n }, (_, i) => ({ id: `m${String(i)}` }));
    t.written(ids, 0);
    t.settle({ moved: ids.filter((_, i) => i % 2 === 0), possibleDuplicates: [], failed: ids.filter((_, i) => i % 2 === 1).map((m) => fail(m.id)) });
    const r = t.finish();
    expect(r.count).toBe(n);
    expect(r.ranges.length).toBe(MAX_NOT_MOVED_RANGES);
    expect(r.complete).toBe(false);
  });
});

describe('notMovedRecordOf', () => {
  it('reads a record back from audit details, and refuses malformed ones', () => {
    const t = new NotMovedTracker();
    t.written([{ id: 'a' }], 0);
    t.settle({ moved: [], possibleDuplicates: [], failed: [fail('a', 'taken', { leftDlq: true })] });
    const rec = t.finish();
    expect(notMovedRecordOf(JSON.parse(JSON.stringify({ notMoved: rec })))).toEqual(rec);
    expect(notMovedRecordOf({})).toBeNull();
    expect(notMovedRecordOf(null)).toBeNull();
    expect(notMovedRecordOf({ notMoved: { ...rec, ranges: [[3, 1, 'taken']] } })).toBeNull();
    expect(notMovedRecordOf({ notMoved: { ...rec, ranges: [[0, 0, 'lost']] } })).toBeNull();
    expect(notMovedRecordOf({ notMoved: { ...rec, count: -1 } })).toBeNull();
    expect(notMovedRecordOf({ notMoved: { ...rec, sample: [{ n: 0, id: 5, why: 'taken' }] } })).toBeNull();
  });
});
