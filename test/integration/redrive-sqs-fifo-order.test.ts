import { SendMessageCommand, SetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import type { MoveHooks } from '../../core/adapters/redrive-types';
import type { QueueMessage } from '../../shared/domain';
import { SQS_ALT_ENDPOINT, SQS_ENDPOINT, uniqueName } from './env';
import { drainFifo, sqsResources, type CreatedQueue } from './fixtures/sqs-resources';

/**
 * Order within a FIFO message group when SQS refuses one entry of a SendMessageBatch (a partial
 * failure) or a whole call. SendMessageBatch reports each entry on its own (fauxqs accepts a later
 * entry of a group whose earlier entry it refused), and a mover that sends a group's next messages
 * in the same call or the next one, without waiting for the earlier one to be accepted, leaves the
 * later ones in the target and the earlier one in the DLQ: the group out of order.
 * (fauxqs returns one message per group per receive, so its redrive batches never hold two of a
 * group; local-aws-sqs returns several, like AWS, but refuses a FIFO call with one invalid entry
 * whole: the redrive cases run there, the per-entry case through re-inject on fauxqs.)
 */

const { client, adapterFor, createQueue } = sqsResources();

/**
 * g1-1 (200,000 bytes), g2-1, g1-2 (100,000 bytes), g2-2, g1-3 in one FIFO DLQ. local-aws-sqs, like
 * AWS, returns several messages of a group in one receive, so one batch holds all five; the mover's
 * 256 KiB per call puts g1-1 and g2-1 in one SendMessageBatch and the other three in the next.
 */
const big = (label: string, bytes: number): string => `${label}:${'x'.repeat(bytes - label.length - 1)}`;
const SENDS = [
  { body: big('g1-1', 200_000), group: 'g1' },
  { body: 'g2-1', group: 'g2' },
  { body: big('g1-2', 100_000), group: 'g1' },
  { body: 'g2-2', group: 'g2' },
  { body: 'g1-3', group: 'g1' },
];

async function fill(c: SQSClient, dlq: CreatedQueue): Promise<void> {
  for (const [i, m] of SENDS.entries()) await c.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: m.body, MessageGroupId: m.group, MessageDeduplicationId: `d${i}` }));
}

/**
 * Moves everything to `target`; the backup step (`beforeMove`, after the mover read the target's
 * MaximumMessageSize) lowers that to 150,000 bytes — as an operator reconfiguring the target during
 * the run would — so SQS itself refuses g1-1 (and local-aws-sqs the whole call carrying it) while
 * accepting every other message.
 */
function shrinkingHooks(c: SQSClient, target: CreatedQueue, seen?: Map<string, string>, failed?: { id: string; message: string; blockedBy: unknown }[]): MoveHooks {
  return {
    gate: () => Promise.resolve(),
    decide: (m: QueueMessage) => {
      seen?.set(m.id, label(m.body.data));
      return { action: 'move', targetQueueId: target.id };
    },
    beforeMove: async () => {
      await c.send(new SetQueueAttributesCommand({ QueueUrl: target.url, Attributes: { MaximumMessageSize: '150000' } }));
    },
    onBatch: (r) => {
      for (const f of r.failed) failed?.push({ id: seen?.get(f.id) ?? f.id, message: f.error.message, blockedBy: f.error.details?.blockedBy });
    },
  };
}

const label = (body: string | undefined): string => (body ?? '?').split(':')[0] ?? '?';

/** Every message is in exactly one queue, and for each group the target holds a prefix of the group, in order. */
function expectNoLossNoOvertake(inTarget: string[], inDlq: string[]): void {
  expect([...inTarget, ...inDlq].sort()).toEqual(SENDS.map((s) => label(s.body)).sort());
  for (const g of ['g1', 'g2']) {
    const order = SENDS.filter((s) => s.group === g).map((s) => label(s.body));
    const got = inTarget.filter((b) => b.startsWith(`${g}-`));
    expect(got).toEqual(order.slice(0, got.length));
  }
}

