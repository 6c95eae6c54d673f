import { classifyKey, extractIdempotencyKey, type KeyRule, type KeyVerdictKind } from '../../shared/analysis/idempotency';
import type { QueueMessage, QueueSummary } from '../../shared/domain';
import { classifyFailure, type FailureInfo } from '../../shared/redrive/failure-class';
import { isEmptyFilter, matchFilter, type RedriveFilter } from '../../shared/redrive/filter';
import { formatIdleThreshold, type DecisionSample, type FailureGroup, type SkipCategory, type TargetInfo } from '../../shared/redrive/types';
import { RECENT_DELIVERY_MS, type RedriveDecision, type RedriveMover } from '../adapters/redrive-types';

export type { DecisionSample, FailureGroup, SkipCategory, TargetInfo };

/** Which messages of the DLQ a redrive selects. */
export type RedriveSelection =
  /** Every message (non-retryable ones still excluded unless `includeNonRetryable`). */
  | { kind: 'all' }
  /** Messages matching a filter (see `shared/redrive/filter.ts`). */
  | { kind: 'filter'; filter: RedriveFilter }
  /** Messages picked by id (e.g. in the app's list). */
  | { kind: 'ids'; ids: string[] };

/** Options of {@link Decider}. */
export interface DeciderOptions {
  dlq: QueueSummary;
  selection: RedriveSelection;
  /** Move non-retryable messages too (default false: they stay with their reason). */
  includeNonRetryable: boolean;
  /** Move one message per idempotency key (the first examined); others stay, reported as duplicates. */
  dedupeByKey: boolean;
  /**
   * Move messages a consumer received less than {@link RECENT_DELIVERY_MS} ago and has not
   * acknowledged too (Redis stream pending entries, see {@link recentlyDelivered}); default false:
   * they stay, counted under skip category `held`.
   */
  includePending?: boolean;
  /** The idle threshold of {@link recentlyDelivered}, ms (default {@link RECENT_DELIVERY_MS}, 60 s). */
  pendingMinIdleMs?: number;
  /** User key rules for {@link extractIdempotencyKey}. */
  keyRules: readonly KeyRule[];
  /** A chosen target queue id, or null for the original source per message ({@link RedriveMover.resolveTarget}). */
  targetQueueId: string | null;
  /** Move into a loop target (see {@link TargetInfo.loop}) anyway. */
  confirmLoop: boolean;
  /** Queues of the connection by id (for names, existence and the loop check); null when unknown. */
  queues: ReadonlyMap<string, QueueSummary> | null;
  mover: Pick<RedriveMover, 'resolveTarget' | 'absentTarget'>;
  now: number;
  /** Samples kept per action (default 10). */
  samples?: number;
  /** Failure groups kept (default 200; the rest are counted under `other`). */
  maxGroups?: number;
}

/**
 * Decides, message by message, what a redrive does ({@link RedriveDecision}) and counts it:
 * per target, per skip category and reason, per failure group, with bounded samples. Used for
 * both dry runs and real runs, so a dry run lists exactly what the run would do with the same
 * messages. Decisions, in order:
 * 1. `ids` selection: not picked → skip;
 * 2. non-retryable (unless included) → skip "non-retryable: <label> — <reason>";
 * 3. filter: a failed term → skip "not selected (term)";
 * 4. target: chosen, or resolved from the message; none → skip "no target"; a queue that does not
 *    exist → skip; a loop target without confirmation → skip "loop: …";
 * 5. held: received by a consumer less than `pendingMinIdleMs` (default a minute) ago and not acknowledged ({@link recentlyDelivered}),
 *    unless `includePending` → skip "held: pending in group …" (decision `held: true`);
 * 6. `dedupeByKey`: a key seen before → skip "duplicate idempotency key <key>".
 */
