import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatchApi } from '../../core/services/api';
import type { ConnectionManager } from '../../core/services/connection-manager';
import type { OperationManager } from '../../core/services/operations';
import type { ApiHandlers } from '../../shared/api/contract';
import type { InspectReport, InspectRulesState } from '../../shared/api/inspect';
import type { ConnectionProfile, OperationSnapshot } from '../../shared/domain';
import { apiHarness, ok } from './fixtures/api-harness';
import { AMQP_URL, REDIS_URL, uniqueName } from './env';
import { closeNative, nativeChannel, nativeDeleteQueue } from './rabbitmq-native';

/**
 * The inspect API (issue 3) through dispatchApi, as IPC and the bridge call it, against real
 * Redis (BullMQ) and RabbitMQ: rules saved with a profile (and session-only for snapshots), the
 * `inspect.queue` operation and its report, and the side-effect gate before anything is read.
 */
let dir: string;
let handlers: ApiHandlers;
let connections: ConnectionManager;
let operations: OperationManager;
let redisProfile: ConnectionProfile;
let rabbitProfile: ConnectionProfile;
const bullName = uniqueName('insp-api-bull');
const quorum = uniqueName('insp-api-quorum');
const redis = new Redis(REDIS_URL);
let bull: Queue;

const call = (method: string, input: unknown) => dispatchApi(handlers, method, input);

async function finished(op: OperationSnapshot): Promise<OperationSnapshot> {
  let s = op;
  for (let i = 0; i < 200 && (s.status === 'pending' || s.status === 'running'); i++) {
    await new Promise((r) => setTimeout(r, 50));
    s = await ok<OperationSnapshot>(call('operations.get', { operationId: op.id }));
  }
  return s;
}

beforeAll(async () => {
  ({ dir, handlers, connections, operations } = await apiHarness('qs-inspect-api-'));
  bull = new Queue(bullName, { connection: { url: REDIS_URL } });
  // Custom job ids are BullMQ's idempotency key; one job embeds a whole mutable order.
  await bull.add('charge', { orderId: 'B-1', operation: 'charge', amountCents: 1200 }, { jobId: 'B-1-charge' });
  await bull.add('sync-order', { order: { id: 'B-2', status: 'paid', customer: { id: 'c-9', email: 'x@example.com', shippingAddress: { line1: '1 Harbour St', city: 'Lisbon' } }, items: [{ sku: 'S-1', qty: 3 }], updatedAt: '2026-11-29T10:00:00Z' } });
  await bull.add('refund', { orderId: 'B-3', operation: 'refund' });
  redisProfile = await ok<ConnectionProfile>(call('connections.save', { name: 'Inspect Redis', config: { kind: 'redis', url: REDIS_URL } }));
  rabbitProfile = await ok<ConnectionProfile>(call('connections.save', { name: 'Inspect Rabbit', config: { kind: 'rabbitmq', url: AMQP_URL } }));
  const ch = await nativeChannel();
  await ch.assertQueue(quorum, { durable: true, arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 2 } });
  ch.sendToQueue(quorum, Buffer.from('{"orderId":"Q-1"}'), { messageId: 'Q-1:charge' });
  await ch.waitForConfirms();
  await ch.close();
});

afterAll(async () => {
  operations.cancelAll();
  await connections.closeAll();
  await bull.obliterate({ force: true }).catch(() => undefined);
  await bull.close();
  redis.disconnect();
  await nativeDeleteQueue(quorum);
  await closeNative();
  await rm(dir, { recursive: true, force: true });
});

describe('inspect API', () => {
  it('inspects a BullMQ queue as an operation: keys, verdicts and the summary in the report', async () => {
    const op = await ok<OperationSnapshot>(call('inspect.queue', { connectionId: redisProfile.id, queueId: `bullmq:bull:${bullName}`, state: 'waiting' }));
    expect(op.type).toBe('inspect');
    const done = await finished(op);
    expect(done.status).toBe('completed');
    expect(done.processed).toBe(3);
    const report = (done.result as { report: InspectReport }).report;
    expect(report.analysed).toBe(3);
    expect(report.rulesSource).toBe('built-in rules');
    const byId = new Map(report.messages.map((m) => [m.id, m]));
    expect(byId.get('B-1-charge')).toMatchObject({ key: 'B-1-charge', keySource: 'BullMQ custom job id', keyVerdict: 'business-derived', verdict: 'ok' });
    const order = report.messages.find((m) => m.operation === 'sync-order' || m.verdict === 'flag');
    expect(order?.verdict).toBe('flag');
    expect(order?.keyVerdict).toBe('missing');
    expect(report.summary.flagged).toBe(1);
    expect(report.summary.keyVerdicts.missing).toBe(2);
  });

  it('saves rules with the profile (profiles.json) and applies them to the next inspection', async () => {
    const before = await ok<InspectRulesState>(call('inspect.rules.get', { connectionId: redisProfile.id }));
    expect(before).toMatchObject({ persisted: true, settings: { queues: [] } });
    const saved = await ok<InspectRulesState>(
      call('inspect.rules.set', { connectionId: redisProfile.id, settings: { queues: [{ match: 'qs-test-insp-api-bull-*', keyRules: [{ kind: 'template', template: '{body.orderId}:{body.operation}' }] }] } }),
    );
    expect(saved.persisted).toBe(true);
    const file = JSON.parse(await readFile(join(dir, 'config', 'profiles.json'), 'utf8')) as { profiles: { id: string; inspect?: unknown }[] };
    expect(file.profiles.find((p) => p.id === redisProfile.id)?.inspect).toMatchObject({ queues: [{ match: 'qs-test-insp-api-bull-*' }] });
    const done = await finished(await ok<OperationSnapshot>(call('inspect.queue', { connectionId: redisProfile.id, queueId: `bullmq:bull:${bullName}`, state: 'waiting' })));
    const report = (done.result as { report: InspectReport }).report;
    expect(report.rulesSource).toBe('"qs-test-insp-api-bull-*" in connection "Inspect Redis"');
    expect(report.messages.find((m) => m.key === 'B-3:refund')).toMatchObject({ keyOrigin: 'user', keyVerdict: 'business-derived' });
  });

  it('refuses invalid rules with the setting named, and unknown connections', async () => {
    const bad = await call('inspect.rules.set', { connectionId: redisProfile.id, settings: { queues: [{ match: 'x', keyRules: [{ kind: 'template', template: 'no placeholder' }] }] } });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error.message).toMatch(/template needs at least one \{path\} placeholder/);
    const unknown = await call('inspect.rules.get', { connectionId: 'nope' });
    expect(unknown.ok).toBe(false);
  });

  it('refuses to start where a peek could dead-letter messages, before reading anything', async () => {
    const queueId = `rabbitmq:%2F/${quorum}`;
    const refused = await call('inspect.queue', { connectionId: rabbitProfile.id, queueId });
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.error.code).toBe('PEEK_REFUSED');
    expect(operations.list().filter((o) => o.type === 'inspect' && o.label.includes(quorum))).toHaveLength(0);
    const done = await finished(await ok<OperationSnapshot>(call('inspect.queue', { connectionId: rabbitProfile.id, queueId, acceptSideEffects: true })));
    expect(done.status).toBe('completed');
    expect((done.result as { report: InspectReport }).report.messages[0]?.key).toBe('Q-1:charge');
  });
});
