import type { ErrorInfo, QueueMessage, QueueSummary } from '../../shared/domain';
import { DEFAULT_PENDING_MIN_IDLE_MS, type MovedOnByReading, type UnseenMessages } from '../../shared/redrive/types';

/**
 * The broker side of a DLQ redrive (issue 4). The engine in `core/redrive/` owns selection,
 * filters, dry runs, backups, the audit log, rate limiting, pause/resume and progress; a
 * {@link RedriveMover} (one per broker, in `core/adapters/<broker>/redrive.ts`, exposed as
 * `BrokerAdapter.redrive`) owns only what must touch the broker:
 *
 * - reading the DLQ once, in batches, from the head, bounded by the messages present at the start
 *   (so messages dead-lettered during the run are not swept in);
 * - for each batch: asking the engine which messages move where ({@link MoveHooks.decide}),
 *   letting it back them up ({@link MoveHooks.beforeMove}), then publishing each moved message to
 *   its target and waiting for the broker's confirmation BEFORE removing it from the DLQ
 *   (RabbitMQ publisher confirms; SQS per-entry success of SendMessageBatch; Redis inside one
 *   MULTI/Lua script). A crash can leave a duplicate, never a loss;
 * - leaving skipped messages in the DLQ;
 * - native whole-queue moves where the broker has one (SQS StartMessageMoveTask, a RabbitMQ
 *   dynamic shovel, BullMQ `retryJobs`);
 * - publishing messages from a snapshot (re-inject).
 *
 * Moved messages keep their body, headers/attributes and properties; RabbitMQ `x-death` history
 * is kept where the broker allows it; a redrive counter ({@link REDRIVE_COUNT_HEADER}) is added
 * (+1 per redrive).
 */

/** Header / message attribute that counts how many times Queuescope redrove a message. */
export const REDRIVE_COUNT_HEADER = 'x-queuescope-redrive-count';

/** What the engine decided for one message. */
export type RedriveDecision =
  /** Publish to `targetQueueId` (a queue id of the same connection), then remove from the DLQ. */
  | { action: 'move'; targetQueueId: string }
  /**
   * Leave it in the DLQ; `reason` is shown to the user ("non-retryable: HTTP 422 …", "not selected", "duplicate key A-1:charge").
   * `held`: it stays only because a consumer received it less than {@link RECENT_DELIVERY_MS} ago and has not acknowledged it.
   */
  | { action: 'skip'; reason: string; held?: boolean };

/**
 * A DLQ message a consumer received less than this long ago (ms) and has not acknowledged — a Redis
 * stream entry in a consumer group's pending entries list whose idle time (XPENDING) is below it —
 * is taken to be being processed right now: a redrive leaves it in the DLQ unless told to include
 * pending entries. One idle for longer is taken as left by a consumer that stopped, and moves.
 * The default of {@link ClientMoveOptions.pendingMinIdleMs} (60 s).
 */
export const RECENT_DELIVERY_MS = DEFAULT_PENDING_MIN_IDLE_MS;

/** How a redrive run reads the DLQ. */
export interface ClientMoveOptions {
  /** The DLQ's queue id ({@link QueueSummary.id}). For BullMQ, the queue whose `failed` jobs are redriven. */
  sourceQueueId: string;
  /** Peek state to redrive where the broker has states (BullMQ `failed`); absent = the adapter's DLQ default. */
  state?: string;
  /** Messages per batch; the mover may use fewer (SQS: 10 per API call). 1–1000. */
  batchSize: number;
  /**
   * Start-time cutoff, ms since epoch: messages that entered the DLQ after it are not examined
   * (BullMQ `finishedOn`, stream id time). Brokers without a per-message DLQ entry time also stop
   * after {@link maxMessages}.
   */
  cutoffMs: number;
  /** Examine at most this many messages (the DLQ depth at the start, or the user's limit); null = until the DLQ is exhausted up to the cutoff. */
  maxMessages: number | null;
  /** Read and decide only: nothing is published or removed, and the DLQ is left as it was (messages read with side effects are put back). */
  dryRun: boolean;
  /**
   * Idle threshold of pending entries, ms (Redis streams; default {@link RECENT_DELIVERY_MS}, 60 s;
   * a whole number from 1 to `MAX_PENDING_MIN_IDLE_MS`, 7 days): an entry pending in a consumer
   * group of the DLQ with an XPENDING idle time below it is taken to be being processed — the
   * mover's warnings count it so, and its move script leaves an entry that a consumer received
   * since the read and holds with an idle time below it. Must be the decider's threshold.
   */
  pendingMinIdleMs?: number;
  /** Body bytes read per message (default 1 MiB + 1 KiB); a body that would be cut is never moved (it is reported as failed). */
  maxBodyBytes?: number;
  /**
   * A rate limit applies (the engine's `gate`): publish each batch's moves with that batch — never
   * hold some back to fill a larger send later (SQS), which would release them as one burst.
   */
  rateLimited?: boolean;
}

