import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter, type RedisAdapter } from '../../core/adapters/redis';
import { REDRIVE_COUNT_HEADER } from '../../core/adapters/redrive-types';
import { runCli, type CliRun } from './fixtures/run-cli';
import { EXIT } from '../../core/cli/exit-codes';
import type { QueueMessage } from '../../shared/domain';
import { REDIS_URL, uniqueName } from './env';

/**
 * Re-injecting into a BullMQ queue that already holds a job with the same custom id: BullMQ ignores
 * the add and returns the existing job, so before the fix the job was reported published (and the
 * existing job got the redrive counter). Now it comes back failed with the reason, and the CLI exits 7.
 */

const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const prefix = uniqueName('reinject');
const queues: Queue[] = [];
let a: RedisAdapter;
let dir: string;

function queue(name: string): Queue {
  const q = new Queue(name, { connection: native, prefix });
  queues.push(q);
  return q;
}

/** The CLI in this process (see {@link runCli}). */
function cli(argv: string[]): Promise<CliRun> {
  return runCli(dir, argv);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-reinject-'));
  a = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
});

afterAll(async () => {
  await a.close();
  for (const q of queues) await q.obliterate({ force: true }).catch(() => undefined);
  for (const q of queues) await q.close();
  native.disconnect();
  await rm(dir, { recursive: true, force: true });
});

describe('publish into a BullMQ queue that already has a job id', () => {
  it('reports the taken id failed, adds the others, and leaves the existing job untouched', async () => {
    const src = queue('src');
    for (const n of [1, 2, 3]) await src.add('charge', { order: n }, { jobId: `order-${n}` });
    const messages = (await a.peek(`bullmq:${prefix}:src`, { limit: 10, state: 'waiting' })).messages;
    expect(messages.map((m) => m.id).sort()).toEqual(['order-1', 'order-2', 'order-3']);
    const dst = queue('dst');
    await dst.add('other', { existing: true }, { jobId: 'order-2' });

    const r = await a.redrive!.publish(`bullmq:${prefix}:dst`, messages);
    expect(r.published.sort()).toEqual(['order-1', 'order-3']);
    expect(r.failed).toEqual([
      {
        id: 'order-2',
        error: { code: 'BROKER_ERROR', message: `A job with id "order-2" already exists in bullmq:${prefix}:dst: BullMQ ignores the add; message order-2 was not re-injected.` },
      },
    ]);
    const existing = await native.hgetall(`${prefix}:dst:order-2`);
    expect(existing.name).toBe('other');
    expect(JSON.parse(existing.data ?? '')).toEqual({ existing: true });
    expect(existing[REDRIVE_COUNT_HEADER]).toBeUndefined();
    expect(await native.hget(`${prefix}:dst:order-1`, REDRIVE_COUNT_HEADER)).toBe('1');
    expect((await dst.getWaiting()).map((j) => j.id).sort()).toEqual(['order-1', 'order-2', 'order-3']);

    // Publishing the same messages again adds nothing and says so for each.
    const again = await a.redrive!.publish(`bullmq:${prefix}:dst`, messages);
    expect(again.published).toEqual([]);
    expect(again.failed.map((f) => f.id).sort()).toEqual(['order-1', 'order-2', 'order-3']);
  });

  it('the same id twice in one call: the second is failed', async () => {
    const src = queue('src2');
    await src.add('charge', { order: 9 }, { jobId: 'twice' });
    const [m] = (await a.peek(`bullmq:${prefix}:src2`, { limit: 10, state: 'waiting' })).messages as [QueueMessage];
    const r = await a.redrive!.publish(`bullmq:${prefix}:dst2`, [m, { ...m, body: { ...m.body, data: '{"order":10}' } }]);
    expect(r.published).toEqual(['twice']);
    expect(r.failed).toHaveLength(1);
    expect(r.failed[0]?.error.message).toMatch(/"twice" is re-injected twice .*was not re-injected/);
    expect(JSON.parse((await native.hget(`${prefix}:dst2:twice`, 'data')) ?? '')).toEqual({ order: 9 });
    queues.push(new Queue('dst2', { connection: native, prefix }));
  });
});

describe('a job another client adds with the same id between the check and the add', () => {
  it('is reported failed, not published (its timestamp is not the one this add set)', async () => {
    const src = queue('src3');
    await src.add('charge', { order: 1 }, { jobId: 'raced' });
    await src.add('charge', { order: 2 }, { jobId: 'calm' });
    const messages = (await a.peek(`bullmq:${prefix}:src3`, { limit: 10, state: 'waiting' })).messages;
    const other = queue('dst3');
    // The adapter's own Queue object for the target: another client adds "raced" just before its add.
    const target = await (a as unknown as { bullQueue(p: string, n: string): Promise<Queue> }).bullQueue(prefix, 'dst3');
    const addBulk = target.addBulk.bind(target);
    target.addBulk = async (jobs) => {
      await other.add('foreign', { foreign: true }, { jobId: 'raced' });
      await new Promise((r) => setTimeout(r, 5)); // a later millisecond than the foreign job's
      return addBulk(jobs);
    };
    try {
      const r = await a.redrive!.publish(`bullmq:${prefix}:dst3`, messages);
      expect(r.published).toEqual(['calm']);
      expect(r.failed.map((f) => [f.id, f.error.message])).toEqual([
        ['raced', `A job with id "raced" was added by another client meanwhile (it already exists) in bullmq:${prefix}:dst3: BullMQ ignores the add; message raced was not re-injected.`],
      ]);
      expect(await native.hget(`${prefix}:dst3:raced`, REDRIVE_COUNT_HEADER)).toBeNull();
    } finally {
      target.addBulk = addBulk;
    }
  });
});

describe('queuescope reinject (CLI)', () => {
  it('exits 7 and counts the job whose id exists as failed, in the output and the history', async () => {
    const src = queue('cli-src');
    for (let n = 1; n <= 5; n++) await src.add('charge', { order: n }, { jobId: `cli-${n}` });
    const snap = join(dir, 'backup.jsonl');
    const ex = await cli(['export', REDIS_URL, `bullmq:${prefix}:cli-src`, '--state', 'waiting', '--out', snap]);
    expect(ex.code, ex.stderr).toBe(0);
    const dst = queue('cli-dst');
    await dst.add('charge', { order: 'kept' }, { jobId: 'cli-2' });
    await dst.add('charge', { order: 'kept' }, { jobId: 'cli-5' });

    const r = await cli(['reinject', REDIS_URL, `bullmq:${prefix}:cli-dst`, '--from', snap, '--yes']);
    expect(r.code, r.stdout + r.stderr).toBe(EXIT.PARTIAL);
    expect(r.stdout).toMatch(/Re-injected 3 of 5 messages .*\(2 failed\)/);
    expect(r.stdout + r.stderr).toMatch(/"cli-2" already exists .*was not re-injected/);
    const h = await cli(['history', '--json', '--limit', '1']);
    const entry = (JSON.parse(h.stdout) as { entries: { action: string; counts: Record<string, number> }[] }).entries[0];
    expect(entry?.action).toBe('reinject');
    expect(entry?.counts).toMatchObject({ published: 3, failed: 2 });
    expect((await dst.getWaiting()).length).toBe(5);
  });
});
