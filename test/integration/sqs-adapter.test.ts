import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
  SendMessageCommand,
  type Message,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSqsAdapter } from '../../core/adapters/sqs';
import type { BrokerAdapter } from '../../core/adapters/types';
import { QueuescopeError, type QueueSummary } from '../../shared/domain';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, SQS_ALT_ENDPOINT, SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from './env';

/**
 * SQS adapter behaviour beyond the shared contract, against the real emulators:
 * fauxqs (4566, faithful, no ListDeadLetterSourceQueues) and local-aws-sqs (4577, has it).
 *
 * Emulator divergences found (fauxqs 2.4.1, local-aws-sqs 2.0.2), pinned by tests below:
 * - Neither emulator checks credentials: any access key / secret is accepted, so AUTH_FAILED for bad keys
 *   is tested in core/adapters/sqs/errors.test.ts with the SDK's own error objects.
 * - fauxqs FIFO: a receive returns at most ONE message per message group (AWS returns up to 10).
 * - local-aws-sqs: ChangeMessageVisibility(0) itself adds to ApproximateReceiveCount, so one peek adds 2,
 *   and at maxReceiveCount the visibility change moves the message to the DLQ.
 */

const CREDS = SQS_TEST_CREDENTIALS;
const faux = new SQSClient({ region: SQS_REGION, endpoint: SQS_ENDPOINT, credentials: CREDS });
const alt = new SQSClient({ region: SQS_REGION, endpoint: SQS_ALT_ENDPOINT, credentials: CREDS });

/** Queue URLs created by the running test, deleted afterwards. */
const created: { client: SQSClient; url: string }[] = [];

async function createQueue(client: SQSClient, name: string, attributes: Record<string, string> = {}): Promise<{ url: string; arn: string; id: string; name: string }> {
  const url = (await client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }))).QueueUrl!;
  created.push({ client, url });
  const arn = (await client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
  return { url, arn, id: `sqs:${url}`, name };
}

async function attrs(client: SQSClient, url: string): Promise<Record<string, string>> {
  return (await client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }))).Attributes ?? {};
}

/** A consumer's receive (VisibilityTimeout 0 so it changes nothing but the receive count). */
async function consumerReceive(client: SQSClient, url: string, max = 10): Promise<Message[]> {
  const r = await client.send(
    // local-aws-sqs reads only the deprecated AttributeNames.
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: max, VisibilityTimeout: 0, WaitTimeSeconds: 0, MessageSystemAttributeNames: ['All'], AttributeNames: ['All'], MessageAttributeNames: ['All'] }),
  );
  return r.Messages ?? [];
}

function adapterFor(endpoint: string, extra: Partial<Parameters<typeof createSqsAdapter>[0]> = {}): BrokerAdapter {
  return createSqsAdapter({ kind: 'sqs', region: SQS_REGION, endpoint, ...CREDS, ...extra });
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(QueuescopeError);
    return (e as QueuescopeError).code;
  }
  return 'no error';
}

function find(qs: QueueSummary[], id: string): QueueSummary {
  const q = qs.find((x) => x.id === id);
  if (!q) throw new Error(`${id} not listed; got ${qs.map((x) => x.name).join(', ')}`);
  return q;
}

let adapter: BrokerAdapter;
beforeAll(() => {
  adapter = adapterFor(SQS_ENDPOINT);
});
afterEach(async () => {
  for (const { client, url } of created.splice(0)) await client.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
});
afterAll(async () => {
  await adapter.close();
  faux.destroy();
  alt.destroy();
});

