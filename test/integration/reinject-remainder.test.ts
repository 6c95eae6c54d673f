import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SnapshotWriter } from '../../core/snapshot/writer';
import type { QueueMessage, QueueSummary } from '../../shared/domain';
import { AMQP_URL, SQS_ENDPOINT, uniqueName } from './env';
import { fifoBackupTooBigForTarget } from './fixtures/fifo-backup';
import { runCliMerged } from './fixtures/run-cli';
import { drainFifo, sqsResources, useSqsTestCredentials } from './fixtures/sqs-resources';
import { closeNative, nativeChannel, nativeCount, nativeDeleteQueue, nativeTakeAll } from './rabbitmq-native';

/**
 * `queuescope reinject` writes the messages it did not publish to a remainder file, so that they —
 * and only they — can be published once the cause is fixed. Old code left them only in the file
 * re-injected, which also holds the messages it published: publishing it again duplicated those.
 * Against real brokers: fauxqs (SQS FIFO, a real redrive backup, a message too large for the target
 * and its group held back behind it) and RabbitMQ (a queue that refuses publishes when full).
 */

const { client, createQueue } = sqsResources();
useSqsTestCredentials();

const dirs: string[] = [];
const rabbitQueues: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
afterAll(async () => {
  for (const q of rabbitQueues) await nativeDeleteQueue(q);
  await closeNative();
});
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'qs-reinject-remainder-'));
  dirs.push(d);
  return d;
}

/** The message lines of a snapshot file by message id (the text of each line as it is in the file). */
async function linesById(path: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const line of (await readFile(path, 'utf8')).split('\n')) {
    if (line === '') continue;
    const v = JSON.parse(line) as { type: string; id?: string };
    if (v.type === 'message' && v.id !== undefined) out.set(v.id, line);
  }
  return out;
}

/** The path a CLI summary names as its remainder file ("Remainder: <path> holds …"), or null. */
const remainderIn = (out: string): string | null => /^Remainder: (\S+) holds /m.exec(out)?.[1] ?? null;

describe('reinject remainder: SQS FIFO (fauxqs)', () => {
  it('g-1 too large for the target, g-2 and g-3 held back: all three go to a remainder file; with the target fixed, re-injecting it delivers each message exactly once, in group order', async () => {
    // A real backup: redrive a FIFO DLQ, the consumer loses the messages, the operator puts the
    // backup back — into a queue whose MaximumMessageSize (1,024 bytes) g-1 exceeds.
    const c = client(SQS_ENDPOINT);
    const dir = await tempDir();
    const { conn, small: target, file } = await fifoBackupTooBigForTarget(c, createQueue, dir, 'ri-rest');
    const big = `g-1:${'x'.repeat(2000)}`;
    const original = await readFile(file);

    const r1 = await runCliMerged(dir, ['reinject', conn, target.name, '--from', file, '--batch', '2', '--yes', '--json']);
    expect(r1.code, r1.out).toBe(7);
    const json = JSON.parse(r1.out.slice(r1.out.indexOf('{\n'))) as { result: { published: number; failed: number; heldBack: number; remainder: { path: string; messages: number } | null } };
    expect(json.result).toMatchObject({ published: 3, failed: 3, heldBack: 2 });
    const rest = json.result.remainder;
    expect(rest?.messages).toBe(3);
    expect(rest?.path.startsWith(file.replace(/\.jsonl$/, '.remainder-'))).toBe(true);
    // The remainder holds g-1, g-2, g-3, in order, as the backup's own lines; the backup is unchanged.
    const inBackup = await linesById(file);
    const inRest = await linesById(rest!.path);
    const bodies = [...inRest.values()].map((l) => (JSON.parse(l) as QueueMessage).body.data);
    expect(bodies).toEqual([big, 'g-2', 'g-3']);
    for (const [id, line] of inRest) expect(line).toBe(inBackup.get(id));
    expect(await readFile(file)).toEqual(original);
    const h = await runCliMerged(dir, ['history', '--json']);
    expect(h.out).toContain(`"path": ${JSON.stringify(rest!.path)}`);

    // Fix the target, publish only the rest into it.
    await c.send(new SetQueueAttributesCommand({ QueueUrl: target.url, Attributes: { MaximumMessageSize: '262144' } }));
    const r2 = await runCliMerged(dir, ['reinject', conn, target.name, '--from', rest!.path, '--batch', '2', '--yes']);
    expect(r2.code, r2.out).toBe(0);
    expect(r2.out).toContain(`Re-injected 3 of 3 messages from ${rest!.path} into ${target.name}.`);
    expect(r2.out).not.toContain('warning:');
    expect(remainderIn(r2.out)).toBeNull();
    const got = (await drainFifo(c, target.url)).map((m) => m.Body ?? '');
    // Every message exactly once, nothing twice, each group in order.
    expect([...got].sort()).toEqual([big, 'g-2', 'g-3', 'h-1', 'h-2', 'h-3'].sort());
    expect(got.filter((b) => b.startsWith('g-'))).toEqual([big, 'g-2', 'g-3']);
    expect(got.filter((b) => b.startsWith('h-'))).toEqual(['h-1', 'h-2', 'h-3']);
  });
});

