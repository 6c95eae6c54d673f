import { afterAll, describe, expect, it } from 'vitest';
import { connect } from 'amqplib';
import { createRabbitmqAdapter } from '../../core/adapters/rabbitmq';
import { tuneQueue } from '../../core/tuning';
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
  it('mean time in flight (35 s window) within ±25 % of the worker\'s own mean; settings name the version and node-only consumer_timeout on 3.10', async () => {
    const name = uniqueName('tune');
    const ch = await nativeChannel();
    await ch.assertQueue(name, { durable: false, arguments: { 'x-consumer-timeout': 5000 } });
    cleanups.push(async () => {
      const c = await nativeChannel();
      await c.deleteQueue(name);
      await c.close();
    });
    for (let i = 0; i < 1200; i++) ch.sendToQueue(name, Buffer.from(JSON.stringify({ orderId: `A-${i}` })));
    await ch.waitForConfirms();
    await ch.close();

    const conn = await connect(AMQP_URL, { noDelay: true });
    cleanups.push(() => conn.close());
    const wch = await conn.createChannel();
    await wch.prefetch(CONCURRENCY);
    // the worker times itself: under load a 200 ms timer fires late, and that delay is real time in flight
    const selfTimed: { ackedAt: number; ms: number }[] = [];
    // Set once measured: timers still pending then must not ack on a channel that teardown closed.
    let stopped = false;
    await wch.consume(name, (msg) => {
      if (!msg) return;
      const t0 = performance.now();
      setTimeout(() => {
        if (stopped) return;
        wch.ack(msg);
        const now = performance.now();
        selfTimed.push({ ackedAt: now, ms: now - t0 });
      }, SERVICE_MS);
    });
    await sleep(3000); // let the management stats see the consumer working

    const queueId = `rabbitmq:%2F/${encodeURIComponent(name)}`;
    const sources = await adapter.tuning!.sources(queueId);
    expect(sources[0]).toMatchObject({ source: 'littles-law', confidence: 'mean-only' });
    const fractions: number[] = [];
    const windowStart = performance.now();
    const report = await tuneQueue(adapter, queueId, { source: 'littles-law', windowMs: 35_000, onProgress: (p) => fractions.push(p.fraction) });
    stopped = true; // the unacked deliveries go back to the queue when the connection closes
    const inWindow = selfTimed.filter((x) => x.ackedAt >= windowStart);
    const workerMeanMs = inWindow.reduce((sum, x) => sum + x.ms, 0) / inWindow.length;
    const m = report.measurement;
    expect(m.meanMs).not.toBeNull();
    expect(inWindow.length).toBeGreaterThan(100);
    // Little's law against what the worker measured over the same window (the management API's
    // rates are 5 s samples, so the tolerance stays ±25 %)
    expect(Math.abs(m.meanMs! - workerMeanMs) / workerMeanMs, `Little's law ${m.meanMs!.toFixed(1)} ms, worker ${workerMeanMs.toFixed(1)} ms`).toBeLessThan(0.25);
    expect(m.samplesMs).toEqual([]);
    expect(m.redeliveries?.redelivered ?? 0).toBe(0);
    expect(fractions[fractions.length - 1]).toBe(1);

    // mean only: p99 ≈ ln(100) × mean ≈ 0.9 s, × 3 ≈ 2.8 s — below RabbitMQ's one-minute check, so 60 s
    expect(report.recommendation).toMatchObject({ basis: 'mean-exponential', recommendedMs: 60_000, clamped: 'min', setting: 'consumer_timeout' });
    expect(report.recommendation!.basisMs).toBeCloseTo(m.meanMs! * Math.log(100), 6);
    expect(report.stats).toBeNull();
    const s = await adapter.tuning!.readSettings(queueId);
    const version = s.brokerVersion ?? '';
    expect(version).toMatch(/^\d+\.\d+/);
    if (version.startsWith('3.10.')) {
      expect(s.perQueueTimeoutSupported).toBe(false);
      // the argument is accepted but ignored on 3.10: the default node value applies, and we say so
      expect(s.timeoutMs).toBe(1_800_000);
      expect(s.notes.join(' ')).toMatch(/ignores per-queue consumer timeouts/);
      expect(report.recommendation!.snippets.map((x) => x.text)).toEqual(['# rabbitmq.conf (node-wide; restart the node)\nconsumer_timeout = 60000']);
      // the default 30 min: an exponential tail with a 200 ms mean essentially never reaches it
      expect(report.recommendation!.current!.duplicateMethod).toBe('exponential-assumption');
    }
  });

  it('an unknown queue is QUEUE_NOT_FOUND', async () => {
    await expect(adapter.tuning!.readSettings(`rabbitmq:%2F/${uniqueName('none')}`)).rejects.toMatchObject({ code: 'QUEUE_NOT_FOUND' });
  });
});
