import { rm } from 'node:fs/promises';
import type { ConfirmChannel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatchApi } from '../../core/services/api';
import type { ConnectionManager } from '../../core/services/connection-manager';
import type { OperationManager } from '../../core/services/operations';
import type { ApiHandlers } from '../../shared/api/contract';
import type { InspectReport } from '../../shared/api/inspect';
import type { ConnectionProfile, OperationSnapshot } from '../../shared/domain';
import { apiHarness, ok } from './fixtures/api-harness';
import { AMQP_URL, uniqueName } from './env';
import { closeNative, nativeChannel, nativeCount, nativeDeleteQueue } from './rabbitmq-native';

/**
 * `inspect.queue` (the app's "Analyse…") on a RabbitMQ work queue with a DLQ, against the real
 * broker: `compareDeadLetter: false` ("Analyse without the comparison") reads only the work queue,
 * so the DLQ's messages are not delivered (not redelivered afterwards); by default the DLQ is read
 * and compared. A compared quorum DLQ with a delivery limit is not read without
 * `acceptSideEffects`, and the comparison's note names how to accept in the CLI and in the app.
 */
let dir: string;
let handlers: ApiHandlers;
let connections: ConnectionManager;
let operations: OperationManager;
let rabbit: ConnectionProfile;
let ch: ConfirmChannel;
const work = uniqueName('analyse-confirm-work');
const dlq = uniqueName('analyse-confirm-dlq');
const work2 = uniqueName('analyse-confirm-work2');
const qdlq = uniqueName('analyse-confirm-qdlq');
const dlx = uniqueName('analyse-confirm-dlx');

const call = (method: string, input: unknown) => dispatchApi(handlers, method, input);

async function report(input: Record<string, unknown>): Promise<InspectReport> {
  let s = await ok<OperationSnapshot>(call('inspect.queue', { connectionId: rabbit.id, ...input }));
  for (let i = 0; i < 200 && (s.status === 'pending' || s.status === 'running'); i++) {
    await new Promise((r) => setTimeout(r, 50));
    s = await ok<OperationSnapshot>(call('operations.get', { operationId: s.id }));
  }
  expect(s.status).toBe('completed');
  return (s.result as { report: InspectReport }).report;
}

beforeAll(async () => {
  ({ dir, handlers, connections, operations } = await apiHarness('qs-analyse-confirm-'));
  rabbit = await ok<ConnectionProfile>(call('connections.save', { name: 'Analyse confirm', config: { kind: 'rabbitmq', url: AMQP_URL } }));
  ch = await nativeChannel();
  await ch.assertExchange(dlx, 'direct', { durable: false, autoDelete: false });
  await ch.assertQueue(dlq, { durable: false });
  await ch.bindQueue(dlq, dlx, dlq);
  await ch.assertQueue(work, { durable: false, arguments: { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': dlq } });
  await ch.assertQueue(qdlq, { durable: true, arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 2 } });
  await ch.bindQueue(qdlq, dlx, qdlq);
  await ch.assertQueue(work2, { durable: false, arguments: { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': qdlq } });
  // The same key in the work queue and in its DLQ (published there directly).
  ch.sendToQueue(dlq, Buffer.from(JSON.stringify({ orderId: 'D-1' })), { messageId: 'D-1:charge' });
  ch.sendToQueue(work, Buffer.from(JSON.stringify({ orderId: 'D-1' })), { messageId: 'D-1:charge' });
  ch.sendToQueue(qdlq, Buffer.from(JSON.stringify({ orderId: 'D-2' })), { messageId: 'D-2:charge' });
  ch.sendToQueue(work2, Buffer.from(JSON.stringify({ orderId: 'D-2' })), { messageId: 'D-2:charge' });
  await ch.waitForConfirms();
  for (let i = 0; i < 100 && ((await nativeCount(dlq)) < 1 || (await nativeCount(qdlq)) < 1); i++) await new Promise((r) => setTimeout(r, 20));
}, 30_000);

afterAll(async () => {
  operations.cancelAll();
  await connections.closeAll();
  for (const q of [work, dlq, work2, qdlq]) await nativeDeleteQueue(q);
  await ch.deleteExchange(dlx).catch(() => undefined);
  await ch.close().catch(() => undefined);
  await closeNative();
  await rm(dir, { recursive: true, force: true });
});

describe('inspect.queue: compareDeadLetter', () => {
  it('false reads only the queue: the DLQ is not compared and its message is not delivered', async () => {
    const r = await report({ queueId: `rabbitmq:%2F/${work}`, acceptSideEffects: true, compareDeadLetter: false });
    expect(r.analysed).toBe(1);
    expect(r.comparisons).toEqual([]);
    expect(r.sideEffects).toContain('Held 1 message unacknowledged while reading, then requeued it.');
    expect(r.sideEffects.filter((s) => s.includes(dlq))).toEqual([]);
    const m = await ch.get(dlq, { noAck: false });
    if (m === false) throw new Error('the DLQ message is gone');
    expect(m.fields.redelivered).toBe(false); // never delivered by the analysis
    ch.nack(m, false, true);
    await ch.waitForConfirms();
  });

  it('by default the DLQ is read and compared, and its read is reported', async () => {
    const r = await report({ queueId: `rabbitmq:%2F/${work}`, acceptSideEffects: true });
    const c = r.comparisons.find((x) => x.relation === 'dead-letter-target');
    expect(c?.label).toBe(dlq);
    expect(c?.read).toBe(1);
    expect(c?.result?.sharedKeyCount).toBe(1);
    expect(r.sideEffects).toContain(`${dlq} (read for the duplicate comparison): Held 1 message unacknowledged while reading, then requeued it.`);
  });

  it('a compared DLQ whose read can dead-letter is skipped without acceptSideEffects; the note says how to accept in the CLI and the app', async () => {
    const r = await report({ queueId: `rabbitmq:%2F/${work2}` });
    const c = r.comparisons.find((x) => x.relation === 'dead-letter-target');
    expect(c?.label).toBe(qdlq);
    expect(c?.result).toBeNull();
    expect(c?.note).toContain(`Reading ${qdlq} can move messages to a dead-letter queue`);
    expect(c?.note).toContain('To read it anyway, accept the side effects (--accept-side-effects in the CLI; in the app, confirm them when it asks before reading).');
    expect(c?.note).toContain(`(the comparison with ${qdlq} was skipped)`);
    expect(await nativeCount(qdlq)).toBe(1);
  });
});
