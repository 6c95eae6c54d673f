import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SnapshotWriter } from '../../core/snapshot/writer';
import type { QueueMessage, QueueSummary } from '../../shared/domain';
import { SQS_ENDPOINT, SQS_REGION, uniqueName } from './env';
import { fifoBackupTooBigForTarget } from './fixtures/fifo-backup';
import { runCliMerged } from './fixtures/run-cli';
import { drainFifo, sqsResources, useSqsTestCredentials } from './fixtures/sqs-resources';

/**
 * `queuescope reinject` into an SQS FIFO queue publishes the file batch by batch (--batch). A
 * message of a group the queue did not take in one batch stops its group for the whole run: the
 * group's later messages, in later batches too, are held back (not sent, named, exit 7) and stay in
 * the file. Old code started every group afresh with each batch, so the group's next message
 * reached the queue ahead of the one refused (refused by SQS, or before sending: over the queue's
 * MaximumMessageSize). fauxqs: local-aws-sqs takes a U+0001 body, so it cannot make SQS refuse one here.
 */

const { client, createQueue } = sqsResources();
useSqsTestCredentials();

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'qs-reinject-fifo-held-'));
  dirs.push(d);
  return d;
}

const sha = async (path: string): Promise<string> => createHash('sha256').update(await readFile(path)).digest('hex');

/**
 * An export of an SQS FIFO DLQ: m1 g-1 (body with U+0001 — text a snapshot may hold, which SQS
 * refuses per entry as InvalidMessageContents), m2 h-1, m3 g-2, m4 h-2, m5 g-3, m6 h-3. With
 * --batch 2 every batch holds one message of each group: g's next message is always in the next batch.
 */
async function writeExport(dir: string): Promise<string> {
  const path = join(dir, 'orders-dlq.jsonl');
  const queue: QueueSummary = {
    id: 'sqs:http://127.0.0.1/000000000000/orders-dlq.fifo', name: 'orders-dlq.fifo', broker: 'sqs', kind: 'sqs-fifo', depth: 6, inFlight: 0, delayed: 0, consumers: null, counts: {}, deadLetterTargets: [], deadLetterSources: [], isDeadLetterQueue: true,
    capabilities: { canPeekNonDestructively: false, peekSideEffects: [], peekMayDeadLetter: true, canPageFromCursor: false, maxPeekWindow: 100, peekStates: [] }, config: {},
  };
  const w = await SnapshotWriter.create(path);
  await w.writeHeader({ exportedAt: Date.now(), source: { broker: 'sqs', connection: 'test', queue } });
  const rows: [string, string, string][] = [['m1', 'g-1\u0001', 'g'], ['m2', 'h-1', 'h'], ['m3', 'g-2', 'g'], ['m4', 'h-2', 'h'], ['m5', 'g-3', 'g'], ['m6', 'h-3', 'h']];
  for (const [n, [id, body, group]] of rows.entries()) {
    const m: QueueMessage = { id, queueId: queue.id, queueName: queue.name, position: n, body: { encoding: 'utf8', data: body, sizeBytes: Buffer.byteLength(body), truncated: false }, headers: {}, properties: {}, meta: { messageGroupId: group } };
    await w.writeMessage(m);
  }
  await w.finish();
  return path;
}

describe('SQS FIFO reinject: a group stops at a message not published, across --batch boundaries', () => {
  it('fauxqs refuses g-1 per entry: g-2 and g-3 (next batches) are held back, named, exit 7, and stay in the file; old code published them ahead of g-1', async () => {
    const c = client(SQS_ENDPOINT);
    const dir = await tempDir();
    const file = await writeExport(dir);
    const before = await sha(file);
    const target = await createQueue(c, `${uniqueName('ri-held')}.fifo`, { FifoQueue: 'true' });
    const r = await runCliMerged(dir, ['reinject', `sqs://${SQS_REGION}?endpoint=${SQS_ENDPOINT}`, target.name, '--from', file, '--batch', '2', '--yes']);
    expect(r.code, r.out).toBe(7);
    expect((await drainFifo(c, target.url)).map((m) => m.Body)).toEqual(['h-1', 'h-2', 'h-3']);
    expect(r.out).toContain(`Re-injected 3 of 6 messages from ${file} into ${target.name} (3 failed, 2 of them held back).`);
    expect(r.out).toContain('Message m1 was not published: SQS did not accept the message');
    expect(r.out).toContain('InvalidMessageContents');
    for (const id of ['m3', 'm5']) expect(r.out).toContain(`Message ${id} was not published: Held back: message m1, an earlier message of its FIFO message group "g", was not published to ${target.name}`);
    expect(r.out).toContain(`2 messages were held back, not sent: an earlier message of their FIFO message group was not published`);
    expect(r.out).toContain(`They are still in ${file}, in order`);
    // Nothing lost: the file is as it was, g-1, g-2, g-3 with it.
    expect(await sha(file)).toBe(before);
    // The audit log counts them.
    const h = await runCliMerged(dir, ['history', '--json']);
    expect(h.out).toContain('"heldBack": 2');
  });

  it('a redrive backup re-injected into a FIFO queue too small for g-1 (refused before sending): g-2, g-3 are held back; old code published them', async () => {
    // A real backup: redrive a FIFO DLQ (fauxqs), the consumer loses the messages, the operator
    // puts the backup back — into a queue whose MaximumMessageSize (1,024 bytes) g-1 exceeds.
    const c = client(SQS_ENDPOINT);
    const dir = await tempDir();
    const { conn, small, file } = await fifoBackupTooBigForTarget(c, createQueue, dir, 'ri-held3');
    const before = await sha(file);
    const r = await runCliMerged(dir, ['reinject', conn, small.name, '--from', file, '--batch', '2', '--yes']);
    expect(r.code, r.out).toBe(7);
    expect((await drainFifo(c, small.url)).map((m) => m.Body)).toEqual(['h-1', 'h-2', 'h-3']);
    expect(r.out).toContain('(3 failed, 2 of them held back)');
    expect(r.out).toContain(`more than ${small.name}'s MaximumMessageSize of 1024 bytes`);
    expect(r.out.match(/Held back: message \S+, an earlier message of its FIFO message group "g"/g)).toHaveLength(2);
    expect(await sha(file)).toBe(before);
  });
});
