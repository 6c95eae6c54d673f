import { randomUUID } from 'node:crypto';
import { connect, type ConfirmChannel, type ConsumeMessage, type Options } from 'amqplib';
import { fullOrder, rng, sleep } from './common';

/**
 * Seeds RabbitMQ with demo queues, dead-lettering through the broker's real mechanisms so every
 * `x-death` header is RabbitMQ's own (https://www.rabbitmq.com/docs/dlx):
 *
 * - `orders.work` (classic, durable) → DLX `orders.dlx` (direct) → `orders.dlq` (routing key
 *   `orders.dlq`). A consumer records each failure on the message (republishes it with
 *   `x-last-error`, `x-attempts`, `x-request-id` kept, and acks the original), and rejects it with
 *   requeue=false once the failure is non-retryable (HTTP 4xx) or 3 attempts failed: the broker
 *   dead-letters it (`x-death` reason `rejected`). Fresh messages are left ready in `orders.work`.
 * - `notifications` (classic) with a 1 h message TTL and NO dead-letter exchange: expired messages
 *   are dropped silently — a deliberate misconfiguration for the audit.
 * - `invoices.work` (quorum, `x-delivery-limit` 3) → DLX `invoices.dlx` (fanout) → `invoices.dlq`.
 *   A poison consumer requeues (nack) until the broker dead-letters at the limit (`x-death` reason
 *   `delivery_limit`); some ready messages carry `x-delivery-count` 1 after one failed delivery.
 *
 * Payloads mix what the product teaches to spot: business-derived idempotency keys
 * (`A-1001:charge`, in `messageId` or an `Idempotency-Key` header), missing keys, random UUID keys,
 * ID-only messages, and messages embedding the full mutable order.
 *
 * Idempotent: deletes and recreates only its own queues and exchanges. Uses publisher confirms.
 * Finishes by waiting (≤ 15 s) until the management API's stats show the seeded counts, so a
 * listing right after the seed is accurate.
 *
 * @param amqpUrl e.g. `amqp://guest:guest@127.0.0.1:5672` (vhost from the path, default `/`)
 * @param managementUrl e.g. `http://127.0.0.1:15672` (same login as the AMQP URL)
 * @returns one human-readable line per queue seeded.
 * @throws Error when the broker is unreachable or dead-lettering does not happen within 15 s.
 */
export async function seedRabbitmq(amqpUrl: string, managementUrl: string): Promise<string[]> {
  const conn = await connect(amqpUrl, { noDelay: true });
  conn.on('error', () => undefined);
  try {
    const ch = await conn.createConfirmChannel();
    ch.on('error', () => undefined);
    const lines = await seed(ch);
    await waitForStats(amqpUrl, managementUrl);
    await ch.close();
    return lines;
  } finally {
    await conn.close().catch(() => undefined);
  }
}

const QUEUES = ['orders.work', 'orders.dlq', 'notifications', 'invoices.work', 'invoices.dlq'] as const;
const EXCHANGES = ['orders.dlx', 'invoices.dlx'] as const;
const MAX_ATTEMPTS = 3;
const DELIVERY_LIMIT = 3;


interface Outgoing {
  body: Buffer;
  options: Options.Publish;
}

/** One order message in one of five styles (cycling so every style appears). */
function orderMessage(n: number, r: () => number, prefix = 'A'): Outgoing {
  const orderId = `${prefix}-${1001 + n}`;
  const op = (['charge', 'capture', 'refund', 'ship'] as const)[n % 4]!;
  const requestId = `req-${(n * 7919 + (prefix === 'A' ? 0 : 13)).toString(16).padStart(6, '0')}`;
  const headers: Record<string, unknown> = { 'x-request-id': requestId };
  const options: Options.Publish = { persistent: true, contentType: 'application/json', timestamp: Math.floor(Date.now() / 1000), appId: 'checkout-service', headers };
  let body: Record<string, unknown>;
  switch (n % 5) {
    case 0: // good: business-derived idempotency key as the AMQP message id, IDs only
      options.messageId = `${orderId}:${op}`;
      body = { type: `order.${op}`, orderId, amountCents: 1000 + Math.floor(r() * 9000) };
      break;
    case 1: // missing idempotency key
      body = { type: `order.${op}`, orderId, amountCents: 1000 + Math.floor(r() * 9000) };
      break;
    case 2: {
      // random UUID as the key: a producer retry gets a new key, so duplicates are not caught
      const key = randomUUID();
      options.messageId = key;
      headers['Idempotency-Key'] = key;
      body = { type: `order.${op}`, orderId, idempotencyKey: key };
      break;
    }
    case 3: // ID-only message, key in a header
      headers['Idempotency-Key'] = `${orderId}:${op}`;
      body = { orderId };
      break;
    default: // embeds the full mutable order (stale by the time it is processed)
      body = { type: 'order.updated', order: fullOrder(orderId, r) };
  }
  return { body: Buffer.from(JSON.stringify(body)), options };
}