/**
 * What one publishing run (a re-inject) carries from one {@link RedriveMover.publish} call to the
 * next: create it empty once per run, pass it to every call of the run (one target), read it after.
 * A mover whose target keeps messages in order per key — SQS FIFO: per MessageGroupId — records
 * here every key with a message it could not get confirmed (refused before sending or by the
 * broker, or sent with an unknown outcome), and publishes no later message of that key in the run:
 * those fail with `details.blockedBy` = the MessageId of the message they wait for, so none
 * overtakes it. Movers whose targets keep no such order leave it empty.
 */
export interface PublishRun {
  /** Ordering key (SQS FIFO: MessageGroupId) → the first message of that key not published in this run: its id and error code. */
  stopped: Map<string, { messageId: string; code: ErrorInfo['code'] }>;
}

/** Callbacks from the mover to the engine during {@link RedriveMover.moveClientSide}. */
export interface MoveHooks {
  /**
   * Awaited before each batch is read, with the batch size about to be read: rate limiting and
   * pause happen here. Rejects with `QueuescopeError('CANCELLED')` when the run is cancelled;
   * the mover then stops without reading further, leaving the DLQ consistent.
   */
  gate(n: number): Promise<void>;
  /** Decides one message. Synchronous and fast; called exactly once per examined message. */
  decide(message: QueueMessage): RedriveDecision;
  /**
   * Awaited with the messages about to be moved, before any of them is published (the engine
   * appends them to the backup snapshot and syncs it). If it rejects, none of them is moved and
   * the run fails.
   */
  beforeMove(messages: readonly QueueMessage[]): Promise<void>;
  /** Called after each batch has been committed on the broker. */
  onBatch(result: MoveBatchResult): void;
}

/** The outcome of one batch. */
export interface MoveBatchResult {
  /** Messages examined in this batch (moved + skipped + failed). */
  examined: number;
  /** Published to the target (confirmed) and removed from the DLQ. */
  moved: { id: string; targetQueueId: string }[];
  /** Left in the DLQ by decision. */
  skipped: { id: string; reason: string }[];
  /**
   * Not moved: left in the DLQ because publishing or removing failed (or the body was cut), or —
   * with `error.details.leftDlq` true — no longer in the DLQ because another client took it between
   * the read and the move (a Redis list popped at its head). The error says which.
   */
  failed: { id: string; error: ErrorInfo }[];
  /**
   * May be in both queues: published and confirmed but the removal from the DLQ could not be
   * confirmed, or published but the connection died before the confirm came (RabbitMQ: the broker
   * may have enqueued it; the message stays in the DLQ). Reported as possible duplicates, never as lost.
   */
  possibleDuplicates: { id: string; targetQueueId: string }[];
}

