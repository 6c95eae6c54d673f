import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChannelModel, Message } from 'amqplib';
import { createRabbitmqAdapter } from '../../core/adapters/rabbitmq';
import { REDRIVE_COUNT_HEADER, type RedriveMover } from '../../core/adapters/redrive-types';
import type { BrokerAdapter } from '../../core/adapters/types';
import { QueuescopeError } from '../../shared/domain';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, uniqueName } from './env';
import { closeNative, nativeChannel, nativeConnection, nativeCount, nativeDeleteQueue } from './rabbitmq-native';
import { idOf, keyOf, makeDeadLettered, publishKeys, recordingHooks, rejectAll, snapshotQueue, waitCount } from './fixtures/redrive-rabbitmq-util';

/**
 * The RabbitMQ redrive mover against the real broker (3.10.8): whole and filtered client-side
 * moves from classic and quorum DLQs filled by real dead-lettering, what is preserved, the cutoff,
 * dry runs, cancellation, unroutable targets, re-inject, and the dynamic-shovel native path.
 * The SIGKILL fault test and the broker-restart test are in redrive-rabbitmq-fault.test.ts.
 */

const config = { kind: 'rabbitmq' as const, url: AMQP_URL, managementUrl: RABBITMQ_MANAGEMENT_URL };
let adapter: BrokerAdapter;
let mover: RedriveMover;
let conn: ChannelModel;
const queues: string[] = [];

function names(label: string): { work: string; dlq: string } {
  const work = uniqueName(`${label}-work`);
  const dlq = uniqueName(`${label}-dlq`);
  queues.push(work, dlq);
  return { work, dlq };
}

const farFuture = Date.now() + 3_600_000;
const moveTo = (target: string) => () => ({ action: 'move' as const, targetQueueId: idOf(target) });

async function expectCode(p: Promise<unknown>, code: string): Promise<QueuescopeError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(QueuescopeError);
    expect((e as QueuescopeError).code).toBe(code);
    return e as QueuescopeError;
  }
  throw new Error(`expected QueuescopeError ${code}`);
}

const headerOf = (m: Message, k: string): unknown => (m.properties.headers)?.[k];

beforeAll(async () => {
  adapter = createRabbitmqAdapter(config);
  if (!adapter.redrive) throw new Error('the RabbitMQ adapter has no redrive member');
  mover = adapter.redrive;
  conn = await nativeConnection();
});

afterAll(async () => {
  for (const q of queues) await nativeDeleteQueue(q);
  await adapter.close();
  await closeNative();
});

