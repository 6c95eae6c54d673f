import { afterAll } from 'vitest';
import { createRabbitmqAdapter } from '../../core/adapters/rabbitmq';
import { runAdapterContract, type ContractHarness } from './adapter-contract';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, uniqueName } from './env';

// ---- native fixtures: test/integration/rabbitmq-native.ts ----
import { closeNative, nativeChannel, nativeCount, nativeDeleteQueue } from './rabbitmq-native';

/** Messages in a stream: consumes from `first` until nothing arrives for 500 ms. */
async function nativeStreamCount(name: string): Promise<number> {
  const ch = await nativeChannel();
  await ch.prefetch(1000);
  let n = 0;
  await new Promise<void>((resolve) => {
    let t = setTimeout(resolve, 1000);
    void ch.consume(
      name,
      (m) => {
        if (!m) return;
        n++;
        ch.ack(m);
        clearTimeout(t);
        t = setTimeout(resolve, 500);
      },
      { noAck: false, arguments: { 'x-stream-offset': 'first' } },
    );
  });
  await ch.close().catch(() => undefined);
  return n;
}

/**
 * The shared adapter contract against the real RabbitMQ, once per queue type: classic, quorum
 * (peeks add to x-delivery-count, so the suite passes `acceptSideEffects`; no delivery limit is
 * set, so nothing can be dead-lettered) and stream (non-destructive, offset cursors).
 * Fixtures are published with amqplib on a confirm channel.
 */
afterAll(closeNative);

const adapter = () => Promise.resolve(createRabbitmqAdapter({ kind: 'rabbitmq', url: AMQP_URL, managementUrl: RABBITMQ_MANAGEMENT_URL }));
const unreachable = () => Promise.resolve(createRabbitmqAdapter({ kind: 'rabbitmq', url: 'amqp://guest:guest@127.0.0.1:1', managementUrl: 'http://127.0.0.1:2' }));

function harness(type: 'classic' | 'quorum' | 'stream'): ContractHarness {
  return {
    name: `rabbitmq-${type}`,
    createAdapter: adapter,
    async createQueueWithMessages(bodies, headers) {
      const name = uniqueName(`rmq-${type}`);
      const ch = await nativeChannel();
      await ch.assertQueue(name, { durable: true, arguments: { 'x-queue-type': type } });
      for (const b of bodies) ch.sendToQueue(name, Buffer.from(b), { persistent: true, ...(headers ? { headers } : {}) });
      await ch.waitForConfirms();
      await ch.close();
      return { queueId: `rabbitmq:%2F/${encodeURIComponent(name)}`, name };
    },
    countMessages: type === 'stream' ? nativeStreamCount : nativeCount,
    deleteQueue: nativeDeleteQueue,
    ...(type === 'quorum' ? { peekOptions: { acceptSideEffects: true } } : {}),
    supportsHeaders: true,
    createUnreachableAdapter: unreachable,
  };
}

runAdapterContract(harness('classic'));
runAdapterContract(harness('quorum'));
runAdapterContract(harness('stream'));
