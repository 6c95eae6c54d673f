import { randomUUID } from 'node:crypto';
import { resolve as resolvePath } from 'node:path';
import { TokenBucket } from 'limiter';
import type { KeyRule } from '../../shared/analysis/idempotency';
import { QueuescopeError, toErrorInfo, type OperationSnapshot, type QueueMessage, type QueueSummary } from '../../shared/domain';
import { formatFilter, type RedriveFilter } from '../../shared/redrive/filter';
import type { MoveBatchResult, MoveSummary, NativeMoveHandle, NativeMoveStatus, NativeMoveSupport, PublishRun, RedriveMover } from '../adapters/redrive-types';
import type { BrokerAdapter } from '../adapters/types';
import { readFirstHeader, readSnapshot, type SnapshotItem } from '../snapshot/reader';
import { isRedriveBackupHeader, REDRIVE_BACKUP_PARTIAL_REASON } from '../snapshot/format';
import { findAuditEntriesContaining, type AuditEntry, type AuditLog } from '../services/audit-log';
import type { OperationContext, OperationManager } from '../services/operations';
import { snapshotLineProblem } from '../snapshot/format';
import { RedriveBackup, defaultBackupPath } from './backup';
import { checkRemainderPath, writeRemainder } from './remainder';
import { acquireSourceLock, staleLockNote, type SourceLock } from './source-lock';
import { checkPendingMinIdle, DEFAULT_PENDING_MIN_IDLE_MS, DEFAULT_REDRIVE_MAX_BODY_BYTES, formatIdleThreshold, MAX_CANNOT_MOVE_LISTED, MAX_REDRIVE_MAX_BODY_BYTES, type MovedOnByReading, type RedrivePlan, type RedriveResult } from '../../shared/redrive/types';
import { Decider, describeTarget, type RedriveSelection } from './decider';
import { checkTargetKeys, TargetKeyCollector, targetReadSideEffects } from './target-keys';
import { describeNotMovedKinds, notMovedKindAt, notMovedRecordOf, NotMovedTracker, type NotMovedRecord } from '../../shared/redrive/not-moved';

export type { RedrivePlan, RedriveResult };

export type { RedriveSelection } from './decider';

/** Default messages per batch. */
export const DEFAULT_BATCH_SIZE = 100;
/** How often a native move is polled, ms. */
export const NATIVE_POLL_MS = 1000;

/** What to redrive and how. */
export interface RedriveRequest {
  /** The DLQ's queue id. */
  dlqId: string;
  /** Peek state to redrive where the broker has states (BullMQ `failed`); absent = the mover's default. */
  state?: string;
  selection: RedriveSelection;
  /** Move non-retryable messages too (default false: they stay in the DLQ with their reason). */
  includeNonRetryable?: boolean;
  /** Move one message per idempotency key (the first read); the others stay, reported as duplicates. */
  dedupeByKey?: boolean;
  /**
   * Move messages a consumer received less than 60 s ago (`RECENT_DELIVERY_MS` of the adapters' redrive types) and has not
   * acknowledged too — Redis stream entries pending in a consumer group of the DLQ. Default false:
   * they stay in the DLQ (skip category `held`), and the plan and result warn about them.
   */
  includePending?: boolean;
  /**
   * Idle threshold of those pending entries, ms (default 60 s, `DEFAULT_PENDING_MIN_IDLE_MS`; a whole
   * number from 1 ms to 7 days): entries a consumer received less than this long ago stay unless
   * {@link includePending}; longer-idle ones are taken as left by a stopped consumer, and move.
   */
  pendingMinIdleMs?: number;
  /** User rules for finding idempotency keys (profile / project `inspect` settings). */
  keyRules?: KeyRule[];
  /** A target queue id; absent/null = each message's original source ({@link RedriveMover.resolveTarget}). */
  targetQueueId?: string | null;
  /** Move into a target that loops back into the DLQ anyway (see {@link TargetInfo.loop}). */
  confirmLoop?: boolean;
  /**
   * Read the DLQ even where reading it can make the broker move messages on to another queue
   * ({@link RedriveMover.readMovesMessagesOn}: an SQS DLQ with its own RedrivePolicy). Default false:
   * the dry run and the run refuse with `PEEK_REFUSED` before reading anything.
   */
  acceptSideEffects?: boolean;
  /** Messages per second moved, null = unlimited. */
  ratePerSecond?: number | null;
  /** Messages per batch, 1–1000 (default 100); lowered to the rate when a rate is set. */
  batchSize?: number;
  /** Examine at most this many messages (default: the DLQ depth at the start). */
  limit?: number | null;
  /**
   * `auto` (default): use the broker's native move when the whole DLQ goes back to its source and
   * the mover supports it; `never`: always client-side; `require`: native or fail (`UNSUPPORTED`).
   */
  native?: 'auto' | 'never' | 'require';
  /** Backup file; absent/null = `<configDir>/backups/redrive-<dlq>-<time>.jsonl`. */
  backupPath?: string | null;
  /** Samples per action in a plan (default 10). */
  samples?: number;
  /**
   * Body bytes read per message (default {@link DEFAULT_REDRIVE_MAX_BODY_BYTES}, 1 MiB + 1 KiB; at
   * most {@link MAX_REDRIVE_MAX_BODY_BYTES}, 128 MiB). A message with a larger body is never moved
   * (it cannot be backed up whole): the plan lists it under `cannotMove`. Memory grows with it: a
   * batch holds up to `batchSize × maxBodyBytes` bytes.
   */
  maxBodyBytes?: number;
}

/** What the engine needs from its caller. */
export interface RedriveEnv {
  /**
   * The connection's adapter. `peek` and `broker` are used only by the dry run's check of the
   * targets for idempotency keys already waiting there (`target-keys.ts`); without them the plan
   * says the check could not run.
   */
  adapter: Pick<BrokerAdapter, 'getQueue' | 'listQueues' | 'redrive'> & Partial<Pick<BrokerAdapter, 'peek' | 'broker'>>;
  /** Connection label without secrets (`describeConnection`). */
  connectionLabel: string;
  actor: 'app' | 'cli';
  auditLog: AuditLog;
  /** Folder for default backups (the config dir). */
  configDir: string;
  now?: () => number;
  /** Native move poll interval, ms (tests). */
  nativePollMs?: number;
}

/** Re-inject request: publish a snapshot's messages to a queue. */
export interface ReinjectRequest {
  /** Snapshot file (`.jsonl` / `.jsonl.gz`, e.g. a redrive backup). */
  path: string;
  targetQueueId: string;
  ratePerSecond?: number | null;
  batchSize?: number;
  /**
   * Publish the messages of a redrive backup that its redrive did not move too (default false: they
   * are left out — see {@link reinjectSelection}; they are still in the DLQ, or another client took
   * them, so publishing them makes duplicates).
   */
  includeNotMoved?: boolean;
  /**
   * Where to write the remainder file — the messages this run does not publish (see
   * {@link runReinject} and `core/redrive/remainder.ts`). Absent/null: next to `path`
   * (`<name>.remainder-<time>.jsonl`, or in `<configDir>/backups` when that folder cannot be
   * written). A path given is checked before anything is published: refused (`INVALID_INPUT`) when
   * a file exists there, `PERMISSION_DENIED` when its folder cannot be written.
   */
  remainderPath?: string | null;
}

/** What a finished re-inject did. */
export interface ReinjectResult extends Record<string, unknown> {
  path: string;
  targetQueueId: string;
  targetName: string;
  /** Messages read from the file (published + failed + left out, when it ran to the end). */
  read: number;
  published: number;
  failed: number;
  /** Messages of a redrive backup left out because its redrive did not move them ({@link reinjectSelection}); 0 with `includeNotMoved`. */
  leftOut: number;
  /**
   * Of `failed`, the messages held back, not sent: an earlier message of their ordering key (SQS
   * FIFO message group) was not published in this run — refused, or its outcome unknown — and
   * publishing them would have put them ahead of it (`details.blockedBy` of their error names it).
   */
  heldBack: number;
  /**
   * The remainder file: the messages of the file this run did not publish — failed (refused, held
   * back, outcome unknown) and, when the run was cancelled or failed, those it did not get to — in
   * their order, as the file holds them, so `reinject --from <remainder.path>` publishes only them.
   * Messages left out (`leftOut`) are not in it. Null when every message was published (or left
   * out), or when it could not be written (`remainderError`).
   */
  remainder: { path: string; messages: number } | null;
  /** Why the remainder file could not be written (the file re-injected still holds everything); null otherwise. */
  remainderError: string | null;
  auditId: string | null;
  /**
   * Messages this run published that may now be in the target twice: all it published when it took
   * over the stale lock of an earlier re-inject of the same file that was killed or crashed mid-run
   * (that run may have published any of them, and logged nothing: which ones cannot be told); 0
   * otherwise. Named in `notes`; the CLI exits 7 when it is not 0.
   */
  possibleDuplicates: number;
  /** What the re-inject could not restore (see {@link olderSnapshotCheck}), dropped (headers the target cannot carry, see {@link publishLossCheck}) or left out (see {@link reinjectSelection}); empty when nothing. */
  notes: string[];
}

function moverOf(env: RedriveEnv): RedriveMover {
  const m = env.adapter.redrive;
  if (m === undefined) throw new QueuescopeError('UNSUPPORTED', 'This connection cannot move messages (a snapshot file is read-only); connect to the broker to redrive.');
  return m;
}

/** Lowest rate limit accepted, messages per second (one message every 100 s). */
export const MIN_RATE_PER_SECOND = 0.01;
/** Highest rate limit accepted, messages per second (above any broker's rate here: use no limit). */
export const MAX_RATE_PER_SECOND = 1_000_000;

/**
 * Checks a rate limit in messages per second (null = none).
 * @throws QueuescopeError `INVALID_INPUT` naming the accepted range.
 */
export function checkRate(rate: number | null, name = 'Rate'): void {
  if (rate !== null && (!Number.isFinite(rate) || rate < MIN_RATE_PER_SECOND || rate > MAX_RATE_PER_SECOND)) {
    throw new QueuescopeError('INVALID_INPUT', `${name} must be from ${String(MIN_RATE_PER_SECOND)} to ${MAX_RATE_PER_SECOND.toLocaleString('en')} messages per second (or no limit), got ${String(rate)}.`);
  }
}

/**
 * Validates a request.
 * @throws QueuescopeError `INVALID_INPUT` naming the bad option.
 */
export function validateRequest(r: RedriveRequest): void {
  const batch = r.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!Number.isInteger(batch) || batch < 1 || batch > 1000) throw new QueuescopeError('INVALID_INPUT', `Batch size must be a whole number from 1 to 1000, got ${String(batch)}.`);
  const rate = r.ratePerSecond ?? null;
  checkRate(rate);
  const limit = r.limit ?? null;
  if (limit !== null && (!Number.isInteger(limit) || limit < 1)) throw new QueuescopeError('INVALID_INPUT', `Limit must be a whole number ≥ 1, got ${String(limit)}.`);
  if (r.selection.kind === 'ids' && r.selection.ids.length === 0) throw new QueuescopeError('INVALID_INPUT', 'No message ids were picked.');
  checkPendingMinIdle(r.pendingMinIdleMs);
  const body = r.maxBodyBytes;
  if (body !== undefined && (!Number.isSafeInteger(body) || body < 1 || body > MAX_REDRIVE_MAX_BODY_BYTES)) {
    throw new QueuescopeError('INVALID_INPUT', `The body read limit (maxBodyBytes) must be a whole number of bytes from 1 to ${MAX_REDRIVE_MAX_BODY_BYTES} (128 MiB), got ${String(body)}.`);
  }
}

