import { randomUUID } from 'node:crypto';
import {
  CancelMessageMoveTaskCommand,
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  StartMessageMoveTaskCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { QueuescopeError, type ErrorInfo, type QueueMessage, type QueueSummary } from '../../../shared/domain';
import type {
  ClientMoveOptions,
  MoveBatchResult,
  MoveHooks,
  MoveSummary,
  NativeMoveHandle,
  NativeMoveStatus,
  NativeMoveSupport,
  PublishLossTally,
  PublishRun,
  ReadMovesOn,
  RedriveMover,
} from '../redrive-types';
import { headerLossCounter } from '../redrive-types';
import type { MovedOnByReading, UnseenMessages } from '../../../shared/redrive/types';
import { intAttr, parseArn, parseRedrivePolicy, queueKind, queueNameFromUrl } from './attributes';
import { mapWithConcurrency } from './concurrency';
import { DEFAULT_MAX_BODY_BYTES, toQueueMessage } from './message';
import { SQS_MAX_BATCH_ENTRIES, buildSendEntry, chunkEntries, emptyHeaderNames, messageGroupOf, type BuiltEntry, type SendTarget } from './redrive-entry';
import { DEFAULT_STEADY_READ, readUntilSteady, type SteadyReading } from './steady-count';

/** What the mover needs from {@link SqsAdapter}: its mapped SDK calls and queue-id resolution. */
export interface SqsRedriveHost {
  /** The endpoint requests go to, for messages. */
  endpoint(): string;
  /** Runs one SDK call, mapping whatever it throws to a QueuescopeError (see `mapSqsError`). */
  call<T>(action: string, queueName: string | undefined, run: (client: SQSClient, abortSignal: AbortSignal | undefined) => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** `sqs:<QueueUrl>` → the URL; `sqs:<name>` → GetQueueUrl. */
  resolveQueueUrl(queueId: string, signal?: AbortSignal): Promise<string>;
}

/** Tunables of the SQS mover (defaults in {@link DEFAULT_SQS_REDRIVE_OPTIONS}). */
export interface SqsRedriveOptions {
  /**
   * VisibilityTimeout (s) of the redrive's receives. A crashed run's messages come back after at
   * most this long; a live run extends what it holds (heartbeat) before it runs out. 1–43,200.
   */
  visibilityTimeoutS: number;
  /** Parallel SQS calls of one kind within a batch (receives, sends, deletes, visibility changes). */
  concurrency: number;
  /**
   * Most messages a run keeps hidden (skipped, failed, newer than the cutoff) before it stops reading,
   * below SQS's in-flight limits (120,000 standard, 20,000 FIFO).
   */
  maxHeldStandard: number;
  maxHeldFifo: number;
}

/** 60 s visibility with heartbeat, 8 calls in parallel, hold up to 100,000 / 18,000 messages. */
export const DEFAULT_SQS_REDRIVE_OPTIONS: SqsRedriveOptions = { visibilityTimeoutS: 60, concurrency: 8, maxHeldStandard: 100_000, maxHeldFifo: 18_000 };

/** Target facts read once per run (GetQueueAttributes). */
interface TargetInfo extends SendTarget {
  url: string;
  arn: string | null;
}

/** A message this run keeps hidden until it ends, and why. */
type HeldReason = 'skipped' | 'failed' | 'newer' | 'dry-run' | 'over-limit' | 'unsent';

/** The visibility state of one received message. */
interface Hidden {
  handle: string;
  /** ms since epoch when its visibility timeout runs out. */
  until: number;
}

/**
 * WaitTimeSeconds of every receive (long polling): SQS then asks all its servers instead of a
 * sample, so a receive is not short of 10 while the queue has messages, and one empty receive
 * means the queue has no visible message left (one call instead of a short poll plus a retry).
 * A non-empty queue answers at once; only the last, empty receive waits this long.
 */
const RECEIVE_WAIT_S = 1;

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** How the moved-on count's last reading was taken, for `measuredBy` ('' for a single reading). */
function settleNote(r: SteadyReading): string {
  if (r.readings === 1) return '';
  const span = `${r.readings} readings over ${(r.spanMs / 1000).toFixed(1)} s after the messages left in the DLQ were made visible again`;
  return r.steady ? ` (${span}, until it held still for ${DEFAULT_STEADY_READ.steadyMs / 1000} s)` : ` (${span}; it was still changing when the reading stopped, so the count may be off by what moved on later)`;
}

function asQs(e: unknown): QueuescopeError {
  return e instanceof QueuescopeError ? e : new QueuescopeError('INTERNAL', e instanceof Error ? e.message : String(e));
}

/** A function, so TypeScript does not narrow `signal.aborted` across awaits. */
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** The AWS error code a mapped error carries in its details, or ''. */
function awsCodeOf(err: QueuescopeError): string {
  const c = err.details?.awsCode;
  return typeof c === 'string' ? c : '';
}

function cancelled(): QueuescopeError {
  return new QueuescopeError('CANCELLED', 'The redrive was cancelled.');
}

/**
 * Why `messageId` of FIFO message group `group` is not published to `targetName`: `stop`, an
 * earlier message of its group, was not (an earlier call of the same {@link PublishRun}, or a
 * refusal before sending), and this one would overtake it. Code: `stop`'s.
 */
function heldBackError(targetName: string, messageId: string, group: string, stop: { messageId: string; code: ErrorInfo['code'] }): ErrorInfo {
  return {
    code: stop.code,
    message: `Held back: message ${stop.messageId}, an earlier message of its FIFO message group "${group.slice(0, 128)}", was not published to ${targetName}, and publishing this one would put it ahead of that message; it is not published.`,
    details: { messageId, messageGroupId: group, blockedBy: stop.messageId },
  };
}

function receiveTimestampAfter(m: Message, cutoffMs: number): boolean {
  const sent = Number(m.Attributes?.SentTimestamp);
  return Number.isFinite(sent) && sent > cutoffMs;
}

/**
 * {@link RedriveMover} for Amazon SQS (and the emulators), client-side and native.
 *
 * **Client-side move** (`moveClientSide`), per engine batch of `batchSize` messages:
 * 1. `gate(n)`, then ⌈n/10⌉ `ReceiveMessage` calls in parallel (MaxNumberOfMessages ≤ 10,
 *    WaitTimeSeconds 1 — long polling, so a receive is not short while the queue has messages and
 *    one empty receive ends the run —, VisibilityTimeout {@link SqsRedriveOptions.visibilityTimeoutS},
 *    all system and message attributes);
 * 2. `decide` each new message; `beforeMove` with the ones to move;
 * 3. `SendMessageBatch` to each target (10 entries / 256 KiB per call), body and MessageAttributes
 *    unchanged plus {@link REDRIVE_COUNT_HEADER}; FIFO targets at most one message per message group
 *    per call, a group's next message only after SQS confirmed the previous one
 *    ({@link SqsRedriveMover.sendInGroupOrder});
 * 4. `DeleteMessageBatch` of exactly the entries SendMessageBatch reported `Successful`. Failed entries
 *    stay in the DLQ and are reported; a failed delete is reported as a possible duplicate.
 * On a standard DLQ and target without a rate limit ({@link ClientMoveOptions.rateLimited}), a
 * batch's last SendMessageBatch that would carry fewer than 10 entries waits for the next batch's moves (the messages stay hidden; sent at the latest when the
 * run ends normally, in a batch of its own), and is reported in the batch that sends it. When the run
 * is cancelled or fails, carried moves are not sent and stay in the DLQ, unreported (like messages
 * read but not examined; the notes count them). A crash can leave in both queues what one round of
 * sends covered: the batch in hand plus fewer than 10 carried moves per target.
 * So a whole-DLQ move costs 3 calls per 10 messages (0.3 per message) plus a few per run, and a
 * filtered one 0.1 per message examined (receive) + 0.2 per message moved (send, delete) + 0.1 per
 * message left (made visible again at the end): e.g. 0.4 per message moved when 2 of 3 move.
 * A FIFO target pays one send per round of a batch instead ({@link SqsRedriveMover.sendInGroupOrder}):
 * the same 0.1 per message when a batch's messages are spread over ≥ 10 groups each round, up to 1
 * per message when they are all of one group (so ≈ 1.2 calls per message moved from a single-group DLQ).
 *
 * FIFO DLQ: a message of a group of which an earlier message stays (skipped or failed) in this run
 * is not moved either (reported `failed`, with why), so no message overtakes one of its group — a
 * message SQS did not accept into a FIFO target included: the later messages of its group are not
 * sent (reported `failed`, naming it) and stay in the DLQ behind it, in order.
 * SQS returns no later message of a group while an earlier one is in flight, so a run that holds a
 * message of a group (a dry run holds all it reads) does not see the messages behind it: it reports
 * how many it could not see as `MoveSummary.unseen` (the DLQ's count at the start less the messages
 * received) and in the notes. A full FIFO dry run is impossible without deleting.
 *
 * Messages left in the DLQ (skipped, failed, dry run, sent after the cutoff) are kept invisible
 * until the run ends — so a run never receives them twice — then made visible again with
 * `ChangeMessageVisibilityBatch` (VisibilityTimeout 0). A heartbeat extends the visibility of
 * everything held (and of the batch in hand) before it runs out. A crash leaves them hidden for at
 * most the visibility timeout.
 *
 * **Bounds and cutoff.** SQS has no per-message "entered the DLQ" time: a standard DLQ keeps each
 * message's original SentTimestamp (FIFO DLQs reset the enqueue time). So the run examines at most
 * `maxMessages`, or else the DLQ's ApproximateNumberOfMessages at the start (`stoppedBecause:
 * 'cutoff'`), counted by distinct MessageId (at-least-once receives can return a message twice), and
 * additionally leaves alone any message whose SentTimestamp is after `cutoffMs` (sent after the run
 * started, e.g. a message this run redrove that failed again). A message sent earlier that
 * dead-letters during the run can still be examined while the start count allows.
 *
 * **Side effects** every read has (SQS has no read without receive), stated in `MoveSummary.notes`:
 * ApproximateReceiveCount +1 for every message read (local-aws-sqs also counts each visibility
 * change); if the DLQ itself has a RedrivePolicy, receives can move its messages on to that queue —
 * a dry run reports each message its receive brought to that maxReceiveCount as `failed` (the real
 * run's receive would move it on), and `MoveSummary.movedOn` (and the notes) say how many the run's
 * reads moved on: the growth of that queue during the run ({@link ClientRun.noteMovedOn}).
 *
 * Broker documentation followed: SQS API Reference (ReceiveMessage, SendMessageBatch,
 * DeleteMessageBatch, ChangeMessageVisibilityBatch, StartMessageMoveTask, ListMessageMoveTasks,
 * CancelMessageMoveTask) and the Developer Guide on DLQ redrive, visibility timeout and quotas.
 */
export class SqsRedriveMover implements RedriveMover {
  private options: SqsRedriveOptions = { ...DEFAULT_SQS_REDRIVE_OPTIONS };
  private calls = 0;
  /** null until tried; false when the server lacks the message-move-task API (fauxqs). */
  private moveTasksSupported: boolean | null = null;
  private moveTasksProblem: string | null = null;

  constructor(private readonly host: SqsRedriveHost) {}

  /** SQS requests made by this mover so far (one per SDK `send`; SDK-internal retries not counted). */
  get apiCalls(): number {
    return this.calls;
  }

  /**
   * Changes tunables for later runs (tests use a short visibility timeout).
   * @throws QueuescopeError INVALID_INPUT for out-of-range values.
   */
  setOptions(partial: Partial<SqsRedriveOptions>): void {
    const next = { ...this.options, ...partial };
    if (!Number.isInteger(next.visibilityTimeoutS) || next.visibilityTimeoutS < 1 || next.visibilityTimeoutS > 43_200) {
      throw new QueuescopeError('INVALID_INPUT', `visibilityTimeoutS must be a whole number of seconds from 1 to 43200, got ${String(next.visibilityTimeoutS)}.`);
    }
    if (!Number.isInteger(next.concurrency) || next.concurrency < 1 || next.concurrency > 64) throw new QueuescopeError('INVALID_INPUT', `concurrency must be 1–64, got ${String(next.concurrency)}.`);
    this.options = next;
  }

  private send<T>(action: string, queueName: string | undefined, run: (client: SQSClient, abortSignal: AbortSignal | undefined) => Promise<T>, signal?: AbortSignal): Promise<T> {
    this.calls++;
    return this.host.call(action, queueName, run, signal);
  }

  private async attributes(url: string, signal?: AbortSignal): Promise<Record<string, string>> {
    const out = await this.send('GetQueueAttributes', queueNameFromUrl(url), (c, s) => c.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }), { abortSignal: s }), signal);
    return out.Attributes ?? {};
  }

  private async targetInfo(queueId: string, signal?: AbortSignal): Promise<TargetInfo> {
    const url = await this.host.resolveQueueUrl(queueId, signal);
    const name = queueNameFromUrl(url);
    const attrs = await this.attributes(url, signal);
    return { url, name, arn: attrs.QueueArn ?? null, fifo: queueKind(name, attrs) === 'sqs-fifo', maxMessageBytes: intAttr(attrs, 'MaximumMessageSize') ?? 262_144 };
  }

  // ------------------------------------------------------------------ target

  /**
   * The source queue of an SQS DLQ: the single queue whose RedrivePolicy points at it
   * (`dlq.deadLetterSources`, via "RedrivePolicy source"). With several sources, the message's own
   * `DeadLetterQueueSourceArn` system attribute (AWS and local-aws-sqs set it; fauxqs does not) picks
   * the source whose name it names ("DeadLetterQueueSourceArn"). Otherwise null: the user chooses.
   */
  resolveTarget(message: QueueMessage, dlq: QueueSummary): { queueId: string; via: string } | null {
    const sources = dlq.deadLetterSources;
    if (sources.length === 1 && sources[0] !== undefined) return { queueId: sources[0], via: 'RedrivePolicy source' };
    const arn = message.properties.DeadLetterQueueSourceArn;
    if (sources.length > 1 && typeof arn === 'string') {
      const name = parseArn(arn)?.resource;
      const matches = sources.filter((id) => name !== undefined && queueNameFromUrl(id.slice(4)) === name);
      if (matches.length === 1 && matches[0] !== undefined) return { queueId: matches[0], via: `DeadLetterQueueSourceArn ${name ?? ''}`.trim() };
    }
    return null;
  }

  /**
   * A DLQ that has its own RedrivePolicy (a chained DLQ: dlq → dlq2): every receive — a redrive's,
   * its dry run's too — adds 1 to ApproximateReceiveCount, and SQS moves a message already received
   * `maxReceiveCount` times to the policy's deadLetterTargetArn instead of returning it (SQS
   * Developer Guide, "Using dead-letter queues"). Reads the DLQ's attributes now (one
   * GetQueueAttributes), not the summary, so a policy added since the listing counts. Null when the
   * DLQ has no RedrivePolicy; an unreadable policy gives `maxReceiveCount`/`nextQueue` null.
   * @throws QueuescopeError QUEUE_NOT_FOUND, INVALID_INPUT (not an sqs: id), connection codes.
   */
  async readMovesMessagesOn(dlq: QueueSummary, signal?: AbortSignal): Promise<ReadMovesOn | null> {
    const url = await this.host.resolveQueueUrl(dlq.id, signal);
    const name = queueNameFromUrl(url);
    const policy = parseRedrivePolicy((await this.attributes(url, signal)).RedrivePolicy);
    if (policy === null) return null;
    if ('error' in policy) {
      return {
        maxReceiveCount: null,
        nextQueue: null,
        description: `${name} has its own RedrivePolicy, which cannot be read (${policy.error}): every receive — the dry run's too — may make SQS move a message to another queue instead of returning it.`,
      };
    }
    const next = parseArn(policy.deadLetterTargetArn)?.resource ?? policy.deadLetterTargetArn;
    return {
      maxReceiveCount: policy.maxReceiveCount,
      nextQueue: next,
      description: `${name} has its own RedrivePolicy (maxReceiveCount ${policy.maxReceiveCount} → ${next}): every receive — the dry run's too — adds 1 to ApproximateReceiveCount, and SQS moves a message already received ${plural(policy.maxReceiveCount, 'time')} to ${next} instead of returning it.`,
    };
  }

  // ------------------------------------------------------------------ client-side move

  /**
   * See the class documentation. Dry run (`dryRun: true`): receives and decides exactly like a real
   * run, sends and deletes nothing, and makes every message visible again at the end; the batch
   * results' `moved` then list what WOULD move (and `failed` what would fail, e.g. an 11th
   * attribute), and the notes state the side effect (ApproximateReceiveCount +1 per message read).
   *
   * @throws QueuescopeError INVALID_INPUT (options), QUEUE_NOT_FOUND (the DLQ), CANCELLED (signal or
   *   gate; after the batch in hand is finished and held messages are visible again), connection
   *   codes from a failing receive, and whatever `beforeMove` rejects with (nothing of that batch moved).
   */
  async moveClientSide(options: ClientMoveOptions, hooks: MoveHooks, signal?: AbortSignal): Promise<MoveSummary> {
    validateOptions(options);
    if (signal?.aborted === true) throw cancelled();
    const run = new ClientRun(this, options, hooks, signal);
    return run.execute();
  }

  /** @internal used by {@link ClientRun} */
  _send<T>(action: string, queueName: string | undefined, run: (client: SQSClient, abortSignal: AbortSignal | undefined) => Promise<T>, signal?: AbortSignal): Promise<T> {
    return this.send(action, queueName, run, signal);
  }
  /** @internal */
  _attributes(url: string, signal?: AbortSignal): Promise<Record<string, string>> {
    return this.attributes(url, signal);
  }
  /** @internal */
  _targetInfo(queueId: string, signal?: AbortSignal): Promise<TargetInfo> {
    return this.targetInfo(queueId, signal);
  }
  /** @internal */
  get _host(): SqsRedriveHost {
    return this.host;
  }
  /** @internal */
  get _options(): SqsRedriveOptions {
    return this.options;
  }

  // ------------------------------------------------------------------ publish

  /**
   * See {@link RedriveMover.publishLossTally}: the headers {@link publish} leaves out because their
   * value is the empty string ({@link emptyHeaderNames}; SQS rejects an empty attribute value) —
   * e.g. `x-first-death-exchange` on every message RabbitMQ dead-lettered from the default exchange.
   * The note names them (an idempotency-key header specially). Any SQS target.
   */
  publishLossTally(targetQueueId: string): PublishLossTally {
    const lost = headerLossCounter();
    let total = 0;
    return {
      add(m: QueueMessage): void {
        total++;
        lost.add(emptyHeaderNames(m));
      },
      note(file: string): string | null {
        const s = lost.summary();
        if (s.messages === 0) return null;
        const names = `${s.names.map((n) => `"${n.slice(0, 60)}"`).join(', ')}${s.moreNames > 0 ? ` and ${String(s.moreNames)} more` : ''}`;
        const key0 = s.keyHeaders[0];
        const keyText = key0 !== undefined ? `; among them the idempotency-key header "${key0.slice(0, 60)}": the consumer loses its dedupe key for those messages` : '';
        return `${String(s.messages)} of the ${String(total)} message${total === 1 ? '' : 's'} re-injected from ${file} into ${queueNameFromUrl(targetQueueId.replace(/^sqs:/, '')).slice(0, 120)} have headers with an empty value, which cannot be SQS message attributes (SQS rejects empty attribute values): they are sent without them — the headers ${names} are left out${keyText}`;
      },
    };
  }

  /**
   * Publishes `messages` (e.g. from a snapshot) to `targetQueueId` with `SendMessageBatch`, built as
   * for a redrive ({@link buildSendEntry}: body, attributes with their SQS types, the redrive counter
   * +1, FIFO group id and a derived deduplication id — salted with a value fresh for each call, so a
   * FIFO target does not drop a re-injected message as a duplicate of the redrive that wrote the
   * backup, or of an earlier re-inject, within its 5-minute window; SDK retries of one call keep
   * the id). `published` lists the ids SQS reported
   * `Successful`; every other message is in `failed` with why (not sendable, a per-entry failure,
   * or the call itself failing — then it may or may not have arrived).
   *
   * FIFO target: no message is published ahead of an earlier message of its MessageGroupId that was
   * not. The first message of a group not published — refused before sending ({@link buildSendEntry},
   * e.g. over the target's MaximumMessageSize), refused by SQS, or sent with an unknown outcome —
   * stops its group: the group's later messages are not sent and are in `failed`, held back
   * (`details.blockedBy` = its MessageId). Within the call the sends go
   * through {@link sendInGroupOrder}; across calls, when the caller passes the same `run` to every
   * call ({@link PublishRun}: a re-inject publishing a file batch by batch), a group stopped in an
   * earlier call stays stopped and the call records the groups it stops. Without `run` each call
   * starts every group afresh.
   * @throws QueuescopeError QUEUE_NOT_FOUND (target), INVALID_INPUT (not an sqs: id), CANCELLED before the first call.
   */
  async publish(
    targetQueueId: string,
    messages: readonly QueueMessage[],
    signal?: AbortSignal,
    run?: PublishRun,
  ): Promise<{ published: string[]; failed: { id: string; error: ErrorInfo }[] }> {
    if (signal?.aborted === true) throw cancelled();
    const target = await this.targetInfo(targetQueueId, signal);
    const published: string[] = [];
    const failed: { id: string; error: ErrorInfo }[] = [];
    const built: (BuiltEntry & { messageId: string })[] = [];
    const salt = randomUUID();
    // FIFO: the groups stopped so far (this run's, or this call's alone without one).
    const stopped = run?.stopped ?? new Map<string, { messageId: string; code: ErrorInfo['code'] }>();
    messages.forEach((m, i) => {
      const group = target.fifo ? messageGroupOf(m) : null;
      const stop = group !== null ? stopped.get(group) : undefined;
      if (group !== null && stop !== undefined) {
        failed.push({ id: m.id, error: heldBackError(target.name, m.id, group, stop) });
        return;
      }
      const b = buildSendEntry(m, target, `p${i % SQS_MAX_BATCH_ENTRIES}`, salt);
      if ('error' in b) {
        failed.push({ id: m.id, error: b.error });
        if (group !== null) stopped.set(group, { messageId: m.id, code: b.error.code });
      } else built.push({ ...b, messageId: m.id });
    });
    if (target.fifo) {
      // At most one message per group per call, a group stopping at its first message not accepted.
      const r = await this.sendInGroupOrder(target, built, this.options.concurrency, 'it is not published', signal);
      for (const f of r.failed) {
        const group = f.entry.entry.MessageGroupId;
        if (group !== undefined && !stopped.has(group)) stopped.set(group, { messageId: f.entry.messageId, code: f.error.code });
      }
      return {
        published: r.ok.map((e) => e.messageId),
        failed: [...failed, ...r.failed.map((f) => ({ id: f.entry.messageId, error: f.error }))],
      };
    }
    const chunks = chunkEntries(built);
    for (const chunk of chunks) {
      if (isAborted(signal)) {
        for (const e of chunk) failed.push({ id: e.messageId, error: cancelled().toInfo() });
        continue;
      }
      const r = await this.sendChunk(target, chunk);
      published.push(...r.ok.map((e) => e.messageId));
      failed.push(...r.failed.map((f) => ({ id: f.entry.messageId, error: f.error })));
    }
    return { published, failed };
  }

  /**
   * One SendMessageBatch. Entry ids are reassigned `e0…e9` so they are unique in the call.
   * Never throws: a failed call fails every entry (noting that they may have been delivered).
   */
  async sendChunk<T extends BuiltEntry>(target: TargetInfo, chunk: readonly T[]): Promise<{ ok: T[]; failed: { entry: T; error: ErrorInfo }[] }> {
    const byId = new Map<string, T>();
    const entries = chunk.map((e, i) => {
      byId.set(`e${i}`, e);
      return { ...e.entry, Id: `e${i}` };
    });
    try {
      // No abort signal: a send withdrawn halfway would leave its outcome unknown.
      const r = await this.send('SendMessageBatch', target.name, (c) => c.send(new SendMessageBatchCommand({ QueueUrl: target.url, Entries: entries })));
      const ok: T[] = [];
      const failed: { entry: T; error: ErrorInfo }[] = [];
      const done = new Set<string>();
      for (const s of r.Successful ?? []) {
        const e = s.Id !== undefined ? byId.get(s.Id) : undefined;
        if (e !== undefined && !done.has(s.Id ?? '')) {
          done.add(s.Id ?? '');
          ok.push(e);
        }
      }
      for (const f of r.Failed ?? []) {
        const e = f.Id !== undefined ? byId.get(f.Id) : undefined;
        if (e !== undefined && !done.has(f.Id ?? '')) {
          done.add(f.Id ?? '');
          failed.push({ entry: e, error: { code: 'BROKER_ERROR', message: `SQS did not accept the message into ${target.name}: ${f.Code ?? 'error'}: ${f.Message ?? 'no reason given'}${f.SenderFault === true ? ' (sender fault)' : ''}.`, details: { awsCode: f.Code ?? null } } });
        }
      }
      // An entry in neither list was not confirmed: it stays in the DLQ.
      for (const [id, e] of byId) {
        if (!done.has(id)) failed.push({ entry: e, error: { code: 'BROKER_ERROR', message: `SendMessageBatch to ${target.name} reported neither success nor failure for this message; it stays in the DLQ.` } });
      }
      return { ok, failed };
    } catch (e) {
      const err = asQs(e);
      if (err.code === 'QUEUE_NOT_FOUND') {
        // SQS refused the call: the queue does not exist (deleted), so nothing of it arrived.
        return {
          ok: [],
          failed: chunk.map((entry) => ({
            entry,
            error: { code: err.code, message: `SendMessageBatch to ${target.name} failed: ${target.name} does not exist (any more); SQS accepted nothing, and the message stays in the DLQ.`, details: { ...err.details, targetGone: target.name } },
          })),
        };
      }
      return {
        ok: [],
        failed: chunk.map((entry) => ({
          entry,
          error: { code: err.code, message: `SendMessageBatch to ${target.name} failed (${err.message}); the message stays in the DLQ and may also have reached ${target.name}.`, details: { ...err.details, maybeDelivered: true } },
        })),
      };
    }
  }

  /**
   * Sends `entries` (in their DLQ or snapshot order) to the FIFO queue `target` so that no message
   * reaches it ahead of an earlier message of its MessageGroupId.
   *
   * Why not 10 of a group per call: SendMessageBatch reports each entry on its own ("the batch
   * request can result in a combination of successful and unsuccessful actions", SQS API Reference)
   * and promises nothing for the later entries of a group whose earlier entry failed. fauxqs
   * accepts them: with an entry refused (InvalidMessageContents, over the target's
   * MaximumMessageSize; on AWS also e.g. an internal error) and a later one of its group accepted,
   * the later one was in the target and the earlier one still in the DLQ — the group out of order,
   * beyond repair. (local-aws-sqs refuses the whole call when one FIFO entry is invalid.)
   *
   * So it sends in rounds: each round sends the next message of every group still going, at most
   * one message per group per call ({@link chunkEntries}: ≤ 10 entries, ≤ 256 KiB), the round's calls
   * — which share no group — `concurrency` at a time; a group's next message goes in a later round
   * only once SQS reported the previous one `Successful`. When a message is not confirmed (a failed
   * entry, or a failed call, after which it may or may not have arrived), its group stops: the
   * group's later messages are not sent and are returned in `failed` (same error code as the
   * message that stopped them, `details.blockedBy` its MessageId), and the caller keeps them where
   * they are (`leftText` says where, e.g. "it stays in orders-dlq.fifo, behind it"), in order behind it. Nothing is lost or sent
   * twice: every entry ends in exactly one of `ok` and `failed`, and only `ok` ones were accepted.
   *
   * Cost: one SendMessageBatch per 10 groups per round — ⌈n/10⌉ calls for n messages of ≥ n
   * distinct groups (as a plain batched send), n calls for n messages of one group.
   * With `signal` aborted before a round, the entries not sent yet fail with CANCELLED.
   * Never throws.
   */
  async sendInGroupOrder<T extends BuiltEntry & { messageId: string }>(
    target: TargetInfo,
    entries: readonly T[],
    concurrency: number,
    leftText: string,
    signal?: AbortSignal,
  ): Promise<{ ok: T[]; failed: { entry: T; error: ErrorInfo }[] }> {
    const groups = new Map<string, T[]>();
    for (const e of entries) {
      const g = e.entry.MessageGroupId ?? '';
      const q = groups.get(g);
      if (q === undefined) groups.set(g, [e]);
      else q.push(e);
    }
    const ok: T[] = [];
    const failed: { entry: T; error: ErrorInfo }[] = [];
    while (groups.size > 0) {
      if (isAborted(signal)) {
        for (const q of groups.values()) for (const e of q) failed.push({ entry: e, error: cancelled().toInfo() });
        break;
      }
      const heads: T[] = [];
      for (const q of groups.values()) if (q[0] !== undefined) heads.push(q[0]);
      const results = await mapWithConcurrency(chunkEntries(heads), concurrency, (chunk) => this.sendChunk(target, chunk));
      for (const r of results) {
        for (const e of r.ok) {
          const g = e.entry.MessageGroupId ?? '';
          const q = groups.get(g) ?? [];
          q.shift();
          if (q.length === 0) groups.delete(g);
          ok.push(e);
        }
        for (const f of r.failed) {
          const g = f.entry.entry.MessageGroupId ?? '';
          const later = (groups.get(g) ?? []).slice(1);
          groups.delete(g);
          failed.push(f);
          for (const e of later) {
            failed.push({
              entry: e,
              error: {
                code: f.error.code,
                message: `Not sent to ${target.name}: ${target.name} did not accept message ${f.entry.messageId}, an earlier message of its FIFO message group "${g.slice(0, 128)}", and sending this one would put it ahead of that message; ${leftText}.`,
                details: { messageId: e.messageId, messageGroupId: g, blockedBy: f.entry.messageId },
              },
            });
          }
        }
      }
    }
    return { ok, failed };
  }

  // ------------------------------------------------------------------ native

  private async dlqArn(dlq: QueueSummary, signal?: AbortSignal): Promise<{ arn: string; url: string }> {
    const url = await this.host.resolveQueueUrl(dlq.id, signal);
    const fromConfig = dlq.config.queueArn;
    if (typeof fromConfig === 'string' && fromConfig !== '') return { arn: fromConfig, url };
    const arn = (await this.attributes(url, signal)).QueueArn;
    if (arn === undefined) throw new QueuescopeError('BROKER_ERROR', `${dlq.name} has no QueueArn attribute; a message move task needs it.`, { queue: dlq.name });
    return { arn, url };
  }

  /**
   * Whether `StartMessageMoveTask` can move `dlq`: the server must implement the message-move-task
   * API (probed once with `ListMessageMoveTasks`; fauxqs does not, local-aws-sqs and AWS do), the
   * queue must be some queue's DLQ, no other task may be running on it (SQS allows one), and an
   * explicit target must be of the same type (standard/FIFO). Moves everything (no filter), at most
   * 500 msg/s (`supportsRate`), to the original sources or any queue (`supportsTarget`); it adds no
   * redrive counter and SQS gives the moved messages new MessageIds.
   * @throws QueuescopeError CANCELLED, connection codes; a missing API or permission is `available: false`, not an error.
   */
  async nativeMove(dlq: QueueSummary, targetQueueId: string | null, signal?: AbortSignal): Promise<NativeMoveSupport> {
    const mechanism = 'SQS StartMessageMoveTask';
    const base = { mechanism, supportsRate: true, supportsTarget: true };
    const no = (note: string): NativeMoveSupport => ({ ...base, available: false, note });
    if (this.moveTasksSupported === false) return no(this.moveTasksProblem ?? `${this.host.endpoint()} does not implement the message-move-task API.`);
    if (dlq.deadLetterSources.length === 0) return no(`${dlq.name} is not the dead-letter queue of any queue; StartMessageMoveTask moves only from a DLQ.`);
    const { arn } = await this.dlqArn(dlq, signal);
    let running: boolean;
    try {
      const r = await this.send('ListMessageMoveTasks', dlq.name, (c, s) => c.send(new ListMessageMoveTasksCommand({ SourceArn: arn, MaxResults: 1 }), { abortSignal: s }), signal);
      this.moveTasksSupported = true;
      running = (r.Results ?? []).some((t) => t.Status === 'RUNNING' || t.Status === 'CANCELLING');
    } catch (e) {
      const err = asQs(e);
      if (err.code === 'UNSUPPORTED') {
        this.moveTasksSupported = false;
        this.moveTasksProblem = `${this.host.endpoint()} does not implement ListMessageMoveTasks/StartMessageMoveTask (${awsCodeOf(err) || err.code}); use the client-side redrive.`;
        return no(this.moveTasksProblem);
      }
      if (err.code === 'PERMISSION_DENIED') return no(`Not allowed to use message move tasks on ${dlq.name}: ${err.message}`);
      throw err;
    }
    if (running) return no(`A message move task is already running on ${dlq.name}; SQS allows one per queue (cancel it or wait).`);
    if (targetQueueId !== null) {
      const t = await this.targetInfo(targetQueueId, signal);
      if (t.fifo !== (dlq.kind === 'sqs-fifo')) return no(`${t.name} is a ${t.fifo ? 'FIFO' : 'standard'} queue and ${dlq.name} is not: StartMessageMoveTask needs both of the same type.`);
    }
    const to = targetQueueId === null ? 'back to the queue each message came from (its DeadLetterQueueSourceArn); messages sent to the DLQ directly make the task fail' : 'to the chosen queue';
    return { ...base, available: true, note: `Moves every message ${to}, at most 500 msg/s; no filter, no redrive counter is added, and the moved messages get new MessageIds.` };
  }

  /**
   * `StartMessageMoveTask` (SourceArn = the DLQ, DestinationArn = the target's ARN or none for the
   * original sources, MaxNumberOfMessagesPerSecond when given). `total` = the DLQ's
   * ApproximateNumberOfMessages just before.
   * @throws QueuescopeError UNSUPPORTED (see {@link nativeMove}), INVALID_INPUT (rate not 1–500), BROKER_ERROR (SQS refused, e.g. a task already running).
   */
  async startNativeMove(dlq: QueueSummary, targetQueueId: string | null, ratePerSecond: number | null, signal?: AbortSignal): Promise<NativeMoveHandle> {
    if (ratePerSecond !== null && (!Number.isInteger(ratePerSecond) || ratePerSecond < 1 || ratePerSecond > 500)) {
      throw new QueuescopeError('INVALID_INPUT', `SQS message move tasks take a rate of 1–500 messages per second, got ${String(ratePerSecond)}.`);
    }
    const support = await this.nativeMove(dlq, targetQueueId, signal);
    if (!support.available) throw new QueuescopeError('UNSUPPORTED', support.note ?? 'No native move for this queue.', { queue: dlq.name });
    const { arn, url } = await this.dlqArn(dlq, signal);
    const total = intAttr(await this.attributes(url, signal), 'ApproximateNumberOfMessages');
    const dest = targetQueueId !== null ? (await this.targetInfo(targetQueueId, signal)).arn : null;
    if (targetQueueId !== null && dest === null) throw new QueuescopeError('BROKER_ERROR', `The target ${targetQueueId.slice(0, 200)} has no QueueArn attribute.`);
    const startedAt = Date.now();
    const r = await this.send(
      'StartMessageMoveTask',
      dlq.name,
      (c, s) => c.send(new StartMessageMoveTaskCommand({ SourceArn: arn, ...(dest !== null ? { DestinationArn: dest } : {}), ...(ratePerSecond !== null ? { MaxNumberOfMessagesPerSecond: ratePerSecond } : {}) }), { abortSignal: s }),
      signal,
    );
    if (r.TaskHandle === undefined) throw new QueuescopeError('BROKER_ERROR', `StartMessageMoveTask on ${dlq.name} returned no TaskHandle.`);
    return { id: JSON.stringify({ taskHandle: r.TaskHandle, sourceArn: arn, queueName: dlq.name }), sourceQueueId: dlq.id, targetQueueId, startedAt, total };
  }

  private parseHandle(handle: NativeMoveHandle): { taskHandle: string; sourceArn: string; queueName: string } {
    try {
      const v = JSON.parse(handle.id) as { taskHandle?: unknown; sourceArn?: unknown; queueName?: unknown };
      if (typeof v.taskHandle === 'string' && typeof v.sourceArn === 'string') return { taskHandle: v.taskHandle, sourceArn: v.sourceArn, queueName: typeof v.queueName === 'string' ? v.queueName : '' };
    } catch {
      /* fall through */
    }
    throw new QueuescopeError('INVALID_INPUT', 'Not a handle of an SQS message move task.');
  }

  /**
   * Polls with `ListMessageMoveTasks` (the 10 most recent tasks of the DLQ): the task with this
   * TaskHandle, or — SQS returns the handle only while a task runs — the most recent finished task
   * started at or after this one (1 s clock tolerance). RUNNING/CANCELLING → running.
   * @throws QueuescopeError INVALID_INPUT (foreign handle), BROKER_ERROR when the task is not listed.
   */
  async nativeMoveStatus(handle: NativeMoveHandle, signal?: AbortSignal): Promise<NativeMoveStatus> {
    const h = this.parseHandle(handle);
    const r = await this.send('ListMessageMoveTasks', h.queueName, (c, s) => c.send(new ListMessageMoveTasksCommand({ SourceArn: h.sourceArn, MaxResults: 10 }), { abortSignal: s }), signal);
    const tasks = r.Results ?? [];
    const task =
      tasks.find((t) => t.TaskHandle === h.taskHandle) ??
      tasks.filter((t) => t.TaskHandle === undefined && (t.StartedTimestamp ?? 0) >= handle.startedAt - 1_000).sort((a, b) => (a.StartedTimestamp ?? 0) - (b.StartedTimestamp ?? 0))[0];
    if (task === undefined) throw new QueuescopeError('BROKER_ERROR', `The message move task on ${h.queueName} is no longer listed by ListMessageMoveTasks.`);
    const status: NativeMoveStatus['status'] =
      task.Status === 'COMPLETED' ? 'completed' : task.Status === 'CANCELLED' ? 'cancelled' : task.Status === 'FAILED' ? 'failed' : 'running';
    return {
      status,
      moved: task.ApproximateNumberOfMessagesMoved ?? 0,
      total: task.ApproximateNumberOfMessagesToMove ?? handle.total,
      error: status === 'failed' ? (task.FailureReason ?? 'the task failed without a reason') : null,
    };
  }

  /**
   * `CancelMessageMoveTask`. Idempotent: a task that is no longer running (SQS: "Only active tasks can
   * be cancelled", or ResourceNotFound) is left as it is.
   */
  async cancelNativeMove(handle: NativeMoveHandle, signal?: AbortSignal): Promise<void> {
    const h = this.parseHandle(handle);
    try {
      await this.send('CancelMessageMoveTask', h.queueName, (c, s) => c.send(new CancelMessageMoveTaskCommand({ TaskHandle: h.taskHandle }), { abortSignal: s }), signal);
    } catch (e) {
      const err = asQs(e);
      const aws = awsCodeOf(err);
      if (err.code === 'BROKER_ERROR' && (aws === 'ResourceNotFoundException' || aws.endsWith('ResourceNotFound') || /only active tasks/i.test(err.message))) return;
      throw err;
    }
  }
}

