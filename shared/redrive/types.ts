import { QueuescopeError } from '../domain/errors';
import type { FailureClass } from './failure-class';

/**
 * Shapes of a redrive plan (dry run) and result, shared by the engine (core/redrive), the API and
 * the app. Pure types.
 */

/** How many cannot-move messages / not-found ids a plan or result lists (the counts are exact). */
export const MAX_CANNOT_MOVE_LISTED = 1000;

/** Default per-message body read limit of a redrive, bytes: 1 MiB + 1 KiB (a 1 MiB SQS body fits). */
export const DEFAULT_REDRIVE_MAX_BODY_BYTES = 1024 * 1024 + 1024;

/**
 * Highest body read limit a redrive accepts, bytes: 128 MiB (RabbitMQ's maximum message size since
 * 3.8, `max_message_size`). Each batch holds up to `batch size × limit` bytes in memory.
 */
export const MAX_REDRIVE_MAX_BODY_BYTES = 128 * 1024 * 1024;

/**
 * Default idle threshold of a redrive's Redis stream pending entries, ms (60 s): an entry a consumer
 * of a group received less than this long ago and has not acknowledged is taken to be being
 * processed, and stays (see the engine's `RedriveRequest.pendingMinIdleMs`).
 */
export const DEFAULT_PENDING_MIN_IDLE_MS = 60_000;

/** Highest pending-entry idle threshold a redrive accepts, ms: 7 days. The lowest is 1 ms. */
export const MAX_PENDING_MIN_IDLE_MS = 7 * 24 * 3_600_000;

/**
 * Checks a pending-entry idle threshold, ms (undefined = the default): a whole number from 1 to
 * {@link MAX_PENDING_MIN_IDLE_MS}.
 * @param name how the caller names the option in the message (`--pending-min-idle` in the CLI).
 * @throws QueuescopeError `INVALID_INPUT` naming the option and the accepted range.
 */
export function checkPendingMinIdle(ms: number | undefined, name = 'The pending entries idle threshold (pendingMinIdleMs)'): void {
  if (ms === undefined) return;
  if (!Number.isSafeInteger(ms) || ms < 1 || ms > MAX_PENDING_MIN_IDLE_MS) {
    throw new QueuescopeError(
      'INVALID_INPUT',
      `${name} must be a whole number of milliseconds from 1 ms to 7 days (${String(MAX_PENDING_MIN_IDLE_MS)} ms), got ${String(ms)} ms; to move pending entries however recently they were delivered, ${name.startsWith('--') ? 'use --include-pending' : 'include pending entries (includePending)'} instead.`,
    );
  }
}

/**
 * A pending-entry idle threshold (ms) in words, exactly: whole hours as "2 h", whole minutes from 2
 * on as "5 min", whole seconds as "60 s" / "90 s", else "1500 ms".
 */
export function formatIdleThreshold(ms: number): string {
  if (ms >= 3_600_000 && ms % 3_600_000 === 0) return `${String(ms / 3_600_000)} h`;
  if (ms >= 120_000 && ms % 60_000 === 0) return `${String(ms / 60_000)} min`;
  if (ms % 1000 === 0) return `${String(ms / 1000)} s`;
  return `${String(ms)} ms`;
}

/** Skip categories, counted per category in plans and results (`held`: a consumer received it under a minute ago and has not acknowledged it — a Redis stream pending entry). */
export type SkipCategory = 'non-retryable' | 'not selected' | 'not picked' | 'duplicate key' | 'no target' | 'target missing' | 'loop' | 'held';

/** One target of a redrive with what is known about it. */
export interface TargetInfo {
  queueId: string;
  /** Display name (the id when the queue is unknown). */
  queueName: string;
  /** How it was chosen: "chosen by the user", or the mover's `via` ("x-death queue 'orders.work'"…). */
  via: string;
  /** False when the queue was not found on the connection. */
  exists: boolean;
  /** Set when moving there needs confirmation: it is the DLQ itself, or a DLQ that dead-letters straight back into it. */
  loop: string | null;
  /** Things to know that do not block (e.g. "orders.work has no consumers"). */
  warnings: string[];
  /** True when the target is only guessed from the DLQ's name (Redis streams/lists record no source): the user must confirm it. */
  guessed?: boolean;
}

/** A sample decision shown in a dry run. */
export interface DecisionSample {
  id: string;
  action: 'move' | 'skip';
  targetQueueId: string | null;
  /** Skip reason in words. */
  reason: string | null;
  failureClass: FailureClass;
  failureLabel: string;
  failureReason: string | null;
}

/** Messages grouped by how they failed (the DLQ view's rows). */
export interface FailureGroup {
  groupKey: string;
  class: FailureClass;
  label: string;
  /** The reason text of the first message of the group. */
  reason: string | null;
  count: number;
  /** Messages of the group that used all their attempts on a non-retryable error. */
  wastedRetries: number;
  /** Up to 5 message ids of the group. */
  sampleIds: string[];
}

