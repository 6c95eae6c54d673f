/**
 * Deliberate misconfigurations for `queuescope audit` to find (issue 6), made after the other
 * seeds. Each one is a real broker configuration, not a fake:
 *
 * - RabbitMQ `audit.work`: dead-letter exchange `audit.dlx` exists but has no binding for the
 *   dead-letter routing key `audit.work` → dead letters are dropped (`rabbitmq.dead-letters-unroutable`).
 * - RabbitMQ `shipments.work` with an existing `shipments.dlq` but no dead-letter exchange
 *   (`rabbitmq.no-dead-letter-exchange`; the app offers a one-click DLX policy).
 * - SQS `invoices` without a RedrivePolicy beside an existing `invoices-dlq`
 *   (`sqs.no-redrive-policy`; the app offers a one-click RedrivePolicy).
 * - BullMQ queue `mailer` whose jobs use `removeOnFail: true` (`redis.bullmq-remove-on-fail`).
 * - Stream `orders-stream`: the pending entries `worker-1` left (seed/redis.ts) are made idle for
 *   2 h with XCLAIM … IDLE, so they are stranded by any claim time (`redis.stream-stranded-pending-entries`).
 *
 * Together with the deliberate ones of the other seeds (`notifications` TTL without DLX, `emails`
 * without RedrivePolicy and short polling, non-empty DLQs) and the shared Redis running without
 * persistence, these are exactly what `queuescope audit` finds on freshly seeded brokers.
 * Idempotent: deletes and recreates only these names.
 */
import { connect } from 'amqplib';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { sleep } from './common';

export const MISCONFIG_RABBITMQ_QUEUES = ['audit.work', 'shipments.work', 'shipments.dlq'] as const;
export const MISCONFIG_SQS_QUEUES = ['invoices', 'invoices-dlq'] as const;
export const MISCONFIG_BULLMQ_QUEUE = 'mailer';
const STREAM = 'orders-stream';
const DAY_S = 86_400;

async function rabbitmq(amqpUrl: string): Promise<string[]> {
  const conn = await connect(amqpUrl, { noDelay: true });
  try {
    const ch = await conn.createConfirmChannel();
    for (const q of MISCONFIG_RABBITMQ_QUEUES) await ch.deleteQueue(q);
    await ch.deleteExchange('audit.dlx');
    await ch.assertExchange('audit.dlx', 'direct', { durable: true });
    await ch.assertQueue('audit.work', { durable: true, arguments: { 'x-queue-type': 'classic', 'x-dead-letter-exchange': 'audit.dlx', 'x-dead-letter-routing-key': 'audit.work' } });
    await ch.assertQueue('shipments.dlq', { durable: true });
    await ch.assertQueue('shipments.work', { durable: true, arguments: { 'x-queue-type': 'classic' } });
    for (let i = 0; i < 4; i++) ch.sendToQueue('shipments.work', Buffer.from(JSON.stringify({ shipmentId: `S-${String(300 + i)}`, orderId: `A-${String(1001 + i)}` })), { persistent: true, messageId: `ship-${String(i)}` });
    await ch.waitForConfirms();
    await ch.close();
  } finally {
    await conn.close();
  }
  return [
    "audit.work (classic): dead-letter exchange audit.dlx exists but nothing is bound for routing key 'audit.work' — dead letters are dropped",
    'shipments.work (classic): 4 ready, no dead-letter exchange although shipments.dlq exists',
  ];
}

async function sqs(endpoint: string, region: string): Promise<string[]> {
  const client = new SQSClient({ endpoint, region, ...(process.env.AWS_ACCESS_KEY_ID ? {} : { credentials: { accessKeyId: 'test', secretAccessKey: 'test' } }) });
  try {
    for (const name of MISCONFIG_SQS_QUEUES) {
      try {
        const { QueueUrl } = await client.send(new GetQueueUrlCommand({ QueueName: name }));
        if (QueueUrl !== undefined) await client.send(new DeleteQueueCommand({ QueueUrl }));
      } catch (e) {
        if ((e as { name?: string }).name !== 'QueueDoesNotExist') throw e;
      }
    }
    const create = async (name: string, attributes: Record<string, string>): Promise<void> => {
      for (let attempt = 0; ; attempt++) {
        try {
          await client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
          return;
        } catch (e) {
          if ((e as { name?: string }).name === 'QueueDeletedRecently' && attempt < 14) {
            await sleep(5_000);
            continue;
          }
          throw e;
        }
      }
    };
    await create('invoices-dlq', { MessageRetentionPeriod: String(14 * DAY_S), ReceiveMessageWaitTimeSeconds: '20' });
    await create('invoices', { MessageRetentionPeriod: String(4 * DAY_S), VisibilityTimeout: '60', ReceiveMessageWaitTimeSeconds: '20' });
  } finally {
    client.destroy();
  }
  return ['invoices: no RedrivePolicy although invoices-dlq exists'];
}

async function redis(url: string): Promise<string[]> {
  const conn = new Redis(url, { maxRetriesPerRequest: null });
  const queue = new Queue(MISCONFIG_BULLMQ_QUEUE, { connection: conn });
  try {
    await queue.obliterate({ force: true });
    for (let i = 0; i < 5; i++) await queue.add('send-email', { template: 'receipt', orderId: `A-${String(1001 + i)}` }, { removeOnFail: true, attempts: 3, backoff: { type: 'exponential', delay: 1000 } });
    // Strand worker-1's pending entries: idle for 2 h, as if it crashed long ago.
    const pending = (await conn.xpending(STREAM, 'billing', '-', '+', 100, 'worker-1')) as [string, string, number, number][];
    const ids = pending.map((p) => p[0]);
    if (ids.length > 0) await conn.xclaim(STREAM, 'billing', 'worker-1', 0, ...ids, 'IDLE', 7_200_000, 'JUSTID');
    return [`BullMQ ${MISCONFIG_BULLMQ_QUEUE}: 5 waiting jobs with removeOnFail: true`, `${STREAM}: ${String(ids.length)} pending entries of worker-1 idle for 2 h`];
  } finally {
    await queue.close();
    conn.disconnect();
  }
}

/** Creates the deliberate misconfigurations on the brokers selected by `only` (redis, rabbitmq, sqs). */
export async function seedMisconfig(o: { only: Set<string>; redisUrl: string; amqpUrl: string; sqsEndpoint: string; region?: string }): Promise<string[]> {
  const lines: string[] = [];
  if (o.only.has('redis')) lines.push(...(await redis(o.redisUrl)));
  if (o.only.has('rabbitmq')) lines.push(...(await rabbitmq(o.amqpUrl)));
  if (o.only.has('sqs')) lines.push(...(await sqs(o.sqsEndpoint, o.region ?? 'us-east-1')));
  return lines;
}