/** The request's pending idle threshold as mover options (absent = the mover's default, which is the decider's). */
function pendingOf(r: RedriveRequest): { pendingMinIdleMs?: number } {
  return r.pendingMinIdleMs !== undefined ? { pendingMinIdleMs: r.pendingMinIdleMs } : {};
}

/** The filter in words (audit log, labels). */
export function describeSelection(r: Pick<RedriveRequest, 'selection' | 'includeNonRetryable' | 'dedupeByKey' | 'includePending' | 'pendingMinIdleMs'>): string {
  const parts: string[] = [];
  if (r.selection.kind === 'all') parts.push('all');
  else if (r.selection.kind === 'filter') parts.push(formatFilter(r.selection.filter));
  else parts.push(`ids:${r.selection.ids.length <= 20 ? r.selection.ids.join(',') : `${r.selection.ids.slice(0, 20).join(',')},… (${r.selection.ids.length} ids)`}`);
  if (r.includeNonRetryable !== true) parts.push('excluding non-retryable');
  if (r.dedupeByKey === true) parts.push('one per idempotency key');
  if (r.includePending === true) parts.push('including pending entries');
  else if (r.pendingMinIdleMs !== undefined && r.pendingMinIdleMs !== DEFAULT_PENDING_MIN_IDLE_MS) parts.push(`pending entries held when delivered < ${formatIdleThreshold(r.pendingMinIdleMs)} ago`);
  return parts.join('; ');
}

async function loadQueues(env: RedriveEnv, signal?: AbortSignal): Promise<Map<string, QueueSummary> | null> {
  try {
    const list = await env.adapter.listQueues({}, signal);
    return new Map(list.map((q) => [q.id, q]));
  } catch (e) {
    if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
    return null; // names and the loop check then rely on getQueue for a chosen target only
  }
}

/** The DLQ depth relevant to the request (the state's count for brokers with states). */
function dlqDepth(dlq: QueueSummary, state: string | undefined): number | null {
  if (state !== undefined) return dlq.counts[state] ?? null;
  if (dlq.capabilities.peekStates.includes('failed') && dlq.counts.failed !== undefined) return dlq.counts.failed;
  return dlq.depth;
}

interface Prepared {
  mover: RedriveMover;
  dlq: QueueSummary;
  queues: Map<string, QueueSummary> | null;
  /** Decides the run's messages and counts them: replaced by a fresh one ({@link newDecider}) when a pass is read again. */
  decider: Decider;
  /** A decider with no counts, for a second pass over the DLQ (the client-side run after the native path's backup pass). */
  newDecider: () => Decider;
  /** The user's limit (passed to the mover). */
  maxMessages: number | null;
  /** Messages expected (the limit, or the DLQ depth as last reported): for progress and ETA only. */
  expected: number | null;
  batchSize: number;
  cutoffMs: number;
  /** Body bytes read per message (the request's, or the default). */
  maxBodyBytes: number;
}

/**
 * Refuses to read a DLQ whose reads can make the broker move messages on to another queue (the
 * mover says so: {@link RedriveMover.readMovesMessagesOn}), before anything is read — a dry run
 * must not move messages silently.
 * @throws QueuescopeError `PEEK_REFUSED` naming the DLQ, the limit, the next queue and how to accept.
 */
async function refuseReadSideEffects(mover: RedriveMover, dlq: QueueSummary, signal?: AbortSignal): Promise<void> {
  const on = (await mover.readMovesMessagesOn?.(dlq, signal)) ?? null;
  if (on === null) return;
  throw new QueuescopeError(
    'PEEK_REFUSED',
    `Refusing to read ${dlq.name} for a redrive or its dry run: ${on.description} Nothing was read. To read it anyway, accept the side effects (--accept-side-effects in the CLI; "Accept side effects" in the app's redrive panel); messages moved on are then in ${on.nextQueue ?? 'the next queue'}, not lost.`,
    { queue: dlq.name, queueId: dlq.id, maxReceiveCount: on.maxReceiveCount, nextQueue: on.nextQueue, sideEffects: ['may-dead-letter'] },
  );
}

async function prepare(env: RedriveEnv, r: RedriveRequest, signal?: AbortSignal): Promise<Prepared> {
  validateRequest(r);
  const mover = moverOf(env);
  const now = (env.now ?? Date.now)();
  const dlq = await env.adapter.getQueue(r.dlqId, signal);
  if (r.acceptSideEffects !== true) await refuseReadSideEffects(mover, dlq, signal);
  let queues = await loadQueues(env, signal);
  const target = r.targetQueueId ?? null;
  if (target !== null && (queues === null || !queues.has(target))) {
    // A chosen target must exist — or be one the first write creates (a Redis list or stream that
    // is empty, hence absent): refuse before reading anything.
    try {
      const q = await env.adapter.getQueue(target, signal);
      queues = new Map(queues ?? []);
      queues.set(q.id, q);
    } catch (e) {
      if (!(e instanceof QueuescopeError && e.code === 'QUEUE_NOT_FOUND' && mover.absentTarget?.(dlq, target)?.queueId === target)) throw e;
    }
  }
  if (target !== null) {
    const info = describeTarget(target, 'chosen by the user', dlq, queues);
    if (info.loop !== null && r.confirmLoop !== true) {
      throw new QueuescopeError('INVALID_INPUT', `Refusing to redrive: ${info.loop}. Confirm to move there anyway (--confirm-loop in the CLI).`, { loop: true, target });
    }
  }
  const depth = dlqDepth(dlq, r.state);
  const limit = r.limit ?? null;
  // Only the user's limit: each mover bounds a run by its own exact count at the start (RabbitMQ
  // checkQueue, SQS ApproximateNumberOfMessages, Redis lengths / finishedOn), whereas `depth` may
  // be stale (the RabbitMQ management API lags AMQP by seconds) and would stop a run early — or
  // let a native move run past a backup that did not cover the whole DLQ.
  const maxMessages = limit;
  const expected = limit !== null && depth !== null ? Math.min(limit, depth) : (limit ?? depth);
  const rate = r.ratePerSecond ?? null;
  const batchSize = Math.max(1, Math.min(r.batchSize ?? DEFAULT_BATCH_SIZE, rate === null ? 1000 : Math.ceil(rate)));
  const newDecider = (): Decider =>
    new Decider({
      dlq,
      selection: r.selection,
      includeNonRetryable: r.includeNonRetryable === true,
      dedupeByKey: r.dedupeByKey === true,
      includePending: r.includePending === true,
      ...(r.pendingMinIdleMs !== undefined ? { pendingMinIdleMs: r.pendingMinIdleMs } : {}),
      keyRules: r.keyRules ?? [],
      targetQueueId: target,
      confirmLoop: r.confirmLoop === true,
      queues,
      mover,
      now,
      ...(r.samples !== undefined ? { samples: r.samples } : {}),
    });
  return { mover, dlq, queues, decider: newDecider(), newDecider, maxMessages, expected, batchSize, cutoffMs: now, maxBodyBytes: r.maxBodyBytes ?? DEFAULT_REDRIVE_MAX_BODY_BYTES };
}

/** The name of the target the user chose (its id when the queue is not known, e.g. created by the move), or null for "original source". */
function chosenTargetName(r: RedriveRequest, p: Prepared): string | null {
  return r.targetQueueId != null ? (p.queues?.get(r.targetQueueId)?.name ?? r.targetQueueId) : null;
}

/** Whether the request's options allow the native path at all (before asking the broker). */
function nativeByOptions(r: RedriveRequest): { ok: boolean; why: string } {
  if ((r.native ?? 'auto') === 'never') return { ok: false, why: 'native moves were turned off' };
  if (r.selection.kind === 'ids') return { ok: false, why: 'picked messages are moved client-side' };
  if (r.selection.kind === 'filter' && formatFilter(r.selection.filter) !== 'all') return { ok: false, why: 'filtered selections are moved client-side' };
  if (r.dedupeByKey === true) return { ok: false, why: 'one-per-key redrives are moved client-side' };
  if ((r.limit ?? null) !== null) return { ok: false, why: 'a limited redrive is moved client-side' };
  return { ok: true, why: '' };
}

async function nativeSupport(mover: RedriveMover, dlq: QueueSummary, r: RedriveRequest, signal?: AbortSignal): Promise<{ support: NativeMoveSupport | null; ok: boolean; why: string }> {
  const byOpts = nativeByOptions(r);
  let support: NativeMoveSupport;
  try {
    support = await mover.nativeMove(dlq, r.targetQueueId ?? null, signal);
  } catch (e) {
    if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
    return { support: null, ok: false, why: `the broker's native move could not be checked: ${toErrorInfo(e).message}` };
  }
  if (!byOpts.ok) return { support, ok: false, why: byOpts.why };
  if (!support.available) return { support, ok: false, why: support.note ?? `${support.mechanism} is not available for this queue` };
  if ((r.ratePerSecond ?? null) !== null && !support.supportsRate) return { support, ok: false, why: `${support.mechanism} cannot be rate-limited` };
  return { support, ok: true, why: `${support.mechanism}${support.note !== null ? ` (${support.note})` : ''}` };
}

/**
 * Dry run: reads the DLQ as a run would (the mover puts back whatever it had to take), decides
 * every message, and returns counts per target and per skip reason, failure groups and samples.
 * Nothing is published or removed; nothing is written to the audit log. `onProgress` is called
 * after each batch read (messages examined, and those expected when the depth is known).
 * Then each target whose reads change nothing (Redis lists, streams, BullMQ) is read, up to
 * 10,000 messages, for idempotency keys of the messages to move that are already waiting there
 * (`target-keys.ts`): `keysInTarget`, a warning per target with such keys, a note per target not
 * checked (RabbitMQ and SQS reads requeue or count deliveries) or checked only in part.
 * @throws QueuescopeError `INVALID_INPUT` (bad options, a chosen target that loops without
 *   confirmation), `PEEK_REFUSED` (reading the DLQ can move messages on and
 *   `acceptSideEffects` is not set; nothing read), `QUEUE_NOT_FOUND`, `UNSUPPORTED` (no mover), connection codes, `CANCELLED`.
 */
