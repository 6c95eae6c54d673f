import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { QueuescopeError, type QueueMessage, type QueueSummary } from '../../shared/domain';
import type { ClientMoveOptions, MoveHooks, MoveSummary, NativeMoveHandle, NativeMoveStatus, NativeMoveSupport, RedriveMover } from '../adapters/redrive-types';
import { readSnapshotFile } from '../snapshot/reader';
import { AuditLog } from '../services/audit-log';
import { OperationManager } from '../services/operations';
import { backupOriginOf, planRedrive, priorUsesOfBackup, reinjectSelection, startRedrive, startReinject, validateRequest, type RedriveEnv, type RedriveRequest, type RedriveResult } from './engine';

/**
 * An in-memory RedriveMover: the engine's logic is tested against it; the real movers are tested
 * against real brokers in test/integration. It follows the contract: reads the DLQ from the head in
 * batches bounded by maxMessages and the cutoff, awaits gate → decide → beforeMove → publish →
 * remove, leaves skipped messages, and on abort stops between batches.
 */
class MemoryMover implements RedriveMover {
  readonly queues = new Map<string, QueueMessage[]>();
  events: string[] = [];
  /** Called at publish time (tests check the backup is on disk). */
  onPublish: ((ids: string[]) => Promise<void>) | null = null;
  native: NativeMoveSupport = { available: false, mechanism: 'memory move', note: null, supportsRate: true, supportsTarget: false };
  nativeRuns: { handle: NativeMoveHandle; moved: number; cancelled: boolean }[] = [];
  failIds = new Set<string>();

  constructor(readonly dlqId: string) {}

  resolveTarget(message: QueueMessage): { queueId: string; via: string } | null {
    const src = message.headers['x-source'];
    return typeof src === 'string' ? { queueId: src, via: `header x-source '${src}'` } : null;
  }

  async moveClientSide(o: ClientMoveOptions, hooks: MoveHooks, signal?: AbortSignal): Promise<MoveSummary> {
    const dlq = this.queues.get(o.sourceQueueId) ?? [];
    const snapshot = [...dlq];
    const sum: MoveSummary = { examined: 0, moved: 0, skipped: 0, failed: 0, possibleDuplicates: 0, stoppedBecause: 'exhausted' };
    let i = 0;
    for (;;) {
      if (o.maxMessages !== null && sum.examined >= o.maxMessages) {
        sum.stoppedBecause = 'max-messages';
        break;
      }
      const n = Math.min(o.batchSize, o.maxMessages === null ? o.batchSize : o.maxMessages - sum.examined);
      await hooks.gate(n);
      if (signal?.aborted === true) throw new QueuescopeError('CANCELLED', 'cancelled');
      const batch: QueueMessage[] = [];
      while (batch.length < n && i < snapshot.length) {
        const m = snapshot[i++];
        if (m === undefined) break;
        if ((m.meta.finishedOn ?? 0) > o.cutoffMs) {
          sum.stoppedBecause = 'cutoff';
          continue;
        }
        batch.push(m);
      }
      if (batch.length === 0) break;
      const moves: { m: QueueMessage; target: string }[] = [];
      const skipped: { id: string; reason: string }[] = [];
      for (const m of batch) {
        const d = hooks.decide(m);
        if (d.action === 'move') moves.push({ m, target: d.targetQueueId });
        else skipped.push({ id: m.id, reason: d.reason });
      }
      const failed = o.dryRun ? [] : moves.filter((x) => this.failIds.has(x.m.id)).map((x) => ({ id: x.m.id, error: { code: 'BROKER_ERROR' as const, message: 'nack' } }));
      const ok = moves.filter((x) => !this.failIds.has(x.m.id));
      if (!o.dryRun && moves.length > 0) {
        await hooks.beforeMove(moves.map((x) => x.m));
        this.events.push(`beforeMove ${moves.length}`);
        await this.onPublish?.(ok.map((x) => x.m.id));
        for (const x of ok) {
          const t = this.queues.get(x.target) ?? [];
          t.push({ ...x.m, queueId: x.target, headers: { ...x.m.headers, 'x-queuescope-redrive-count': 1 } });
          this.queues.set(x.target, t);
          const idx = dlq.findIndex((y) => y.id === x.m.id);
          if (idx >= 0) dlq.splice(idx, 1);
        }
        this.events.push(`published ${ok.length}`);
      }
      sum.examined += batch.length;
      sum.moved += o.dryRun ? 0 : ok.length;
      sum.skipped += skipped.length;
      sum.failed += failed.length;
      hooks.onBatch({ examined: batch.length, moved: o.dryRun ? [] : ok.map((x) => ({ id: x.m.id, targetQueueId: x.target })), skipped, failed, possibleDuplicates: [] });
    }
    return sum;
  }

  nativeMove(): Promise<NativeMoveSupport> {
    return Promise.resolve(this.native);
  }

  /** Called when a native move starts (tests add late messages). */
  onNativeStart: (() => void) | null = null;

  startNativeMove(dlq: QueueSummary): Promise<NativeMoveHandle> {
    this.onNativeStart?.();
    const handle = { id: `h${this.nativeRuns.length}`, sourceQueueId: dlq.id, targetQueueId: null, startedAt: Date.now(), total: this.queues.get(dlq.id)?.length ?? 0 };
    this.nativeRuns.push({ handle, moved: 0, cancelled: false });
    return Promise.resolve(handle);
  }

