import { describe, expect, it } from 'vitest';
import { buildReport, recommend, roundUpToStep } from './recommend';
import { rabbitPerQueueTimeout } from './brokers';
import { seededRandom } from './retry';
import type { CurrentSettings, Measurement } from './types';

const ctx = { queueName: 'orders', queueUrl: 'http://127.0.0.1:4566/000000000000/orders' };

function current(partial: Partial<CurrentSettings>): CurrentSettings {
  return { target: 'sqs', timeoutMs: 30_000, timeoutSource: 'queue attribute', maxReceiveCount: null, deadLetterTarget: null, brokerVersion: null, perQueueTimeoutSupported: null, retryPolicy: null, notes: [], ...partial };
}

describe('recommend (ms)', () => {
  it('rounding steps', () => {
    expect(roundUpToStep(610)).toEqual({ valueMs: 700, stepMs: 100 });
    expect(roundUpToStep(2_100)).toEqual({ valueMs: 3000, stepMs: 1000 });
    expect(roundUpToStep(41_000)).toEqual({ valueMs: 45_000, stepMs: 5000 });
    expect(roundUpToStep(200_000)).toEqual({ valueMs: 210_000, stepMs: 30_000 });
  });

  it('SQS, 1..1000 ms uniform: p99 990 × 3 = 2,970 ms → 3 s (whole seconds)', () => {
    const r = recommend({ target: 'sqs', samplesMs: Array.from({ length: 1000 }, (_, i) => i + 1), snippet: ctx })!;
    expect(r.basis).toBe('p99');
    expect(r.basisMs).toBe(990);
    expect(r.rawMs).toBe(2970);
    expect(r.recommendedMs).toBe(3000);
    expect(r.clamped).toBeNull();
    expect(r.snippets[0]!.text).toContain('VisibilityTimeout=3');
    expect(r.leaseExtension.advised).toBe(false);
  });

  it('SQS clamps to 12 h and then requires lease extension', () => {
    const r = recommend({ target: 'sqs', samplesMs: [5 * 3_600_000], snippet: ctx })!;
    expect(r.recommendedMs).toBe(43_200_000);
    expect(r.clamped).toBe('max');
    expect(r.leaseExtension.advised).toBe(true);
    expect(r.leaseExtension.how).toContain('ChangeMessageVisibility');
  });

  it('duplicate risk of the current setting = share of samples above it; time to DLQ = maxReceiveCount × timeout', () => {
    const samples = [...new Array<number>(90).fill(10_000), ...new Array<number>(10).fill(40_000)];
    const r = recommend({ target: 'sqs', samplesMs: samples, current: current({ timeoutMs: 30_000, maxReceiveCount: 5 }), snippet: ctx })!;
    expect(r.current!.duplicateShare).toBeCloseTo(0.1, 10);
    expect(r.current!.timeToDlqMs).toBe(150_000);
    expect(r.current!.verdict).toContain('10.0%');
  });

  it('SQS long tail: the heartbeat keeps a short lease and beats within it (not every half of the long recommendation)', () => {
    // 95 messages take 2 s, 5 take 2 min: p99 2 min × 3 = 6 min recommended; p50 2 s × 3 = 6 s → lease 10 s (the floor).
    const samples = [...new Array<number>(95).fill(2_000), ...new Array<number>(5).fill(120_000)];
    const r = recommend({ target: 'sqs', samplesMs: samples, snippet: ctx })!;
    expect(r.recommendedMs).toBe(360_000);
    expect(r.leaseExtension.advised).toBe(true);
    expect(r.leaseExtension.how).toMatch(/^Heartbeat: set the queue's VisibilityTimeout \(and any VisibilityTimeout your consumer passes to ReceiveMessage\) to a short lease of 10 s instead, and while a message is being processed call ChangeMessageVisibility every 5 s to push it 10 s ahead/);
    const text = r.leaseExtension.snippet.text;
    const lease = Number(/VisibilityTimeout: (\d+) \}/.exec(text)?.[1]);
    const everyMs = Number(/\}, (\d+)\);/.exec(text)?.[1]);
    expect([lease, everyMs]).toEqual([10, 5_000]);
    // Whatever the lease, a beat must come before it runs out.
    expect(everyMs).toBeLessThan(lease * 1000);
  });

  it('SQS beyond 12 h: the advice says no heartbeat can cover it (ChangeMessageVisibility is capped at 12 h per receive)', () => {
    const r = recommend({ target: 'sqs', samplesMs: [...new Array<number>(99).fill(60_000), 5 * 3_600_000, 5 * 3_600_000], snippet: ctx })!;
    expect(r.clamped).toBe('max');
    expect(r.leaseExtension.how).toContain('short lease of 180 s');
    expect(r.leaseExtension.how).toContain('so no heartbeat covers processing longer than that');
    const all = recommend({ target: 'sqs', samplesMs: [5 * 3_600_000], snippet: ctx })!;
    expect(all.leaseExtension.how).toMatch(/^No heartbeat helps here: even typical processing needs the whole 12 h/);
    const fits = recommend({ target: 'sqs', samplesMs: [60_000], snippet: ctx })!;
    expect(fits.leaseExtension.how).not.toContain('no heartbeat covers');
  });

  it('a consumer override is the effective SQS timeout', () => {
    const r = recommend({ target: 'sqs', samplesMs: [1000, 5000], current: current({ timeoutMs: 30_000 }), consumerOverrideMs: 2000, snippet: ctx })!;
    expect(r.current!.timeoutMs).toBe(2000);
    expect(r.current!.duplicateShare).toBe(0.5);
  });

  it('mean only (Little\'s law): p99 estimated as ln(100) × mean, labelled', () => {
    const r = recommend({ target: 'rabbitmq', samplesMs: [], meanMs: 200, snippet: { queueName: 'q', brokerVersion: '3.10.8' } })!;
    expect(r.basis).toBe('mean-exponential');
    expect(r.basisMs).toBeCloseTo(921, 0);
    // 2,763 ms is below RabbitMQ's one-minute check: raised to 60 s
    expect(r.recommendedMs).toBe(60_000);
    expect(r.clamped).toBe('min');
    expect(r.brokerNotes[0]).toContain('node configuration');
    expect(r.snippets.map((s) => s.language)).toEqual(['ini']);
  });

  it('long tail → lease extension advised', () => {
    const rnd = seededRandom(7);
    const samples = Array.from({ length: 5000 }, () => -200 * Math.log(1 - rnd()));
    const r = recommend({ target: 'bullmq', samplesMs: samples, snippet: { queueName: 'payments' } })!;
    expect(r.leaseExtension.advised).toBe(true);
    expect(r.snippets[0]!.text).toContain(`lockDuration: ${r.recommendedMs}`);
  });

  it('BullMQ: never below its 30 s default lockDuration (renewal traffic, stalls on event-loop pauses); above it p99 × factor', () => {
    const short = recommend({ target: 'bullmq', samplesMs: new Array<number>(100).fill(200), snippet: { queueName: 'payments' } })!;
    expect(short.recommendedMs).toBe(30_000);
    expect(short.clamped).toBe('min');
    expect(short.reasons.at(-1)).toMatch(/BullMQ's default lockDuration of 30 s/);
    const long = recommend({ target: 'bullmq', samplesMs: new Array<number>(100).fill(20_000), snippet: { queueName: 'payments' } })!;
    expect(long.recommendedMs).toBe(60_000);
    expect(long.clamped).toBeNull();
  });

  it('factor outside 1–100 is refused; nothing to base it on → null', () => {
    expect(() => recommend({ target: 'sqs', samplesMs: [1], factor: 0.5, snippet: ctx })).toThrow(RangeError);
    expect(recommend({ target: 'sqs', samplesMs: [], snippet: ctx })).toBeNull();
  });

  it('RabbitMQ per-queue consumer timeout by version', () => {
    expect(rabbitPerQueueTimeout('3.10.8')).toBe(false);
    expect(rabbitPerQueueTimeout('3.11.14')).toBe(false);
    expect(rabbitPerQueueTimeout('3.11.15')).toBe(true);
    expect(rabbitPerQueueTimeout('3.13.1')).toBe(true);
    expect(rabbitPerQueueTimeout('4.0.0')).toBe(true);
    expect(rabbitPerQueueTimeout(null)).toBeNull();
  });

  it('buildReport: SQS retry schedule from the visibility timeout', () => {
    const m: Measurement = { source: 'file', measures: 'x', confidence: 'imported', confidenceNote: '', samplesMs: [100, 200, 300], meanMs: null, sampleErrorMs: null, redeliveries: null, retryPolicy: null, startedAt: null, endedAt: null, polls: 0, notes: [] };
    const rep = buildReport({ queueId: 'sqs:orders', queueName: 'orders', target: 'sqs', measurement: m, current: current({ maxReceiveCount: 3, retryPolicy: { attempts: 3, type: 'visibility-timeout', delayMs: 30_000, jitter: 0, capMs: null } }) });
    expect(rep.retry!.totalToDlqMs).toBe(90_000); // 3 receives × 30 s: the last receive also holds it for the timeout
    expect(rep.stats!.n).toBe(3);
    expect(rep.recommendation!.recommendedMs).toBe(1000);
  });
});