export class Decider {
  readonly examined = { count: 0 };
  readonly perTarget = new Map<string, { target: TargetInfo; count: number }>();
  readonly skipCategories = new Map<string, { category: SkipCategory; count: number }>();
  readonly moveSamples: DecisionSample[] = [];
  readonly skipSamples: DecisionSample[] = [];
  readonly groups = new Map<string, FailureGroup>();
  /** Non-retryable messages whose retries were all used. */
  wastedRetries = 0;
  /** Messages decided `move`. */
  toMove = 0;
  /** Messages decided `skip`. */
  toSkip = 0;
  private readonly keysSeen = new Set<string>();
  private readonly ids: ReadonlySet<string> | null;
  /** Picked ids examined so far (`ids` selection only). */
  private readonly idsSeen = new Set<string>();
  private readonly targets = new Map<string, TargetInfo>();
  /** A `key:` filter reads key verdicts: each key is classified (walks the body). */
  private readonly needVerdict: boolean;
  private readonly filter: RedriveFilter | null;

  constructor(private readonly o: DeciderOptions) {
    this.ids = o.selection.kind === 'ids' ? new Set(o.selection.ids) : null;
    this.filter = o.selection.kind === 'filter' && !isEmptyFilter(o.selection.filter) ? o.selection.filter : null;
    this.needVerdict = this.filter?.keyVerdicts !== undefined && this.filter.keyVerdicts.length > 0;
  }

  /** Target info for a queue id (cached), including the loop check. */
  target(queueId: string, via: string, guessed = false): TargetInfo {
    const cached = this.targets.get(queueId);
    if (cached !== undefined) return cached;
    const info = describeTarget(queueId, via, this.o.dlq, this.o.queues);
    if (guessed) info.guessed = true;
    if (!info.exists) {
      // A Redis list or stream is absent while empty: the move creates it (RedriveMover.absentTarget).
      const absent = this.o.mover.absentTarget?.(this.o.dlq, queueId);
      if (absent?.queueId === queueId) {
        info.exists = true;
        info.warnings.push(absent.note);
      }
    }
    this.targets.set(queueId, info);
    return info;
  }

  /** Picked ids (`ids` selection) not examined so far, in the order given; empty for other selections. */
  notFoundIds(): string[] {
    if (this.ids === null) return [];
    return [...this.ids].filter((id) => !this.idsSeen.has(id));
  }

