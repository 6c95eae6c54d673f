import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateQueueCommand, DeleteQueueCommand, SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSnapshotAdapter } from '../../core/adapters/snapshot';
import { createSqsAdapter } from '../../core/adapters/sqs';
import type { InspectReport } from '../../core/inspect/inspect';
import { inspectQueue } from '../../core/inspect/inspect';
import { exportQueue } from '../../core/services/export';
import { SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS } from './env';

/**
 * Inspect on fauxqs: a FIFO queue with `ContentBasedDeduplication` and no explicit
 * MessageDeduplicationId. SQS makes the id as the SHA-256 of the body, so the key verdict judges
 * the body (identical sends share the id; a timestamp in the body makes a new one per send), not
 * the id's random-looking hex. Also a `Binary` `Idempotency-Key` message attribute is read as text.
 * Queues are named `h6-…` and deleted afterwards.
 */
const sqs = new SQSClient({ region: SQS_REGION, endpoint: SQS_ENDPOINT, credentials: SQS_TEST_CREDENTIALS });
const adapter = createSqsAdapter({ kind: 'sqs', region: SQS_REGION, endpoint: SQS_ENDPOINT, ...SQS_TEST_CREDENTIALS });
const created: string[] = [];
let dir: string;

const STABLE = JSON.stringify({ orderId: 'A-1001', operation: 'charge', amountCents: 4200 });
const TIMED = JSON.stringify({ orderId: 'A-1002', operation: 'charge', requestedAt: '2026-12-02T03:04:05.123Z' });
const SOURCE = 'SQS content-based deduplication id (SHA-256 of the body)';

async function queue(name: string, attributes: Record<string, string>): Promise<string> {
  const url = (await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }))).QueueUrl;
  if (url === undefined) throw new Error(`no QueueUrl for ${name}`);
  created.push(url);
  return url;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'h6-content-dedup-'));
});

afterAll(async () => {
  await adapter.close();
  for (const url of created) await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
  sqs.destroy();
  await rm(dir, { recursive: true, force: true });
});

/** Message id → orderId of its body, filled from the sends. */
const bodies = new Map<string, string>();

function byOrder(rep: InspectReport, orderId: string): InspectReport['messages'][number] | undefined {
  return rep.messages.find((m) => bodies.get(m.id) === orderId);
}

describe('inspect (SQS FIFO, ContentBasedDeduplication)', () => {
  let queueId = '';

  beforeAll(async () => {
    const url = await queue(`h6-cbd-${randomBytes(4).toString('hex')}.fifo`, { FifoQueue: 'true', ContentBasedDeduplication: 'true' });
    queueId = `sqs:${url}`;
    const first = await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: STABLE, MessageGroupId: 'A-1001' }));
    const again = await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: STABLE, MessageGroupId: 'A-1001' }));
    const timed = await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: TIMED, MessageGroupId: 'A-1002' }));
    for (const [r, order] of [[first, 'A-1001'], [again, 'A-1001'], [timed, 'A-1002']] as const) if (r.MessageId !== undefined) bodies.set(r.MessageId, order);
  });

  it('the identical send was deduplicated by the emulator; the id is the body hash and its verdict follows the body', async () => {
    const rep = await inspectQueue(adapter, queueId, { acceptSideEffects: true, compareDeadLetter: false });
    // Three sends, two messages: SQS dropped the second identical body.
    expect(rep.analysed).toBe(2);
    const stable = byOrder(rep, 'A-1001');
    const timed = byOrder(rep, 'A-1002');
    expect(stable?.key).toMatch(/^[0-9a-f]{64}$/);
    expect(stable?.keySource).toBe(SOURCE);
    expect(stable?.keyVerdict).toBe('business-derived');
    expect(stable?.keyReason).toContain('identical sends share it');
    expect(timed?.keySource).toBe(SOURCE);
    expect(timed?.keyVerdict).toBe('time-derived');
    expect(timed?.keyReason).toContain('body.requestedAt (2026-12-02T03:04:05.123Z), a time');
    expect(timed?.keyReason).toContain('send an explicit MessageDeduplicationId built from business values');
    for (const m of rep.messages) expect(m.keyReason).not.toContain('random hex');
  });

  it('a snapshot keeps the mark: the exported file inspects to the same verdicts', async () => {
    const path = join(dir, 'cbd.jsonl');
    const ctx = { signal: new AbortController().signal, report: () => undefined, setTotal: () => undefined };
    const r = await exportQueue(adapter, queueId, { path, acceptSideEffects: true }, ctx);
    expect(r.messages).toBe(2);
    const snap = createSnapshotAdapter({ kind: 'snapshot', path });
    try {
      const rep = await inspectQueue(snap, queueId, { compareDeadLetter: false });
      expect(rep.messages.map((m) => [bodies.get(m.id), m.keySource, m.keyVerdict]).sort()).toEqual([
        ['A-1001', SOURCE, 'business-derived'],
        ['A-1002', SOURCE, 'time-derived'],
      ]);
    } finally {
      await snap.close();
    }
  });
});

describe('inspect (SQS): a Binary Idempotency-Key message attribute', () => {
  it('is read as its UTF-8 text and classified like a String attribute', async () => {
    const url = await queue(`h6-bin-${randomBytes(4).toString('hex')}`, {});
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: JSON.stringify({ orderId: 'A-1003', operation: 'refund' }),
        MessageAttributes: { 'Idempotency-Key': { DataType: 'Binary', BinaryValue: new TextEncoder().encode('A-1003:refund') } },
      }),
    );
    const rep = await inspectQueue(adapter, `sqs:${url}`, { acceptSideEffects: true, compareDeadLetter: false });
    expect(rep.analysed).toBe(1);
    expect(rep.messages[0]).toMatchObject({ key: 'A-1003:refund', keySource: 'header Idempotency-Key (binary, read as UTF-8)', keyVerdict: 'business-derived' });
  });
});
