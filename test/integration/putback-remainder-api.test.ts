import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntryView, AuditLogPageView } from '../../shared/api/redrive';
import type { ConnectionProfile, OperationSnapshot } from '../../shared/domain';
import { apiHarness, ok, type ApiHarness } from './fixtures/api-harness';
import { AMQP_URL, uniqueName } from './env';
import { closeNative, nativeChannel, nativeCount, nativeDeleteQueue, nativeTakeAll } from './rabbitmq-native';

/**
 * The app's Put back… of a re-inject's remainder file (`redrive.reinject` with `file: "remainder"`),
 * through the web-runtime API harness against real RabbitMQ: a redrive's backup put back into a
 * queue that refuses publishes when full (x-max-length 2, reject-publish) leaves a remainder; once
 * the queue is drained, putting back the remainder named by that re-inject's audit entry — and then
 * the remainder of the remainder — delivers every message exactly once, in order. The path is always
 * taken from the audit entry. Old code could put back only a redrive's backup (the input had no `file`).
 */
let h: ApiHarness;
let rabbit: ConnectionProfile;
const dlq = uniqueName('putback-rest-dlq');
const work = uniqueName('putback-rest-work');
const full = uniqueName('putback-rest-full');
const qid = (name: string): string => `rabbitmq:%2F/${name}`;

beforeAll(async () => {
  h = await apiHarness('qs-putback-remainder-');
  rabbit = await ok<ConnectionProfile>(h.call('connections.save', { name: 'Put back remainder', config: { kind: 'rabbitmq', url: AMQP_URL } }));
  const ch = await nativeChannel();
  await ch.assertQueue(dlq, { durable: true });
  await ch.assertQueue(work, { durable: true });
  await ch.assertQueue(full, { durable: true, arguments: { 'x-max-length': 2, 'x-overflow': 'reject-publish' } });
  for (let i = 1; i <= 5; i++) ch.sendToQueue(dlq, Buffer.from(JSON.stringify({ orderId: `pb-${String(i)}` })), { messageId: `pb-${String(i)}`, persistent: true });
  await ch.waitForConfirms();
  await ch.close();
  for (let i = 0; i < 100 && (await nativeCount(dlq)) < 5; i++) await new Promise((r) => setTimeout(r, 50));
}, 30_000);

afterAll(async () => {
  await h.close();
  for (const q of [dlq, work, full]) await nativeDeleteQueue(q);
  await closeNative();
});

/** Waits for an operation to end; its final snapshot. */
async function ended(op: OperationSnapshot): Promise<OperationSnapshot> {
  let s = op;
  for (let i = 0; i < 400 && !['completed', 'failed', 'cancelled'].includes(s.status); i++) {
    await new Promise((r) => setTimeout(r, 50));
    s = await ok<OperationSnapshot>(h.call('operations.get', { operationId: op.id }));
  }
  return s;
}

/** The audit entry of an operation, as the app's history reads it. */
async function entryOf(op: OperationSnapshot): Promise<AuditEntryView> {
  const page = await ok<AuditLogPageView>(h.call('redrive.history', { limit: 50 }));
  const e = page.entries.find((x) => x.operationId === op.id && x.status !== 'started');
  if (e === undefined) throw new Error(`no audit entry for ${op.id}`);
  return e;
}


type Result = { path: string; read: number; published: number; failed: number; remainder: { path: string; messages: number } | null };

describe('Put back… of a re-inject remainder through the API (RabbitMQ)', () => {
  it('redrive → Put back into a full queue leaves a remainder → drained, Put back of the remainder (and of its remainder) by audit entry: all 5 delivered once, in order', async () => {
    const connectionId = rabbit.id;
    // The redrive: all 5 move to the work queue, whose consumer then loses them.
    const redrive = await ended(await ok<OperationSnapshot>(h.call('redrive.start', { connectionId, dlqId: qid(dlq), selection: { kind: 'all' }, targetQueueId: qid(work), native: 'never' })));
    expect(redrive.status).toBe('completed');
    expect(await nativeTakeAll(work)).toHaveLength(5);
    const redriveEntry = await entryOf(redrive);
    expect(redriveEntry.backupPath).not.toBeNull();

    // Asking for a remainder of a redrive entry is refused; nothing is published.
    const notReinject = await h.call('redrive.reinject', { connectionId, queueId: qid(full), auditEntryId: redriveEntry.id, file: 'remainder' });
    expect(notReinject).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    expect(!notReinject.ok && notReinject.error.message).toContain('is not a re-inject');
    expect(await nativeCount(full)).toBe(0);

    // Put back the backup into the full queue: 2 accepted, 3 refused → remainder R1 of 3.
    const first = await ended(await ok<OperationSnapshot>(h.call('redrive.reinject', { connectionId, queueId: qid(full), auditEntryId: redriveEntry.id })));
    const r1 = first.result as Result;
    expect([r1.read, r1.published, r1.failed]).toEqual([5, 2, 3]);
    expect(r1.remainder?.messages).toBe(3);
    const e1 = await entryOf(first);
    expect(e1.details.remainder).toEqual(r1.remainder);
    const delivered = await nativeTakeAll(full); // the consumer drains the queue: room again

    // includeNotMoved does not apply to a remainder: refused, nothing published.
    const withNotMoved = await h.call('redrive.reinject', { connectionId, queueId: qid(full), auditEntryId: e1.id, file: 'remainder', includeNotMoved: true });
    expect(withNotMoved).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    expect(await nativeCount(full)).toBe(0);

    // Put back R1 by its re-inject's entry: exactly R1 is published (2 fit, 1 refused → R2).
    const second = await ended(await ok<OperationSnapshot>(h.call('redrive.reinject', { connectionId, queueId: qid(full), auditEntryId: e1.id, file: 'remainder' })));
    const r2 = second.result as Result;
    expect(r2.path).toBe(r1.remainder?.path);
    expect([r2.read, r2.published, r2.failed]).toEqual([3, 2, 1]);
    expect(r2.remainder?.messages).toBe(1);
    const e2 = await entryOf(second);
    expect(e2.backupPath).toBe(r1.remainder?.path);
    expect(e2.details.remainder).toEqual(r2.remainder);
    delivered.push(...(await nativeTakeAll(full)));

    // Put back R2 by its entry: the last message; no further remainder.
    const third = await ended(await ok<OperationSnapshot>(h.call('redrive.reinject', { connectionId, queueId: qid(full), auditEntryId: e2.id, file: 'remainder' })));
    const r3 = third.result as Result;
    expect(third.status).toBe('completed');
    expect(r3.path).toBe(r2.remainder?.path);
    expect([r3.read, r3.published, r3.failed, r3.remainder]).toEqual([1, 1, 0, null]);
    delivered.push(...(await nativeTakeAll(full)));
    expect(delivered).toEqual([1, 2, 3, 4, 5].map((i) => `{"orderId":"pb-${String(i)}"}`));

    // A re-inject that published everything has no remainder to put back; a deleted remainder is refused.
    const e3 = await entryOf(third);
    const none = await h.call('redrive.reinject', { connectionId, queueId: qid(full), auditEntryId: e3.id, file: 'remainder' });
    expect(!none.ok && none.error.message).toContain('left no remainder file');
    await rm(r2.remainder?.path ?? '');
    const gone = await h.call('redrive.reinject', { connectionId, queueId: qid(full), auditEntryId: e2.id, file: 'remainder' });
    expect(gone).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    expect(!gone.ok && gone.error.message).toContain(`The remainder file ${r2.remainder?.path ?? ''} no longer exists.`);
    expect(await nativeCount(full)).toBe(0);
  }, 60_000);
});