describe('client-side move', () => {
  it('moves a whole classic DLQ back to its source, keeping body, properties, headers and x-death, adding the redrive counter', async () => {
    const { work, dlq } = names('whole');
    await makeDeadLettered(conn, work, dlq, 250);
    const before = await snapshotQueue(conn, dlq);
    expect(before).toHaveLength(250);
    const dlqSummary = await adapter.getQueue(idOf(dlq));
    const hooks = recordingHooks((m) => {
      const t = mover.resolveTarget(m, dlqSummary);
      return t ? { action: 'move', targetQueueId: t.queueId } : { action: 'skip', reason: 'no source' };
    });
    const sum = await mover.moveClientSide({ sourceQueueId: idOf(dlq), batchSize: 100, cutoffMs: farFuture, maxMessages: null, dryRun: false }, hooks);
    expect(sum).toMatchObject({ examined: 250, moved: 250, skipped: 0, failed: 0, possibleDuplicates: 0 });
    expect(hooks.batches.map((b) => b.examined)).toEqual([100, 100, 50]);
    expect(hooks.gates).toEqual([100, 100, 50]);
    expect(hooks.backedUp).toHaveLength(250);
    expect(await nativeCount(dlq)).toBe(0);
    const after = await snapshotQueue(conn, work);
    expect(after.map(keyOf)).toEqual(before.map(keyOf)); // same order
    for (let i = 0; i < after.length; i++) {
      const a = after[i]!;
      const b = before[i]!;
      expect(a.content.equals(b.content)).toBe(true);
      const { headers: ah0, ...aprops } = a.properties;
      const { headers: bh0, ...bprops } = b.properties;
      const ah = (ah0 ?? {}) as Record<string, unknown>;
      const bh = (bh0 ?? {}) as Record<string, unknown>;
      expect(aprops).toEqual(bprops);
      expect(ah[REDRIVE_COUNT_HEADER]).toBe(1);
      expect(ah.seq).toBe(bh.seq);
      expect(ah.nested).toEqual({ a: [1, 'two'] });
      expect(ah['x-death']).toEqual(bh['x-death']);
      expect(ah['x-first-death-queue']).toBe(work);
      expect(a.fields.redelivered).toBe(false);
    }
  });

  it('moves a filtered selection from a quorum DLQ; skipped messages stay once, with their content, and are not read twice', async () => {
    const { work, dlq } = names('filter');
    await makeDeadLettered(conn, work, dlq, 300, { 'x-queue-type': 'quorum' });
    const even = (key: string): boolean => Number(key.split('-')[1]) % 2 === 0;
    const hooks = recordingHooks((m) => (even((JSON.parse(m.body.data) as { key: string }).key) ? { action: 'move', targetQueueId: idOf(work) } : { action: 'skip', reason: 'odd' }));
    const sum = await mover.moveClientSide({ sourceQueueId: idOf(dlq), batchSize: 64, cutoffMs: farFuture, maxMessages: null, dryRun: false }, hooks);
    expect(sum).toMatchObject({ examined: 300, moved: 150, skipped: 150, failed: 0, possibleDuplicates: 0 });
    expect(hooks.decided).toHaveLength(300); // each message decided exactly once
    expect(new Set(hooks.decided.map((m) => m.id)).size).toBe(300);
    expect(hooks.backedUp.every((m) => even((JSON.parse(m.body.data) as { key: string }).key))).toBe(true);
    const left = await snapshotQueue(conn, dlq);
    expect(left.map(keyOf)).toEqual(Array.from({ length: 150 }, (_, i) => `k-${2 * i + 1}`));
    for (const m of left) {
      expect(headerOf(m, REDRIVE_COUNT_HEADER)).toBeUndefined();
      expect(headerOf(m, 'seq')).toBe(Number(keyOf(m).split('-')[1]));
      expect(headerOf(m, 'x-first-death-reason')).toBe('rejected');
      expect((headerOf(m, 'x-death') as unknown[]).length).toBe(1);
      expect(m.properties.messageId).toBe(`m-${keyOf(m)}`);
      // a fresh copy: the quorum delivery count restarted (only the snapshot's own delivery)
      expect(headerOf(m, 'x-delivery-count') ?? 0).toBe(0);
    }
    const moved = await snapshotQueue(conn, work);
    expect(moved.map(keyOf)).toEqual(Array.from({ length: 150 }, (_, i) => `k-${2 * i}`));
  });

  it('stops at the messages present at the start: messages dead-lettered during the run stay', async () => {
    const { work, dlq } = names('cutoff');
    await makeDeadLettered(conn, work, dlq, 120);
    const target = uniqueName('cutoff-target');
    queues.push(target);
    const ch = await conn.createConfirmChannel();
    await ch.assertQueue(target, { durable: true });
    let added = false;
    const hooks = recordingHooks(moveTo(target), {
      onBatch: () => {
        if (added) return;
        added = true;
        void (async () => {
          await publishKeys(ch, work, 1000, 1040, 'late');
          await rejectAll(conn, work, 40);
          await waitCount(conn, dlq, 40);
        })();
      },
    });
    const sum = await mover.moveClientSide({ sourceQueueId: idOf(dlq), batchSize: 30, cutoffMs: Date.now() - 1000 + 3_600_000, maxMessages: null, dryRun: false }, hooks);
    expect(sum.examined).toBe(120);
    expect(sum.stoppedBecause).toBe('cutoff');
    await new Promise((r) => setTimeout(r, 300));
    const left = await snapshotQueue(conn, dlq);
    expect(left.map(keyOf).every((k) => k.startsWith('late-'))).toBe(true);
    expect(left).toHaveLength(40);
    expect((await snapshotQueue(conn, target)).map(keyOf)).toEqual(Array.from({ length: 120 }, (_, i) => `k-${i}`));
    await ch.close();
  });

  it('does not examine messages whose x-death time is after the cutoff', async () => {
    const { work, dlq } = names('deathtime');
    await makeDeadLettered(conn, work, dlq, 20);
    const hooks = recordingHooks(moveTo(work));
    const sum = await mover.moveClientSide({ sourceQueueId: idOf(dlq), batchSize: 10, cutoffMs: Date.now() - 60_000, maxMessages: null, dryRun: false }, hooks);
    expect(sum).toMatchObject({ examined: 0, moved: 0, stoppedBecause: 'cutoff' });
    expect(hooks.decided).toHaveLength(0);
    expect((await snapshotQueue(conn, dlq)).map(keyOf)).toEqual(Array.from({ length: 20 }, (_, i) => `k-${i}`));
  });

  it('honours maxMessages', async () => {
    const { work, dlq } = names('max');
    await makeDeadLettered(conn, work, dlq, 50);
    const sum = await mover.moveClientSide({ sourceQueueId: idOf(dlq), batchSize: 7, cutoffMs: farFuture, maxMessages: 20, dryRun: false }, recordingHooks(moveTo(work)));
    expect(sum).toMatchObject({ examined: 20, moved: 20, stoppedBecause: 'max-messages' });
    expect(await nativeCount(dlq)).toBe(30);
    expect(await nativeCount(work)).toBe(20);
  });

  it('a dry run changes nothing but the redelivered flag (classic) and reports the would-be moves', async () => {
    const { work, dlq } = names('dry');
    await makeDeadLettered(conn, work, dlq, 90);
    const before = await snapshotQueue(conn, dlq);
    const hooks = recordingHooks((m) => (m.headers.seq as number) < 30 ? { action: 'move', targetQueueId: idOf(work) } : { action: 'skip', reason: 'later' });
    const sum = await mover.moveClientSide({ sourceQueueId: idOf(dlq), batchSize: 25, cutoffMs: farFuture, maxMessages: null, dryRun: true }, hooks);
    expect(sum).toMatchObject({ examined: 90, moved: 30, skipped: 60, failed: 0 });
    expect(hooks.backedUp).toHaveLength(0);
    expect(await nativeCount(work)).toBe(0);
    const after = await snapshotQueue(conn, dlq);
    expect(after.map(keyOf)).toEqual(before.map(keyOf));
    for (let i = 0; i < after.length; i++) {
      expect(after[i]!.content.equals(before[i]!.content)).toBe(true);
      expect(after[i]!.properties).toEqual(before[i]!.properties);
      expect(after[i]!.fields.redelivered).toBe(true);
    }
    const effects = mover.clientMoveSideEffects?.(await adapter.getQueue(idOf(dlq)), true) ?? [];
    expect(effects.join(' ')).toMatch(/redelivered/);
  });

  it('a dry run on a quorum DLQ with a delivery limit never dead-letters: messages at the limit are copied to the tail', async () => {
    const { work, dlq } = names('dryq');
    await makeDeadLettered(conn, work, dlq, 10, { 'x-queue-type': 'quorum', 'x-delivery-limit': 1 });
    // One requeue each: x-delivery-count is 1 now = the limit.
    await snapshotQueue(conn, dlq);
    const hooks = recordingHooks(moveTo(work));
    const sum = await mover.moveClientSide({ sourceQueueId: idOf(dlq), batchSize: 4, cutoffMs: farFuture, maxMessages: null, dryRun: true }, hooks);
    expect(sum.examined).toBe(10);
    const after = await snapshotQueue(conn, dlq);
    expect(after.map(keyOf).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `k-${i}`).sort());
    const effects = mover.clientMoveSideEffects?.(await adapter.getQueue(idOf(dlq)), true) ?? [];
    expect(effects.join(' ')).toMatch(/delivery limit \(1\)/);
  });

  it('cancellation mid-run leaves every message in exactly one place', async () => {
    const { work, dlq } = names('cancel');
    await makeDeadLettered(conn, work, dlq, 400);
    const ac = new AbortController();
    const hooks = recordingHooks(moveTo(work), { onBatch: () => ac.abort() });
    await expectCode(mover.moveClientSide({ sourceQueueId: idOf(dlq), batchSize: 50, cutoffMs: farFuture, maxMessages: null, dryRun: false }, hooks, ac.signal), 'CANCELLED');
    const moved = hooks.batches.reduce((n, b) => n + b.moved.length, 0);
    expect(moved).toBeGreaterThanOrEqual(50);
    expect(moved).toBeLessThan(400);
    const inDlq = (await snapshotQueue(conn, dlq)).map(keyOf);
    const inWork = (await snapshotQueue(conn, work)).map(keyOf);
    expect(inWork).toHaveLength(moved);
    expect([...inDlq, ...inWork].sort()).toEqual(Array.from({ length: 400 }, (_, i) => `k-${i}`).sort());
  });

  it('a gate rejecting with CANCELLED stops before reading more', async () => {
    const { work, dlq } = names('gate');
    await makeDeadLettered(conn, work, dlq, 30);
    let calls = 0;
    const hooks = recordingHooks(moveTo(work), {
      gate: () => (++calls === 2 ? Promise.reject(new QueuescopeError('CANCELLED', 'stop')) : Promise.resolve()),
    });
    await expectCode(mover.moveClientSide({ sourceQueueId: idOf(dlq), batchSize: 10, cutoffMs: farFuture, maxMessages: null, dryRun: false }, hooks), 'CANCELLED');
    expect(await nativeCount(work)).toBe(10);
    expect(await nativeCount(dlq)).toBe(20);
  });

  it('an unroutable target (queue missing) is a failure: the message stays in the DLQ', async () => {
    const { work, dlq } = names('noroute');
    await makeDeadLettered(conn, work, dlq, 12);
    const missing = uniqueName('missing');
    const hooks = recordingHooks((m) => ((m.headers.seq as number) % 3 === 0 ? { action: 'move', targetQueueId: idOf(missing) } : { action: 'move', targetQueueId: idOf(work) }));
    const sum = await mover.moveClientSide({ sourceQueueId: idOf(dlq), batchSize: 12, cutoffMs: farFuture, maxMessages: null, dryRun: false }, hooks);
    expect(sum).toMatchObject({ examined: 12, moved: 8, failed: 4 });
    const failed = hooks.batches.flatMap((b) => b.failed);
    expect(failed.every((f) => f.error.code === 'QUEUE_NOT_FOUND' && f.error.message.includes(missing))).toBe(true);
    expect((await snapshotQueue(conn, dlq)).map(keyOf)).toEqual(['k-0', 'k-3', 'k-6', 'k-9']);
    expect(await nativeCount(work)).toBe(8);
  });

  it('refuses a body over maxBodyBytes and a stream DLQ', async () => {
    const { work, dlq } = names('big');
    await makeDeadLettered(conn, work, dlq, 3);
    const sum = await mover.moveClientSide({ sourceQueueId: idOf(dlq), batchSize: 5, cutoffMs: farFuture, maxMessages: null, dryRun: false, maxBodyBytes: 10 }, recordingHooks(moveTo(work)));
    expect(sum).toMatchObject({ examined: 3, moved: 0, failed: 3 });
    expect(await nativeCount(dlq)).toBe(3);
    const stream = uniqueName('stream');
    queues.push(stream);
    const ch = await nativeChannel();
    await ch.assertQueue(stream, { durable: true, arguments: { 'x-queue-type': 'stream' } });
    await ch.close();
    await expectCode(mover.moveClientSide({ sourceQueueId: idOf(stream), batchSize: 5, cutoffMs: farFuture, maxMessages: null, dryRun: false }, recordingHooks(moveTo(work))), 'UNSUPPORTED');
  });

  it('reads a single-active-consumer DLQ whose active consumer is someone else (basic.get)', async () => {
    const { work, dlq } = names('sac');
    await makeDeadLettered(conn, work, dlq, 20, { 'x-single-active-consumer': true });
    const other = await conn.createChannel();
    await other.prefetch(1);
    let held = 0;
    await other.consume(dlq, () => {
      held++;
    });
    for (let i = 0; i < 100 && held === 0; i++) await new Promise((r) => setTimeout(r, 20));
    const sum = await mover.moveClientSide({ sourceQueueId: idOf(dlq), batchSize: 8, cutoffMs: farFuture, maxMessages: null, dryRun: false }, recordingHooks(moveTo(work)));
    expect(sum).toMatchObject({ examined: 19, moved: 19, failed: 0 });
    await other.close();
    expect(await nativeCount(work)).toBe(19);
    await waitCount(conn, dlq, 1);
  });

  it('x-death survives a redrive on this broker: dying again increments its count', async () => {
    const { work, dlq } = names('xdeath');
    await makeDeadLettered(conn, work, dlq, 5);
    await mover.moveClientSide({ sourceQueueId: idOf(dlq), batchSize: 5, cutoffMs: farFuture, maxMessages: null, dryRun: false }, recordingHooks(moveTo(work)));
    await rejectAll(conn, work, 5);
    await waitCount(conn, dlq, 5);
    const again = await snapshotQueue(conn, dlq);
    expect(again).toHaveLength(5);
    for (const m of again) {
      const xd = headerOf(m, 'x-death') as { count: number; queue: string }[];
      expect(xd).toHaveLength(1);
      expect(xd[0]).toMatchObject({ count: 2, queue: work });
      expect(headerOf(m, REDRIVE_COUNT_HEADER)).toBe(1);
    }
  });
});

