import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { QueuescopeError } from '../../shared/domain';
import { formatFromPath, importDurations } from './file-source';

const dir = mkdtempSync(join(tmpdir(), 'qs-durations-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

describe('importDurations', () => {
  it('format from the extension; seconds become ms; skipped lines are reported', async () => {
    const m = await importDurations({ path: file('d.csv', 'duration\n0.2\n0.25\nbad\n'), unit: 's' });
    expect(m.samplesMs).toEqual([200, 250]);
    expect(m.confidence).toBe('imported');
    expect(m.notes.join(' ')).toMatch(/1 line\(s\) skipped, e.g. line 4/);
    expect(formatFromPath('x.ndjson')).toBe('jsonl');
    expect(formatFromPath('x.bin')).toBeNull();
  });

  it('log lines with a regex', async () => {
    const m = await importDurations({ path: file('w.log', 'job 1 took 212 ms\nother\njob 2 took 190 ms\n'), regex: 'took (\\d+) ms' });
    expect(m.samplesMs).toEqual([212, 190]);
  });

  it('missing file, unknown format, and files without durations are INVALID_INPUT naming the file', async () => {
    await expect(importDurations({ path: join(dir, 'nope.csv') })).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/does not exist/) });
    await expect(importDurations({ path: file('x.bin', '1') })).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/--format/) });
    const e = await importDurations({ path: file('e.jsonl', '{"a":1}\n') }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(QueuescopeError);
    expect((e as QueuescopeError).message).toMatch(/no usable duration/);
  });
});
