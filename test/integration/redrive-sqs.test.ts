import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createInterface } from 'node:readline';
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SQSClient,
  SendMessageBatchCommand,
  SendMessageCommand,
  type Message,
  type MessageAttributeValue,
  type SendMessageBatchRequestEntry,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { REDRIVE_COUNT_HEADER, type MoveBatchResult, type MoveHooks, type RedriveDecision } from '../../core/adapters/redrive-types';
import { QueuescopeError, type QueueMessage } from '../../shared/domain';
import { SQS_ALT_ENDPOINT, SQS_ENDPOINT, uniqueName } from './env';
import { sqsResources, type CreatedQueue } from './fixtures/sqs-resources';

/**
 * The SQS redrive mover (core/adapters/sqs/redrive.ts) against both emulators: fauxqs (4566) and
 * local-aws-sqs (4577). Emulator differences that matter here (see /work/shared/FACTS.md):
 * - fauxqs has no message-move-task API (native move unavailable); local-aws-sqs has it.
 * - fauxqs FIFO receives return one message per group; local-aws-sqs counts visibility changes as receives.
 * - fauxqs accepts 11 message attributes (AWS and local-aws-sqs refuse): the mover enforces 10 itself.
 *
 * Fault test: a child process (fixtures/sqs-redrive-child.ts) redrives 10,000 messages and is
 * SIGKILLed at random points (QS_SQS_FAULT_TRIALS trials on fauxqs, default 10; QS_SQS_FAULT_TRIALS_ALT
 * on local-aws-sqs, default 3, as it is several times slower); after each kill and the child's
 * visibility timeout, every message (by the id in its body) must be in the DLQ or the target.
 */

const EMULATORS = [
  { label: 'fauxqs', endpoint: SQS_ENDPOINT },
  { label: 'local-aws-sqs', endpoint: SQS_ALT_ENDPOINT },
] as const;

const { client, adapterFor, createQueue } = sqsResources();
type Q = CreatedQueue;

/** A DLQ with a source queue whose RedrivePolicy points at it, plus an unrelated target. */
async function dlqPair(c: SQSClient, label: string, fifo = false): Promise<{ src: Q; dlq: Q }> {
  const base = uniqueName(label);
  const sfx = fifo ? '.fifo' : '';
  const fifoAttrs: Record<string, string> = fifo ? { FifoQueue: 'true' } : {};
  const dlq = await createQueue(c, `${base}-dlq${sfx}`, fifoAttrs);
  const src = await createQueue(c, `${base}${sfx}`, { ...fifoAttrs, RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 5 }) });
  return { src, dlq };
}

async function inParallel<T>(items: T[], n: number, fn: (x: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: n }, async () => {
      for (let x = queue.shift(); x !== undefined; x = queue.shift()) await fn(x);
    }),
  );
}

/** Sends `entries` (Id set here) in batches of 10, 8 calls at a time. */
async function seed(c: SQSClient, url: string, entries: Omit<SendMessageBatchRequestEntry, 'Id'>[]): Promise<void> {
  const chunks: Omit<SendMessageBatchRequestEntry, 'Id'>[][] = [];
  for (let i = 0; i < entries.length; i += 10) chunks.push(entries.slice(i, i + 10));
  await inParallel(chunks, 8, async (chunk) => {
    const r = await c.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: chunk.map((e, j) => ({ ...e, Id: `s${j}` })) }));
    if ((r.Failed ?? []).length > 0) throw new Error(`seed failed: ${JSON.stringify(r.Failed)}`);
  });
}

/**
 * Receives every message of a queue with a long visibility timeout (so none is counted twice):
 * stops after 3 empty receives in a row. `then`: 'restore' makes them visible again, 'delete' removes them.
 */
