import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, uniqueName } from './env';
import { failJobs } from './fixtures/bullmq';
import { runCli, type CliRun } from './fixtures/run-cli';

/**
 * `queuescope export` of a live BullMQ queue without `--state` writes its waiting jobs only (the
 * adapter's default, as inspect reads it). It says so, as inspect does: the summary and the file's
 * header name state waiting, and stderr names the jobs of the other states left out and the
 * `--state` that exports each (--json: state, statesNotExported).
 */
let dir: string;
const run = (argv: string[]): Promise<CliRun> => runCli(dir, argv);
const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const name = uniqueName('export-bq-states');
let q: Queue;

const charge = (orderId: string): { orderId: string; operation: string; idempotencyKey: string } => ({ orderId, operation: 'charge', idempotencyKey: `${orderId}:charge` });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-export-bq-'));
  q = new Queue(name, { connection: native });
  // Two charges fail for good (attempts 1).
  await q.addBulk(['F-1', 'F-2'].map((o) => ({ name: 'charge', data: charge(o), opts: { attempts: 1 } })));
  await failJobs(q, native, 2);
  // F-1 sent again (waiting: a retry of the failed F-1 would charge twice), W-1 new, two delayed.
  await q.add('charge', charge('F-1'));
  await q.add('charge', charge('W-1'));
  await q.add('charge', charge('D-1'), { delay: 3_600_000 });
  await q.add('charge', charge('D-2'), { delay: 3_600_000 });
}, 60_000);

afterAll(async () => {
  await q.obliterate({ force: true }).catch(() => undefined);
  await q.close();
  native.disconnect();
  await rm(dir, { recursive: true, force: true });
});

describe('export (live BullMQ) without --state', () => {
  it('names state waiting and the delayed / failed jobs it left out', async () => {
    const r = await run(['export', REDIS_URL, name, '--out', 'waiting.jsonl']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Exported 2 messages of ${name} (state waiting) to`);
    expect(r.stderr).toContain(`note: ${name}: exported its waiting jobs (the default --state); 2 delayed, 2 failed jobs were not exported: --state delayed, --state failed export them (one state per file).\n`);
    const header = JSON.parse((await readFile(join(dir, 'waiting.jsonl'), 'utf8')).split('\n')[0] ?? '') as { type: string; state?: string };
    expect(header).toMatchObject({ type: 'queue', state: 'waiting' });

    const j = await run(['export', REDIS_URL, name, '--out', 'waiting2.jsonl', '--json']);
    expect(j.code).toBe(0);
    expect(JSON.parse(j.stdout)).toMatchObject({ messages: 2, state: 'waiting', statesNotExported: { delayed: 2, failed: 2 } });

    // Named states: no note.
    const failed = await run(['export', REDIS_URL, name, '--state', 'failed', '--out', 'failed.jsonl']);
    expect(failed.code).toBe(0);
    expect(failed.stdout).toContain(`Exported 2 messages of ${name} (state failed) to`);
    expect(failed.stderr).not.toContain('the default --state');
  }, 60_000);
});

/**
 * inspect's hint for a BullMQ snapshot without the partner jobs said "export --state failed and join
 * the two files (cat a.jsonl b.jsonl)", but `inspect both.jsonl <name>` then failed with exit 2 ("names 2
 * queues"). The hint now says to inspect the joined file by queue id and names both ids; the
 * ambiguous-name error names each section's states and says they are one queue. Following the
 * hint compares the waiting section with the failed one (F-1 in both). Distinct queues that share
 * a name are still refused by name.
 */
describe('joining exports of one BullMQ queue, as inspect hints', () => {
  it('the hint names the ids to inspect the joined file by, and following it compares the two states', async () => {
    const qid = `bullmq:bull:${name}`;
    expect((await run(['export', REDIS_URL, name, '--state', 'waiting', '--out', 'a.jsonl'])).code).toBe(0);
    const alone = await run(['inspect', 'a.jsonl', name]);
    expect(alone.code).toBe(0);
    expect(alone.stdout.replace(/\s+/g, ' ')).toContain(`and inspect the joined file by queue id: it holds ${name} twice, as ${qid} (a.jsonl) and ${qid}#2 (b.jsonl;`);

    expect((await run(['export', REDIS_URL, name, '--state', 'failed', '--out', 'b.jsonl'])).code).toBe(0);
    const both = Buffer.concat([await readFile(join(dir, 'a.jsonl')), await readFile(join(dir, 'b.jsonl'))]);
    await writeFile(join(dir, 'both.jsonl'), both);

    const byName = await run(['inspect', 'both.jsonl', name]);
    expect(byName.code).toBe(2);
    expect(byName.stderr).toContain(`pass one of these ids: ${qid} (waiting), ${qid}#2 (failed). They are sections of one queue (files joined with cat), each read by its id; inspect compares failed jobs with waiting, delayed… ones across them.`);

    for (const [id, partnerId] of [
      [qid, `${qid}#2`],
      [`${qid}#2`, qid],
    ] as const) {
      const r = await run(['inspect', 'both.jsonl', id, '--json']);
      expect(r.code).toBe(0);
      const report = JSON.parse(r.stdout) as { comparisons: { queueId: string | null; result: { sharedKeys: { key: string }[] } | null }[] };
      const c = report.comparisons.find((x) => x.queueId === partnerId);
      expect(c?.result?.sharedKeys.map((g) => g.key)).toEqual(['F-1:charge']);
    }
  }, 60_000);

  it('distinct queues sharing a name in one file are still refused by name, without the same-queue sentence', async () => {
    await native.rpush(name, JSON.stringify(charge('L-1'))); // a plain list named like the BullMQ queue
    try {
      expect((await run(['export', REDIS_URL, `list:${name}`, '--out', 'list.jsonl'])).code).toBe(0);
      await writeFile(join(dir, 'mixed.jsonl'), Buffer.concat([await readFile(join(dir, 'a.jsonl')), await readFile(join(dir, 'list.jsonl'))]));
      const r = await run(['inspect', 'mixed.jsonl', name]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`names 2 queues; pass one of these ids: `);
      expect(r.stderr).not.toContain('sections of one queue');
    } finally {
      await native.del(name);
    }
  }, 60_000);
});
