import { connect } from 'amqplib';
import { sleep } from './common';

/**
 * Extra demo cases for the redelivery-safety inspection (issue 3), added after the RabbitMQ seed:
 * the sender re-sent four orders whose first copies were dead-lettered to `orders.dlq` (same
 * business-derived idempotency keys, as AMQP `message_id` or an `Idempotency-Key` header, ID-only
 * bodies). So `orders.work` and its DLQ `orders.dlq` share duplicate keys: redriving the DLQ would
 * re-run those operations unless the handler checks the key.
 *
 * The keys match `orderMessage(n)` in rabbitmq.ts for n = 0, 3, 5, 8 (A-1001:charge as message
 * id, A-1004:ship as header, A-1006:capture as message id, A-1009:charge as header).
 *
 * @returns one human-readable line.
 * @throws Error when the broker is unreachable or `orders.work` does not exist (run the RabbitMQ seed first).
 */
export async function seedInspectCases(amqpUrl: string, managementUrl: string): Promise<string[]> {
  const resends: { orderId: string; op: string; via: 'messageId' | 'header' }[] = [
    { orderId: 'A-1001', op: 'charge', via: 'messageId' },
    { orderId: 'A-1004', op: 'ship', via: 'header' },
    { orderId: 'A-1006', op: 'capture', via: 'messageId' },
    { orderId: 'A-1009', op: 'charge', via: 'header' },
  ];
  const conn = await connect(amqpUrl, { noDelay: true });
  conn.on('error', () => undefined);
  let ready: number;
  try {
    const ch = await conn.createConfirmChannel();
    ch.on('error', () => undefined);
    await ch.checkQueue('orders.work');
    for (const r of resends) {
      const key = `${r.orderId}:${r.op}`;
      const headers: Record<string, unknown> = { 'x-request-id': `req-resend-${r.orderId}`, 'x-resent': 'true' };
      if (r.via === 'header') headers['Idempotency-Key'] = key;
      ch.sendToQueue('orders.work', Buffer.from(JSON.stringify({ type: `order.${r.op}`, orderId: r.orderId })), {
        persistent: true,
        contentType: 'application/json',
        appId: 'checkout-service',
        timestamp: Math.floor(Date.now() / 1000),
        headers,
        ...(r.via === 'messageId' ? { messageId: key } : {}),
      });
    }
    await ch.waitForConfirms();
    ready = (await ch.checkQueue('orders.work')).messageCount;
    await ch.close();
  } finally {
    await conn.close().catch(() => undefined);
  }
  await waitForReady(amqpUrl, managementUrl, 'orders.work', ready);
  return [`orders.work: ${resends.length} re-sent orders sharing idempotency keys with dead letters in orders.dlq (${resends.map((r) => `${r.orderId}:${r.op}`).join(', ')}); ${ready} ready`];
}

/** Waits (≤ 15 s) until the management API shows `expected` ready messages (its stats lag AMQP by seconds). */
async function waitForReady(amqpUrl: string, managementUrl: string, queue: string, expected: number): Promise<void> {
  const u = new URL(amqpUrl);
  const user = u.username === '' ? 'guest' : decodeURIComponent(u.username);
  const pass = u.password === '' && u.username === '' ? 'guest' : decodeURIComponent(u.password);
  const vhost = u.pathname.length > 1 ? decodeURIComponent(u.pathname.slice(1)) : '/';
  const auth = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    try {
      const res = await fetch(`${managementUrl.replace(/\/$/, '')}/api/queues/${encodeURIComponent(vhost)}/${encodeURIComponent(queue)}?columns=name,messages_ready`, { headers: { authorization: auth }, signal: AbortSignal.timeout(3000) });
      const q = (await res.json()) as { messages_ready?: number };
      if (q.messages_ready === expected) return;
    } catch {
      return; // no management API: nothing to wait for
    }
    await sleep(250);
  }
}
