import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InspectReport } from '../../shared/api/inspect';
import { REDIS_URL, uniqueName } from './env';
import { runCli, type CliRun } from './fixtures/run-cli';

/**
 * A snapshot cut at a line boundary (a truncated download or copy, a write that stopped between
 * lines) must not read as a complete, smaller snapshot: `export` records how many messages it wrote
 * in the header, and `inspect` says the file was cut (Partial; `--fail-on` exits 9). A file from an
 * older Queuescope (no record) still opens, with a note that this cannot be checked.
 * Real export from a Redis list; plain and gzip.
 */

let dir: string;
const run = (argv: string[]): Promise<CliRun> => runCli(dir, argv);

const list = uniqueName('snap-cut');
const N = 600; // ~600 B each: more than one 256 KiB write, so a gzip file has a member boundary inside the messages
const redis = new Redis(REDIS_URL);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-snap-cut-'));
  const bodies = Array.from({ length: N }, (_, i) => JSON.stringify({ orderId: `A-${String(i)}`, operation: 'charge', idempotencyKey: `A-${String(i)}:charge`, pad: 'x'.repeat(500) }));
  await redis.rpush(list, ...bodies);
});
afterAll(async () => {
  await redis.del(list);
  redis.disconnect();
  await rm(dir, { recursive: true, force: true });
});

/** Lines of a plain snapshot (the last element is the empty string after the final `\n`). */
async function lines(path: string): Promise<string[]> {
  return (await readFile(path, 'utf8')).split('\n');
}

