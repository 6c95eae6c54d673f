import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ChangeMessageVisibilityBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
  SendMessageCommand,
  type Message,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import type { MoveHooks, RedriveDecision } from '../../core/adapters/redrive-types';
import { buildSendEntry } from '../../core/adapters/sqs/redrive-entry';
import type { QueueMessage } from '../../shared/domain';
import { SQS_ALT_ENDPOINT, SQS_ENDPOINT, SQS_REGION, uniqueName } from './env';
import { runCliMerged } from './fixtures/run-cli';
import { drainFifo, sqsResources, useSqsTestCredentials } from './fixtures/sqs-resources';

/**
 * SQS FIFO redrive edge cases found by the sqs-pass (a demanding-user pass) against the real
 * emulators. local-aws-sqs is used where fauxqs lacks the feature (DeduplicationScope=messageGroup:
 * fauxqs deduplicates per queue whatever the scope).
 */

const { client, adapterFor, createQueue } = sqsResources();

useSqsTestCredentials();
/** Runs the CLI in-process in `dir` (config dir `<dir>/home`); stdout and stderr together. */
const cli = runCliMerged;

async function depth(c: SQSClient, url: string): Promise<number> {
  const a = (await c.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }))).Attributes ?? {};
  return Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesNotVisible ?? 0);
}

/** Receives every message of a standard queue once (hidden for 300 s, so none twice), then makes them visible again. */
async function receiveAllThenRestore(c: SQSClient, url: string): Promise<Message[]> {
  const out: Message[] = [];
  for (let empty = 0; empty < 3; ) {
    const r = await c.send(
      // eslint-disable-next-line @typescript-eslint/no-deprecated
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 300, AttributeNames: ['All'], MessageSystemAttributeNames: ['All'] }),
    );
    const got = r.Messages ?? [];
    if (got.length === 0) empty++;
    else empty = 0;
    out.push(...got);
  }
  for (let i = 0; i < out.length; i += 10) {
    await c.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: out.slice(i, i + 10).map((m, j) => ({ Id: `v${j}`, ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: 0 })) }));
  }
  return out;
}

function hooks(decide: (m: QueueMessage) => RedriveDecision): MoveHooks {
  return { gate: () => Promise.resolve(), decide, beforeMove: () => Promise.resolve(), onBatch: () => undefined };
}


describe('SQS FIFO redrive: deduplication ids (local-aws-sqs)', () => {
  const endpoint = SQS_ALT_ENDPOINT;
  const c = client(endpoint);

  it('two dead letters that share a MessageDeduplicationId both arrive (the derived id includes the MessageId)', async () => {
    // A DLQ with DeduplicationScope=messageGroup (high-throughput FIFO) accepts the same
    // deduplication id in two groups — as any FIFO queue does for the same id sent > 5 min apart.
    // The target deduplicates per queue: an id derived from the old id and the redrive count
    // alone is the same for both, so SQS silently drops the second while reporting it sent, and
    // the redrive then deletes it from the DLQ (old code: 2 moved, 1 in the target).
    const base = uniqueName('fifo-dd');
    const dlq = await createQueue(c, `${base}-dlq.fifo`, { FifoQueue: 'true', DeduplicationScope: 'messageGroup', FifoThroughputLimit: 'perMessageGroupId' });
    const target = await createQueue(c, `${base}-tgt.fifo`, { FifoQueue: 'true' });
    await c.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: '{"orderId":"A-1","n":1}', MessageGroupId: 'g1', MessageDeduplicationId: 'order-A-1' }));
    await c.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: '{"orderId":"A-1","n":2}', MessageGroupId: 'g2', MessageDeduplicationId: 'order-A-1' }));
    const adapter = adapterFor(endpoint);
    const summary = await adapter.redrive.moveClientSide({ sourceQueueId: dlq.id, batchSize: 10, cutoffMs: Date.now() + 1_000, maxMessages: null, dryRun: false }, hooks(() => ({ action: 'move', targetQueueId: target.id })));
    expect(summary).toMatchObject({ moved: 2, failed: 0, possibleDuplicates: 0 });
    const got = await drainFifo(c, target.url);
    expect(got.map((m) => m.Body).sort()).toEqual(['{"orderId":"A-1","n":1}', '{"orderId":"A-1","n":2}']);
    expect(new Set(got.map((m) => m.Attributes?.MessageDeduplicationId)).size).toBe(2);
  });

  it('a retried send of the same redriven message still deduplicates (same MessageId → same derived id)', async () => {
    const base = uniqueName('fifo-dd2');
    const dlq = await createQueue(c, `${base}-dlq.fifo`, { FifoQueue: 'true' });
    await c.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: '{"orderId":"B-1"}', MessageGroupId: 'g1', MessageDeduplicationId: 'order-B-1' }));
    const adapter = adapterFor(endpoint);
    const page = await adapter.peek(dlq.id, { limit: 10, acceptSideEffects: true });
    expect(page.messages).toHaveLength(1);
    const m = page.messages[0]!;
    const sent = [1, 2].map(() => buildSendEntry(m, { name: 't.fifo', fifo: true, maxMessageBytes: 262_144 }, 'e0'));
    const ids = sent.map((b) => ('error' in b ? b.error.message : b.entry.MessageDeduplicationId));
    expect(ids[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(ids[1]).toBe(ids[0]);
  });
});