export async function planRedrive(env: RedriveEnv, r: RedriveRequest, signal?: AbortSignal, onProgress?: (p: { examined: number; expected: number | null }) => void): Promise<RedrivePlan> {
  const p = await prepare(env, r, signal);
  let failed = 0;
  let examined = 0;
  const cannotMove: { id: string; reason: string }[] = [];
  // Targets decided for the batch in hand, so a message the mover refuses is taken off its target's count.
  let batchTargets = new Map<string, string>();
  const refusedPerTarget = new Map<string, number>();
  // Keys of the messages to move, for targets the check can read (known to have side-effect-free
  // reads, or not known: checked after the read).
  const keys = new TargetKeyCollector(r.keyRules ?? [], (id) => {
    const q = p.queues?.get(id);
    return q === undefined || targetReadSideEffects(q) === null;
  });
  onProgress?.({ examined: 0, expected: p.expected });
  const summary = await p.mover.moveClientSide(
    { sourceQueueId: p.dlq.id, ...(r.state !== undefined ? { state: r.state } : {}), batchSize: p.batchSize, cutoffMs: p.cutoffMs, maxMessages: p.maxMessages, maxBodyBytes: p.maxBodyBytes, ...pendingOf(r), dryRun: true },
    {
      gate: () => {
        if (signal?.aborted === true) return Promise.reject(new QueuescopeError('CANCELLED', 'The dry run was cancelled.'));
        return Promise.resolve();
      },
      decide: (m) => {
        const d = p.decider.decide(m);
        if (d.action === 'move') {
          batchTargets.set(m.id, d.targetQueueId);
          keys.see(m, d.targetQueueId);
        }
        return d;
      },
      beforeMove: () => Promise.resolve(),
      onBatch: (b) => {
        failed += b.failed.length;
        examined += b.examined;
        for (const f of b.failed) {
          if (cannotMove.length < MAX_CANNOT_MOVE_LISTED) cannotMove.push({ id: f.id, reason: f.error.message });
          const t = batchTargets.get(f.id);
          if (t !== undefined) refusedPerTarget.set(t, (refusedPerTarget.get(t) ?? 0) + 1);
        }
        keys.endBatch(new Set(b.failed.map((f) => f.id)));
        batchTargets = new Map();
        onProgress?.({ examined, expected: p.expected === null ? null : Math.max(p.expected, examined) });
      },
    },
    signal,
  );
  const native = await nativeSupport(p.mover, p.dlq, r, signal);
  const d = p.decider;
  const wouldUse = native.ok && d.toSkip === 0 && failed === 0;
  const loops = d.allTargets().filter((t) => t.loop !== null);
  // The decider counted refused messages as moves: the plan counts them once, as cannot move,
  // so examined = toMove + toSkip + failed.
  const targets = d
    .targetsList()
    .map((t) => ({ ...t, count: t.count - (refusedPerTarget.get(t.queueId) ?? 0) }))
    .filter((t) => t.count > 0);
  const inTarget = await checkTargetKeys(env.adapter, targets, keys, {
    dlq: p.dlq,
    ...(r.state !== undefined ? { state: r.state } : {}),
    rules: r.keyRules ?? [],
    maxBodyBytes: p.maxBodyBytes,
    ...(signal !== undefined ? { signal } : {}),
  });
  return {
    dlq: { id: p.dlq.id, name: p.dlq.name, depth: dlqDepth(p.dlq, r.state) },
    examined: d.examined.count,
    toMove: Math.max(0, d.toMove - failed),
    toSkip: d.toSkip,
    skipped: d.skipReasons(),
    failed,
    cannotMove,
    maxBodyBytes: p.maxBodyBytes,
    notFoundIds: d.notFoundIds().slice(0, MAX_CANNOT_MOVE_LISTED),
    notFoundCount: d.notFoundIds().length,
    targets,
    loops,
    warnings: [...new Set([...heldWarnings(p.dlq), ...(summary.warnings ?? []), ...d.allTargets().flatMap((t) => t.warnings), ...inTarget.warnings])],
    groups: d.groupList(),
    wastedRetries: d.wastedRetries,
    samples: [...d.moveSamples, ...d.skipSamples],
    native: { support: native.support, wouldUse, why: wouldUse ? native.why : native.ok ? 'some messages stay in the DLQ, so the move is client-side' : native.why },
    filter: describeSelection(r),
    stoppedBecause: summary.stoppedBecause,
    notes: [...(summary.notes ?? []), ...sideEffects(p.mover, p.dlq), ...inTarget.notes],
    ...(summary.movedOn !== undefined ? { movedOn: summary.movedOn } : {}),
    ...(summary.unseen !== undefined ? { unseen: summary.unseen } : {}),
    keysInTarget: inTarget.checks,
  };
}

/** `details.movedOn` of a mover's error, when it is a {@link MovedOnByReading}. */
function movedOnOf(v: unknown): MovedOnByReading | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const m = v as Partial<MovedOnByReading>;
  const ok = (typeof m.count === 'number' || m.count === null) && typeof m.measuredBy === 'string' && (typeof m.queue === 'string' || m.queue === null);
  return ok ? { queue: m.queue ?? null, maxReceiveCount: typeof m.maxReceiveCount === 'number' ? m.maxReceiveCount : null, count: m.count ?? null, measuredBy: m.measuredBy ?? '' } : undefined;
}

/**
 * What the reads of several passes over one DLQ (the native path's backup pass, then the
 * client-side run) moved on, as one: counts added (unknown if any is unknown), the measurements
 * joined. Undefined when no pass reported any.
 */
export function sumMovedOn(parts: readonly (MovedOnByReading | undefined)[]): MovedOnByReading | undefined {
  const all = parts.filter((m): m is MovedOnByReading => m !== undefined);
  const first = all[0];
  if (first === undefined) return undefined;
  if (all.length === 1) return first;
  const count = all.every((m) => m.count !== null) ? all.reduce((n, m) => n + (m.count ?? 0), 0) : null;
  return { queue: first.queue, maxReceiveCount: first.maxReceiveCount, count, measuredBy: all.map((m, i) => `pass ${i + 1}: ${m.count === null ? 'unknown' : String(m.count)}, ${m.measuredBy}`).join('; ') };
}

/**
 * Earlier uses of a backup file recorded in the audit log, in words, newest first: the redrive that
 * wrote it (when it moved messages, they are already in its target, so publishing the backup again
 * makes duplicates; when it has no end recorded — killed or crashed — how many moved is unknown, so
 * it is named too) and earlier re-injects of it. The redrive and re-injects are found by the run id
 * in the backup's header ({@link backupOriginOf}: also for a copy or a renamed backup, and a
 * re-inject of any copy of it), and re-injects also by the file's path (paths compared resolved,
 * in the newest 1,000 entries); a backup without a run id (older, or a remainder file) by its path
 * only. Empty when the log cannot be read (a warning is a courtesy, not a gate).
 * @throws QueuescopeError `CANCELLED`; like {@link readFirstHeader} when the file cannot be read.
 */
export async function priorUsesOfBackup(env: Pick<RedriveEnv, 'auditLog'>, path: string, signal?: AbortSignal): Promise<string[]> {
  const origin = await backupOriginOf(path, signal);
  const runId = origin.runId;
  let entries: AuditEntry[];
  try {
    const page = await env.auditLog.read({ limit: 1000 }, signal);
    const want = resolvePath(path);
    // Without a run id, the redrive's entries too are found by path (an older backup).
    const byPath = page.entries.filter((e) => e.backupPath !== null && resolvePath(e.backupPath) === want && (runId === null || e.action !== 'redrive'));
    const byRun = runId === null ? [] : entriesOfRun(await findAuditEntriesContaining(env.auditLog, runId, signal), runId);
    entries = [...new Map([...byRun, ...byPath].map((e) => [e.id, e])).values()].sort((a, b) => b.time - a.time);
  } catch (e) {
    if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
    return [];
  }
  const out: string[] = [];
  for (const e of entries) {
    const when = new Date(e.time).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const moved = e.counts.moved ?? 0;
    const published = e.counts.published ?? 0;
    if (e.action === 'redrive' && moved > 0) out.push(`the redrive that wrote this backup (${when}, ${e.status ?? 'no end recorded'}) moved ${moved} of its messages to ${e.target ?? 'their target'}: they are there already, so publishing them again makes duplicates unless the consumer deduplicates on an idempotency key`);
    // The log keeps a run's "started" entry only while no end follows it: the process was killed
    // (SIGKILL, a crash, a second Ctrl+C) or is still running. Its moves are not counted anywhere.
    else if (e.action === 'redrive' && e.status === 'started')
      out.push(
        `the redrive that wrote this backup (${when}) has no end recorded (killed, crashed, or still running): any of its messages may have moved to ${e.target ?? 'their target'} already — the backup holds every message it read, moved or not — so publishing them again can make duplicates unless the consumer deduplicates on an idempotency key; compare the backup with ${e.target ?? 'the target'} and the DLQ first`,
      );
    else if (e.action === 'reinject' && published > 0) {
      const rest = remainderOf(e.details);
      const copy = e.backupPath !== null && resolvePath(e.backupPath) !== resolvePath(path) ? ` from ${e.backupPath}, a copy of it` : '';
      const what = origin.redriveBackup ? 'this backup' : origin.remainder ? 'this remainder file' : 'this file';
      out.push(`${what} was already re-injected (${when}${copy}: ${published} published to ${e.target ?? '?'}${rest !== null ? `; the ${String(rest.messages)} it did not publish are in ${rest.path}: re-inject that file to publish only them` : ''})`);
    }
  }
  return out;
}

/**
 * What a snapshot's first header says about where it came from, for the audit-log look-ups of a
 * re-inject ({@link priorUsesOfBackup}, {@link backupRedriveRecord}).
 */
export interface BackupOrigin {
  /** The header is a redrive backup's (`isRedriveBackupHeader`) and the file is not a re-inject's remainder. */
  redriveBackup: boolean;
  /** The file is a re-inject's remainder (header `remainderOf`). */
  remainder: boolean;
  /** The id of the redrive run that wrote it (header `redriveRun.id`); null in older backups, remainders and exports. */
  runId: string | null;
  /** When the export or redrive started (header `exportedAt`), ms since epoch. */
  startedAt: number;
  /** The queue and connection label the header names (untrusted text from the file). */
  queueName: string;
  connection: string;
}

/**
 * Reads the first section header of the snapshot at `path` (see {@link BackupOrigin}).
 * @throws like {@link readFirstHeader}: `SNAPSHOT_INVALID`, `INVALID_INPUT` (missing), `CANCELLED`.
 */
export async function backupOriginOf(path: string, signal?: AbortSignal): Promise<BackupOrigin> {
  const { header } = await readFirstHeader(path, signal);
  const remainder = header.remainderOf !== undefined;
  const redriveBackup = isRedriveBackupHeader(header) && !remainder;
  return { redriveBackup, remainder, runId: redriveBackup ? (header.redriveRun?.id ?? null) : null, startedAt: header.exportedAt, queueName: header.source.queue.name, connection: header.source.connection };
}

/**
 * The entries of redrive run `runId` (its `operationId`, or `details.redriveRunId` — kept also when
 * its details were dropped for size, when it ran as an operation) and of re-injects of a copy of its
 * backup (`details.redriveRunId`), among `entries`; a `started` entry is dropped when an entry of
 * the same run ended it (as {@link AuditLog.read} does).
 */
function entriesOfRun(entries: readonly AuditEntry[], runId: string): AuditEntry[] {
  const mine = entries.filter((e) => (e.action === 'redrive' && e.operationId === runId) || e.details.redriveRunId === runId);
  const ended = mine.some((e) => e.action === 'redrive' && e.status !== 'started');
  return mine.filter((e) => !(e.action === 'redrive' && e.status === 'started' && ended));
}