describe('dead-letter links (fauxqs)', () => {
  it('links a RedrivePolicy to its DLQ and the DLQ back to its source, in listQueues and getQueue', async () => {
    const base = uniqueName('link');
    const dlq = await createQueue(faux, `${base}-dlq`);
    const src = await createQueue(faux, base, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 3 }), VisibilityTimeout: '30' });
    const other = await createQueue(faux, `${base}-plain`);

    // fauxqs names its queue URLs after a host that does not resolve (sqs.<region>.<host>; with host
    // 127.0.0.1 it is not even a WHATWG-valid URL): every call below works only because the adapter
    // sends requests to the configured endpoint.
    expect(src.url.startsWith(`${SQS_ENDPOINT}/`)).toBe(false);
    expect(src.url).toMatch(/^http:\/\/sqs\.us-east-1\./);
    const listed = await adapter.listQueues({ pattern: `${base}*` });
    expect(listed.map((q) => q.name)).toEqual([base, `${base}-dlq`, `${base}-plain`]);
    const s = find(listed, src.id);
    expect(s.deadLetterTargets).toEqual([{ queueId: dlq.id, queueName: dlq.name, via: 'RedrivePolicy (maxReceiveCount 3)', maxReceiveCount: 3 }]);
    expect(s.isDeadLetterQueue).toBe(false);
    expect(s.deadLetterSources).toEqual([]);
    expect(s.config).toMatchObject({ visibilityTimeoutSeconds: 30, redrivePolicy: { deadLetterTargetArn: dlq.arn, maxReceiveCount: 3 }, fifoQueue: false });
    const d = find(listed, dlq.id);
    expect(d.deadLetterSources).toEqual([src.id]);
    expect(d.isDeadLetterQueue).toBe(true);
    expect(d.deadLetterTargets).toEqual([]);
    expect(find(listed, other.id)).toMatchObject({ isDeadLetterQueue: false, deadLetterSources: [], deadLetterTargets: [] });

    // getQueue resolves the target with GetQueueUrl, and (fauxqs has no ListDeadLetterSourceQueues) the
    // DLQ's sources by inverting every queue's RedrivePolicy.
    expect((await adapter.getQueue(src.id)).deadLetterTargets[0]).toMatchObject({ queueId: dlq.id, maxReceiveCount: 3 });
    const dFresh = await adapter.getQueue(dlq.id);
    expect(dFresh.deadLetterSources).toEqual([src.id]);
    expect(dFresh.isDeadLetterQueue).toBe(true);
  });

  it('resolves a DLQ outside the listed pattern and reports a deleted DLQ as a problem', async () => {
    const base = uniqueName('gone');
    const dlq = await createQueue(faux, `${base}-x-dlq`);
    const src = await createQueue(faux, `${base}-src`, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 5 }) });
    // Only the source is listed: the target is found with GetQueueUrl.
    const [only] = await adapter.listQueues({ pattern: `${base}-src` });
    expect(only?.deadLetterTargets[0]).toEqual({ queueId: dlq.id, queueName: dlq.name, via: 'RedrivePolicy (maxReceiveCount 5)', maxReceiveCount: 5 });

    await faux.send(new DeleteQueueCommand({ QueueUrl: dlq.url }));
    const [after] = await adapter.listQueues({ pattern: `${base}*` });
    expect(after?.id).toBe(src.id);
    const t = after?.deadLetterTargets[0];
    expect(t?.queueId).toBeNull();
    expect(t?.queueName).toBe(dlq.name);
    expect(t?.problem).toMatch(/does not exist/);
  });

  it('flags a standard DLQ whose retention does not exceed the source retention', async () => {
    const base = uniqueName('ret');
    const dlq = await createQueue(faux, `${base}-dlq`, { MessageRetentionPeriod: '86400' });
    const src = await createQueue(faux, base, { MessageRetentionPeriod: '345600', RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 3 }) });
    const s = find(await adapter.listQueues({ pattern: `${base}*` }), src.id);
    expect(s.deadLetterTargets[0]?.queueId).toBe(dlq.id);
    expect(s.deadLetterTargets[0]?.problem).toMatch(/1 d \(86400 s\).*4 d \(345600 s\)/);
    expect(s.config.messageRetentionPeriodSeconds).toBe(345600);
  });
});