describe('resolveTarget', () => {
  it('uses the most recent x-death queue, else x-first-death-queue', async () => {
    const { work, dlq } = names('resolve');
    await makeDeadLettered(conn, work, dlq, 1);
    const summary = await adapter.getQueue(idOf(dlq));
    const page = await adapter.peek(idOf(dlq), { limit: 1, acceptSideEffects: true });
    const m = page.messages[0]!;
    expect(mover.resolveTarget(m, summary)).toEqual({ queueId: idOf(work), via: `x-death[0] queue '${work}'` });
    const noDeath = { ...m, meta: { ...m.meta, xDeath: [] } };
    expect(mover.resolveTarget(noDeath, summary)?.via).toBe(`x-first-death-queue '${work}'`);
    expect(mover.resolveTarget({ ...m, meta: {} }, summary)).toBeNull();
  });
});

describe('publish (re-inject)', () => {
  it('publishes snapshot messages with their body, properties and headers, confirmed', async () => {
    const { work, dlq } = names('reinject');
    await makeDeadLettered(conn, work, dlq, 5);
    const page = await adapter.peek(idOf(dlq), { limit: 5, acceptSideEffects: true });
    const target = uniqueName('reinject-target');
    queues.push(target);
    const ch = await nativeChannel();
    await ch.assertQueue(target, { durable: true });
    await ch.close();
    const r = await mover.publish(idOf(target), page.messages);
    expect(r.failed).toEqual([]);
    expect(r.published).toEqual(page.messages.map((m) => m.id));
    const got = await snapshotQueue(conn, target);
    const orig = await snapshotQueue(conn, dlq);
    expect(got.map(keyOf)).toEqual(orig.map(keyOf));
    for (let i = 0; i < got.length; i++) {
      expect(got[i]!.properties.timestamp).toBe(orig[i]!.properties.timestamp);
      expect(got[i]!.properties.messageId).toBe(orig[i]!.properties.messageId);
      expect(headerOf(got[i]!, 'x-death')).toEqual(headerOf(orig[i]!, 'x-death'));
      expect(headerOf(got[i]!, REDRIVE_COUNT_HEADER)).toBe(1);
    }
    const missing = await mover.publish(idOf(uniqueName('nope')), page.messages.slice(0, 1));
    expect(missing.failed[0]?.error.code).toBe('QUEUE_NOT_FOUND');
    // Bad input is refused per message, and the rest still goes.
    const first = page.messages[0]!;
    const bad = [
      { ...first, id: 'long-key', headers: { ['k'.repeat(300)]: 1 } },
      { ...first, id: 'bad-mode', properties: { deliveryMode: 7 } },
      { ...first, id: 'cut', body: { ...first.body, truncated: true } },
      { ...first, id: 'fine' },
    ];
    const mixed = await mover.publish(idOf(target), bad);
    expect(mixed.published).toEqual(['fine']);
    expect(mixed.failed.map((f) => [f.id, f.error.code]).sort()).toEqual([
      ['bad-mode', 'INVALID_INPUT'],
      ['cut', 'INVALID_INPUT'],
      ['long-key', 'INVALID_INPUT'],
    ]);
  });
});

