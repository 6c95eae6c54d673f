import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter, type RedisAdapter } from '../../core/adapters/redis';
import { runCli, type CliRun } from './fixtures/run-cli';
import { EXIT } from '../../core/cli/exit-codes';
import { QueuescopeError } from '../../shared/domain';
import { REDIS_URL, uniqueName } from './env';

/**
 * A Redis URL naming a database the server does not have (`/99`, or `/16` on a server with 16):
 * ioredis only emits an `error` event for the failed SELECT and carries on on database 0, so
 * before the fix `queues`, `peek` and even `redrive` silently used database 0. Now connecting
 * fails naming the index and the server's limit, with exit 2, and nothing runs on database 0.
 */

const db0 = new Redis(REDIS_URL);
const adapters: RedisAdapter[] = [];
let databases = 16;
let dir: string;
const dlq = uniqueName('dbidx-dlq');
const target = uniqueName('dbidx-target');

/** The base URL with the database index `n` as its path. */
function urlWithDb(n: number): string {
  const u = new URL(REDIS_URL);
  u.pathname = `/${n}`;
  return u.toString();
}

function adapter(db: number): RedisAdapter {
  const a = createRedisAdapter({ kind: 'redis', url: urlWithDb(db) });
  adapters.push(a);
  return a;
}

/** The CLI in this process (see {@link runCli}). */
function cli(argv: string[]): Promise<CliRun> {
  return runCli(dir, argv);
}

async function rejection(p: Promise<unknown>): Promise<QueuescopeError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(QueuescopeError);
    return e as QueuescopeError;
  }
  throw new Error('expected a rejection');
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-dbidx-'));
  const reply = (await db0.config('GET', 'databases')) as string[];
  databases = Number(reply[1]);
  // Database 0 holds a DLQ with one message: what the wrong-database run moved.
  await db0.rpush(dlq, JSON.stringify({ order: 1 }));
});

afterAll(async () => {
  for (const a of adapters) await a.close();
  await db0.del(dlq, target);
  db0.disconnect();
  await rm(dir, { recursive: true, force: true });
});