/** Totals of a client-side run. */
export interface MoveSummary {
  examined: number;
  moved: number;
  skipped: number;
  failed: number;
  possibleDuplicates: number;
  /** Why the run stopped reading: the DLQ was exhausted, the cutoff or `maxMessages` was reached. */
  stoppedBecause: 'exhausted' | 'cutoff' | 'max-messages';
  /**
   * Optional: side effects and warnings the user should see, one sentence each (e.g. SQS "each message
   * read got ApproximateReceiveCount +1", "the DLQ has its own RedrivePolicy …"). Absent = none.
   */
  notes?: string[];
  /**
   * Optional: warnings about the messages this run moved or would move (dry run), one sentence each
   * — e.g. Redis stream entries pending in a consumer group of the DLQ: which group and consumer,
   * how many, how long idle. Shown with the plan's and the result's warnings. Absent = none.
   */
  warnings?: string[];
  /** Optional: broker API calls the run made (SQS requests), for the API-calls-per-message bench. */
  apiCalls?: number;
  /**
   * Optional: set by a mover whose reads can make the broker move DLQ messages on to another queue
   * ({@link RedriveMover.readMovesMessagesOn}; SQS: the DLQ has its own RedrivePolicy) — how many
   * this run's reads moved on, and how that was measured. Absent = reading moves nothing elsewhere.
   */
  movedOn?: MovedOnByReading;
  /**
   * Optional: messages the DLQ held at the start that the run could not receive although it read
   * until nothing more came (SQS FIFO: a group's later messages stay out of reach while the run
   * holds an earlier one). Absent = none, or not knowable.
   */
  unseen?: UnseenMessages;
}

/**
 * Reading a DLQ can move its messages on to another queue (see {@link RedriveMover.readMovesMessagesOn}).
 */
export interface ReadMovesOn {
  /** Reads (receives, deliveries) after which the broker moves a message on at its next read; null when unknown (e.g. an unreadable policy). */
  maxReceiveCount: number | null;
  /** The queue messages are moved on to (its name), null when unknown. */
  nextQueue: string | null;
  /** The side effect in one sentence, naming the DLQ, the limit and the next queue (untrusted names: render as text). */
  description: string;
}

/** What a broker's native move can do for a DLQ (see {@link RedriveMover.nativeMove}). */
export interface NativeMoveSupport {
  /** True when {@link RedriveMover.startNativeMove} can move this DLQ's messages. */
  available: boolean;
  /** The mechanism in words: "SQS StartMessageMoveTask", "RabbitMQ dynamic shovel (Move messages)", "BullMQ queue.retryJobs". */
  mechanism: string;
  /** Why it is not available, or what it does differently (e.g. "moves to the original source queues only"; "no redrive counter is added"). */
  note: string | null;
  /** Whether it can be rate-limited in messages/s. */
  supportsRate: boolean;
  /** Whether it can move to a queue other than the original source. */
  supportsTarget: boolean;
}

/** A native move in progress. */
export interface NativeMoveHandle {
  /** Broker's handle (SQS TaskHandle, shovel name, …), opaque to the engine. */
  id: string;
  sourceQueueId: string;
  targetQueueId: string | null;
  startedAt: number;
  /** Messages in the DLQ when the move started, when known (with `limited`, at most `maxMessages`). */
  total: number | null;
  /**
   * True when the mover honoured `maxMessages` ({@link RedriveMover.startNativeMove}): the move
   * takes at most that many from the head of the DLQ and later arrivals stay. Absent = the broker
   * moves whatever the DLQ holds while it runs (SQS, BullMQ).
   */
  limited?: boolean;
}

/** Progress of a native move, polled by the engine. */
export interface NativeMoveStatus {
  status: 'running' | 'completed' | 'failed' | 'cancelled';
  /** Messages moved so far (SQS ApproximateNumberOfMessagesMoved, shovel transferred count, BullMQ jobs retried). */
  moved: number;
  /**
   * Optional: messages that may now be in both the DLQ and the target (an upper bound: a cancelled
   * RabbitMQ shovel's messages in flight, up to its prefetch, are requeued even when the target
   * already confirmed them). Absent = none.
   */
  possibleDuplicates?: number;
  total: number | null;
  /** The broker's failure reason when `failed`. */
  error: string | null;
}

/**
 * Broker-specific redrive operations. All calls take an `AbortSignal` last and throw
 * `QueuescopeError` only (`QUEUE_NOT_FOUND`, `PERMISSION_DENIED`, `CANCELLED`, connection codes…).
 */
