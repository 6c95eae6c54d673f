import { afterAll, describe, expect, it } from 'vitest';
import { connect } from 'amqplib';
import { createRabbitmqAdapter } from '../../core/adapters/rabbitmq';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, uniqueName } from './env';
import { closeNative, nativeChannel } from './rabbitmq-native';

/**
 * RabbitMQ tuning on the real broker: Little's law from the management API while a consumer with
 * a known service time (200 ms, prefetch = concurrency = 4) drains a backlog.
 */
const SERVICE_MS = 200;
const CONCURRENCY = 4;
const adapter = createRabbitmqAdapter({ kind: 'rabbitmq', url: AMQP_URL, managementUrl: RABBITMQ_MANAGEMENT_URL });
const cleanups: (() => Promise<unknown>)[] = [];

afterAll(async () => {
  await adapter.close();
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await closeNative();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe("RabbitMQ Little's law", () => {
  it('mean time in flight within ±25 % of 200 ms; settings name the version and node-only consumer_timeout on 3.10', async () => {
    const name = uniqueName('tune');
    const ch = await nativeChannel();
    await ch.assertQueue(name, { durable: false, arguments: { 'x-consumer-timeout': 5000 } });
    cleanups.push(async () => {
      const c = await nativeChannel();
      await c.deleteQueue(name);
      await c.close();
    });
    for (let i = 0; i < 800; i++) ch.sendToQueue(name, Buffer.from(JSON.stringify({ orderId: `A-${i}` })));
    await ch.waitForConfirms();
    await ch.close();

    const conn = await connect(AMQP_URL, { noDelay: true });
    cleanups.push(() => conn.close());
    const wch = await conn.createChannel();
    await wch.prefetch(CONCURRENCY);
    await wch.consume(name, (msg) => {
      if (!msg) return;
      setTimeout(() => wch.ack(msg), SERVICE_MS);
    });
    await sleep(3000); // let the management stats see the consumer working

    const queueId = `rabbitmq:%2F/${encodeURIComponent(name)}`;
    const sources = await adapter.tuning!.sources(queueId);
    expect(sources[0]).toMatchObject({ source: 'littles-law', confidence: 'mean-only' });
    const fractions: number[] = [];
    const m = await adapter.tuning!.measure(queueId, 'littles-law', { windowMs: 25_000, onProgress: (p) => fractions.push(p.fraction) });
    expect(m.meanMs).not.toBeNull();
    expect(Math.abs(m.meanMs! - SERVICE_MS) / SERVICE_MS).toBeLessThan(0.25);
    expect(m.samplesMs).toEqual([]);
    expect(m.redeliveries?.redelivered ?? 0).toBe(0);
    expect(fractions[fractions.length - 1]).toBe(1);

    const s = await adapter.tuning!.readSettings(queueId);
    const version = s.brokerVersion ?? '';
    expect(version).toMatch(/^\d+\.\d+/);
    if (version.startsWith('3.10.')) {
      expect(s.perQueueTimeoutSupported).toBe(false);
      // the argument is accepted but ignored on 3.10: the default node value applies, and we say so
      expect(s.timeoutMs).toBe(1_800_000);
      expect(s.notes.join(' ')).toMatch(/ignores per-queue consumer timeouts/);
    }
  });

  it('an unknown queue is QUEUE_NOT_FOUND', async () => {
    await expect(adapter.tuning!.readSettings(`rabbitmq:%2F/${uniqueName('none')}`)).rejects.toMatchObject({ code: 'QUEUE_NOT_FOUND' });
  });
});
