import { CreateQueueCommand, DeleteQueueCommand, SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqsAdapter } from '../../core/adapters/sqs';
import { inspectQueue } from '../../core/inspect/inspect';
import { SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from './env';

/**
 * Inspect on fauxqs (issue 3): payload size is measured against the queue's own
 * `MaximumMessageSize` attribute, not SQS's 256 KiB default.
 */
const sqs = new SQSClient({ region: SQS_REGION, endpoint: SQS_ENDPOINT, credentials: SQS_TEST_CREDENTIALS });
const adapter = createSqsAdapter({ kind: 'sqs', region: SQS_REGION, endpoint: SQS_ENDPOINT, ...SQS_TEST_CREDENTIALS });
const created: string[] = [];

afterAll(async () => {
  await adapter.close();
  for (const url of created) await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
  sqs.destroy();
});

describe('inspect (SQS) size limit', () => {
  it("measures a body against the queue's MaximumMessageSize (4 KiB), and a user maxMessageBytes still wins", async () => {
    const url = (await sqs.send(new CreateQueueCommand({ QueueName: uniqueName('insp-size'), Attributes: { MaximumMessageSize: '4096' } }))).QueueUrl!;
    created.push(url);
    const body = JSON.stringify({ documentId: 'D-7', content: 'x'.repeat(3450) });
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body }));
    const queueId = `sqs:${url}`;
    const rep = await inspectQueue(adapter, queueId, { acceptSideEffects: true, compareDeadLetter: false });
    expect(rep.analysed).toBe(1);
    const m = rep.messages[0];
    expect(m?.bytes).toBe(body.length);
    // 3,481 bytes is 85% of the queue's 4 KiB: large (review). Against the 256 KiB default it would be ok.
    expect(m?.verdict).toBe('review');
    expect(m?.reasons.join(' | ')).toContain('large payload: 3.4 KiB (85% of 4 KiB, SQS MaximumMessageSize (4 KiB))');
    const overridden = await inspectQueue(adapter, queueId, { acceptSideEffects: true, compareDeadLetter: false, rules: { maxMessageBytes: 1_048_576 } });
    expect(overridden.messages[0]?.verdict).toBe('ok');
  });
});
