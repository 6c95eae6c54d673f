import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import amqp from 'amqplib';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiHandlers, dispatchApi } from '../../core/services/api';
import { ConnectionManager } from '../../core/services/connection-manager';
import { OperationManager } from '../../core/services/operations';
import { ProfileStore } from '../../core/services/profile-store';
import { readSnapshotFile } from '../../core/snapshot/reader';
import type { ApiHandlers, ApiResult } from '../../shared/api/contract';
import type { ConnectionProfile, ConnectionTestResult, OperationSnapshot, PeekPage, QueueSummary } from '../../shared/domain';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, REDIS_URL, uniqueName } from './env';

/**
 * The API handlers end to end, through dispatchApi as IPC and the bridge call them, against the
 * real RabbitMQ and Redis: saved profile with a secret → list → peek → export operation → file.
 */
let dir: string;
let handlers: ApiHandlers;
let connections: ConnectionManager;
let operations: OperationManager;
const queue = uniqueName('api-work');
const stream = uniqueName('api-stream');
let conn: amqp.ChannelModel;
let ch: amqp.Channel;
const redis = new Redis(REDIS_URL);

async function ok<T>(p: Promise<ApiResult<unknown>>): Promise<T> {
  const r = await p;
  if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
  return r.value as T;
}
const call = (method: string, input: unknown) => dispatchApi(handlers, method, input);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-api-int-'));
  const store = await ProfileStore.open({ configDir: join(dir, 'config') });
  connections = new ConnectionManager({ store });
  operations = new OperationManager();
  handlers = createApiHandlers({
    connections,
    operations,
    dialogs: { pickSnapshotSavePath: (name) => Promise.resolve(join(dir, name)), pickSnapshotOpenPath: () => Promise.resolve(null) },
    runtime: 'electron',
    version: '0.1.0',
  });
  conn = await amqp.connect(AMQP_URL, { noDelay: true });
  ch = await conn.createChannel();
  await ch.assertQueue(queue, { durable: false });
  for (let i = 0; i < 7; i++) ch.sendToQueue(queue, Buffer.from(JSON.stringify({ orderId: `A-${i}`, operation: 'charge' })), { messageId: `A-${i}:charge`, headers: { 'Idempotency-Key': `A-${i}:charge` } });
  await ch.checkQueue(queue);
  for (let i = 0; i < 30; i++) await redis.xadd(stream, '*', 'body', `event ${i}`);
});

afterAll(async () => {
  operations.cancelAll();
  await connections.closeAll();
  await ch.deleteQueue(queue).catch(() => undefined);
  await conn.close();
  await redis.del(stream);
  redis.disconnect();
  await rm(dir, { recursive: true, force: true });
});

describe('API handlers against RabbitMQ', () => {
  let profile: ConnectionProfile;

  it('saves a profile: the password leaves the config and the file, but the connection works', async () => {
    profile = await ok<ConnectionProfile>(call('connections.save', { name: 'local rabbit', config: { kind: 'rabbitmq', url: AMQP_URL, managementUrl: RABBITMQ_MANAGEMENT_URL } }));
    expect(profile.hasSecret).toBe(true);
    expect(JSON.stringify(profile)).not.toContain(':guest@');
    expect(await readFile(join(dir, 'config', 'profiles.json'), 'utf8')).not.toContain(':guest@');
    const test = await ok<ConnectionTestResult>(call('connections.test', { id: profile.id }));
    expect(test.ok).toBe(true);
    expect(test.server).toMatch(/RabbitMQ/);
  });

  it('lists, gets and peeks the queue (side effects accepted), messages still there', async () => {
    const qs = await ok<QueueSummary[]>(call('queues.list', { connectionId: profile.id, pattern: queue }));
    const q = qs.find((x) => x.name === queue);
    expect(q).toBeDefined();
    const fresh = await ok<QueueSummary>(call('queues.get', { connectionId: profile.id, queueId: q!.id }));
    expect(fresh.name).toBe(queue);
    const page = await ok<PeekPage>(call('messages.peek', { connectionId: profile.id, queueId: q!.id, options: { limit: 10, acceptSideEffects: true } }));
    expect(page.messages.map((m) => m.id)).toEqual(Array.from({ length: 7 }, (_, i) => `A-${i}:charge`));
    expect(page.messages[0]?.headers['Idempotency-Key']).toBe('A-0:charge');
    expect((await ch.checkQueue(queue)).messageCount).toBe(7);
  });

  it('exports through an operation to the chosen file', async () => {
    const q = (await ok<QueueSummary[]>(call('queues.list', { connectionId: profile.id, pattern: queue })))[0]!;
    const started = await ok<OperationSnapshot>(call('snapshots.export', { connectionId: profile.id, queueId: q.id, acceptSideEffects: true }));
    expect(started.type).toBe('export');
    let snap = started;
    for (let i = 0; i < 100 && !['completed', 'failed', 'cancelled'].includes(snap.status); i++) {
      await new Promise((r) => setTimeout(r, 50));
      snap = await ok<OperationSnapshot>(call('operations.get', { operationId: started.id }));
    }
    expect(snap.status).toBe('completed');
    expect(snap.processed).toBe(7);
    const path = snap.result?.path as string;
    expect(path.startsWith(join(dir, queue))).toBe(true);
    const [section] = await readSnapshotFile(path);
    expect(section?.header.source.connection).not.toContain('guest:guest');
    expect(section?.messages).toHaveLength(7);
    expect(await readFile(path, 'utf8')).not.toContain('guest:guest');
  });

  it('a wrong password is a failed test result with AUTH_FAILED and no password in it', async () => {
    const r = await call('connections.test', { config: { kind: 'rabbitmq', url: AMQP_URL.replace('guest:guest', 'guest:Wr0ngPassw0rd'), managementUrl: RABBITMQ_MANAGEMENT_URL } });
    expect(r.ok).toBe(true);
    const test = (r as { value: ConnectionTestResult }).value;
    expect(test.ok).toBe(false);
    expect(test.error?.code).toBe('AUTH_FAILED');
    expect(JSON.stringify(r)).not.toContain('Wr0ngPassw0rd');
  });
});

