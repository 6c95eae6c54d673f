import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Queue } from 'bullmq';
import type { ChannelModel } from 'amqplib';
import { createRedisAdapter, type RedisAdapter } from '../../core/adapters/redis';
import { createRabbitmqAdapter } from '../../core/adapters/rabbitmq';
import type { BrokerAdapter } from '../../core/adapters/types';
import { planRedrive, type RedriveEnv } from '../../core/redrive/engine';
import { AuditLog } from '../../core/services/audit-log';
import type { RedrivePlan } from '../../shared/redrive/types';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, REDIS_URL, uniqueName } from './env';
import { failJobs } from './fixtures/bullmq';
import { runCli } from './fixtures/run-cli';
import { idOf, makeDeadLettered, publishKeys, snapshotQueue, waitCount } from './fixtures/redrive-rabbitmq-util';
import { closeNative, nativeChannel, nativeConnection, nativeCount, nativeDeleteQueue } from './rabbitmq-native';

/**
 * The dry run warns when messages it would move carry an idempotency key ALREADY WAITING in the
 * target (the producer re-sent the order after it dead-lettered, or an earlier partial redrive
 * moved a copy): moving them runs the operation twice unless the consumer deduplicates on the key.
 * It reads only targets whose reads change nothing (Redis lists, BullMQ); a RabbitMQ target is not
 * read (its reads requeue messages and set `redelivered`) and a note says it was not checked.
 */

const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const adapters: BrokerAdapter[] = [];
const keys: string[] = [];
const bullQueues: Queue[] = [];
const rabbitQueues: string[] = [];
let dir = '';
let conn: ChannelModel | null = null;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'qs-target-keys-'));
});

afterAll(async () => {
  for (const a of adapters) await a.close();
  for (const q of bullQueues) await q.obliterate({ force: true }).then(() => q.close()).catch(() => undefined);
  if (keys.length > 0) await native.del(...keys);
  native.disconnect();
  for (const q of rabbitQueues) await nativeDeleteQueue(q);
  await closeNative();
  rmSync(dir, { recursive: true, force: true });
});

function key(label: string): string {
  const k = uniqueName(label);
  keys.push(k);
  return k;
}

function redis(): RedisAdapter {
  const a = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
  adapters.push(a);
  return a;
}

function envOf(a: BrokerAdapter): RedriveEnv {
  return { adapter: a, connectionLabel: 'test', actor: 'cli', auditLog: new AuditLog({ configDir: dir }), configDir: dir };
}

const order = (i: number): string => JSON.stringify({ orderId: `A-${String(1000 + i)}`, idempotencyKey: `A-${String(1000 + i)}:charge`, amount: i });

/** The DLQ entries by id, read the way the dry run reads them. */
async function idsByKey(a: RedisAdapter, queueId: string): Promise<Map<string, string>> {
  const page = await a.peek(queueId, { limit: 1000, direction: 'oldest' });
  const out = new Map<string, string>();
  for (const m of page.messages) {
    const body = JSON.parse(Buffer.from(m.body.data, m.body.encoding === 'utf8' ? 'utf8' : 'base64').toString('utf8')) as { idempotencyKey?: string };
    if (body.idempotencyKey !== undefined) out.set(body.idempotencyKey, m.id);
  }
  return out;
}

const dupWarnings = (plan: RedrivePlan): string[] => plan.warnings.filter((w) => w.includes('idempotency key already'));