function validateOptions(o: ClientMoveOptions): void {
  if (!Number.isInteger(o.batchSize) || o.batchSize < 1 || o.batchSize > 1000) throw new QueuescopeError('INVALID_INPUT', `batchSize must be a whole number from 1 to 1000, got ${String(o.batchSize)}.`);
  if (!Number.isFinite(o.cutoffMs)) throw new QueuescopeError('INVALID_INPUT', `cutoffMs must be a time in ms since epoch, got ${String(o.cutoffMs)}.`);
  if (o.maxMessages !== null && (!Number.isInteger(o.maxMessages) || o.maxMessages < 0)) throw new QueuescopeError('INVALID_INPUT', `maxMessages must be null or a whole number ≥ 0, got ${String(o.maxMessages)}.`);
  if (o.maxBodyBytes !== undefined && (!Number.isInteger(o.maxBodyBytes) || o.maxBodyBytes < 0)) throw new QueuescopeError('INVALID_INPUT', `maxBodyBytes must be a whole number ≥ 0, got ${String(o.maxBodyBytes)}.`);
  if (o.state !== undefined && o.state !== '') throw new QueuescopeError('INVALID_INPUT', `SQS queues have no message states; got state "${o.state.slice(0, 50)}".`);
}

/** One received message on its way through a batch. */
interface InHand {
  raw: Message;
  message: QueueMessage;
}

