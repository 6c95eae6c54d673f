import { randomUUID } from 'node:crypto';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SQSClient,
  SendMessageBatchCommand,
  type MessageAttributeValue,
  type SendMessageBatchRequestEntry,
} from '@aws-sdk/client-sqs';
import { fullOrder, rng, sleep } from './common';

/**
 * Seeds an SQS endpoint (fauxqs by default, see scripts/seed.ts) with demo queues, dead-lettering
 * through the real mechanism: poison messages are received (VisibilityTimeout 0) until SQS moves
 * them to the DLQ after `maxReceiveCount` receives.
 *
 * Queues (deleted and recreated on every run, so the seed is idempotent):
 * - `orders` — RedrivePolicy → `orders-dlq`, maxReceiveCount 3, VisibilityTimeout 30 s, long polling 20 s;
 *   live messages with `Idempotency-Key`, `x-request-id`, and `x-last-error` on those republished after a failure.
 * - `orders-dlq` — retention 14 d (longer than `orders`' 4 d), filled with dead letters.
 * - `payments.fifo` → `payments-dlq.fifo` (maxReceiveCount 3), one message group per order,
 *   deduplication ids = idempotency keys.
 * - `emails` — deliberately misconfigured for the audit: no RedrivePolicy, ReceiveMessageWaitTimeSeconds 0.
 *
 * Payloads mix what the product teaches to spot: business-derived idempotency keys (`A-1001:charge`),
 * missing keys, random UUID keys, ID-only messages, and messages embedding the full mutable order.
 *
 * Credentials: the AWS environment variables when set, else `test`/`test` (the emulators accept any).
 * On real AWS a queue deleted less than 60 s ago cannot be recreated; the seed then waits and retries.
 *
 * @returns one human-readable line per queue seeded.
 */
export async function seedSqs(endpoint: string, region: string): Promise<string[]> {
  const client = new SQSClient({
    region,
    endpoint,
    ...(process.env.AWS_ACCESS_KEY_ID ? {} : { credentials: { accessKeyId: 'test', secretAccessKey: 'test' } }),
  });
  try {
    return await seed(client);
  } finally {
    client.destroy();
  }
}

const MAX_RECEIVE_COUNT = 3;
const DAY_S = 86_400;

async function recreateQueue(client: SQSClient, name: string, attributes: Record<string, string>): Promise<{ url: string; arn: string }> {
  try {
    const { QueueUrl } = await client.send(new GetQueueUrlCommand({ QueueName: name }));
    if (QueueUrl !== undefined) await client.send(new DeleteQueueCommand({ QueueUrl }));
  } catch (e) {
    if ((e as { name?: string }).name !== 'QueueDoesNotExist') throw e;
  }
  for (let attempt = 0; ; attempt++) {
    try {
      const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
      const url = QueueUrl!;
      const a = await client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
      return { url, arn: a.Attributes!.QueueArn! };
    } catch (e) {
      // AWS: "You must wait 60 seconds after deleting a queue before you can create another with the same name."
      if ((e as { name?: string }).name === 'QueueDeletedRecently' && attempt < 14) {
        await sleep(5_000);
        continue;
      }
      throw e;
    }
  }
}

interface Msg {
  body: string;
  attributes: Record<string, string>;
  groupId?: string;
  dedupId?: string;
}

function toAttributes(a: Record<string, string>): Record<string, MessageAttributeValue> {
  const out: Record<string, MessageAttributeValue> = {};
  for (const [k, v] of Object.entries(a)) out[k] = /^-?\d+$/.test(v) && k === 'attempt' ? { DataType: 'Number', StringValue: v } : { DataType: 'String', StringValue: v };
  return out;
}

async function sendAll(client: SQSClient, url: string, msgs: Msg[]): Promise<void> {
  for (let i = 0; i < msgs.length; i += 10) {
    const entries: SendMessageBatchRequestEntry[] = msgs.slice(i, i + 10).map((m, j) => ({
      Id: `e${i + j}`,
      MessageBody: m.body,
      ...(Object.keys(m.attributes).length > 0 ? { MessageAttributes: toAttributes(m.attributes) } : {}),
      ...(m.groupId !== undefined ? { MessageGroupId: m.groupId } : {}),
      ...(m.dedupId !== undefined ? { MessageDeduplicationId: m.dedupId } : {}),
    }));
    const r = await client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries }));
    if ((r.Failed ?? []).length > 0) throw new Error(`SendMessageBatch failed for ${r.Failed!.length} entries: ${r.Failed![0]!.Code ?? ''} ${r.Failed![0]!.Message ?? ''}`);
  }
}

