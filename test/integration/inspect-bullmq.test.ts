import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Queue, Worker } from 'bullmq';
import { createAdapter } from '../../core/adapters';
import { createRedisAdapter } from '../../core/adapters/redis';
import { exportQueue } from '../../core/services/export';
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

/** A queue (unique prefix) whose charges for `orders` all failed for good (attempts 1, HTTP 503). */
async function queueWithFailedCharges(name: string, orders: string[]): Promise<{ q: Queue; prefix: string }> {
  const prefix = uniqueName('bq');
  const q = new Queue(name, { connection: native, prefix });
  cleanups.push(() => q.obliterate({ force: true }).then(() => q.close()));
  await q.addBulk(orders.map((o) => ({ name: 'charge', data: charge(o), opts: { attempts: 1 } })));
  const conn = native.duplicate();
  const w = new Worker(name, () => Promise.reject(new Error('HTTP 503')), { connection: conn, prefix });
  w.on('error', () => undefined);
  const until = Date.now() + 30_000;
  while ((await q.getFailedCount()) < orders.length) {
    if (Date.now() > until) throw new Error('the jobs did not fail in time');
    await new Promise((r) => setTimeout(r, 20));
  }
  await w.close();
  conn.disconnect();
  return { q, prefix };
}

describe('inspect (BullMQ): failed jobs against the live ones', () => {
  it('compares failed with waiting + delayed, and waiting with failed', async () => {
    const name = 'payments';
    // Three charges fail for good.
    const { q, prefix } = await queueWithFailedCharges(name, ['A-1', 'A-2', 'A-3']);
    // A-1 was sent again (waiting), A-2 again with a delay, A-9 is new.
    await q.add('charge', charge('A-1'));
    await q.add('charge', charge('A-9'));
    await q.add('charge', charge('A-2'), { delay: 3_600_000 });

    const queueId = (await adapter.listQueues({})).find((x) => x.kind === 'bullmq' && x.name === name && x.id.includes(prefix))?.id;
    expect(queueId).toBeDefined();
    // An orphan id in the failed set (its job hash is gone) is not a message left unread.
    await native.zadd(`${prefix}:${name}:failed`, Date.now(), 'orphan-1');
    const failed = await inspectQueue(adapter, queueId as string, { state: 'failed' });
    expect(failed.analysed).toBe(3);
    expect(failed).toMatchObject({ total: 3, partial: false, partialReason: null });
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

describe('inspect (BullMQ): --limit and snapshot files', () => {
  it('compares the inspected jobs with every live job, not only as many as --limit, and finds the partner in another section of a snapshot', async () => {
    const name = 'charges';
    const { q, prefix } = await queueWithFailedCharges(name, Array.from({ length: 30 }, (_, i) => `B-${String(i)}`));
    // All 30 sent again, newest first: the oldest failed job's key is the last waiting one.
    for (let i = 29; i >= 0; i--) await q.add('charge', charge(`B-${String(i)}`));
    const queueId = (await adapter.listQueues({})).find((x) => x.kind === 'bullmq' && x.name === name && x.id.includes(prefix))?.id as string;

    const limited = await inspectQueue(adapter, queueId, { state: 'failed', limit: 1 });
    expect(limited.analysed).toBe(1);
    expect(limited.comparisons[0]).toMatchObject({ read: 30, partial: false });
    expect(limited.comparisons[0]?.result?.sharedKeyCount).toBe(1);

    // The failed and the waiting jobs exported into two files and joined into one.
    const dir = await mkdtemp(join(tmpdir(), 'qs-bq-snap-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const ctx = { signal: new AbortController().signal, report: () => undefined, setTotal: () => undefined, checkpoint: () => Promise.resolve() };
    await exportQueue(adapter, queueId, { path: join(dir, 'failed.jsonl'), state: 'failed' }, ctx);
    await exportQueue(adapter, queueId, { path: join(dir, 'waiting.jsonl'), state: 'waiting' }, ctx);
    const failedOnly = createAdapter({ kind: 'snapshot', path: join(dir, 'failed.jsonl') });
    const [fq] = await failedOnly.listQueues({});
    const alone = await inspectQueue(failedOnly, fq?.id as string);
    expect(alone.comparisons).toEqual([expect.objectContaining({ relation: 'dead-letter-source', result: null, note: expect.stringMatching(/are not in this snapshot .*export them too \(export --state waiting --out b\.jsonl\).*inspect the joined file by queue id/) as unknown })]);
    await failedOnly.close();
    await writeFile(join(dir, 'both.jsonl'), Buffer.concat([await readFile(join(dir, 'failed.jsonl')), await readFile(join(dir, 'waiting.jsonl'))]));
    const both = createAdapter({ kind: 'snapshot', path: join(dir, 'both.jsonl') });
    try {
      const sections = await both.listQueues({});
      expect(sections).toHaveLength(2);
      const failedSection = sections.find((s) => (s.config as { snapshot: { state: string } }).snapshot.state === 'failed');
      const r = await inspectQueue(both, failedSection?.id as string);
      expect(r.analysed).toBe(30);
      expect(r.comparisons).toHaveLength(1);
      expect(r.comparisons[0]).toMatchObject({ relation: 'dead-letter-source', label: `${name} (waiting jobs)`, read: 30 });
      expect(r.comparisons[0]?.result?.sharedKeyCount).toBe(30);
      const waitingSection = sections.find((s) => s.id !== failedSection?.id);
      const back = await inspectQueue(both, waitingSection?.id as string);
      expect(back.comparisons[0]).toMatchObject({ relation: 'dead-letter-target', label: `${name} (failed jobs)`, read: 30 });
    } finally {
      await both.close();
    }
  });
});