/** The remainder file a re-inject's audit entry records (`details.remainder`), or null. */
export function remainderOf(details: Record<string, unknown>): { path: string; messages: number } | null {
  const r = details.remainder as { path?: unknown; messages?: unknown } | null | undefined;
  return r != null && typeof r.path === 'string' && typeof r.messages === 'number' ? { path: r.path, messages: r.messages } : null;
}

/**
 * DLQ messages a redrive cannot see: those a consumer holds (`capabilities.heldByConsumers`:
 * RabbitMQ unacknowledged, SQS in flight). A run reads only ready / visible messages, so they are
 * neither examined nor moved; they return to the DLQ when released. (Redis stream pending entries
 * are read: the stream mover's summary `warnings` speak of them; BullMQ failed jobs are not held.)
 */
function heldWarnings(dlq: QueueSummary): string[] {
  const held = dlq.capabilities.heldByConsumers;
  if (held === undefined) return [];
  const n = dlq.inFlight;
  if (n !== null && n > 0) {
    const how = held === 'in-flight' ? 'in flight (received by a consumer and invisible)' : 'held unacknowledged by a consumer';
    return [`${n} message${n === 1 ? ' of' : 's of'} ${dlq.name} ${n === 1 ? 'is' : 'are'} ${how}: the redrive neither examines nor moves ${n === 1 ? 'it' : 'them'}; ${n === 1 ? 'it returns' : 'they return'} to the DLQ when released — run it again then`];
  }
  if (n === null && held === 'unacknowledged' && dlq.consumers !== null && dlq.consumers > 0) {
    return [`${dlq.consumers} consumer${dlq.consumers === 1 ? ' reads' : 's read'} ${dlq.name}: messages ${dlq.consumers === 1 ? 'it holds' : 'they hold'} unacknowledged (not counted here) are neither examined nor moved`];
  }
  return [];
}

/** What reading and moving change on the broker, in words (the mover's `clientMoveSideEffects`). */
function sideEffects(mover: RedriveMover, dlq: QueueSummary): string[] {
  try {
    const dry = mover.clientMoveSideEffects?.(dlq, true) ?? [];
    const run = mover.clientMoveSideEffects?.(dlq, false) ?? [];
    return [...dry.map((s) => `this dry run: ${s}`), ...run.filter((s) => !dry.includes(s)).map((s) => `a redrive: ${s}`)];
  } catch {
    return [];
  }
}

/**
 * The rate limit of a move (npm `limiter` token bucket, `rate` tokens per second, holding at most
 * one batch — `ceil(rate)` — and starting empty): a message takes a token before it is read
 * ({@link take}, from the `gate` hook) or, for a re-inject, before it is published, so however the
 * mover pipelines its reads (RabbitMQ reads batches ahead), no more than `rate` messages per second
 * leave, with bursts of at most one batch. Messages read that do not move (skipped, failed) give
 * their token back ({@link refund}) so a filtered run is throttled on what it moves, not on what it
 * examines.
 */
class MoveRateLimiter {
  private readonly bucket: TokenBucket | null;

  constructor(rate: number | null, batchSize: number) {
    this.bucket = rate === null ? null : new TokenBucket({ bucketSize: Math.max(batchSize, Math.ceil(rate)), tokensPerInterval: rate, interval: 'second' });
  }

  /** Waits until `n` messages fit the rate and takes their tokens; rejects with CANCELLED on abort. */
  async take(n: number, signal: AbortSignal): Promise<void> {
    const bucket = this.bucket;
    if (bucket === null) return;
    for (let left = n; left > 0; ) {
      const k = Math.min(left, bucket.bucketSize);
      const wait = bucket.getWaitTime(k);
      if (wait > 0) await abortableSleep(wait, signal);
      await bucket.removeTokens(k);
      left -= k;
    }
  }

