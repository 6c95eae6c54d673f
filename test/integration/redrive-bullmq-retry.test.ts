import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { FlowProducer, Queue, Worker } from 'bullmq';
import { createRedisAdapter, type RedisAdapter } from '../../core/adapters/redis';
import { BULLMQ_RETRY_BATCH_LUA } from '../../core/adapters/redis/redrive-lua';
import { REDRIVE_COUNT_HEADER, type MoveHooks, type RedriveDecision } from '../../core/adapters/redrive-types';
import type { QueueMessage } from '../../shared/domain';
import { REDIS_URL, uniqueName } from './env';

/**
 * The Redis mover's BullMQ retry (one batch script, core/adapters/redis/redrive-lua.ts
 * BULLMQ_RETRY_BATCH_LUA) must leave a queue exactly as BullMQ's own
 * `Job.retry(state, { resetAttemptsMade: true, resetAttemptsStarted: true })` leaves an identical
 * queue, job by job in the same order: the wait list and its order (lifo jobs at the other end),
 * prioritized jobs and their scores, the marker, the job hashes (attempts, failedReason /
 * returnvalue, finishedOn, processedOn removed), parents' dependency keys, and the `waiting`
 * events — plus, on our side only, the redrive counter field. Two queues are built the same way
 * (same ids, options and flows), one retried by the mover (with some jobs skipped), the other by
 * BullMQ, and compared key by key.
 */

const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const adapters: RedisAdapter[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

afterAll(async () => {
  for (const a of adapters) await a.close();
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  native.disconnect();
});

const N = 60;

/** Builds queue `name`: N jobs (some lifo, some prioritized, one delayed-free custom id) and a flow whose children fail; everything ends in `state`. */
async function build(prefix: string, name: string, state: 'failed' | 'completed'): Promise<Queue> {
  const q = new Queue(name, { connection: native, prefix });
  cleanups.push(() => q.obliterate({ force: true }).then(() => q.close()));
  await q.addBulk(
    Array.from({ length: N }, (_, i) => ({
      name: i % 2 === 0 ? 'charge' : 'refund',
      data: { i, orderId: `O-${i}` },
      opts: {
        attempts: 2,
        ...(i % 5 === 1 ? { lifo: true } : {}),
        ...(i % 7 === 0 ? { priority: 1 + (i % 3) } : {}),
        ...(i === 13 ? { jobId: 'custom-13' } : {}),
      },
    })),
  );
  if (state === 'failed') {
    const flow = new FlowProducer({ connection: native, prefix });
    await flow.add({
      name: 'parent',
      queueName: name,
      data: { parent: true },
      opts: { jobId: 'parent-1' },
      children: [
        { name: 'child', queueName: name, data: { c: 1 }, opts: { jobId: 'child-1' } },
        { name: 'child', queueName: name, data: { c: 2 }, opts: { jobId: 'child-2', ignoreDependencyOnFailure: true } },
      ],
    });
    await flow.close();
  }
  const conn = native.duplicate();
  const w = new Worker(
    name,
    (job) => {
      const d = job.data as { parent?: boolean; i?: number; c?: number };
      if (d.parent === true) return Promise.resolve('parent done');
      if (state === 'completed') return Promise.resolve({ ok: d.i });
      return Promise.reject(new Error(`HTTP 503 for ${String(d.i ?? d.c)}`));
    },
    { connection: conn, prefix, concurrency: 1 },
  );
  w.on('error', () => undefined);
  const want = state === 'failed' ? N + 2 : N;
  const until = Date.now() + 60_000;
  while ((state === 'failed' ? await q.getFailedCount() : await q.getCompletedCount()) < want) {
    if (Date.now() > until) throw new Error(`jobs of ${name} did not reach ${state} in time`);
    await new Promise((r) => setTimeout(r, 20));
  }
  await w.close();
  conn.disconnect();
  return q;
}

/** Everything of queue `name` a retry can touch, with the queue's name normalised to `Q` and the counter field left out. */
async function dump(prefix: string, name: string, since: string): Promise<Record<string, unknown>> {
  const b = `${prefix}:${name}:`;
  const norm = (s: string | null): string | null => (s === null ? null : s.split(`${prefix}:${name}`).join('Q'));
  const ids = new Set([...(await native.zrange(`${b}failed`, 0, -1)), ...(await native.zrange(`${b}completed`, 0, -1)), ...(await native.lrange(`${b}wait`, 0, -1)), ...(await native.zrange(`${b}prioritized`, 0, -1)), ...(await native.zrange(`${b}waiting-children`, 0, -1))]);
  const jobs: Record<string, Record<string, string | null>> = {};
  for (const id of [...ids].sort()) {
    const h = await native.hgetall(`${b}${id}`);
    const out: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(h)) {
      // Time and worker fields differ between two runs anyway; their presence is compared.
      if (k === REDRIVE_COUNT_HEADER) continue;
      out[k] = ['timestamp', 'processedOn', 'finishedOn', 'pb', 'stacktrace', 'ats', 'atm'].includes(k) ? '<present>' : norm(v);
    }
    jobs[id] = out;
  }
  const deps: Record<string, unknown> = {};
  for (const suffix of ['dependencies', 'processed', 'failed', 'unsuccessful']) {
    const k = `${b}parent-1:${suffix}`;
    const type = await native.type(k);
    if (type === 'set') deps[suffix] = (await native.smembers(k)).map(norm).sort();
    else if (type === 'hash') deps[suffix] = Object.keys(await native.hgetall(k)).map(norm).sort();
    else if (type === 'zset') deps[suffix] = (await native.zrange(k, 0, -1)).map(norm).sort();
    else deps[suffix] = type;
  }
  const events = ((await native.xrange(`${b}events`, `(${since}`, '+')) as [string, string[]][]).map(([, f]) => f.join(' '));
  return {
    wait: await native.lrange(`${b}wait`, 0, -1),
    prioritized: await native.zrange(`${b}prioritized`, 0, -1, 'WITHSCORES'),
    pc: await native.get(`${b}pc`),
    marker: await native.zrange(`${b}marker`, 0, -1, 'WITHSCORES'),
    // Members only: these sets are scored by finishedOn from building the two twin queues, so jobs
    // finished in the same or neighbouring ms may order differently in each (not the retry's doing).
    failed: (await native.zrange(`${b}failed`, 0, -1)).sort(),
    completed: (await native.zrange(`${b}completed`, 0, -1)).sort(),
    meta: await native.hgetall(`${b}meta`),
    jobs,
    deps,
    events,
  };
}

