import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Queue, Worker } from 'bullmq';
import { createRedisAdapter, type RedisAdapter } from '../../core/adapters/redis';
import { REDRIVE_COUNT_HEADER, type MoveBatchResult, type MoveHooks, type RedriveDecision, type RedriveMover } from '../../core/adapters/redrive-types';
import { QueuescopeError, type QueueMessage } from '../../shared/domain';
import { REDIS_URL, uniqueName } from './env';
import { privateRedis } from './fixtures/private-redis';

/**
 * The Redis redrive mover against the real Redis: lists, streams and BullMQ failed jobs moved
 * whole and filtered, dry run, cutoff, cancellation, native retryJobs, re-inject (publish), a
 * SIGKILL fault test on 10,000 messages per kind, and a restart of a private redis-server (AOF on)
 * during a redrive.
 */

const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const adapters: RedisAdapter[] = [];
const keys: string[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

function adapter(url = REDIS_URL): RedisAdapter {
  const a = createRedisAdapter({ kind: 'redis', url });
  adapters.push(a);
  return a;
}
function mover(a: RedisAdapter): RedriveMover {
  if (!a.redrive) throw new Error('no redrive');
  return a.redrive;
}
function key(label: string): string {
  const k = uniqueName(label);
  keys.push(k);
  return k;
}

afterAll(async () => {
  for (const a of adapters) await a.close();
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  for (let i = 0; i < keys.length; i += 100) await native.del(...keys.slice(i, i + 100));
  native.disconnect();
});

interface Recorded {
  batches: MoveBatchResult[];
  backedUp: QueueMessage[];
  decided: QueueMessage[];
}

function hooks(decide: (m: QueueMessage) => RedriveDecision, extra: Partial<MoveHooks> = {}): MoveHooks & { rec: Recorded } {
  const rec: Recorded = { batches: [], backedUp: [], decided: [] };
  return {
    rec,
    gate: extra.gate ?? (() => Promise.resolve()),
    decide: (m) => {
      rec.decided.push(m);
      return decide(m);
    },
    beforeMove: (ms) => {
      rec.backedUp.push(...ms);
      return extra.beforeMove ? extra.beforeMove(ms) : Promise.resolve();
    },
    onBatch: (r) => rec.batches.push(r),
  };
}

const moveTo = (queueId: string) => (): RedriveDecision => ({ action: 'move', targetQueueId: queueId });
const text = (m: QueueMessage): string => Buffer.from(m.body.data, m.body.encoding === 'utf8' ? 'utf8' : 'base64').toString('utf8');

async function expectCode(p: Promise<unknown>, code: string): Promise<QueuescopeError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(QueuescopeError);
    expect((e as QueuescopeError).code).toBe(code);
    return e as QueuescopeError;
  }
  throw new Error(`expected QueuescopeError ${code}, but the call succeeded`);
}

async function seedList(r: Redis, k: string, n: number, from = 0): Promise<void> {
  for (let i = from; i < from + n; i += 1000) {
    const vals = [];
    for (let j = i; j < Math.min(from + n, i + 1000); j++) vals.push(JSON.stringify({ orderId: `L-${j}`, idempotencyKey: `L-${j}:charge` }));
    await r.rpush(k, ...vals);
  }
}
async function seedStream(r: Redis, k: string, n: number, from = 0): Promise<void> {
  for (let i = from; i < from + n; i += 1000) {
    const p = r.pipeline();
    for (let j = i; j < Math.min(from + n, i + 1000); j++) p.xadd(k, '*', 'body', JSON.stringify({ orderId: `S-${j}` }), 'error', j % 2 ? 'HTTP 503' : 'HTTP 422', 'seq', String(j));
    await p.exec();
  }
}
const orderIds = (vals: string[]): string[] => vals.map((v) => (JSON.parse(v) as { orderId: string }).orderId);
async function streamBodies(r: Redis, k: string): Promise<string[]> {
  const out: string[] = [];
  let start = '-';
  for (;;) {
    const page = await r.xrange(k, start, '+', 'COUNT', 5000);
    for (const [, f] of page) out.push(f[f.indexOf('body') + 1] as string);
    if (page.length < 5000) return out;
    start = `(${(page[page.length - 1] as [string, string[]])[0]}`;
  }
}

