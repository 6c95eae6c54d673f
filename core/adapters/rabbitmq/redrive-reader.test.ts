import type { Channel, ConsumeMessage } from 'amqplib';
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { DlqReader } from './redrive-reader';

/**
 * The reader's waiting rules, on a stand-in channel whose deliveries come when the test says (a
 * real broker cannot be made slow on purpose; redrive-cli-fault.test.ts covers the reader on a
 * real, loaded RabbitMQ).
 */
function slowChannel(opts: { deliverAfterMs: number; count: number; ready: () => number }): { ch: Channel; checks: () => number } {
  const ee = new EventEmitter();
  let checks = 0;
  const ch = Object.assign(ee, {
    prefetch: () => Promise.resolve(),
    consume: (_q: string, onMessage: (m: ConsumeMessage | null) => void) => {
      setTimeout(() => {
        for (let i = 0; i < opts.count; i++) onMessage({ content: Buffer.from(String(i)), fields: { deliveryTag: i + 1 }, properties: {} } as unknown as ConsumeMessage);
      }, opts.deliverAfterMs);
      return Promise.resolve({ consumerTag: 'c1' });
    },
    cancel: () => Promise.resolve(),
    checkQueue: () => {
      checks++;
      return Promise.resolve({ queue: 'q', messageCount: opts.ready(), consumerCount: 1 });
    },
  });
  return { ch: ch as unknown as Channel, checks: () => checks };
}

describe('DlqReader.read', () => {
  it('waits on while the broker counts ready messages it is slow to deliver (was: empty after 1 s, which ended a redrive early)', async () => {
    const { ch, checks } = slowChannel({ deliverAfterMs: 2_500, count: 3, ready: () => 3 });
    const got = await new DlqReader(ch, 'q', '/').read(10);
    expect(got).toHaveLength(3);
    expect(checks()).toBeGreaterThanOrEqual(2);
  });

  it('calls the queue empty after 1 s when the broker counts no ready message', async () => {
    const { ch, checks } = slowChannel({ deliverAfterMs: 60_000, count: 1, ready: () => 0 });
    const t0 = performance.now();
    const got = await new DlqReader(ch, 'q', '/').read(10);
    expect(got).toHaveLength(0);
    expect(checks()).toBe(1);
    expect(performance.now() - t0).toBeLessThan(5_000);
  });
});