/** A move ready to send: its entry, the message and where it goes. */
type Planned = BuiltEntry & { messageId: string; targetQueueId: string; handle: InHand };

/** The state of one `moveClientSide` run. */
class ClientRun {
  private url = '';
  private name = '';
  private readonly hidden = new Map<string, Hidden>();
  private readonly held = new Map<string, HeldReason>();
  /** MessageIds sent to the target and confirmed (deleted or not). */
  private readonly movedIds = new Set<string>();
  private readonly targets = new Map<string, Promise<TargetInfo>>();
  private readonly notes: string[] = [];
  private totals = { examined: 0, moved: 0, skipped: 0, failed: 0, possibleDuplicates: 0 };
  /** Messages decided so far (reported or carried): what the limit and the positions count. */
  private decided = 0;
  /**
   * Moves decided and backed up but not sent yet, per target: the tail of a batch that would not
   * fill a SendMessageBatch of 10 waits for the next batch (standard queues only), so a filtered
   * run does not pay a part-filled send and delete per batch. Reported when sent.
   */
  private readonly carry = new Map<string, Planned[]>();
  private newer = 0;
  private removedAgain = 0;
  private readonly callsAtStart: number;
  private heartbeatTimer: ReturnType<typeof setInterval> | null = null;
  private heartbeatRunning: Promise<void> | null = null;
  private readonly vt: number;
  private fifo = false;
  /**
   * The DLQ's own RedrivePolicy (it is itself a source of another DLQ): its maxReceiveCount, the
   * next queue's name and URL (null when it cannot be resolved) and that queue's message count at
   * the start (null when unknown).
   */
  private own: { max: number; next: string; nextUrl: string | null; nextAtStart: number | null; unmeasured: string | null } | null = null;
  /** The DLQ's own RedrivePolicy could not be read (why): its reads may move messages on, to a queue not known. */
  private ownUnreadable: string | null = null;
  /** FIFO DLQ: the message group of each message received (MessageId → MessageGroupId), to count the groups held at the end. */
  private readonly groupOfReceived = new Map<string, string>();
  /** What this run's reads moved on ({@link noteMovedOn}); set at the end of a DLQ with its own RedrivePolicy. */
  private movedOn: MovedOnByReading | undefined = undefined;
  /** Dry run: messages whose receive count reached the DLQ's own maxReceiveCount (see {@link processBatch}). */
  private atOwnLimit = 0;
  /** Held messages {@link finish} made visible again (ChangeMessageVisibility 0 accepted): they may still move on afterwards. */
  private madeVisibleAgain = 0;
  /**
   * A target found not to exist during the run (deleted meanwhile): its name. The run stops after
   * the batch in which that was found ({@link stopIfTargetGone}) instead of failing every later message.
   */
  private goneTarget: string | null = null;
  /** Messages moved (confirmed and deleted from the DLQ) per target queue id. */
  private readonly movedPerTarget = new Map<string, number>();
  /** Failed sends whose outcome SQS did not report (the call itself failed): they may be in the target too. */
  private maybeDelivered = 0;
  /**
   * FIFO DLQ: message groups of which a message stays in the DLQ in this run (skipped or failed).
   * A later message of such a group is not moved either, so no message overtakes one of its group.
   */
  private readonly stayingGroups = new Set<string>();

