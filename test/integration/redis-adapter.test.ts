import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { Queue, Worker, type Job } from 'bullmq';
import { createRedisAdapter, type RedisAdapter } from '../../core/adapters/redis';
import { QueuescopeError, type PeekOptions, type QueueMessage, type RedisConnectionConfig } from '../../shared/domain';
import { REDIS_URL, uniqueName } from './env';
import { freePort } from './fixtures/free-port';

/**
 * Redis-specific behaviour of the Redis adapter, against the real Redis: BullMQ jobs processed
 * by a real Worker, stream consumer groups with stranded pending entries, bounded discovery,
 * ACL users, TLS (a private TLS redis-server started here), binary bodies and deleted queues.
 */

const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const adapters: RedisAdapter[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

function adapter(extra: Partial<RedisConnectionConfig> = {}): RedisAdapter {
  const a = createRedisAdapter({ kind: 'redis', url: REDIS_URL, ...extra });
  adapters.push(a);
  return a;
}

afterAll(async () => {
  for (const a of adapters) await a.close();
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  native.disconnect();
});

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

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function peekAll(a: RedisAdapter, queueId: string, opts: Partial<PeekOptions>, limit: number): Promise<QueueMessage[]> {
  const out: QueueMessage[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 1000; i++) {
    const page = await a.peek(queueId, { ...opts, limit, cursor });
    out.push(...page.messages);
    cursor = page.nextCursor;
    if (cursor === null) break;
  }
  return out;
}

function bytesOf(m: QueueMessage): Buffer {
  return Buffer.from(m.body.data, m.body.encoding === 'utf8' ? 'utf8' : 'base64');
}

describe('BullMQ queues', () => {
  const prefix = uniqueName('pfx');
  const name = 'payments';
  const queueId = `bullmq:${prefix}:${name}`;
  let queue: Queue;
  let worker: Worker | undefined;

  beforeAll(async () => {
    queue = new Queue(name, { connection: native, prefix });
    cleanups.push(async () => {
      await queue.obliterate({ force: true });
      await queue.close();
    });
    worker = new Worker(
      name,
      async (job: Job<{ orderId: string; fail?: string }>) => {
        await new Promise((r) => setTimeout(r, 5));
        if (job.data.fail) throw new Error(job.data.fail);
        return { charged: job.data.orderId };
      },
      { connection: { url: REDIS_URL, maxRetriesPerRequest: null }, prefix, concurrency: 4 },
    );
    worker.on('error', () => undefined);
    await queue.add('charge', { orderId: 'A-1001' });
    await queue.add('charge', { orderId: 'A-1002' });
    await queue.add(
      'charge',
      { orderId: 'A-1003', fail: 'HTTP 503 Service Unavailable' },
      { jobId: 'A-1003-charge', attempts: 3, backoff: { type: 'exponential', delay: 10 } },
    );
    await waitFor('2 completed and 1 failed job', async () => {
      const c = await queue.getJobCounts('completed', 'failed');
      return c.completed === 2 && c.failed === 1;
    });
    await worker.close();
    worker = undefined;
    // Left behind without a worker: one waiting, one delayed, one prioritized.
    await queue.add('charge', { orderId: 'A-2001' });
    await queue.add('charge', { orderId: 'A-2002' }, { delay: 60_000 });
    await queue.add('charge', { orderId: 'A-2003' }, { priority: 5 });
  });

  afterAll(async () => {
    await worker?.close();
  });

  it('reports the counts BullMQ reports, mapped to depth / inFlight / delayed', async () => {
    const q = await adapter().getQueue(queueId);
    expect(q.kind).toBe('bullmq');
    expect(q.name).toBe(name);
    expect(q.counts).toMatchObject({ completed: 2, failed: 1, waiting: 1, delayed: 1, prioritized: 1, active: 0, 'waiting-children': 0 });
    expect(q.depth).toBe(2);
    expect(q.inFlight).toBe(0);
    expect(q.delayed).toBe(1);
    expect(q.isDeadLetterQueue).toBe(false);
    expect(String(q.config.failedJobs)).toMatch(/removeOnFail/);
    expect(q.config.prefix).toBe(prefix);
    expect(q.capabilities.peekStates).toEqual(expect.arrayContaining(['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed', 'paused']));
  });

  it('is discovered under its non-default prefix', async () => {
    const qs = await adapter().listQueues({ pattern: name });
    const q = qs.find((x) => x.id === queueId);
    expect(q?.counts.failed).toBe(1);
    // BullMQ's internal keys (events stream, wait list, job hashes) are not listed as queues of their own.
    expect(qs.filter((x) => x.id.includes(prefix)).map((x) => x.id)).toEqual([queueId]);
  });

  it('shows a failed job with its reason, attempts, stack trace, options and custom id', async () => {
    const page = await adapter().peek(queueId, { state: 'failed', limit: 10 });
    expect(page.total).toBe(1);
    expect(page.messages).toHaveLength(1);
    const m = page.messages[0]!;
    expect(m.id).toBe('A-1003-charge');
    expect(JSON.parse(m.body.data)).toEqual({ orderId: 'A-1003', fail: 'HTTP 503 Service Unavailable' });
    expect(m.meta.state).toBe('failed');
    expect(m.meta.jobName).toBe('charge');
    expect(m.meta.failedReason).toBe('HTTP 503 Service Unavailable');
    expect(m.meta.attemptsMade).toBe(3);
    expect(m.meta.attemptsLimit).toBe(3);
    expect(m.meta.stacktrace?.length).toBeGreaterThan(0);
    expect(m.meta.stacktrace?.[0]).toContain('HTTP 503 Service Unavailable');
    expect(m.headers).toMatchObject({ attempts: 3, backoff: { type: 'exponential', delay: 10 }, jobId: 'A-1003-charge' });
    expect(m.meta.enqueuedAt).toBeGreaterThan(Date.now() - 120_000);
    expect(m.meta.finishedOn).toBeGreaterThanOrEqual(m.meta.processedOn!);
    expect(m.meta.processedOn).toBeGreaterThanOrEqual(m.meta.enqueuedAt!);
  });

  it('reads completed, delayed and prioritized jobs in their states', async () => {
    const a = adapter();
    const completed = await a.peek(queueId, { state: 'completed', limit: 10 });
    expect(completed.messages.map((m) => (JSON.parse(m.body.data) as { orderId: string }).orderId).sort()).toEqual(['A-1001', 'A-1002']);
    expect(completed.messages.every((m) => m.properties.returnvalue !== undefined)).toBe(true);
    const delayed = await a.peek(queueId, { state: 'delayed', limit: 10 });
    expect(delayed.messages).toHaveLength(1);
    expect(delayed.messages[0]!.meta.delayMs).toBe(60_000);
    const prioritized = await a.peek(queueId, { state: 'prioritized', limit: 10 });
    expect(prioritized.messages[0]!.properties.priority).toBe(5);
    const waiting = await a.peek(queueId, { limit: 10 });
    expect(waiting.messages.map((m) => m.meta.state)).toEqual(['waiting']);
  });

  it('rejects an unknown state and a cursor from another state', async () => {
    const a = adapter();
    await expectCode(a.peek(queueId, { state: 'dead', limit: 5 }), 'INVALID_INPUT');
    const page = await a.peek(queueId, { state: 'completed', limit: 1 });
    expect(page.nextCursor).not.toBeNull();
    await expectCode(a.peek(queueId, { state: 'failed', limit: 1, cursor: page.nextCursor }), 'INVALID_INPUT');
    await expectCode(a.peek(queueId, { state: 'completed', limit: 0 }), 'INVALID_INPUT');
  });
});

describe('BullMQ paging', () => {
  it('keeps its place when a job leaves the state between pages, and cuts big bodies at a character boundary', async () => {
    const name = uniqueName('bullpage');
    const queue = new Queue(name, { connection: native });
    cleanups.push(async () => {
      await queue.obliterate({ force: true });
      await queue.close();
    });
    const worker = new Worker(
      name,
      async () => {
        await Promise.resolve();
        throw new Error('HTTP 422 Unprocessable Entity: amount must be positive');
      },
      { connection: { url: REDIS_URL, maxRetriesPerRequest: null }, concurrency: 1 },
    );
    worker.on('error', () => undefined);
    const big = { orderId: 'A-9', note: 'é'.repeat(5000) };
    for (let i = 0; i < 6; i++) await queue.add('charge', i === 5 ? big : { orderId: `A-${i}` });
    await waitFor('6 failed jobs', async () => (await queue.getFailedCount()) === 6);
    await worker.close();
    const a = adapter();
    const id = `bullmq:bull:${name}`;
    const first = await a.peek(id, { state: 'failed', limit: 2 });
    expect(first.messages).toHaveLength(2);
    // Retrying the first two moves them out of the failed set: an index cursor would now skip two jobs.
    for (const m of first.messages) await (await queue.getJob(m.id))!.retry();
    const rest = await peekAll(a, id, { state: 'failed' }, 2);
    expect(rest).toHaveLength(4);
    const seen = new Set([...first.messages, ...rest].map((m) => m.id));
    expect(seen.size).toBe(6);

    const cut = await a.peek(id, { state: 'failed', limit: 10, direction: 'newest', maxBodyBytes: 101 });
    const bigMsg = cut.messages.find((m) => m.body.sizeBytes > 1000)!;
    expect(bigMsg.body.truncated).toBe(true);
    expect(bigMsg.body.encoding).toBe('utf8');
    expect(bigMsg.body.sizeBytes).toBe(Buffer.byteLength(JSON.stringify(big)));
    // Cut at a character boundary: 'é' is 2 bytes, so the text is at most 101 bytes and valid.
    expect(Buffer.byteLength(bigMsg.body.data)).toBeLessThanOrEqual(101);
    expect(JSON.stringify(big).startsWith(bigMsg.body.data)).toBe(true);
  });

  it('jobs that share options and failure reason come back as independent objects', async () => {
    // The BullMQ read path reuses decoded values between consecutive jobs with identical bytes;
    // each message must still own its objects, so changing one cannot change another.
    const name = uniqueName('bullshare');
    const queue = new Queue(name, { connection: native });
    cleanups.push(async () => {
      await queue.obliterate({ force: true });
      await queue.close();
    });
    const worker = new Worker(
      name,
      async () => {
        await Promise.resolve();
        throw new Error('HTTP 503 Service Unavailable');
      },
      { connection: { url: REDIS_URL, maxRetriesPerRequest: null }, concurrency: 1 },
    );
    worker.on('error', () => undefined);
    const opts = { attempts: 1, backoff: { type: 'exponential', delay: 10 } };
    for (let i = 0; i < 3; i++) await queue.add('charge', { orderId: `A-${i}` }, opts);
    await waitFor('3 failed jobs', async () => (await queue.getFailedCount()) === 3);
    await worker.close();
    const page = await adapter().peek(`bullmq:bull:${name}`, { state: 'failed', limit: 10 });
    expect(page.messages).toHaveLength(3);
    const [m0, m1, m2] = page.messages as [QueueMessage, QueueMessage, QueueMessage];
    for (const m of page.messages) {
      expect(m.meta.failedReason).toBe('HTTP 503 Service Unavailable');
      expect(m.headers.backoff).toEqual({ type: 'exponential', delay: 10 });
      expect(Array.isArray(m.meta.stacktrace)).toBe(true);
    }
    expect(m0.headers.backoff).not.toBe(m1.headers.backoff);
    (m0.headers.backoff as Record<string, unknown>).delay = 999;
    m0.meta.stacktrace?.push('changed');
    expect(m1.headers.backoff).toEqual({ type: 'exponential', delay: 10 });
    expect(m2.meta.stacktrace).not.toContain('changed');
  });

  it('peeking needs only read permissions, and reads the same without SORT_RO', async () => {
    const name = uniqueName('bullacl');
    const queue = new Queue(name, { connection: native });
    cleanups.push(async () => {
      await queue.obliterate({ force: true });
      await queue.close();
    });
    await queue.add('charge', { orderId: 'A-1', idempotencyKey: 'A-1:charge' }, { jobId: 'job-1', attempts: 2 });
    await queue.add('charge', { orderId: 'A-2' }, { priority: 3 });
    await queue.add('refund', { orderId: 'A-3' });
    const password = randomBytes(12).toString('hex');
    const readOnly = uniqueName('readonly');
    const noSort = uniqueName('nosort');
    await native.call('ACL', 'SETUSER', readOnly, 'on', `>${password}`, '~*', '+@read', '+@connection', '+multi', '+exec');
    // Without SORT_RO the adapter falls back to reading ids, then HGETALL per job.
    await native.call('ACL', 'SETUSER', noSort, 'on', `>${password}`, '~*', '+@read', '+@connection', '+multi', '+exec', '-sort_ro');
    cleanups.push(() => native.call('ACL', 'DELUSER', readOnly, noSort));
    const pages = [];
    for (const user of [readOnly, noSort]) {
      const a = adapter({ username: user, password });
      const all = [
        ...(await peekAll(a, `bullmq:bull:${name}`, {}, 1)),
        ...(await peekAll(a, `bullmq:bull:${name}`, { direction: 'newest' }, 1)),
        ...(await peekAll(a, `bullmq:bull:${name}`, { state: 'prioritized' }, 1)),
      ];
      pages.push(all);
    }
    const [viaSort, viaHgetall] = pages as [QueueMessage[], QueueMessage[]];
    expect(viaSort.map((m) => m.id)).toEqual(['job-1', '3', '3', 'job-1', '2']);
    expect(JSON.parse(viaSort[0]!.body.data)).toEqual({ orderId: 'A-1', idempotencyKey: 'A-1:charge' });
    expect(viaSort[0]!.meta).toMatchObject({ jobName: 'charge', attemptsLimit: 2, state: 'waiting' });
    expect(viaSort[4]!.properties.priority).toBe(3);
    expect(viaHgetall).toEqual(viaSort);

    // Listing and counting work for the read-only user too (BullMQ's count script is not permitted).
    const ro = adapter({ username: readOnly, password });
    const listed = (await ro.listQueues({ pattern: name })).find((q) => q.id === `bullmq:bull:${name}`);
    expect(listed?.counts).toMatchObject({ waiting: 2, prioritized: 1, failed: 0 });
    expect(listed?.depth).toBe(3);
    expect(String(listed?.config.countsSource)).toMatch(/LLEN/);
    expect(String((await adapter().getQueue(`bullmq:bull:${name}`)).config.countsSource)).toMatch(/getJobCounts/);
  });
});

describe('streams with consumer groups', () => {
  const key = uniqueName('orders-stream');
  const queueId = `stream:${key}`;
  const ids: string[] = [];

  beforeAll(async () => {
    cleanups.push(() => native.del(key));
    for (let i = 0; i < 5; i++) {
      ids.push((await native.xadd(key, '*', 'type', 'order.created', 'payload', JSON.stringify({ orderId: `A-${1000 + i}` })))!);
    }
    await native.xgroup('CREATE', key, 'billing', '0');
    // worker-1 reads three entries and "crashes": never acknowledges them.
    await native.xreadgroup('GROUP', 'billing', 'worker-1', 'COUNT', 3, 'STREAMS', key, '>');
    await new Promise((r) => setTimeout(r, 60));
    // worker-2 claims the first one: its delivery count becomes 2 and its idle time resets.
    await native.xclaim(key, 'billing', 'worker-2', 0, ids[0]!);
  });

  it('summarises length, pending entries, consumers and lag', async () => {
    const q = await adapter().getQueue(queueId);
    expect(q.kind).toBe('redis-stream');
    expect(q.depth).toBe(5);
    expect(q.inFlight).toBe(3);
    expect(q.consumers).toBe(2);
    expect(q.capabilities.peekStates).toEqual(['all', 'pending:billing']);
    const groups = q.config.groups as { name: string; pending: number; lastDeliveredId: string; lag: number | null; consumers: { name: string; pending: number; idleMs: number | null }[] }[];
    expect(groups).toHaveLength(1);
    expect(groups[0]).toMatchObject({ name: 'billing', pending: 3, lastDeliveredId: ids[2], lag: 2 });
    const w1 = groups[0]!.consumers.find((c) => c.name === 'worker-1')!;
    expect(w1.pending).toBe(2);
    expect(w1.idleMs).toBeGreaterThanOrEqual(50);
  });

  it('peeks the pending entries list with idle time, delivery count and owner, changing nothing', async () => {
    const a = adapter();
    const before = await native.xpending(key, 'billing', '-', '+', 10);
    const page = await a.peek(queueId, { state: 'pending:billing', limit: 10 });
    expect(page.total).toBe(3);
    expect(page.messages.map((m) => m.id)).toEqual(ids.slice(0, 3));
    const [m0, m1] = page.messages as [QueueMessage, QueueMessage];
    expect(m0.meta).toMatchObject({ state: 'pending', consumerGroup: 'billing', consumer: 'worker-2', receiveCount: 2 });
    expect(m1.meta).toMatchObject({ state: 'pending', consumerGroup: 'billing', consumer: 'worker-1', receiveCount: 1 });
    expect(m1.meta.idleMs).toBeGreaterThanOrEqual(50);
    expect(m1.meta.idleMs!).toBeGreaterThan(m0.meta.idleMs!);
    expect(JSON.parse(m1.body.data)).toEqual({ orderId: 'A-1001' });
    expect(m1.headers).toEqual({ type: 'order.created' });
    expect(m1.meta.enqueuedAt).toBe(Number(ids[1]!.split('-')[0]));
    // Paging through pending entries one at a time.
    expect((await peekAll(a, queueId, { state: 'pending:billing' }, 1)).map((m) => m.id)).toEqual(ids.slice(0, 3));
    // Nothing was claimed, delivered or acknowledged by the peeks.
    const after = await native.xpending(key, 'billing', '-', '+', 10);
    expect((after as unknown[][]).map((r) => [r[0], r[1], r[3]])).toEqual((before as unknown[][]).map((r) => [r[0], r[1], r[3]]));
    await expectCode(a.peek(queueId, { state: 'pending:nosuchgroup', limit: 5 }), 'INVALID_INPUT');
  });

  it('marks entries pending / delivered / new in the full view, oldest or newest first', async () => {
    const a = adapter();
    await native.xack(key, 'billing', ids[1]!);
    const page = await a.peek(queueId, { limit: 10 });
    expect(page.total).toBe(5);
    expect(page.messages.map((m) => m.meta.state)).toEqual(['pending', 'delivered', 'pending', 'new', 'new']);
    const newest = await peekAll(a, queueId, { direction: 'newest' }, 2);
    expect(newest.map((m) => m.id)).toEqual([...ids].reverse());
  });

  it('takes the body from body/payload/data/message/json, else the whole field map', async () => {
    const k = uniqueName('fields');
    cleanups.push(() => native.del(k));
    await native.xadd(k, '*', 'a', '1', 'b', 'two');
    await native.xadd(k, '*', 'message', 'hello', 'traceId', 't-1');
    const page = await adapter().peek(`stream:${k}`, { limit: 10 });
    expect(JSON.parse(page.messages[0]!.body.data)).toEqual({ a: '1', b: 'two' });
    expect(page.messages[0]!.headers).toEqual({});
    expect(page.messages[1]!.body.data).toBe('hello');
    expect(page.messages[1]!.headers).toEqual({ traceId: 't-1' });
  });
});

describe('lists', () => {
  it('round-trips a binary element byte for byte and reads from both ends', async () => {
    const key = uniqueName('binlist');
    cleanups.push(() => native.del(key));
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    await native.rpush(key, 'first', all, 'last');
    const a = adapter();
    const page = await a.peek(`list:${key}`, { limit: 10 });
    // Index plus the content's hash (see listEntryId): the same entry has the same id read from either end.
    const sha = (b: Buffer | string): string => createHash('sha1').update(b).digest('hex').slice(0, 8);
    expect(page.messages.map((m) => m.id)).toEqual([`#0~${sha('first')}`, `#1~${sha(all)}`, `#2~${sha('last')}`]);
    const bin = page.messages[1]!;
    expect(bin.body.encoding).toBe('base64');
    expect(bin.body.sizeBytes).toBe(256);
    expect(bytesOf(bin).equals(all)).toBe(true);
    const newest = await peekAll(a, `list:${key}`, { direction: 'newest' }, 2);
    expect(newest.map((m) => m.id)).toEqual([`#2~${sha('last')}`, `#1~${sha(all)}`, `#0~${sha('first')}`]);
    expect(newest[0]!.body.data).toBe('last');
    expect(await native.llen(key)).toBe(3);
  });
});

describe('deleted queues', () => {
  it('a stream deleted or replaced while open is QUEUE_NOT_FOUND', async () => {
    const key = uniqueName('gone');
    cleanups.push(() => native.del(key));
    for (let i = 0; i < 3; i++) await native.xadd(key, '*', 'body', `m${i}`);
    const a = adapter();
    await a.getQueue(`stream:${key}`);
    const first = await a.peek(`stream:${key}`, { limit: 1 });
    await native.del(key);
    await expectCode(a.peek(`stream:${key}`, { limit: 1, cursor: first.nextCursor }), 'QUEUE_NOT_FOUND');
    await expectCode(a.getQueue(`stream:${key}`), 'QUEUE_NOT_FOUND');
    await native.set(key, 'now a string');
    const e = await expectCode(a.peek(`stream:${key}`, { limit: 1 }), 'QUEUE_NOT_FOUND');
    expect(e.message).toContain('string');
  });

  it('an obliterated BullMQ queue is QUEUE_NOT_FOUND, and reading it does not recreate it', async () => {
    const name = uniqueName('obliterated');
    const queue = new Queue(name, { connection: native });
    await queue.add('x', { a: 1 });
    const a = adapter();
    expect((await a.getQueue(`bullmq:bull:${name}`)).depth).toBe(1);
    await queue.obliterate({ force: true });
    await queue.close();
    await expectCode(a.getQueue(`bullmq:bull:${name}`), 'QUEUE_NOT_FOUND');
    await expectCode(a.peek(`bullmq:bull:${name}`, { limit: 5 }), 'QUEUE_NOT_FOUND');
    expect(await native.exists(`bull:${name}:meta`, `bull:${name}:id`, `bull:${name}:wait`)).toBe(0);
  });

  it('a queue id of another broker is QUEUE_NOT_FOUND', async () => {
    await expectCode(adapter().getQueue('rabbitmq:%2F/work'), 'QUEUE_NOT_FOUND');
  });
});

describe('bounded discovery', () => {
  it('examines at most scanLimit keys with SCAN and says the scan was incomplete', async () => {
    const tag = uniqueName('scan');
    const keys = Array.from({ length: 300 }, (_, i) => `${tag}:${String(i).padStart(3, '0')}`);
    cleanups.push(() => native.del(...keys));
    const p = native.pipeline();
    for (const k of keys) p.rpush(k, 'x');
    await p.exec();

    const bounded = adapter({ scanLimit: 100 });
    const some = await bounded.listQueues({ pattern: `${tag}:*` });
    expect(bounded.lastDiscovery).toMatchObject({ scanLimit: 100, complete: false });
    expect(bounded.lastDiscovery!.keysExamined).toBeLessThanOrEqual(100);
    expect(some.length).toBeLessThanOrEqual(100);

    const full = adapter();
    const all = await full.listQueues({ pattern: `${tag}:*` });
    expect(full.lastDiscovery?.complete).toBe(true);
    expect(all.map((q) => q.name)).toEqual(keys);
    expect(all.every((q) => q.kind === 'redis-list' && q.depth === 1)).toBe(true);
    expect((await full.listQueues({ pattern: `${tag}:*`, limit: 7 })).map((q) => q.name)).toEqual(keys.slice(0, 7));
  });

  it('lists streams and lists but not hashes, sets or sorted sets', async () => {
    const tag = uniqueName('kinds');
    const made = [`${tag}:h`, `${tag}:s`, `${tag}:z`, `${tag}:str`, `${tag}:l`, `${tag}:x`];
    cleanups.push(() => native.del(...made));
    await native.hset(`${tag}:h`, 'a', '1');
    await native.sadd(`${tag}:s`, 'a');
    await native.zadd(`${tag}:z`, 1, 'a');
    await native.set(`${tag}:str`, 'a');
    await native.rpush(`${tag}:l`, 'a');
    await native.xadd(`${tag}:x`, '*', 'body', 'a');
    const qs = await adapter().listQueues({ pattern: `${tag}:*` });
    expect(qs.map((q) => q.id)).toEqual([`list:${tag}:l`, `stream:${tag}:x`]);
  });
});

describe('connection errors', () => {
  const user = uniqueName('acl');
  const password = randomBytes(12).toString('hex');
  const limited = uniqueName('acl-limited');

  beforeAll(async () => {
    await native.call('ACL', 'SETUSER', user, 'on', `>${password}`, '~*', '&*', '+@all');
    await native.call('ACL', 'SETUSER', limited, 'on', `>${password}`, '~*', '+@connection', '+info');
    cleanups.push(() => native.call('ACL', 'DELUSER', user, limited));
  });

  it('a wrong password is AUTH_FAILED, as a result and as an error, without the password', async () => {
    const wrong = `not-${password}`;
    const a = adapter({ username: user, password: wrong });
    const r = await a.testConnection();
    expect(r.ok).toBe(false);
    expect(r.error?.code).toBe('AUTH_FAILED');
    expect(r.checks[0]?.ok).toBe(true); // TCP worked
    expect(JSON.stringify(r)).not.toContain(wrong);
    const e = await expectCode(a.listQueues({}), 'AUTH_FAILED');
    expect(e.message).toContain(user);
    expect(e.message).not.toContain(wrong);
  });

  it('the right password in the URL works, and config fields override the URL', async () => {
    const inUrl = adapter({ url: `redis://${encodeURIComponent(user)}:${password}@127.0.0.1:6379` });
    expect((await inUrl.testConnection()).ok).toBe(true);
    const overridden = adapter({ url: `redis://${encodeURIComponent(user)}:wrong@127.0.0.1:6379`, password });
    const r = await overridden.testConnection();
    expect(r.ok).toBe(true);
    expect(r.server).toMatch(/^Redis \d+\.\d+/);
    expect(r.checks.map((c) => c.name)).toEqual(expect.arrayContaining(['PING', 'maxmemory-policy', 'Persistence']));
    expect(r.checks.find((c) => c.name === 'maxmemory-policy')?.detail).toMatch(/^noeviction/);
  });

  it('a password given to a password-less server is reported as ignored, and nothing reaches the console', async () => {
    // The shared Redis has no requirepass: the default user is nopass.
    expect(await native.call('ACL', 'GETUSER', 'default')).toEqual(expect.arrayContaining([expect.arrayContaining(['nopass'])]));
    const warn = vi.spyOn(console, 'warn');
    const error = vi.spyOn(console, 'error');
    const log = vi.spyOn(console, 'log');
    try {
      const a = adapter({ password: 'not-needed-pw' });
      const r = await a.testConnection();
      expect(r.ok).toBe(true);
      const auth = r.checks.find((c) => c.name.startsWith('AUTH as'));
      expect(auth?.ok).toBe(true);
      expect(auth?.detail).toContain('the server requires no password; the password given was ignored');
      expect(JSON.stringify(r)).not.toContain('not-needed-pw');
      expect(Array.isArray(await a.listQueues({}))).toBe(true);
      const calls = [...warn.mock.calls, ...error.mock.calls, ...log.mock.calls].map((c) => c.map(String).join(' '));
      expect(calls.filter((c) => /password/i.test(c))).toEqual([]);
    } finally {
      warn.mockRestore();
      error.mockRestore();
      log.mockRestore();
    }
    // A server that needs the password still says "authenticated".
    const r = await adapter({ username: user, password }).testConnection();
    expect(r.checks.find((c) => c.name.startsWith('AUTH as'))?.detail).toBe('authenticated');
  });

  it('a command the ACL user may not run is PERMISSION_DENIED', async () => {
    const a = adapter({ username: limited, password });
    await expectCode(a.listQueues({}), 'PERMISSION_DENIED');
  });

  it('a closed port is HOST_UNREACHABLE fast, and an unknown host too', async () => {
    const started = Date.now();
    const r = await adapter({ url: 'redis://127.0.0.1:1' }).testConnection();
    expect(r.error?.code).toBe('HOST_UNREACHABLE');
    expect(Date.now() - started).toBeLessThan(3000);
    await expectCode(adapter({ url: 'redis://qs-no-such-host.invalid:6379' }).listQueues({}), 'HOST_UNREACHABLE');
  });

  it('a malformed URL is INVALID_INPUT at creation', () => {
    expect(() => createRedisAdapter({ kind: 'redis', url: 'http://127.0.0.1:6379' })).toThrow(QueuescopeError);
    expect(() => createRedisAdapter({ kind: 'redis', url: 'redis://127.0.0.1:6379/abc' })).toThrow(/database index/);
  });
});

describe('TLS (private redis-server with a throwaway CA)', () => {
  let dir: string;
  let port: number;
  let ca: string;
  let pid: number | null = null;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'qs-redis-tls-'));
    const run = (...args: string[]): void => {
      execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
    };
    run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=queuescope-test-ca');
    run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
    writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
    run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '1', '-extfile', 'san.ext');
    ca = readFileSync(join(dir, 'ca.crt'), 'utf8');
    port = await freePort();
    // A private server for this test only, stopped by its pid afterwards; allkeys-lru to see the BullMQ warning.
    execFileSync('redis-server', [
      '--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1',
      '--tls-cert-file', join(dir, 'server.crt'), '--tls-key-file', join(dir, 'server.key'), '--tls-ca-cert-file', join(dir, 'ca.crt'),
      '--tls-auth-clients', 'no', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'allkeys-lru',
      '--daemonize', 'yes', '--pidfile', join(dir, 'redis.pid'), '--logfile', join(dir, 'redis.log'), '--dir', dir,
    ]);
    await waitFor('the TLS redis-server to start', () => {
      try {
        pid = Number(readFileSync(join(dir, 'redis.pid'), 'utf8').trim());
        return Promise.resolve(pid > 0);
      } catch {
        return Promise.resolve(false);
      }
    }, 10_000);
  });

  afterAll(async () => {
    const alive = (): boolean => {
      try {
        if (pid) process.kill(pid, 0);
        return pid !== null;
      } catch {
        return false;
      }
    };
    if (pid && alive()) {
      process.kill(pid, 'SIGTERM');
      await waitFor('the TLS redis-server to exit', () => Promise.resolve(!alive()), 10_000);
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('connects with the CA, by name and by IP, and warns about a non-noeviction policy', async () => {
    await waitFor('TLS port', async () => (await adapter({ url: `rediss://localhost:${port}`, tls: { rejectUnauthorized: true, ca } }).testConnection()).ok, 10_000);
    const r = await adapter({ url: `rediss://127.0.0.1:${port}`, tls: { rejectUnauthorized: true, ca } }).testConnection();
    expect(r.error).toBeNull();
    expect(r.checks.find((c) => c.name.startsWith('TLS handshake'))?.ok).toBe(true);
    expect(r.checks.find((c) => c.name === 'maxmemory-policy')?.detail).toMatch(/WARNING: allkeys-lru.*BullMQ requires noeviction/);
  });

  it('an untrusted certificate or a wrong server name is TLS_ERROR; rejectUnauthorized false connects', async () => {
    const untrusted = await adapter({ url: `rediss://localhost:${port}` }).testConnection();
    expect(untrusted.error?.code).toBe('TLS_ERROR');
    await expectCode(adapter({ url: `rediss://localhost:${port}` }).listQueues({}), 'TLS_ERROR');
    const wrongName = await adapter({ url: `rediss://localhost:${port}`, tls: { rejectUnauthorized: true, ca, servername: 'wrong.example' } }).testConnection();
    expect(wrongName.error?.code).toBe('TLS_ERROR');
    const insecure = await adapter({ url: `rediss://localhost:${port}`, tls: { rejectUnauthorized: false } }).testConnection();
    expect(insecure.ok).toBe(true);
  });

  it('TLS to a plain Redis port is TLS_ERROR, not "unreachable"', async () => {
    const plain = new URL(REDIS_URL);
    const r = await adapter({ url: `rediss://${plain.hostname}:${plain.port || '6379'}` }).testConnection();
    expect(r.error?.code).toBe('TLS_ERROR');
    expect(r.error?.message).toMatch(/plain Redis/);
  });
});