  /** Each poll moves up to 3 messages to their x-source queue. */
  nativeMoveStatus(handle: NativeMoveHandle): Promise<NativeMoveStatus> {
    const run = this.nativeRuns.find((r) => r.handle.id === handle.id);
    if (run === undefined) throw new Error('no run');
    const dlq = this.queues.get(handle.sourceQueueId) ?? [];
    if (!run.cancelled) {
      for (let k = 0; k < 3 && dlq.length > 0; k++) {
        const m = dlq.shift();
        if (m === undefined) break;
        const src = typeof m.headers['x-source'] === 'string' ? m.headers['x-source'] : 'work';
        this.queues.set(src, [...(this.queues.get(src) ?? []), m]);
        run.moved++;
      }
    }
    const status = run.cancelled ? 'cancelled' : dlq.length === 0 ? 'completed' : 'running';
    return Promise.resolve({ status, moved: run.moved, total: handle.total, error: null });
  }

  cancelNativeMove(handle: NativeMoveHandle): Promise<void> {
    const run = this.nativeRuns.find((r) => r.handle.id === handle.id);
    if (run !== undefined) run.cancelled = true;
    return Promise.resolve();
  }

  /** Ids `publish` refuses (a re-inject's target refusing them). */
  publishFailIds = new Set<string>();
  /** Called at the start of each `publish` call with its ids (tests cancel or interfere). */
  onPublishCall: ((ids: string[]) => Promise<void>) | null = null;

  async publish(targetQueueId: string, messages: readonly QueueMessage[]): Promise<{ published: string[]; failed: { id: string; error: { code: 'BROKER_ERROR'; message: string } }[] }> {
    await this.onPublishCall?.(messages.map((m) => m.id));
    const t = this.queues.get(targetQueueId) ?? [];
    const ok = messages.filter((m) => !this.publishFailIds.has(m.id));
    for (const m of ok) t.push({ ...m, queueId: targetQueueId });
    this.queues.set(targetQueueId, t);
    return { published: ok.map((m) => m.id), failed: messages.filter((m) => this.publishFailIds.has(m.id)).map((m) => ({ id: m.id, error: { code: 'BROKER_ERROR' as const, message: 'nack' } })) };
  }
}

function summary(id: string, over: Partial<QueueSummary> = {}): QueueSummary {
  return {
    id,
    name: id,
    broker: 'rabbitmq',
    kind: 'rabbitmq-classic',
    depth: 0,
    inFlight: 0,
    delayed: null,
    consumers: 1,
    counts: {},
    deadLetterTargets: [],
    deadLetterSources: [],
    isDeadLetterQueue: false,
    capabilities: { canPeekNonDestructively: false, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: false, maxPeekWindow: 1000, peekStates: [] },
    config: {},
    ...over,
  };
}

function dead(id: string, error: string | null, source: string | null = 'work', extra: Partial<QueueMessage> = {}): QueueMessage {
  return {
    id,
    queueId: 'dlq',
    queueName: 'dlq',
    position: null,
    body: { encoding: 'utf8', data: JSON.stringify({ orderId: `A-${id}`, idempotencyKey: `A-${id.replace(/dup.*/, 'd')}:charge` }), sizeBytes: 10, truncated: false },
    headers: { ...(error !== null ? { 'x-last-error': error } : {}), ...(source !== null ? { 'x-source': source } : {}) },
    properties: {},
    meta: { finishedOn: 1000 },
    ...extra,
  };
}