  constructor(
    private readonly mover: SqsRedriveMover,
    private readonly o: ClientMoveOptions,
    private readonly hooks: MoveHooks,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.callsAtStart = mover.apiCalls;
    this.vt = mover._options.visibilityTimeoutS;
  }

  private aborted(): boolean {
    return isAborted(this.signal);
  }

  async execute(): Promise<MoveSummary> {
    this.url = await this.mover._host.resolveQueueUrl(this.o.sourceQueueId, this.signal);
    this.name = queueNameFromUrl(this.url);
    const attrs = await this.mover._attributes(this.url, this.signal);
    this.fifo = queueKind(this.name, attrs) === 'sqs-fifo';
    const startCount = intAttr(attrs, 'ApproximateNumberOfMessages');
    const limit = this.o.maxMessages ?? startCount ?? Number.POSITIVE_INFINITY;
    const limitReason: MoveSummary['stoppedBecause'] = this.o.maxMessages !== null ? 'max-messages' : 'cutoff';
    const maxHeld = this.fifo ? this.mover._options.maxHeldFifo : this.mover._options.maxHeldStandard;
    const policy = parseRedrivePolicy(attrs.RedrivePolicy);
    if (policy !== null) {
      const next = 'error' in policy ? 'another queue' : (parseArn(policy.deadLetterTargetArn)?.resource ?? policy.deadLetterTargetArn);
      const max = 'error' in policy ? '?' : String(policy.maxReceiveCount);
      this.notes.push(
        `${this.name} has its own RedrivePolicy (maxReceiveCount ${max} → ${next}): every receive of this redrive adds 1 to ApproximateReceiveCount, so a message already received ${max} time${max === '1' ? '' : 's'} is moved to ${next} by SQS instead of being read, and messages left in ${this.name} get closer to that limit.`,
      );
      if ('error' in policy) this.ownUnreadable = policy.error;
      else {
        this.own = { max: policy.maxReceiveCount, next, nextUrl: null, nextAtStart: null, unmeasured: null };
        // GetQueueUrl by name looks in this account and region only: a next queue elsewhere is not
        // measured, nor the DLQ itself (its own DLQ: its depth changes with the run).
        const nextArn = parseArn(policy.deadLetterTargetArn);
        const ownArn = parseArn(attrs.QueueArn ?? '');
        const sameHome = nextArn !== null && ownArn !== null && nextArn.accountId === ownArn.accountId && nextArn.region === ownArn.region && next !== this.name;
        if (sameHome) {
          try {
            this.own.nextUrl = await this.mover._host.resolveQueueUrl(`sqs:${next}`, this.signal);
            this.own.nextAtStart = await this.depthOf(this.own.nextUrl, this.signal);
            if (this.own.nextAtStart === null) this.own.unmeasured = `GetQueueAttributes on ${next} returned no message counts`;
          } catch (e) {
            // Unknown (no permission, deleted): the count of messages moved on is then unknown.
            this.own.unmeasured = `the message count of ${next} could not be read before the first receive (${asQs(e).message})`;
          }
        } else {
          this.own.unmeasured = next === this.name ? `${this.name} is its own dead-letter queue` : `${next} is in another account or region, whose message count this connection does not read`;
        }
      }
    }
    this.heartbeatTimer = setInterval(() => {
      if (this.heartbeatRunning === null) {
        this.heartbeatRunning = this.heartbeat().finally(() => {
          this.heartbeatRunning = null;
        });
      }
    }, Math.max(250, (this.vt * 1000) / 4));
    this.heartbeatTimer.unref();

    let stoppedBecause: MoveSummary['stoppedBecause'] = 'exhausted';
    let failure: unknown = null;
    try {
      for (;;) {
        if (this.aborted()) throw cancelled();
        const remaining = limit - this.decided;
        if (remaining <= 0) {
          stoppedBecause = limitReason;
          break;
        }
        if (this.held.size >= maxHeld) {
          stoppedBecause = 'max-messages';
          this.notes.push(`Stopped after holding ${plural(this.held.size, 'message')} left in the DLQ out of sight: SQS limits in-flight messages (120,000 standard, 20,000 FIFO). Run again to continue.`);
          break;
        }
        const n = Math.min(this.o.batchSize, remaining);
        await this.hooks.gate(n);
        if (this.aborted()) throw cancelled();
        const raw = await this.receive(Math.min(n, maxHeld - this.held.size));
        if (raw === 'over-limit') {
          stoppedBecause = 'max-messages';
          this.notes.push(`SQS refused further receives (OverLimit: too many in-flight messages); ${plural(this.held.size, 'message')} left in the DLQ were held out of sight. Run again to continue.`);
          break;
        }
        const { fresh, again, newlyHeld } = this.sortReceived(raw, limit);
        if (again.length > 0) await this.deleteAgain(again);
        if (fresh.length === 0) {
          // Only messages already seen: read on. Nothing at all from a long poll: the DLQ is exhausted.
          if (newlyHeld > 0 || again.length > 0) continue;
          break;
        }
        const result = await this.processBatch(fresh, false);
        this.hooks.onBatch(result);
        this.stopIfTargetGone();
      }
    } catch (e) {
      failure = e;
    }
    if (this.carry.size > 0) {
      if (failure === null) {
        // The run ended normally: send the moves carried from the last batch, in a batch of their own.
        try {
          const result = await this.processBatch([], true);
          this.hooks.onBatch(result);
          this.stopIfTargetGone();
        } catch (e) {
          failure = e;
        }
      } else {
        // Cancelled or failed: the batches reported are final; the carried moves (never reported)
        // are not sent — they stay in the DLQ like messages read but not examined.
        for (const list of this.carry.values()) {
          for (const p of list) this.held.set(p.messageId, 'unsent');
          this.decided -= list.length;
        }
        this.carry.clear();
        this.carriedIds.clear();
      }
    }
    await this.finish();
    if (failure !== null) {
      // What the reads moved on before the run failed or was cancelled still happened: it travels in the error's details.
      const err = failure instanceof QueuescopeError && this.movedOn !== undefined ? new QueuescopeError(failure.code, failure.message, { ...failure.details, movedOn: this.movedOn }, { cause: failure }) : failure;
      throw err instanceof Error ? err : asQs(err);
    }
    const behind = this.fifo && this.held.size > 0 && stoppedBecause === 'exhausted' ? this.unseenBehindHeld(startCount) : undefined;
    // None missing (every group's last message was read): nothing to say.
    const unseen = behind !== undefined && behind.count !== 0 ? behind : undefined;
    if (unseen !== undefined) this.notes.push(unseen.reason);
    return {
      ...this.totals,
      stoppedBecause,
      notes: this.notes,
      apiCalls: this.mover.apiCalls - this.callsAtStart,
      ...(this.movedOn !== undefined ? { movedOn: this.movedOn } : {}),
      ...(unseen !== undefined ? { unseen } : {}),
    };
  }