  /** Decides one message. Never throws. */
  decide(message: QueueMessage): RedriveDecision {
    this.examined.count++;
    const failure = classifyFailure(message);
    this.addToGroup(message, failure);
    if (failure.wastedRetries) this.wastedRetries++;
    if (this.ids !== null && !this.ids.has(message.id)) return this.skip(message, failure, 'not picked', 'not picked');
    if (this.ids !== null) this.idsSeen.add(message.id);
    if (failure.class === 'non-retryable' && !this.o.includeNonRetryable) {
      return this.skip(message, failure, 'non-retryable', `non-retryable: ${failure.label}${failure.reason !== null && failure.reason !== failure.label ? ` — ${failure.reason}` : ''}`, `non-retryable: ${failure.label}`);
    }
    // The key for --dedupe-by-key (null: none), and its verdict only where a filter reads it.
    let key: string | null = null;
    let keyVerdict: KeyVerdictKind = 'missing';
    if (this.needVerdict) {
      const k = keyOf(message, this.o.keyRules);
      keyVerdict = k.verdict;
      key = k.verdict === 'missing' ? null : k.key;
    } else if (this.o.dedupeByKey) key = redriveKeyOf(message, this.o.keyRules);
    if (this.filter !== null) {
      const failed = matchFilter(message, this.filter, { failure, keyVerdict, now: this.o.now });
      if (failed !== null) return this.skip(message, failure, 'not selected', `not selected (${failed})`, `not selected (${failed})`);
    }
    let target: TargetInfo;
    if (this.o.targetQueueId !== null) target = this.target(this.o.targetQueueId, 'chosen by the user');
    else {
      const resolved = safeResolve(this.o.mover, message, this.o.dlq);
      if (resolved === null) return this.skip(message, failure, 'no target', 'no target: the original queue cannot be told from the message; choose a target queue');
      target = this.target(resolved.queueId, resolved.via, resolved.guessed === true);
    }
    if (!target.exists) return this.skip(message, failure, 'target missing', `target ${target.queueName} does not exist`, `target missing: ${target.queueName}`);
    if (target.loop !== null && !this.o.confirmLoop) return this.skip(message, failure, 'loop', `loop: ${target.loop} (confirm to move anyway)`, `loop: ${target.queueName}`);
    const minIdle = this.o.pendingMinIdleMs ?? RECENT_DELIVERY_MS;
    if (this.o.includePending !== true && recentlyDelivered(message, minIdle)) {
      const group = message.meta.consumerGroup ?? '?';
      const d = this.skip(
        message,
        failure,
        'held',
        `held: pending in consumer group "${group.slice(0, 120)}" (consumer "${(message.meta.consumer ?? '?').slice(0, 120)}", delivered ${Math.round((message.meta.idleMs ?? 0) / 1000)} s ago, not acknowledged): likely being processed now — include pending entries to move it`,
        `held: pending in group "${group.slice(0, 120)}", delivered < ${formatIdleThreshold(minIdle)} ago (likely being processed now)`,
      );
      return d.action === 'skip' ? { ...d, held: true } : d;
    }
    if (this.o.dedupeByKey && key !== null) {
      if (this.keysSeen.has(key)) return this.skip(message, failure, 'duplicate key', `duplicate idempotency key ${key.slice(0, 120)}`, 'duplicate idempotency key');
      this.keysSeen.add(key);
    }
    this.toMove++;
    const t = this.perTarget.get(target.queueId);
    if (t === undefined) this.perTarget.set(target.queueId, { target, count: 1 });
    else t.count++;
    if (this.moveSamples.length < (this.o.samples ?? 10)) {
      this.moveSamples.push({ id: message.id, action: 'move', targetQueueId: target.queueId, reason: null, failureClass: failure.class, failureLabel: failure.label, failureReason: failure.reason });
    }
    return { action: 'move', targetQueueId: target.queueId };
  }

  private skip(message: QueueMessage, failure: FailureInfo, category: SkipCategory, reason: string, countAs: string = category): RedriveDecision {
    this.toSkip++;
    const c = this.skipCategories.get(countAs);
    if (c === undefined) {
      if (this.skipCategories.size < 500) this.skipCategories.set(countAs, { category, count: 1 });
      else {
        const other = this.skipCategories.get('other');
        if (other === undefined) this.skipCategories.set('other', { category, count: 1 });
        else other.count++;
      }
    } else c.count++;
    if (this.skipSamples.length < (this.o.samples ?? 10)) {
      this.skipSamples.push({ id: message.id, action: 'skip', targetQueueId: null, reason, failureClass: failure.class, failureLabel: failure.label, failureReason: failure.reason });
    }
    return { action: 'skip', reason };
  }

  private addToGroup(message: QueueMessage, failure: FailureInfo): void {
    let g = this.groups.get(failure.groupKey);
    if (g === undefined) {
      if (this.groups.size >= (this.o.maxGroups ?? 200)) {
        g = this.groups.get('other');
        if (g === undefined) {
          g = { groupKey: 'other', class: 'unknown', label: 'other groups', reason: null, count: 0, wastedRetries: 0, sampleIds: [] };
          this.groups.set('other', g);
        }
      } else {
        g = { groupKey: failure.groupKey, class: failure.class, label: failure.label, reason: failure.reason, count: 0, wastedRetries: 0, sampleIds: [] };
        this.groups.set(failure.groupKey, g);
      }
    }
    g.count++;
    if (failure.wastedRetries) g.wastedRetries++;
    if (g.sampleIds.length < 5) g.sampleIds.push(message.id);
  }

  /** Skip counts, largest first. */
  skipReasons(): { reason: string; category: SkipCategory; count: number }[] {
    return [...this.skipCategories.entries()].map(([reason, v]) => ({ reason, category: v.category, count: v.count })).sort((a, b) => b.count - a.count);
  }