describe('ListDeadLetterSourceQueues (local-aws-sqs)', () => {
  it('finds the sources of a DLQ listed on its own (not derivable from the listed RedrivePolicies)', async () => {
    const a = adapterFor(SQS_ALT_ENDPOINT);
    try {
      const base = uniqueName('ldl');
      const dlq = await createQueue(alt, `${base}-dlq`);
      const src = await createQueue(alt, `${base}-orders`, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 2 }) });
      const listed = await a.listQueues({ pattern: `${base}-dlq` });
      expect(listed.map((q) => q.id)).toEqual([dlq.id]);
      expect(listed[0]?.deadLetterSources).toEqual([src.id]);
      expect(listed[0]?.config.deadLetterSourcesFrom).toMatch(/ListDeadLetterSourceQueues/);
      const fresh = await a.getQueue(dlq.id);
      expect(fresh.deadLetterSources).toEqual([src.id]);
    } finally {
      await a.close();
    }
  });

  it('on fauxqs (no such API) the same filtered listing falls back silently to the listed RedrivePolicies', async () => {
    const base = uniqueName('ldl');
    const dlq = await createQueue(faux, `${base}-dlq`);
    await createQueue(faux, `${base}-orders`, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 2 }) });
    const fresh = adapterFor(SQS_ENDPOINT);
    try {
      const listed = await fresh.listQueues({ pattern: `${base}-dlq` });
      expect(listed.map((q) => q.id)).toEqual([dlq.id]);
      expect(listed[0]?.deadLetterSources).toEqual([]);
      expect(listed[0]?.isDeadLetterQueue).toBe(true); // named like one
      expect(listed[0]?.config.deadLetterSourcesFrom).toMatch(/no ListDeadLetterSourceQueues/);
    } finally {
      await fresh.close();
    }
  });
});