/** What a broker's native move offers (same shape as the adapters' NativeMoveSupport). */
export interface NativeSupportInfo {
  available: boolean;
  mechanism: string;
  note: string | null;
  supportsRate: boolean;
  supportsTarget: boolean;
}

/** Why a client-side read stopped. */
export type StoppedBecause = 'exhausted' | 'cutoff' | 'max-messages';

/**
 * Messages that READING the DLQ made the broker move on to another queue instead of returning them:
 * an SQS DLQ that has its own RedrivePolicy (dlq → dlq2) moves a message already received
 * `maxReceiveCount` times to dlq2 at its next receive — a dry run's receive too (SQS Developer
 * Guide, "Using dead-letter queues"). Such messages left the DLQ without being redriven; they are in
 * {@link queue}, not lost. SQS never returns them to the receive that moved them, so their receive
 * counts cannot be seen: {@link count} is measured on the next queue instead ({@link measuredBy}).
 */
export interface MovedOnByReading {
  /** The queue they were moved to (its name); null when the DLQ's RedrivePolicy cannot be read. */
  queue: string | null;
  /** maxReceiveCount of the DLQ's own RedrivePolicy; null when it cannot be read. */
  maxReceiveCount: number | null;
  /**
   * Messages the next queue gained while the DLQ was read: its visible + in-flight + delayed count
   * (GetQueueAttributes) after the last receive minus before the first, less what the run itself
   * moved there; never below 0. Null when it could not be measured (see {@link measuredBy}).
   */
  count: number | null;
  /** How {@link count} was measured and what could make it off, or why it could not be measured, in one sentence. */
  measuredBy: string;
}

/**
 * Messages of the DLQ a read could not reach. A FIFO SQS queue returns no later message of a message
 * group while an earlier one of that group is in flight (received and not yet deleted or visible
 * again; SQS Developer Guide, "FIFO queue message ordering"; fauxqs returns one message per group
 * per receive, AWS and local-aws-sqs up to 10). A dry run holds every message it reads until it ends
 * and deletes none, so it sees only the first message(s) of each group: the rest were not examined.
 */
export interface UnseenMessages {
  /**
   * Messages the DLQ held at the start (its ApproximateNumberOfMessages before the first receive)
   * less those the read received; null when that count is unknown.
   */
  count: number | null;
  /** Message groups of which the read held a message, so nothing behind it was returned. */
  groups: number;
  /** Why they were not seen, in one sentence. */
  reason: string;
}

/**
 * The dry run's check of one target for idempotency keys already waiting there (see
 * `core/redrive/target-keys.ts`): messages the run would move whose key a message in the target
 * already carries run the same operation twice unless the target's consumer deduplicates on it.
 * Only targets whose reads change nothing are read (Redis lists, streams, BullMQ); others are
 * `checked: false` with a {@link note} saying why.
 */
export interface TargetKeysCheck {
  queueId: string;
  queueName: string;
  /** True when the target's waiting messages were read and compared (or the target is absent, hence empty). */
  checked: boolean;
  /** Messages of the target read (at most 10,000; BullMQ: its jobs that will still run). */
  read: number;
  /** True when the comparison did not cover everything: the target holds more than was read, or not every key of the messages to move was kept (100,000 at most). */
  partial: boolean;
  /** Messages the run would move to this target. */
  moving: number;
  /** Of those, messages without an idempotency key (verdict `missing`): they cannot be compared. Counted only for targets whose reads change nothing (0 for the others: their keys are not extracted). */
  withoutKey: number;
  /** Messages the run would move whose key is already waiting in the target. */
  duplicates: number;
  /** Up to 5 shared keys, each with the first DLQ message id carrying it and the target's message id. */
  examples: { key: string; dlqId: string; targetId: string }[];
  /** Why it was not checked, or what the check did not cover, in words (also in the plan's `notes`); null when there is nothing to add. */
  note: string | null;
}

