import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Queue, Worker } from 'bullmq';
import { createRedisAdapter } from '../../core/adapters/redis';
import { inspectQueue } from '../../core/inspect/inspect';
import { REDIS_URL, uniqueName } from './env';

/**
 * Inspect on a real BullMQ queue (issue 3, "duplicates between a DLQ and its source queue"): a
 * BullMQ queue keeps its dead letters in its own `failed` set, so inspecting `failed` compares the
 * keys with the jobs that will still run (waiting, delayed…), and inspecting `waiting` compares them
 * with the failed ones — a retry of a failed job whose key is also waiting runs the operation twice.
 */
const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const adapter = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
const cleanups: (() => Promise<unknown>)[] = [];

afterAll(async () => {
  await adapter.close();
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  native.disconnect();
});

const charge = (orderId: string): { orderId: string; operation: string; idempotencyKey: string } => ({ orderId, operation: 'charge', idempotencyKey: `${orderId}:charge` });

describe('inspect (BullMQ): failed jobs against the live ones', () => {
  it('compares failed with waiting + delayed, and waiting with failed', async () => {
    const prefix = uniqueName('bq');
    const name = 'payments';
    const q = new Queue(name, { connection: native, prefix });
    cleanups.push(() => q.obliterate({ force: true }).then(() => q.close()));
    // Three charges fail for good (attempts 1).
    await q.addBulk(['A-1', 'A-2', 'A-3'].map((o) => ({ name: 'charge', data: charge(o), opts: { attempts: 1 } })));
    const conn = native.duplicate();
    const w = new Worker(name, () => Promise.reject(new Error('HTTP 503')), { connection: conn, prefix });
    w.on('error', () => undefined);
    const until = Date.now() + 30_000;
    while ((await q.getFailedCount()) < 3) {
      if (Date.now() > until) throw new Error('the jobs did not fail in time');
      await new Promise((r) => setTimeout(r, 20));
    }
    await w.close();
    conn.disconnect();
    // A-1 was sent again (waiting), A-2 again with a delay, A-9 is new.
    await q.add('charge', charge('A-1'));
    await q.add('charge', charge('A-9'));
    await q.add('charge', charge('A-2'), { delay: 3_600_000 });

    const queueId = (await adapter.listQueues({})).find((x) => x.kind === 'bullmq' && x.name === name && x.id.includes(prefix))?.id;
    expect(queueId).toBeDefined();
    const failed = await inspectQueue(adapter, queueId as string, { state: 'failed' });
    expect(failed.analysed).toBe(3);
    expect(failed.comparisons).toHaveLength(1);
    const toLive = failed.comparisons[0];
    expect(toLive).toMatchObject({ relation: 'dead-letter-source', label: `${name} (waiting, delayed jobs)`, read: 3, partial: false, note: null });
    expect(toLive?.result?.sharedKeys.map((g) => g.key).sort()).toEqual(['A-1:charge', 'A-2:charge']);
    expect(toLive?.result?.reasons.join(' ')).toMatch(/share a key with/);

    const waiting = await inspectQueue(adapter, queueId as string);
    expect(waiting.analysed).toBe(2);
    expect(waiting.comparisons).toHaveLength(1);
    expect(waiting.comparisons[0]).toMatchObject({ relation: 'dead-letter-target', label: `${name} (failed jobs)`, read: 3 });
    expect(waiting.comparisons[0]?.result?.sharedKeys.map((g) => g.key)).toEqual(['A-1:charge']);

    // Completed jobs have no partner; without failed jobs, waiting has none either.
    expect((await inspectQueue(adapter, queueId as string, { state: 'completed' })).comparisons).toEqual([]);
    await q.clean(0, 100, 'failed');
    expect((await inspectQueue(adapter, queueId as string)).comparisons).toEqual([]);
  });
});