describe('peek side effects (fauxqs)', () => {
  async function queueWithDlq(maxReceiveCount: number): Promise<{ src: { url: string; id: string; name: string }; dlq: { url: string; id: string; name: string } }> {
    const base = uniqueName('peek');
    const dlq = await createQueue(faux, `${base}-dlq`);
    const src = await createQueue(faux, base, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount }) });
    return { src, dlq };
  }

  it('refuses to peek a queue with a RedrivePolicy unless side effects are accepted, and changes nothing', async () => {
    const { src, dlq } = await queueWithDlq(3);
    await faux.send(new SendMessageCommand({ QueueUrl: src.url, MessageBody: '{"orderId":"A-1001"}' }));
    const q = await adapter.getQueue(src.id);
    expect(q.capabilities).toMatchObject({ canPeekNonDestructively: false, peekMayDeadLetter: true, canPageFromCursor: false });
    expect(q.capabilities.peekSideEffects.map((e) => e.kind)).toEqual(['delivery-count', 'temporarily-invisible', 'may-dead-letter']);
    expect(q.capabilities.peekSideEffects[2]?.description).toContain(dlq.name);

    let refused: unknown;
    try {
      await adapter.peek(src.id, { limit: 10 });
    } catch (e) {
      refused = e;
    }
    expect(refused).toBeInstanceOf(QueuescopeError);
    expect((refused as QueuescopeError).code).toBe('PEEK_REFUSED');
    expect((refused as QueuescopeError).message).toContain('maxReceiveCount 3');
    expect((refused as QueuescopeError).message).toContain(dlq.name);

    // Nothing was received: the first receive after the refusal is the message's first.
    const a = await attrs(faux, src.url);
    expect(a.ApproximateNumberOfMessages).toBe('1');
    expect(a.ApproximateNumberOfMessagesNotVisible).toBe('0');
    const [m] = await consumerReceive(faux, src.url);
    expect(m?.Attributes?.ApproximateReceiveCount).toBe('1');
  });

  it('a queue without RedrivePolicy cannot dead-letter, so it peeks without acceptance', async () => {
    const q = await createQueue(faux, uniqueName('plain'));
    await faux.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: 'hello' }));
    const s = await adapter.getQueue(q.id);
    expect(s.capabilities.peekMayDeadLetter).toBe(false);
    expect(s.capabilities.peekSideEffects.map((e) => e.kind)).toEqual(['delivery-count', 'temporarily-invisible']);
    const page = await adapter.peek(q.id, { limit: 5 });
    expect(page.messages.map((m) => m.body.data)).toEqual(['hello']);
    expect(page.messages[0]?.meta.receiveCount).toBe(1);
  });

  it('with acceptance: reports the receive count and leaves messages visible right away', async () => {
    const { src } = await queueWithDlq(5);
    for (const n of [1, 2, 3]) await faux.send(new SendMessageCommand({ QueueUrl: src.url, MessageBody: `m${n}` }));
    const t0 = Date.now();
    const first = await adapter.peek(src.id, { limit: 10, acceptSideEffects: true });
    expect(first.messages.map((m) => m.body.data)).toEqual(['m1', 'm2', 'm3']);
    expect(first.messages.map((m) => m.meta.receiveCount)).toEqual([1, 1, 1]);
    expect(first.total).toBe(3);
    expect(first.nextCursor).toBeNull();
    expect(first.sideEffects.join(' ')).toMatch(/Received 3 messages: ApproximateReceiveCount \+1 each \(now 1\)/);
    expect(first.sideEffects.join(' ')).toMatch(/made visible again/);
    for (const m of first.messages) {
      expect(m.meta.enqueuedAt).toBeGreaterThanOrEqual(t0 - 60_000);
      expect(m.meta.firstReceivedAt).toBeGreaterThanOrEqual(m.meta.enqueuedAt!);
      expect(m.meta.state).toBe('visible');
    }
    // Right after the peek a consumer gets all three at once (not after the 30 s peek visibility timeout).
    const a = await attrs(faux, src.url);
    expect([a.ApproximateNumberOfMessages, a.ApproximateNumberOfMessagesNotVisible]).toEqual(['3', '0']);
    const got = await consumerReceive(faux, src.url);
    expect(got.map((m) => m.Body).sort()).toEqual(['m1', 'm2', 'm3']);
    expect(got.map((m) => m.Attributes?.ApproximateReceiveCount)).toEqual(['2', '2', '2']);
    // A second peek sees the consumer's receive and its own.
    const second = await adapter.peek(src.id, { limit: 2, acceptSideEffects: true });
    expect(second.messages).toHaveLength(2);
    expect(second.messages.map((m) => m.meta.receiveCount)).toEqual([3, 3]);
  });

  it('a peek at maxReceiveCount says the next receive dead-letters, and the next peek does move it', async () => {
    const { src, dlq } = await queueWithDlq(1);
    await faux.send(new SendMessageCommand({ QueueUrl: src.url, MessageBody: 'poison' }));
    const first = await adapter.peek(src.id, { limit: 10, acceptSideEffects: true });
    expect(first.messages.map((m) => m.meta.receiveCount)).toEqual([1]);
    expect(first.sideEffects.join(' ')).toContain(`1 message now has been received 1 time: the next receive (a consumer's or a peek) moves it to ${dlq.name}`);
    const second = await adapter.peek(src.id, { limit: 10, acceptSideEffects: true });
    expect(second.messages).toEqual([]);
    expect((await attrs(faux, dlq.url)).ApproximateNumberOfMessages).toBe('1');
    expect((await adapter.getQueue(dlq.id)).depth).toBe(1);
  });

  it('dedupes by MessageId and stops at the limit (more than one receive of 10)', async () => {
    const q = await createQueue(faux, uniqueName('many'));
    for (let i = 0; i < 25; i++) await faux.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: `n${i}` }));
    const page = await adapter.peek(q.id, { limit: 23 });
    expect(page.messages).toHaveLength(23);
    expect(new Set(page.messages.map((m) => m.id)).size).toBe(23);
    expect(page.messages.map((m) => m.position)).toEqual(Array.from({ length: 23 }, (_, i) => i));
    const a = await attrs(faux, q.url);
    expect([a.ApproximateNumberOfMessages, a.ApproximateNumberOfMessagesNotVisible]).toEqual(['25', '0']);
    // Above the window the adapter caps at 100 (here: all 25).
    expect((await adapter.peek(q.id, { limit: 1000 })).messages).toHaveLength(25);
  });
});