describe('a database index the server does not have', () => {
  it('fails connecting (INVALID_INPUT) naming the index and the limit, for /99 and /<databases>', async () => {
    for (const n of [99, databases]) {
      const a = adapter(n);
      const e = await rejection(a.listQueues({}));
      expect(e.code).toBe('INVALID_INPUT');
      expect(e.message).toContain(`has no database ${n}`);
      expect(e.message).toContain(`it has ${databases} databases (0–${databases - 1})`);
      expect(e.details).toMatchObject({ db: n, databases });
      // Not listed from database 0 on a second try either.
      expect((await rejection(a.peek(`list:${dlq}`, { limit: 10 }))).code).toBe('INVALID_INPUT');
    }
  });

  it('CONFIG GET databases refused (managed Redis): the SELECT error alone is the signal', async () => {
    const user = uniqueName('dbidx-noconfig');
    await db0.call('ACL', 'SETUSER', user, 'on', '>pw', '~*', '&*', '+@all', '-config');
    try {
      const u = new URL(urlWithDb(99));
      u.username = user;
      u.password = 'pw';
      const a = createRedisAdapter({ kind: 'redis', url: u.toString() });
      adapters.push(a);
      const e = await rejection(a.listQueues({}));
      expect(e.code).toBe('INVALID_INPUT');
      expect(e.message).toContain('has no database 99');
      expect(e.message).toContain('CONFIG GET databases is not permitted');
      expect(e.details).toMatchObject({ db: 99, databases: null });
    } finally {
      await db0.call('ACL', 'DELUSER', user);
    }
  });

  it('testConnection reports the SELECT as a failed check', async () => {
    const r = await adapter(99).testConnection();
    expect(r.ok).toBe(false);
    expect(r.error?.code).toBe('INVALID_INPUT');
    const failed = r.checks.filter((c) => !c.ok);
    expect(failed).toHaveLength(1);
    expect(failed[0]?.name).toContain('SELECT 99');
    expect(failed[0]?.detail).toContain('has no database 99');
    // No later check ran (they would have read database 0).
    expect(r.checks[r.checks.length - 1]).toBe(failed[0]);
  });

  it('an existing database still works (the last one)', async () => {
    const a = adapter(databases - 1);
    const r = await a.testConnection();
    expect(r.ok).toBe(true);
    await expect(a.listQueues({})).resolves.toBeInstanceOf(Array);
  });

  it('the redrive mover does not move database 0 messages', async () => {
    const a = adapter(99);
    const e = await rejection(
      a.redrive!.moveClientSide(
        { sourceQueueId: `list:${dlq}`, batchSize: 10, cutoffMs: Date.now(), maxMessages: null, dryRun: false },
        { gate: () => Promise.resolve(), decide: () => ({ action: 'move', targetQueueId: `list:${target}` }), beforeMove: () => Promise.resolve(), onBatch: () => undefined },
      ),
    );
    expect(e.code).toBe('INVALID_INPUT');
    expect(await db0.llen(dlq)).toBe(1);
    expect(await db0.exists(target)).toBe(0);
  });

  it('a reconnect whose SELECT fails runs no command on database 0', async () => {
    // A reconnect's SELECT that fails (here: the ACL user lost SELECT; also a failover to a server
    // with fewer databases): ioredis emits an error event and carries on on database 0.
    const user = uniqueName('dbidx-user');
    await db0.call('ACL', 'SETUSER', user, 'on', '>pw', '~*', '&*', '+@all');
    try {
      const u = new URL(urlWithDb(databases - 1));
      u.username = user;
      u.password = 'pw';
      const a = createRedisAdapter({ kind: 'redis', url: u.toString() });
      adapters.push(a);
      await expect(a.peek(`list:${dlq}`, { limit: 10 })).rejects.toMatchObject({ code: 'QUEUE_NOT_FOUND' });
      const internal = (a as unknown as { redis: Redis }).redis;
      await db0.call('ACL', 'SETUSER', user, '-select');
      const reconnected = new Promise((resolve) => internal.once('ready', resolve));
      const selectFailed = new Promise((resolve) => internal.once('error', resolve));
      await db0.client('KILL', 'USER', user);
      // Issued while the client reconnects, and once the reconnect is done: on database 0 each would find the DLQ's message.
      const outcome = (p: Promise<{ messages: unknown[] }>) => p.then((page) => ({ messages: page.messages.length }), (e: unknown) => ({ code: (e as QueuescopeError).code }));
      const t = performance.now();
      const during = await outcome(a.peek(`list:${dlq}`, { limit: 10 }));
      const duringMs = performance.now() - t;
      await Promise.race([reconnected, selectFailed, new Promise((r) => setTimeout(r, 2_000))]);
      const after = await outcome(a.peek(`list:${dlq}`, { limit: 10 }));
      expect(during).not.toEqual({ messages: 1 });
      expect(after).not.toEqual({ messages: 1 });
      // The waiting command fails with the reason at once (not after the 30 s command timeout).
      expect(['PERMISSION_DENIED', 'HOST_UNREACHABLE']).toContain((during as { code?: string }).code);
      expect(duringMs).toBeLessThan(5_000);
      // The next connection fails with the reason.
      expect(after).toEqual({ code: 'PERMISSION_DENIED' });
    } finally {
      await db0.call('ACL', 'DELUSER', user);
    }
  });
});

describe('CLI with a database index the server does not have', () => {
  it('queues and peek exit 2 naming the index; stdout has no queue', async () => {
    const q = await cli(['queues', urlWithDb(99), '--json']);
    expect(q.code).toBe(EXIT.USAGE);
    expect(q.stdout + q.stderr).toContain('has no database 99');
    expect(q.stdout + q.stderr).not.toContain(dlq);
    const p = await cli(['peek', urlWithDb(databases), `list:${dlq}`]);
    expect(p.code).toBe(EXIT.USAGE);
    expect(p.stdout + p.stderr).toContain(`has no database ${databases}`);
  });

  it('redrive exits 2 and moves nothing out of database 0', async () => {
    const r = await cli(['redrive', urlWithDb(99), `list:${dlq}`, '--to', `list:${target}`, '--yes', '--no-native']);
    expect(r.code).toBe(EXIT.USAGE);
    expect(r.stderr).toContain('has no database 99');
    expect(await db0.llen(dlq)).toBe(1);
    expect(await db0.exists(target)).toBe(0);
  });
});