describe('SQS FIFO redrive: order within a message group (local-aws-sqs)', () => {
  const endpoint = SQS_ALT_ENDPOINT;
  const c = client(endpoint);

  it('a message that stays keeps the later messages of its group from overtaking it (old code: moved past it)', async () => {
    // local-aws-sqs, like AWS, returns several messages of one group in a receive. g0's first
    // message cannot move (10 attributes: no room for the redrive counter); the old mover still
    // moved g0's second one, so the target got g0 out of order once the first was dealt with.
    const base = uniqueName('fifo-ord');
    const dlq = await createQueue(c, `${base}-dlq.fifo`, { FifoQueue: 'true' });
    const target = await createQueue(c, `${base}-tgt.fifo`, { FifoQueue: 'true' });
    const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`a${i}`, { DataType: 'String', StringValue: `v${i}` }]));
    const sends: { body: string; group: string; attrs?: typeof ten }[] = [
      { body: 'g0-1', group: 'g0', attrs: ten },
      { body: 'g1-1', group: 'g1' },
      { body: 'g0-2', group: 'g0' },
      { body: 'g1-2', group: 'g1' },
      { body: 'g0-3', group: 'g0' },
    ];
    for (const [i, m] of sends.entries()) {
      await c.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: m.body, MessageGroupId: m.group, MessageDeduplicationId: `d${i}`, ...(m.attrs ? { MessageAttributes: m.attrs } : {}) }));
    }
    const adapter = adapterFor(endpoint);
    const moveAll = hooks(() => ({ action: 'move', targetQueueId: target.id }));
    const dry = await adapter.redrive.moveClientSide({ sourceQueueId: dlq.id, batchSize: 10, cutoffMs: Date.now() + 1_000, maxMessages: null, dryRun: true }, moveAll);
    expect(dry).toMatchObject({ moved: 2, failed: 3 });
    const summary = await adapter.redrive.moveClientSide({ sourceQueueId: dlq.id, batchSize: 10, cutoffMs: Date.now() + 1_000, maxMessages: null, dryRun: false }, moveAll);
    expect(summary).toMatchObject({ moved: 2, failed: 3, possibleDuplicates: 0 });
    expect((await drainFifo(c, target.url)).map((m) => m.Body)).toEqual(['g1-1', 'g1-2']);
    expect((await drainFifo(c, dlq.url)).map((m) => m.Body).sort()).toEqual(['g0-1', 'g0-2', 'g0-3']);
  });
});

