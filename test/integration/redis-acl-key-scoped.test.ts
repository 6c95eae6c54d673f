import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Queue, Worker } from 'bullmq';
import { createRedisAdapter, type RedisAdapter } from '../../core/adapters/redis';
import type { MoveBatchResult } from '../../core/adapters/redrive-types';
import { runCli } from './fixtures/run-cli';
import { freePort } from './fixtures/free-port';

/**
 * An ACL user restricted to one queue's keys (`~myapp:payments:* +@all`, the usual least-privilege
 * setup): Redis 7 refuses SORT_RO … GET for a user without access to all keys
 * ("ERR GET option of SORT denied due to insufficient ACL permissions"), so peek, inspect and the
 * redrive dry run must fall back to reading ids, then job hashes. A private redis-server (ACL users
 * are server-wide; the shared server is left alone), stopped by pid afterwards.
 */

const PARENT = '/tmp/redisfix';
let dir = '';
let port = 0;
let pid = 0;
let admin: Redis | undefined;
const password = randomBytes(12).toString('hex');
const adapters: RedisAdapter[] = [];
const QUEUE_ID = 'bullmq:myapp:payments';

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await Promise.resolve().then(check).catch(() => false))) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function scoped(): RedisAdapter {
  const a = createRedisAdapter({ kind: 'redis', url: `redis://127.0.0.1:${String(port)}`, username: 'payments', password });
  adapters.push(a);
  return a;
}

beforeAll(async () => {
  mkdirSync(PARENT, { recursive: true });
  dir = mkdtempSync(join(PARENT, 'acl-'));
  port = await freePort();
  execFileSync('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'yes', '--dir', dir, '--pidfile', join(dir, 'redis.pid'), '--logfile', join(dir, 'redis.log')]);
  await waitFor('the private redis-server', () => {
    pid = Number(readFileSync(join(dir, 'redis.pid'), 'utf8').trim());
    return Promise.resolve(pid > 0);
  });
  // From here on afterAll stops it.
  const c = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: null });
  admin = c;
  await waitFor('PING', async () => {
    await c.ping();
    return true;
  });
  await c.call('ACL', 'SETUSER', 'payments', 'on', `>${password}`, '~myapp:payments:*', '+@all');

  // 3 failed jobs (a real Worker that throws), 1 waiting.
  const queue = new Queue('payments', { connection: c, prefix: 'myapp' });
  for (let i = 1; i <= 3; i++) await queue.add('charge', { orderId: `A-${String(i)}` }, { jobId: `job-${String(i)}` });
  const worker = new Worker(
    'payments',
    () => {
      throw new Error('HTTP 503 Service Unavailable');
    },
    { connection: { port, host: '127.0.0.1', maxRetriesPerRequest: null }, prefix: 'myapp' },
  );
  worker.on('error', () => undefined);
  worker.on('failed', () => undefined);
  await waitFor('3 failed jobs', async () => (await queue.getJobCounts('failed')).failed === 3);
  await worker.close();
  await queue.add('charge', { orderId: 'A-4' }, { jobId: 'job-4' });
  await queue.close();
  // Keys of other applications on the same server, which this user may not touch.
  const other = new Queue('billing', { connection: c, prefix: 'otherapp' });
  await other.add('x', {});
  await other.close();
  await c.rpush('otherapp:jobs', 'x');
}, 60_000);

afterAll(async () => {
  for (const a of adapters) await a.close();
  admin?.disconnect();
  if (pid > 0) {
    try {
      process.kill(pid, 'SIGTERM');
      for (let i = 0; i < 100; i++) {
        process.kill(pid, 0);
        await new Promise((r) => setTimeout(r, 100));
      }
    } catch {
      // exited
    }
  }
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

describe('BullMQ with an ACL user limited to the queue\'s own keys', () => {
  it('the server refuses SORT_RO … GET to this user (the situation under test)', async () => {
    const u = new Redis({ port, host: '127.0.0.1', username: 'payments', password });
    try {
      await expect(u.call('SORT_RO', 'myapp:payments:failed', 'BY', 'nosort', 'GET', '#')).rejects.toThrow(/GET option of SORT denied due to insufficient ACL permissions/);
    } finally {
      u.disconnect();
    }
  });

  it('peeks failed jobs (oldest first, with failure reason) and waiting jobs', async () => {
    const a = scoped();
    const failed = await a.peek(QUEUE_ID, { state: 'failed', limit: 10 });
    expect(failed.total).toBe(3);
    expect(failed.messages.map((m) => m.id)).toEqual(['job-1', 'job-2', 'job-3']);
    expect(failed.messages.map((m) => JSON.parse(m.body.data) as unknown)).toEqual([{ orderId: 'A-1' }, { orderId: 'A-2' }, { orderId: 'A-3' }]);
    expect(failed.messages[0]?.meta).toMatchObject({ state: 'failed', jobName: 'charge', failedReason: 'HTTP 503 Service Unavailable', attemptsMade: 1 });
    const waiting = await a.peek(QUEUE_ID, { limit: 10 });
    expect(waiting.messages.map((m) => m.id)).toEqual(['job-4']);
  });

  it('inspects the queue (counts) and dry-runs a redrive of the failed jobs', async () => {
    const a = scoped();
    expect((await a.listQueues({})).map((x) => x.id)).toContain(QUEUE_ID);
    const q = await a.getQueue(QUEUE_ID);
    expect(q.counts).toMatchObject({ failed: 3, waiting: 1 });
    const batches: MoveBatchResult[] = [];
    const mover = a.redrive;
    if (!mover) throw new Error('the Redis adapter has no redrive mover');
    const s = await mover.moveClientSide(
      { sourceQueueId: QUEUE_ID, state: 'failed', batchSize: 2, cutoffMs: Date.now(), maxMessages: null, dryRun: true },
      { gate: () => Promise.resolve(), decide: () => ({ action: 'move', targetQueueId: QUEUE_ID }), beforeMove: () => Promise.resolve(), onBatch: (b) => batches.push(b) },
    );
    expect(s).toMatchObject({ examined: 3, moved: 3, failed: 0 });
    expect(batches.flatMap((b) => b.moved.map((m) => m.id))).toEqual(['job-1', 'job-2', 'job-3']);
    // A dry run leaves the jobs where they were.
    expect(await admin?.zcard('myapp:payments:failed')).toBe(3);
  });

  it('the CLI: peek --state failed, and redrive --dry-run, as this user', async () => {
    const url = `redis://payments:${password}@127.0.0.1:${String(port)}`;
    const peek = await runCli(dir, ['peek', url, QUEUE_ID, '--state', 'failed', '--json']);
    expect(peek.stderr).toBe('');
    expect(peek.code).toBe(0);
    expect(peek.stdout).toContain('job-1');
    expect(peek.stdout).toContain('HTTP 503 Service Unavailable');
    const dry = await runCli(dir, ['redrive', url, QUEUE_ID, '--dry-run', '--no-native']);
    expect(dry.stderr).not.toMatch(/denied|insufficient ACL/);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/would move 3:\s+3 → payments/);
    expect(await admin?.zcard('myapp:payments:failed')).toBe(3);
  });
});
