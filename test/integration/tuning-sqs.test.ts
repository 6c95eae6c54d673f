import { CreateQueueCommand, DeleteMessageCommand, DeleteQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqsAdapter } from '../../core/adapters/sqs';
import { AuditLog } from '../../core/services/audit-log';
import { applyTimeout, tuneQueue } from '../../core/tuning';
import { SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from './env';

/**
 * SQS tuning on fauxqs: Little's law from sampled queue attributes while a consumer with a known
 * service time (200 ms, 4 concurrent receive loops) drains a backlog; SetQueueAttributes apply.
 */
const SERVICE_MS = 200;
const CONCURRENCY = 4;
const sqs = new SQSClient({ region: SQS_REGION, endpoint: SQS_ENDPOINT, credentials: SQS_TEST_CREDENTIALS });
const adapter = createSqsAdapter({ kind: 'sqs', region: SQS_REGION, endpoint: SQS_ENDPOINT, ...SQS_TEST_CREDENTIALS });
const created: string[] = [];

afterAll(async () => {
  await adapter.close();
  for (const url of created) await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
  sqs.destroy();
});

async function createQueue(name: string, attributes: Record<string, string> = {}): Promise<{ url: string; arn: string }> {
  const url = (await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }))).QueueUrl!;
  created.push(url);
  const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
  return { url, arn };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe("SQS Little's law (sampled attributes)", () => {
  it('mean in flight within ±25 % of 200 ms; settings read VisibilityTimeout and RedrivePolicy', async () => {
    const dlq = await createQueue(uniqueName('tune-dlq'));
    const q = await createQueue(uniqueName('tune'), { VisibilityTimeout: '30', RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 5 }) });
    for (let b = 0; b < 40; b++) {
      await sqs.send(new SendMessageBatchCommand({ QueueUrl: q.url, Entries: Array.from({ length: 10 }, (_, i) => ({ Id: `m${i}`, MessageBody: JSON.stringify({ orderId: `A-${b * 10 + i}` }) })) }));
    }
    let stop = false;
    const workers = Array.from({ length: CONCURRENCY }, async () => {
      while (!stop) {
        const r = await sqs.send(new ReceiveMessageCommand({ QueueUrl: q.url, MaxNumberOfMessages: 1, WaitTimeSeconds: 1 }));
        for (const m of r.Messages ?? []) {
          await sleep(SERVICE_MS);
          await sqs.send(new DeleteMessageCommand({ QueueUrl: q.url, ReceiptHandle: m.ReceiptHandle! }));
        }
      }
    });
    await sleep(500);
    const queueId = `sqs:${q.url}`;
    const sources = await adapter.tuning!.sources(queueId);
    expect(sources.map((s) => [s.source, s.available])).toEqual([
      ['littles-law', true],
      ['cloudwatch', false],
    ]);
    const m = await adapter.tuning!.measure(queueId, 'littles-law', { windowMs: 8000, intervalMs: 500 });
    stop = true;
    await Promise.all(workers);
    expect(m.meanMs).not.toBeNull();
    expect(Math.abs(m.meanMs! - SERVICE_MS) / SERVICE_MS).toBeLessThan(0.25);
    expect(m.polls).toBeGreaterThanOrEqual(10);

    const s = await adapter.tuning!.readSettings(queueId);
    expect(s).toMatchObject({ target: 'sqs', timeoutMs: 30_000, maxReceiveCount: 5, queueUrl: q.url });
    expect(s.retryPolicy).toEqual({ attempts: 5, type: 'visibility-timeout', delayMs: 30_000, jitter: 0, capMs: null });
    await expect(adapter.tuning!.measure(queueId, 'cloudwatch', { windowMs: 0 })).rejects.toMatchObject({ code: 'UNSUPPORTED' });
  });

  it('receive counts of peeked messages only with acceptSideEffects; previously received messages count as redelivered', async () => {
    const q = await createQueue(uniqueName('tune-rc'), { VisibilityTimeout: '1' });
    await sqs.send(new SendMessageBatchCommand({ QueueUrl: q.url, Entries: [{ Id: 'a', MessageBody: '1' }, { Id: 'b', MessageBody: '2' }] }));
    // one message is received and abandoned: it comes back after its 1 s visibility timeout
    await sqs.send(new ReceiveMessageCommand({ QueueUrl: q.url, MaxNumberOfMessages: 1 }));
    await sleep(1500);
    const without = await adapter.tuning!.measure(`sqs:${q.url}`, 'littles-law', { windowMs: 200, intervalMs: 200 });
    expect(without.redeliveries).toBeNull();
    const withPeek = await adapter.tuning!.measure(`sqs:${q.url}`, 'littles-law', { windowMs: 200, intervalMs: 200, acceptSideEffects: true });
    expect(withPeek.redeliveries!.observed).toBe(2);
    expect(withPeek.redeliveries!.redelivered).toBe(1);
  });

  it('applyTimeout changes VisibilityTimeout and reports before/after; bad values are refused', async () => {
    const q = await createQueue(uniqueName('tune-apply'), { VisibilityTimeout: '30' });
    const change = await adapter.tuning!.applyTimeout!(`sqs:${q.url}`, 90_000);
    expect(change).toEqual({ setting: 'VisibilityTimeout', before: { VisibilityTimeout: '30' }, after: { VisibilityTimeout: '90' } });
    const now = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: q.url, AttributeNames: ['VisibilityTimeout'] }))).Attributes!.VisibilityTimeout;
    expect(now).toBe('90');
    await expect(adapter.tuning!.applyTimeout!(`sqs:${q.url}`, 1500)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(adapter.tuning!.applyTimeout!(`sqs:${q.url}`, 43_201_000)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('core/tuning: the recommendation is applied with a before/after diff and an audit-log entry', async () => {
    const q = await createQueue(uniqueName('tune-audit'), { VisibilityTimeout: '1' });
    const dir = mkdtempSync(join(tmpdir(), 'qs-tune-'));
    try {
      const file = join(dir, 'durations.csv');
      const { writeFileSync } = await import('node:fs');
      writeFileSync(file, `duration_ms\n${Array.from({ length: 100 }, (_, i) => 1000 + i * 10).join('\n')}\n`);
      const report = await tuneQueue(adapter, `sqs:${q.url}`, { source: 'file', file: { path: file } });
      // p99 = 1,980 ms × 3 = 5,940 ms → 6 s; at the current 1 s, 99 of 100 deliveries (all but the 1,000 ms one) run over
      expect(report.recommendation!.recommendedMs).toBe(6000);
      expect(report.recommendation!.current!.duplicateShare).toBe(0.99);
      expect(report.retry).toBeNull(); // no RedrivePolicy
      const log = new AuditLog({ path: join(dir, 'audit-log.jsonl') });
      const change = await applyTimeout(adapter, `sqs:${q.url}`, report.recommendation!.recommendedMs, log, { actor: 'cli', connection: 'sqs://us-east-1 (test)' });
      expect(change).toEqual({ setting: 'VisibilityTimeout', before: { VisibilityTimeout: '1' }, after: { VisibilityTimeout: '6' } });
      const page = await log.read();
      expect(page.entries).toHaveLength(1);
      expect(page.entries[0]).toMatchObject({ action: 'apply-visibility-timeout', actor: 'cli', target: `sqs:${q.url}`, status: 'completed', details: { before: { VisibilityTimeout: '1' }, after: { VisibilityTimeout: '6' } } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
