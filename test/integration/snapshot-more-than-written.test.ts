import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InspectReport } from '../../shared/api/inspect';
import { REDIS_URL, uniqueName } from './env';
import { runCli, type CliRun } from './fixtures/run-cli';

/**
 * A snapshot holding more messages than its export recorded (a line pasted twice, files joined
 * wrongly) is partial — it is not the queue as exported — but it is not "only part" of the queue:
 * the report must not say it holds only part while saying it holds more than was written.
 */
let dir: string;
const run = (argv: string[]): Promise<CliRun> => runCli(dir, argv);
const list = uniqueName('snap-more');
const redis = new Redis(REDIS_URL);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-snap-more-'));
  await redis.rpush(list, ...[1, 2, 3].map((i) => JSON.stringify({ orderId: `M-${String(i)}`, operation: 'charge', idempotencyKey: `M-${String(i)}:charge` })));
});
afterAll(async () => {
  await redis.del(list);
  redis.disconnect();
  await rm(dir, { recursive: true, force: true });
});

describe('inspect of a snapshot holding more messages than its export wrote', () => {
  it('says it does not hold the queue as written (not "only part"), and --fail-on exits 9', async () => {
    const file = join(dir, 'list.jsonl');
    expect((await run(['export', REDIS_URL, `list:${list}`, '--out', file])).code).toBe(0);
    const lines = (await readFile(file, 'utf8')).split('\n');
    const doubled = join(dir, 'doubled.jsonl');
    await writeFile(doubled, [lines[0], lines[1], ...lines.slice(1)].join('\n'));
    const r = await run(['inspect', doubled, '--fail-on', 'flag', '--rows', '0']);
    expect(r.code).toBe(9);
    expect(r.stdout).toContain(`Partial: The snapshot does not hold ${list} as it was written: The file does not match its header: it holds 4 messages where the export wrote 3 (edited or joined wrongly).`);
    expect(r.stdout).not.toContain('holds only part');
    expect(r.stderr).toContain(`fail-on flag: nothing flagged in the 4 messages read, but the snapshot does not hold ${list} as it was written: `);
    const json = JSON.parse((await run(['inspect', doubled, '--json'])).stdout) as InspectReport;
    expect(json.partial).toBe(true);
    // A file cut short still holds only part.
    const cut = join(dir, 'cut.jsonl');
    await writeFile(cut, [lines[0], lines[1], ''].join('\n'));
    expect((await run(['inspect', cut, '--rows', '0'])).stdout).toContain(`Partial: The snapshot holds only part of ${list}: The file was cut: it holds 1 of the 3 messages`);
  });
});
