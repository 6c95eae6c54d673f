/**
 * Real data for the e2e tests and screenshots, made with the brokers' own clients (never through
 * Queuescope, so the app is not its own witness). Every fixture uses unique names and returns a
 * cleanup function that removes what it created.
 */
import { gzipSync } from 'node:zlib';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { connect } from 'amqplib';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { AMQP_URL, REDIS_URL, SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from '../integration/env';

/** A body that must stay text: if it were ever rendered as HTML, the handler would set `window.__pwned`. */
export const HTML_BODY = '<img src=x onerror="window.__pwned=1"><b>bold?</b><script>window.__pwned=2</script>';

export interface RedisFixture {
  bullQueue: string;
  list: string;
  stream: string;
  /** Job ids of the failed jobs, oldest first. */
  failedJobIds: string[];
  cleanup(): Promise<void>;
}

/**
 * Redis: a BullMQ queue with 3 failed jobs (2 attempts each, HTTP-503-style reason, stack traces)
 * and 2 waiting jobs; a list holding an HTML-looking body, a JSON body and a gzip-in-base64 body;
 * a stream with 25 entries.
 */
export async function seedRedis(label = 'e2e'): Promise<RedisFixture> {
  const connection = { url: REDIS_URL, maxRetriesPerRequest: null } as const;
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const bullQueue = uniqueName(`${label}-bull`);
  const list = uniqueName(`${label}-list`);
  const stream = uniqueName(`${label}-stream`);
  const queue = new Queue(bullQueue, { connection });
  const failedJobIds: string[] = [];
  for (let i = 0; i < 3; i++) {
    const job = await queue.add('charge', { orderId: `A-10${i + 1}`, idempotencyKey: `A-10${i + 1}:charge`, amountCents: 1299 + i }, { attempts: 2, backoff: { type: 'fixed', delay: 10 } });
    failedJobIds.push(String(job.id));
  }
  const worker = new Worker(
    bullQueue,
    async () => {
      await Promise.resolve();
      throw new Error('payment provider answered HTTP 503 Service Unavailable');
    },
    { connection, autorun: true },
  );
  const deadline = Date.now() + 20_000;
  while ((await queue.getFailedCount()) < 3) {
    if (Date.now() > deadline) throw new Error('BullMQ jobs did not fail within 20 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  await worker.close();
  await queue.add('charge', { orderId: 'A-2001', idempotencyKey: 'A-2001:charge' });
  await queue.add('refund', { orderId: 'A-2002', idempotencyKey: 'A-2002:refund' });

  const gz = gzipSync(Buffer.from(JSON.stringify({ compressed: true, orderId: 'A-3001' }))).toString('base64');
  await redis.rpush(list, HTML_BODY, JSON.stringify({ emailId: 'E-1', to: 'customer-42' }), gz);
  const p = redis.pipeline();
  for (let i = 0; i < 25; i++) p.xadd(stream, '*', 'body', JSON.stringify({ orderId: `S-${i}`, event: 'created' }), 'source', 'checkout');
  await p.exec();

  return {
    bullQueue,
    list,
    stream,
    failedJobIds,
    async cleanup() {
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      await redis.del(list, stream);
      await redis.quit();
    },
  };
}

export interface RabbitFixture {
  work: string;
  dlq: string;
  dlx: string;
  cleanup(): Promise<void>;
}

/**
 * RabbitMQ: a classic work queue dead-lettering through a direct exchange into a DLQ; 4 messages
 * published to the work queue and 2 of them rejected (requeue=false), so the DLQ holds 2 messages
 * carrying the broker's own `x-death`.
 */
export async function seedRabbit(label = 'e2e'): Promise<RabbitFixture> {
  const work = uniqueName(`${label}-work`);
  const dlq = `${work}.dlq`;
  const dlx = `${work}.dlx`;
  const conn = await connect(AMQP_URL, { noDelay: true });
  const ch = await conn.createConfirmChannel();
  await ch.assertExchange(dlx, 'direct', { durable: false, autoDelete: false });
  await ch.assertQueue(dlq, { durable: false });
  await ch.bindQueue(dlq, dlx, work);
  await ch.assertQueue(work, { durable: false, arguments: { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': work } });
  for (let i = 1; i <= 4; i++) {
    ch.sendToQueue(work, Buffer.from(JSON.stringify({ invoiceId: `INV-${i}`, idempotencyKey: `INV-${i}:send` })), {
      contentType: 'application/json',
      messageId: `inv-${i}`,
      headers: { 'x-tenant': 'acme', attempt: 1 },
      timestamp: Math.floor(Date.now() / 1000),
    });
  }
  await ch.waitForConfirms();
  for (let i = 0; i < 2; i++) {
    const m = await ch.get(work, { noAck: false });
    if (m === false) throw new Error('RabbitMQ fixture: expected a message to reject');
    ch.nack(m, false, false);
  }
  // Wait until the broker has moved both to the DLQ.
  const deadline = Date.now() + 10_000;
  while ((await ch.checkQueue(dlq)).messageCount < 2) {
    if (Date.now() > deadline) throw new Error('RabbitMQ fixture: dead-lettering did not happen within 10 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  await ch.close();
  return {
    work,
    dlq,
    dlx,
    async cleanup() {
      const c = await conn.createChannel();
      await c.deleteQueue(work).catch(() => undefined);
      await c.deleteQueue(dlq).catch(() => undefined);
      await c.deleteExchange(dlx).catch(() => undefined);
      await c.close().catch(() => undefined);
      await conn.close();
    },
  };
}

export interface SqsFixture {
  source: string;
  dlq: string;
  sourceUrl: string;
  dlqUrl: string;
  cleanup(): Promise<void>;
}

/** SQS (fauxqs): a source queue with a RedrivePolicy (maxReceiveCount 3) into a DLQ; 3 messages in the source. */
export async function seedSqs(label = 'e2e'): Promise<SqsFixture> {
  const client = new SQSClient({ region: SQS_REGION, endpoint: SQS_ENDPOINT, credentials: SQS_TEST_CREDENTIALS });
  const source = uniqueName(`${label}-orders`);
  const dlq = `${source}-dlq`;
  const dlqUrl = (await client.send(new CreateQueueCommand({ QueueName: dlq }))).QueueUrl ?? '';
  const arn = (await client.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn ?? '';
  const sourceUrl =
    (await client.send(new CreateQueueCommand({ QueueName: source, Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn, maxReceiveCount: '3' }), VisibilityTimeout: '30' } }))).QueueUrl ?? '';
  for (let i = 1; i <= 3; i++) {
    await client.send(
      new SendMessageCommand({
        QueueUrl: sourceUrl,
        MessageBody: JSON.stringify({ orderId: `O-${i}`, idempotencyKey: `O-${i}:ship` }),
        MessageAttributes: { tenant: { DataType: 'String', StringValue: 'acme' } },
      }),
    );
  }
  return {
    source,
    dlq,
    sourceUrl,
    dlqUrl,
    async cleanup() {
      await client.send(new DeleteQueueCommand({ QueueUrl: sourceUrl })).catch(() => undefined);
      await client.send(new DeleteQueueCommand({ QueueUrl: dlqUrl })).catch(() => undefined);
      client.destroy();
    },
  };
}
