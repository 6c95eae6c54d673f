import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand, SQSClient, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import amqp from 'amqplib';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter } from '../../core/adapters';
import type { BrokerAdapter } from '../../core/adapters/types';
import { exportQueue, type ExportContext } from '../../core/services/export';
import { OperationManager } from '../../core/services/operations';
import { readSnapshotFile } from '../../core/snapshot/reader';
import { QueuescopeError } from '../../shared/domain';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, REDIS_URL, SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from './env';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-export-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const quietCtx = (signal?: AbortSignal): ExportContext & { totals: (number | null)[]; reports: number[] } => {
  const c = {
    signal: signal ?? new AbortController().signal,
    totals: [] as (number | null)[],
    reports: [] as number[],
    report: (p: { processed?: number }) => void c.reports.push(p.processed ?? -1),
    setTotal: (n: number | null) => void c.totals.push(n),
  };
  return c;
};

async function expectCode(p: Promise<unknown>, code: string): Promise<QueuescopeError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(QueuescopeError);
    expect((e as QueuescopeError).code).toBe(code);
    return e as QueuescopeError;
  }
  throw new Error(`expected ${code}`);
}

describe('export from Redis (pageable)', () => {
  const native = new Redis(REDIS_URL);
  let adapter!: BrokerAdapter;
  const key = uniqueName('export-stream');
  const N = 2345;

  beforeAll(async () => {
    adapter = createAdapter({ kind: 'redis', url: REDIS_URL });
    const pipe = native.pipeline();
    for (let i = 0; i < N; i++) pipe.xadd(key, '*', 'body', JSON.stringify({ orderId: `A-${i}`, operation: 'charge', idempotencyKey: `A-${i}:charge` }));
    await pipe.exec();
  });
  afterAll(async () => {
    await native.del(key);
    native.disconnect();
    await (adapter as BrokerAdapter | undefined)?.close();
  });

  it('streams every message, in order, through pages into the snapshot, and changes nothing', async () => {
    const path = join(dir, 'stream.jsonl');
    const ctx = quietCtx();
    const r = await exportQueue(adapter, `stream:${key}`, { path, pageSize: 1000, connection: 'redis://127.0.0.1:6379' }, ctx);
    expect(r).toMatchObject({ path, messages: N, partial: false, queueName: key, sideEffects: [] });
    expect(ctx.totals).toEqual([N]);
    expect(ctx.reports).toEqual([1000, 2000, N]);
    const [section] = await readSnapshotFile(path);
    expect(section?.header.source).toMatchObject({ broker: 'redis', connection: 'redis://127.0.0.1:6379', queue: { id: `stream:${key}`, name: key } });
    expect(section?.messages).toHaveLength(N);
    expect(section?.messages.map((m) => (JSON.parse(m.body.data) as { orderId: string }).orderId)).toEqual(Array.from({ length: N }, (_, i) => `A-${i}`));
    expect(await native.xlen(key)).toBe(N);
    expect(await readdir(dir)).not.toContain('stream.jsonl.partial');
  });

  it('with messageIds writes only those, in queue order, and counts the missing', async () => {
    const ids = (await native.xrange(key, '-', '+', 'COUNT', 3000)).map(([id]) => id);
    const pick = [ids[2000]!, ids[5]!, '0-1'];
    const path = join(dir, 'picked.jsonl');
    const r = await exportQueue(adapter, `stream:${key}`, { path, messageIds: pick, pageSize: 500 }, quietCtx());
    expect(r).toMatchObject({ messages: 2, notFound: 1, partial: true });
    expect(r.reason).toMatch(/1 of the 3 chosen messages was not found/);
    const [section] = await readSnapshotFile(path);
    expect(section?.header.selection).toBe('ids');
    expect(section?.messages.map((m) => m.id)).toEqual([ids[5], ids[2000]]);
  });

  it('cancelled mid-way through an OperationManager leaves no file at all', async () => {
    const ops = new OperationManager();
    const path = join(dir, 'cancelled.jsonl');
    const op = ops.start('export', 'cancel me', async (ctx) => {
      const slow: ExportContext = {
        ...ctx,
        report: (p) => {
          ctx.report(p);
          if ((p.processed ?? 0) >= 200) ops.cancel(op.id);
        },
      };
      return { ...(await exportQueue(adapter, `stream:${key}`, { path, pageSize: 100 }, slow)) };
    });
    const done = await ops.wait(op.id);
    expect(done.status).toBe('cancelled');
    expect(done.processed).toBeGreaterThanOrEqual(200);
    expect(done.processed).toBeLessThan(N);
    expect((await readdir(dir)).filter((f) => f.startsWith('cancelled'))).toEqual([]);
  });

  it('refuses to overwrite an existing file unless asked', async () => {
    const path = join(dir, 'stream.jsonl'); // written by the first test
    await expectCode(exportQueue(adapter, `stream:${key}`, { path }, quietCtx()), 'INVALID_INPUT');
    const r = await exportQueue(adapter, `stream:${key}`, { path, overwrite: true, pageSize: 1000 }, quietCtx());
    expect(r.messages).toBe(N);
  });
});