async function count(client: SQSClient, url: string): Promise<{ visible: number; inFlight: number }> {
  const a = (await client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }))).Attributes ?? {};
  return { visible: Number(a.ApproximateNumberOfMessages ?? 0), inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) };
}

/**
 * Receives from `sourceUrl` with VisibilityTimeout 0 (a consumer that fails at once) until SQS has
 * moved `expected` messages to `dlqUrl` — each needs maxReceiveCount receives, then the next receive
 * moves it. Returns the number of receive calls made.
 * @throws when the messages do not arrive within 400 receives.
 */
async function exceedMaxReceiveCount(client: SQSClient, sourceUrl: string, dlqUrl: string, expected: number): Promise<number> {
  for (let calls = 1; calls <= 400; calls++) {
    await client.send(new ReceiveMessageCommand({ QueueUrl: sourceUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0, WaitTimeSeconds: 0 }));
    if (calls > MAX_RECEIVE_COUNT) {
      const [src, dlq] = await Promise.all([count(client, sourceUrl), count(client, dlqUrl)]);
      if (dlq.visible >= expected && src.visible + src.inFlight === 0) return calls;
    }
  }
  throw new Error(`SQS did not move ${expected} messages to the DLQ after 400 receives: does this endpoint implement RedrivePolicy?`);
}

const ERRORS = [
  '503 Service Unavailable from payments-api (attempt 2)',
  'ETIMEDOUT calling inventory-service after 5000 ms',
  '429 Too Many Requests from payments-api, retry-after 2 s',
  '500 Internal Server Error from ledger: deadlock detected',
];

/** One order-related message in one of the five styles, cycling so every style appears. */
function orderMessage(n: number, r: () => number, opts: { lastError?: string } = {}): Msg {
  const orderId = `A-${1001 + n}`;
  const op = (['charge', 'capture', 'refund', 'ship'] as const)[n % 4]!;
  const attributes: Record<string, string> = { 'x-request-id': `req-${(n * 7919).toString(16).padStart(6, '0')}` };
  if (opts.lastError !== undefined) {
    attributes['x-last-error'] = opts.lastError;
    attributes.attempt = String(2 + (n % 3));
  }
  let body: Record<string, unknown>;
  switch (n % 5) {
    case 0: // good: business-derived idempotency key, IDs only
      attributes['Idempotency-Key'] = `${orderId}:${op}`;
      body = { type: `order.${op}`, orderId, idempotencyKey: `${orderId}:${op}`, amountCents: 1000 + Math.floor(r() * 9000) };
      break;
    case 1: // missing idempotency key
      body = { type: `order.${op}`, orderId, amountCents: 1000 + Math.floor(r() * 9000) };
      break;
    case 2: {
      // random UUID as the key: a retry by the producer gets a new key, so duplicates are not caught
      const key = randomUUID();
      attributes['Idempotency-Key'] = key;
      body = { type: `order.${op}`, orderId, idempotencyKey: key };
      break;
    }
    case 3: // ID-only message
      attributes['Idempotency-Key'] = `${orderId}:${op}`;
      body = { orderId };
      break;
    default: // embeds the full mutable order (stale by the time it is processed)
      body = { type: 'order.updated', order: fullOrder(orderId, r) };
  }
  return { body: JSON.stringify(body), attributes };
}

