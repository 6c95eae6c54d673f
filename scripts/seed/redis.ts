/**
 * Demo data for Redis, made through the real mechanisms:
 *
 * - BullMQ queue `payments` (prefix `bull`): a Worker really processes charges. Transient failures
 *   (`ETIMEDOUT …`, `HTTP 503 …`) are retried 3 times with exponential backoff and end in the failed
 *   set; non-retryable ones (`HTTP 422 …`, `HTTP 404 …`) throw BullMQ's `UnrecoverableError` and go
 *   straight to failed; some charges succeed after one retry. Waiting and delayed jobs are left behind,
 *   one of them a failed charge sent again under the same key (a retry of the failed one would charge twice).
 * - Stream `orders-stream` with consumer group `billing`: `worker-1` read entries and "crashed"
 *   (never acknowledged: stranded pending entries), `worker-2` read and acknowledged some, the rest is unread.
 * - List `emails:outbox`: messages LPUSHed by a producer (the oldest is at the right end).
 *
 * Payloads mix the patterns the product teaches about: sender-derived idempotency keys
 * (`A-1001:charge`), missing keys, random-UUID keys (a new key per send defeats deduplication),
 * ID-only messages and messages embedding a full mutable order.
 *
 * Idempotent: deletes only the keys it creates (the BullMQ queue via `obliterate`), never FLUSHDB.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';

const QUEUE = 'payments';
const STREAM = 'orders-stream';
const GROUP = 'billing';
const LIST = 'emails:outbox';

/** What the payment worker does with a charge, decided by the order as a real gateway would. */
type Outcome = 'ok' | 'flaky' | 'timeout' | 'unavailable' | 'invalid-amount' | 'no-customer';

interface Charge {
  orderId?: string;
  operation: 'charge' | 'refund';
  amountCents?: number;
  currency?: string;
  customerId?: string;
  idempotencyKey?: string;
  order?: Record<string, unknown>;
}

function fullOrder(id: string, customerId: string, amountCents: number): Record<string, unknown> {
  return {
    id,
    status: 'pending_payment',
    customerId,
    totalCents: amountCents,
    currency: 'EUR',
    shippingAddress: { name: 'Ana Souza', line1: 'Rua das Flores 12', city: 'Lisboa', postalCode: '1200-195', country: 'PT' },
    lineItems: [
      { sku: 'MUG-BLUE', quantity: 2, unitPriceCents: Math.floor(amountCents / 4) },
      { sku: 'TEE-M', quantity: 1, unitPriceCents: amountCents - 2 * Math.floor(amountCents / 4) },
    ],
    updated_at: new Date(Date.now() - 3_600_000).toISOString(),
  };
}

/** The charges added to `payments`, with what the gateway will do. */
function charges(): { data: Charge; outcome: Outcome; jobId?: string; name: string }[] {
  const list: { data: Charge; outcome: Outcome; jobId?: string; name: string }[] = [];
  const add = (n: number, outcome: Outcome, customerId = 'C-10'): void => {
    const i = 1001 + list.length;
    const orderId = `A-${i}`;
    const amountCents = outcome === 'invalid-amount' ? -500 : 1500 + ((i * 37) % 9000);
    // Rotate through the payload styles so every outcome shows each pattern.
    switch (list.length % 5) {
      case 0: // sender-derived idempotency key, and the job id derived from it (BullMQ ids cannot contain ':')
        list.push({ name: 'charge', outcome, jobId: `${orderId}-charge`, data: { orderId, operation: 'charge', amountCents, currency: 'EUR', customerId, idempotencyKey: `${orderId}:charge` } });
        break;
      case 1: // no idempotency key at all
        list.push({ name: 'charge', outcome, data: { orderId, operation: 'charge', amountCents, currency: 'EUR', customerId } });
        break;
      case 2: // a random UUID per send: a retry by the sender gets a new key, so duplicates slip through
        list.push({ name: 'charge', outcome, data: { orderId, operation: 'charge', amountCents, currency: 'EUR', customerId, idempotencyKey: randomUUID() } });
        break;
      case 3: // ID only: the worker loads the current order
        list.push({ name: 'charge', outcome, data: { orderId, operation: 'charge' } });
        break;
      default: // the whole mutable order embedded: stale by the time a retry runs
        list.push({ name: 'charge', outcome, data: { operation: 'charge', idempotencyKey: `${orderId}:charge`, order: fullOrder(orderId, customerId, amountCents) } });
    }
    if (n > 1) add(n - 1, outcome, customerId);
  };
  add(8, 'ok');
  add(2, 'flaky');
  add(4, 'timeout');
  add(4, 'unavailable');
  add(3, 'invalid-amount');
  add(3, 'no-customer', 'C-77');
  return list;
}

