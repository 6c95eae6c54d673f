/**
 * Benchmark: list 1,000 RabbitMQ queues through the adapter (target < 2 s).
 * Creates 1,000 classic queues with pipelined declares on one channel, times `listQueues` twice
 * (cold: first management API request and AMQP-free path; warm: keep-alive sockets), then
 * deletes the queues. Env: AMQP_URL, RABBITMQ_MANAGEMENT_URL.
 */
import { randomBytes } from 'node:crypto';
import { connect } from 'amqplib';
import { createRabbitmqAdapter } from '../core/adapters/rabbitmq';

const QUEUES = 1000;

/**
 * @returns one row per timed listing: `queues` is how many queues the listing returned (the
 *   1,000 created plus any others in the vhost), `seconds` the wall time of `listQueues`.
 * @throws Error when the listing misses created queues.
 */
export async function benchRabbitmqList(): Promise<Array<{ name: string; queues: number; seconds: number }>> {
  const amqpUrl = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
  const managementUrl = process.env.RABBITMQ_MANAGEMENT_URL ?? 'http://127.0.0.1:15672';
  const prefix = `qs-bench-${randomBytes(3).toString('hex')}`;
  const names = Array.from({ length: QUEUES }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);
  const conn = await connect(amqpUrl, { noDelay: true });
  conn.on('error', () => undefined);
  const ch = await conn.createChannel();
  const adapter = createRabbitmqAdapter({ kind: 'rabbitmq', url: amqpUrl, managementUrl });
  const rows: Array<{ name: string; queues: number; seconds: number }> = [];
  try {
    // Pipelined: all declares are written before the first reply is awaited.
    await Promise.all(names.map((n, i) => ch.assertQueue(n, { durable: false, arguments: i % 10 === 0 ? { 'x-queue-type': 'classic', 'x-message-ttl': 60_000 } : {} })));
    for (const label of ['list 1,000 RabbitMQ queues (first call)', 'list 1,000 RabbitMQ queues (second call)']) {
      const t0 = performance.now();
      const listed = await adapter.listQueues({});
      const seconds = (performance.now() - t0) / 1000;
      const mine = listed.filter((q) => q.name.startsWith(prefix)).length;
      if (mine !== QUEUES) throw new Error(`listQueues returned ${mine} of the ${QUEUES} benchmark queues`);
      rows.push({ name: label, queues: listed.length, seconds });
    }
  } finally {
    await Promise.all(names.map((n) => ch.deleteQueue(n).catch(() => undefined)));
    await adapter.close();
    await conn.close().catch(() => undefined);
  }
  return rows;
}
