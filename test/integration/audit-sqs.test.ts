import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand, SQSClient, SendMessageCommand, SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqsAdapter } from '../../core/adapters/sqs';
import type { BrokerAdapter } from '../../core/adapters/types';
import { defaultProjectConfig } from '../../shared/config/project-config';
import { evaluateAudit, type AuditReport, type Measurements } from '../../shared/audit';
import { SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from './env';

// Each rule: the misconfiguration built on fauxqs (the faithful emulator) is found; the corrected
// configuration passes. Queue names share one random prefix; everything is deleted afterwards.
const client = new SQSClient({ endpoint: SQS_ENDPOINT, region: SQS_REGION, credentials: SQS_TEST_CREDENTIALS });
const adapter: BrokerAdapter = createSqsAdapter({ kind: 'sqs', region: SQS_REGION, endpoint: SQS_ENDPOINT, ...SQS_TEST_CREDENTIALS });
const p = uniqueName('aud');
const urls: string[] = [];
const DAY = 86_400;

async function queue(name: string, attributes: Record<string, string> = {}): Promise<{ url: string; arn: string }> {
  const url = (await client.send(new CreateQueueCommand({ QueueName: `${p}-${name}`, Attributes: attributes }))).QueueUrl ?? '';
  urls.push(url);
  const arn = (await client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn ?? '';
  return { url, arn };
}
const redrive = (arn: string, maxReceiveCount = 5): string => JSON.stringify({ deadLetterTargetArn: arn, maxReceiveCount });

async function audit(measurements: Measurements = new Map(), sampleMessages = 0): Promise<AuditReport> {
  const facts = await adapter.audit!.collect({ pattern: `${p}-*`, sampleMessages });
  return evaluateAudit([facts], { config: defaultProjectConfig().audit, measurements, now: Date.now() });
}
/** Rule ids found on one queue. */
const on = (r: AuditReport, name: string): string[] => r.findings.filter((f) => f.target === `${p}-${name}`).map((f) => f.ruleId).sort();

let report: AuditReport;
const LONG = { ReceiveMessageWaitTimeSeconds: '20' };

beforeAll(async () => {
  // Healthy pair: the corrected configuration for most rules.
  const okDlq = await queue('ok-dlq', { MessageRetentionPeriod: String(14 * DAY), ...LONG });
  await queue('ok', { MessageRetentionPeriod: String(4 * DAY), VisibilityTimeout: '90', RedrivePolicy: redrive(okDlq.arn), ...LONG });
  await queue('nodlq', LONG);
  await queue('nodlq-dlq', { MessageRetentionPeriod: String(14 * DAY), ...LONG }); // candidate for the one-click fix
  await queue('mrc1', { MessageRetentionPeriod: String(4 * DAY), RedrivePolicy: redrive(okDlq.arn, 1), ...LONG });
  await queue('mrc100', { MessageRetentionPeriod: String(4 * DAY), RedrivePolicy: redrive(okDlq.arn, 100), ...LONG });
  const shortDlq = await queue('short-dlq', { MessageRetentionPeriod: String(4 * DAY), ...LONG });
  await queue('ret', { MessageRetentionPeriod: String(4 * DAY), RedrivePolicy: redrive(shortDlq.arn), ...LONG });
  const stdDlq = await queue('std-dlq', { MessageRetentionPeriod: String(14 * DAY), ...LONG });
  await queue('mm.fifo', { FifoQueue: 'true', ContentBasedDeduplication: 'true', RedrivePolicy: redrive(stdDlq.arn), ...LONG });
  const fifoDlq = await queue('f-dlq.fifo', { FifoQueue: 'true', MessageRetentionPeriod: String(14 * DAY), ...LONG });
  const dedup = await queue('dedup.fifo', { FifoQueue: 'true', RedrivePolicy: redrive(fifoDlq.arn), ...LONG });
  await client.send(new SendMessageCommand({ QueueUrl: dedup.url, MessageBody: '{"orderId":"A-1"}', MessageGroupId: 'A-1', MessageDeduplicationId: 'A-1:charge' }));
  const denyDlq = await queue('deny-dlq', { MessageRetentionPeriod: String(14 * DAY), RedriveAllowPolicy: JSON.stringify({ redrivePermission: 'denyAll' }), ...LONG });
  await queue('deny', { MessageRetentionPeriod: String(4 * DAY), RedrivePolicy: redrive(denyDlq.arn), ...LONG });
  const byQueueDlq = await queue('byq-dlq', { MessageRetentionPeriod: String(14 * DAY), ...LONG });
  const byq = await queue('byq', { MessageRetentionPeriod: String(4 * DAY), RedrivePolicy: redrive(byQueueDlq.arn), ...LONG });
  await client.send(new SetQueueAttributesCommand({ QueueUrl: byQueueDlq.url, Attributes: { RedriveAllowPolicy: JSON.stringify({ redrivePermission: 'byQueue', sourceQueueArns: [byq.arn] }) } }));
  const otherDlq = await queue('other-dlq', { MessageRetentionPeriod: String(14 * DAY), RedriveAllowPolicy: JSON.stringify({ redrivePermission: 'byQueue', sourceQueueArns: [byq.arn] }), ...LONG });
  await queue('notlisted', { MessageRetentionPeriod: String(4 * DAY), RedrivePolicy: redrive(otherDlq.arn), ...LONG });
  await queue('missing', { MessageRetentionPeriod: String(4 * DAY), RedrivePolicy: redrive(okDlq.arn.replace(/[^:]+$/, `${p}-does-not-exist`)), ...LONG });
  await queue('vt', { MessageRetentionPeriod: String(4 * DAY), VisibilityTimeout: '30', RedrivePolicy: redrive(okDlq.arn), ...LONG });
  await queue('shortpoll', { MessageRetentionPeriod: String(4 * DAY), RedrivePolicy: redrive(okDlq.arn), ReceiveMessageWaitTimeSeconds: '0' });
  const fullDlq = await queue('full-dlq', { MessageRetentionPeriod: String(14 * DAY), ...LONG });
  await queue('full', { MessageRetentionPeriod: String(4 * DAY), RedrivePolicy: redrive(fullDlq.arn), ...LONG });
  await client.send(new SendMessageCommand({ QueueUrl: fullDlq.url, MessageBody: '{"orderId":"A-9"}' }));
  const big = await queue('big', { MaximumMessageSize: '1024', MessageRetentionPeriod: String(4 * DAY), RedrivePolicy: redrive(okDlq.arn), ...LONG });
  await client.send(new SendMessageCommand({ QueueUrl: big.url, MessageBody: 'x'.repeat(900) }));
  const small = await queue('small', { MaximumMessageSize: '1024', MessageRetentionPeriod: String(4 * DAY), RedrivePolicy: redrive(okDlq.arn), ...LONG });
  await client.send(new SendMessageCommand({ QueueUrl: small.url, MessageBody: '{"orderId":"A-2"}' }));
  const measurements: Measurements = new Map([
    [`${p}-vt`, { p99Ms: 20_000, meanMs: 5_000, source: 'file' }],
    [`${p}-ok`, { p99Ms: 20_000, meanMs: 5_000, source: 'file' }],
  ]);
  report = await audit(measurements, 10);
}, 120_000);

afterAll(async () => {
  for (const url of urls) await client.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
  await adapter.close();
  client.destroy();
});

describe('SQS audit against fauxqs', () => {
  it('the corrected configuration (RedrivePolicy to a longer-lived DLQ, maxReceiveCount 5, long polling, VisibilityTimeout ≥ 3 × p99) has no finding', () => {
    expect(on(report, 'ok')).toEqual([]);
    expect(on(report, 'ok-dlq')).toEqual([]);
    expect(report.checks.filter((c) => c.target === `${p}-ok` && c.status === 'pass').map((c) => c.ruleId)).toEqual(
      expect.arrayContaining(['sqs.dlq-retention-too-short', 'sqs.dlq-type-mismatch', 'sqs.redrive-allow-policy-denies-source', 'sqs.visibility-timeout-below-processing-time', 'sqs.short-polling', 'sqs.max-receive-count-too-low', 'sqs.max-receive-count-too-high']),
    );
  });

  it('sqs.no-redrive-policy, with the existing <name>-dlq offered as one-click fix', () => {
    expect(on(report, 'nodlq')).toEqual(['sqs.no-redrive-policy']);
    const f = report.findings.find((x) => x.target === `${p}-nodlq`);
    expect(f?.severity).toBe('error');
    expect(f?.autoFix).toMatchObject({ kind: 'sqs.set-redrive-policy', deadLetterQueueName: `${p}-nodlq-dlq`, maxReceiveCount: 5 });
  });

  it('maxReceiveCount 1 and 100', () => {
    expect(on(report, 'mrc1')).toEqual(['sqs.max-receive-count-too-low']);
    expect(on(report, 'mrc100')).toEqual(['sqs.max-receive-count-too-high']);
  });

  it('a DLQ that does not keep messages longer than its source', () => {
    expect(on(report, 'ret')).toEqual(['sqs.dlq-retention-too-short']);
    expect(report.findings.find((x) => x.target === `${p}-ret`)?.message).toContain('4 d, not longer than');
  });

  it('FIFO source with a standard DLQ', () => {
    expect(on(report, 'mm.fifo')).toEqual(['sqs.dlq-type-mismatch']);
  });

  it('RedriveAllowPolicy denyAll / byQueue without the source deny; byQueue listing the source passes', () => {
    expect(on(report, 'deny')).toEqual(['sqs.redrive-allow-policy-denies-source']);
    expect(on(report, 'notlisted')).toEqual(['sqs.redrive-allow-policy-denies-source']);
    expect(on(report, 'byq')).toEqual([]);
    expect(report.checks.find((c) => c.target === `${p}-byq` && c.ruleId === 'sqs.redrive-allow-policy-denies-source')?.status).toBe('pass');
  });

  it('a RedrivePolicy naming a queue that does not exist', () => {
    expect(on(report, 'missing')).toEqual(['sqs.dead-letter-queue-missing']);
  });

  it('VisibilityTimeout 30 s below 3 × measured p99 20 s; not checked without a measurement', () => {
    expect(on(report, 'vt')).toEqual(['sqs.visibility-timeout-below-processing-time']);
    expect(report.checks.find((c) => c.target === `${p}-mrc1` && c.ruleId === 'sqs.visibility-timeout-below-processing-time')?.note).toBe('not checked: no measurement');
  });

  it('short polling is info; DLQs are exempt', () => {
    expect(on(report, 'shortpoll')).toEqual(['sqs.short-polling']);
    expect(report.findings.find((x) => x.target === `${p}-shortpoll`)?.severity).toBe('info');
  });

  it('a DLQ holding a dead letter', () => {
    expect(on(report, 'full-dlq')).toEqual(['sqs.dlq-not-empty']);
    expect(on(report, 'full')).toEqual([]);
  });

  it('sampled payloads near MaximumMessageSize (900 of 1024 bytes) are found; small ones pass', () => {
    expect(on(report, 'big')).toEqual(['sqs.payload-near-max-size']);
    expect(report.findings.find((x) => x.target === `${p}-big`)?.evidence).toMatchObject({ largestBytes: 900, maximumMessageSize: 1024 });
    expect(on(report, 'small')).toEqual([]);
  });

  it('FIFO without content-based deduplication: sampled messages carry MessageDeduplicationId → pass (SQS refuses sends without one)', async () => {
    expect(on(report, 'dedup.fifo')).toEqual([]);
    expect(report.checks.find((c) => c.target === `${p}-dedup.fifo` && c.ruleId === 'sqs.fifo-messages-without-deduplication-id')?.status).toBe('pass');
    const url = urls.find((u) => u.endsWith(`${p}-dedup.fifo`)) ?? '';
    await expect(client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x', MessageGroupId: 'g' }))).rejects.toThrow(/MessageDeduplicationId/);
  });

  it('sampling made the messages visible again (counts unchanged)', async () => {
    const url = urls.find((u) => u.endsWith(`${p}-big`)) ?? '';
    const a = (await client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages'] }))).Attributes;
    expect(a?.ApproximateNumberOfMessages).toBe('1');
  });

  it('one-click fix: preview shows before/after, apply sets the RedrivePolicy, and the audit then passes', async () => {
    const fix = report.findings.find((x) => x.target === `${p}-nodlq`)?.autoFix;
    expect(fix).toBeTruthy();
    if (!fix) return;
    const preview = await adapter.audit!.previewFix(fix);
    expect(preview.before).toEqual({ RedrivePolicy: null });
    const applied = await adapter.audit!.applyFix(fix);
    expect(applied.after).toMatchObject({ RedrivePolicy: { maxReceiveCount: 5 } });
    const again = await audit();
    expect(on(again, 'nodlq')).toEqual([]);
    await expect(adapter.audit!.applyFix(fix)).rejects.toThrow(/already has a RedrivePolicy/);
  });
});