export interface RedriveMover {
  /**
   * The queue the messages of `dlq` came from, per message: RabbitMQ `x-death[0].queue` (or
   * `x-first-death-queue`), BullMQ the job's own queue, SQS the single RedrivePolicy source
   * (`dlq.deadLetterSources`) when there is exactly one. Null when it cannot be told (streams,
   * lists, SQS with several sources): the user must choose a target.
   * Returns `via` in words ("x-death queue 'work'", "RedrivePolicy source"), and `guessed: true`
   * when the queue is only a guess (Redis streams and lists: the DLQ's name, `orders-dlq` →
   * `orders`) that the user must confirm — the CLI refuses `--yes` without `--to` then.
   */
  resolveTarget(message: QueueMessage, dlq: QueueSummary): { queueId: string; via: string; guessed?: boolean } | null;

  /**
   * Reads the DLQ once and moves what {@link MoveHooks.decide} selects, batch by batch, as
   * described on this module. Returns the totals. On abort (signal or `gate` rejecting with
   * `CANCELLED`) it finishes the batch in hand (so no message is half-moved), puts back what it
   * holds, and throws `CANCELLED`.
   */
  moveClientSide(options: ClientMoveOptions, hooks: MoveHooks, signal?: AbortSignal): Promise<MoveSummary>;

  /**
   * Optional (added for RabbitMQ, backwards compatible): the side effects a client-side run — or,
   * with `dryRun`, a dry run — has on `dlq` beyond moving the selected messages, in sentences for
   * the plan / dry-run output (e.g. "messages that stay are copied to the end of the DLQ: its order
   * changes"; "requeued messages come back marked redelivered"). Absent or empty = none.
   */
  clientMoveSideEffects?(dlq: QueueSummary, dryRun: boolean): string[];

  /**
   * Optional: whether READING `dlq` (every redrive reads it, the dry run too) can make the broker
   * move its messages to another queue by itself — SQS: the DLQ has its own RedrivePolicy, so a
   * receive of a message already received `maxReceiveCount` times moves it on to that policy's
   * dead-letter queue instead of returning it. The engine refuses a dry run or run of such a DLQ
   * (`PEEK_REFUSED`, nothing read) unless the request accepts the side effects. Null (or the method
   * absent) = reading moves nothing elsewhere.
   * @throws QueuescopeError QUEUE_NOT_FOUND, connection codes, CANCELLED.
   */
  readMovesMessagesOn?(dlq: QueueSummary, signal?: AbortSignal): Promise<ReadMovesOn | null>;

  /**
   * Optional: a target named by the user that does not exist now but that the first write
   * creates — Redis lists and streams, which Redis deletes when they become empty (a drained
   * source queue is then not found). `name` is what the user typed (`orders`, `list:orders`).
   * Returns the queue id to move to and a sentence saying it will be created, or null when the
   * broker needs the queue to exist (RabbitMQ, SQS, BullMQ) or `name` is not of the DLQ's kind.
   * Pure: no I/O.
   */
  absentTarget?(dlq: QueueSummary, name: string): { queueId: string; note: string } | null;

  /** Whether a native whole-queue move is possible from `dlq` (to `targetQueueId`, or the original source when null). */
  nativeMove(dlq: QueueSummary, targetQueueId: string | null, signal?: AbortSignal): Promise<NativeMoveSupport>;

  /**
   * Starts a native move of the whole DLQ. `ratePerSecond` null = the broker's default.
   * `maxMessages`: move at most this many, from the head of the DLQ (the engine passes the count
   * its backup pre-pass read, so messages dead-lettered after it are not moved unbacked); a mover
   * that can count sets {@link NativeMoveHandle.limited}, the others ignore it.
   * @throws QueuescopeError `UNSUPPORTED` when {@link nativeMove} says it is not available.
   */
  startNativeMove(dlq: QueueSummary, targetQueueId: string | null, ratePerSecond: number | null, signal?: AbortSignal, maxMessages?: number): Promise<NativeMoveHandle>;