describe('message mapping (fauxqs)', () => {
  it('round-trips message attributes of every type', async () => {
    const q = await createQueue(faux, uniqueName('attrs'));
    const bin = Uint8Array.from([0, 255, 1, 128]);
    const attributes: Record<string, MessageAttributeValue> = {
      'Idempotency-Key': { DataType: 'String', StringValue: 'A-1001:charge' },
      'x-request-id': { DataType: 'String', StringValue: 'req-7f3a' },
      attempt: { DataType: 'Number', StringValue: '3' },
      ratio: { DataType: 'Number.float', StringValue: '0.25' },
      huge: { DataType: 'Number', StringValue: '12345678901234567890123456789' },
      blob: { DataType: 'Binary', BinaryValue: bin },
      payload: { DataType: 'String.json', StringValue: '{"a":1}' },
    };
    await faux.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: 'x', MessageAttributes: attributes }));
    const [m] = (await adapter.peek(q.id, { limit: 1 })).messages;
    expect(m?.headers).toEqual({
      'Idempotency-Key': 'A-1001:charge',
      'x-request-id': 'req-7f3a',
      attempt: 3,
      ratio: 0.25,
      huge: '12345678901234567890123456789',
      blob: { base64: Buffer.from(bin).toString('base64') },
      payload: '{"a":1}',
    });
    expect(m?.properties.messageAttributeTypes).toEqual({
      'Idempotency-Key': 'String',
      'x-request-id': 'String',
      attempt: 'Number',
      ratio: 'Number.float',
      huge: 'Number',
      blob: 'Binary',
      payload: 'String.json',
    });
    expect(m?.properties.ApproximateReceiveCount).toBe('1');
    expect(typeof m?.properties.SentTimestamp).toBe('string');
    expect(m?.properties.MD5OfBody).toBe('9dd4e461268c8034f5c8564e155c67a6'); // md5("x")
    expect(m?.properties).not.toHaveProperty('ReceiptHandle');
  });

  it('reports FIFO group, deduplication id and sequence number; a busy group shows its head', async () => {
    const q = await createQueue(faux, `${uniqueName('fifo')}.fifo`, { FifoQueue: 'true' });
    for (const [i, op] of ['charge', 'capture', 'refund'].entries()) {
      await faux.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: JSON.stringify({ orderId: 'A-1001', op }), MessageGroupId: 'order-A-1001', MessageDeduplicationId: `A-1001:${op}`, MessageAttributes: { seq: { DataType: 'Number', StringValue: String(i) } } }));
    }
    const s = await adapter.getQueue(q.id);
    expect(s.kind).toBe('sqs-fifo');
    expect(s.config.fifoQueue).toBe(true);
    const page = await adapter.peek(q.id, { limit: 10 });
    // AWS would return all three (up to 10 per group); fauxqs returns one message per group per receive.
    expect(page.messages.length).toBeGreaterThanOrEqual(1);
    expect(page.messages.length).toBeLessThanOrEqual(3);
    const head = page.messages[0]!;
    expect(JSON.parse(head.body.data)).toEqual({ orderId: 'A-1001', op: 'charge' });
    expect(head.meta).toMatchObject({ messageGroupId: 'order-A-1001', messageDeduplicationId: 'A-1001:charge', receiveCount: 1 });
    expect(head.meta.sequenceNumber).toMatch(/^\d+$/);
    // The group is released right away: a consumer gets the head immediately.
    const [m] = await consumerReceive(faux, q.url);
    expect(m?.Attributes?.MessageDeduplicationId).toBe('A-1001:charge');
  });

  it('reads a 1 MiB body whole and truncates on a character boundary', async () => {
    const q = await createQueue(faux, uniqueName('big'), { MaximumMessageSize: '1048576' });
    const body = `${'é'.repeat(300_000)}${'x'.repeat(1024 * 1024 - 600_000 - 5)}"end"`;
    expect(Buffer.byteLength(body)).toBe(1024 * 1024);
    await faux.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: body }));
    const [m] = (await adapter.peek(q.id, { limit: 1 })).messages;
    expect(m?.body).toEqual({ encoding: 'utf8', data: body, sizeBytes: 1024 * 1024, truncated: false });
    const [cut] = (await adapter.peek(q.id, { limit: 1, maxBodyBytes: 1001 })).messages;
    expect(cut?.body.truncated).toBe(true);
    expect(cut?.body.sizeBytes).toBe(1024 * 1024);
    expect(cut?.body.data).toBe('é'.repeat(500)); // 1000 bytes: the 1001st byte would split a character
  });
});