describe('API handlers against Redis', () => {
  it('pages a stream and reports an unknown queue as QUEUE_NOT_FOUND', async () => {
    const p = await ok<ConnectionProfile>(call('connections.save', { name: 'redis', config: { kind: 'redis', url: REDIS_URL } }));
    const first = await ok<PeekPage>(call('messages.peek', { connectionId: p.id, queueId: `stream:${stream}`, options: { limit: 20 } }));
    expect(first.messages).toHaveLength(20);
    const second = await ok<PeekPage>(call('messages.peek', { connectionId: p.id, queueId: `stream:${stream}`, options: { limit: 20, cursor: first.nextCursor } }));
    expect(second.messages.map((m) => m.body.data)).toEqual(Array.from({ length: 10 }, (_, i) => `event ${20 + i}`));
    const missing = await call('queues.get', { connectionId: p.id, queueId: `stream:${uniqueName('missing')}` });
    expect(missing).toMatchObject({ ok: false, error: { code: 'QUEUE_NOT_FOUND' } });
    expect(await ok(call('connections.remove', { id: p.id }))).toEqual({ removed: true });
    expect(await call('queues.list', { connectionId: p.id })).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
  });

  it('Put back of a backup whose redrive is still running is refused (the backup is written under its final name, unfinished); after the run ends it is allowed', async () => {
    // A redrive backup is not complete because of its name: it is written there while the run goes.
    const dlq = uniqueName('api-putback-dlq');
    const target = uniqueName('api-putback-target');
    const back = uniqueName('api-putback-back');
    const p = await ok<ConnectionProfile>(call('connections.save', { name: 'redis putback', config: { kind: 'redis', url: REDIS_URL } }));
    try {
      await redis.rpush(dlq, ...Array.from({ length: 40 }, (_, i) => `{"orderId":"P-${String(i)}"}`));
      // 2 messages a second: the run takes ~20 s, so it is still running when Put back is asked for.
      const run = await ok<OperationSnapshot>(call('redrive.start', { connectionId: p.id, dlqId: `list:${dlq}`, selection: { kind: 'all' }, targetQueueId: `list:${target}`, ratePerSecond: 2, native: 'never' }));
      let started: { id: string; status: string; backupPath: string | null } | undefined;
      for (let i = 0; i < 100 && started === undefined; i++) {
        const h = await ok<{ entries: { id: string; status: string; operationId: string | null; backupPath: string | null }[] }>(call('redrive.history', { action: 'redrive' }));
        started = h.entries.find((e) => e.operationId === run.id);
        if (started === undefined) await new Promise((r) => setTimeout(r, 50));
      }
      expect(started?.status).toBe('started');
      expect(operations.get(run.id).status).toBe('running');
      const refused = await call('redrive.reinject', { connectionId: p.id, queueId: `list:${back}`, auditEntryId: started?.id ?? '' });
      expect(refused).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
      expect(!refused.ok && refused.error.message).toContain('is still running: the backup is not finished');
      expect(await redis.llen(back)).toBe(0);

      // Cancelled once it has moved a batch (so its backup holds messages and is kept).
      for (let i = 0; i < 200 && operations.get(run.id).moved < 2; i++) await new Promise((r) => setTimeout(r, 50));
      expect(operations.get(run.id).status).toBe('running');
      operations.cancel(run.id);
      for (let i = 0; i < 200 && operations.get(run.id).status !== 'cancelled'; i++) await new Promise((r) => setTimeout(r, 50));
      expect(operations.get(run.id).status).toBe('cancelled');
      const ended = (await ok<{ entries: { id: string; operationId: string | null; status: string }[] }>(call('redrive.history', { action: 'redrive' }))).entries.find((e) => e.operationId === run.id);
      expect(ended?.status).toBe('cancelled');
      const putBack = await ok<OperationSnapshot>(call('redrive.reinject', { connectionId: p.id, queueId: `list:${back}`, auditEntryId: ended?.id ?? '' }));
      for (let i = 0; i < 200 && !['completed', 'failed'].includes(operations.get(putBack.id).status); i++) await new Promise((r) => setTimeout(r, 50));
      expect(operations.get(putBack.id).status).toBe('completed');
      // The backup holds what the run read before it was cancelled: at least one message, put back.
      expect(await redis.llen(back)).toBeGreaterThan(0);
    } finally {
      await redis.del(dlq, target, back);
      await ok(call('connections.remove', { id: p.id }));
    }
  }, 30_000);
});