async function drain(c: SQSClient, url: string, then: 'restore' | 'delete' | 'keep' = 'keep'): Promise<Message[]> {
  const out: Message[] = [];
  let empty = 0;
  while (empty < 3) {
    const rs = await Promise.all(
      Array.from({ length: 4 }, () =>
        c.send(
          // eslint-disable-next-line @typescript-eslint/no-deprecated
          new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 300, WaitTimeSeconds: 0, AttributeNames: ['All'], MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'] }),
        ),
      ),
    );
    const got = rs.flatMap((r) => r.Messages ?? []);
    if (got.length === 0) empty++;
    else empty = 0;
    out.push(...got);
  }
  if (then !== 'keep') {
    const chunks: Message[][] = [];
    for (let i = 0; i < out.length; i += 10) chunks.push(out.slice(i, i + 10));
    await inParallel(chunks, 8, async (chunk) => {
      const entries = chunk.map((m, j) => ({ Id: `x${j}`, ReceiptHandle: m.ReceiptHandle! }));
      if (then === 'delete') await c.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: entries }));
      else await c.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: entries.map((e) => ({ ...e, VisibilityTimeout: 0 })) }));
    });
  }
  return out;
}

const bodyN = (m: Message): number => (JSON.parse(m.Body ?? '{}') as { n: number }).n;

interface Recorded {
  batches: MoveBatchResult[];
  decided: string[];
  backedUp: string[];
}

function hooks(decide: (m: QueueMessage) => RedriveDecision, extra: Partial<MoveHooks> = {}): { hooks: MoveHooks; rec: Recorded } {
  const rec: Recorded = { batches: [], decided: [], backedUp: [] };
  return {
    rec,
    hooks: {
      gate: extra.gate ?? (() => Promise.resolve()),
      decide: (m) => {
        rec.decided.push(m.id);
        return decide(m);
      },
      beforeMove: async (ms) => {
        rec.backedUp.push(...ms.map((m) => m.id));
        if (extra.beforeMove) await extra.beforeMove(ms);
      },
      onBatch: (r) => {
        rec.batches.push(r);
        extra.onBatch?.(r);
      },
    },
  };
}

/** Messages with every attribute type; some already redriven twice. */
function richEntries(count: number): Omit<SendMessageBatchRequestEntry, 'Id'>[] {
  return Array.from({ length: count }, (_, n) => {
    const attrs: Record<string, MessageAttributeValue> = {
      kind: { DataType: 'String', StringValue: n % 2 === 0 ? 'even' : 'odd' },
      amount: { DataType: 'Number', StringValue: n % 3 === 0 ? '1.50' : String(n) },
      blob: { DataType: 'Binary', BinaryValue: new Uint8Array([0, 255, n % 256]) },
      'trace.id': { DataType: 'String.custom', StringValue: `t-${n}` },
    };
    if (n % 5 === 0) attrs[REDRIVE_COUNT_HEADER] = { DataType: 'Number', StringValue: '2' };
    return { MessageBody: JSON.stringify({ n, orderId: `A-${1000 + n}`, text: 'ünïcødé ✓' }), MessageAttributes: attrs };
  });
}


