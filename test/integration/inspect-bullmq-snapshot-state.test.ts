import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter } from '../../core/adapters/redis';
import { SnapshotWriter } from '../../core/snapshot/writer';
import type { InspectReport } from '../../shared/api/inspect';
import { defaultViewState } from '../../shared/api/inspect-scope';
import type { ConnectionProfile, OperationSnapshot, QueueMessage, QueueSummary } from '../../shared/domain';
import { apiHarness, ok, type ApiHarness } from './fixtures/api-harness';
import { failJobs } from './fixtures/bullmq';
import { runCli } from './fixtures/run-cli';
import { REDIS_URL, uniqueName } from './env';

/**
 * The same BullMQ snapshot analysed without a state gives the same answer in the CLI and the app.
 * A snapshot section of a real BullMQ queue holding waiting, delayed and failed jobs (written as
 * the bundled demo's sections are: one header, then each state's jobs, each with `meta.state`):
 * `queuescope inspect <file> <queue>` read all of them, while the app's queue view analysed the
 * state it opened in (the first with jobs: waiting) through `inspect.queue` — 2 of the 6 jobs, the
 * flagged delayed one left out. Both now read every state of the file (`defaultInspectState`), and
 * both reports name the states read. A live queue without a state: both read `waiting`, and say so.
 */
const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const adapter = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
const name = uniqueName('insp-bq-snap-state');
const queueId = `bullmq:bull:${name}`;
let q: Queue;
let dir: string;
let file: string;
let api: ApiHarness;

const charge = (orderId: string): { orderId: string; operation: string; idempotencyKey: string } => ({ orderId, operation: 'charge', idempotencyKey: `${orderId}:charge` });

/** Reads every job of `state` through the adapter (oldest first, following cursors). */
async function readAll(state: string): Promise<QueueMessage[]> {
  const out: QueueMessage[] = [];
  let cursor: string | null = null;
  for (;;) {
    const page = await adapter.peek(queueId, { limit: 100, direction: 'oldest', state, cursor });
    out.push(...page.messages);
    if (page.nextCursor === null || page.messages.length === 0) return out;
    cursor = page.nextCursor;
  }
}

async function finished(op: OperationSnapshot): Promise<OperationSnapshot> {
  let s = op;
  for (let i = 0; i < 400 && (s.status === 'pending' || s.status === 'running'); i++) {
    await new Promise((r) => setTimeout(r, 25));
    s = await ok<OperationSnapshot>(api.call('operations.get', { operationId: op.id }));
  }
  return s;
}

/** The app's analysis of `queue` as its queue view starts it: the state it opens in (none picked yet), through `inspect.queue`. */
async function appReport(connectionId: string, queue: QueueSummary): Promise<InspectReport> {
  const state = defaultViewState(queue);
  const op = await ok<OperationSnapshot>(api.call('inspect.queue', { connectionId, queueId: queue.id, rowLimit: 1000, ...(state !== undefined ? { state } : {}) }));
  const done = await finished(op);
  expect(done.status).toBe('completed');
  return (done.result as { report: InspectReport }).report;
}

async function cliReport(connection: string): Promise<InspectReport> {
  const r = await runCli(dir, ['inspect', connection, name, '--json', '--rows', '1000']);
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as InspectReport;
}

