import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createRedisAdapter, type RedisAdapter } from '../../core/adapters/redis';
import type { MoveBatchResult, MoveHooks, RedriveMover } from '../../core/adapters/redrive-types';
import { EXIT } from '../../core/cli/exit-codes';
import { QueuescopeError } from '../../shared/domain';
import { REDIS_URL, uniqueName } from './env';
import { runCli } from './fixtures/run-cli';

/**
 * A redrive target whose Redis key holds the wrong type (a string where a list, stream or BullMQ
 * key is needed): the dry run must not promise the move, and the real run must refuse before
 * writing — the message names the key and its type. On the shared Redis, database 9, unique keys
 * (deleted afterwards).
 */

const url9 = `${REDIS_URL.replace(/\/\d*$/, '')}/9`;
const db = new Redis(url9, { maxRetriesPerRequest: null });
const keys: string[] = [];
const adapters: RedisAdapter[] = [];
let dir = '';

function key(label: string): string {
  const k = uniqueName(`redisfix-${label}`);
  keys.push(k);
  return k;
}

function mover(): RedriveMover {
  const a = createRedisAdapter({ kind: 'redis', url: url9 });
  adapters.push(a);
  if (!a.redrive) throw new Error('no redrive');
  return a.redrive;
}

function hooks(targetQueueId: string): MoveHooks & { batches: MoveBatchResult[]; backedUp: number } {
  const h = {
    batches: [] as MoveBatchResult[],
    backedUp: 0,
    gate: () => Promise.resolve(),
    decide: () => ({ action: 'move' as const, targetQueueId }),
    beforeMove: (ms: readonly unknown[]) => {
      h.backedUp += ms.length;
      return Promise.resolve();
    },
    onBatch: (r: MoveBatchResult) => h.batches.push(r),
  };
  return h;
}


beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'qs-redisfix-'));
});

afterAll(async () => {
  for (const a of adapters) await a.close();
  if (keys.length > 0) await db.del(...keys);
  db.disconnect();
  rmSync(dir, { recursive: true, force: true });
});

describe('redrive to a key holding the wrong type', () => {
  it('CLI, list DLQ → a key holding a string: the dry run does not promise the move and names the key and its type; the real run writes nothing', async () => {
    const dlq = key('dlq');
    const target = key('str');
    await db.rpush(dlq, ...Array.from({ length: 297 }, (_, i) => JSON.stringify({ orderId: i })));
    await db.set(target, 'a string');

    const dry = await runCli(dir, ['redrive', url9, `list:${dlq}`, '--to', `list:${target}`, '--dry-run', '--no-native']);
    const out = dry.stdout + dry.stderr;
    expect(out).not.toMatch(new RegExp(`297 → list:${target}`));
    expect(out).toContain(`Refusing to redrive to list:${target}: the key "${target}" holds a string, not a list`);
    expect(dry.code).toBe(EXIT.USAGE);

    const real = await runCli(dir, ['redrive', url9, `list:${dlq}`, '--to', `list:${target}`, '--yes', '--no-native']);
    expect(real.code).toBe(EXIT.USAGE);
    expect(real.stdout + real.stderr).toContain(`Refusing to redrive to list:${target}: the key "${target}" holds a string, not a list`);
    expect(real.stdout + real.stderr).not.toContain('WRONGTYPE Operation');
    expect(await db.llen(dlq)).toBe(297);
    expect(await db.get(target)).toBe('a string');
  });

  it('mover, stream DLQ → a key holding a list: refused (dry run and real) before the backup hook, naming the key and its type; an absent target passes', async () => {
    const dlq = key('sdlq');
    const target = key('lst');
    for (let i = 0; i < 5; i++) await db.xadd(dlq, '*', 'body', `{"orderId":${String(i)}}`);
    await db.rpush(target, 'x');
    const m = mover();
    for (const dryRun of [true, false]) {
      const h = hooks(`stream:${target}`);
      const e = await m.moveClientSide({ sourceQueueId: `stream:${dlq}`, batchSize: 2, cutoffMs: Date.now(), maxMessages: null, dryRun }, h).then(
        () => null,
        (x: unknown) => x as QueuescopeError,
      );
      expect(e).toBeInstanceOf(QueuescopeError);
      expect(e?.code).toBe('INVALID_INPUT');
      expect(e?.message).toContain(`Refusing to redrive to stream:${target}: the key "${target}" holds a list, not a stream`);
      expect(h.backedUp).toBe(0);
      expect(h.batches).toEqual([]);
    }
    expect(await db.xlen(dlq)).toBe(5);
    expect(await db.lrange(target, 0, -1)).toEqual(['x']);

    const absent = key('absent');
    expect(await m.moveClientSide({ sourceQueueId: `stream:${dlq}`, batchSize: 10, cutoffMs: Date.now(), maxMessages: null, dryRun: true }, hooks(`stream:${absent}`))).toMatchObject({ moved: 5, failed: 0 });
  });

  it('mover, BullMQ failed jobs → another BullMQ queue whose wait key holds a string: refused with the key and its type', async () => {
    const prefix = uniqueName('redisfix-bull');
    keys.push(`${prefix}:src:1`, `${prefix}:src:failed`, `${prefix}:src:id`, `${prefix}:dst:id`, `${prefix}:dst:wait`);
    // A minimal failed job as BullMQ stores it (hash + failed sorted set), and a target queue with a broken wait key.
    await db.hset(`${prefix}:src:1`, { name: 'charge', data: '{"orderId":1}', opts: '{"attempts":1}', timestamp: String(Date.now() - 1000), atm: '1', finishedOn: String(Date.now() - 500), failedReason: 'HTTP 503' });
    await db.zadd(`${prefix}:src:failed`, Date.now() - 500, '1');
    await db.set(`${prefix}:src:id`, '1');
    await db.set(`${prefix}:dst:id`, '0');
    await db.set(`${prefix}:dst:wait`, 'oops');
    const m = mover();
    const run = (dryRun: boolean) => m.moveClientSide({ sourceQueueId: `bullmq:${prefix}:src`, state: 'failed', batchSize: 10, cutoffMs: Date.now(), maxMessages: null, dryRun }, hooks(`bullmq:${prefix}:dst`));
    for (const dryRun of [true, false]) {
      await expect(run(dryRun)).rejects.toThrow(`Refusing to redrive to bullmq:${prefix}:dst: the key "${prefix}:dst:wait" holds a string, not the list of waiting jobs of BullMQ queue "dst"`);
    }
    expect(await db.zcard(`${prefix}:src:failed`)).toBe(1);
    expect(await db.get(`${prefix}:dst:wait`)).toBe('oops');
  });
});