async function recreate(ch: ConfirmChannel): Promise<void> {
  for (const q of QUEUES) await ch.deleteQueue(q);
  for (const e of EXCHANGES) await ch.deleteExchange(e);
  await ch.assertExchange('orders.dlx', 'direct', { durable: true });
  await ch.assertQueue('orders.dlq', { durable: true });
  await ch.bindQueue('orders.dlq', 'orders.dlx', 'orders.dlq');
  await ch.assertQueue('orders.work', { durable: true, arguments: { 'x-queue-type': 'classic', 'x-dead-letter-exchange': 'orders.dlx', 'x-dead-letter-routing-key': 'orders.dlq' } });
  await ch.assertQueue('notifications', { durable: true, arguments: { 'x-queue-type': 'classic', 'x-message-ttl': 3_600_000 } });
  await ch.assertExchange('invoices.dlx', 'fanout', { durable: true });
  await ch.assertQueue('invoices.dlq', { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await ch.bindQueue('invoices.dlq', 'invoices.dlx', '');
  await ch.assertQueue('invoices.work', { durable: true, arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': DELIVERY_LIMIT, 'x-dead-letter-exchange': 'invoices.dlx' } });
}

async function publishAll(ch: ConfirmChannel, queue: string, msgs: Outgoing[]): Promise<void> {
  for (const m of msgs) ch.sendToQueue(queue, m.body, m.options);
  await ch.waitForConfirms();
}

async function waitForCount(ch: ConfirmChannel, queue: string, expected: number, what: string): Promise<void> {
  const until = Date.now() + 15_000;
  while ((await ch.checkQueue(queue)).messageCount < expected) {
    if (Date.now() > until) throw new Error(`RabbitMQ did not ${what} within 15 s`);
    await sleep(20);
  }
}

type Failure = { kind: 'non-retryable'; error: string } | { kind: 'retryable'; error: (attempt: number) => string };

const FAILURES: Failure[] = [
  { kind: 'non-retryable', error: 'HTTP 422 Unprocessable Entity from payments-api: amountCents must be positive' },
  { kind: 'retryable', error: (a) => `HTTP 503 Service Unavailable from payments-api (attempt ${a})` },
  { kind: 'non-retryable', error: 'HTTP 404 Not Found from orders-api: order does not exist' },
  { kind: 'retryable', error: (a) => `ETIMEDOUT calling inventory-service after 5000 ms (attempt ${a})` },
  { kind: 'non-retryable', error: 'HTTP 400 Bad Request from ledger: currency missing' },
];

/**
 * A failing consumer on `orders.work`: records each failure on the message by republishing it with
 * `x-last-error` / `x-attempts` (and acking the original), then rejects it with requeue=false once the
 * failure is non-retryable or the attempts are used up — RabbitMQ dead-letters it to `orders.dlq`.
 */
async function failOrders(ch: ConfirmChannel, plan: Map<string, Failure>): Promise<void> {
  await ch.prefetch(50);
  const { consumerTag } = await ch.consume(
    'orders.work',
    (m: ConsumeMessage | null) => {
      if (!m) return;
      const headers = (m.properties.headers ?? {}) as Record<string, unknown>;
      const failure = plan.get(String(headers['x-request-id']));
      if (!failure) return ch.nack(m, false, true);
      const attempts = typeof headers['x-attempts'] === 'number' ? headers['x-attempts'] : 0;
      const recorded = typeof headers['x-last-error'] === 'string';
      if (recorded && (failure.kind === 'non-retryable' || attempts >= MAX_ATTEMPTS)) return ch.reject(m, false);
      const attempt = attempts + 1;
      const { headers: _old, ...props } = m.properties as unknown as Record<string, unknown>;
      const options = Object.fromEntries(Object.entries(props).filter(([, v]) => v !== undefined)) as Options.Publish;
      ch.sendToQueue('orders.work', m.content, {
        ...options,
        headers: { ...headers, 'x-attempts': attempt, 'x-last-error': failure.kind === 'retryable' ? failure.error(attempt) : failure.error, 'x-failed-at': new Date().toISOString() },
      });
      ch.ack(m);
    },
    { noAck: false },
  );
  await waitForCount(ch, 'orders.dlq', plan.size, `dead-letter ${plan.size} orders`);
  await ch.cancel(consumerTag);
}

/** A poison consumer on the quorum `invoices.work`: requeues until the delivery limit dead-letters. */
async function poisonInvoices(ch: ConfirmChannel, expected: number): Promise<void> {
  await ch.prefetch(20);
  const { consumerTag } = await ch.consume(
    'invoices.work',
    (m) => {
      if (m) ch.nack(m, false, true);
    },
    { noAck: false },
  );
  await waitForCount(ch, 'invoices.dlq', expected, `dead-letter ${expected} invoices at x-delivery-limit ${DELIVERY_LIMIT}`);
  await ch.cancel(consumerTag);
}

async function seed(ch: ConfirmChannel): Promise<string[]> {
  const r = rng(20261130);
  await recreate(ch);

  // --- orders.work → orders.dlx → orders.dlq -------------------------------------------
  const failing = Array.from({ length: 15 }, (_, i) => orderMessage(i, r));
  const plan = new Map<string, Failure>();
  failing.forEach((m, i) => plan.set(String((m.options.headers as Record<string, unknown>)['x-request-id']), FAILURES[i % FAILURES.length]!));
  await publishAll(ch, 'orders.work', failing);
  await failOrders(ch, plan);
  await publishAll(
    ch,
    'orders.work',
    Array.from({ length: 25 }, (_, i) => orderMessage(100 + i, r)),
  );
  const kinds = [...plan.values()].reduce<Record<string, number>>((acc, f) => {
    const k = f.kind === 'retryable' ? `${MAX_ATTEMPTS} retryable failures` : (f.error.split(' from ')[0] ?? f.error);
    acc[k] = (acc[k] ?? 0) + 1;
    return acc;
  }, {});

  // --- notifications: TTL, no DLX -------------------------------------------------------
  await publishAll(
    ch,
    'notifications',
    Array.from({ length: 12 }, (_, i) => ({
      body: Buffer.from(JSON.stringify({ type: 'email.send', template: 'order-confirmation', orderId: `A-${1101 + i}`, to: 'buyer@example.com' })),
      options: { persistent: true, contentType: 'application/json', ...(i % 2 === 0 ? { messageId: `A-${1101 + i}:email-confirmation` } : {}) },
    })),
  );

  // --- invoices.work (quorum, delivery limit) → invoices.dlx → invoices.dlq ------------
  await publishAll(
    ch,
    'invoices.work',
    Array.from({ length: 5 }, (_, i) => orderMessage(200 + i, r, 'INV')),
  );
  await poisonInvoices(ch, 5);
  await publishAll(
    ch,
    'invoices.work',
    Array.from({ length: 10 }, (_, i) => orderMessage(300 + i, r, 'INV')),
  );
  // One failed delivery for three of them, so x-delivery-count shows up in a peek.
  const held = [];
  for (let i = 0; i < 3; i++) {
    const m = await ch.get('invoices.work', { noAck: false });
    if (m) held.push(m);
  }
  for (const m of held) ch.nack(m, false, true);
  await waitForCount(ch, 'invoices.work', 10, 'requeue 3 invoices');

  return [
    `orders.work (classic, durable): 25 ready; 15 dead-lettered via orders.dlx to orders.dlq by a consumer that rejects (requeue=false): ${Object.entries(kinds)
      .map(([k, n]) => `${k} ×${n}`)
      .join(', ')}`,
    'orders.dlq (classic): 15 dead letters with x-death (rejected), x-last-error, x-attempts, x-request-id',
    'notifications (classic): 12 ready, x-message-ttl 1 h and no dead-letter exchange (expired messages are dropped)',
    `invoices.work (quorum, x-delivery-limit ${DELIVERY_LIMIT}): 10 ready (3 with x-delivery-count 1); 5 dead-lettered at the delivery limit via invoices.dlx to invoices.dlq`,
    'invoices.dlq (quorum): 5 dead letters with x-death (delivery_limit)',
  ];
}

/** Waits until the management API reports the seeded ready counts (its stats lag AMQP by 5–10 s for recreated queues). */
async function waitForStats(amqpUrl: string, managementUrl: string): Promise<void> {
  const u = new URL(amqpUrl);
  const user = u.username === '' ? 'guest' : decodeURIComponent(u.username);
  const pass = u.password === '' && u.username === '' ? 'guest' : decodeURIComponent(u.password);
  const vhost = u.pathname.length > 1 ? decodeURIComponent(u.pathname.slice(1)) : '/';
  const expected: Record<string, number> = { 'orders.work': 25, 'orders.dlq': 15, notifications: 12, 'invoices.work': 10, 'invoices.dlq': 5 };
  const auth = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    try {
      const res = await fetch(`${managementUrl.replace(/\/$/, '')}/api/queues/${encodeURIComponent(vhost)}?columns=name,messages_ready`, { headers: { authorization: auth }, signal: AbortSignal.timeout(3000) });
      const items = (await res.json()) as { name: string; messages_ready?: number }[];
      if (Object.entries(expected).every(([n, c]) => items.find((q) => q.name === n)?.messages_ready === c)) return;
    } catch {
      return; // no management API: nothing to wait for
    }
    await sleep(250);
  }
}