function etimedout(): Error {
  return Object.assign(new Error('ETIMEDOUT connect to api.payments.local:443'), { code: 'ETIMEDOUT' });
}

/**
 * Seeds Redis at `url` (also the db index in its path). Returns one line per thing created.
 * Finishes in a few seconds (backoff delays are tens of ms).
 * @throws when Redis is unreachable or the worker does not finish within 25 s.
 */
export async function seedRedis(url: string): Promise<string[]> {
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection: redis });
  const lines: string[] = [];
  let worker: Worker | undefined;
  try {
    // Only our own keys: the BullMQ queue's, the stream, the list.
    await queue.obliterate({ force: true });
    await redis.del(STREAM, LIST);

    // --- BullMQ: real processing with retries -----------------------------------------------------
    const plan = charges();
    const outcomeByOrder = new Map<string, Outcome>();
    for (const c of plan) outcomeByOrder.set(c.data.orderId ?? String(c.data.order?.id), c.outcome);
    worker = new Worker(
      QUEUE,
      async (job: Job<Charge>) => {
        await new Promise((r) => setTimeout(r, 5 + ((job.id?.length ?? 0) % 7))); // the call to the gateway
        const orderId = job.data.orderId ?? String(job.data.order?.id);
        switch (outcomeByOrder.get(orderId)) {
          case 'timeout':
            throw etimedout();
          case 'unavailable':
            throw new Error('HTTP 503 Service Unavailable');
          case 'flaky':
            if (job.attemptsMade === 0) throw new Error('HTTP 503 Service Unavailable');
            break;
          case 'invalid-amount':
            throw new UnrecoverableError('HTTP 422 Unprocessable Entity: amount must be positive');
          case 'no-customer':
            throw new UnrecoverableError(`HTTP 404 Not Found: customer ${job.data.customerId ?? 'C-77'} does not exist`);
          default:
            break;
        }
        return { chargeId: `ch_${orderId}`, status: 'succeeded' };
      },
      { connection: { url, maxRetriesPerRequest: null }, concurrency: 5 },
    );
    worker.on('error', () => undefined);
    await queue.addBulk(
      plan.map((c) => ({
        name: c.name,
        data: c.data,
        opts: { attempts: 3, backoff: { type: 'exponential', delay: 20 }, ...(c.jobId !== undefined ? { jobId: c.jobId } : {}) },
      })),
    );
    const deadline = Date.now() + 25_000;
    for (;;) {
      const c = await queue.getJobCounts('completed', 'failed');
      if ((c.completed ?? 0) + (c.failed ?? 0) >= plan.length) break;
      if (Date.now() > deadline) throw new Error(`the payments worker did not finish: ${JSON.stringify(c)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await worker.close();
    worker = undefined;

    // Left behind for a worker that is not running: waiting and delayed charges, one refund.
    await queue.add('charge', { orderId: 'A-2001', operation: 'charge', amountCents: 2599, currency: 'EUR', idempotencyKey: 'A-2001:charge' }, { jobId: 'A-2001-charge', attempts: 3 });
    await queue.add('charge', { orderId: 'A-2002', operation: 'charge' }, { attempts: 3 });
    await queue.add('charge', { orderId: 'A-2003', operation: 'charge', amountCents: 1200, idempotencyKey: randomUUID() }, { attempts: 3 });
    await queue.add('refund', { orderId: 'A-1003', operation: 'refund', amountCents: 1999, idempotencyKey: 'A-1003:refund' }, { jobId: 'A-1003-refund', attempts: 3 });
    await queue.add('charge', { operation: 'charge', order: fullOrder('A-2004', 'C-12', 4300) }, { attempts: 3 });
    // The shop re-sent a charge that had failed for good (same key): retrying the failed job as
    // well would charge twice. `inspect … --state failed` lists the shared key.
    const resent = (await queue.getFailed()).map((j) => j.data as Charge).find((d) => typeof d.orderId === 'string' && d.idempotencyKey === `${d.orderId}:charge`);
    if (resent !== undefined) await queue.add('charge', { ...resent }, { attempts: 3 });
    for (const [i, delayMin] of [30, 60, 120].entries()) {
      await queue.add('charge', { orderId: `A-30${i + 1}`, operation: 'charge', idempotencyKey: `A-30${i + 1}:charge` }, { delay: delayMin * 60_000, attempts: 3 });
    }
    const counts = await queue.getJobCounts('waiting', 'delayed', 'completed', 'failed');
    lines.push(
      `BullMQ queue bull:${QUEUE}: ${counts.completed} completed (${plan.filter((c) => c.outcome === 'flaky').length} after a retry), ${counts.failed} failed ` +
        `(ETIMEDOUT and HTTP 503 after 3 attempts; HTTP 422 and 404 at once, UnrecoverableError), ` +
        `${counts.waiting} waiting, ${counts.delayed} delayed`,
    );

    // --- Stream with a consumer group and a crashed consumer --------------------------------------
    const entries: [string, Charge][] = [
      ['order.created', { orderId: 'A-1001', operation: 'charge', amountCents: 4200, idempotencyKey: 'A-1001:charge' }],
      ['order.created', { orderId: 'A-1002', operation: 'charge' }],
      ['order.created', { orderId: 'A-1003', operation: 'charge', amountCents: 1999 }],
      ['order.updated', { operation: 'charge', order: fullOrder('A-1004', 'C-10', 3150) }],
      ['order.created', { orderId: 'A-1005', operation: 'charge', idempotencyKey: randomUUID() }],
      ['order.created', { orderId: 'A-1006', operation: 'charge', idempotencyKey: 'A-1006:charge' }],
      ['order.created', { orderId: 'A-1007', operation: 'charge' }],
      ['order.paid', { orderId: 'A-1001', operation: 'charge', idempotencyKey: 'A-1001:charge' }],
      ['order.created', { orderId: 'A-1008', operation: 'charge', amountCents: 800, idempotencyKey: 'A-1008:charge' }],
      ['order.updated', { operation: 'charge', order: fullOrder('A-1009', 'C-77', 990) }],
      ['order.created', { orderId: 'A-1010', operation: 'charge' }],
      ['order.created', { orderId: 'A-1011', operation: 'charge', idempotencyKey: randomUUID() }],
    ];
    for (const [type, payload] of entries) {
      await redis.xadd(STREAM, '*', 'type', type, 'payload', JSON.stringify(payload), 'source', 'checkout-api', 'traceId', randomUUID());
    }
    await redis.xgroup('CREATE', STREAM, GROUP, '0');
    // worker-2 reads three and acknowledges them.
    const reply = (await redis.xreadgroup('GROUP', GROUP, 'worker-2', 'COUNT', 3, 'STREAMS', STREAM, '>')) as [string, [string, string[]][]][] | null;
    const read2 = reply?.[0]?.[1] ?? [];
    if (read2.length > 0) await redis.xack(STREAM, GROUP, ...read2.map(([id]) => id));
    // worker-1 takes four and crashes before acknowledging: they stay pending, owned by it.
    await redis.xreadgroup('GROUP', GROUP, 'worker-1', 'COUNT', 4, 'STREAMS', STREAM, '>');
    lines.push(`stream ${STREAM}: ${entries.length} entries; group ${GROUP}: ${read2.length} acknowledged by worker-2, 4 pending on worker-1 (crashed, never acknowledged), ${entries.length - read2.length - 4} unread`);

    // --- List ---------------------------------------------------------------------------------------
    const emails = [
      { to: 'ana@example.com', template: 'receipt', orderId: 'A-1001', idempotencyKey: 'A-1001:receipt' },
      { to: 'bruno@example.com', template: 'payment-failed', orderId: 'A-1013' },
      { to: 'carla@example.com', template: 'receipt', order: fullOrder('A-1002', 'C-11', 2599) },
      { to: 'dev@example.com', template: 'welcome', idempotencyKey: randomUUID() },
    ];
    await redis.lpush(LIST, ...emails.map((e) => JSON.stringify(e)));
    lines.push(`list ${LIST}: ${emails.length} messages, LPUSHed (the oldest is at the right end)`);
    return lines;
  } finally {
    await worker?.close();
    await queue.close();
    redis.disconnect();
  }
}