describe('a snapshot cut at a line boundary', () => {
  it('export records the count; inspect of the whole file is complete, of the cut file incomplete (exit 9 with --fail-on)', async () => {
    const out = join(dir, 'whole.jsonl');
    const e = await run(['export', REDIS_URL, list, '--out', out]);
    expect(e.code, e.stderr).toBe(0);
    const all = await lines(out);
    expect(all).toHaveLength(N + 2); // header, N messages, ''
    expect(JSON.parse(all[0] ?? '')).toMatchObject({ type: 'queue', written: { messages: N, section: 0, sections: 1 } });

    const whole = await run(['inspect', out, '--fail-on', 'flag']);
    expect(whole.code, whole.stderr).toBe(0);
    expect(whole.stdout).not.toContain('Partial');
    expect(whole.stderr).not.toContain('cut');

    // Cut after message 250: every remaining line is whole and valid.
    const cut = join(dir, 'cut.jsonl');
    await writeFile(cut, `${all.slice(0, 251).join('\n')}\n`);
    const r = await run(['inspect', cut, '--fail-on', 'flag']);
    expect(r.code, r.stderr).toBe(9);
    expect(r.stdout).toContain('Partial');
    expect(r.stderr).toContain(`The file was cut: it holds 250 of the ${String(N)} messages the export wrote for this queue`);
    const j = await run(['inspect', cut, '--json']);
    const report = JSON.parse(j.stdout) as InspectReport;
    expect(report).toMatchObject({ analysed: 250, partial: true });
    expect(report.partialReason).toContain(`holds 250 of the ${String(N)} messages`);

    // Compared with a cut snapshot: the comparison says it read only part of it.
    const c = JSON.parse((await run(['inspect', out, '--compare', cut, '--json'])).stdout) as InspectReport;
    const withCut = c.comparisons.find((x) => x.relation === 'snapshot');
    expect(withCut).toMatchObject({ read: 250, partial: true });
    expect(withCut?.note).toContain(`The file was cut: it holds 250 of the ${String(N)} messages`);

    // Cut right after the header: no message at all is not an empty queue.
    const headerOnly = join(dir, 'header-only.jsonl');
    await writeFile(headerOnly, `${all[0] ?? ''}\n`);
    expect((await run(['inspect', headerOnly, '--fail-on', 'flag'])).code).toBe(9);
  });

  it('peek of a cut file warns on stderr how many messages are missing (exit 0, also with --json); of the whole file it does not', async () => {
    const out = join(dir, 'for-peek.jsonl');
    expect((await run(['export', REDIS_URL, list, '--out', out])).code).toBe(0);
    const whole = await run(['peek', out, '--limit', '5']);
    expect(whole.code, whole.stderr).toBe(0);
    expect(whole.stdout).toContain(`5 messages of ${String(N)}`);
    expect(whole.stderr).not.toContain('cut');

    const all = await lines(out);
    const cut = join(dir, 'cut-for-peek.jsonl');
    await writeFile(cut, `${all.slice(0, 251).join('\n')}\n`);
    const r = await run(['peek', cut, '--limit', '5']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('5 messages of 250');
    expect(r.stderr).toContain(`warning: ${list}: The file was cut: it holds 250 of the ${String(N)} messages the export wrote for this queue`);
    const j = await run(['peek', cut, '--limit', '5', '--json']);
    expect(j.code, j.stderr).toBe(0);
    expect((JSON.parse(j.stdout) as { total: number }).total).toBe(250);
    expect(j.stderr).toContain(`it holds 250 of the ${String(N)} messages`);
  });

  it('gzip: a file cut at a gzip member boundary (a valid, shorter gzip stream) is incomplete too', async () => {
    const out = join(dir, 'whole.jsonl.gz');
    const e = await run(['export', REDIS_URL, list, '--out', out]);
    expect(e.code, e.stderr).toBe(0);
    const bytes = await readFile(out);
    expect((await run(['inspect', out, '--fail-on', 'flag'])).code).toBe(0);
    // Offsets where a gzip member starts and everything before it is a complete gzip stream of whole lines.
    const boundaries: number[] = [];
    for (let o = 1; o < bytes.length - 3; o++) {
      if (bytes[o] !== 0x1f || bytes[o + 1] !== 0x8b || bytes[o + 2] !== 8) continue;
      try {
        const text = gunzipSync(bytes.subarray(0, o)).toString('utf8');
        if (text.endsWith('\n')) boundaries.push(o);
      } catch {
        /* a 1f 8b 08 inside compressed data */
      }
    }
    // The header's own member, then at least one member of messages before the last.
    expect(boundaries.length).toBeGreaterThanOrEqual(2);
    const at = boundaries[boundaries.length - 1] ?? 0;
    const held = gunzipSync(bytes.subarray(0, at)).toString('utf8').split('\n').length - 2;
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThan(N);
    const cut = join(dir, 'cut.jsonl.gz');
    await writeFile(cut, bytes.subarray(0, at));
    const r = await run(['inspect', cut, '--fail-on', 'flag']);
    expect(r.code, r.stderr).toBe(9);
    expect(r.stderr).toContain(`it holds ${String(held)} of the ${String(N)} messages the export wrote`);
  });

  it('a file without the record (an older Queuescope) opens: complete read, exit 0, with a note that a cut cannot be checked', async () => {
    const out = join(dir, 'for-old.jsonl');
    expect((await run(['export', REDIS_URL, list, '--out', out])).code).toBe(0);
    const all = await lines(out);
    const header = JSON.parse(all[0] ?? '') as Record<string, unknown>;
    delete header.written;
    const old = join(dir, 'old.jsonl');
    // As an older Queuescope wrote it, cut after 100 messages: nothing in it can show the cut.
    await writeFile(old, `${JSON.stringify(header)}\n${all.slice(1, 101).join('\n')}\n`);
    const r = await run(['inspect', old, '--fail-on', 'flag']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain('Partial');
    expect(r.stderr).toContain('note: old.jsonl does not record how many messages were written');
    expect(r.stderr).toContain('cannot be checked');
    const j = JSON.parse((await run(['inspect', old, '--json'])).stdout) as InspectReport;
    expect(j).toMatchObject({ analysed: 100, partial: false });
    expect(j.notes?.[0]).toContain('cannot be checked');
    const p = await run(['peek', old, '--limit', '5']);
    expect(p.code, p.stderr).toBe(0);
    expect(p.stderr).toContain('note: old.jsonl does not record how many messages were written');
    expect(p.stderr).not.toContain('warning');
  });
});