  /**
   * FIFO DLQ read until an empty receive while this run held messages: SQS returns no later message
   * of a group while an earlier one is in flight, so the messages behind the held ones were not
   * received. Their number is the DLQ's ApproximateNumberOfMessages at the start less the messages
   * received (exact on the emulators; approximate on AWS, and messages another reader held at the
   * start are not in it). A dry run holds all it reads, so it sees only the first of each group.
   */
  private unseenBehindHeld(startCount: number | null): UnseenMessages {
    const groups = new Set<string>();
    for (const id of this.held.keys()) {
      const g = this.groupOfReceived.get(id);
      if (g !== undefined) groups.add(g);
    }
    const count = startCount === null ? null : Math.max(0, startCount - this.received());
    const what = count === null ? 'Messages' : `${plural(count, 'message')} of the ${startCount ?? '?'} ${this.name} held at the start`;
    const why = `SQS returns no later message of a FIFO message group while an earlier one is in flight, and this ${this.o.dryRun ? 'dry run held every message it read (a dry run deletes nothing), so it saw only the first message(s) of each group' : 'run held the messages it left in the DLQ'}`;
    const reason = `FIFO: ${what} ${count === 1 ? 'was' : 'were'} not seen${count === null ? '' : ' (not examined, not counted above)'}: they are behind messages of ${plural(groups.size, 'message group')} that ${this.o.dryRun ? 'this dry run' : 'this run'} held — ${why}.${this.o.dryRun ? ' A run moves a group past its first message once it has moved that one, with the same selection; it stops at a message that stays.' : ' Run it again once they are visible to read past them.'}`;
    return { count, groups: groups.size, reason };
  }