describe('errors', () => {
  it('the emulators accept any credentials (so AUTH_FAILED is unit-tested with SDK errors)', async () => {
    for (const endpoint of [SQS_ENDPOINT, SQS_ALT_ENDPOINT]) {
      const bad = adapterFor(endpoint, { accessKeyId: 'AKIAQSINVALIDKEY0000', secretAccessKey: 'definitely-not-the-secret' });
      try {
        const r = await bad.testConnection();
        expect(r.ok).toBe(true);
      } finally {
        await bad.close();
      }
    }
  });

  it('a profile that does not exist is AUTH_FAILED, naming the profile', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'qs-aws-'));
    writeFileSync(join(dir, 'config'), '[profile other]\nregion = us-east-1\n');
    writeFileSync(join(dir, 'credentials'), '');
    const saved = { c: process.env.AWS_CONFIG_FILE, s: process.env.AWS_SHARED_CREDENTIALS_FILE };
    process.env.AWS_CONFIG_FILE = join(dir, 'config');
    process.env.AWS_SHARED_CREDENTIALS_FILE = join(dir, 'credentials');
    const a = createSqsAdapter({ kind: 'sqs', region: SQS_REGION, endpoint: SQS_ENDPOINT, profile: 'qs-missing-profile' });
    try {
      const r = await a.testConnection();
      expect(r.ok).toBe(false);
      expect(r.error?.code).toBe('AUTH_FAILED');
      expect(r.error?.message).toContain('qs-missing-profile');
      expect(r.checks.map((c) => [c.name, c.ok])).toEqual([['AWS credentials: profile "qs-missing-profile" (~/.aws/config, ~/.aws/credentials)', false]]);
      expect(await codeOf(a.listQueues({}))).toBe('AUTH_FAILED');
    } finally {
      await a.close();
      if (saved.c === undefined) delete process.env.AWS_CONFIG_FILE;
      else process.env.AWS_CONFIG_FILE = saved.c;
      if (saved.s === undefined) delete process.env.AWS_SHARED_CREDENTIALS_FILE;
      else process.env.AWS_SHARED_CREDENTIALS_FILE = saved.s;
    }
  });

  it('an access key without its secret is INVALID_INPUT, not a crash', async () => {
    const a = createSqsAdapter({ kind: 'sqs', region: SQS_REGION, endpoint: SQS_ENDPOINT, accessKeyId: 'test' });
    const r = await a.testConnection();
    expect(r.error?.code).toBe('INVALID_INPUT');
    expect(await codeOf(a.listQueues({}))).toBe('INVALID_INPUT');
    await a.close();
  });

  it('a closed port is HOST_UNREACHABLE; https to a plain-http port is TLS_ERROR', async () => {
    const closed = adapterFor('http://127.0.0.1:9');
    const r = await closed.testConnection();
    expect(r.error?.code).toBe('HOST_UNREACHABLE');
    expect(r.error?.message).toContain('connection refused');
    expect(await codeOf(closed.getQueue('sqs:http://127.0.0.1:9/000000000000/x'))).toBe('HOST_UNREACHABLE');
    await closed.close();
    const tls = adapterFor(SQS_ENDPOINT.replace('http://', 'https://'));
    const t = await tls.testConnection();
    expect(t.error?.code).toBe('TLS_ERROR');
    expect(await codeOf(tls.listQueues({}))).toBe('TLS_ERROR');
    await tls.close();
  });

  it('an endpoint that is not SQS (an HTTP server answering 405, an AMQP port) is BROKER_ERROR naming the endpoint', async () => {
    const errorOf = async (p: Promise<unknown>): Promise<QueuescopeError> => {
      const e: unknown = await p.then(
        () => null,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(QueuescopeError);
      return e as QueuescopeError;
    };
    // The RabbitMQ management API answers POST / with HTTP 405.
    const mgmt = RABBITMQ_MANAGEMENT_URL.replace(/\/$/, '');
    const http = adapterFor(mgmt);
    const e = await errorOf(http.listQueues({}));
    expect(e.code).toBe('BROKER_ERROR');
    expect(e.message).toBe(`${mgmt} does not answer like an SQS endpoint (HTTP 405 to ListQueues); check the endpoint URL.`);
    const r = await http.testConnection();
    expect(r.ok).toBe(false);
    expect(r.error?.code).toBe('BROKER_ERROR');
    expect(r.error?.message).toContain('does not answer like an SQS endpoint');
    await http.close();
    // The AMQP port does not speak HTTP at all.
    const amqp = new URL(AMQP_URL);
    const amqpEndpoint = `http://${amqp.hostname}:${amqp.port || '5672'}`;
    const notHttp = adapterFor(amqpEndpoint);
    const e2 = await errorOf(notHttp.listQueues({}));
    expect(e2.code).toBe('BROKER_ERROR');
    expect(e2.message).toContain(`${amqpEndpoint} does not answer like an SQS endpoint`);
    expect(e2.message).toContain('check the endpoint URL');
    await notHttp.close();
  });

  it('a queue deleted while open is QUEUE_NOT_FOUND for getQueue and peek', async () => {
    const q = await createQueue(faux, uniqueName('del'));
    await faux.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: 'bye' }));
    expect((await adapter.getQueue(q.id)).depth).toBe(1);
    await faux.send(new DeleteQueueCommand({ QueueUrl: q.url }));
    expect(await codeOf(adapter.getQueue(q.id))).toBe('QUEUE_NOT_FOUND');
    expect(await codeOf(adapter.peek(q.id, { limit: 1, acceptSideEffects: true }))).toBe('QUEUE_NOT_FOUND');
    expect((await adapter.listQueues({ pattern: q.name })).map((x) => x.id)).toEqual([]);
  });

  it('a malformed queue id and impossible peek options are INVALID_INPUT', async () => {
    const q = await createQueue(faux, uniqueName('opts'));
    expect(await codeOf(adapter.getQueue('stream:orders'))).toBe('INVALID_INPUT');
    expect(await codeOf(adapter.peek(q.id, { limit: 5, cursor: 'abc' }))).toBe('INVALID_INPUT');
    expect(await codeOf(adapter.peek(q.id, { limit: 5, direction: 'newest' }))).toBe('INVALID_INPUT');
    expect(await codeOf(adapter.peek(q.id, { limit: 0 }))).toBe('INVALID_INPUT');
    // sqs:<name> is resolved with GetQueueUrl.
    expect((await adapter.getQueue(`sqs:${q.name}`)).id).toBe(q.id);
  });
});

