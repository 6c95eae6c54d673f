import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DurationImportError, parseDurations } from './import';

describe('parseDurations', () => {
  it('CSV with a header, auto-detected column, seconds → ms', () => {
    const r = parseDurations('job,duration_s,status\na,0.2,ok\nb,"1.5",ok\nc,oops,ok\n', { format: 'csv', unit: 's', field: 'duration_s' });
    expect(r.samplesMs).toEqual([200, 1500]);
    expect(r.skipped).toBe(1);
    expect(r.problems[0]!.line).toBe(4);
    const auto = parseDurations('id;duration_ms\n1;250\n2;350\n', { format: 'csv' });
    expect(auto.samplesMs).toEqual([250, 350]);
    expect(auto.fieldUsed).toBe('duration_ms');
  });

  it('skips implausible durations (over 7 days, e.g. 1e308) with a reason, in ms and in s', () => {
    const r = parseDurations('250\n1e308\n604800001\n300\n', { format: 'csv' });
    expect(r.samplesMs).toEqual([250, 300]);
    expect(r.skipped).toBe(2);
    expect(r.problems[0]).toMatchObject({ line: 2, reason: expect.stringMatching(/implausible duration/) as unknown });
    expect(parseDurations('604800\n604801\n', { format: 'csv', unit: 's' }).samplesMs).toEqual([604_800_000]);
  });

  it('CSV without header, single column', () => {
    expect(parseDurations('100\n200\n\n300\n', { format: 'csv' }).samplesMs).toEqual([100, 200, 300]);
  });

  it('JSONL with a dotted field and bare numbers; bad lines counted', () => {
    const r = parseDurations('{"t":{"ms":120}}\n{"t":{"ms":"80"}}\nnot json\n{"other":1}\n', { format: 'jsonl', field: 't.ms' });
    expect(r.samplesMs).toEqual([120, 80]);
    expect(r.skipped).toBe(2);
    expect(parseDurations('{"durationMs": 5}\n7\n', { format: 'jsonl' }).samplesMs).toEqual([5, 7]);
  });

  it('log lines with a regex (capture group or named group)', () => {
    const log = 'INFO start job 1\nINFO job 1 done in 212ms\nINFO job 2 done in 198.5ms\nWARN unrelated\n';
    expect(parseDurations(log, { format: 'log', regex: 'done in ([\\d.]+)ms' }).samplesMs).toEqual([212, 198.5]);
    expect(parseDurations(log, { format: 'log', regex: 'done in (?<duration>[\\d.]+)ms' }).samplesMs).toEqual([212, 198.5]);
  });

  it('bad configuration throws DurationImportError with the reason', () => {
    expect(() => parseDurations('x', { format: 'log', regex: '(' })).toThrow(DurationImportError);
    expect(() => parseDurations('x', { format: 'log', regex: 'done' })).toThrow(/capture group/);
    expect(() => parseDurations('a,b\n1,2', { format: 'csv' })).toThrow(/No duration column/);
    expect(() => parseDurations('a,b\n1,2', { format: 'csv', field: 'zzz' })).toThrow(/no column "zzz"/);
  });

  it('never throws on arbitrary text and returns only finite non-negative ms', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 2000 }), fc.constantFrom('csv' as const, 'jsonl' as const), fc.constantFrom('ms' as const, 's' as const), (text, format, unit) => {
        let r;
        try {
          r = parseDurations(text, { format, unit });
        } catch (e) {
          expect(e).toBeInstanceOf(DurationImportError);
          return;
        }
        for (const x of r.samplesMs) expect(Number.isFinite(x) && x >= 0).toBe(true);
      }),
    );
  });

  it('round trip: plausible numbers written as CSV come back (× 1000 for seconds)', () => {
    fc.assert(
      // up to 7 days in seconds, so both units stay within MAX_PLAUSIBLE_DURATION_MS
      fc.property(fc.array(fc.integer({ min: 0, max: 604_800 }), { minLength: 1, maxLength: 100 }), (xs) => {
        expect(parseDurations(`duration\n${xs.join('\n')}`, { format: 'csv' }).samplesMs).toEqual(xs);
        expect(parseDurations(xs.join('\n'), { format: 'csv', unit: 's' }).samplesMs).toEqual(xs.map((x) => x * 1000));
      }),
    );
  });
});
