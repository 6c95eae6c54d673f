import { createAdapter } from '../../core/adapters';
import type { BrokerAdapter } from '../../core/adapters/types';
import { SnapshotWriter } from '../../core/snapshot/writer';
import { describeConnection, parseConnectionUrl, type ConnectionConfig } from '../../shared/domain';

/** Queues the demo snapshot takes from the seeded brokers (names as the seeds create them). */
const DEMO_QUEUES: Record<'redis' | 'rabbitmq' | 'sqs', string[]> = {
  redis: ['payments', 'orders-stream', 'emails:outbox'],
  rabbitmq: ['orders.work', 'orders.dlq', 'invoices.work', 'notifications'],
  sqs: ['orders', 'orders-dlq', 'payments.fifo', 'payments-dlq.fifo', 'emails'],
};

/** Messages per queue state written to the demo. */
const PER_STATE = 60;

/**
 * Writes the bundled demo snapshot from the seeded local brokers: one section per seeded queue
 * (every peek state of it), read through the real adapters. Peeks on RabbitMQ and SQS are
 * accepted here (they are our own seeded demo queues).
 */
export async function buildDemoSnapshot(
  path: string,
  env: { redisUrl: string; amqpUrl: string; managementUrl: string; sqsEndpoint: string },
): Promise<string[]> {
  const configs: Array<[keyof typeof DEMO_QUEUES, ConnectionConfig]> = [
    ['redis', parseConnectionUrl(env.redisUrl)],
    ['rabbitmq', { ...parseConnectionUrl(env.amqpUrl), managementUrl: env.managementUrl } as ConnectionConfig],
    ['sqs', { kind: 'sqs', region: 'us-east-1', endpoint: env.sqsEndpoint }],
  ];
  const writer = await SnapshotWriter.create(path, { overwrite: true });
  const lines: string[] = [];
  try {
    for (const [kind, config] of configs) {
      const adapter: BrokerAdapter = createAdapter(config);
      try {
        const queues = await adapter.listQueues({});
        for (const name of DEMO_QUEUES[kind]) {
          const q = queues.find((x) => x.name === name);
          if (q === undefined) {
            lines.push(`${kind} ${name}: not found — run the seed first`);
            continue;
          }
          await writer.writeHeader({ exportedAt: Date.now(), source: { broker: config.kind, connection: describeConnection(config), queue: q } });
          const states = q.capabilities.peekStates.length > 0 ? q.capabilities.peekStates.filter((s) => !s.startsWith('pending:') && s !== 'all') : [undefined];
          let n = 0;
          for (const state of states.length > 0 ? states : [undefined]) {
            const limit = Math.min(PER_STATE, q.capabilities.maxPeekWindow);
            const page = await adapter.peek(q.id, { limit, acceptSideEffects: true, ...(state === undefined ? {} : { state }) });
            for (const m of page.messages) await writer.writeMessage(m);
            n += page.messages.length;
          }
          lines.push(`${kind} ${name}: ${n} messages`);
        }
      } finally {
        await adapter.close();
      }
    }
    const result = await writer.finish();
    lines.push(`wrote ${result.messages} messages in ${result.sections} sections, ${result.bytes} bytes`);
    return lines;
  } catch (e) {
    await writer.abort();
    throw e;
  }
}