describe.each(EMULATORS)('SQS redrive mover on $label', ({ endpoint, label }) => {
  const c = client(endpoint);

  it('moves a whole DLQ to its resolved source: bodies and attributes (with types) kept, redrive counter +1, ≤ 0.35 calls per message', async () => {
    const { src, dlq } = await dlqPair(c, 'rd-whole');
    await seed(c, dlq.url, richEntries(300));
    const adapter = adapterFor(endpoint);
    const summary0 = await adapter.getQueue(dlq.id);
    const { hooks: h, rec } = hooks((m) => {
      const t = adapter.redrive.resolveTarget(m, summary0);
      return t ? { action: 'move', targetQueueId: t.queueId } : { action: 'skip', reason: 'no target' };
    });
    expect(adapter.redrive.resolveTarget({} as QueueMessage, summary0)).toEqual({ queueId: src.id, via: 'RedrivePolicy source' });
    const summary = await adapter.redrive.moveClientSide({ sourceQueueId: dlq.id, batchSize: 100, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h);
    expect(summary).toMatchObject({ examined: 300, moved: 300, skipped: 0, failed: 0, possibleDuplicates: 0, stoppedBecause: 'cutoff' });
    expect(summary.apiCalls).toBeDefined();
    expect(summary.apiCalls! / summary.moved).toBeLessThanOrEqual(0.35);
    expect(new Set(rec.decided).size).toBe(300);
    expect(rec.decided.length).toBe(300);
    expect(rec.backedUp.length).toBe(300);
    expect(rec.batches.reduce((s, b) => s + b.moved.length, 0)).toBe(300);

    expect(await drain(c, dlq.url)).toEqual([]);
    const moved = await drain(c, src.url);
    expect(moved.map(bodyN).sort((a, b) => a - b)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    for (const m of moved) {
      const n = bodyN(m);
      expect(m.Body).toBe(JSON.stringify({ n, orderId: `A-${1000 + n}`, text: 'ünïcødé ✓' }));
      const a = m.MessageAttributes!;
      expect(a.kind).toEqual({ DataType: 'String', StringValue: n % 2 === 0 ? 'even' : 'odd' });
      expect(a.amount).toEqual({ DataType: 'Number', StringValue: n % 3 === 0 ? '1.50' : String(n) });
      expect([...(a.blob!.BinaryValue ?? [])]).toEqual([0, 255, n % 256]);
      expect(a.blob!.DataType).toBe('Binary');
      expect(a['trace.id']).toEqual({ DataType: 'String.custom', StringValue: `t-${n}` });
      expect(a[REDRIVE_COUNT_HEADER]).toEqual({ DataType: 'Number', StringValue: n % 5 === 0 ? '3' : '1' });
    }
  });

  it('filtered: skipped messages stay in the DLQ unchanged and are examined once; only confirmed sends are deleted', async () => {
    const { src, dlq } = await dlqPair(c, 'rd-filter');
    await seed(c, dlq.url, richEntries(120));
    const adapter = adapterFor(endpoint);
    const { hooks: h, rec } = hooks((m) => ((JSON.parse(m.body.data) as { n: number }).n % 3 === 0 ? { action: 'skip', reason: 'non-retryable: HTTP 422' } : { action: 'move', targetQueueId: src.id }));
    const summary = await adapter.redrive.moveClientSide({ sourceQueueId: dlq.id, batchSize: 50, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h);
    expect(summary).toMatchObject({ examined: 120, moved: 80, skipped: 40, failed: 0, possibleDuplicates: 0 });
    expect(rec.decided.length).toBe(120);
    expect(new Set(rec.decided).size).toBe(120);
    expect(rec.batches.flatMap((b) => b.skipped.map((s) => s.reason))).toEqual(Array.from({ length: 40 }, () => 'non-retryable: HTTP 422'));
    expect(summary.notes?.join(' ')).toMatch(/40 messages left in .* \(40 skipped\) were hidden during the run and made visible again/);
    expect(summary.notes?.join(' ')).toMatch(/ApproximateReceiveCount \+1/);

    const left = await drain(c, dlq.url);
    expect(left.map(bodyN).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i * 3));
    for (const m of left) {
      const n = bodyN(m);
      expect(m.MessageAttributes?.kind?.StringValue).toBe(n % 2 === 0 ? 'even' : 'odd');
      // The skipped message was not re-sent: its redrive counter is what it was.
      expect(m.MessageAttributes?.[REDRIVE_COUNT_HEADER]?.StringValue).toBe(n % 5 === 0 ? '2' : undefined);
    }
    expect((await drain(c, src.url)).map(bodyN).sort((a, b) => a - b)).toEqual(Array.from({ length: 120 }, (_, i) => i).filter((n) => n % 3 !== 0));
  });

  it('cutoff: messages dead-lettered during the run stay; the run examines at most the start count', async () => {
    const { src, dlq } = await dlqPair(c, 'rd-cutoff');
    await seed(c, dlq.url, richEntries(60));
    const adapter = adapterFor(endpoint);
    let batches = 0;
    let lateSent = false;
    const { hooks: h } = hooks(() => ({ action: 'move', targetQueueId: src.id }), {
      onBatch: () => {
        batches++;
      },
      // After the first batch, 25 messages "dead-letter" into the DLQ while the run goes on.
      gate: async () => {
        if (batches > 0 && !lateSent) {
          lateSent = true;
          await seed(c, dlq.url, Array.from({ length: 25 }, (_, i) => ({ MessageBody: JSON.stringify({ n: 1000 + i, late: true }) })));
        }
      },
    });
    const cutoff = Date.now();
    await new Promise((r) => setTimeout(r, 5)); // late messages get a SentTimestamp after the cutoff
    const summary = await adapter.redrive.moveClientSide({ sourceQueueId: dlq.id, batchSize: 20, cutoffMs: cutoff, maxMessages: null, dryRun: false }, h);
    expect(lateSent).toBe(true);
    expect(summary.moved).toBe(60);
    expect(summary.examined).toBe(60);
    const left = await drain(c, dlq.url);
    expect(left.map(bodyN).sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => 1000 + i));
    expect((await drain(c, src.url)).map(bodyN).sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i));
  });

  it('maxMessages bounds the run (stoppedBecause max-messages) and the rest stays', async () => {
    const { src, dlq } = await dlqPair(c, 'rd-max');
    await seed(c, dlq.url, richEntries(45));
    const adapter = adapterFor(endpoint);
    const { hooks: h } = hooks(() => ({ action: 'move', targetQueueId: src.id }));
    const summary = await adapter.redrive.moveClientSide({ sourceQueueId: dlq.id, batchSize: 10, cutoffMs: Date.now(), maxMessages: 17, dryRun: false }, h);
    expect(summary).toMatchObject({ examined: 17, moved: 17, stoppedBecause: 'max-messages' });
    expect((await drain(c, dlq.url)).length + (await drain(c, src.url)).length).toBe(45);
  });

  it('dry run changes nothing but the receive count, and says so', async () => {
    const { src, dlq } = await dlqPair(c, 'rd-dry');
    await seed(c, dlq.url, richEntries(40));
    const adapter = adapterFor(endpoint);
    const { hooks: h, rec } = hooks((m) => ((JSON.parse(m.body.data) as { n: number }).n < 30 ? { action: 'move', targetQueueId: src.id } : { action: 'skip', reason: 'not selected' }));
    const summary = await adapter.redrive.moveClientSide({ sourceQueueId: dlq.id, batchSize: 100, cutoffMs: Date.now(), maxMessages: null, dryRun: true }, h);
    expect(summary).toMatchObject({ examined: 40, moved: 30, skipped: 10, failed: 0 });
    expect(rec.backedUp).toEqual([]); // nothing to back up: nothing moves
    expect(summary.notes?.join(' ')).toMatch(/Each of the 40 messages read got ApproximateReceiveCount \+1/);
    expect(summary.notes?.join(' ')).toMatch(/40 read in the dry run/);
    expect(await drain(c, src.url)).toEqual([]);
    const left = await drain(c, dlq.url);
    expect(left.map(bodyN).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    for (const m of left) expect(Number(m.Attributes?.ApproximateReceiveCount)).toBeGreaterThanOrEqual(2);
  });

  it('cancellation mid-run finishes the batch in hand: every message in exactly one place', async () => {
    const { src, dlq } = await dlqPair(c, 'rd-cancel');
    await seed(c, dlq.url, richEntries(200));
    const adapter = adapterFor(endpoint);
    const ac = new AbortController();
    let batches = 0;
    const { hooks: h, rec } = hooks((m) => ((JSON.parse(m.body.data) as { n: number }).n % 4 === 0 ? { action: 'skip', reason: 'not selected' } : { action: 'move', targetQueueId: src.id }), {
      onBatch: () => {
        if (++batches === 2) ac.abort();
      },
    });
    let code = 'none';
    try {
      await adapter.redrive.moveClientSide({ sourceQueueId: dlq.id, batchSize: 30, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h, ac.signal);
    } catch (e) {
      code = (e as QueuescopeError).code;
    }
    expect(code).toBe('CANCELLED');
    expect(rec.batches.length).toBe(2);
    const moved = rec.batches.reduce((s, b) => s + b.moved.length, 0);
    const inDlq = (await drain(c, dlq.url)).map(bodyN);
    const inSrc = (await drain(c, src.url)).map(bodyN);
    expect(inSrc.length).toBe(moved);
    expect([...inDlq, ...inSrc].sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it('a message with 10 attributes is not moved (the counter would be the 11th): failed with the reason, left intact', async () => {
    const { src, dlq } = await dlqPair(c, 'rd-attrs');
    const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`a${i}`, { DataType: 'String', StringValue: `v${i}` }]));
    await seed(c, dlq.url, [{ MessageBody: JSON.stringify({ n: 1 }), MessageAttributes: ten }, { MessageBody: JSON.stringify({ n: 2 }) }]);
    const adapter = adapterFor(endpoint);
    const { hooks: h, rec } = hooks(() => ({ action: 'move', targetQueueId: src.id }));
    const summary = await adapter.redrive.moveClientSide({ sourceQueueId: dlq.id, batchSize: 10, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h);
    expect(summary).toMatchObject({ moved: 1, failed: 1 });
    const f = rec.batches.flatMap((b) => b.failed);
    expect(f[0]?.error.message).toMatch(/already has 10 message attributes, the SQS maximum of 10/);
    const left = await drain(c, dlq.url);
    expect(left.map(bodyN)).toEqual([1]);
    expect(Object.keys(left[0]!.MessageAttributes ?? {}).sort()).toEqual(Object.keys(ten).sort());
    expect((await drain(c, src.url)).map(bodyN)).toEqual([2]);
  });

  it('FIFO: group ids kept, order within groups kept, deduplication id derived (a kept one would be dropped as a duplicate)', async () => {
    const { src, dlq } = await dlqPair(c, 'rd-fifo', true);
    // The source still holds a message sent < 5 min ago with the deduplication id the dead letters carry:
    // re-sending with that id would be accepted and silently dropped.
    await c.send(new SendMessageCommand({ QueueUrl: src.url, MessageBody: JSON.stringify({ n: -1 }), MessageGroupId: 'g0', MessageDeduplicationId: 'dup-0' }));
    const entries = Array.from({ length: 24 }, (_, n) => ({ MessageBody: JSON.stringify({ n }), MessageGroupId: `g${n % 3}`, MessageDeduplicationId: `dup-${n}` }));
    for (const e of entries) await c.send(new SendMessageCommand({ QueueUrl: dlq.url, ...e }));
    const adapter = adapterFor(endpoint);
    const { hooks: h } = hooks(() => ({ action: 'move', targetQueueId: src.id }));
    const summary = await adapter.redrive.moveClientSide({ sourceQueueId: dlq.id, batchSize: 30, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h);
    expect(summary).toMatchObject({ moved: 24, failed: 0 });
    // FIFO: read group by group (a receive only returns the heads of groups not in flight).
    const got: Message[] = [];
    for (let i = 0; i < 100 && got.length < 25; i++) {
      const r = await c.send(
        // eslint-disable-next-line @typescript-eslint/no-deprecated
        new ReceiveMessageCommand({ QueueUrl: src.url, MaxNumberOfMessages: 10, VisibilityTimeout: 300, AttributeNames: ['All'], MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'] }),
      );
      got.push(...(r.Messages ?? []));
      if ((r.Messages ?? []).length > 0) await c.send(new DeleteMessageBatchCommand({ QueueUrl: src.url, Entries: r.Messages!.map((m, j) => ({ Id: `d${j}`, ReceiptHandle: m.ReceiptHandle! })) }));
    }
    expect(got.map(bodyN).sort((a, b) => a - b)).toEqual([-1, ...Array.from({ length: 24 }, (_, i) => i)]);
    for (const g of [0, 1, 2]) {
      const inGroup = got.filter((m) => m.Attributes?.MessageGroupId === `g${g}` && bodyN(m) >= 0).map(bodyN);
      expect(inGroup).toEqual(Array.from({ length: 8 }, (_, i) => i * 3 + g));
    }
    const redriven = got.filter((m) => bodyN(m) >= 0);
    for (const m of redriven) {
      expect(m.Attributes?.MessageDeduplicationId).toMatch(/^[0-9a-f]{64}$/);
      expect(m.MessageAttributes?.[REDRIVE_COUNT_HEADER]?.StringValue).toBe('1');
    }
    expect(await drain(c, dlq.url)).toEqual([]);
  });

  it('publish(): SendMessageBatch with per-entry success, content and counter as in a redrive', async () => {
    const { src, dlq } = await dlqPair(c, 'rd-pub');
    await seed(c, dlq.url, richEntries(12));
    const adapter = adapterFor(endpoint);
    const page = await adapter.peek(dlq.id, { limit: 12, acceptSideEffects: true });
    expect(page.messages.length).toBe(12);
    const bad: QueueMessage = { ...page.messages[0]!, id: 'bad-1', body: { encoding: 'base64', data: 'AAEC', sizeBytes: 3, truncated: false } };
    const r = await adapter.redrive.publish(src.id, [...page.messages, bad]);
    expect(r.published.sort()).toEqual(page.messages.map((m) => m.id).sort());
    expect(r.failed.map((f) => f.id)).toEqual(['bad-1']);
    expect(r.failed[0]?.error.message).toMatch(/binary \(base64\) body/);
    const got = await drain(c, src.url);
    expect(got.map(bodyN).sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    for (const m of got) expect(m.MessageAttributes?.[REDRIVE_COUNT_HEADER]?.StringValue).toBe(bodyN(m) % 5 === 0 ? '3' : '1');
  });

  it('a DLQ with its own RedrivePolicy is detected and stated', async () => {
    const base = uniqueName('rd-chain');
    const last = await createQueue(c, `${base}-final-dlq`);
    const chained = await createQueue(c, `${base}-dlq`, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: last.arn, maxReceiveCount: 4 }) });
    await seed(c, chained.url, richEntries(3));
    const adapter = adapterFor(endpoint);
    const { hooks: h } = hooks(() => ({ action: 'skip', reason: 'not selected' }));
    const summary = await adapter.redrive.moveClientSide({ sourceQueueId: chained.id, batchSize: 10, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, h);
    expect(summary.notes?.join(' ')).toContain(`${chained.name} has its own RedrivePolicy (maxReceiveCount 4 → ${last.name})`);
  });

  it(`native move: ${label === 'fauxqs' ? 'reported unavailable (no message-move-task API)' : 'StartMessageMoveTask back to the source, status, cancel'}`, async () => {
    const adapter = adapterFor(endpoint);
    const { src, dlq } = await dlqPair(c, 'rd-native');
    if (label === 'fauxqs') {
      const s = await adapter.getQueue(dlq.id);
      const support = await adapter.redrive.nativeMove(s, null);
      expect(support).toMatchObject({ available: false, mechanism: 'SQS StartMessageMoveTask' });
      expect(support.note).toMatch(/does not implement ListMessageMoveTasks\/StartMessageMoveTask \(InvalidAction\)/);
      let code = 'none';
      try {
        await adapter.redrive.startNativeMove(s, null, null);
      } catch (e) {
        code = (e as QueuescopeError).code;
      }
      expect(code).toBe('UNSUPPORTED');
      return;
    }
    // Dead-letter 6 messages for real (maxReceiveCount 5) so they carry DeadLetterQueueSourceArn.
    await seed(c, src.url, Array.from({ length: 6 }, (_, n) => ({ MessageBody: JSON.stringify({ n }) })));
    for (let i = 0; i < 7; i++) {
      await c.send(new ReceiveMessageCommand({ QueueUrl: src.url, MaxNumberOfMessages: 10, VisibilityTimeout: 1 }));
      await new Promise((r) => setTimeout(r, 1100));
    }
    const inDlq = await drain(c, dlq.url, 'restore');
    expect(inDlq.length).toBe(6);
    const s = await adapter.getQueue(dlq.id);
    const support = await adapter.redrive.nativeMove(s, null);
    expect(support).toMatchObject({ available: true, supportsRate: true, supportsTarget: true });
    // Cancel a running task (rate 1 msg/s, so it is still running), then move the rest.
    const slow = await adapter.redrive.startNativeMove(s, null, 1);
    expect((await adapter.redrive.nativeMove(s, null)).note).toMatch(/already running/);
    await adapter.redrive.cancelNativeMove(slow);
    let slowStatus = await adapter.redrive.nativeMoveStatus(slow);
    for (let i = 0; i < 40 && slowStatus.status === 'running'; i++) {
      await new Promise((r) => setTimeout(r, 250));
      slowStatus = await adapter.redrive.nativeMoveStatus(slow);
    }
    expect(slowStatus.status).toBe('cancelled');
    expect(slowStatus.moved).toBeLessThan(6);
    await adapter.redrive.cancelNativeMove(slow); // idempotent
    const handle = await adapter.redrive.startNativeMove(s, null, 100);
    let status = await adapter.redrive.nativeMoveStatus(handle);
    for (let i = 0; i < 40 && status.status === 'running'; i++) {
      await new Promise((r) => setTimeout(r, 250));
      status = await adapter.redrive.nativeMoveStatus(handle);
    }
    expect(status).toMatchObject({ status: 'completed', moved: 6 - slowStatus.moved, error: null });
    await adapter.redrive.cancelNativeMove(handle); // idempotent on a finished task
    expect((await drain(c, src.url)).map(bodyN).sort()).toEqual([0, 1, 2, 3, 4, 5]);
    let rateCode = 'none';
    try {
      await adapter.redrive.startNativeMove(s, null, 501);
    } catch (e) {
      rateCode = (e as QueuescopeError).code;
    }
    expect(rateCode).toBe('INVALID_INPUT');
    // A standard DLQ cannot be moved natively into a FIFO queue.
    const fifo = await createQueue(c, `${uniqueName('rd-native')}.fifo`, { FifoQueue: 'true' });
    expect((await adapter.redrive.nativeMove(s, fifo.id)).available).toBe(false);
  });
});

// ---------------------------------------------------------------------------- fault test

const FIXTURE = join(__dirname, 'fixtures', 'sqs-redrive-child.ts');
/** tsx as a loader in the same process (its CLI would run the script in a grandchild that a SIGKILL would not reach). */
const TSX_LOADER = pathToFileURL(join(__dirname, '..', '..', 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const FAULT_N = Number(process.env.QS_SQS_FAULT_MESSAGES ?? 10_000);
const CHILD_VT_S = 4;

interface ChildRun {
  killedAt: number | null;
  done: boolean;
}

/** Runs the child mover; kills it with SIGKILL once it reports `killAfterMoved` moved (plus 0–300 ms), or lets it finish when null. */
function runChild(endpoint: string, dlqId: string, targetId: string, killAfterMoved: number | null): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX_LOADER, FIXTURE, endpoint, dlqId, targetId, String(CHILD_VT_S), '100'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let killedAt: number | null = null;
    let done = false;
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      const v = JSON.parse(line) as { moved?: number; done?: boolean };
      if (v.done === true) done = true;
      if (killAfterMoved !== null && killedAt === null && (v.moved ?? 0) >= killAfterMoved) {
        killedAt = v.moved ?? 0;
        setTimeout(() => child.kill('SIGKILL'), Math.floor(Math.random() * 300));
      }
    });
    if (killAfterMoved === 0) {
      killedAt = 0;
      setTimeout(() => child.kill('SIGKILL'), 1500 + Math.floor(Math.random() * 1500));
    }
    child.on('error', reject);
    child.on('exit', (code, sig) => {
      if (sig === 'SIGKILL' || code === 0) resolve({ killedAt, done });
      else reject(new Error(`child exited ${String(code)}: ${stderr.slice(-2000)}`));
    });
  });
}

describe.each([
  { label: 'fauxqs', endpoint: SQS_ENDPOINT, trials: Number(process.env.QS_SQS_FAULT_TRIALS ?? 10) },
  { label: 'local-aws-sqs', endpoint: SQS_ALT_ENDPOINT, trials: Number(process.env.QS_SQS_FAULT_TRIALS_ALT ?? 3) },
])('SQS redrive fault test on $label: SIGKILL during a redrive of 10,000 messages', ({ endpoint, label, trials }) => {
  it(`${trials} kills at random points: zero lost, duplicates counted, a final run completes`, async () => {
    const c = client(endpoint);
    const base = uniqueName('rd-fault');
    const dlq = await createQueue(c, `${base}-dlq`);
    const target = await createQueue(c, base);
    await seed(c, dlq.url, Array.from({ length: FAULT_N }, (_, n) => ({ MessageBody: JSON.stringify({ n, pad: 'x'.repeat(100) }) })));
    /** How often each id has reached the target (collected and removed after each trial). */
    const inTarget = new Map<number, number>();
    const report: string[] = [];
    /** Ids in both the DLQ and the target after the previous trial (they stay until a later run moves them again). */
    let inBothBefore = new Set<number>();
    for (let t = 0; t < trials; t++) {
      const remainingBefore = FAULT_N - inTarget.size;
      // Kill somewhere in the first quarter of what is left (0 = while it starts or reads its first
      // batch), so the DLQ still holds thousands of messages in the last trials and every trial can
      // be killed mid-run (with 60 % the DLQ was empty after ~6 trials and the rest finished first).
      const killAfter = Math.random() < 0.15 ? 0 : Math.floor(Math.random() * remainingBefore * 0.25);
      const r = await runChild(endpoint, dlq.id, target.id, killAfter);
      await new Promise((res) => setTimeout(res, (CHILD_VT_S + 1) * 1000)); // the killed run's hidden messages come back
      for (const m of await drain(c, target.url, 'delete')) inTarget.set(bodyN(m), (inTarget.get(bodyN(m)) ?? 0) + 1);
      const dlqIds = (await drain(c, dlq.url, 'restore')).map(bodyN);
      const everywhere = new Set([...dlqIds, ...inTarget.keys()]);
      const lost = Array.from({ length: FAULT_N }, (_, i) => i).filter((i) => !everywhere.has(i));
      const inBoth = dlqIds.filter((i) => inTarget.has(i));
      const dupInDlqAndTarget = inBoth.length;
      // Only this kill's duplicates count against the bound: earlier kills' copies are still in both places.
      const newDupInDlqAndTarget = inBoth.filter((i) => !inBothBefore.has(i)).length;
      inBothBefore = new Set(inBoth);
      const dupInTarget = [...inTarget.values()].reduce((s, k) => s + k - 1, 0);
      report.push(`trial ${t + 1}: kill after ${r.killedAt ?? '-'} moved (${r.done ? 'finished first' : 'killed'}); DLQ ${dlqIds.length}, target ${inTarget.size}; lost ${lost.length}; duplicates: ${dupInDlqAndTarget} in DLQ+target (${newDupInDlqAndTarget} new), ${dupInTarget} twice in target`);
      expect(lost, report.join('\n')).toEqual([]);
      // A kill can duplicate at most the batch in hand (100).
      expect(newDupInDlqAndTarget, report.join('\n')).toBeLessThanOrEqual(100);
    }
    await runChild(endpoint, dlq.id, target.id, null);
    for (const m of await drain(c, target.url, 'delete')) inTarget.set(bodyN(m), (inTarget.get(bodyN(m)) ?? 0) + 1);
    const left = await drain(c, dlq.url);
    const duplicates = [...inTarget.values()].reduce((s, k) => s + k - 1, 0);
    report.push(`final run: DLQ ${left.length}, target ${inTarget.size} distinct, ${duplicates} duplicates in total`);
    process.stdout.write(`[redrive-sqs fault ${label}]\n${report.join('\n')}\n`);
    expect(left).toEqual([]);
    expect(inTarget.size).toBe(FAULT_N);
  }, 900_000);
});