describe('list redrive', () => {
  it('moves a whole list in order, byte for byte, and a filtered one leaving skipped elements in place', async () => {
    const m = mover(adapter());
    const dlq = key('list-dlq');
    const target = key('list-work');
    await seedList(native, dlq, 2500);
    await native.rpush(dlq, Buffer.from([0xff, 0x00, 0xfe, 0x80]));
    const h = hooks(moveTo(`list:${target}`));
    const s = await m.moveClientSide({ sourceQueueId: `list:${dlq}`, batchSize: 1000, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h);
    expect(s).toMatchObject({ examined: 2501, moved: 2501, skipped: 0, failed: 0, possibleDuplicates: 0, stoppedBecause: 'exhausted' });
    expect(await native.llen(dlq)).toBe(0);
    const moved = await native.lrangeBuffer(target, 0, -1);
    expect(orderIds(moved.slice(0, 2500).map((b) => b.toString()))).toEqual(Array.from({ length: 2500 }, (_, i) => `L-${i}`));
    expect(moved[2500]).toEqual(Buffer.from([0xff, 0x00, 0xfe, 0x80]));
    expect(h.rec.backedUp).toHaveLength(2501);

    // filtered back: every third stays, in its order, with its content
    const h2 = hooks((msg) => ((orderIdOf(msg) % 3) === 0 ? { action: 'skip', reason: 'non-retryable: HTTP 422' } : { action: 'move', targetQueueId: `list:${dlq}` }));
    await native.rpop(target);
    const s2 = await m.moveClientSide({ sourceQueueId: `list:${target}`, batchSize: 100, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h2);
    expect(s2).toMatchObject({ examined: 2500, moved: 1666, skipped: 834, failed: 0 });
    expect(orderIds(await native.lrange(target, 0, -1))).toEqual(Array.from({ length: 2500 }, (_, i) => i).filter((i) => i % 3 === 0).map((i) => `L-${i}`));
    expect(orderIds(await native.lrange(dlq, 0, -1))).toEqual(Array.from({ length: 2500 }, (_, i) => i).filter((i) => i % 3 !== 0).map((i) => `L-${i}`));
    expect(h2.rec.batches.flatMap((b) => b.skipped.map((x) => x.reason))).toContain('non-retryable: HTTP 422');
  });

  it('stops at the length at the start: elements pushed during the run stay in the DLQ', async () => {
    const m = mover(adapter());
    const dlq = key('list-cut');
    const target = key('list-cut-t');
    await seedList(native, dlq, 500);
    let pushed = 0;
    const h = hooks(moveTo(`list:${target}`), {
      gate: async () => {
        await seedList(native, dlq, 10, 1000 + pushed);
        pushed += 10;
      },
    });
    const s = await m.moveClientSide({ sourceQueueId: `list:${dlq}`, batchSize: 100, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h);
    expect(s).toMatchObject({ examined: 500, moved: 500, stoppedBecause: 'cutoff' });
    expect(orderIds(await native.lrange(dlq, 0, -1))).toEqual(Array.from({ length: pushed }, (_, i) => `L-${1000 + i}`));
    expect(await native.llen(target)).toBe(500);
  });

  it('dry run and maxMessages: dry run changes nothing and reports what would move', async () => {
    const m = mover(adapter());
    const dlq = key('list-dry');
    const target = key('list-dry-t');
    await seedList(native, dlq, 300);
    const before = await native.lrange(dlq, 0, -1);
    const h = hooks((msg) => (orderIdOf(msg) < 100 ? { action: 'move', targetQueueId: `list:${target}` } : { action: 'skip', reason: 'x' }));
    const s = await m.moveClientSide({ sourceQueueId: `list:${dlq}`, batchSize: 64, cutoffMs: Date.now(), maxMessages: 250, dryRun: true }, h);
    expect(s).toMatchObject({ examined: 250, moved: 100, skipped: 150, stoppedBecause: 'max-messages' });
    expect(await native.lrange(dlq, 0, -1)).toEqual(before);
    expect(await native.exists(target)).toBe(0);
    expect(h.rec.backedUp).toHaveLength(0);
  });

  it('refuses a stream as the target of a list and a list changed under the run (pushed at the head); moves around what a popper took', async () => {
    const m = mover(adapter());
    const dlq = key('list-bad');
    await seedList(native, dlq, 10);
    const s = await m.moveClientSide({ sourceQueueId: `list:${dlq}`, batchSize: 10, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, hooks(moveTo(`stream:${key('x')}`)));
    expect(s).toMatchObject({ moved: 0, failed: 10 });
    expect(await native.llen(dlq)).toBe(10);
    // a client pushes at the head between the read and the move (no pops explain it): nothing in that batch moves
    const target = key('list-bad-t');
    const h = hooks(moveTo(`list:${target}`), { beforeMove: async () => {
        await native.lpush(dlq, 'pushed');
      } });
    const e = await expectCode(m.moveClientSide({ sourceQueueId: `list:${dlq}`, batchSize: 5, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h), 'BROKER_ERROR');
    expect(e.message).toMatch(/changed while it was being redriven/);
    expect(await native.llen(dlq)).toBe(11);
    expect(await native.exists(target)).toBe(0);
    // a consumer pops the head between each batch's read and its move: the entry it took is reported
    // taken (failed, with the count in a warning), the rest of the batch moves from where the pop put it
    await native.lpop(dlq);
    const popped: string[] = [];
    const hp = hooks(moveTo(`list:${target}`), { beforeMove: async () => {
        popped.push((await native.lpop(dlq)) as string);
      } });
    const s2 = await m.moveClientSide({ sourceQueueId: `list:${dlq}`, batchSize: 5, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, hp);
    expect(s2).toMatchObject({ examined: 10, moved: 8, failed: 2 });
    expect(s2.warnings?.[0]).toMatch(/^2 entries this run read and selected to move were taken by another client/);
    const orders = (xs: string[]): string[] => xs.map((x) => (JSON.parse(x) as { orderId: string }).orderId);
    expect(orders(popped)).toEqual(['L-0', 'L-5']);
    expect(orders(await native.lrange(target, 0, -1))).toEqual(['L-1', 'L-2', 'L-3', 'L-4', 'L-6', 'L-7', 'L-8', 'L-9']);
    expect(await native.exists(dlq)).toBe(0);
    // A list DLQ gone when the run opens it (emptied by another client after the dry run saw it): the error says how that happens, and that nothing moved.
    const gone = await expectCode(m.moveClientSide({ sourceQueueId: `list:${key('missing')}`, batchSize: 5, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, hooks(moveTo('list:x'))), 'QUEUE_NOT_FOUND');
    expect(gone.message).toMatch(/does not exist \(any more\): Redis removes a list when its last entry is popped, so if it held messages a moment ago \(the dry run\), another client emptied it since — nothing was moved from it/);
  });
});

function orderIdOf(m: QueueMessage): number {
  return Number((JSON.parse(text(m)) as { orderId: string }).orderId.slice(2));
}

describe('stream redrive', () => {
  it('moves entries with their fields and a redrive counter, acks pending entries, respects the cutoff and filters', async () => {
    const m = mover(adapter());
    const dlq = key('stream-dlq');
    const target = key('stream-work');
    await seedStream(native, dlq, 1200);
    await native.xgroup('CREATE', dlq, 'auditors', '0');
    await native.xreadgroup('GROUP', 'auditors', 'c1', 'COUNT', 50, 'STREAMS', dlq, '>');
    await native.xadd(dlq, '*', 'body', Buffer.from([0xc3, 0x28]), 'blob', Buffer.from([0, 1, 2]));
    const cutoff = Date.now();
    await new Promise((r) => setTimeout(r, 5));
    let added = false;
    const h = hooks((msg) => (msg.headers.error === 'HTTP 422' ? { action: 'skip', reason: 'non-retryable: HTTP 422' } : { action: 'move', targetQueueId: `stream:${target}` }), {
      gate: async () => {
        if (added) return;
        added = true;
        await native.xadd(dlq, '*', 'body', 'late', 'error', 'HTTP 503');
      },
    });
    const s = await m.moveClientSide({ sourceQueueId: `stream:${dlq}`, batchSize: 250, cutoffMs: cutoff, maxMessages: null, dryRun: false }, h);
    expect(s).toMatchObject({ examined: 1201, moved: 601, skipped: 600, failed: 0, stoppedBecause: 'cutoff' });
    const moved = await native.xrangeBuffer(target, '-', '+');
    expect(moved).toHaveLength(601);
    const first = moved[0] as [Buffer, Buffer[]];
    expect(first[1].map((b) => b.toString())).toEqual(['body', JSON.stringify({ orderId: 'S-1' }), 'error', 'HTTP 503', 'seq', '1', REDRIVE_COUNT_HEADER, '1']);
    const bin = moved[600] as [Buffer, Buffer[]];
    expect(bin[1].slice(0, 4)).toEqual([Buffer.from('body'), Buffer.from([0xc3, 0x28]), Buffer.from('blob'), Buffer.from([0, 1, 2])]);
    const left = await native.xrange(dlq, '-', '+');
    expect(left).toHaveLength(601); // 600 skipped + the late entry
    expect(left.every(([, f]) => f[3] === 'HTTP 422' || f[1] === 'late')).toBe(true);
    const pending = (await native.xpending(dlq, 'auditors')) as [number, ...unknown[]];
    expect(pending[0]).toBe(25); // of the 50 delivered, the 25 skipped (HTTP 422) stay pending; the moved ones were acked

    // second redrive of the same entries: the counter goes to 2
    const back = key('stream-back');
    await m.moveClientSide({ sourceQueueId: `stream:${target}`, batchSize: 1000, cutoffMs: Date.now(), maxMessages: 1, dryRun: false }, hooks(moveTo(`stream:${back}`)));
    const again = (await native.xrange(back, '-', '+'))[0] as [string, string[]];
    expect(again[1].slice(-2)).toEqual([REDRIVE_COUNT_HEADER, '2']);
    expect(again[1].filter((f) => f === REDRIVE_COUNT_HEADER)).toHaveLength(1);
  });

  it('dry run changes nothing; cancellation mid-run leaves every entry in exactly one place', async () => {
    const m = mover(adapter());
    const dlq = key('stream-cancel');
    const target = key('stream-cancel-t');
    await seedStream(native, dlq, 1000);
    const before = await native.xrange(dlq, '-', '+');
    const d = await m.moveClientSide({ sourceQueueId: `stream:${dlq}`, batchSize: 100, cutoffMs: Date.now(), maxMessages: null, dryRun: true }, hooks(moveTo(`stream:${target}`)));
    expect(d).toMatchObject({ examined: 1000, moved: 1000 });
    expect(await native.xrange(dlq, '-', '+')).toEqual(before);
    expect(await native.exists(target)).toBe(0);

    const ac = new AbortController();
    let gates = 0;
    const h = hooks(moveTo(`stream:${target}`), {
      gate: () => {
        if (++gates === 4) ac.abort();
        return Promise.resolve();
      },
    });
    await expectCode(m.moveClientSide({ sourceQueueId: `stream:${dlq}`, batchSize: 100, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h, ac.signal), 'CANCELLED');
    const moved = h.rec.batches.reduce((n, b) => n + b.moved.length, 0);
    expect(moved).toBe(300);
    const all = [...(await streamBodies(native, dlq)), ...(await streamBodies(native, target))];
    expect(new Set(all).size).toBe(1000);
    expect(all).toHaveLength(1000);
    expect(await native.xlen(target)).toBe(300);
  });

  it('suggests the source by naming convention only, and has no native move', async () => {
    const m = mover(adapter());
    const a = adapter();
    const dlq = key('orders');
    await native.xadd(`${dlq}-dlq`, '*', 'body', 'x');
    keys.push(`${dlq}-dlq`);
    const summary = await a.getQueue(`stream:${dlq}-dlq`);
    const page = await a.peek(summary.id, { limit: 1 });
    const t = m.resolveTarget(page.messages[0] as QueueMessage, summary);
    expect(t?.queueId).toBe(`stream:${dlq}`);
    expect(t?.via).toMatch(/naming convention/);
    expect((await m.nativeMove(summary, null)).available).toBe(false);
  });
});

// ---- BullMQ ----------------------------------------------------------------------------------

async function failedJobs(prefix: string, name: string, n: number, reason: (i: number) => string, opts: { custom?: boolean } = {}): Promise<Queue> {
  const q = new Queue(name, { connection: native, prefix });
  cleanups.push(() => q.obliterate({ force: true }).then(() => q.close()));
  for (let i = 0; i < n; i += 1000) {
    await q.addBulk(
      Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({
        name: 'charge',
        data: { orderId: `B-${i + k}`, amount: 12.5, big: 9007199254740991, nested: { ok: true } },
        opts: { attempts: 2, priority: (i + k) % 10 === 0 ? 3 : undefined, ...(opts.custom ? { jobId: `order-${i + k}` } : {}) },
      })),
    );
  }
  const conn = native.duplicate();
  const w = new Worker(
    name,
    (job) => {
      throw new Error(reason(Number((job.data as { orderId: string }).orderId.slice(2))));
    },
    { connection: conn, prefix, concurrency: 100 },
  );
  w.on('error', () => undefined);
  const until = Date.now() + 120_000;
  while ((await q.getFailedCount()) < n) {
    if (Date.now() > until) throw new Error('jobs did not fail in time');
    await new Promise((r) => setTimeout(r, 50));
  }
  await w.close();
  conn.disconnect();
  return q;
}

describe('BullMQ redrive', () => {
  it('retries selected failed jobs into their own queue with a fresh attempt budget and a counter; skipped ones stay failed', async () => {
    const prefix = uniqueName('bq');
    const name = 'payments';
    const id = `bullmq:${prefix}:${name}`;
    const q = await failedJobs(prefix, name, 300, (i) => (i % 4 === 0 ? 'HTTP 422 validation failed' : 'timeout after 30000 ms'));
    const a = adapter();
    const m = mover(a);
    const summary = await a.getQueue(id);
    const rawBefore = await native.hget(`${prefix}:${name}:6`, 'data'); // job 6 = B-5: retried (B-4, job 5, is a skipped 422)
    const h = hooks((msg) => (/HTTP 422/.test(msg.meta.failedReason ?? '') ? { action: 'skip', reason: 'non-retryable: HTTP 422' } : { action: 'move', targetQueueId: m.resolveTarget(msg, summary)?.queueId ?? 'none' }));
    const s = await m.moveClientSide({ sourceQueueId: id, state: 'failed', batchSize: 64, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h);
    expect(s).toMatchObject({ examined: 300, moved: 225, skipped: 75, failed: 0, stoppedBecause: 'exhausted' });
    expect(await q.getFailedCount()).toBe(75);
    expect((await q.getWaitingCount()) + (await q.getPrioritizedCount())).toBe(225);
    expect(await q.getPrioritizedCount()).toBe(15); // priority kept: every 10th job has one, minus the 15 of them skipped (i % 20 == 0)
    const job = await q.getJob('6');
    expect(job?.attemptsMade).toBe(0);
    expect(job?.failedReason).toBeFalsy();
    expect(await native.hget(`${prefix}:${name}:6`, 'data')).toBe(rawBefore);
    expect(await native.hget(`${prefix}:${name}:6`, REDRIVE_COUNT_HEADER)).toBe('1');
    expect(await native.hget(`${prefix}:${name}:5`, 'atm')).toBe('2'); // skipped: untouched
    expect(h.rec.decided[0]?.meta.finishedOn).toBeTypeOf('number');
    const failed = await q.getFailed(0, -1);
    expect(failed.every((j) => /HTTP 422/.test(j.failedReason))).toBe(true);
    // the counter is visible in a peek of the retried job
    const page = await a.peek(id, { limit: 300, state: 'waiting' });
    expect(page.messages.find((x) => x.id === '6')?.properties[REDRIVE_COUNT_HEADER]).toBe('1');
  });

  it('moves failed jobs to another queue with the same name, data and options, keeping custom ids; dry run changes nothing', async () => {
    const prefix = uniqueName('bq2');
    const src = await failedJobs(prefix, 'imports', 120, () => 'ECONNRESET', { custom: true });
    const dst = new Queue('imports-retry', { connection: native, prefix });
    cleanups.push(() => dst.obliterate({ force: true }).then(() => dst.close()));
    const srcId = `bullmq:${prefix}:imports`;
    const dstId = `bullmq:${prefix}:imports-retry`;
    const m = mover(adapter());
    const before = await native.zrange(`${prefix}:imports:failed`, 0, -1);
    const dry = await m.moveClientSide({ sourceQueueId: srcId, batchSize: 50, cutoffMs: Date.now(), maxMessages: null, dryRun: true }, hooks(moveTo(dstId)));
    expect(dry).toMatchObject({ examined: 120, moved: 120 });
    expect(await native.zrange(`${prefix}:imports:failed`, 0, -1)).toEqual(before);
    const data7 = await native.hget(`${prefix}:imports:order-7`, 'data');
    const s = await m.moveClientSide({ sourceQueueId: srcId, batchSize: 50, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, hooks(moveTo(dstId)));
    expect(s).toMatchObject({ examined: 120, moved: 120, failed: 0, possibleDuplicates: 0 });
    expect(await src.getFailedCount()).toBe(0);
    expect(await src.getJob('order-7')).toBeUndefined();
    const copy = await dst.getJob('order-7');
    expect(copy?.name).toBe('charge');
    expect(copy?.opts.attempts).toBe(2);
    expect(await native.hget(`${prefix}:imports-retry:order-7`, 'data')).toBe(data7);
    expect(await native.hget(`${prefix}:imports-retry:order-7`, REDRIVE_COUNT_HEADER)).toBe('1');
    expect((await dst.getWaitingCount()) + (await dst.getPrioritizedCount())).toBe(120);
  });

  it('native retryJobs: retries every failed job up to the start and reports progress', async () => {
    const prefix = uniqueName('bq3');
    const q = await failedJobs(prefix, 'mail', 2500, () => 'HTTP 503');
    const a = adapter();
    const m = mover(a);
    const dlq = await a.getQueue(`bullmq:${prefix}:mail`);
    const support = await m.nativeMove(dlq, null);
    expect(support).toMatchObject({ available: true, mechanism: 'BullMQ queue.retryJobs', supportsTarget: false });
    expect((await m.nativeMove(dlq, `bullmq:${prefix}:other`)).available).toBe(false);
    const handle = await m.startNativeMove(dlq, null, null);
    expect(handle.total).toBe(2500);
    let status = await m.nativeMoveStatus(handle);
    for (let i = 0; i < 200 && status.status === 'running'; i++) {
      await new Promise((r) => setTimeout(r, 25));
      status = await m.nativeMoveStatus(handle);
    }
    expect(status).toMatchObject({ status: 'completed', moved: 2500, total: 2500, error: null });
    expect(await q.getFailedCount()).toBe(0);
    expect(await q.getWaitingCount()).toBe(2500); // BullMQ's moveJobsToWait puts prioritized jobs in wait too (it does not support priorities)
  });
});

describe('publish (re-inject)', () => {
  it('publishes to a list, a stream and a BullMQ queue with the counter, confirming each', async () => {
    const a = adapter();
    const m = mover(a);
    const s = key('pub-s');
    await native.xadd(s, '*', 'payload', '{"a":1}', 'trace', 'abc', REDRIVE_COUNT_HEADER, '2');
    const msgs = (await a.peek(`stream:${s}`, { limit: 10 })).messages;
    const s2 = key('pub-s2');
    expect(await m.publish(`stream:${s2}`, msgs)).toEqual({ published: [msgs[0]?.id], failed: [] });
    expect((await native.xrange(s2, '-', '+'))[0]?.[1]).toEqual(['payload', '{"a":1}', 'trace', 'abc', REDRIVE_COUNT_HEADER, '3']);
    const l = key('pub-l');
    const truncated = { ...(msgs[0] as QueueMessage), id: 't', body: { encoding: 'utf8' as const, data: 'x', sizeBytes: 10, truncated: true } };
    const r = await m.publish(`list:${l}`, [...msgs, truncated]);
    expect(r.published).toHaveLength(1);
    expect(r.failed[0]?.id).toBe('t');
    expect(await native.lrange(l, 0, -1)).toEqual(['{"a":1}']);
    const prefix = uniqueName('pub');
    const q = new Queue('q', { connection: native, prefix });
    cleanups.push(() => q.obliterate({ force: true }).then(() => q.close()));
    const job: QueueMessage = { ...(msgs[0] as QueueMessage), id: 'A-1001:charge', headers: { attempts: 3 }, meta: { jobName: 'charge' } };
    const rj = await m.publish(`bullmq:${prefix}:q`, [job]);
    expect(rj.failed).toEqual([]);
    const [added] = await q.getWaiting();
    expect(added?.name).toBe('charge');
    expect(added?.data).toEqual({ a: 1 });
    expect(added?.opts.attempts).toBe(3);
  });
});

// ---- fault tests ---------------------------------------------------------------------------------

const CHILD = join(__dirname, 'fixtures', 'redrive-redis-child.ts');
const TRIALS = Number(process.env.QUEUESCOPE_FAULT_TRIALS ?? 10);
const FAULT_N = 10_000;

/** Runs the child mover and SIGKILLs it `afterMs` after its first committed batch (or lets it finish when null). */
function runChild(url: string, source: string, target: string, batch: number, pauseMs: number, killAfterMs: number | null, skipEvery = 0): Promise<{ killed: boolean; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, url, source, target, String(batch), String(pauseMs), String(skipEvery)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let armed = false;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (!armed && killAfterMs !== null && out.includes('batch')) {
        armed = true;
        setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve({ killed: true, out });
      else if (code === 0) resolve({ killed: false, out });
      else reject(new Error(`child exited ${String(code)}: ${err}`));
    });
  });
}

function tally(ids: string[], n: number): { lost: number; duplicates: number } {
  const seen = new Map<string, number>();
  for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1);
  let lost = 0;
  let duplicates = 0;
  for (let i = 0; i < n; i++) {
    const c = seen.get(String(i)) ?? 0;
    if (c === 0) lost++;
    else duplicates += c - 1;
  }
  return { lost, duplicates };
}

describe('fault: SIGKILL during a 10,000-message redrive', () => {
  const report: string[] = [];
  afterAll(() => {
    process.stdout.write(`Redis redrive fault trials:\n${report.join('\n')}\n`);
  });

  it(`list: ${TRIALS} trials, zero lost`, { timeout: 600_000 }, async () => {
    let killedMidway = 0;
    for (let t = 0; t < TRIALS; t++) {
      const dlq = key('fl');
      const target = key('fl-t');
      await seedList(native, dlq, FAULT_N);
      const r = await runChild(REDIS_URL, `list:${dlq}`, `list:${target}`, 100, 4, Math.floor(Math.random() * 400), t % 2 ? 7 : 0);
      const ids = orderIds([...(await native.lrange(dlq, 0, -1)), ...(await native.lrange(target, 0, -1))]).map((x) => x.slice(2));
      const { lost, duplicates } = tally(ids, FAULT_N);
      const inTarget = await native.llen(target);
      if (r.killed && inTarget > 0 && inTarget < FAULT_N) killedMidway++;
      report.push(`list trial ${t}: killed=${r.killed} moved=${inTarget} lost=${lost} duplicates=${duplicates}`);
      expect(lost).toBe(0);
      expect(duplicates).toBe(0);
      // order within each list is kept
      const tIds = orderIds(await native.lrange(target, 0, -1)).map((x) => Number(x.slice(2)));
      expect(tIds).toEqual([...tIds].sort((x, y) => x - y));
      await native.del(dlq, target);
    }
    expect(killedMidway).toBeGreaterThanOrEqual(Math.ceil(TRIALS / 2));
  });

  it(`stream: ${TRIALS} trials, zero lost`, { timeout: 600_000 }, async () => {
    let killedMidway = 0;
    for (let t = 0; t < TRIALS; t++) {
      const dlq = key('fs');
      const target = key('fs-t');
      await seedStream(native, dlq, FAULT_N);
      const r = await runChild(REDIS_URL, `stream:${dlq}`, `stream:${target}`, 100, 4, Math.floor(Math.random() * 400), t % 2 ? 5 : 0);
      const bodies = [...(await streamBodies(native, dlq)), ...(await streamBodies(native, target))];
      const { lost, duplicates } = tally(orderIds(bodies).map((x) => x.slice(2)), FAULT_N);
      const inTarget = await native.xlen(target);
      if (r.killed && inTarget > 0 && inTarget < FAULT_N) killedMidway++;
      report.push(`stream trial ${t}: killed=${r.killed} moved=${inTarget} lost=${lost} duplicates=${duplicates}`);
      expect(lost).toBe(0);
      expect(duplicates).toBe(0);
      await native.del(dlq, target);
    }
    expect(killedMidway).toBeGreaterThanOrEqual(Math.ceil(TRIALS / 2));
  });

  it(`BullMQ: ${TRIALS} trials, zero lost`, { timeout: 600_000 }, async () => {
    const prefix = uniqueName('fb');
    const name = 'orders';
    const q = await failedJobs(prefix, name, FAULT_N, () => 'HTTP 503');
    const id = `bullmq:${prefix}:${name}`;
    let killedMidway = 0;
    for (let t = 0; t < TRIALS; t++) {
      const r = await runChild(REDIS_URL, id, id, 100, 4, Math.floor(Math.random() * 400), t % 2 ? 9 : 0);
      const failed = await native.zrange(`${prefix}:${name}:failed`, 0, -1);
      const waiting = [...(await native.lrange(`${prefix}:${name}:wait`, 0, -1)), ...(await native.zrange(`${prefix}:${name}:prioritized`, 0, -1))];
      const { lost, duplicates } = tally([...failed, ...waiting].map((x) => String(Number(x) - 1)), FAULT_N);
      if (r.killed && waiting.length > 0 && failed.length > 0) killedMidway++;
      report.push(`BullMQ trial ${t}: killed=${r.killed} retried=${waiting.length} lost=${lost} duplicates=${duplicates}`);
      expect(lost).toBe(0);
      expect(duplicates).toBe(0);
      // every retried job got exactly one redrive counter increment per retry and its data unchanged
      if (waiting[0] !== undefined) expect(JSON.parse((await native.hget(`${prefix}:${name}:${waiting[0]}`, 'data')) ?? '{}')).toMatchObject({ amount: 12.5, big: 9007199254740991 });
      await restoreFailed(prefix, name);
    }
    expect(await q.getFailedCount()).toBe(FAULT_N);
    expect(killedMidway).toBeGreaterThanOrEqual(Math.ceil(TRIALS / 2));
  });
});

/** Test-only: puts the jobs a trial retried back into the failed set (as a worker failing them again would), for the next trial. */
async function restoreFailed(prefix: string, name: string): Promise<void> {
  await native.eval(
    `local now = tonumber(ARGV[1])
     for _, k in ipairs({KEYS[1], KEYS[2]}) do
       local ids = (k == KEYS[1]) and redis.call('LRANGE', k, 0, -1) or redis.call('ZRANGE', k, 0, -1)
       for _, id in ipairs(ids) do
         redis.call('ZADD', KEYS[3], now, id)
         redis.call('HSET', ARGV[2] .. id, 'finishedOn', now, 'failedReason', 'HTTP 503', 'atm', 2)
       end
       redis.call('DEL', k)
     end
     redis.call('DEL', KEYS[4])`,
    4,
    `${prefix}:${name}:wait`,
    `${prefix}:${name}:prioritized`,
    `${prefix}:${name}:failed`,
    `${prefix}:${name}:marker`,
    String(Date.now() - 1000),
    `${prefix}:${name}:`,
  );
}

// ---- restart of a private Redis during a redrive ----------------------------------------------------

describe('Redis restart during a redrive (private redis-server with AOF)', () => {
  let dir = '';
  const { url, start, waitUp, kill } = privateRedis(() => dir);

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'qs-redis-restart-'));
    start();
  });
  afterAll(async () => {
    await kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the run fails with exact counts, a second run completes, nothing is lost', { timeout: 120_000 }, async () => {
    let r = await waitUp();
    await seedList(r, 'dlq', 5000);
    await seedStream(r, 'sdlq', 5000);
    for (const [source, target, count] of [
      ['list:dlq', 'list:work', async (x: Redis): Promise<[number, number]> => [await x.llen('dlq'), await x.llen('work')]],
      ['stream:sdlq', 'stream:swork', async (x: Redis): Promise<[number, number]> => [await x.xlen('sdlq'), await x.xlen('swork')]],
    ] as const) {
      const m = mover(adapter(url));
      let batches = 0;
      const restart = async (): Promise<void> => {
        r.disconnect();
        await kill();
        start();
        r = await waitUp();
      };
      // lists: Redis restarts between batches (the next read fails); streams: after the read and
      // backup, before the move script (the commit fails and its outcome is reported unknown).
      const h = hooks(moveTo(target), {
        gate: async () => {
          if (++batches === 10 && source.startsWith('list')) await restart();
        },
        beforeMove: async () => {
          if (batches === 10 && source.startsWith('stream')) await restart();
        },
      });
      const e = await expectCode(m.moveClientSide({ sourceQueueId: source, batchSize: 100, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h), 'HOST_UNREACHABLE');
      expect(e.message).toMatch(/127\.0\.0\.1/);
      const reportedMoved = h.rec.batches.reduce((n, b) => n + b.moved.length, 0);
      const unknown = h.rec.batches.reduce((n, b) => n + b.failed.filter((f) => /Outcome unknown/.test(f.error.message)).length, 0);
      const [inDlq, inTarget] = await count(r);
      expect(reportedMoved).toBe(900); // 9 batches committed before the restart
      expect(inDlq + inTarget).toBe(5000);
      expect(inTarget === reportedMoved || inTarget === reportedMoved + unknown).toBe(true);
      // running it again completes
      const again = await mover(adapter(url)).moveClientSide({ sourceQueueId: source, batchSize: 500, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, hooks(moveTo(target)));
      expect(again.moved).toBe(inDlq);
      const [dlq2, target2] = await count(r);
      expect([dlq2, target2]).toEqual([0, 5000]);
    }
    r.disconnect();
  });
});