/** Dry-run result: exactly what a run would move where, with the same messages read now. */
export interface RedrivePlan {
  dlq: { id: string; name: string; depth: number | null };
  /** Messages examined. */
  examined: number;
  /** Messages that would move. */
  toMove: number;
  /** Messages that would stay, by reason (largest first). */
  skipped: { reason: string; category: SkipCategory; count: number }[];
  toSkip: number;
  /** Messages selected to move that cannot be moved (body larger than the read limit, bad target…); `examined = toMove + toSkip + failed`. */
  failed: number;
  /** Each message that cannot be moved, with why (at most {@link MAX_CANNOT_MOVE_LISTED}; `failed` has the full count). */
  cannotMove: { id: string; reason: string }[];
  /** The per-message body read limit of this run, bytes (`maxBodyBytes`): larger bodies cannot be moved. */
  maxBodyBytes: number;
  /** Picked ids (`ids` selection) that were not found in the DLQ (at most {@link MAX_CANNOT_MOVE_LISTED}). */
  notFoundIds: string[];
  /** How many picked ids were not found in all ({@link notFoundIds} lists the first ones). */
  notFoundCount: number;
  /** Per target, with its loop check. */
  targets: (TargetInfo & { count: number })[];
  /** Targets that need confirmation (the DLQ itself, or a DLQ that dead-letters back): messages for them are counted under `loop` skips until confirmed. */
  loops: TargetInfo[];
  /** Non-blocking warnings (targets without consumers…). */
  warnings: string[];
  /** Messages grouped by failure class and reason. */
  groups: FailureGroup[];
  /** Non-retryable messages that used all their attempts. */
  wastedRetries: number;
  samples: DecisionSample[];
  /** The native path: what the broker offers and whether a run with these options would use it. */
  native: { support: NativeSupportInfo | null; wouldUse: boolean; why: string };
  /** The selection in words. */
  filter: string;
  stoppedBecause: StoppedBecause;
  notes: string[];
  /**
   * Present when reading the DLQ can make the broker move messages on (an SQS DLQ with its own
   * RedrivePolicy, read because the request accepted the side effects): what THIS dry run's reads
   * moved on. Absent = reading moves nothing elsewhere.
   */
  movedOn?: MovedOnByReading;  /**
   * Present when the dry run could not reach every message of the DLQ (a FIFO SQS DLQ with more than
   * one message in a group): how many it did not see and why. Its counts then cover only the
   * messages examined. Absent = it read until the DLQ was exhausted, the cutoff or the limit.
   */
  unseen?: UnseenMessages;
  /**
   * Per target the run would move messages to: whether messages it would move carry an
   * idempotency key already waiting there ({@link TargetKeysCheck}). A target with duplicates also
   * gets a warning in {@link warnings}; one not checked a note in {@link notes}. Absent in plans of
   * older versions.
   */
  keysInTarget?: TargetKeysCheck[];
}

/** What a finished redrive did (the operation's `result`; also in `details.result` of a failed run's last error). */
export interface RedriveResult extends Record<string, unknown> {
  mode: 'client-side' | 'native';
  mechanism: string | null;
  dlqId: string;
  dlqName: string;
  examined: number;
  moved: number;
  skipped: number;
  failed: number;
  possibleDuplicates: number;
  targets: { queueId: string; queueName: string; count: number }[];
  skipReasons: { reason: string; category: SkipCategory; count: number }[];
  wastedRetries: number;
  stoppedBecause: StoppedBecause | 'native' | null;
  backupPath: string | null;
  auditId: string | null;
  filter: string;
  notes: string[];
  /** Warnings about the messages the run moved or left (e.g. Redis stream entries pending in a consumer group of the DLQ), as in the plan's `warnings`; absent in results of older versions. */
  warnings?: string[];
  /** Picked ids (`ids` selection) that were not found in the DLQ (at most {@link MAX_CANNOT_MOVE_LISTED}); empty otherwise. */
  notFoundIds: string[];
  /** How many picked ids were not found in all ({@link notFoundIds} lists the first ones). */
  notFoundCount: number;
  /**
   * Present when reading the DLQ can make the broker move messages on (an SQS DLQ with its own
   * RedrivePolicy, read with the side effects accepted): what this run's reads moved on — its
   * native path's backup pass included — without redriving them. Absent = none possible (or an older version).
   */
  movedOn?: MovedOnByReading;
}

/**
 * True when reading the DLQ moved messages on without redriving them, or may have and how many is
 * unknown ({@link MovedOnByReading.count} > 0 or null): the run or dry run is then not "all done"
 * (the CLI exits 7, the app shows a warning).
 */
export function movedOnByReading(m: MovedOnByReading | undefined): boolean {
  return m !== undefined && (m.count === null || m.count > 0);
}

/**
 * {@link MovedOnByReading} in one sentence for the user, or null when nothing was moved on. `who`
 * names the reads ("The dry run's receives", "This run's receives"); `dlq` is the DLQ's name.
 * Names are untrusted: render the sentence as text.
 */
export function describeMovedOn(m: MovedOnByReading | undefined, who: string, dlq: string): string | null {
  if (m === undefined || !movedOnByReading(m)) return null;
  const to = m.queue ?? 'another queue';
  const limit = m.maxReceiveCount !== null ? ` (at the maxReceiveCount ${m.maxReceiveCount} of ${dlq}'s own RedrivePolicy)` : ` (${dlq}'s own RedrivePolicy)`;
  if (m.count === null) return `${who} may have moved messages of ${dlq} on to ${to}${limit} instead of returning them; how many could not be measured: ${m.measuredBy}.`;
  const n = `${m.count} message${m.count === 1 ? '' : 's'}`;
  return `${who} moved ${n} of ${dlq} on to ${to}${limit} instead of returning ${m.count === 1 ? 'it' : 'them'}: ${m.count === 1 ? 'it' : 'they'} left the DLQ without being redriven and ${m.count === 1 ? 'is' : 'are'} in ${to} now, not lost — redrive ${to} to move ${m.count === 1 ? 'it' : 'them'} (${m.measuredBy}).`;
}