  /** Distinct messages received by this run (examined, newer than the cutoff, beyond the limit, carried unsent). */
  private received(): number {
    let extra = 0;
    for (const r of this.held.values()) if (r === 'over-limit' || r === 'unsent') extra++;
    return this.decided + this.newer + extra;
  }

  /**
   * Stops the run (throws, after the batch in hand was reported) once a target was found not to
   * exist — deleted during the run: every later message would fail the same way. The error names
   * the target and gives the counts so far: moved (and how many of those went to the deleted queue,
   * which SQS deleted with it unless consumed first), not moved, and at most how many are uncertain.
   * @throws QueuescopeError QUEUE_NOT_FOUND.
   */
  private stopIfTargetGone(): void {
    const gone = this.goneTarget;
    if (gone === null) return;
    let movedThere = 0;
    for (const [id, n] of this.movedPerTarget) if (queueNameFromUrl(id.startsWith('sqs:') ? id.slice(4) : id) === gone) movedThere += n;
    const t = this.totals;
    const uncertain = t.possibleDuplicates + this.maybeDelivered;
    throw new QueuescopeError(
      'QUEUE_NOT_FOUND',
      `The target ${gone} does not exist any more (deleted during the run?): the redrive stopped at the first message it could not send there, reading nothing further. So far: ${plural(t.moved, 'message')} moved${movedThere > 0 ? ` (${movedThere} of them to ${gone} before it was deleted: they went with it unless consumed first — the backup holds them)` : ''}; ${plural(t.failed - this.maybeDelivered + t.skipped, 'message')} examined and not moved (they stay in ${this.name}); at most ${plural(uncertain, 'message')} uncertain (may be in both queues); messages not read yet stay in ${this.name}.`,
      { queue: gone, moved: t.moved, movedToDeletedTarget: movedThere, notMoved: t.failed - this.maybeDelivered + t.skipped, uncertain },
    );
  }

  /** Visible + in flight + delayed messages of a queue (GetQueueAttributes); `signal` absent = not abortable. */
  private async depthOf(url: string, signal: AbortSignal | undefined): Promise<number | null> {
    const counts = await this.mover._attributes(url, signal);
    const parts = ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'].map((k) => intAttr(counts, k));
    return parts.every((n) => n === null) ? null : parts.reduce<number>((a, n) => a + (n ?? 0), 0);
  }

  /**
   * When the DLQ has its own RedrivePolicy: measures how many messages its reads moved on to the
   * next queue ({@link movedOn}) and says so in the notes, with how many the dry run found at that
   * limit. SQS never returns a message it moves on (the receive that moves it returns nothing for
   * it), so receive counts cannot count them: the count is the growth of the next queue's visible +
   * in-flight + delayed messages (GetQueueAttributes before the first receive and after the last),
   * less the messages this run itself moved there — exact on the emulators; on AWS the counts are
   * approximate and another producer or consumer of that queue, or another reader of the DLQ,
   * during the run makes it off by as much. When the run made held messages visible again, the
   * count after is read until it holds still ({@link readUntilSteady}: 0.5 s steady, at most 3 s):
   * local-aws-sqs moves a message at the limit on in a timer after that visibility change, so one
   * reading right after it missed them. Never throws.
   */
  private async noteMovedOn(): Promise<void> {
    if (this.ownUnreadable !== null) {
      this.movedOn = { queue: null, maxReceiveCount: null, count: null, measuredBy: `${this.name}'s own RedrivePolicy cannot be read (${this.ownUnreadable}), so neither its limit nor the queue it moves messages to is known` };
      return;
    }
    const own = this.own;
    if (own === null) return;
    if (this.atOwnLimit > 0) {
      this.notes.push(
        `${plural(this.atOwnLimit, 'message')} reached ${this.name}'s own maxReceiveCount (${own.max}) with this dry run's receive: the real run's receive makes SQS move them to ${own.next} instead of to the target (listed as cannot move). Raise ${this.name}'s maxReceiveCount or remove its RedrivePolicy first.`,
      );
    }
    const unknown = (why: string): void => {
      this.movedOn = { queue: own.next, maxReceiveCount: own.max, count: null, measuredBy: why };
    };
    if (own.nextUrl === null || own.nextAtStart === null) {
      unknown(own.unmeasured ?? `the message count of ${own.next} could not be read`);
      return;
    }
    const nextUrl = own.nextUrl;
    let reading: SteadyReading;
    try {
      // Not abortable: a cancelled run still measures what its reads moved on (quick calls).
      // Messages made visible again at the end may still be moving on (local-aws-sqs moves them in
      // a timer after the visibility change returns): read until the count holds still, bounded.
      reading = this.madeVisibleAgain > 0 ? await readUntilSteady(() => this.depthOf(nextUrl, undefined), DEFAULT_STEADY_READ) : { value: await this.depthOf(nextUrl, undefined), readings: 1, spanMs: 0, steady: true };
    } catch (e) {
      unknown(`the message count of ${own.next} could not be read after the last receive (${asQs(e).message})`);
      return;
    }
    const now = reading.value;
    if (now === null) {
      unknown(`GetQueueAttributes on ${own.next} returned no message counts after the last receive`);
      return;
    }
    // A run that redrove messages into the next queue itself (--to it) grew it by those too.
    let movedThere = 0;
    for (const [id, n] of this.movedPerTarget) if (queueNameFromUrl(id.startsWith('sqs:') ? id.slice(4) : id) === own.next) movedThere += n;
    const grew = now - own.nextAtStart - movedThere;
    this.movedOn = {
      queue: own.next,
      maxReceiveCount: own.max,
      count: Math.max(0, grew),
      measuredBy: `measured as the growth of ${own.next}'s visible + in-flight + delayed messages from before the first receive to after the last, ${own.nextAtStart} → ${now}${movedThere > 0 ? `, less the ${movedThere} this run redrove there` : ''}${settleNote(reading)}; SQS returns no trace of a message it moves on, and another producer, consumer or reader of these queues during the run would change it`,
    };
    if (grew > 0) {
      this.notes.push(
        `${own.next} grew by ${plural(grew, 'message')} during this run (${own.nextAtStart} → ${now}): SQS moves a message of ${this.name} already received ${plural(own.max, 'time')} (the maxReceiveCount of its own RedrivePolicy) to ${own.next} when it is received again — by this run or another reader — instead of returning it. They are in ${own.next} now, not lost: redrive ${own.next}, and raise ${this.name}'s maxReceiveCount or remove its RedrivePolicy before redriving ${this.name}.`,
      );
    }
  }

