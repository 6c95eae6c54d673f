import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, uniqueName } from './env';
import { runCli, type CliRun } from './fixtures/run-cli';

/**
 * `queuescope export` of a Redis list holding one 9 MiB element, over the default 8 MiB body read
 * limit: the body is written cut (body.truncated), so the file is no backup of it (reinject refuses
 * it). The export says so — count, id, limit and --max-body-bytes on stderr, truncatedBodies /
 * truncatedIds and partial in --json, exit 7 — and --max-body-bytes writes it whole (exit 0).
 */
let dir: string;
const run = (argv: string[]): Promise<CliRun> => runCli(dir, argv);
const native = new Redis(REDIS_URL);
const key = uniqueName('export-cut-body');
const BIG = 9 * 1024 * 1024;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-export-cut-'));
  await native.rpush(key, JSON.stringify({ orderId: 'C-1', operation: 'charge' }), 'x'.repeat(BIG), JSON.stringify({ orderId: 'C-3' }), JSON.stringify({ orderId: 'C-4' }));
}, 30_000);

afterAll(async () => {
  await native.del(key);
  native.disconnect();
  await rm(dir, { recursive: true, force: true });
});

interface Line {
  type: string;
  id?: string;
  body?: { data: string; truncated: boolean; sizeBytes: number };
}
const linesOf = async (path: string): Promise<Line[]> => (await readFile(path, 'utf8')).split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Line);

describe('export: bodies over the read limit', () => {
  it('counts and names the cut body, exits 7, and --json says partial with truncatedBodies', async () => {
    const r = await run(['export', REDIS_URL, key, '--out', 'cut.jsonl']);
    expect(r.code).toBe(7);
    expect(r.stdout).toContain('Exported 4 messages');
    expect(r.stdout).toContain('bytes), 1 of them with the body cut.');
    const cut = (await linesOf(join(dir, 'cut.jsonl'))).filter((l) => l.type === 'message' && l.body?.truncated === true);
    expect(cut).toHaveLength(1);
    const id = cut[0]?.id ?? '';
    expect(cut[0]?.body?.sizeBytes).toBe(BIG);
    expect(r.stderr).toContain('1 message body was longer than the 8388608-byte read limit and written cut');
    expect(r.stderr).toContain(`(${id})`);
    expect(r.stderr).toContain('--max-body-bytes');

    const j = await run(['export', REDIS_URL, key, '--out', 'cut2.jsonl', '--json']);
    expect(j.code).toBe(7);
    const doc = JSON.parse(j.stdout) as { messages: number; partial: boolean; reason: string; truncatedBodies: number; truncatedIds: string[]; maxBodyBytes: number };
    expect(doc).toMatchObject({ messages: 4, partial: true, truncatedBodies: 1, truncatedIds: [id], maxBodyBytes: 8 * 1024 * 1024 });
    expect(doc.reason).toContain('re-inject refuses it');
  }, 60_000);

  it('--max-body-bytes writes the body whole: exit 0, not partial', async () => {
    const r = await run(['export', REDIS_URL, key, '--out', 'whole.jsonl', '--max-body-bytes', String(16 * 1024 * 1024), '--json']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { partial: boolean; truncatedBodies?: number };
    expect(doc.partial).toBe(false);
    expect(doc.truncatedBodies).toBeUndefined();
    const big = (await linesOf(join(dir, 'whole.jsonl'))).find((l) => l.type === 'message' && (l.body?.sizeBytes ?? 0) === BIG);
    expect(big?.body?.truncated).toBe(false);
    expect(big?.body?.data.length).toBe(BIG);
    const bad = await run(['export', REDIS_URL, key, '--out', 'no.jsonl', '--max-body-bytes', '0']);
    expect(bad.code).toBe(2);
  }, 60_000);
});
