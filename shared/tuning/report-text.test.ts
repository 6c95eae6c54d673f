import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { buildReport } from './recommend';
import { checkRetrySchedule, sqsTimeToDlqMs } from './retry';
import { SMALL_SAMPLE_N, formatMs, smallSampleWarning } from './stats';
import type { CurrentSettings, Measurement } from './types';

const measurement = (samplesMs: number[]): Measurement => ({
  source: 'file', measures: 'x', confidence: 'imported', confidenceNote: '', samplesMs, meanMs: null, sampleErrorMs: null, redeliveries: null, retryPolicy: null, startedAt: null, endedAt: null, polls: 0, notes: [],
});

function sqsCurrent(maxReceiveCount: number, timeoutMs: number): CurrentSettings {
  return {
    target: 'sqs', timeoutMs, timeoutSource: 'VisibilityTimeout', maxReceiveCount, deadLetterTarget: 'o-dlq', brokerVersion: null, perQueueTimeoutSupported: true, notes: [],
    retryPolicy: { attempts: maxReceiveCount, type: 'visibility-timeout', delayMs: timeoutMs, jitter: 0, capMs: null },
  };
}

describe('SQS time to DLQ: one computation', () => {
  it('3 × 30 s = 1 min 30 s in both the verdict and the retry schedule', () => {
    const rep = buildReport({ queueId: 'sqs:o', queueName: 'o', target: 'sqs', measurement: measurement([100, 200, 300]), current: sqsCurrent(3, 30_000) });
    expect(rep.retry?.totalToDlqMs).toBe(90_000);
    expect(rep.recommendation?.current?.timeToDlqMs).toBe(90_000);
    expect(rep.recommendation?.current?.verdict).toContain('3 × 30 s = 1 min 30 s');
    expect(formatMs(rep.retry?.totalToDlqMs ?? 0)).toBe('1 min 30 s');
  });

  it('schedule total equals maxReceiveCount × timeout for any SQS policy', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 43_200_000 }), (mrc, vt) => {
        const s = checkRetrySchedule({ attempts: mrc, type: 'visibility-timeout', delayMs: vt, jitter: 0, capMs: null });
        expect(s.totalToDlqMs).toBe(sqsTimeToDlqMs(mrc, vt));
      }),
    );
  });

  it('BullMQ schedules are unchanged: the job fails right after its last attempt', () => {
    expect(checkRetrySchedule({ attempts: 3, type: 'fixed', delayMs: 1000, jitter: 0, capMs: null }).totalToDlqMs).toBe(2000);
  });
});

describe('small-sample warning for p99', () => {
  it('warns below 100 samples, naming n', () => {
    expect(smallSampleWarning(5)).toMatch(/^p99 from 5 samples is a rough estimate/);
    expect(smallSampleWarning(1)).toMatch(/^p99 from 1 sample is/);
    expect(smallSampleWarning(SMALL_SAMPLE_N - 1)).not.toBeNull();
    expect(smallSampleWarning(SMALL_SAMPLE_N)).toBeNull();
    expect(smallSampleWarning(10_000)).toBeNull();
  });

  it('the recommendation carries the warning for 5 samples and not for 200', () => {
    const few = buildReport({ queueId: 'sqs:o', queueName: 'o', target: 'sqs', measurement: measurement([10, 20, 30, 40, 50]), current: sqsCurrent(3, 30_000) });
    expect(few.recommendation?.reasons.join(' ')).toContain('p99 from 5 samples is a rough estimate');
    const many = buildReport({ queueId: 'sqs:o', queueName: 'o', target: 'sqs', measurement: measurement(Array.from({ length: 200 }, (_, i) => 10 + i)), current: sqsCurrent(3, 30_000) });
    expect(many.recommendation?.reasons.join(' ')).not.toContain('rough estimate');
  });
});

describe('formatMs for long idle times', () => {
  it('7 560 682 ms reads as 2 h 6 min', () => {
    expect(formatMs(7_560_682)).toBe('2 h 6 min');
  });
});