describe('SQS FIFO redrive: a message the target refuses is not overtaken by a later one of its group (local-aws-sqs)', () => {
  const c = client(SQS_ALT_ENDPOINT);

  it('the groups stop at the refused call; old code sent the next call and put g1-2, g2-2, g1-3 in the target ahead of g1-1 and g2-1', async () => {
    const base = uniqueName('fifo-po');
    const dlq = await createQueue(c, `${base}-dlq.fifo`, { FifoQueue: 'true' });
    const target = await createQueue(c, `${base}-tgt.fifo`, { FifoQueue: 'true' });
    await fill(c, dlq);
    const adapter = adapterFor(SQS_ALT_ENDPOINT);
    const seen = new Map<string, string>();
    const failed: { id: string; message: string; blockedBy: unknown }[] = [];
    const summary = await adapter.redrive.moveClientSide(
      { sourceQueueId: dlq.id, batchSize: 10, cutoffMs: Date.now() + 1_000, maxMessages: null, dryRun: false },
      shrinkingHooks(c, target, seen, failed),
    );
    expect(summary).toMatchObject({ examined: 5, moved: 0, failed: 5, possibleDuplicates: 0 });
    const inTarget = (await drainFifo(c, target.url)).map((m) => label(m.Body));
    expect(inTarget).toEqual([]);
    const inDlq = (await drainFifo(c, dlq.url)).map((m) => label(m.Body));
    expectNoLossNoOvertake(inTarget, inDlq);
    // Why each stays: the refused call for the heads, the head of its group for the rest.
    const byLabel = new Map(failed.map((f) => [f.id, f]));
    expect([...byLabel.keys()].sort()).toEqual(['g1-1', 'g1-2', 'g1-3', 'g2-1', 'g2-2']);
    expect(byLabel.get('g1-1')?.message).toContain('Message must be shorter than 150000 bytes');
    const idOf = (l: string): string | undefined => [...seen].find(([, b]) => b === l)?.[0];
    for (const [l, head, g] of [['g1-2', 'g1-1', 'g1'], ['g1-3', 'g1-1', 'g1'], ['g2-2', 'g2-1', 'g2']] as const) {
      expect(byLabel.get(l)?.blockedBy).toBe(idOf(head));
      expect(byLabel.get(l)?.message).toContain(`did not accept message ${idOf(head) ?? '?'}, an earlier message of its FIFO message group "${g}"`);
      expect(byLabel.get(l)?.message).toContain(`it stays in ${base}-dlq.fifo, behind it`);
    }
  });

  it('once the target takes them again, a second run moves every group in order', async () => {
    const base = uniqueName('fifo-po2');
    const dlq = await createQueue(c, `${base}-dlq.fifo`, { FifoQueue: 'true' });
    const target = await createQueue(c, `${base}-tgt.fifo`, { FifoQueue: 'true' });
    await fill(c, dlq);
    const adapter = adapterFor(SQS_ALT_ENDPOINT);
    const opts = { sourceQueueId: dlq.id, batchSize: 10, maxMessages: null, dryRun: false };
    await adapter.redrive.moveClientSide({ ...opts, cutoffMs: Date.now() + 1_000 }, shrinkingHooks(c, target));
    await c.send(new SetQueueAttributesCommand({ QueueUrl: target.url, Attributes: { MaximumMessageSize: '262144' } }));
    const moveAll: MoveHooks = { gate: () => Promise.resolve(), decide: () => ({ action: 'move', targetQueueId: target.id }), beforeMove: () => Promise.resolve(), onBatch: () => undefined };
    const second = await adapter.redrive.moveClientSide({ ...opts, cutoffMs: Date.now() + 1_000 }, moveAll);
    expect(second).toMatchObject({ moved: 5, failed: 0, possibleDuplicates: 0 });
    const got = (await drainFifo(c, target.url)).map((m) => label(m.Body));
    expect(got.filter((l) => l.startsWith('g1-'))).toEqual(['g1-1', 'g1-2', 'g1-3']);
    expect(got.filter((l) => l.startsWith('g2-'))).toEqual(['g2-1', 'g2-2']);
  });
});

describe('SQS FIFO re-inject: a message the queue refuses is not overtaken by a later one of its group', () => {
  it('fauxqs: a body with a control character (InvalidMessageContents) stops its group; old code published g-2 past it', async () => {
    // A snapshot can hold any text (e.g. from a Redis DLQ); SQS refuses U+0001 per entry.
    const c = client(SQS_ENDPOINT);
    const target = await createQueue(c, `${uniqueName('fifo-ri')}.fifo`, { FifoQueue: 'true' });
    const msg = (id: string, body: string, group: string): QueueMessage => ({
      id,
      queueId: 'sqs:orders-dlq.fifo',
      queueName: 'orders-dlq.fifo',
      position: 0,
      body: { encoding: 'utf8', data: body, sizeBytes: Buffer.byteLength(body), truncated: false },
      headers: {},
      properties: {},
      meta: { messageGroupId: group },
    });
    const adapter = adapterFor(SQS_ENDPOINT);
    const r = await adapter.redrive.publish(target.id, [msg('m1', 'g-1\u0001', 'g'), msg('m2', 'h-1', 'h'), msg('m3', 'g-2', 'g'), msg('m4', 'h-2', 'h')]);
    expect(r.published.sort()).toEqual(['m2', 'm4']);
    expect(r.failed.map((f) => f.id)).toEqual(['m1', 'm3']);
    expect(r.failed[0]?.error.message).toContain('InvalidMessageContents');
    expect(r.failed[1]?.error.message).toContain('did not accept message m1, an earlier message of its FIFO message group "g"');
    expect(r.failed[1]?.error.message).toContain('it is not published');
    expect((await drainFifo(c, target.url)).map((m) => m.Body)).toEqual(['h-1', 'h-2']);
  });
});
