import { DeleteQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import type { MoveBatchResult } from '../../core/adapters/redrive-types';
import { QueuescopeError } from '../../shared/domain';
import { SQS_ALT_ENDPOINT, SQS_ENDPOINT, uniqueName } from './env';
import { sqsResources } from './fixtures/sqs-resources';

/**
 * A redrive whose target queue is deleted during the run (fresh-user pass): the old mover went on
 * reading the whole DLQ, failing every later message with "may also have reached <target>" — a
 * send that SQS refused with QueueDoesNotExist reached nothing. Now the run stops after the batch
 * in which the target was found gone, naming it, with the counts so far.
 */

const { client, adapterFor, createQueue } = sqsResources();

async function depth(c: SQSClient, url: string): Promise<number> {
  const a = (await c.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }))).Attributes ?? {};
  return Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesNotVisible ?? 0);
}

describe.each([
  { label: 'fauxqs', endpoint: SQS_ENDPOINT },
  { label: 'local-aws-sqs', endpoint: SQS_ALT_ENDPOINT },
])('SQS redrive: the target is deleted mid-run ($label)', ({ endpoint }) => {
  const c = client(endpoint);

  it('stops at the first message it could not send, naming the deleted target, with exact counts; the rest stays in the DLQ', async () => {
    const base = uniqueName('rd-gone');
    const dlq = await createQueue(c, `${base}-dlq`);
    const target = await createQueue(c, `${base}-target`);
    for (let i = 0; i < 50; i += 10) {
      await c.send(new SendMessageBatchCommand({ QueueUrl: dlq.url, Entries: Array.from({ length: 10 }, (_, j) => ({ Id: `m${j}`, MessageBody: JSON.stringify({ n: i + j }) })) }));
    }
    const adapter = adapterFor(endpoint);
    adapter.redrive.setOptions({ visibilityTimeoutS: 5 });
    const batches: MoveBatchResult[] = [];
    let decided = 0;
    let beforeMoves = 0;
    const run = adapter.redrive.moveClientSide(
      { sourceQueueId: dlq.id, batchSize: 10, cutoffMs: Date.now() + 60_000, maxMessages: null, dryRun: false },
      {
        gate: () => Promise.resolve(),
        decide: () => {
          decided++;
          return { action: 'move', targetQueueId: target.id };
        },
        beforeMove: async () => {
          // The second batch: the target is deleted after the first batch moved into it.
          if (++beforeMoves === 2) await c.send(new DeleteQueueCommand({ QueueUrl: target.url }));
        },
        onBatch: (r) => batches.push(r),
      },
    );
    const err = await run.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(QueuescopeError);
    const e = err as QueuescopeError;
    expect(e.code).toBe('QUEUE_NOT_FOUND');
    expect(e.message).toContain(`The target ${target.name} does not exist any more (deleted during the run?): the redrive stopped at the first message it could not send there, reading nothing further`);
    expect(e.message).toContain(`So far: 10 messages moved (10 of them to ${target.name} before it was deleted`);
    expect(e.message).toContain(`10 messages examined and not moved (they stay in ${dlq.name}); at most 0 messages uncertain`);
    expect(e.details).toMatchObject({ queue: target.name, moved: 10, movedToDeletedTarget: 10, notMoved: 10, uncertain: 0 });
    // Two batches read, no third: the old code read and failed all 50.
    expect(decided).toBe(20);
    expect(batches.map((b) => [b.moved.length, b.failed.length])).toEqual([
      [10, 0],
      [0, 10],
    ]);
    for (const f of batches[1]?.failed ?? []) {
      expect(f.error.message).toContain(`${target.name} does not exist (any more); SQS accepted nothing`);
      expect(f.error.message).not.toContain('may also have reached');
    }
    // The 40 not moved are back in the DLQ (the 10 failed ones were made visible again at the end).
    expect(await depth(c, dlq.url)).toBe(40);
  });
});