  /** Move counts per target, largest first. */
  targetsList(): (TargetInfo & { count: number })[] {
    return [...this.perTarget.values()].map((v) => ({ ...v.target, count: v.count })).sort((a, b) => b.count - a.count);
  }

  /** Failure groups, largest first. */
  groupList(): FailureGroup[] {
    return [...this.groups.values()].sort((a, b) => b.count - a.count);
  }

  /** Every target seen, including those that were refused (loop, missing). */
  allTargets(): TargetInfo[] {
    return [...this.targets.values()];
  }
}

function safeResolve(mover: Pick<RedriveMover, 'resolveTarget'>, message: QueueMessage, dlq: QueueSummary): { queueId: string; via: string; guessed?: boolean } | null {
  try {
    return mover.resolveTarget(message, dlq);
  } catch {
    return null;
  }
}

/**
 * The key of a message by the redrive's rules (what `--dedupe-by-key` and the dry run's check of
 * keys waiting in the target compare), or null when it has none. `classifyKey` gives the verdict
 * `missing` exactly when the key is blank after trimming, so this checks that instead of
 * classifying (which walks the body). Never throws.
 */
export function redriveKeyOf(message: QueueMessage, rules: readonly KeyRule[]): string | null {
  const ex = extractIdempotencyKey(message, rules);
  return ex === null || ex.key.trim().length === 0 ? null : ex.key;
}

/** The idempotency key and its verdict (`missing` when none was found). */
function keyOf(message: QueueMessage, rules: readonly KeyRule[]): { key: string; verdict: KeyVerdictKind } {
  const ex = extractIdempotencyKey(message, rules);
  if (ex === null) return { key: '', verdict: 'missing' };
  return { key: ex.key, verdict: classifyKey(ex.key, message, ex).verdict };
}

/**
 * Describes a target and checks it for loops: it is the DLQ itself (for a DLQ without states — a
 * BullMQ queue's failed jobs go back to the same queue on purpose), or it is itself a dead-letter
 * queue whose dead-letter target is this DLQ (messages would bounce between the two). A target
 * that dead-letters into the DLQ but has no consumers gets a warning, not a loop.
 */
export function describeTarget(queueId: string, via: string, dlq: QueueSummary, queues: ReadonlyMap<string, QueueSummary> | null): TargetInfo {
  const q = queues?.get(queueId) ?? (queueId === dlq.id ? dlq : undefined);
  const name = q?.name ?? queueId;
  const warnings: string[] = [];
  let loop: string | null = null;
  if (queueId === dlq.id && dlq.capabilities.peekStates.length === 0) loop = `the target ${name} is the dead-letter queue itself`;
  else if (q !== undefined) {
    const backToDlq = q.deadLetterTargets.some((t) => t.queueId === dlq.id);
    if (backToDlq && q.isDeadLetterQueue && q.id !== dlq.id) loop = `${name} is a dead-letter queue that dead-letters straight back into ${dlq.name}`;
    else if (backToDlq && q.consumers === 0) warnings.push(`${name} has no consumers: redriven messages wait there, and any that expire or are rejected come back to ${dlq.name}`);
  }
  return { queueId, queueName: name, via, exists: queues === null || q !== undefined, loop, warnings };
}

/**
 * True when a consumer received `m` less than `minIdleMs` (ms, default {@link RECENT_DELIVERY_MS})
 * ago and has not acknowledged it: `meta.state` `pending` (a Redis stream entry in a consumer
 * group's pending entries list, as the stream mover reads it) with `meta.idleMs` (XPENDING idle
 * time, ms) below it.
 */
export function recentlyDelivered(m: QueueMessage, minIdleMs: number = RECENT_DELIVERY_MS): boolean {
  return m.meta.state === 'pending' && typeof m.meta.idleMs === 'number' && m.meta.idleMs < minIdleMs;
}