async function seed(client: SQSClient): Promise<string[]> {
  const r = rng(20261129);
  const lines: string[] = [];

  // --- orders / orders-dlq --------------------------------------------------
  const ordersDlq = await recreateQueue(client, 'orders-dlq', { MessageRetentionPeriod: String(14 * DAY_S), VisibilityTimeout: '30' });
  const orders = await recreateQueue(client, 'orders', {
    VisibilityTimeout: '30',
    MessageRetentionPeriod: String(4 * DAY_S),
    ReceiveMessageWaitTimeSeconds: '20',
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: ordersDlq.arn, maxReceiveCount: MAX_RECEIVE_COUNT }),
  });
  // Poison messages first: consumers keep failing on them until SQS dead-letters them.
  const poison: Msg[] = [];
  for (let n = 100; n < 118; n++) poison.push(orderMessage(n, r, n % 3 === 0 ? { lastError: ERRORS[n % ERRORS.length]! } : {}));
  poison.push({ body: '{"type":"order.charge","orderId":"A-1190","amountCents":"12,00"', attributes: { 'x-request-id': 'req-malformed-1', 'Idempotency-Key': 'A-1190:charge' } });
  poison.push({ body: '{"type":"order.refund","orderId":"A-9999","idempotencyKey":"A-9999:refund"}', attributes: { 'x-request-id': 'req-unknown-order', 'Idempotency-Key': 'A-9999:refund' } });
  await sendAll(client, orders.url, poison);
  const receives = await exceedMaxReceiveCount(client, orders.url, ordersDlq.url, poison.length);
  // Then live traffic, some of it republished by consumers after a transient failure.
  const live: Msg[] = [];
  for (let n = 0; n < 40; n++) live.push(orderMessage(n, r, n % 4 === 1 ? { lastError: ERRORS[n % ERRORS.length]! } : {}));
  await sendAll(client, orders.url, live);
  lines.push(`orders: ${live.length} messages (${live.filter((m) => 'x-last-error' in m.attributes).length} with x-last-error); RedrivePolicy → orders-dlq, maxReceiveCount ${MAX_RECEIVE_COUNT}`);
  lines.push(`orders-dlq: ${(await count(client, ordersDlq.url)).visible} dead letters, moved by the RedrivePolicy on the receive after the ${MAX_RECEIVE_COUNT}rd (${receives} receive calls)`);

  // --- payments.fifo / payments-dlq.fifo -------------------------------------------------
  const paymentsDlq = await recreateQueue(client, 'payments-dlq.fifo', { FifoQueue: 'true', MessageRetentionPeriod: String(14 * DAY_S) });
  const payments = await recreateQueue(client, 'payments.fifo', {
    FifoQueue: 'true',
    VisibilityTimeout: '60',
    ReceiveMessageWaitTimeSeconds: '20',
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: paymentsDlq.arn, maxReceiveCount: MAX_RECEIVE_COUNT }),
  });
  const payment = (n: number, op: 'authorize' | 'capture' | 'refund', extra: Record<string, string> = {}): Msg => {
    const orderId = `A-${1001 + n}`;
    const key = `${orderId}:${op}`;
    return {
      body: JSON.stringify({ type: `payment.${op}`, orderId, idempotencyKey: key, amountCents: 1500 + ((n * 373) % 8000) }),
      attributes: { 'Idempotency-Key': key, 'x-request-id': `req-pay-${n}-${op}`, ...extra },
      groupId: orderId,
      dedupId: key,
    };
  };
  const fifoPoison = [payment(150, 'capture'), payment(151, 'refund', { 'x-last-error': '422 Unprocessable Entity: refund exceeds captured amount' }), payment(152, 'authorize')];
  await sendAll(client, payments.url, fifoPoison);
  const fifoReceives = await exceedMaxReceiveCount(client, payments.url, paymentsDlq.url, fifoPoison.length);
  const fifoLive: Msg[] = [];
  for (let n = 0; n < 12; n++) {
    fifoLive.push(payment(n, 'authorize'));
    if (n % 2 === 0) fifoLive.push(payment(n, 'capture'));
  }
  await sendAll(client, payments.url, fifoLive);
  lines.push(`payments.fifo: ${fifoLive.length} messages in ${new Set(fifoLive.map((m) => m.groupId)).size} groups (one per order), deduplication id = idempotency key`);
  lines.push(`payments-dlq.fifo: ${(await count(client, paymentsDlq.url)).visible} dead letters (${fifoReceives} receive calls)`);

  // --- emails (misconfigured on purpose) ---------------------------------------
  const emails = await recreateQueue(client, 'emails', { ReceiveMessageWaitTimeSeconds: '0', VisibilityTimeout: '5' });
  const mails: Msg[] = [];
  for (let n = 0; n < 15; n++) {
    const orderId = `A-${1001 + n}`;
    mails.push(
      n % 3 === 0
        ? { body: JSON.stringify({ template: 'order-confirmation', orderId }), attributes: { 'Idempotency-Key': `${orderId}:confirmation-email`, 'x-request-id': `req-mail-${n}` } }
        : { body: JSON.stringify({ template: 'order-confirmation', to: 'buyer@example.com', order: fullOrder(orderId, r) }), attributes: { 'x-request-id': `req-mail-${n}` } },
    );
  }
  await sendAll(client, emails.url, mails);
  lines.push(`emails: ${mails.length} messages; no RedrivePolicy and ReceiveMessageWaitTimeSeconds 0 (misconfigured for the audit)`);
  return lines;
}