  /** ⌈n/10⌉ long-polled receives ({@link RECEIVE_WAIT_S}) in parallel. Returns 'over-limit' on SQS OverLimit. */
  private async receive(n: number): Promise<Message[] | 'over-limit'> {
    const sizes: number[] = [];
    for (let left = n; left > 0; left -= 10) sizes.push(Math.min(10, left));
    const name = this.name;
    const url = this.url;
    const vt = this.vt;
    try {
      const results = await mapWithConcurrency(sizes, this.mover._options.concurrency, (size) =>
        // No abort signal: a receive withdrawn in flight could hide messages we never get handles for.
        this.mover._send('ReceiveMessage', name, (c) =>
          c.send(
            new ReceiveMessageCommand({
              QueueUrl: url,
              MaxNumberOfMessages: size,
              VisibilityTimeout: vt,
              WaitTimeSeconds: RECEIVE_WAIT_S,
              MessageSystemAttributeNames: ['All'],
              // Deprecated in favour of MessageSystemAttributeNames, but local-aws-sqs reads only this one.
              // eslint-disable-next-line @typescript-eslint/no-deprecated
              AttributeNames: ['All'],
              MessageAttributeNames: ['All'],
            }),
          ),
        ),
      );
      const until = Date.now() + vt * 1000;
      const out: Message[] = [];
      for (const r of results) {
        for (const m of r.Messages ?? []) {
          if (m.MessageId === undefined || m.ReceiptHandle === undefined) continue;
          this.hidden.set(m.MessageId, { handle: m.ReceiptHandle, until });
          out.push(m);
        }
      }
      return out;
    } catch (e) {
      const err = asQs(e);
      if (awsCodeOf(err) === 'OverLimit') return 'over-limit';
      throw err;
    }
  }

  /** Splits a receive into new messages to examine; re-received and newer-than-cutoff ones are held, already-moved ones deleted again. */
  private sortReceived(raw: Message[], limit: number): { fresh: InHand[]; again: Message[]; newlyHeld: number } {
    let newlyHeld = 0;
    const fresh: InHand[] = [];
    const freshIds = new Set<string>();
    const again: Message[] = [];
    for (const m of raw) {
      const id = m.MessageId ?? '';
      if (freshIds.has(id)) continue; // same message twice in one receive round: the later handle is in `hidden`
      if (this.movedIds.has(id)) {
        again.push(m);
        continue;
      }
      // Examined before: held (its newest handle is tracked) or moved (handled above). No separate
      // set of examined ids, so a million-message run keeps only ids it must (moved ones, held ones).
      if (this.held.has(id) || this.carriedIds.has(id)) continue;
      if (receiveTimestampAfter(m, this.o.cutoffMs)) {
        this.held.set(id, 'newer');
        this.newer++;
        newlyHeld++;
        continue;
      }
      if (this.decided + fresh.length >= limit) {
        this.held.set(id, 'over-limit');
        newlyHeld++;
        continue;
      }
      freshIds.add(id);
      const group = m.Attributes?.MessageGroupId;
      if (this.fifo && group !== undefined) this.groupOfReceived.set(id, group);
      fresh.push({ raw: m, message: toQueueMessage(m, { queueId: this.o.sourceQueueId, queueName: this.name, position: this.decided + fresh.length, maxBodyBytes: this.o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES }) });
    }
    return { fresh, again: this.o.dryRun ? [] : again, newlyHeld };
  }

  /** A message this run already moved came back (its delete was lost, or an SQS duplicate): delete it now with the fresh handle. */
  private async deleteAgain(msgs: Message[]): Promise<void> {
    const { deleted } = await this.deleteHandles(msgs.map((m) => ({ id: m.MessageId ?? '', handle: m.ReceiptHandle ?? '' })));
    this.removedAgain += deleted.size;
  }