  /** Polls a native move. */
  nativeMoveStatus(handle: NativeMoveHandle, signal?: AbortSignal): Promise<NativeMoveStatus>;

  /** Cancels a native move; messages already moved stay moved. Idempotent. */
  cancelNativeMove(handle: NativeMoveHandle, signal?: AbortSignal): Promise<void>;

  /**
   * Publishes messages (e.g. from a snapshot) to `targetQueueId`, preserving body, headers and
   * properties, adding the redrive counter; resolves when each is confirmed. Used to re-inject a
   * backup. Returns which ids were confirmed and which failed (with why).
   * `run`: the caller's {@link PublishRun} when it publishes one run in several calls (a re-inject
   * publishes a file batch by batch), so a target that keeps an order per key (SQS FIFO message
   * groups) is kept in order across the calls; without it each call starts afresh. Comes after
   * `signal` so the movers that keep no such order need not take it.
   */
  publish(targetQueueId: string, messages: readonly QueueMessage[], signal?: AbortSignal, run?: PublishRun): Promise<{ published: string[]; failed: { id: string; error: ErrorInfo }[] }>;

  /**
   * Optional: what {@link publish} to `targetQueueId` cannot restore of messages from a snapshot
   * section written before the snapshot format's `written` record (an older Queuescope, or by
   * hand; see `core/snapshot/format.ts`), which lacks what later writers record (Redis: the field
   * order of plain stream entries). The caller gives the tally each message of such sections, then
   * asks for its note. Null (or the method absent) when such files lose nothing for this target.
   * Pure: no I/O.
   */
  olderSnapshotTally?(targetQueueId: string): OlderSnapshotTally | null;

  /**
   * Optional: what {@link publish} to `targetQueueId` leaves out of any message it publishes,
   * whatever wrote the file — a message from another broker whose headers the target cannot carry
   * (a Redis list element is the bare body: every header is dropped; an SQS message attribute
   * cannot be empty: headers with an empty string value are left out). The caller gives the tally
   * each message it publishes (or is about to), then asks for its note, before publishing (the CLI
   * warns and asks) and in the result. Null (or the method absent) when the target keeps every
   * header. Pure: no I/O.
   */
  publishLossTally?(targetQueueId: string): PublishLossTally | null;
}

/**
 * See {@link RedriveMover.publishLossTally}: the same shape as {@link OlderSnapshotTally}. Its note
 * names the headers dropped (how many messages, which names) and says so specially when one is an
 * idempotency-key header (`Idempotency-Key`, `X-Idempotency-Key`, any case): the consumer loses its
 * dedupe key.
 */
export type PublishLossTally = OlderSnapshotTally;

/** Whether header `name` carries an idempotency key a consumer dedupes on (`Idempotency-Key`, `X-Idempotency-Key`, any case, `-` or `_`). */
export function isIdempotencyKeyHeader(name: string): boolean {
  return /^(?:x[-_])?idempotency[-_]key$/i.test(name);
}

/**
 * Counts header names over messages for a {@link PublishLossTally}: `add(names)` once per message
 * that loses any; `summary()` gives the message count, up to `maxNames` names (most frequent
 * first, then first seen), how many other names, and the idempotency-key headers among all of them.
 */
export function headerLossCounter(maxNames = 8): { add(names: readonly string[]): void; summary(): { messages: number; names: string[]; moreNames: number; keyHeaders: string[] } } {
  let messages = 0;
  const counts = new Map<string, number>();
  return {
    add(names: readonly string[]): void {
      if (names.length === 0) return;
      messages++;
      for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
    },
    summary() {
      const all = [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([n]) => n);
      return { messages, names: all.slice(0, maxNames), moreNames: Math.max(0, all.length - maxNames), keyHeaders: all.filter(isIdempotencyKeyHeader) };
    },
  };
}

/** See {@link RedriveMover.olderSnapshotTally}. */
export interface OlderSnapshotTally {
  /** Counts one message of a section without the `written` record. */
  add(message: QueueMessage): void;
  /** One sentence naming `file` and what of the messages added re-publishing cannot restore, or null when nothing is lost. */
  note(file: string): string | null;
}