describe('SQS FIFO re-inject after a redrive (fauxqs, CLI)', () => {
  const endpoint = SQS_ENDPOINT;
  const c = client(endpoint);

  it('re-injecting the backup of a FIFO redrive whose messages were consumed puts them back (old code: "Re-injected 3 of 3", 0 arrived)', async () => {
    // The redrive sent each message with a deduplication id derived from it; a re-inject of its
    // backup within 5 minutes derived the very same ids, so the FIFO queue silently dropped every
    // message while SendMessageBatch reported them sent.
    const dir = await mkdtemp(join(tmpdir(), 'qs-sqs-fifo-reinject-'));
    try {
      const base = uniqueName('fifo-ri');
      const dlq = await createQueue(c, `${base}-dlq.fifo`, { FifoQueue: 'true' });
      const target = await createQueue(c, `${base}.fifo`, { FifoQueue: 'true' });
      for (let n = 0; n < 3; n++) await c.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: JSON.stringify({ orderId: `C-${n}` }), MessageGroupId: 'g', MessageDeduplicationId: `C-${n}` }));
      const conn = `sqs://${SQS_REGION}?endpoint=${endpoint}`;
      const rd = await cli(dir, ['redrive', conn, `${base}-dlq.fifo`, '--to', `${base}.fifo`, '--yes']);
      expect(rd.out).toContain('3 moved');
      expect(rd.code).toBe(0);
      // The consumer takes them (and loses the work): the operator puts the backup back.
      expect((await drainFifo(c, target.url)).map((m) => m.Body)).toHaveLength(3);
      const backups = await readdir(join(dir, 'home', 'backups'));
      expect(backups).toHaveLength(1);
      const ri = await cli(dir, ['reinject', conn, `${base}.fifo`, '--from', join(dir, 'home', 'backups', backups[0]!), '--yes']);
      expect(ri.out).toContain('Re-injected 3 of 3');
      expect(ri.code).toBe(0);
      const back = await drainFifo(c, target.url);
      expect(back.map((m) => m.Body)).toEqual([0, 1, 2].map((n) => JSON.stringify({ orderId: `C-${n}` })));
      expect(back.map((m) => m.Attributes?.MessageGroupId)).toEqual(['g', 'g', 'g']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('SQS redrive of a DLQ that has its own RedrivePolicy (fauxqs, CLI)', () => {
  const endpoint = SQS_ENDPOINT;
  const c = client(endpoint);

  it('refused (exit 5, nothing read) without --accept-side-effects — the dry run too, which on old code moved messages at the limit on silently and exited 0; with the flag as before', async () => {
    // A chained DLQ (dlq → final): each receive, the dry run's too, counts toward the DLQ's own
    // maxReceiveCount (1 here), and at that limit SQS moves the message to final instead of
    // returning it. Old code: the dry run of messages already at the limit moved all of them to
    // final and still exited 0 ("Nothing to move", a note saying where they went).
    const dir = await mkdtemp(join(tmpdir(), 'qs-sqs-chain-'));
    try {
      const base = uniqueName('chain');
      const final = await createQueue(c, `${base}-final`);
      const dlq = await createQueue(c, `${base}-dlq`, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: final.arn, maxReceiveCount: 1 }) });
      const src = await createQueue(c, base, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 3 }) });
      for (let n = 0; n < 5; n++) await c.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: JSON.stringify({ orderId: `D-${n}` }) }));
      const conn = `sqs://${SQS_REGION}?endpoint=${endpoint}`;
      const refusal = [`Refusing to read ${base}-dlq`, `${base}-dlq has its own RedrivePolicy (maxReceiveCount 1 → ${base}-final)`, 'Nothing was read', '--accept-side-effects'];
      for (const args of [['--dry-run'], ['--yes'], ['--dry-run', '--json']]) {
        const refused = await cli(dir, ['redrive', conn, `${base}-dlq`, ...args]);
        for (const text of refusal) expect(refused.out).toContain(text);
        expect(refused.code).toBe(5);
      }
      // Nothing was received: this first receive of all 5 sees ApproximateReceiveCount 1 on each
      // (after a receive by the refused runs, SQS would have moved them to final instead).
      const first = await receiveAllThenRestore(c, dlq.url);
      expect(first.map((m) => m.Attributes?.ApproximateReceiveCount)).toEqual(['1', '1', '1', '1', '1']);
      expect(await depth(c, final.url)).toBe(0);

      // Now all 5 are at the limit: the refused dry run still moves nothing (old code: all 5 went to final, exit 0).
      const again = await cli(dir, ['redrive', conn, `${base}-dlq`, '--dry-run']);
      expect(again.code).toBe(5);
      expect(again.out).toContain(`Refusing to read ${base}-dlq`);
      expect(await depth(c, final.url)).toBe(0);
      expect(await depth(c, dlq.url)).toBe(5);

      // Accepted: the dry run's receives move them on, and it says where — exit 7, not "all fine" (see redrive-sqs-chained.test.ts).
      const accepted = await cli(dir, ['redrive', conn, `${base}-dlq`, '--dry-run', '--accept-side-effects']);
      expect(accepted.code).toBe(7);
      expect(accepted.out).toContain(`${base}-final grew by 5 messages during this run (0 → 5)`);
      expect(accepted.out).toContain(`They are in ${base}-final now, not lost`);
      expect(await depth(c, final.url)).toBe(5);
      expect(await depth(c, src.url)).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('with --accept-side-effects a message below the limit is listed as cannot move by the dry run instead of being pushed on by the real run', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'qs-sqs-chain-'));
    try {
      const base = uniqueName('chain2');
      const final = await createQueue(c, `${base}-final`);
      const dlq = await createQueue(c, `${base}-dlq`, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: final.arn, maxReceiveCount: 1 }) });
      const src = await createQueue(c, base, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 3 }) });
      for (let n = 0; n < 5; n++) await c.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: JSON.stringify({ orderId: `D-${n}` }) }));
      const conn = `sqs://${SQS_REGION}?endpoint=${endpoint}`;
      const run = await cli(dir, ['redrive', conn, `${base}-dlq`, '--yes', '--accept-side-effects']);
      expect(run.out).toContain('cannot move 5');
      expect(run.out).toContain(`5 messages reached ${base}-dlq's own maxReceiveCount (1) with this dry run's receive: the real run's receive makes SQS move them to ${base}-final`);
      expect(run.out).toContain('Nothing moved: 5 cannot move');
      expect(run.code).toBe(7);
      expect(await depth(c, dlq.url)).toBe(5);
      expect(await depth(c, final.url)).toBe(0);
      expect(await depth(c, src.url)).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