describe('listing (fauxqs)', () => {
  it('filters by glob with a server-side prefix, honours the limit and sorts by name', async () => {
    const base = uniqueName('glob');
    for (const n of ['c', 'a', 'b-dlq']) await createQueue(faux, `${base}-${n}`);
    await createQueue(faux, `${base}-a.fifo`, { FifoQueue: 'true' });
    const all = await adapter.listQueues({ pattern: `${base}-*` });
    expect(all.map((q) => q.name)).toEqual([`${base}-a`, `${base}-a.fifo`, `${base}-b-dlq`, `${base}-c`]);
    expect(all.map((q) => q.kind)).toEqual(['sqs-standard', 'sqs-fifo', 'sqs-standard', 'sqs-standard']);
    expect(all.map((q) => [q.depth, q.inFlight, q.delayed, q.consumers])).toEqual(Array(4).fill([0, 0, 0, null]));
    expect((await adapter.listQueues({ pattern: `${base}-?` })).map((q) => q.name)).toEqual([`${base}-a`, `${base}-c`]);
    expect(await adapter.listQueues({ pattern: `${base}-*`, limit: 2 })).toHaveLength(2);
  });
});

describe('local-aws-sqs divergence (pinned, 2.0.2)', () => {
  it('ChangeMessageVisibility(0) adds to ApproximateReceiveCount, so one peek adds 2 there', async () => {
    const a = adapterFor(SQS_ALT_ENDPOINT);
    try {
      const q = await createQueue(alt, uniqueName('lasq'));
      await alt.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: 'one' }));
      const page = await a.peek(q.id, { limit: 5 });
      expect(page.messages.map((m) => [m.body.data, m.meta.receiveCount])).toEqual([['one', 1]]);
      const [m] = await consumerReceive(alt, q.url, 1);
      expect(m?.Attributes?.ApproximateReceiveCount).toBe('3'); // AWS and fauxqs: 2
    } finally {
      await a.close();
    }
  });
});