describe('reinject remainder: RabbitMQ queue that refuses publishes when full', () => {
  const rabbitQueue: QueueSummary = {
    id: 'rabbitmq:/:orders-dlq', name: 'orders-dlq', broker: 'rabbitmq', kind: 'rabbitmq-classic', depth: 5, inFlight: 0, delayed: null, consumers: 0, counts: {}, deadLetterTargets: [], deadLetterSources: [], isDeadLetterQueue: true,
    capabilities: { canPeekNonDestructively: false, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: false, maxPeekWindow: 100, peekStates: [] }, config: {},
  };

  async function writeExport(dir: string): Promise<string> {
    const path = join(dir, 'orders-dlq.jsonl');
    const w = await SnapshotWriter.create(path);
    await w.writeHeader({ exportedAt: Date.now(), source: { broker: 'rabbitmq', connection: 'test', queue: rabbitQueue } });
    for (let i = 1; i <= 5; i++) {
      const data = `{"orderId":"r-${String(i)}"}`;
      await w.writeMessage({ id: `m${String(i)}`, queueId: rabbitQueue.id, queueName: rabbitQueue.name, position: i - 1, body: { encoding: 'utf8', data, sizeBytes: data.length, truncated: false }, headers: { 'x-n': i }, properties: { contentType: 'application/json' }, meta: {} });
    }
    await w.finish();
    return path;
  }


  it('a full queue (x-max-length 2, reject-publish) nacks 3 of 5: the remainder holds them; re-injecting remainders after draining delivers all 5 once, in order; an existing --remainder is refused before publishing', async () => {
    const dir = await tempDir();
    const file = await writeExport(dir);
    const queue = uniqueName('ri-rest-full');
    rabbitQueues.push(queue);
    const ch = await nativeChannel();
    await ch.assertQueue(queue, { durable: true, arguments: { 'x-max-length': 2, 'x-overflow': 'reject-publish' } });
    await ch.close();
    const conn = AMQP_URL;

    // An existing file named as the remainder: refused before anything is published (exit 2).
    const taken = join(dir, 'taken.jsonl');
    await writeFile(taken, 'mine\n');
    const refused = await runCliMerged(dir, ['reinject', conn, queue, '--from', file, '--remainder', taken, '--yes']);
    expect(refused.code, refused.out).toBe(2);
    expect(refused.out).toContain(`The remainder file ${taken} already exists`);
    expect(await nativeCount(queue)).toBe(0);
    expect(await readFile(taken, 'utf8')).toBe('mine\n');

    const delivered: string[] = [];
    const first = join(dir, 'rest-1.jsonl');
    const r1 = await runCliMerged(dir, ['reinject', conn, queue, '--from', file, '--remainder', first, '--yes']);
    expect(r1.code, r1.out).toBe(7);
    expect(r1.out).toContain(`Re-injected 2 of 5 messages from ${file} into ${queue} (3 failed).`);
    expect(remainderIn(r1.out)).toBe(first);
    expect(r1.out).toContain(`holds the 3 messages not published, in order (publish only them with: queuescope reinject <connection> <queue> --from ${first})`);
    const inFile = await linesById(file);
    expect([...(await linesById(first)).entries()]).toEqual(['m3', 'm4', 'm5'].map((id) => [id, inFile.get(id)]));
    delivered.push(...(await nativeTakeAll(queue)));

    // The consumer drained the queue; the remainder's own remainder (default name, next to it).
    const r2 = await runCliMerged(dir, ['reinject', conn, queue, '--from', first, '--yes']);
    expect(r2.code, r2.out).toBe(7);
    expect(r2.out).toContain('Re-injected 2 of 3 messages');
    const second = remainderIn(r2.out);
    expect(second?.startsWith(join(dir, 'rest-1.remainder-'))).toBe(true);
    expect([...(await linesById(second!)).keys()]).toEqual(['m5']);
    delivered.push(...(await nativeTakeAll(queue)));

    const r3 = await runCliMerged(dir, ['reinject', conn, queue, '--from', second!, '--yes']);
    expect(r3.code, r3.out).toBe(0);
    expect(remainderIn(r3.out)).toBeNull();
    delivered.push(...(await nativeTakeAll(queue)));
    expect(delivered).toEqual([1, 2, 3, 4, 5].map((i) => `{"orderId":"r-${String(i)}"}`));
    // The original file was never changed; only the two remainders were added next to it.
    expect((await readdir(dir)).filter((f) => f.includes('remainder') || f.startsWith('rest-'))).toHaveLength(2);
  });
});