const ids = (r: InspectReport): string[] => r.messages.map((m) => m.id).sort();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-bq-snap-state-'));
  api = await apiHarness('qs-bq-snap-state-api-');
  q = new Queue(name, { connection: native });
  // Two charges fail for good (attempts 1).
  await q.addBulk(['F-1', 'F-2'].map((o) => ({ name: 'charge', data: charge(o), opts: { attempts: 1 } })));
  await failJobs(q, native, 2);
  // F-1 sent again (waiting), W-1 new; a delayed job embedding a whole mutable order (flagged).
  await q.add('charge', charge('F-1'));
  await q.add('charge', charge('W-1'));
  const order = { id: 'D-1', status: 'paid', customer: { id: 'c-1', email: 'buyer@example.com', shippingAddress: { line1: '1 Harbour St', city: 'Lisbon' } }, items: [{ sku: 'S-1', qty: 2 }], updatedAt: '2026-11-29T10:00:00Z' };
  await q.add('sync', { operation: 'sync', order }, { delay: 3_600_000 });
  await q.add('charge', charge('D-2'), { delay: 3_600_000 });

  // One section holding the waiting, delayed and failed jobs.
  file = join(dir, 'payments.jsonl');
  const summary = await adapter.getQueue(queueId);
  const writer = await SnapshotWriter.create(file);
  await writer.writeHeader({ exportedAt: Date.now(), source: { broker: 'redis', connection: REDIS_URL, queue: summary }, selection: 'all' });
  for (const state of ['waiting', 'delayed', 'failed']) for (const m of await readAll(state)) await writer.writeMessage(m);
  await writer.finish();
}, 60_000);

afterAll(async () => {
  await api.close();
  await adapter.close();
  await q.obliterate({ force: true }).catch(() => undefined);
  await q.close();
  native.disconnect();
  await rm(dir, { recursive: true, force: true });
});

describe('BullMQ snapshot analysed without a state: CLI and app', () => {
  it('both read every state the file holds, the same jobs, and name the states', async () => {
    const cli = await cliReport(file);
    const opened = await ok<ConnectionProfile>(api.call('snapshots.open', { path: file }));
    const [section] = await ok<QueueSummary[]>(api.call('queues.list', { connectionId: opened.id }));
    expect(section?.name).toBe(name);
    const app = await appReport(opened.id, section as QueueSummary);

    expect(cli.analysed).toBe(6);
    expect(app.analysed).toBe(cli.analysed);
    expect(ids(app)).toEqual(ids(cli));
    for (const r of [cli, app]) {
      expect(r.state).toBeNull();
      expect(r.states).toEqual(['waiting', 'delayed', 'failed']);
      expect(r.partial).toBe(false);
    }
    const human = await runCli(dir, ['inspect', file, name]);
    expect(human.stdout).toContain(`Redelivery safety of ${name} (bullmq, all states in the snapshot: waiting, delayed, failed): 6 messages analysed`);
    // The same answer: the delayed order is flagged in both, and F-1's failed and waiting copies are one duplicate group.
    expect(app.summary.verdicts).toEqual(cli.summary.verdicts);
    expect(cli.summary.flagged).toBe(1);
    expect(app.summary.duplicateGroups.map((g) => g.key)).toEqual(cli.summary.duplicateGroups.map((g) => g.key));
    expect(cli.summary.duplicateGroups.map((g) => g.key)).toContain('F-1:charge');

    // A state picked in the app (or --state) reads that state only, and says so in both.
    const failedOp = await ok<OperationSnapshot>(api.call('inspect.queue', { connectionId: opened.id, queueId: section?.id, state: 'failed' }));
    const failedApp = (await finished(failedOp)).result as { report: InspectReport };
    const failedCli = JSON.parse((await runCli(dir, ['inspect', file, name, '--state', 'failed', '--json'])).stdout) as InspectReport;
    for (const r of [failedApp.report, failedCli]) expect(r).toMatchObject({ state: 'failed', states: ['failed'], analysed: 2 });
  });

  it('a live BullMQ queue without a state: both read waiting and name it', async () => {
    const cli = await cliReport(REDIS_URL);
    const profile = await ok<ConnectionProfile>(api.call('connections.save', { name: 'Snapshot state Redis', config: { kind: 'redis', url: REDIS_URL } }));
    // The API without a state (a client that names none) applies the same default as the CLI.
    const op = await ok<OperationSnapshot>(api.call('inspect.queue', { connectionId: profile.id, queueId, rowLimit: 1000 }));
    const app = ((await finished(op)).result as { report: InspectReport }).report;
    for (const r of [cli, app]) expect(r).toMatchObject({ state: 'waiting', states: ['waiting'], analysed: 2 });
    expect(ids(app)).toEqual(ids(cli));
  });
});