describe('export from RabbitMQ (one peek window)', () => {
  let conn: amqp.ChannelModel;
  let ch: amqp.Channel;
  let adapter!: BrokerAdapter;
  const classic = uniqueName('export-classic');
  const quorum = uniqueName('export-quorum');
  const DEPTH = 620;

  beforeAll(async () => {
    conn = await amqp.connect(AMQP_URL, { noDelay: true });
    ch = await conn.createChannel();
    await ch.assertQueue(classic, { durable: false });
    await ch.assertQueue(quorum, { durable: true, arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 3 } });
    for (let i = 0; i < DEPTH; i++) ch.sendToQueue(classic, Buffer.from(JSON.stringify({ n: i })), { messageId: `m-${i}` });
    ch.sendToQueue(quorum, Buffer.from('q'), { messageId: 'q-1' });
    await new Promise((r) => setTimeout(r, 200));
    adapter = createAdapter({ kind: 'rabbitmq', url: AMQP_URL, managementUrl: RABBITMQ_MANAGEMENT_URL });
  });
  afterAll(async () => {
    await ch.deleteQueue(classic).catch(() => undefined);
    await ch.deleteQueue(quorum).catch(() => undefined);
    await conn.close();
    await (adapter as BrokerAdapter | undefined)?.close();
  });

  it('exports one window, says it is partial and why, and leaves every message in the queue', async () => {
    const q = (await adapter.listQueues({ pattern: classic })).find((x) => x.name === classic)!;
    expect(q.capabilities.canPageFromCursor).toBe(false);
    const window = q.capabilities.maxPeekWindow;
    expect(window).toBeLessThan(DEPTH);
    const path = join(dir, 'classic.jsonl');
    const r = await exportQueue(adapter, q.id, { path }, quietCtx());
    expect(r.partial).toBe(true);
    expect(r.messages).toBe(window);
    expect(r.reason).toContain(`at most ${window} messages`);
    expect(r.sideEffects.length).toBeGreaterThan(0);
    const [section] = await readSnapshotFile(path);
    expect(section?.header.partial).toBe(true);
    expect(section?.header.partialReason).toBe(r.reason);
    expect(section?.messages[0]?.id).toBe('m-0');
    expect(section?.messages.at(-1)?.id).toBe(`m-${window - 1}`);
    expect((await ch.checkQueue(classic)).messageCount).toBe(DEPTH);
  });

  it('refuses a quorum queue with a delivery limit unless side effects are accepted, writing nothing', async () => {
    const q = (await adapter.listQueues({ pattern: quorum })).find((x) => x.name === quorum)!;
    expect(q.capabilities.peekMayDeadLetter).not.toBe(false);
    const path = join(dir, 'quorum.jsonl');
    const e = await expectCode(exportQueue(adapter, q.id, { path }, quietCtx()), 'PEEK_REFUSED');
    expect(e.message).toContain(quorum);
    expect((await readdir(dir)).filter((f) => f.startsWith('quorum'))).toEqual([]);
    expect((await ch.checkQueue(quorum)).messageCount).toBe(1);
    const r = await exportQueue(adapter, q.id, { path, acceptSideEffects: true }, quietCtx());
    expect(r.messages).toBe(1);
    expect(r.sideEffects.length).toBeGreaterThan(0);
  });
});

describe('export from SQS (fauxqs)', () => {
  const sqs = new SQSClient({ region: SQS_REGION, endpoint: SQS_ENDPOINT, credentials: { ...SQS_TEST_CREDENTIALS } });
  let adapter!: BrokerAdapter;
  const srcName = uniqueName('export-src');
  const dlqName = uniqueName('export-dlq');
  let srcUrl = '';
  let dlqUrl = '';

  beforeAll(async () => {
    process.env.AWS_ACCESS_KEY_ID ??= SQS_TEST_CREDENTIALS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY ??= SQS_TEST_CREDENTIALS.secretAccessKey;
    dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: dlqName }))).QueueUrl!;
    const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
    srcUrl = (await sqs.send(new CreateQueueCommand({ QueueName: srcName, Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn, maxReceiveCount: 3 }) } }))).QueueUrl!;
    for (const url of [srcUrl, dlqUrl]) {
      await sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: Array.from({ length: 5 }, (_, i) => ({ Id: `e${i}`, MessageBody: JSON.stringify({ n: i }) })) }));
    }
    adapter = createAdapter({ kind: 'sqs', region: SQS_REGION, endpoint: SQS_ENDPOINT, accessKeyId: 'test', secretAccessKey: 'test' });
  });
  afterAll(async () => {
    await sqs.send(new DeleteQueueCommand({ QueueUrl: srcUrl })).catch(() => undefined);
    await sqs.send(new DeleteQueueCommand({ QueueUrl: dlqUrl })).catch(() => undefined);
    sqs.destroy();
    await (adapter as BrokerAdapter | undefined)?.close();
  });

  it('refuses a source queue whose receive can dead-letter; exports its DLQ', async () => {
    const qs = await adapter.listQueues({});
    const src = qs.find((q) => q.name === srcName)!;
    const dlq = qs.find((q) => q.name === dlqName)!;
    expect(src.capabilities.peekMayDeadLetter).toBe(true);
    await expectCode(exportQueue(adapter, src.id, { path: join(dir, 'src.jsonl') }, quietCtx()), 'PEEK_REFUSED');
    expect((await readdir(dir)).filter((f) => f.startsWith('src'))).toEqual([]);

    const r = await exportQueue(adapter, dlq.id, { path: join(dir, 'dlq.jsonl') }, quietCtx());
    expect(r.messages).toBe(5);
    expect(r.partial).toBe(false);
    const [section] = await readSnapshotFile(join(dir, 'dlq.jsonl'));
    expect(section?.messages.map((m) => (JSON.parse(m.body.data) as { n: number }).n).sort()).toEqual([0, 1, 2, 3, 4]);
  });
});