  private async deleteHandles(items: { id: string; handle: string }[]): Promise<{ deleted: Set<string>; failed: Map<string, ErrorInfo> }> {
    const deleted = new Set<string>();
    const failed = new Map<string, ErrorInfo>();
    const chunks: { id: string; handle: string }[][] = [];
    for (let i = 0; i < items.length; i += SQS_MAX_BATCH_ENTRIES) chunks.push(items.slice(i, i + SQS_MAX_BATCH_ENTRIES));
    const name = this.name;
    const url = this.url;
    await mapWithConcurrency(chunks, this.mover._options.concurrency, async (chunk) => {
      try {
        const r = await this.mover._send('DeleteMessageBatch', name, (c) => c.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: chunk.map((x, j) => ({ Id: `d${j}`, ReceiptHandle: x.handle })) })));
        for (const s of r.Successful ?? []) {
          const x = chunk[Number((s.Id ?? '').slice(1))];
          if (x !== undefined) deleted.add(x.id);
        }
        for (const f of r.Failed ?? []) {
          const x = chunk[Number((f.Id ?? '').slice(1))];
          if (x !== undefined) failed.set(x.id, { code: 'BROKER_ERROR', message: `DeleteMessageBatch on ${name} failed for this message (${f.Code ?? 'error'}: ${f.Message ?? 'no reason'}).` });
        }
        for (const x of chunk) if (!deleted.has(x.id) && !failed.has(x.id)) failed.set(x.id, { code: 'BROKER_ERROR', message: `DeleteMessageBatch on ${name} did not confirm this message.` });
      } catch (e) {
        const err = asQs(e);
        for (const x of chunk) failed.set(x.id, { code: err.code, message: `DeleteMessageBatch on ${name} failed (${err.message}).` });
      }
    });
    for (const id of deleted) this.hidden.delete(id);
    return { deleted, failed };
  }

  private target(queueId: string): Promise<TargetInfo> {
    let t = this.targets.get(queueId);
    if (t === undefined) {
      t = this.mover._targetInfo(queueId, this.signal);
      t.catch(() => undefined);
      this.targets.set(queueId, t);
    }
    return t;
  }

  /** MessageIds of {@link carry}, so a duplicate receive of one is not examined again. */
  private readonly carriedIds = new Set<string>();

  /** Whether a part-filled send to `target` may wait for the next batch (standard DLQ and target, real run, no rate limit: carried moves would leave as a burst). */
  private canCarry(target: TargetInfo): boolean {
    return !this.o.dryRun && this.o.rateLimited !== true && !this.fifo && !target.fifo;
  }

  /**
   * Decides `batch`, backs up its moves, sends them (with the moves carried from earlier batches)
   * and deletes what SQS confirmed. Unless `flush`, the last part-filled SendMessageBatch per
   * target is carried to the next batch instead ({@link carry}); the result reports exactly the
   * messages whose outcome is settled now (`examined` = moved + skipped + failed + possible duplicates).
   * @throws what `beforeMove` rejects with (nothing of this batch is sent; carried moves stay carried).
   */
  private async processBatch(batch: InHand[], flush: boolean): Promise<MoveBatchResult> {
    const result: MoveBatchResult = { examined: 0, moved: [], skipped: [], failed: [], possibleDuplicates: [] };
    const plannedByTarget = new Map<string, Planned[]>();
    this.decided += batch.length;
    const hold = (id: string, reason: HeldReason): void => {
      this.held.set(id, reason);
    };
    const groupOf = new Map<string, string>();
    if (this.fifo) for (const h of batch) if (h.message.meta.messageGroupId != null) groupOf.set(h.message.id, h.message.meta.messageGroupId);
    /** Marks the group of a message that stays, so later messages of the group stay too (FIFO order). */
    const stays = (id: string): void => {
      const g = groupOf.get(id);
      if (g !== undefined) this.stayingGroups.add(g);
    };
    for (const h of batch) {
      const m = h.message;
      const d = this.hooks.decide(m);
      if (d.action === 'skip') {
        result.skipped.push({ id: m.id, reason: d.reason });
        hold(m.id, this.o.dryRun ? 'dry-run' : 'skipped');
        stays(m.id);
        continue;
      }
      // FIFO: a receive can return several messages of one group (AWS: up to 10, in order). Moving
      // one past an earlier message of its group that stays would change the group's order in the
      // target, so it stays too (across receives SQS itself withholds a group while one is held).
      const group = groupOf.get(m.id);
      if (group !== undefined && this.stayingGroups.has(group)) {
        result.failed.push({
          id: m.id,
          error: {
            code: 'INVALID_INPUT',
            message: `Message ${m.id} stays in ${this.name}: an earlier message of its FIFO message group "${group.slice(0, 128)}" stays, and moving this one past it would change the group's order.`,
            details: { messageId: m.id, messageGroupId: group },
          },
        });
        hold(m.id, this.o.dryRun ? 'dry-run' : 'failed');
        continue;
      }
      let target: TargetInfo;
      try {
        target = await this.target(d.targetQueueId);
      } catch (e) {
        if (asQs(e).code === 'QUEUE_NOT_FOUND' && !this.o.dryRun) this.goneTarget ??= queueNameFromUrl(d.targetQueueId.startsWith('sqs:') ? d.targetQueueId.slice(4) : d.targetQueueId);
        result.failed.push({ id: m.id, error: { ...asQs(e).toInfo(), message: `Target ${d.targetQueueId.slice(0, 200)}: ${asQs(e).message}` } });
        hold(m.id, this.o.dryRun ? 'dry-run' : 'failed');
        stays(m.id);
        continue;
      }
      const built = buildSendEntry(m, target, 'e0');
      if ('error' in built) {
        result.failed.push({ id: m.id, error: built.error });
        hold(m.id, this.o.dryRun ? 'dry-run' : 'failed');
        stays(m.id);
        continue;
      }
      // Dry run: a message whose receive count reached the DLQ's own maxReceiveCount is moved on
      // by SQS on its next receive — the real run's too — instead of being returned, so it cannot
      // move to the target (the real run would not even see it).
      const received = m.meta.receiveCount;
      if (this.o.dryRun && this.own !== null && typeof received === 'number' && received >= this.own.max) {
        this.atOwnLimit++;
        result.failed.push({
          id: m.id,
          error: {
            code: 'INVALID_INPUT',
            message: `Message ${m.id} has been received ${plural(received, 'time')} and ${this.name}'s own RedrivePolicy has maxReceiveCount ${this.own.max}: its next receive (the redrive's too) makes SQS move it to ${this.own.next} instead of returning it. Raise ${this.name}'s maxReceiveCount (or remove its RedrivePolicy) before redriving, or redrive ${this.own.next}.`,
            details: { messageId: m.id, receiveCount: received, maxReceiveCount: this.own.max, movedOnTo: this.own.next },
          },
        });
        hold(m.id, 'dry-run');
        stays(m.id);
        continue;
      }
      const list = plannedByTarget.get(d.targetQueueId) ?? [];
      list.push({ ...built, messageId: m.id, targetQueueId: d.targetQueueId, handle: h });
      plannedByTarget.set(d.targetQueueId, list);
    }
    const planned = [...plannedByTarget.values()].flat();
    if (this.o.dryRun) {
      for (const p of planned) {
        result.moved.push({ id: p.messageId, targetQueueId: p.targetQueueId });
        hold(p.messageId, 'dry-run');
      }
      this.add(result, batch.length);
      return result;
    }
    if (planned.length > 0) {
      try {
        await this.hooks.beforeMove(planned.map((p) => p.handle.message));
      } catch (e) {
        for (const p of planned) hold(p.messageId, 'failed');
        this.add(result, batch.length);
        throw e;
      }
    }
    // Carried moves go first (they were read first), then this batch's.
    for (const [targetQueueId, carried] of this.carry) plannedByTarget.set(targetQueueId, [...carried, ...(plannedByTarget.get(targetQueueId) ?? [])]);
    // Settled now: what was not planned, and below every entry sent (confirmed or not).
    let settled = batch.length - planned.length;
    this.carry.clear();
    this.carriedIds.clear();
    const confirmed: Planned[] = [];
    for (const [targetQueueId, list] of plannedByTarget) {
      const target = await this.target(targetQueueId);
      const chunks = chunkEntries(list);
      const last = chunks[chunks.length - 1];
      if (!flush && last !== undefined && last.length < SQS_MAX_BATCH_ENTRIES && this.canCarry(target)) {
        chunks.pop();
        this.carry.set(targetQueueId, last);
        for (const p of last) this.carriedIds.add(p.messageId);
      }
      // FIFO targets: one message per group per call, a group stopping at its first message not accepted.
      const results = target.fifo
        ? [await this.mover.sendInGroupOrder(target, chunks.flat(), this.mover._options.concurrency, `it stays in ${this.name}, behind it`)]
        : await mapWithConcurrency(chunks, this.mover._options.concurrency, (chunk) => this.mover.sendChunk(target, chunk));
      for (const r of results) {
        settled += r.ok.length + r.failed.length;
        confirmed.push(...r.ok);
        for (const f of r.failed) {
          if (f.error.details?.targetGone !== undefined) this.goneTarget ??= target.name;
          if (f.error.details?.maybeDelivered === true) this.maybeDelivered++;
          result.failed.push({ id: f.entry.messageId, error: f.error });
          hold(f.entry.messageId, 'failed');
          stays(f.entry.messageId);
        }
      }
    }
    for (const p of confirmed) this.movedIds.add(p.messageId);
    const handles = confirmed.map((p) => ({ id: p.messageId, handle: this.hidden.get(p.messageId)?.handle ?? p.handle.raw.ReceiptHandle ?? '' }));
    const { deleted, failed } = await this.deleteHandles(handles);
    for (const p of confirmed) {
      if (deleted.has(p.messageId)) {
        result.moved.push({ id: p.messageId, targetQueueId: p.targetQueueId });
        this.movedPerTarget.set(p.targetQueueId, (this.movedPerTarget.get(p.targetQueueId) ?? 0) + 1);
      }
      else {
        result.possibleDuplicates.push({ id: p.messageId, targetQueueId: p.targetQueueId });
        const why = failed.get(p.messageId);
        if (why !== undefined && this.notes.length < 50) this.notes.push(`Message ${p.messageId} reached the target but may still be in ${this.name}: ${why.message}`);
        this.hidden.delete(p.messageId);
      }
    }
    this.add(result, settled);
    return result;
  }

  /** Sets `r.examined` to the messages it settles and adds it to the totals. */
  private add(r: MoveBatchResult, examined: number): void {
    r.examined = examined;
    this.totals.examined += examined;
    this.totals.moved += r.moved.length;
    this.totals.skipped += r.skipped.length;
    this.totals.failed += r.failed.length;
    this.totals.possibleDuplicates += r.possibleDuplicates.length;
  }

  /** Extends the visibility of every hidden message that runs out within half the timeout. */
  private async heartbeat(): Promise<void> {
    const now = Date.now();
    const due = [...this.hidden.entries()].filter(([, h]) => h.until - now < (this.vt * 1000) / 2);
    await this.changeVisibility(due, this.vt);
  }

  /** ChangeMessageVisibilityBatch for `[MessageId, Hidden]` pairs; returns the failures in words. Never throws. */
  private async changeVisibility(items: [string, Hidden][], timeoutS: number): Promise<string[]> {
    const failures: string[] = [];
    const chunks: [string, Hidden][][] = [];
    for (let i = 0; i < items.length; i += SQS_MAX_BATCH_ENTRIES) chunks.push(items.slice(i, i + SQS_MAX_BATCH_ENTRIES));
    const name = this.name;
    const url = this.url;
    try {
      await mapWithConcurrency(chunks, this.mover._options.concurrency, async (chunk) => {
        const until = Date.now() + timeoutS * 1000;
        try {
          const r = await this.mover._send('ChangeMessageVisibilityBatch', name, (c) =>
            c.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: chunk.map(([, h], j) => ({ Id: `v${j}`, ReceiptHandle: h.handle, VisibilityTimeout: timeoutS })) })),
          );
          for (const s of r.Successful ?? []) {
            const x = chunk[Number((s.Id ?? '').slice(1))];
            if (x !== undefined && this.hidden.get(x[0])?.handle === x[1].handle) x[1].until = until;
          }
          for (const f of r.Failed ?? []) {
            const x = chunk[Number((f.Id ?? '').slice(1))];
            failures.push(`message ${x?.[0] ?? '?'}: ${f.Code ?? 'error'}: ${f.Message ?? 'no reason'}`);
          }
        } catch (e) {
          failures.push(`${plural(chunk.length, 'message')}: ${asQs(e).message}`);
        }
      });
    } catch (e) {
      failures.push(asQs(e).message);
    }
    return failures;
  }

  /** Stops the heartbeat and makes every held message visible again. */
  private async finish(): Promise<void> {
    if (this.heartbeatTimer !== null) clearInterval(this.heartbeatTimer);
    if (this.heartbeatRunning !== null) await this.heartbeatRunning;
    const items: [string, Hidden][] = [];
    for (const id of this.held.keys()) {
      const h = this.hidden.get(id);
      if (h !== undefined) items.push([id, h]);
    }
    const failures = await this.changeVisibility(items, 0);
    this.madeVisibleAgain = Math.max(0, items.length - failures.length);
    const counts = new Map<HeldReason, number>();
    for (const r of this.held.values()) counts.set(r, (counts.get(r) ?? 0) + 1);
    const read = this.decided + this.newer + (counts.get('over-limit') ?? 0) + (counts.get('unsent') ?? 0);
    if (read > 0) {
      this.notes.push(
        `Each of the ${plural(read, 'message')} read got ApproximateReceiveCount +1 (SQS has no read without receive; local-aws-sqs also counts each visibility change).`,
      );
    }
    if (items.length > 0) {
      const parts = (['skipped', 'failed', 'dry-run', 'newer', 'over-limit', 'unsent'] as const)
        .filter((k) => (counts.get(k) ?? 0) > 0)
        .map((k) => `${counts.get(k) ?? 0} ${k === 'dry-run' ? 'read in the dry run' : k === 'newer' ? 'sent after the cutoff' : k === 'over-limit' ? 'beyond the limit' : k === 'unsent' ? 'waiting for a full send when the run stopped' : k}`);
      this.notes.push(
        failures.length === 0
          ? `${plural(items.length, 'message')} left in ${this.name} (${parts.join(', ')}) ${items.length === 1 ? 'was' : 'were'} hidden during the run and made visible again at its end.`
          : `${plural(items.length, 'message')} left in ${this.name} (${parts.join(', ')}) ${items.length === 1 ? 'was' : 'were'} hidden during the run; ${failures.length} could not be made visible again and stay hidden for up to ${this.vt} s (${failures.slice(0, 3).join('; ')}).`,
      );
    }
    if (this.newer > 0) this.notes.push(`${plural(this.newer, 'message')} sent after the run started (SentTimestamp after the cutoff) were left alone.`);
    await this.noteMovedOn();
    if (this.removedAgain > 0) this.notes.push(`${plural(this.removedAgain, 'message')} already moved in this run were received again (a lost delete or an SQS duplicate) and removed from ${this.name} then.`);
  }
}
