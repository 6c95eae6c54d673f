import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter, type RedisAdapter } from '../../core/adapters/redis';
import { extractIdempotencyKey } from '../../shared/analysis/idempotency';
import { AMQP_URL, REDIS_URL, SQS_ENDPOINT, SQS_REGION, uniqueName } from './env';
import { runCliMerged } from './fixtures/run-cli';
import { sqsResources, useSqsTestCredentials } from './fixtures/sqs-resources';
import { closeNative, nativeChannel, nativeCount, nativeDeleteQueue } from './rabbitmq-native';

/**
 * `queuescope reinject` of a RabbitMQ redrive backup into a queue of another broker. The backup is
 * written by a real redrive of a real DLQ: messages published with `Idempotency-Key` and
 * `x-last-error` headers to the default exchange, rejected into the DLQ (RabbitMQ adds `x-death`
 * and an empty `x-first-death-exchange`). Fixed defects:
 * - into a Redis list every header was dropped silently (no warning, no note); now the CLI warns
 *   before asking, naming the headers and the idempotency key, and the result's notes say it;
 * - into SQS every message failed (SQS rejects the empty `x-first-death-exchange` value); now
 *   empty headers are left out of the attributes, with a note naming them;
 * - into a Redis stream a JSON object body was spread into fields and any other body failed; now
 *   the body goes under `body` and the headers into fields, so the stream reads back the same body
 *   and key.
 */

const { client, createQueue } = sqsResources();
useSqsTestCredentials();

const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const redisKeys: string[] = [];
const rabbitQueues: string[] = [];
let dir = '';
let backup = '';
let redisAdapter: RedisAdapter;

/** The DLQ's messages: bodies (objects, plain text, a JSON array) and their idempotency keys. */
const BODIES = ['{"orderId":"A-1","op":"ship"}', 'plain text, not JSON', '[1,2,3]', '{"orderId":"A-4","op":"refund"}'];
const keyOf = (i: number): string => `order-${String(i)}:ship`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-reinject-xb-'));
  redisAdapter = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
  const work = uniqueName('xb-work');
  const dlq = `${work}-dlq`;
  const staging = `${work}-staging`;
  rabbitQueues.push(work, dlq, staging);
  const ch = await nativeChannel();
  await ch.assertQueue(dlq, { durable: false });
  await ch.assertQueue(staging, { durable: false });
  await ch.assertQueue(work, { durable: false, arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': dlq } });
  for (const [i, body] of BODIES.entries()) ch.sendToQueue(work, Buffer.from(body), { headers: { 'Idempotency-Key': keyOf(i), 'x-last-error': 'timeout calling payments' }, messageId: `m-${String(i)}` });
  await ch.waitForConfirms();
  // A consumer rejects each one: RabbitMQ dead-letters it into the DLQ with x-death and x-first-death-*.
  for (let i = 0; i < BODIES.length; i++) {
    const m = await ch.get(work, { noAck: false });
    if (m === false) throw new Error('work queue empty too early');
    ch.nack(m, false, false);
  }
  for (let t = 0; t < 50 && (await nativeCount(dlq)) < BODIES.length; t++) await new Promise((r) => setTimeout(r, 100));
  await ch.close();
  expect(await nativeCount(dlq)).toBe(BODIES.length);
  const rd = await runCliMerged(dir, ['redrive', AMQP_URL, dlq, '--to', staging, '--yes']);
  expect(rd.code, rd.out).toBe(0);
  const files = await readdir(join(dir, 'home', 'backups'));
  expect(files).toHaveLength(1);
  backup = join(dir, 'home', 'backups', files[0] ?? '');
  // What the defects are about: the backup really carries these headers.
  const text = await readFile(backup, 'utf8');
  expect(text).toContain('"x-first-death-exchange":""');
  expect(text).toContain('"Idempotency-Key":"order-0:ship"');
  expect(text).toContain('"x-death"');
}, 60_000);