let dir: string;
let mover: MemoryMover;
let env: RedriveEnv;
let queues: QueueSummary[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-redrive-'));
  mover = new MemoryMover('dlq');
  queues = [
    summary('dlq', { isDeadLetterQueue: true, deadLetterSources: ['work', 'other'] }),
    summary('work', { deadLetterTargets: [{ queueId: 'dlq', queueName: 'dlq', via: 'dlx' }] }),
    summary('other', { deadLetterTargets: [{ queueId: 'dlq', queueName: 'dlq', via: 'dlx' }] }),
    summary('parking', { isDeadLetterQueue: true, deadLetterTargets: [{ queueId: 'dlq', queueName: 'dlq', via: 'dlx' }] }),
  ];
  env = {
    adapter: {
      getQueue: (id: string) => {
        const q = queues.find((x) => x.id === id);
        if (q === undefined) return Promise.reject(new QueuescopeError('QUEUE_NOT_FOUND', `no ${id}`));
        return Promise.resolve({ ...q, depth: mover.queues.get(id)?.length ?? 0 });
      },
      listQueues: () => Promise.resolve(queues.map((q) => ({ ...q, depth: mover.queues.get(q.id)?.length ?? 0 }))),
      redrive: mover,
    },
    connectionLabel: 'amqp://guest@127.0.0.1:5672/',
    actor: 'cli',
    auditLog: new AuditLog({ path: join(dir, 'audit.jsonl') }),
    configDir: dir,
    nativePollMs: 5,
  };
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function fill(): void {
  mover.queues.set('dlq', [
    dead('1', 'HTTP 503 Service Unavailable'),
    dead('2', 'HTTP 422 Unprocessable Entity: amount must be positive', 'work', { meta: { finishedOn: 1000, attemptsMade: 3, attemptsLimit: 3 } }),
    dead('3', 'ETIMEDOUT', 'other'),
    dead('4', null, null),
    dead('5', 'HTTP 404 Not Found'),
    dead('6', 'ECONNRESET'),
  ]);
}

const ids = (q: string): string[] => (mover.queues.get(q) ?? []).map((m) => m.id).sort();

async function run(ops: OperationManager, r: RedriveRequest): Promise<{ status: string; result: RedriveResult }> {
  const snap = startRedrive(ops, env, r);
  const final = await ops.wait(snap.id);
  return { status: final.status, result: final.result as RedriveResult };
}

describe('planRedrive (dry run)', () => {
  it('lists what would move where and why the rest stays, changing nothing', async () => {
    fill();
    const progress: { examined: number; expected: number | null }[] = [];
    const plan = await planRedrive(env, { dlqId: 'dlq', selection: { kind: 'all' }, batchSize: 4 }, undefined, (p) => progress.push(p));
    expect(progress).toEqual([
      { examined: 0, expected: 6 },
      { examined: 4, expected: 6 },
      { examined: 6, expected: 6 },
    ]);
    expect(plan.examined).toBe(6);
    expect(plan.toMove).toBe(3);
    expect(plan.targets.map((t) => [t.queueId, t.count, t.via])).toEqual([
      ['work', 2, "header x-source 'work'"],
      ['other', 1, "header x-source 'other'"],
    ]);
    expect(plan.skipped).toEqual([
      { reason: 'non-retryable: HTTP 422', category: 'non-retryable', count: 1 },
      { reason: 'no target', category: 'no target', count: 1 },
      { reason: 'non-retryable: HTTP 404', category: 'non-retryable', count: 1 },
    ]);
    expect(plan.wastedRetries).toBe(1);
    expect(plan.groups.find((g) => g.label === 'HTTP 422')).toMatchObject({ class: 'non-retryable', count: 1, wastedRetries: 1 });
    expect(plan.samples.find((s) => s.id === '2')?.reason).toBe('non-retryable: HTTP 422 — HTTP 422 Unprocessable Entity: amount must be positive');
    expect(plan.native.wouldUse).toBe(false);
    expect(ids('dlq')).toEqual(['1', '2', '3', '4', '5', '6']);
    expect(mover.queues.get('work')).toBeUndefined();
    expect((await env.auditLog.read()).total).toBe(0);
  });

  it('refuses a chosen target that is the DLQ itself or a DLQ that dead-letters back, unless confirmed', async () => {
    fill();
    await expect(planRedrive(env, { dlqId: 'dlq', selection: { kind: 'all' }, targetQueueId: 'dlq' })).rejects.toThrow(/dead-letter queue itself/);
    await expect(planRedrive(env, { dlqId: 'dlq', selection: { kind: 'all' }, targetQueueId: 'parking' })).rejects.toThrow(/dead-letters straight back/);
    const plan = await planRedrive(env, { dlqId: 'dlq', selection: { kind: 'all' }, targetQueueId: 'parking', confirmLoop: true });
    expect(plan.targets).toMatchObject([{ queueId: 'parking', count: 4 }]);
    expect(plan.loops.map((l) => l.queueId)).toEqual(['parking']);
    await expect(planRedrive(env, { dlqId: 'dlq', selection: { kind: 'all' }, targetQueueId: 'nope' })).rejects.toMatchObject({ code: 'QUEUE_NOT_FOUND' });
  });

  it('filters, picked ids, include-non-retryable and one-per-key', async () => {
    fill();
    const f = await planRedrive(env, { dlqId: 'dlq', selection: { kind: 'filter', filter: { classes: ['transient'], text: ['A-1'] } } });
    expect(f.toMove).toBe(1);
    expect(f.skipped.map((s) => s.reason)).toContain('not selected (class:transient)');
    const picked = await planRedrive(env, { dlqId: 'dlq', selection: { kind: 'ids', ids: ['2', '3'] }, includeNonRetryable: true });
    expect(picked.targets.map((t) => [t.queueId, t.count])).toEqual([
      ['work', 1],
      ['other', 1],
    ]);
    expect(picked.skipped).toEqual([{ reason: 'not picked', category: 'not picked', count: 4 }]);
    mover.queues.set('dlq', [dead('dup1', 'ETIMEDOUT'), dead('dup2', 'ETIMEDOUT'), dead('7', 'ETIMEDOUT')]);
    const dedupe = await planRedrive(env, { dlqId: 'dlq', selection: { kind: 'all' }, dedupeByKey: true });
    expect(dedupe.toMove).toBe(2);
    expect(dedupe.skipped).toEqual([{ reason: 'duplicate idempotency key', category: 'duplicate key', count: 1 }]);
    expect(dedupe.samples.find((s) => s.id === 'dup2')?.reason).toBe('duplicate idempotency key A-d:charge');
  });
});

describe('runRedrive', () => {
  it('moves exactly what the dry run listed, writes and fsyncs the backup before publishing, and logs an audit entry', async () => {
    fill();
    const plan = await planRedrive(env, { dlqId: 'dlq', selection: { kind: 'all' } });
    const backupPath = join(dir, 'b.jsonl');
    mover.onPublish = async (published) => {
      const onDisk = await readFile(backupPath, 'utf8');
      for (const id of published) expect(onDisk).toContain(`"id":"${id}"`);
    };
    const ops = new OperationManager();
    const { status, result } = await run(ops, { dlqId: 'dlq', selection: { kind: 'all' }, backupPath, batchSize: 2 });
    expect(status).toBe('completed');
    expect(result).toMatchObject({ mode: 'client-side', examined: 6, moved: plan.toMove, skipped: 3, failed: 0, backupPath });
    expect(ids('work')).toEqual(['1', '6']);
    expect(ids('other')).toEqual(['3']);
    expect(ids('dlq')).toEqual(['2', '4', '5']);
    const backup = await readSnapshotFile(backupPath);
    expect(backup).toHaveLength(1);
    expect(backup[0]?.header.source.connection).toBe('amqp://guest@127.0.0.1:5672/');
    expect(backup[0]?.messages.map((m) => m.id).sort()).toEqual(['1', '3', '6']);
    const log = await env.auditLog.read();
    expect(log.entries[0]).toMatchObject({ action: 'redrive', actor: 'cli', status: 'completed', source: 'dlq', backupPath, counts: { moved: 3, skipped: 3, failed: 0 }, operationId: expect.any(String) as unknown });
  });

  it('every message ends in exactly one place when publishing fails for some; failures are reported', async () => {
    fill();
    mover.failIds.add('6');
    const ops = new OperationManager();
    const snap = startRedrive(ops, env, { dlqId: 'dlq', selection: { kind: 'all' } });
    const final = await ops.wait(snap.id);
    expect(final.status).toBe('completed');
    expect(final.failed).toBe(1);
    expect(final.errors.map((e) => e.message)).toEqual(['Message 6 stayed in the DLQ: nack']);
    expect([...ids('dlq'), ...ids('work'), ...ids('other')].sort()).toEqual(['1', '2', '3', '4', '5', '6']);
  });

  it('rate-limits moved messages per second', async () => {
    mover.queues.set(
      'dlq',
      Array.from({ length: 12 }, (_, i) => dead(String(i), 'ETIMEDOUT')),
    );
    const ops = new OperationManager();
    const t0 = Date.now();
    const { result } = await run(ops, { dlqId: 'dlq', selection: { kind: 'all' }, ratePerSecond: 8, batchSize: 100 });
    const secs = (Date.now() - t0) / 1000;
    expect(result.moved).toBe(12);
    // 8 may go at once (one batch of 8 = the rate), the next 4 wait for the bucket: ≥ 1 s in all.
    expect(secs).toBeGreaterThanOrEqual(0.9);
    expect(secs).toBeLessThan(4);
  });

  it('pauses between batches, resumes, and cancels leaving every message in one place', async () => {
    mover.queues.set(
      'dlq',
      Array.from({ length: 200 }, (_, i) => dead(String(i), 'ETIMEDOUT')),
    );
    const ops = new OperationManager();
    let paused = false;
    const snap = startRedrive(ops, env, { dlqId: 'dlq', selection: { kind: 'all' }, batchSize: 5, ratePerSecond: 50 });
    const unsub = ops.subscribe((s) => {
      if (s.id === snap.id && !paused && s.moved >= 5) {
        paused = true;
        ops.pause(snap.id);
      }
    });
    await waitFor(() => ops.get(snap.id).status === 'paused');
    await new Promise((r) => setTimeout(r, 300));
    const atPause = ids('work').length;
    await new Promise((r) => setTimeout(r, 300));
    expect(ids('work').length).toBe(atPause);
    ops.resume(snap.id);
    await waitFor(() => ids('work').length > atPause);
    ops.cancel(snap.id);
    const final = await ops.wait(snap.id);
    unsub();
    expect(final.status).toBe('cancelled');
    expect(ids('work').length).toBeLessThan(200);
    expect([...ids('dlq'), ...ids('work')].sort()).toEqual(Array.from({ length: 200 }, (_, i) => String(i)).sort());
    const entry = (await env.auditLog.read()).entries[0];
    expect(entry).toMatchObject({ status: 'cancelled', counts: { moved: ids('work').length } });
    const backup = await readSnapshotFile(entry?.backupPath ?? '');
    expect(backup[0]?.messages.length).toBeGreaterThanOrEqual(ids('work').length);
  });

  it('respects the limit and the start-time cutoff', async () => {
    mover.queues.set('dlq', [dead('1', 'ETIMEDOUT'), dead('2', 'ETIMEDOUT'), dead('late', 'ETIMEDOUT', 'work', { meta: { finishedOn: Date.now() + 60_000 } })]);
    const ops = new OperationManager();
    const limited = await run(ops, { dlqId: 'dlq', selection: { kind: 'all' }, limit: 1 });
    expect(limited.result.moved).toBe(1);
    const rest = await run(ops, { dlqId: 'dlq', selection: { kind: 'all' } });
    expect(rest.result.moved).toBe(1);
    expect(ids('dlq')).toEqual(['late']);
  });

  it('uses the native path for a whole DLQ going back to its sources, with a backup first', async () => {
    mover.queues.set('dlq', Array.from({ length: 10 }, (_, i) => dead(String(i), 'ETIMEDOUT')));
    mover.native = { ...mover.native, available: true };
    const ops = new OperationManager();
    const { status, result } = await run(ops, { dlqId: 'dlq', selection: { kind: 'all' } });
    expect(status).toBe('completed');
    expect(result).toMatchObject({ mode: 'native', mechanism: 'memory move', moved: 10, stoppedBecause: 'native' });
    expect(ids('work')).toHaveLength(10);
    const backup = await readSnapshotFile(result.backupPath ?? '');
    expect(backup[0]?.messages).toHaveLength(10);
    expect((await env.auditLog.read()).entries[0]?.details).toMatchObject({ mode: 'native' });
  });

  it('says so when the native move moved more than the backup holds (messages that arrived after the backup pass)', async () => {
    mover.queues.set('dlq', Array.from({ length: 6 }, (_, i) => dead(String(i), 'ETIMEDOUT')));
    mover.native = { ...mover.native, available: true };
    mover.onNativeStart = () => mover.queues.get('dlq')?.push(dead('late1', 'ETIMEDOUT'), dead('late2', 'ETIMEDOUT'));
    const ops = new OperationManager();
    const snap = startRedrive(ops, env, { dlqId: 'dlq', selection: { kind: 'all' } });
    const final = await ops.wait(snap.id);
    const result = final.result as RedriveResult;
    expect(result).toMatchObject({ mode: 'native', moved: 8 });
    expect(result.notes.join(' ')).toMatch(/moved 2 messages more than the backup holds \(6\)/);
    expect(final.errors.at(-1)?.message).toMatch(/2 messages were moved by memory move without being in the backup/);
    expect((await readSnapshotFile(result.backupPath ?? ''))[0]?.messages).toHaveLength(6);
  });

  it('falls back to client-side when some messages stay (non-retryable), and fails with require', async () => {
    fill();
    mover.native = { ...mover.native, available: true };
    const ops = new OperationManager();
    const { result } = await run(ops, { dlqId: 'dlq', selection: { kind: 'all' } });
    expect(result.mode).toBe('client-side');
    expect(result.moved).toBe(3);
    // The native path's backup pass decided every message once: the client-side run counts afresh.
    expect(result.skipReasons.reduce((n, g) => n + g.count, 0)).toBe(result.skipped);
    expect(result.skipped).toBe(3);
    const backup = await readSnapshotFile(result.backupPath ?? '');
    expect(backup[0]?.messages.map((m) => m.id).sort()).toEqual(['1', '3', '6']);
    const required = await run(ops, { dlqId: 'dlq', selection: { kind: 'filter', filter: { classes: ['transient'] } }, native: 'require' });
    expect(required.status).toBe('failed');
  });

  it('a native move cancelled while it runs is reported as native (with its mechanism), not client-side', async () => {
    mover.queues.set('dlq', Array.from({ length: 30 }, (_, i) => dead(String(i), 'ETIMEDOUT')));
    mover.native = { ...mover.native, available: true };
    env.nativePollMs = 20;
    const ops = new OperationManager();
    const snap = startRedrive(ops, env, { dlqId: 'dlq', selection: { kind: 'all' } });
    await waitFor(() => ids('work').length >= 3);
    ops.cancel(snap.id);
    const final = await ops.wait(snap.id);
    expect(final.status).toBe('cancelled');
    expect(final.errors.at(-1)?.details?.result).toMatchObject({ mode: 'native', mechanism: 'memory move' });
  });

  it('a native move paused is cancelled on the broker and started again on resume', async () => {
    mover.queues.set('dlq', Array.from({ length: 30 }, (_, i) => dead(String(i), 'ETIMEDOUT')));
    mover.native = { ...mover.native, available: true };
    env.nativePollMs = 20;
    const ops = new OperationManager();
    const snap = startRedrive(ops, env, { dlqId: 'dlq', selection: { kind: 'all' } });
    await waitFor(() => ids('work').length >= 6);
    ops.pause(snap.id);
    await waitFor(() => mover.nativeRuns[0]?.cancelled === true);
    const atPause = ids('work').length;
    await new Promise((r) => setTimeout(r, 150));
    expect(ids('work').length).toBe(atPause);
    ops.resume(snap.id);
    const final = await ops.wait(snap.id);
    expect(final.status).toBe('completed');
    expect(mover.nativeRuns.length).toBe(2);
    expect(ids('work')).toHaveLength(30);
    expect(final.moved).toBe(30);
  });

  it('a connection without a mover is UNSUPPORTED', async () => {
    const ops = new OperationManager();
    const { redrive: _r, ...rest } = env.adapter;
    env = { ...env, adapter: rest };
    await expect(planRedrive(env, { dlqId: 'dlq', selection: { kind: 'all' } })).rejects.toMatchObject({ code: 'UNSUPPORTED' });
    const { status } = await run(ops, { dlqId: 'dlq', selection: { kind: 'all' } });
    expect(status).toBe('failed');
  });
});

describe('runReinject', () => {
  it('publishes a backup into a queue and logs it', async () => {
    fill();
    const ops = new OperationManager();
    const { result } = await run(ops, { dlqId: 'dlq', selection: { kind: 'all' }, backupPath: join(dir, 'b.jsonl') });
    expect(result.moved).toBe(3);
    const snap = startReinject(ops, env, { path: join(dir, 'b.jsonl'), targetQueueId: 'other' });
    const final = await ops.wait(snap.id);
    expect(final.status).toBe('completed');
    expect(final.result).toMatchObject({ read: 3, published: 3, failed: 0 });
    expect(ids('other')).toEqual(['1', '3', '3', '6']);
    expect((await env.auditLog.read()).entries[0]).toMatchObject({ action: 'reinject', target: 'other', counts: { published: 3 } });
  });

  // The backup also holds a message whose publish failed after it was backed up (it stayed in the
  // DLQ); re-injecting the backup published it again: a duplicate of the one still in the DLQ.
  it('leaves out what the redrive backed up but did not move (it stayed in the DLQ), naming it; includeNotMoved publishes it too', async () => {
    fill();
    mover.failIds.add('6');
    const ops = new OperationManager();
    const backupPath = join(dir, 'failed.jsonl');
    const { result } = await run(ops, { dlqId: 'dlq', selection: { kind: 'all' }, backupPath });
    expect(result).toMatchObject({ moved: 2, failed: 1 });
    expect((await readSnapshotFile(backupPath))[0]?.messages.map((m) => m.id).sort()).toEqual(['1', '3', '6']);
    const redrive = (await env.auditLog.read()).entries[0];
    expect(redrive?.details.notMoved).toMatchObject({ count: 1, stayed: 1, taken: 0, unknown: 0, complete: true, sample: [{ id: '6', why: 'stayed' }] });
    queues.push(summary('back'), summary('all'));
    mover.queues.set('back', []);
    const final = await ops.wait(startReinject(ops, env, { path: backupPath, targetQueueId: 'back' }).id);
    expect(final.status).toBe('completed');
    expect(final.result).toMatchObject({ read: 3, published: 2, failed: 0, leftOut: 1 });
    expect(ids('back').sort()).toEqual(['1', '3']);
    const notes = (final.result as { notes: string[] }).notes.join('\n');
    expect(notes).toContain(`1 of the 3 messages in ${backupPath} were not moved by the redrive that wrote it`);
    expect(notes).toContain('1 stayed in the DLQ (its move failed). Not moved: 6. They are left out: 2 are published.');
    expect((await env.auditLog.read()).entries[0]).toMatchObject({ action: 'reinject', counts: { read: 3, published: 2, leftOut: 1 } });
    mover.queues.set('all', []);
    const whole = await ops.wait(startReinject(ops, env, { path: backupPath, targetQueueId: 'all', includeNotMoved: true }).id);
    expect(whole.result).toMatchObject({ read: 3, published: 3, leftOut: 0 });
    expect(ids('all').sort()).toEqual(['1', '3', '6']);
  });
});

describe('runReinject: remainder file', () => {
  /** A backup of 1, 3, 6 whose redrive did not move 6 (its move failed: it stayed in the DLQ). */
  async function backupWithNotMoved(ops: OperationManager): Promise<string> {
    fill();
    mover.failIds.add('6');
    const backupPath = join(dir, 'failed.jsonl');
    const { result } = await run(ops, { dlqId: 'dlq', selection: { kind: 'all' }, backupPath });
    expect(result).toMatchObject({ moved: 2, failed: 1 });
    queues.push(summary('back'));
    mover.queues.set('back', []);
    return backupPath;
  }

  // Old code: the refused 3 stayed only in the backup, with 1 (published) and 6 (not moved).
  it('writes the messages not published (not those left out) to a remainder file that re-injects only them', async () => {
    const ops = new OperationManager();
    const backupPath = await backupWithNotMoved(ops);
    const original = await readFile(backupPath);
    mover.publishFailIds.add('3');
    env = { ...env, now: () => Date.UTC(2026, 11, 3, 10, 0) };
    const final = await ops.wait(startReinject(ops, env, { path: backupPath, targetQueueId: 'back', batchSize: 1 }).id);
    expect(final.status).toBe('completed');
    const remainderPath = join(dir, 'failed.remainder-2026-12-03T10-00-00-000Z.jsonl');
    expect(final.result).toMatchObject({ read: 3, published: 1, failed: 1, leftOut: 1, remainder: { path: remainderPath, messages: 1 }, remainderError: null });
    expect((await readSnapshotFile(remainderPath)).map((s) => s.messages.map((m) => m.id))).toEqual([['3']]);
    // The line is the backup's own line, byte for byte.
    const line3 = original.toString('utf8').split('\n').find((l) => l.includes('"id":"3"'));
    expect((await readFile(remainderPath, 'utf8')).split('\n')[1]).toBe(line3);
    expect(await readFile(backupPath)).toEqual(original);
    const notes = (final.result as { notes: string[] }).notes.join('\n');
    expect(notes).toContain(`the 1 message not published — 1 failed — is in the remainder file ${remainderPath}, in their order in ${backupPath}: re-inject that file`);
    const entry = (await env.auditLog.read()).entries[0];
    expect(entry).toMatchObject({ action: 'reinject', details: { remainder: { path: remainderPath, messages: 1 } } });
    // Re-injecting the remainder: its path has no redrive record, so nothing is left out; 3 only.
    mover.publishFailIds.clear();
    const again = await ops.wait(startReinject(ops, env, { path: remainderPath, targetQueueId: 'back' }).id);
    expect(again.result).toMatchObject({ read: 1, published: 1, failed: 0, leftOut: 0, remainder: null });
    expect(ids('back')).toEqual(['1', '3']);
    // The backup's next re-inject is warned where the rest went.
    const { priorUsesOfBackup } = await import('./engine');
    expect((await priorUsesOfBackup(env, backupPath)).join('\n')).toContain(`the 1 it did not publish are in ${remainderPath}: re-inject that file to publish only them`);
  });

  it('a cancelled run writes what it did not get to, a failed one the batch whose call failed too (outcome unknown), each result carried by the last error', async () => {
    const ops = new OperationManager();
    const backupPath = await backupWithNotMoved(ops);
    let snapId = '';
    mover.onPublishCall = (batch) => {
      if (batch.includes('1')) ops.cancel(snapId);
      return Promise.resolve();
    };
    const rest = join(dir, 'out', 'rest.jsonl');
    const snap = startReinject(ops, env, { path: backupPath, targetQueueId: 'back', batchSize: 1, remainderPath: rest });
    snapId = snap.id;
    const final = await ops.wait(snap.id);
    expect(final.status).toBe('cancelled');
    const result = final.errors.at(-1)?.details?.result as { published: number; remainder: unknown; notes: string[] };
    expect(result).toMatchObject({ published: 1, remainder: { path: rest, messages: 1 } });
    // 3 was not sent; 6 (not moved by the redrive) is not in it.
    expect((await readSnapshotFile(rest)).flatMap((s) => s.messages.map((m) => m.id))).toEqual(['3']);
    expect(result.notes.join('\n')).toContain('the 1 message not published — 1 not sent before the run stopped — is in the remainder file');
    // A publish call that throws: its outcome is unknown, its messages go into the remainder, said so.
    mover.onPublishCall = (batch) => (batch.includes('3') ? Promise.reject(new QueuescopeError('HOST_UNREACHABLE', 'connection lost')) : Promise.resolve());
    const failed = await ops.wait(startReinject(ops, env, { path: backupPath, targetQueueId: 'back', batchSize: 1 }).id);
    expect(failed.status).toBe('failed');
    expect(failed.errors.at(-1)).toMatchObject({ code: 'HOST_UNREACHABLE', message: 'connection lost' });
    const r2 = failed.errors.at(-1)?.details?.result as { remainder: { path: string; messages: number }; notes: string[] };
    expect(r2.remainder.messages).toBe(1);
    expect((await readSnapshotFile(r2.remainder.path)).flatMap((s) => s.messages.map((m) => m.id))).toEqual(['3']);
    expect(r2.notes.join('\n')).toContain('1 in a publish call that failed without an answer (they may have been published');
  });

  it('an explicit remainder path that exists is refused before publishing; one that appears during the run is not overwritten, and the result says the backup still holds everything', async () => {
    const ops = new OperationManager();
    const backupPath = await backupWithNotMoved(ops);
    const taken = join(dir, 'taken.jsonl');
    await writeFile(taken, 'mine\n');
    const refused = await ops.wait(startReinject(ops, env, { path: backupPath, targetQueueId: 'back', remainderPath: taken }).id);
    expect(refused.status).toBe('failed');
    expect(refused.errors.at(-1)).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('already exists') as unknown });
    expect(ids('back')).toEqual([]);
    const later = join(dir, 'later.jsonl');
    mover.publishFailIds.add('3');
    mover.onPublishCall = () => writeFile(later, 'someone else\n', { flag: 'a' });
    const final = await ops.wait(startReinject(ops, env, { path: backupPath, targetQueueId: 'back', remainderPath: later }).id);
    expect(final.status).toBe('completed');
    expect(final.result).toMatchObject({ published: 1, failed: 1, remainder: null, remainderError: expect.stringContaining('already exists') as unknown });
    expect(await readFile(later, 'utf8')).toBe('someone else\n');
    expect((final.result as { notes: string[] }).notes.join('\n')).toContain(`${backupPath} still holds them (1 of them known), in order, with the 1 published now`);
    expect((await env.auditLog.read()).entries[0]?.details).toMatchObject({ remainderError: expect.stringContaining('already exists') as unknown });
  });
});