describe('native move (dynamic shovel)', () => {
  it('moves the whole DLQ to its single source and reports completion', async () => {
    const { work, dlq } = names('shovel');
    await makeDeadLettered(conn, work, dlq, 500);
    const summary = await adapter.getQueue(idOf(dlq));
    const support = await mover.nativeMove(summary, null);
    expect(support).toMatchObject({ available: true, supportsRate: false, supportsTarget: true });
    await expectCode(mover.startNativeMove(summary, null, 100), 'UNSUPPORTED');
    const h = await mover.startNativeMove(summary, null, null);
    expect(h.total).toBe(500);
    let st = await mover.nativeMoveStatus(h);
    for (let i = 0; i < 150 && st.status === 'running'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      st = await mover.nativeMoveStatus(h);
    }
    expect(st).toMatchObject({ status: 'completed', moved: 500, total: 500 });
    expect(await nativeCount(dlq)).toBe(0);
    const moved = await snapshotQueue(conn, work);
    expect(moved).toHaveLength(500);
    expect((headerOf(moved[0]!, 'x-death') as unknown[]).length).toBe(1);
    await mover.cancelNativeMove(h); // idempotent after completion
  });

  it('is not available without a single source and no target; cancel stops it', async () => {
    const dlq = uniqueName('lonely-dlq');
    const target = uniqueName('lonely-target');
    queues.push(dlq, target);
    const ch = await conn.createConfirmChannel();
    await ch.assertQueue(dlq, { durable: true });
    await ch.assertQueue(target, { durable: true });
    await publishKeys(ch, dlq, 0, 2000);
    await ch.close();
    const summary = await adapter.getQueue(idOf(dlq));
    expect((await mover.nativeMove(summary, null)).available).toBe(false);
    const h = await mover.startNativeMove(summary, idOf(target), null);
    await mover.cancelNativeMove(h);
    await mover.cancelNativeMove(h);
    expect((await mover.nativeMoveStatus(h)).status).toBe('cancelled');
    await new Promise((r) => setTimeout(r, 500));
    // Zero lost; a shovel cancelled mid-flight can leave up to its prefetch (1,000) in both queues
    // (published and confirmed, not yet acked at the source).
    const keys = [...(await snapshotQueue(conn, dlq)), ...(await snapshotQueue(conn, target))].map(keyOf);
    expect(new Set(keys).size).toBe(2000);
    expect(keys.length).toBeLessThanOrEqual(3000);
  });
});