afterAll(async () => {
  await redisAdapter.close();
  if (redisKeys.length > 0) await redis.del(...redisKeys);
  redis.disconnect();
  for (const q of rabbitQueues) await nativeDeleteQueue(q);
  await closeNative();
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

/** The JSON document at the end of a `--json` run's output. */
function jsonOf(out: string): { result: { published: number; failed: number; notes: string[] } } {
  return JSON.parse(out.slice(out.indexOf('{\n'))) as { result: { published: number; failed: number; notes: string[] } };
}

describe('reinject a RabbitMQ backup into a Redis list', () => {
  it('warns before asking that every header, the idempotency key included, is dropped; the result notes say it; the elements are the bodies', async () => {
    const k = uniqueName('xb-list');
    redisKeys.push(k);
    // The list exists (an absent one is created only for a backup of a Redis list or stream).
    await redis.rpush(k, 'existing');
    // No terminal to ask on and no --yes: the warning is printed, nothing is published.
    const asked = await runCliMerged(dir, ['reinject', REDIS_URL, `list:${k}`, '--from', backup]);
    expect(asked.code, asked.out).toBe(8);
    const warning = asked.out.split('\n').find((l) => l.startsWith('warning:') && l.includes('Redis list'));
    expect(warning, asked.out).toBeDefined();
    expect(warning).toContain(`4 of the 4 messages re-injected from ${backup} into the Redis list "${k}" carry headers`);
    expect(warning).toContain('"Idempotency-Key"');
    expect(warning).toContain('"x-last-error"');
    expect(warning).toContain('"x-death"');
    expect(warning).toContain('the idempotency-key header "Idempotency-Key": the consumer loses its dedupe key');
    expect(asked.out).toContain('not publishing without confirmation');
    expect(await redis.lrange(k, 0, -1)).toEqual(['existing']);

    const r = await runCliMerged(dir, ['reinject', REDIS_URL, `list:${k}`, '--from', backup, '--yes', '--json']);
    expect(r.code, r.out).toBe(0);
    const res = jsonOf(r.out).result;
    expect(res.published).toBe(4);
    const note = res.notes.find((n) => n.includes('Redis list'));
    expect(note, JSON.stringify(res.notes)).toContain('the idempotency-key header "Idempotency-Key"');
    expect(await redis.lrange(k, 0, -1)).toEqual(['existing', ...BODIES]);
  });
});

describe('reinject a RabbitMQ backup into SQS (fauxqs)', () => {
  it('leaves the empty x-first-death-exchange out of the attributes instead of failing every message, and names it in a note; the idempotency key arrives', async () => {
    const c = client(SQS_ENDPOINT);
    const q = await createQueue(c, uniqueName('xb-sqs'));
    const conn = `sqs://${SQS_REGION}?endpoint=${SQS_ENDPOINT}`;
    const r = await runCliMerged(dir, ['reinject', conn, q.name, '--from', backup, '--yes', '--json']);
    expect(r.code, r.out).toBe(0);
    const res = jsonOf(r.out).result;
    expect(res).toMatchObject({ published: 4, failed: 0 });
    const note = res.notes.find((n) => n.includes('empty value'));
    expect(note, JSON.stringify(res.notes)).toContain('"x-first-death-exchange"');
    expect(note).not.toContain('Idempotency-Key');
    // The warning before publishing says it too.
    expect(r.out).toMatch(/warning: .*"x-first-death-exchange".*left out/);
    const got: { body: string; key: string | undefined; names: string[] }[] = [];
    for (let t = 0; t < 10 && got.length < 4; t++) {
      const rec = await c.send(new ReceiveMessageCommand({ QueueUrl: q.url, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'], WaitTimeSeconds: 1 }));
      for (const m of rec.Messages ?? []) got.push({ body: m.Body ?? '', key: m.MessageAttributes?.['Idempotency-Key']?.StringValue, names: Object.keys(m.MessageAttributes ?? {}) });
    }
    expect(got.map((g) => g.body).sort()).toEqual([...BODIES].sort());
    for (const g of got) {
      expect(g.key).toBe(keyOf(BODIES.indexOf(g.body)));
      expect(g.names).not.toContain('x-first-death-exchange');
      expect(g.names).toContain('x-last-error');
      expect(g.names.length).toBeLessThanOrEqual(10);
    }
  });
});

describe('reinject a RabbitMQ backup into a Redis stream', () => {
  it('writes each message as an entry the stream adapter reads back with the same body (objects, text, arrays) and its headers, idempotency key included', async () => {
    const k = uniqueName('xb-stream');
    redisKeys.push(k);
    // An existing, empty stream (an absent one is created only for a backup of a Redis list or stream).
    const first = await redis.xadd(k, '*', 'seed', '1');
    await redis.xdel(k, first ?? '');
    const r = await runCliMerged(dir, ['reinject', REDIS_URL, `stream:${k}`, '--from', backup, '--yes', '--json']);
    expect(r.code, r.out).toBe(0);
    expect(jsonOf(r.out).result).toMatchObject({ published: 4, failed: 0 });
    const page = await redisAdapter.peek(`stream:${k}`, { limit: 10 });
    expect(page.messages.map((m) => m.body.data)).toEqual(BODIES);
    for (const [i, m] of page.messages.entries()) {
      expect(m.properties.bodyField).toBe('body');
      expect(m.headers['Idempotency-Key']).toBe(keyOf(i));
      expect(m.headers['x-last-error']).toBe('timeout calling payments');
      // Analysis finds the same key as on the RabbitMQ message.
      expect(extractIdempotencyKey(m)?.key).toBe(keyOf(i));
    }
    // The raw entry: the body under "body", first.
    const raw = await redis.xrange(k, '-', '+');
    expect(raw[1]?.[1].slice(0, 2)).toEqual(['body', BODIES[1]]);
  });
});