async function lastEventId(prefix: string, name: string): Promise<string> {
  const last = (await native.xrevrange(`${prefix}:${name}:events`, '+', '-', 'COUNT', 1)) as [string, string[]][];
  return last[0]?.[0] ?? '0-0';
}

/** Retries `viaMover`'s jobs with the mover (skipping every 9th) and `viaBullmq`'s same jobs, in the same order, with BullMQ's Job.retry; returns both dumps. */
async function retryBoth(prefix: string, state: 'failed' | 'completed', opts: { pause?: boolean } = {}): Promise<{ ours: Record<string, unknown>; bullmq: Record<string, unknown>; moved: string[] }> {
  const qa = await build(prefix, 'qa', state);
  const qb = await build(prefix, 'qb', state);
  if (opts.pause) {
    await qa.pause();
    await qb.pause();
  }
  const a = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
  adapters.push(a);
  const m = a.redrive;
  if (!m) throw new Error('no redrive');
  const idA = `bullmq:${prefix}:qa`;
  const moved: string[] = [];
  const h: MoveHooks = {
    gate: () => Promise.resolve(),
    decide: (msg: QueueMessage): RedriveDecision => (Number(msg.id) % 9 === 4 ? { action: 'skip', reason: 'test' } : { action: 'move', targetQueueId: idA }),
    beforeMove: () => Promise.resolve(),
    onBatch: (r) => moved.push(...r.moved.map((x) => x.id)),
  };
  const sinceA = await lastEventId(prefix, 'qa');
  const sinceB = await lastEventId(prefix, 'qb');
  const s = await m.moveClientSide({ sourceQueueId: idA, state, batchSize: 7, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h);
  expect(s.failed).toBe(0);
  expect(s.moved).toBe(moved.length);
  for (const id of moved) {
    const job = await qb.getJob(id);
    if (!job) throw new Error(`job ${id} missing in qb`);
    await job.retry(state, { resetAttemptsMade: true, resetAttemptsStarted: true });
  }
  for (const id of moved) expect(await native.hget(`${prefix}:qa:${id}`, REDRIVE_COUNT_HEADER)).toBe('1');
  return { ours: await dump(prefix, 'qa', sinceA), bullmq: await dump(prefix, 'qb', sinceB), moved };
}

describe('BullMQ retry by the Redis mover = BullMQ Job.retry with reset attempts', () => {
  it('the batch script is in use (the installed bullmq reprocessJob is the one it was written from)', () => {
    expect(BULLMQ_RETRY_BATCH_LUA).not.toBeNull();
  });

  it('failed jobs (plain, lifo, prioritized, custom id, flow children): same lists, sets, hashes, parent keys and events', async () => {
    const { ours, bullmq, moved } = await retryBoth(uniqueName('bqeq'), 'failed');
    expect(moved.length).toBeGreaterThan(40);
    expect(moved).toContain('child-1');
    expect(moved).toContain('custom-13');
    expect((ours.failed as string[]).length).toBe(N + 2 - moved.length);
    expect((ours.prioritized as string[]).length).toBeGreaterThan(0);
    expect((ours.events as string[]).length).toBe(moved.length);
    expect(ours).toEqual(bullmq);
  });

  it('in a paused queue: no marker, the same end state as BullMQ', async () => {
    const { ours, bullmq } = await retryBoth(uniqueName('bqeqp'), 'failed', { pause: true });
    expect(ours.marker).toEqual([]);
    expect(ours).toEqual(bullmq);
  });

  it('completed jobs: returnvalue removed as BullMQ does', async () => {
    const { ours, bullmq, moved } = await retryBoth(uniqueName('bqeqc'), 'completed');
    expect(moved.length).toBeGreaterThan(40);
    expect(ours).toEqual(bullmq);
  });
});

describe('BullMQ retry by the Redis mover while other clients change the failed set', () => {
  /** `n` failed jobs (ids 1..n) in a fresh queue. */
  async function failed(prefix: string, n: number): Promise<Queue> {
    const q = new Queue('jobs', { connection: native, prefix });
    cleanups.push(() => q.obliterate({ force: true }).then(() => q.close()));
    await q.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'charge', data: { i } })));
    const conn = native.duplicate();
    const w = new Worker('jobs', () => Promise.reject(new Error('HTTP 503')), { connection: conn, prefix, concurrency: 50 });
    w.on('error', () => undefined);
    while ((await q.getFailedCount()) < n) await new Promise((r) => setTimeout(r, 20));
    await w.close();
    conn.disconnect();
    return q;
  }

  function mover(): NonNullable<RedisAdapter['redrive']> {
    const a = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
    adapters.push(a);
    if (!a.redrive) throw new Error('no redrive');
    return a.redrive;
  }

  it('jobs of the batch in hand removed or retried by another client before the commit: reported failed, and no later job is skipped', async () => {
    const prefix = uniqueName('bqcc');
    const q = await failed(prefix, 300);
    const id = `bullmq:${prefix}:jobs`;
    const decided: string[] = [];
    let batches = 0;
    const h: MoveHooks = {
      gate: () => Promise.resolve(),
      decide: (m) => {
        decided.push(m.id);
        // Every 10th job stays, so later reads start after kept jobs (rank arithmetic).
        return Number(m.id) % 10 === 0 ? { action: 'skip', reason: 'test' } : { action: 'move', targetQueueId: id };
      },
      beforeMove: async (ms) => {
        batches++;
        if (batches !== 2) return;
        // Another client: removes 3 jobs whole and retries 3 others, between our read and our commit.
        const ids = ms.map((m) => m.id);
        for (const x of ids.slice(0, 3)) await q.remove(x);
        for (const x of ids.slice(3, 6)) await (await q.getJob(x))?.retry('failed');
      },
      onBatch: () => undefined,
    };
    const s = await mover().moveClientSide({ sourceQueueId: id, state: 'failed', batchSize: 50, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h);
    expect(new Set(decided).size).toBe(300);
    expect(decided.length).toBe(300);
    expect(s).toMatchObject({ examined: 300, moved: 300 - 30 - 6, skipped: 30, failed: 6 });
    expect(await q.getFailedCount()).toBe(30);
  });

  it('a batch read ahead is read again after a long gate wait (a pause), so jobs removed meanwhile are not examined', async () => {
    const prefix = uniqueName('bqpause');
    const q = await failed(prefix, 120);
    const id = `bullmq:${prefix}:jobs`;
    const decided: string[] = [];
    let gates = 0;
    const h: MoveHooks = {
      gate: async () => {
        gates++;
        if (gates !== 2) return;
        // "Paused" for longer than a read ahead may be kept; meanwhile another client retries the next 10 jobs.
        const next = await native.zrange(`${prefix}:jobs:failed`, 0, 9);
        for (const x of next) await (await q.getJob(x))?.retry('failed');
        await new Promise((r) => setTimeout(r, 1300));
      },
      decide: (m) => {
        decided.push(m.id);
        return { action: 'move', targetQueueId: id };
      },
      beforeMove: () => Promise.resolve(),
      onBatch: () => undefined,
    };
    const s = await mover().moveClientSide({ sourceQueueId: id, state: 'failed', batchSize: 40, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h);
    expect(s).toMatchObject({ examined: 110, moved: 110, failed: 0 });
    expect(new Set(decided).size).toBe(110);
    expect(await q.getFailedCount()).toBe(0);
  });
});