  /** Gives back the tokens of `n` messages that were read but not moved (never above the bucket's size). */
  refund(n: number): void {
    const bucket = this.bucket;
    if (bucket === null || n <= 0) return;
    bucket.content = Math.min(bucket.bucketSize, bucket.content + n);
  }
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new QueuescopeError('CANCELLED', 'The operation was cancelled.'));
      return;
    }
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(new QueuescopeError('CANCELLED', 'The operation was cancelled.'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Totals of a client-side run, kept live. */
interface Totals {
  examined: number;
  moved: number;
  skipped: number;
  failed: number;
  possibleDuplicates: number;
  perTarget: Map<string, number>;
}

/**
 * Runs a redrive as an operation (pass it to `OperationManager.start`): the native path when the
 * whole DLQ goes back to its source and the broker can, otherwise a client-side move through the
 * mover with a backup written and fsynced before each batch is published, a rate limit, pause /
 * resume / cancel between batches, throttled progress, and an audit-log entry at the end
 * (whatever the outcome).
 * @throws QueuescopeError like {@link planRedrive}; `CANCELLED` when cancelled (the operation
 *   then ends `cancelled`; counts and the backup are kept in the audit log).
 */
export async function runRedrive(env: RedriveEnv, r: RedriveRequest, ctx: OperationContext, operationId: string | null = null): Promise<RedriveResult> {
  const p = await prepare(env, r, ctx.signal);
  ctx.setTotal(p.expected);
  const totals: Totals = { examined: 0, moved: 0, skipped: 0, failed: 0, possibleDuplicates: 0, perTarget: new Map() };
  const notes: string[] = [];
  const warnings: string[] = [];
  const backupPath = r.backupPath ?? defaultBackupPath(env.configDir, p.dlq.name, p.cutoffMs);
  // The backup's identity (header `redriveRun`), also in this run's audit entries: a re-inject finds
  // the run's record by it whatever the file is called. The operation id when there is one.
  const runId = operationId ?? randomUUID();
  const header = {
    exportedAt: p.cutoffMs,
    source: { broker: p.dlq.broker, connection: env.connectionLabel, queue: p.dlq },
    ...(r.state !== undefined ? { state: r.state } : {}),
    selection: 'ids' as const,
    partial: true,
    partialReason: REDRIVE_BACKUP_PARTIAL_REASON,
    redriveRun: { id: runId },
  };
  let backup: RedriveBackup | null = null;
  let mode: RedriveResult['mode'] = 'client-side';
  let mechanism: string | null = null;
  let stoppedBecause: RedriveResult['stoppedBecause'] = null;
  let status = 'completed';
  let error: unknown = null;
  const movedOn: (MovedOnByReading | undefined)[] = [];
  // Which backed-up messages the client-side run did not move (the native path's backup is of the whole DLQ: not tracked).
  let tracker: NotMovedTracker | null = null;
  try {
    backup = await RedriveBackup.create(backupPath, header);
    // A "started" entry first: a process killed mid-run (a second Ctrl+C, SIGKILL, a crash) writes
    // no final entry, and the operator still needs to find this run and its backup in the history.
    await env.auditLog
      .append({ actor: env.actor, action: 'redrive', connection: env.connectionLabel, source: p.dlq.name, target: chosenTargetName(r, p) ?? 'original source', filter: describeSelection(r), status: 'started', counts: {}, operationId, backupPath, details: { dlqId: p.dlq.id, redriveRunId: runId, rate: r.ratePerSecond ?? null, batchSize: p.batchSize } })
      .catch((e: unknown) => ctx.addError(e));
    const native = await nativeSupport(p.mover, p.dlq, r, ctx.signal);
    if (!native.ok && r.native === 'require') throw new QueuescopeError('UNSUPPORTED', `A native move is not possible here: ${native.why}.`);
    if (native.ok && native.support !== null) {
      const support = native.support;
      const outcome = await nativePath(env, r, p, backup, support, ctx, totals, notes, () => {
        // From here on the result describes the native move, also when it fails or is cancelled.
        mode = 'native';
        mechanism = support.mechanism;
      }, movedOn);
      if (outcome !== null) {
        mode = 'native';
        mechanism = native.support.mechanism;
        stoppedBecause = 'native';
      } else {
        if (r.native === 'require') throw new QueuescopeError('UNSUPPORTED', 'A native move is not possible: some messages would stay in the DLQ (non-retryable, or no target).');
        notes.push(`native move not used: ${native.support.mechanism} moves everything, but some messages stay in the DLQ`);
        // The pre-pass backup held every message; start a fresh one for the client-side run, and
        // fresh counts (the pre-pass decided every message once already).
        await backup.discard();
        backup = await RedriveBackup.create(backupPath, header);
        p.decider = p.newDecider();
      }
    }
    if (mode === 'client-side') {
      tracker = new NotMovedTracker();
      const s = await clientSide(r, p, backup, ctx, totals, tracker);
      movedOn.push(s.movedOn);
      stoppedBecause = s.stoppedBecause;
      notes.push(...(s.notes ?? []));
      warnings.push(...(s.warnings ?? []));
    }
  } catch (e) {
    error = e;
    status = toErrorInfo(e).code === 'CANCELLED' || ctx.signal.aborted ? 'cancelled' : 'failed';
    // A pass that failed or was cancelled after its reads moved messages on says so in its error (`details.movedOn`).
    const pending = e instanceof QueuescopeError ? movedOnOf(e.details?.movedOn) : undefined;
    if (pending !== undefined) movedOn.push(pending);
  }
  const keptBackup = backup === null ? null : await backup.close({ removeIfEmpty: true });
  const notMoved = keptBackup !== null && tracker !== null ? tracker.finish() : null;
  const result: RedriveResult = {
    mode,
    mechanism,
    dlqId: p.dlq.id,
    dlqName: p.dlq.name,
    examined: totals.examined,
    moved: totals.moved,
    skipped: totals.skipped,
    failed: totals.failed,
    possibleDuplicates: totals.possibleDuplicates,
    targets: [...totals.perTarget.entries()].map(([queueId, count]) => ({ queueId, queueName: p.queues?.get(queueId)?.name ?? queueId, count })),
    skipReasons: p.decider.skipReasons(),
    wastedRetries: p.decider.wastedRetries,
    stoppedBecause,
    backupPath: keptBackup,
    auditId: null,
    filter: describeSelection(r),
    notes,
    warnings,
    notFoundIds: p.decider.notFoundIds().slice(0, MAX_CANNOT_MOVE_LISTED),
    notFoundCount: p.decider.notFoundIds().length,
  };
  const movedOnTotal = sumMovedOn(movedOn);
  if (movedOnTotal !== undefined) result.movedOn = movedOnTotal;
  try {
    const entry = await env.auditLog.append({
      actor: env.actor,
      action: 'redrive',
      connection: env.connectionLabel,
      source: p.dlq.name,
      target: chosenTargetName(r, p) ?? (result.targets.length > 0 ? result.targets.map((t) => t.queueName).join(', ') : 'original source'),
      filter: result.filter,
      status,
      counts: { examined: result.examined, moved: result.moved, skipped: result.skipped, failed: result.failed, possibleDuplicates: result.possibleDuplicates, ...(movedOnTotal?.count != null ? { movedOnByReading: movedOnTotal.count } : {}) },
      operationId,
      backupPath: keptBackup,
      details: {
        mode,
        mechanism,
        dlqId: p.dlq.id,
        redriveRunId: runId,
        targets: result.targets,
        skipReasons: result.skipReasons.slice(0, 20),
        rate: r.ratePerSecond ?? null,
        batchSize: p.batchSize,
        stoppedBecause,
        ...(error !== null ? { error: toErrorInfo(error) } : {}),
        notes,
        ...(warnings.length > 0 ? { warnings } : {}),
        ...(movedOnTotal !== undefined ? { movedOn: movedOnTotal } : {}),
        // What `reinject` leaves out of this backup unless told to include it (see shared/redrive/not-moved.ts).
        ...(notMoved !== null ? { notMoved } : {}),
      },
    });
    result.auditId = entry.id;
  } catch (e) {
    ctx.addError(e);
  }
  if (status === 'cancelled') {
    // The operation ends `cancelled` with no result: the counts and the backup path travel in this
    // entry of its errors (`details.result`), for the CLI and the app to show.
    ctx.addError(new QueuescopeError('CANCELLED', `Cancelled after ${result.moved} moved, ${result.failed} failed, ${result.possibleDuplicates} possible duplicates.`, { result }));
  }
  if (error !== null) {
    if (error instanceof QueuescopeError) {
      throw new QueuescopeError(error.code, error.message, { ...error.details, result }, { cause: error });
    }
    throw asError(error);
  }
  return result;
}

async function clientSide(r: RedriveRequest, p: Prepared, backup: RedriveBackup, ctx: OperationContext, totals: Totals, tracker: NotMovedTracker): Promise<MoveSummary> {
  const limiter = new MoveRateLimiter(r.ratePerSecond ?? null, p.batchSize);
  const report = (): void => {
    ctx.report({ processed: totals.examined, moved: totals.moved, skipped: totals.skipped, failed: totals.failed, possibleDuplicates: totals.possibleDuplicates });
  };
  return p.mover.moveClientSide(
    { sourceQueueId: p.dlq.id, ...(r.state !== undefined ? { state: r.state } : {}), batchSize: p.batchSize, cutoffMs: p.cutoffMs, maxMessages: p.maxMessages, maxBodyBytes: p.maxBodyBytes, ...pendingOf(r), dryRun: false, rateLimited: r.ratePerSecond != null },
    {
      gate: async (n) => {
        await ctx.checkpoint();
        await limiter.take(n, ctx.signal);
        await ctx.checkpoint();
      },
      decide: (m) => p.decider.decide(m),
      beforeMove: async (messages) => {
        const first = backup.messages;
        await backup.append(messages);
        tracker.written(messages, first);
      },
      onBatch: (b: MoveBatchResult) => {
        tracker.settle(b);
        totals.examined += b.examined;
        totals.moved += b.moved.length;
        totals.skipped += b.skipped.length;
        totals.failed += b.failed.length;
        totals.possibleDuplicates += b.possibleDuplicates.length;
        for (const m of b.moved) totals.perTarget.set(m.targetQueueId, (totals.perTarget.get(m.targetQueueId) ?? 0) + 1);
        for (const f of b.failed) {
          // A mover's reason that already names the message ("Message X was not moved: …") is not prefixed twice.
          const own = `Message ${f.id} was not moved: `;
          const reason = f.error.message.startsWith(own) ? f.error.message.slice(own.length) : f.error.message;
          ctx.addError(new QueuescopeError(f.error.code, `Message ${f.id} ${f.error.details?.leftDlq === true ? 'was not moved' : 'stayed in the DLQ'}: ${reason}`, { id: f.id }));
        }
        for (const d of b.possibleDuplicates) {
          ctx.addError(new QueuescopeError('BROKER_ERROR', `Message ${d.id} was published to ${d.targetQueueId} but its removal from the DLQ was not confirmed: it may now be in both.`, { id: d.id }));
        }
        limiter.refund(b.skipped.length + b.failed.length);
        if (p.expected === null || totals.examined > p.expected) {
          // The depth was unknown or stale: keep the total honest.
          p.expected = totals.examined;
          ctx.setTotal(totals.examined);
        }
        report();
      },
    },
    ctx.signal,
  );
}

/**
 * The native path: a read-only pre-pass writes the backup and decides every message; when all
 * would go back to their source, the broker's native move runs (polled; paused by cancelling it
 * and starting again on resume). Returns null when some message would stay (the caller then moves
 * client-side).
 */
async function nativePath(
  env: RedriveEnv,
  r: RedriveRequest,
  p: Prepared,
  backup: RedriveBackup,
  support: NativeMoveSupport,
  ctx: OperationContext,
  totals: Totals,
  notes: string[],
  onStart: () => void,
  movedOn: (MovedOnByReading | undefined)[],
): Promise<true | null> {
  let pending: QueueMessage[] = [];
  let failed = 0;
  const flush = async (): Promise<void> => {
    // A message whose line no snapshot reader accepts cannot be backed up: its mover reports it as
    // failed (it cannot move), which sends the run client-side, where it stays in the DLQ.
    const batch = pending.filter((m) => snapshotLineProblem(m) === null);
    pending = [];
    await backup.append(batch);
  };
  const pre = await p.mover.moveClientSide(
    { sourceQueueId: p.dlq.id, ...(r.state !== undefined ? { state: r.state } : {}), batchSize: Math.max(p.batchSize, 100), cutoffMs: p.cutoffMs, maxMessages: p.maxMessages, maxBodyBytes: p.maxBodyBytes, ...pendingOf(r), dryRun: true },
    {
      gate: async () => {
        await ctx.checkpoint();
        await flush();
      },
      decide: (m) => {
        const d = p.decider.decide(m);
        pending.push(m);
        return d;
      },
      beforeMove: () => Promise.resolve(),
      onBatch: (b) => {
        failed += b.failed.length;
      },
    },
    ctx.signal,
  );
  await flush();
  // The backup pass reads the DLQ like a dry run: on a DLQ with its own RedrivePolicy it moves messages on too.
  movedOn.push(pre.movedOn);
  if (p.decider.toSkip > 0 || failed > 0) return null;
  const total = p.decider.examined.count;
  ctx.setTotal(total);
  if (support.note !== null) notes.push(support.note);
  const pollMs = env.nativePollMs ?? NATIVE_POLL_MS;
  let movedBefore = 0;
  let duplicatesBefore = 0;
  onStart();
  for (;;) {
    // At most what the backup holds and is not moved yet: a mover that can count (a RabbitMQ
    // shovel) then leaves messages dead-lettered since the pre-pass in the DLQ.
    const handle = await p.mover.startNativeMove(p.dlq, r.targetQueueId ?? null, r.ratePerSecond ?? null, ctx.signal, Math.max(0, total - movedBefore));
    if (movedBefore === 0) {
      notes.push(
        handle.limited === true
          ? `backup of ${total} message${total === 1 ? '' : 's'} written before the native move, which takes only those; messages dead-lettered since stay in the DLQ`
          : `backup of ${total} message${total === 1 ? '' : 's'} written before the native move; messages dead-lettered while it runs may be moved too and are not in the backup`,
      );
    }
    const outcome = await pollNative(p.mover, handle, ctx, pollMs, (s) => {
      totals.moved = movedBefore + s.moved;
      totals.examined = totals.moved;
      if (s.possibleDuplicates !== undefined) totals.possibleDuplicates = duplicatesBefore + s.possibleDuplicates;
      if (totals.moved > total) ctx.setTotal(totals.moved);
      ctx.report({ processed: totals.examined, moved: totals.moved, possibleDuplicates: totals.possibleDuplicates });
    });
    if (outcome.kind !== 'paused') {
      totals.moved = movedBefore + outcome.moved;
      totals.examined = Math.max(total, totals.moved);
      const only = p.decider.perTarget.size === 1 ? [...p.decider.perTarget.keys()][0] : undefined;
      if (only !== undefined) totals.perTarget.set(only, totals.moved);
      else if (outcome.kind === 'done') for (const [id, t] of p.decider.perTarget) totals.perTarget.set(id, t.count);
    }
    if (outcome.kind === 'partial') {
      totals.failed = Math.max(0, total - totals.moved);
      notes.push(`the native move ended with ${totals.failed} of ${total} not moved: ${outcome.error}`);
      ctx.addError(new QueuescopeError('BROKER_ERROR', `${support.mechanism}: ${outcome.error}`, { moved: totals.moved, stayed: totals.failed }));
      ctx.report({ processed: totals.examined, moved: totals.moved, failed: totals.failed });
      return true;
    }
    if (outcome.kind === 'done') {
      if (totals.moved < total) notes.push(`the broker reported ${totals.moved} of ${total} moved`);
      if (totals.moved > total) {
        // The broker moved messages the backup pass did not see (they arrived, or were held unacked, during it).
        const extra = totals.moved - total;
        notes.push(`the native move moved ${extra} message${extra === 1 ? '' : 's'} more than the backup holds (${total}): they were dead-lettered, or held by another reader, while the backup was written`);
        ctx.addError(new QueuescopeError('BROKER_ERROR', `${extra} message${extra === 1 ? ' was' : 's were'} moved by ${support.mechanism} without being in the backup (the backup holds ${total}).`, { extra }));
      }
      ctx.report({ processed: totals.examined, moved: totals.moved });
      return true;
    }
    // Paused: the native move was cancelled; wait for resume (or cancel), then start again for what is left.
    movedBefore += outcome.moved;
    duplicatesBefore = totals.possibleDuplicates;
    await ctx.checkpoint();
  }
}

async function pollNative(
  mover: RedriveMover,
  handle: NativeMoveHandle,
  ctx: OperationContext,
  pollMs: number,
  progress: (s: NativeMoveStatus) => void,
): Promise<NativeOutcome> {
  try {
    return await pollNativeLoop(mover, handle, ctx, pollMs, progress);
  } catch (e) {
    if (ctx.signal.aborted || (e instanceof QueuescopeError && e.code === 'CANCELLED')) {
      // Cancelled (Ctrl+C), wherever the loop was (sleeping, polling, checking for a pause): stop
      // the move on the broker, then report what it did (moved, and what may now be in both
      // queues) rather than the last poll's figures — the first poll may not have come yet.
      await mover.cancelNativeMove(handle).catch(() => undefined);
      const after = await mover.nativeMoveStatus(handle).catch(() => null);
      if (after !== null) progress(after);
    }
    throw e;
  }
}

type NativeOutcome = { kind: 'done'; moved: number } | { kind: 'paused'; moved: number } | { kind: 'partial'; moved: number; error: string };

/** The polling loop of {@link pollNative}: until the move completes, ends partial, fails or is paused. */
async function pollNativeLoop(mover: RedriveMover, handle: NativeMoveHandle, ctx: OperationContext, pollMs: number, progress: (s: NativeMoveStatus) => void): Promise<NativeOutcome> {
  for (;;) {
    await abortableSleep(pollMs, ctx.signal);
    const s = await mover.nativeMoveStatus(handle, ctx.signal);
    progress(s);
    if (s.status === 'completed') return { kind: 'done', moved: s.moved };
    // Ended with some moved and the rest still in the DLQ (e.g. a target that refused publishes):
    // exact counts, the rest reported as failed — not an error that hides what moved.
    if (s.status === 'failed' && s.moved > 0) return { kind: 'partial', moved: s.moved, error: s.error ?? 'the native move ended before every message left the DLQ' };
    if (s.status === 'failed') throw new QueuescopeError('BROKER_ERROR', `The native move failed: ${s.error ?? 'no reason given'} (${s.moved} moved before).`);
    if (s.status === 'cancelled') throw new QueuescopeError('CANCELLED', `The native move was cancelled on the broker (${s.moved} moved).`);
    if (await isPaused(ctx)) {
      await mover.cancelNativeMove(handle, ctx.signal);
      const after = await mover.nativeMoveStatus(handle, ctx.signal).catch(() => s);
      progress(after);
      return { kind: 'paused', moved: after.moved };
    }
  }
}

/** True when the operation is paused: its checkpoint does not resolve at once. Throws CANCELLED when cancelled. */
async function isPaused(ctx: OperationContext): Promise<boolean> {
  const state = { settled: false };
  const cp = ctx.checkpoint().then(() => {
    state.settled = true;
  });
  await new Promise<void>((res) => setImmediate(res));
  if (state.settled) return false;
  cp.catch(() => undefined);
  return true;
}

/**
 * Starts a redrive operation on `ops`. Returns the pending snapshot at once.
 */
export function startRedrive(ops: OperationManager, env: RedriveEnv, r: RedriveRequest, label?: string): OperationSnapshot {
  const ref = { id: null as string | null };
  // The run starts on the next tick, after `start` has returned the id.
  const snap = ops.start('redrive', label ?? `Redrive ${r.dlqId}${r.targetQueueId != null ? ` → ${r.targetQueueId}` : ''}`, (ctx) => runRedrive(env, r, ctx, ref.id));
  ref.id = snap.id;
  return snap;
}

/**
 * Re-injects a snapshot (e.g. a redrive backup) into a queue with the mover's `publish`
 * (confirmed, body/headers/properties preserved, redrive counter added), in batches, rate-limited,
 * pausable and cancellable; logs an audit entry at the end.
 * @throws QueuescopeError `INVALID_INPUT` / `SNAPSHOT_INVALID` for a bad file, `QUEUE_NOT_FOUND`,
 *   `UNSUPPORTED`, connection codes, `CANCELLED`.
 */
/**
 * The queue a re-inject publishes to: the existing queue `target` names (an id, or with `byName` a
 * name as the user typed it), or — when it does not exist and the broker creates it on the first
 * write (Redis lists and streams, absent while empty, e.g. the list DLQ a redrive just emptied;
 * {@link RedriveMover.absentTarget}) — the queue of that name of the snapshot's queue kind (the
 * first section header of the snapshot at `path`), with a note saying it does not exist now.
 * `lookup` finds the existing queue (default: `adapter.getQueue`).
 * @throws QueuescopeError `QUEUE_NOT_FOUND` when it does not exist and cannot be created by
 *   publishing; `SNAPSHOT_INVALID` / `INVALID_INPUT` from reading the snapshot's header.
 */
export async function resolveReinjectTarget(
  env: RedriveEnv,
  path: string,
  target: string,
  signal?: AbortSignal,
  lookup: (name: string) => Promise<QueueSummary> = (id) => env.adapter.getQueue(id, signal),
): Promise<{ id: string; name: string; absentNote: string | null }> {
  try {
    const q = await lookup(target);
    return { id: q.id, name: q.name, absentNote: null };
  } catch (e) {
    if (!(e instanceof QueuescopeError && e.code === 'QUEUE_NOT_FOUND')) throw e;
    let like: QueueSummary | null = null;
    for await (const item of readSnapshot(path, signal)) {
      if (item.type === 'header') like = item.header.source.queue;
      break;
    }
    // absentTarget reads the id of its own broker only: a snapshot of another broker gives null.
    const absent = like !== null ? (env.adapter.redrive?.absentTarget?.(like, target) ?? null) : null;
    if (absent === null) throw e;
    return { id: absent.queueId, name: target, absentNote: absent.note };
  }
}

/**
 * Watches the items of a snapshot re-injected into `targetQueueId` (give it each item read) and
 * gives the note of the target's {@link RedriveMover.olderSnapshotTally} for the messages of the
 * sections whose header has no `written` record (written by a Queuescope before it, or by hand):
 * what re-injecting them cannot restore, naming the file (`path`). `note` is null when nothing is
 * lost or the target's mover has no such tally. Pure: no I/O.
 */
export function olderSnapshotCheck(env: RedriveEnv, targetQueueId: string): { see(item: SnapshotItem): void; note(path: string): string | null } {
  const tally = env.adapter.redrive?.olderSnapshotTally?.(targetQueueId) ?? null;
  return {
    see(item: SnapshotItem): void {
      if (tally !== null && item.type === 'message' && item.header.written === undefined) tally.add(item.message);
    },
    note: (path: string): string | null => tally?.note(path) ?? null,
  };
}

/**
 * Watches the messages a re-inject publishes into `targetQueueId` (give it each one) and gives the
 * note of the target's {@link RedriveMover.publishLossTally}: the headers publishing drops (a Redis
 * list: all of them; SQS: those with an empty value), naming them and any idempotency-key header,
 * for the file at `path`. `note` is null when nothing is dropped or the target keeps every header.
 * Pure: no I/O.
 */
export function publishLossCheck(env: RedriveEnv, targetQueueId: string): { see(message: QueueMessage): void; note(path: string): string | null } {
  const tally = env.adapter.redrive?.publishLossTally?.(targetQueueId) ?? null;
  return {
    see(message: QueueMessage): void {
      tally?.add(message);
    },
    note: (path: string): string | null => tally?.note(path) ?? null,
  };
}

/** What the audit log says about the messages of a redrive backup that its redrive did not move. */
export interface BackupNotMoved {
  /** The redrive's per-message record (`details.notMoved`); null when its entry has none. */
  record: NotMovedRecord | null;
  /**
   * With no record: the messages the redrive reported as failed (`counts.failed`) — a native move
   * that ended partly, a run logged before records were kept, or an entry whose details were dropped
   * — so up to this many of the backup's messages were not moved, and which ones is not known. 0 with a record.
   */
  unrecordedFailed: number;
  /** When the redrive ended, ISO 8601 (UTC, seconds). */
  when: string;
}

/** What the audit log says about the redrive that wrote a backup (see {@link backupRedriveRecord}). */
export interface BackupRedriveRecord {
  origin: BackupOrigin;
  /**
   * How the redrive's entries were looked up: `run-id` (the header's `redriveRun`), `path` (an older
   * backup without one, or any other snapshot: as before run ids), or `none` (a remainder file, which
   * has no redrive record of its own).
   */
  by: 'run-id' | 'path' | 'none';
  /**
   * `ended`: the redrive's end is recorded; `started`: only its start (killed, crashed, still
   * running); `missing`: no entry of it in this profile's log (written on another machine or profile,
   * or the log was moved, cleared, or — for a look-up by path — the entry is older than the newest
   * 1,000); `unreadable`: the log could not be read. `none` when not looked up (`by: "none"`).
   */
  found: 'ended' | 'started' | 'missing' | 'unreadable' | 'none';
  /** The messages it did not move, from its ended entry; null when none (or not found). */
  notMoved: BackupNotMoved | null;
  /** The log's path (named in warnings). */
  logPath: string;
}

/**
 * Looks up the redrive that wrote the snapshot at `path` in the audit log: by the run id in its
 * header (all of the log, in one pass: a copy, a renamed file and the original are the same backup),
 * or — for a file without one (an older backup) — by its path (its newest ended entry among the
 * newest 1,000 redrive entries, paths compared resolved). A remainder file is not looked up. Never
 * fails on the log: an unreadable log gives `found: "unreadable"`.
 * @throws QueuescopeError `CANCELLED`; like {@link readFirstHeader} when the file cannot be read.
 */
export async function backupRedriveRecord(env: Pick<RedriveEnv, 'auditLog'>, path: string, signal?: AbortSignal): Promise<BackupRedriveRecord> {
  const origin = await backupOriginOf(path, signal);
  const logPath = env.auditLog.path;
  if (origin.remainder) return { origin, by: 'none', found: 'none', notMoved: null, logPath };
  const by = origin.runId !== null ? 'run-id' : 'path';
  let entries: AuditEntry[];
  try {
    if (origin.runId !== null) entries = entriesOfRun(await findAuditEntriesContaining(env.auditLog, origin.runId, signal), origin.runId).filter((x) => x.action === 'redrive').reverse();
    else {
      const want = resolvePath(path);
      entries = (await env.auditLog.read({ limit: 1000, action: 'redrive' }, signal)).entries.filter((x) => x.action === 'redrive' && x.backupPath !== null && resolvePath(x.backupPath) === want);
    }
  } catch (e) {
    if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
    return { origin, by, found: 'unreadable', notMoved: null, logPath };
  }
  const e = entries.find((x) => x.status !== 'started');
  if (e === undefined) return { origin, by, found: entries.length > 0 ? 'started' : 'missing', notMoved: null, logPath };
  return { origin, by, found: 'ended', notMoved: notMovedOfEntry(e), logPath };
}

/** The not-moved messages an ended redrive entry records, or null when it moved every message it backed up. */
function notMovedOfEntry(e: AuditEntry): BackupNotMoved | null {
  const when = new Date(e.time).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const record = notMovedRecordOf(e.details);
  if (record !== null) return record.count > 0 ? { record, unrecordedFailed: 0, when } : null;
  const failed = e.counts.failed ?? 0;
  return failed > 0 ? { record: null, unrecordedFailed: failed, when } : null;
}

/**
 * The not-moved record of the redrive that wrote the backup at `path` (found as
 * {@link backupRedriveRecord} finds it: by the run id in its header, else by path), or null when
 * there is no such entry, it moved every message it backed up, or the log cannot be read.
 * @throws like {@link backupRedriveRecord}.
 */
export async function notMovedOfBackup(env: Pick<RedriveEnv, 'auditLog'>, path: string, signal?: AbortSignal): Promise<BackupNotMoved | null> {
  return (await backupRedriveRecord(env, path, signal)).notMoved;
}

/** The messages of a snapshot a re-inject publishes (see {@link reinjectSelection}). */
export interface ReinjectSelection {
  /** Message lines in the file. */
  total: number;
  /** Messages left out (not moved by the redrive that wrote the backup); 0 with `includeNotMoved`. */
  leftOut: number;
  /** The ids of the first {@link MAX_LEFT_OUT_NAMED} left out, or — with `includeNotMoved` — not moved and published anyway. */
  ids: string[];
  /** True when the message at 0-based ordinal `n` (among the file's message lines) is left out. */
  skip(n: number): boolean;
  /** What to tell the user before publishing, one sentence each (plain text, untrusted ids: escape for terminals). */
  warnings: string[];
  /** The id of the redrive run that wrote the file (header `redriveRun`, see {@link backupOriginOf}); null when it names none. */
  redriveRunId: string | null;
}

/** Ids of not-moved messages named in a warning. */
export const MAX_LEFT_OUT_NAMED = 20;

/**
 * Which messages of the snapshot at `path` a re-inject publishes. For a redrive backup whose
 * redrive recorded messages it backed up but did not move ({@link notMovedOfBackup}: they stayed in
 * the DLQ, another client took them, or their outcome is unknown), those are left out — unless
 * `includeNotMoved` — and a warning names how many, why and their ids. When the record does not
 * match the file (a listed message has another id: the file was changed), nothing is left out and
 * the warning says so; when the redrive reported failures without a record (a native move that
 * ended partly, an older entry), nothing is left out and the warning gives the count. The record is
 * found by the run id in the file's header, so a copy or renamed backup is treated as the original
 * ({@link backupRedriveRecord}). When the file is a redrive backup (not a remainder) but this
 * profile's audit log has no entry of its redrive (another machine or profile, a moved or cleared
 * log) or cannot be read, nothing is left out and a warning says that the messages the redrive did
 * not move cannot be told apart and may be published again, naming the run (id, start time, DLQ).
 * Reads the file once (and its first line once more).
 * @throws QueuescopeError like {@link readSnapshot}; `CANCELLED`.
 */
export async function reinjectSelection(env: Pick<RedriveEnv, 'auditLog'>, path: string, includeNotMoved: boolean, signal?: AbortSignal): Promise<ReinjectSelection> {
  const found = await backupRedriveRecord(env, path, signal);
  const info = found.notMoved;
  const record = info?.record ?? null;
  const samples = new Map((record?.sample ?? []).map((x) => [x.n, x.id]));
  let total = 0;
  let listed = 0;
  const ids: string[] = [];
  let mismatch: string | null = null;
  for await (const item of readSnapshot(path, signal)) {
    if (item.type !== 'message') continue;
    const n = total++;
    if (record === null) continue;
    const want = samples.get(n);
    if (want !== undefined && want !== item.message.id.slice(0, 200) && mismatch === null) mismatch = `message ${String(n + 1)} of the file is ${item.message.id.slice(0, 80)}, the record says ${want.slice(0, 80)}`;
    if (notMovedKindAt(record, n) !== null) {
      listed++;
      if (ids.length < MAX_LEFT_OUT_NAMED) ids.push(item.message.id.length > 120 ? `${item.message.id.slice(0, 120)}…` : item.message.id);
    }
  }
  const warnings: string[] = [];
  const redriveRunId = found.origin.runId;
  const none: ReinjectSelection = { total, leftOut: 0, ids: [], skip: () => false, warnings, redriveRunId };
  const noRecord = noRecordWarning(path, total, found);
  if (noRecord !== null) warnings.push(noRecord);
  if (info === null) return none;
  const of = path;
  if (record === null) {
    const n = info.unrecordedFailed;
    warnings.push(
      `the redrive that wrote ${of} (${info.when}) reported ${String(n)} message${n === 1 ? '' : 's'} not moved but did not record which (a native move that ended partly, or a run logged before Queuescope recorded them): up to ${String(n)} of the ${String(total)} messages in this backup may still be in the DLQ, or with another client, so publishing all of them can duplicate those; compare the backup with the DLQ first`,
    );
    return none;
  }
  if (mismatch !== null) {
    warnings.push(`${of} does not match the record of the redrive that wrote it (${info.when}; ${mismatch}): it was changed since, so which of its messages that redrive did not move (${String(record.count)}: ${describeNotMovedKinds(record)}) cannot be told; all ${String(total)} are published, which can duplicate those`);
    return none;
  }
  const more = listed > ids.length ? `, and ${String(listed - ids.length)} more` : '';
  const named = `${ids.join(', ')}${more}`;
  const unlisted = record.count - listed;
  const rest =
    unlisted <= 0
      ? ''
      : !record.complete
        ? `; the audit log lists only ${String(listed)} of them: the other ${String(unlisted)} cannot be told apart and are published`
        : `; only ${String(listed)} of them are in this file (it holds fewer messages than the redrive wrote)`;
  const head = `${String(record.count)} of the ${String(total)} messages in ${of} were not moved by the redrive that wrote it (${info.when}): ${describeNotMovedKinds(record)}. Not moved: ${named}${rest}`;
  if (includeNotMoved) {
    warnings.push(`${head}. They are published too (--include-not-moved), which duplicates those still in the DLQ and those the other client took`);
    return { total, leftOut: 0, ids, skip: () => false, warnings, redriveRunId };
  }
  warnings.push(`${head}. They are left out: ${String(total - listed)} are published. To publish them too (duplicates of what is still in the DLQ or was taken), pass --include-not-moved (in the app: "Also publish the messages it did not move")`);
  return { total, leftOut: listed, ids, skip: (n) => notMovedKindAt(record, n) !== null, warnings, redriveRunId };
}

/**
 * The warning for a redrive backup whose redrive this profile's audit log has no entry of (or whose
 * log cannot be read): which of its `total` messages that redrive did not move cannot be told, so
 * all are published and those may be published again. Null when the record was found (or the run's
 * start is, which {@link priorUsesOfBackup} warns about), or the file is not a redrive backup.
 */
function noRecordWarning(path: string, total: number, found: BackupRedriveRecord): string | null {
  if (!found.origin.redriveBackup || (found.found !== 'missing' && found.found !== 'unreadable')) return null;
  const o = found.origin;
  const started = new Date(o.startedAt).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const run = o.runId !== null ? `run ${o.runId}, started ${started}` : `started ${started}; an older backup that names no run, looked up by its path`;
  const why =
    found.found === 'unreadable'
      ? `this profile's audit log (${found.logPath}) cannot be read`
      : `this profile's audit log (${found.logPath}) has no record of that run (the backup was written on another machine or profile, or the log was moved or cleared${o.runId === null ? ', or the file was copied or renamed' : ''})`;
  return (
    `${path} is the backup of a redrive (${run}) of ${o.queueName.slice(0, 200)} on ${o.connection.slice(0, 200)}, and ${why}: the messages that redrive backed up but did not move (they stayed in the DLQ, or another client took them) cannot be told apart from those it moved, ` +
    `so all ${String(total)} are published and those may be published again (duplicates of what is still in the DLQ or was taken). Compare the backup with the DLQ first, or re-inject it where the redrive ran`
  );
}

/**
 * Runs a re-inject as an operation (see {@link startReinject}): publishes the snapshot's messages
 * but those {@link reinjectSelection} leaves out (`ReinjectResult.leftOut`, named in `notes`), in
 * batches of `batchSize` publish calls that share one {@link PublishRun}: on a target that keeps an
 * order per key (SQS FIFO message groups) a message not published stops its group for the rest of
 * the run, later batches included, and the group's later messages are held back (counted in
 * `failed` and `heldBack`, a note saying they are still in the file).
 *
 * When any message of the file is left unpublished — failed (refused, held back, outcome unknown)
 * or, in a run cancelled or failed part way, not yet published — they are written, in order and
 * byte for byte, to a remainder file (`core/redrive/remainder.ts`; `r.remainderPath` or next to the
 * file; `ReinjectResult.remainder`, a note saying how to publish only them). Messages left out
 * (`leftOut`) are not in it. When it cannot be written, `remainderError` and a note say so (the
 * file still holds everything); the run's outcome is otherwise unchanged. Logs an audit entry
 * (`counts.leftOut`, `counts.heldBack`, `details.remainder` / `details.remainderError`) whatever
 * the outcome.
 *
 * The run holds the exclusive lock of `r.path` (`core/redrive/source-lock.ts`): `lock` when the
 * caller took it ({@link startReinject}; the caller releases it), else taken here before anything is
 * read and released when the run ends. A stale lock taken over (its process is gone: it may have
 * published part of the file) and a lock that could not be created are named first in `notes`;
 * after a stale lock, whatever this run publishes counts as `possibleDuplicates`.
 * @throws like {@link startReinject}'s operation: `INVALID_INPUT`, `SNAPSHOT_INVALID`, `QUEUE_NOT_FOUND`, `UNSUPPORTED`, connection codes, `CANCELLED`;
 *   before publishing anything, `INVALID_INPUT` / `PERMISSION_DENIED` for an explicit `remainderPath` that exists or cannot be written,
 *   and `INVALID_INPUT` (`details.reason: 'source-locked'`) while another re-inject of the same file runs.
 */
export async function runReinject(env: RedriveEnv, r: ReinjectRequest, ctx: OperationContext, operationId: string | null = null, lock: SourceLock | null = null): Promise<ReinjectResult> {
  // Refused before anything is read or published while another run re-injects the same file.
  const own = lock === null ? acquireSourceLock({ configDir: env.configDir, source: r.path, target: r.targetQueueId, connection: env.connectionLabel, operationId }) : null;
  const held = lock ?? own;
  try {
    return await reinjectLocked(env, r, ctx, operationId, held === null ? [] : sourceLockNotes(r.path, held), held?.takenOver ?? null);
  } finally {
    own?.release();
  }
}

/** What a run's source lock tells the user: a stale lock taken over, or no lock (see `source-lock.ts`). */
function sourceLockNotes(path: string, lock: SourceLock): string[] {
  const out: string[] = [];
  if (lock.takenOver !== null) out.push(staleLockNote(path, lock.takenOver.holder, lock.takenOver.why));
  if (lock.warning !== null) out.push(lock.warning);
  return out;
}

async function reinjectLocked(env: RedriveEnv, r: ReinjectRequest, ctx: OperationContext, operationId: string | null, lockNotes: string[], takenOver: SourceLock['takenOver']): Promise<ReinjectResult> {
  const mover = moverOf(env);
  const batch = r.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!Number.isInteger(batch) || batch < 1 || batch > 1000) throw new QueuescopeError('INVALID_INPUT', `Batch size must be a whole number from 1 to 1000, got ${String(batch)}.`);
  const rate = r.ratePerSecond ?? null;
  checkRate(rate);
  const target = await resolveReinjectTarget(env, r.path, r.targetQueueId, ctx.signal);
  let total = 0;
  const older = olderSnapshotCheck(env, target.id);
  for await (const item of readSnapshot(r.path, ctx.signal)) {
    older.see(item);
    if (item.type === 'message') total++;
  }
  const olderNote = older.note(r.path);
  const selection = await reinjectSelection(env, r.path, r.includeNotMoved === true, ctx.signal);
  ctx.setTotal(total - selection.leftOut);
  const size = Math.max(1, Math.min(batch, rate === null ? 1000 : Math.ceil(rate)));
  const limiter = new MoveRateLimiter(rate, size);
  const remainderAt = r.remainderPath != null && r.remainderPath !== '' ? resolvePath(r.remainderPath) : null;
  // An explicit remainder path that cannot be used is refused before anything is published.
  if (remainderAt !== null) await checkRemainderPath(remainderAt);
  const res: ReinjectResult = { path: r.path, targetQueueId: target.id, targetName: target.name, read: 0, published: 0, failed: 0, leftOut: 0, heldBack: 0, remainder: null, remainderError: null, auditId: null, possibleDuplicates: 0, notes: [...lockNotes, ...(olderNote !== null ? [olderNote] : []), ...selection.warnings] };
  let status = 'completed';
  let error: unknown = null;
  // One run across the batches: a FIFO group stopped in one batch stays stopped in the next.
  const run: PublishRun = { stopped: new Map() };
  // For the remainder file: ordinals (among the file's message lines) not published, and how the run ended.
  const unpublished = new Set<number>();
  /** The batch in `send`: its ordinals, and whether its publish call was made (outcome unknown if it threw). */
  let pending: { ordinals: number[]; sent: boolean } | null = null;
  let unknownOutcome = 0;
  const send = async (messages: QueueMessage[], ordinals: number[]): Promise<void> => {
    pending = { ordinals, sent: false };
    await ctx.checkpoint();
    await limiter.take(messages.length, ctx.signal);
    pending.sent = true;
    const out = await mover.publish(target.id, messages, ctx.signal, run);
    pending = null;
    res.published += out.published.length;
    res.failed += out.failed.length;
    res.heldBack += out.failed.filter((f) => typeof f.error.details?.blockedBy === 'string').length;
    limiter.refund(out.failed.length);
    for (const f of out.failed) ctx.addError(new QueuescopeError(f.error.code, `Message ${f.id} was not published: ${f.error.message}`, { id: f.id }));
    // Whatever the mover did not confirm as published goes into the remainder (ids may repeat in a file: count them).
    const confirmed = new Map<string, number>();
    for (const id of out.published) confirmed.set(id, (confirmed.get(id) ?? 0) + 1);
    for (const [i, m] of messages.entries()) {
      const k = confirmed.get(m.id) ?? 0;
      if (k > 0) confirmed.set(m.id, k - 1);
      else unpublished.add(ordinals[i] ?? -1);
    }
    ctx.report({ processed: res.read - res.leftOut, moved: res.published, failed: res.failed });
  };
  // What the target drops of the messages sent (a Redis list: every header), for the notes.
  const loss = publishLossCheck(env, target.id);
  let buf: QueueMessage[] = [];
  let bufN: number[] = [];
  let stoppedAt: number | null = null;
  try {
    for await (const item of readSnapshot(r.path, ctx.signal)) {
      if (item.type !== 'message') continue;
      const n = res.read++;
      if (selection.skip(n)) {
        res.leftOut++;
        continue;
      }
      loss.see(item.message);
      buf.push(item.message);
      bufN.push(n);
      if (buf.length >= size) {
        const b = buf;
        const bn = bufN;
        buf = [];
        bufN = [];
        await send(b, bn);
      }
    }
    if (buf.length > 0) {
      const b = buf;
      const bn = bufN;
      buf = [];
      bufN = [];
      await send(b, bn);
    }
  } catch (e) {
    error = e;
    status = toErrorInfo(e).code === 'CANCELLED' || ctx.signal.aborted ? 'cancelled' : 'failed';
    // Stopped early: the batch in hand (published or not: unknown when its call was made), what was
    // read but not sent, and everything after it are not known to be published.
    const p = pending as { ordinals: number[]; sent: boolean } | null;
    if (p !== null) {
      for (const n of p.ordinals) unpublished.add(n);
      if (p.sent) unknownOutcome += p.ordinals.length;
    }
    for (const n of bufN) unpublished.add(n);
    stoppedAt = res.read;
  }
  const laterNotes: string[] = [];
  if (unpublished.size > 0 || (stoppedAt !== null && stoppedAt < total)) {
    const from = stoppedAt;
    try {
      // Not with ctx.signal: a cancelled run writes its remainder too.
      const w = await writeRemainder({
        source: r.path,
        path: remainderAt,
        now: env.now?.() ?? Date.now(),
        fallbackDir: resolvePath(env.configDir, 'backups'),
        pick: (n) => unpublished.has(n) || (from !== null && n >= from && !selection.skip(n)),
      });
      if (w !== null) {
        const remainder = { path: w.path, messages: w.messages };
        res.remainder = remainder;
        laterNotes.push(remainderNote({ ...res, remainder }, { unknownOutcome, notReached: Math.max(0, w.messages - res.failed - unknownOutcome), fellBack: w.fellBack }));
      }
    } catch (e) {
      res.remainderError = toErrorInfo(e).message;
      const k = unpublished.size;
      laterNotes.push(
        `the messages not published could not be written to a remainder file (${res.remainderError}): ${r.path} still holds them${k > 0 ? ` (${String(k)} of them known)` : ''}, in order, with the ${String(res.published)} published now, so publishing it again publishes those a second time`,
      );
      ctx.addError(new QueuescopeError(toErrorInfo(e).code, `No remainder file was written: ${res.remainderError}`, { path: r.path }));
    }
  }
  // The killed run whose lock this one took over may have published any of these: not a clean run.
  if (takenOver !== null && res.published > 0) {
    res.possibleDuplicates = res.published;
    res.notes.push(
      `the ${String(res.published)} message${res.published === 1 ? '' : 's'} published by this run may include duplicates: it took over the lock of an earlier re-inject of ${r.path} that did not end cleanly and may have published some of them already (which ones cannot be told: that run logged nothing); check ${target.name} for messages that are there twice`,
    );
  }
  const lossNote = loss.note(r.path);
  if (lossNote !== null) res.notes.push(lossNote);
  if (res.heldBack > 0) res.notes.push(heldBackNote(res));
  res.notes.push(...laterNotes);
  try {
    const entry = await env.auditLog.append({
      actor: env.actor,
      action: 'reinject',
      connection: env.connectionLabel,
      source: r.path,
      target: target.name,
      filter: null,
      status,
      counts: { read: res.read, published: res.published, failed: res.failed, ...(res.leftOut > 0 ? { leftOut: res.leftOut } : {}), ...(res.heldBack > 0 ? { heldBack: res.heldBack } : {}), ...(res.possibleDuplicates > 0 ? { possibleDuplicates: res.possibleDuplicates } : {}) },
      operationId,
      backupPath: r.path,
      details: {
        targetQueueId: target.id,
        rate,
        batchSize: size,
        // A later re-inject of this backup, or of any copy of it, finds this one by the run id.
        ...(selection.redriveRunId !== null ? { redriveRunId: selection.redriveRunId } : {}),
        ...(r.includeNotMoved === true ? { includeNotMoved: true } : {}),
        ...(res.remainder !== null ? { remainder: res.remainder } : {}),
        ...(res.remainderError !== null ? { remainderError: res.remainderError } : {}),
        ...(res.notes.length > 0 ? { notes: res.notes } : {}),
        ...(error !== null ? { error: toErrorInfo(error) } : {}),
      },
    });
    res.auditId = entry.id;
  } catch (e) {
    ctx.addError(e);
  }
  if (status === 'cancelled') ctx.addError(new QueuescopeError('CANCELLED', `Cancelled after ${res.published} of ${res.read} published.`, { result: res }));
  if (status === 'failed') {
    // The operation's last error carries the result (counts, remainder file), as a cancelled run's does.
    const info = toErrorInfo(error);
    throw new QueuescopeError(info.code, info.message, { ...(info.details ?? {}), result: res }, { cause: error });
  }
  if (error !== null) throw asError(error);
  return res;
}

/**
 * What a re-inject that held messages back tells the user (one sentence, plain text): how many, why,
 * that they are still in the file, and that publishing the file again repeats what was published.
 */
export function heldBackNote(r: Pick<ReinjectResult, 'heldBack' | 'published' | 'path'> & Partial<Pick<ReinjectResult, 'remainder'>>): string {
  const n = r.heldBack;
  const rest = r.remainder != null ? `, and with the other messages not published in the remainder file ${r.remainder.path}: re-inject that file to publish only them. Publishing ${r.path} again` : '; publishing that file again';
  return `${String(n)} message${n === 1 ? ' was' : 's were'} held back, not sent: an earlier message of ${n === 1 ? 'its' : 'their'} FIFO message group was not published (refused, or its outcome unknown), and sending ${n === 1 ? 'it' : 'them'} would have put ${n === 1 ? 'it' : 'them'} ahead of it (each error names the message it waits for). ${n === 1 ? 'It is' : 'They are'} still in ${r.path}, in order${rest} also publishes the ${String(r.published)} published now a second time`;
}

/**
 * What a re-inject that wrote a remainder file tells the user (one sentence, plain text): where,
 * how many and why — `failed` messages (refused, held back), `unknownOutcome` of them in a publish
 * call that failed without an answer (they may have been published), `notReached` (the run stopped
 * before them) — and how to publish only them.
 */
export function remainderNote(r: Pick<ReinjectResult, 'path' | 'published' | 'failed' | 'heldBack'> & { remainder: { path: string; messages: number } }, why: { unknownOutcome: number; notReached: number; fellBack: boolean }): string {
  const k = r.remainder.messages;
  const parts: string[] = [];
  if (r.failed > 0) parts.push(`${String(r.failed)} failed${r.heldBack > 0 ? ` (${String(r.heldBack)} of them held back)` : ''}`);
  if (why.unknownOutcome > 0) parts.push(`${String(why.unknownOutcome)} in a publish call that failed without an answer (they may have been published: check the target before publishing them)`);
  if (why.notReached > 0) parts.push(`${String(why.notReached)} not sent before the run stopped`);
  const where = why.fellBack ? ` (the folder of ${r.path} cannot be written)` : '';
  return `the ${String(k)} message${k === 1 ? '' : 's'} not published${parts.length > 0 ? ` — ${parts.join(', ')} —` : ''} ${k === 1 ? 'is' : 'are'} in the remainder file ${r.remainder.path}${where}, in their order in ${r.path}: re-inject that file (reinject --from ${r.remainder.path}) to publish only ${k === 1 ? 'it' : 'them'}; publishing ${r.path} again also publishes the ${String(r.published)} published now a second time`;
}

/**
 * Starts a re-inject operation on `ops` ({@link runReinject}), holding the source file's exclusive
 * lock (`core/redrive/source-lock.ts`) from before the operation exists until it ends, whatever way
 * (completed, failed, cancelled — also while still pending). The lock file names the operation.
 * @throws QueuescopeError `INVALID_INPUT` (`details.reason: 'source-locked'`, `details.lock`: pid,
 *   host, start, operation id, target) at once, creating no operation, while another re-inject of the
 *   same file (by its real path) runs in this process or another one sharing the config folder.
 */
export function startReinject(ops: OperationManager, env: RedriveEnv, r: ReinjectRequest): OperationSnapshot {
  const lock = acquireSourceLock({ configDir: env.configDir, source: r.path, target: r.targetQueueId, connection: env.connectionLabel });
  const ref = { id: null as string | null };
  let snap: OperationSnapshot;
  try {
    snap = ops.start('reinject', `Re-inject ${r.path} into ${r.targetQueueId}`, async (ctx) => {
      try {
        return await runReinject(env, r, ctx, ref.id, lock);
      } finally {
        // Before the operation turns terminal: a run started right after it ends is not refused.
        lock.release();
      }
    });
  } catch (e) {
    lock.release();
    throw e;
  }
  ref.id = snap.id;
  lock.setOperationId(snap.id);
  // A run cancelled while pending never starts: release when the operation ends, whatever way.
  const release = (): void => {
    lock.release();
  };
  ops.wait(snap.id).then(release, release);
  return snap;
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

export type { RedriveFilter };