describe('runReinject: a backup is known by the run id in its header', () => {
  /** A backup of 1, 3, 6 whose redrive did not move 6 (it stayed in the DLQ), and its run's operation id. */
  async function backup(ops: OperationManager): Promise<{ path: string; runId: string }> {
    fill();
    mover.failIds.add('6');
    const path = join(dir, 'failed.jsonl');
    const snap = startRedrive(ops, env, { dlqId: 'dlq', selection: { kind: 'all' }, backupPath: path });
    expect((await ops.wait(snap.id)).result).toMatchObject({ moved: 2, failed: 1 });
    queues.push(summary('back'));
    mover.queues.set('back', []);
    return { path, runId: snap.id };
  }
  const notesOf = (r: unknown): string => (r as { notes: string[] }).notes.join('\n');

  it('the header names the run (its operation id, also in its audit entries)', async () => {
    const ops = new OperationManager();
    const { path, runId } = await backup(ops);
    expect((await readSnapshotFile(path))[0]?.header.redriveRun).toEqual({ id: runId });
    const entries = (await env.auditLog.read({ action: 'redrive' })).entries;
    expect(entries[0]).toMatchObject({ status: 'completed', operationId: runId, details: { redriveRunId: runId } });
  });

  // Old code looked the record up by path: a copy published 6 too (a duplicate of the 6 still in the DLQ), without a word.
  it('a copy leaves out what the redrive did not move, like the original; its re-inject is an earlier use of the original', async () => {
    const ops = new OperationManager();
    const { path, runId } = await backup(ops);
    const copy = join(dir, 'elsewhere', 'x.jsonl');
    await mkdir(join(dir, 'elsewhere'));
    await copyFile(path, copy);
    const final = await ops.wait(startReinject(ops, env, { path: copy, targetQueueId: 'back' }).id);
    expect(final.result).toMatchObject({ read: 3, published: 2, leftOut: 1 });
    expect(ids('back')).toEqual(['1', '3']);
    expect(notesOf(final.result)).toContain(`1 of the 3 messages in ${copy} were not moved by the redrive that wrote it`);
    expect((await env.auditLog.read({ action: 'reinject' })).entries[0]?.details.redriveRunId).toBe(runId);
    const prior = (await priorUsesOfBackup(env, path)).join('\n');
    expect(prior).toContain(`this backup was already re-injected (`);
    expect(prior).toContain(`from ${copy}, a copy of it: 2 published to back`);
    expect(prior).toContain('the redrive that wrote this backup (');
  });

  it('in another profile (no record of the run) nothing is left out and a note names the run; an older backup without a run id copied elsewhere gets it too', async () => {
    const ops = new OperationManager();
    const { path, runId } = await backup(ops);
    const header = (await readSnapshotFile(path))[0]!.header;
    const other: RedriveEnv = { ...env, auditLog: new AuditLog({ path: join(dir, 'other', 'audit.jsonl') }) };
    const final = await ops.wait(startReinject(ops, other, { path, targetQueueId: 'back' }).id);
    expect(final.result).toMatchObject({ read: 3, published: 3, leftOut: 0 });
    const started = new Date(header.exportedAt).toISOString().replace(/\.\d{3}Z$/, 'Z');
    expect(notesOf(final.result)).toContain(
      `${path} is the backup of a redrive (run ${runId}, started ${started}) of dlq on amqp://guest@127.0.0.1:5672/, and this profile's audit log (${join(dir, 'other', 'audit.jsonl')}) has no record of that run`,
    );
    expect(notesOf(final.result)).toContain('cannot be told apart from those it moved, so all 3 are published and those may be published again');

    // A backup written before run ids: found by its path where it was written, not under another name.
    const lines = (await readFile(path, 'utf8')).split('\n');
    const { redriveRun: _r, ...old } = JSON.parse(lines[0]!) as Record<string, unknown>;
    const older = join(dir, 'older.jsonl');
    await writeFile(older, [JSON.stringify(old), ...lines.slice(1)].join('\n'));
    const sel = await reinjectSelection(env, older, false);
    expect(sel).toMatchObject({ leftOut: 0, redriveRunId: null });
    expect(sel.warnings.join('\n')).toContain(`${older} is the backup of a redrive (started ${started}; an older backup that names no run, looked up by its path)`);
  });

  it('a remainder of the backup carries no run id: its re-inject publishes all of it, with no record looked up and no warning', async () => {
    const ops = new OperationManager();
    const { path } = await backup(ops);
    mover.publishFailIds.add('3');
    const final = await ops.wait(startReinject(ops, env, { path, targetQueueId: 'back' }).id);
    const rest = (final.result as { remainder: { path: string } | null }).remainder;
    expect(final.result).toMatchObject({ published: 1, failed: 1, leftOut: 1, remainder: { messages: 1 } });
    const h = (await readSnapshotFile(rest!.path))[0]!.header;
    expect(h.redriveRun).toBeUndefined();
    expect(h.remainderOf?.path).toBe(path);
    mover.publishFailIds.clear();
    const sel = await reinjectSelection(env, rest!.path, false);
    expect(sel).toMatchObject({ total: 1, leftOut: 0, warnings: [], redriveRunId: null });
    // Not even in a profile with no record of the redrive: a remainder is not a redrive's backup.
    const other: RedriveEnv = { ...env, auditLog: new AuditLog({ path: join(dir, 'other', 'audit.jsonl') }) };
    expect((await reinjectSelection(other, rest!.path, false)).warnings).toEqual([]);
    const again = await ops.wait(startReinject(ops, env, { path: rest!.path, targetQueueId: 'back' }).id);
    expect(again.result).toMatchObject({ read: 1, published: 1, leftOut: 0, notes: [] });
    expect(ids('back')).toEqual(['1', '3']);
    // Its earlier use is said of a remainder file, not of "this backup" (fresh-user pass: the wording was a backup's for any file).
    const prior = (await priorUsesOfBackup(env, rest!.path)).join('\n');
    expect(prior).toContain('this remainder file was already re-injected (');
    expect(prior).not.toContain('this backup');
  });

  it('an earlier re-inject of a plain export (not a backup) is said of "this file"', async () => {
    const ops = new OperationManager();
    const { path } = await backup(ops);
    // The backup's lines under an export's header: no redrive run, no backup marker.
    const lines = (await readFile(path, 'utf8')).split('\n');
    const { redriveRun: _r, partial: _p, partialReason: _pr, ...plain } = JSON.parse(lines[0]!) as Record<string, unknown>;
    const exported = join(dir, 'export.jsonl');
    await writeFile(exported, [JSON.stringify(plain), ...lines.slice(1)].join('\n'));
    expect((await backupOriginOf(exported)).redriveBackup).toBe(false);
    await ops.wait(startReinject(ops, env, { path: exported, targetQueueId: 'back' }).id);
    const prior = (await priorUsesOfBackup(env, exported)).join('\n');
    expect(prior).toContain('this file was already re-injected (');
    expect(prior).not.toContain('this backup');
  });
});

async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('validateRequest: body read limit', () => {
  const base: RedriveRequest = { dlqId: 'q', selection: { kind: 'all' } };
  it('accepts 1 B to 128 MiB and refuses the rest with INVALID_INPUT naming maxBodyBytes', () => {
    expect(() => validateRequest({ ...base, maxBodyBytes: 1 })).not.toThrow();
    expect(() => validateRequest({ ...base, maxBodyBytes: 128 * 1024 * 1024 })).not.toThrow();
    for (const bad of [0, -1, 1.5, 128 * 1024 * 1024 + 1, Number.NaN]) {
      let err: unknown = null;
      try {
        validateRequest({ ...base, maxBodyBytes: bad });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(QueuescopeError);
      expect((err as QueuescopeError).code).toBe('INVALID_INPUT');
      expect((err as QueuescopeError).message).toContain('maxBodyBytes');
    }
  });
});