describe('dry run: idempotency keys already waiting in the target', () => {
  it('Redis list: 12 of the 40 keyed messages to move are already waiting in the target list → a warning with the count and example ids', async () => {
    const a = redis();
    const dlq = key('tk-dlq');
    const work = key('tk-work');
    // 40 keyed orders and one message without a key (it cannot be compared: counted in the note).
    await native.rpush(dlq, ...Array.from({ length: 40 }, (_, i) => order(i)), JSON.stringify({ note: 'no key here' }));
    // The producer re-sent orders 0–11 after they dead-lettered; plus one unrelated order.
    await native.rpush(work, ...Array.from({ length: 12 }, (_, i) => order(i)), order(500));
    const before = await native.lrange(work, 0, -1);
    const plan = await planRedrive(envOf(a), { dlqId: `list:${dlq}`, selection: { kind: 'all' }, targetQueueId: `list:${work}` });
    expect(plan.toMove).toBe(41);
    const warn = dupWarnings(plan);
    expect(warn).toHaveLength(1);
    expect(warn[0]).toContain(`12 of the 41 messages this run would move to ${work} carry an idempotency key already waiting in ${work}`);
    expect(warn[0]).toContain('runs each operation twice');
    expect(warn[0]).toContain('--dedupe-by-key keeps one per key within the DLQ only');
    const check = plan.keysInTarget?.[0];
    expect(check).toMatchObject({ queueId: `list:${work}`, checked: true, read: 13, partial: false, moving: 41, withoutKey: 1, duplicates: 12 });
    // Examples name the DLQ message and the waiting one, by the ids the app and CLI show.
    const dlqIds = await idsByKey(a, `list:${dlq}`);
    const workIds = await idsByKey(a, `list:${work}`);
    expect(check?.examples.length).toBe(5);
    for (const ex of check?.examples ?? []) {
      expect(ex.dlqId).toBe(dlqIds.get(ex.key));
      expect(ex.targetId).toBe(workIds.get(ex.key));
    }
    const first = check?.examples[0];
    expect(warn[0]).toContain(`(e.g. ${first?.key ?? '?'}: DLQ ${first?.dlqId ?? '?'}, waiting as ${first?.targetId ?? '?'})`);
    // The keyless message is counted in the note.
    expect(plan.notes.some((n) => n.includes('1 of the 41 messages to move there carries no idempotency key and could not be compared'))).toBe(true);
    // The counts say which side is which (it read "share 5 keys with the 12 messages waiting", as if all of them did).
    expect(plan.notes.some((n) => n.startsWith(`Idempotency keys: 41 messages to move to ${work}, `) && /messages read from .*: \d+ keys in both\./.test(n))).toBe(true);
    // Nothing moved, the target is untouched.
    expect(await native.llen(dlq)).toBe(41);
    expect(await native.lrange(work, 0, -1)).toEqual(before);
  });

  it('Redis list: no key of the DLQ waiting in the target → no warning, the check is recorded as done', async () => {
    const a = redis();
    const dlq = key('tk-none-dlq');
    const work = key('tk-none-work');
    await native.rpush(dlq, ...Array.from({ length: 10 }, (_, i) => order(i)));
    await native.rpush(work, order(100), order(101));
    const plan = await planRedrive(envOf(a), { dlqId: `list:${dlq}`, selection: { kind: 'all' }, targetQueueId: `list:${work}` });
    expect(dupWarnings(plan)).toEqual([]);
    expect(plan.keysInTarget).toEqual([{ queueId: `list:${work}`, queueName: work, checked: true, read: 2, partial: false, moving: 10, withoutKey: 0, duplicates: 0, examples: [], note: null }]);
  });

  it('Redis list: the check reads at most 10,000 messages of the target and says it covered only those', async () => {
    const a = redis();
    const dlq = key('tk-big-dlq');
    const work = key('tk-big-work');
    await native.rpush(dlq, order(1), order(20_000));
    // 10,005 waiting: order 20000 is the last one, beyond the first 10,000.
    const filler = Array.from({ length: 10_004 }, (_, i) => JSON.stringify({ idempotencyKey: `F-${String(i)}` }));
    for (let i = 0; i < filler.length; i += 2000) await native.rpush(work, ...filler.slice(i, i + 2000));
    await native.rpush(work, order(20_000));
    const plan = await planRedrive(envOf(a), { dlqId: `list:${dlq}`, selection: { kind: 'all' }, targetQueueId: `list:${work}` });
    expect(plan.keysInTarget?.[0]).toMatchObject({ checked: true, read: 10_000, partial: true, duplicates: 0 });
    expect(plan.notes.some((n) => n.includes('The check covered the first 10000'))).toBe(true);
  });

  it('Redis stream: a key already in the target stream → warned as "already in" (a stream keeps entries its groups read)', async () => {
    const a = redis();
    const dlq = key('tk-stream-dlq');
    const work = key('tk-stream-work');
    for (let i = 0; i < 4; i++) await native.xadd(dlq, '*', 'body', order(i), 'error', 'HTTP 503');
    const waiting = (await native.xadd(work, '*', 'body', order(2))) as string;
    await native.xadd(work, '*', 'body', order(77));
    const plan = await planRedrive(envOf(a), { dlqId: `stream:${dlq}`, selection: { kind: 'all' }, targetQueueId: `stream:${work}` });
    expect(plan.toMove).toBe(4);
    const warn = dupWarnings(plan);
    expect(warn).toHaveLength(1);
    expect(warn[0]).toContain(`1 of the 4 messages this run would move to ${work} carries an idempotency key already in ${work} (e.g. A-1002:charge`);
    expect(plan.keysInTarget?.[0]).toMatchObject({ checked: true, read: 2, duplicates: 1, examples: [{ key: 'A-1002:charge', targetId: waiting }] });
  });

  it('BullMQ: failed jobs whose key a waiting and a delayed job of the same queue carry (job data field) → warned; the failed set itself is not compared', async () => {
    const a = redis();
    const name = uniqueName('tk-bull');
    const q = new Queue(name, { connection: native });
    bullQueues.push(q);
    await q.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: 'charge', data: { orderId: `B-${String(i)}`, idempotencyKey: `B-${String(i)}:charge` }, opts: { attempts: 1 } })));
    await failJobs(q, native, 5);
    // Re-sent after they failed: B-1 waits, B-3 is delayed (both will still run).
    const waiting = await q.add('charge', { orderId: 'B-1', idempotencyKey: 'B-1:charge' });
    const delayed = await q.add('charge', { orderId: 'B-3', idempotencyKey: 'B-3:charge' }, { delay: 3_600_000 });
    await q.add('charge', { orderId: 'B-9', idempotencyKey: 'B-9:charge' });
    const id = `bullmq:bull:${name}`;
    const plan = await planRedrive(envOf(a), { dlqId: id, selection: { kind: 'all' } });
    expect(plan.toMove).toBe(5);
    const warn = dupWarnings(plan);
    expect(warn).toHaveLength(1);
    expect(warn[0]).toContain(`2 of the 5 messages this run would move to ${name} carry an idempotency key already waiting to run in ${name}`);
    const check = plan.keysInTarget?.[0];
    expect(check).toMatchObject({ queueId: id, checked: true, read: 3, duplicates: 2 });
    expect(new Set(check?.examples.map((e) => e.key))).toEqual(new Set(['B-1:charge', 'B-3:charge']));
    expect(new Set(check?.examples.map((e) => e.targetId))).toEqual(new Set([waiting.id, delayed.id]));
    expect(await q.getFailedCount()).toBe(5);
  });

  it('RabbitMQ: the target is not read (its message count and redelivered flags unchanged) and a note says it was not checked', async () => {
    const rabbit = createRabbitmqAdapter({ kind: 'rabbitmq', url: AMQP_URL, managementUrl: RABBITMQ_MANAGEMENT_URL });
    adapters.push(rabbit);
    conn = await nativeConnection();
    const work = uniqueName('tk-rmq-work');
    const dlq = uniqueName('tk-rmq-dlq');
    rabbitQueues.push(work, dlq);
    await makeDeadLettered(conn, work, dlq, 3);
    // The producer re-sent k-1 (same AMQP message_id m-k-1, the key) after it dead-lettered.
    const ch = await nativeChannel();
    await publishKeys(ch, work, 1, 2);
    await waitCount(conn, work, 1);
    const plan = await planRedrive(envOf(rabbit), { dlqId: idOf(dlq), selection: { kind: 'all' } });
    expect(plan.toMove).toBe(3);
    expect(dupWarnings(plan)).toEqual([]);
    expect(plan.keysInTarget).toHaveLength(1);
    expect(plan.keysInTarget?.[0]).toMatchObject({ queueId: idOf(work), checked: false, read: 0, duplicates: 0 });
    const note = plan.keysInTarget?.[0]?.note ?? '';
    expect(note).toContain(`Idempotency keys already waiting in ${work} were not checked: reading ${work} has side effects`);
    expect(note).toContain(`queuescope inspect <connection> ${dlq}`);
    expect(plan.notes).toContain(note);
    // Not read: still one message, never delivered (a peek would have set redelivered).
    expect(await nativeCount(work)).toBe(1);
    const [m] = await snapshotQueue(conn, work);
    expect(m?.fields.redelivered).toBe(false);
    expect(m?.properties.messageId).toBe('m-k-1');
  });

  it('CLI --dry-run prints the warning, and --json carries keysInTarget', async () => {
    const dlq = key('tk-cli-dlq');
    const work = key('tk-cli-work');
    await native.rpush(dlq, order(1), order(2), order(3));
    await native.rpush(work, order(2));
    const text = await runCli(dir, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${work}`, '--dry-run']);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`warning: 1 of the 3 messages this run would move to ${work} carries an idempotency key already waiting in ${work} (e.g. A-1002:charge: DLQ`);
    const json = await runCli(dir, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${work}`, '--dry-run', '--json']);
    const plan = JSON.parse(json.stdout) as RedrivePlan;
    expect(plan.keysInTarget).toEqual([expect.objectContaining({ queueId: `list:${work}`, checked: true, read: 1, duplicates: 1, examples: [expect.objectContaining({ key: 'A-1002:charge' })] })]);
    // A target checked without finding any: one line says so.
    const other = key('tk-cli-other');
    await native.rpush(other, order(9));
    const clean = await runCli(dir, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${other}`, '--dry-run']);
    expect(clean.stdout).not.toContain('idempotency key already');
    expect(clean.stdout).toContain(`idempotency keys: none of the 3 to move to ${other} is already waiting there (1 read)`);
  });
});
