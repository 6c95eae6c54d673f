import type { Channel, ChannelModel, Message } from 'amqplib';
import { QueuescopeError, toErrorInfo, type ErrorInfo, type QueueKind, type QueueMessage, type QueueSummary } from '../../../shared/domain';
import type {
  ClientMoveOptions,
  MoveBatchResult,
  MoveHooks,
  MoveSummary,
  NativeMoveHandle,
  NativeMoveStatus,
  NativeMoveSupport,
  RedriveDecision,
  RedriveMover,
} from '../redrive-types';
import { DEFAULT_MAX_BODY_BYTES } from './body';
import { cancelledError, channelError, messageOf, throwIfAborted } from './errors';
import { deliveryCount, normaliseXDeath } from './headers';
import { toQueueMessage } from './peek';
import { snapshotLineProblem } from '../../snapshot/format';
import { decodeQueueId, encodeQueueId } from './queue-id';
import { ConfirmPublisher, bodyBytes, copyFingerprint, copyKey, publishOptionsFromJson, publishOutcomeUnknown, republishOptions } from './redrive-publish';
import { lowerLimit, readPolicyDeliveryLimit } from './policy-limit';
import { DlqReader } from './redrive-reader';
import { ShovelMover, type ShovelDeps } from './redrive-shovel';
import type { EffectiveSettings } from './topology';

/** What the RabbitMQ mover needs from its adapter (closures over the adapter's private state). */
export interface RabbitmqRedriveDeps extends ShovelDeps {
  /** The AMQP login: RabbitMQ refuses a publish whose `user-id` property differs from it. */
  username: string;
  /** Opens a NEW AMQP connection (not the adapter's shared one), failures mapped to QueuescopeError. */
  openConnection(signal?: AbortSignal): Promise<ChannelModel>;
  /** Type and effective settings of a queue from the management API; null when it cannot tell. */
  queueInfo(name: string, signal?: AbortSignal): Promise<{ kind: QueueKind; settings: EffectiveSettings; messages: number | null } | null>;
}

/**
 * x-death times are the broker's clock (1 s resolution), the cutoff is ours: a message counts as
 * dead-lettered after the start only when its time is this much (ms) past the cutoff, so a broker
 * clock a little ahead does not stop a run at messages that were there before it. The primary
 * bound is the DLQ's ready count at the start, which needs no clock.
 */
const CLOCK_SKEW_MS = 30_000;

/**
 * Batches whose publishes may await their confirms while the next batch is backed up and published
 * (measured on an idle box: 1 moved ~6k msg/s, 2 and 3 only ~3.4–4.8k; re-measured at 100k filtered
 * persistent messages on a loaded 2-core box, load 9–13: 2 ran at 0.78–1.34× the shovel, 1 at
 * 0.98–1.15× — within the noise, so 1 stays: fewer messages in doubt when a run dies. With
 * READ_AHEAD 2, the loop waits mostly for the previous batch's confirms (median ~300 of ~500 ms
 * per 1,000 at load 7), but depth 2 with READ_AHEAD 3 ran 1557–1893 vs 1389–1721 msg/s over 30k
 * messages at load 7–9.6, three runs each: within the noise again).
 */
const COMMIT_DEPTH = 1;

/**
 * Batches read ahead of the one being decided: the next read starts as soon as the previous one
 * completed (reads stay one after the other, so batches keep the DLQ's order) until this many wait
 * to be decided. With 1 (the read ahead started when a batch was taken) reads waited for the
 * previous batch's commit, and the broker sat idle on a loaded box while the client decided, backed
 * up, published and waited for confirms: 100k filtered persistent messages ran at 0.71–1.03× the
 * shovel, with 2 at 1.13–1.80× (load 6–7.7, alternating runs). Unacked on the DLQ at most:
 * (READ_AHEAD + 1 + COMMIT_DEPTH) batches. The `gate` hook runs when a read starts, so a pause or
 * rate limit takes effect up to READ_AHEAD batches later (the rate over the run is unchanged).
 */
const READ_AHEAD = 2;

/**
 * After a run, requeued messages are waited for until the DLQ counts them all again (requeues
 * apply asynchronously, one nack at a time): while the count keeps rising, up to
 * {@link SETTLE_MAX_MS}; once it stops rising for this long (ms), no longer (someone else may be
 * consuming them). A fixed 2 s was too short after a dry run of 10,000 persistent messages: the
 * run that followed started with ~4,000 counted, moved those and stopped ("held by a reader"),
 * exit 0, the rest still in the DLQ (CI, 7 of 10 fault trials).
 */
const SETTLE_MS = 2_000;
/** Longest wait (ms) for requeued messages to be counted again (see {@link SETTLE_MS}). */
const SETTLE_MAX_MS = 60_000;

/** One examined message of a batch and what happens to it. */
interface Item {
  m: Message;
  qm: QueueMessage;
  decision: RedriveDecision;
  /** Target queue name for a move that passed the checks. */
  target: string | null;
  /** Why a selected move cannot be attempted (bad target, body cut, user-id): reported failed, kept in the DLQ. */
  refused: ErrorInfo | null;
}

/** What the run does with a message it must leave in the DLQ. */
type KeepHow = 'copy-to-tail' | 'hold';

function validateMoveOptions(o: ClientMoveOptions): { batch: number; maxBodyBytes: number } {
  if (!Number.isInteger(o.batchSize) || o.batchSize < 1 || o.batchSize > 1000) throw new QueuescopeError('INVALID_INPUT', `batchSize must be a whole number from 1 to 1,000, got ${String(o.batchSize)}.`);
  if (typeof o.cutoffMs !== 'number' || !Number.isFinite(o.cutoffMs)) throw new QueuescopeError('INVALID_INPUT', 'cutoffMs must be a time in ms since the epoch.');
  if (o.maxMessages !== null && (!Number.isSafeInteger(o.maxMessages) || o.maxMessages < 0)) throw new QueuescopeError('INVALID_INPUT', `maxMessages must be null or a whole number ≥ 0, got ${String(o.maxMessages)}.`);
  const maxBodyBytes = o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 0) throw new QueuescopeError('INVALID_INPUT', `maxBodyBytes must be a whole number of bytes ≥ 0, got ${String(maxBodyBytes)}.`);
  if (o.state !== undefined && o.state !== 'ready') throw new QueuescopeError('INVALID_INPUT', `RabbitMQ DLQs are redriven from their one state ("ready"), got state ${JSON.stringify(o.state).slice(0, 60)}.`);
  return { batch: o.batchSize, maxBodyBytes };
}

/**
 * DLQ redrive for RabbitMQ (classic and quorum DLQs; streams are refused), see {@link RedriveMover}.
 *
 * Client-side moves ({@link moveClientSide}) use two dedicated AMQP connections: a consumer channel
 * reading the DLQ with manual acks (per batch: `basic.qos(batchSize)` and a fresh consumer, see
 * {@link DlqReader}), and a confirm channel publishing through the default exchange with
 * `mandatory` (see {@link ConfirmPublisher}). A message is acked on the DLQ only after the broker
 * confirmed its copy. Reads run up to two batches ahead of the decisions (see READ_AHEAD), so the
 * broker delivers while earlier batches are decided, backed up, published and confirmed; batches
 * read but not yet decided when the run stops (cutoff, own copies, cancel, failure) are not
 * examined and go back to the DLQ.
 *
 * Messages that stay in the DLQ (skipped by the engine, failed, or refused) are copied to the DLQ's
 * tail (same body, properties and headers, confirmed) and then acked at the head — not requeued,
 * because a requeued message returns to the head where the run would read it again, a quorum
 * queue counts the requeue as a delivery (`x-delivery-count`) and dead-letters it at the delivery
 * limit, and holding them unacked until the end would be closed by the broker's
 * `consumer_timeout` (30 min by default) on long, rate-limited runs. Consequences (also returned by
 * {@link clientMoveSideEffects}): the DLQ's order changes (kept messages end up behind those that
 * arrived during the run); a quorum DLQ's delivery count of a kept message restarts at 0; a
 * per-queue message TTL of the DLQ restarts; a crash between the copy's confirm and the ack leaves a
 * kept message twice in the DLQ. A run recognises its own copies (fingerprint of body, properties
 * and headers) and stops when it reaches them.
 *
 * A dry run holds every message it reads unacknowledged and requeues them all at the end, so the
 * order is kept; they come back with `redelivered` set, and on quorum DLQs `x-delivery-count` +1.
 * On a quorum DLQ with a delivery limit, a message whose next requeue would exceed the limit is
 * copied to the tail instead (a requeue would dead-letter it onward, or drop it without a DLX); the
 * limit is the lower of the queue's management record and its policy definitions (see
 * `readPolicyDeliveryLimit` in policy-limit.ts). Reading therefore moves nothing on, so the mover has no
 * `readMovesMessagesOn` (measured on 3.10: argument and policy limits, DLX to a further queue).
 */
export class RabbitmqRedriveMover implements RedriveMover {
  private readonly shovels: ShovelMover;

  constructor(private readonly d: RabbitmqRedriveDeps) {
    this.shovels = new ShovelMover(d);
  }

  /**
   * The queue a dead-lettered message came from: the most recent `x-death` entry's queue
   * (x-death is ordered most recent first, https://www.rabbitmq.com/docs/dlx#effects), skipping
   * entries naming the DLQ itself; else `x-first-death-queue`. Null when neither is present (the
   * message was published to the DLQ directly).
   */
  resolveTarget(message: QueueMessage, dlq: QueueSummary): { queueId: string; via: string } | null {
    const deaths = message.meta.xDeath ?? [];
    for (let i = 0; i < deaths.length; i++) {
      const q = deaths[i]?.queue ?? '';
      if (q !== '' && q !== dlq.name) return { queueId: encodeQueueId({ vhost: this.d.vhost, name: q }), via: `x-death[${i}] queue '${q}'` };
    }
    const first = message.meta.firstDeathQueue ?? null;
    if (first !== null && first !== '' && first !== dlq.name) return { queueId: encodeQueueId({ vhost: this.d.vhost, name: first }), via: `x-first-death-queue '${first}'` };
    return null;
  }

  /**
   * The side effects a client-side run (or dry run) has on `dlq`, in sentences for the plan / dry
   * run output. Pure: reads only `dlq.kind` and `dlq.config`.
   */
  clientMoveSideEffects(dlq: QueueSummary, dryRun: boolean): string[] {
    const quorum = dlq.kind === 'rabbitmq-quorum';
    const limit = quorum ? deliveryLimitOf(dlq) : null;
    if (dryRun) {
      return [
        'Every message examined is held unacknowledged while the dry run lasts and requeued at the end, in its original order; nothing is published or removed.',
        'Requeued messages come back with the redelivered flag set.',
        ...(quorum ? ['This is a quorum queue: each message examined counts one delivery (x-delivery-count +1).'] : []),
        ...(limit !== null ? [`Messages already at the delivery limit (${limit}) would be dead-lettered by a requeue, so they are copied to the end of the DLQ instead (their delivery count restarts at 0).`] : []),
        'A dry run longer than the broker\'s consumer_timeout (30 min by default) is ended by the broker; held messages are then requeued by RabbitMQ.',
      ];
    }
    return [
      'Moved messages are published to the target through the default exchange (routing key = queue name) and removed from the DLQ only after RabbitMQ confirmed them; a crash in between can leave a copy in both queues.',
      'Messages that stay (not selected, non-retryable, failed) are copied to the end of the DLQ and removed from the head: their body, properties and headers are kept, but the DLQ\'s order changes (they end up behind messages that arrived during the run) and a crash between copy and removal can leave one twice in the DLQ.',
      ...(quorum ? ['This is a quorum queue: the copies of messages that stay start with a delivery count of 0.'] : []),
      ...(typeof dlq.config.messageTtlMs === 'number' ? ['The DLQ has a message TTL: it restarts for the messages that stay.'] : []),
      'Headers x-delivery-count, CC and BCC are not copied; x-death and x-first-death-* are.',
    ];
  }

  // ------------------------------------------------------------------ client-side move

  /**
   * See {@link RedriveMover.moveClientSide} and the class comment. Reads at most
   * `min(maxMessages, ready messages at the start)`; also stops at a message whose most recent
   * `x-death` time is more than 30 s after `cutoffMs` (broker clock, 1 s resolution) or at one of the run's
   * own copies. In a dry run, `onBatch` reports the moves that WOULD happen in `moved`. After a
   * cancel, batches already read are not examined (they go back to the DLQ).
   * @throws QueuescopeError `INVALID_INPUT` (options, queue id), `QUEUE_NOT_FOUND`, `UNSUPPORTED`
   *   (stream DLQ), `CANCELLED`, connection codes; a failure after messages were examined is thrown
   *   after `onBatch` reported that batch's exact outcome.
   */
  async moveClientSide(options: ClientMoveOptions, hooks: MoveHooks, signal?: AbortSignal): Promise<MoveSummary> {
    const { batch, maxBodyBytes } = validateMoveOptions(options);
    const dlq = this.d.queueRef(options.sourceQueueId);
    throwIfAborted(signal);
    const info = await this.d.queueInfo(dlq, signal);
    if (info?.kind === 'rabbitmq-stream') {
      throw new QueuescopeError('UNSUPPORTED', `Queue '${dlq}' is a stream: reading a stream does not remove messages, so it cannot be redriven message by message. Use a dynamic shovel or choose a classic or quorum DLQ.`, { queue: dlq });
    }
    const kind: QueueKind | null = info?.kind ?? null;
    const deliveryLimit = kind === 'rabbitmq-quorum' ? lowerLimit(info?.settings.deliveryLimit?.value ?? null, await readPolicyDeliveryLimit(this.d.mgmt, this.d.vhost, dlq, signal)) : null;
    const singleActiveConsumer = info?.settings.singleActiveConsumer === true;
    const run = new ClientRun(this.d, dlq, options, hooks, signal, { batch, maxBodyBytes, kind, deliveryLimit, singleActiveConsumer });
    return run.execute();
  }

  // ------------------------------------------------------------------ native move (dynamic shovel)

  /** See {@link ShovelMover.support}. */
  nativeMove(dlq: QueueSummary, targetQueueId: string | null, signal?: AbortSignal): Promise<NativeMoveSupport> {
    return this.shovels.support(dlq, targetQueueId, signal);
  }

  /** See {@link ShovelMover.start}. */
  startNativeMove(dlq: QueueSummary, targetQueueId: string | null, ratePerSecond: number | null, signal?: AbortSignal, maxMessages?: number): Promise<NativeMoveHandle> {
    return this.shovels.start(dlq, targetQueueId, ratePerSecond, signal, maxMessages);
  }

  /** See {@link ShovelMover.status}. */
  nativeMoveStatus(handle: NativeMoveHandle, signal?: AbortSignal): Promise<NativeMoveStatus> {
    return this.shovels.status(handle, signal);
  }

  /** See {@link ShovelMover.cancel}. */
  cancelNativeMove(handle: NativeMoveHandle, signal?: AbortSignal): Promise<void> {
    return this.shovels.cancel(handle, signal);
  }

  // ------------------------------------------------------------------ re-inject

  /**
   * Publishes JSON messages (from a snapshot) to `targetQueueId` through the default exchange,
   * confirmed and mandatory, on a dedicated connection; see {@link publishOptionsFromJson} for what
   * is restored. A message whose body was cut when read (`body.truncated`) is never published.
   * @throws QueuescopeError INVALID_INPUT (queue id), CANCELLED (before publishing; publishes in
   *   flight are still reported), connection codes when no connection can be opened.
   */
  async publish(targetQueueId: string, messages: readonly QueueMessage[], signal?: AbortSignal): Promise<{ published: string[]; failed: { id: string; error: ErrorInfo }[] }> {
    const queue = this.d.queueRef(targetQueueId);
    throwIfAborted(signal);
    const published: string[] = [];
    const failed: { id: string; error: ErrorInfo }[] = [];
    if (messages.length === 0) return { published, failed };
    const conn = await this.d.openConnection(signal);
    try {
      const ch = await conn.createConfirmChannel();
      const pub = new ConfirmPublisher(ch, this.d.vhost);
      const inFlight: { id: string; confirmed: Promise<void> }[] = [];
      for (const m of messages) {
        if (signal?.aborted === true) break;
        if (m.body.truncated) {
          failed.push({ id: m.id, error: { code: 'INVALID_INPUT', message: `Message ${m.id.slice(0, 80)} has a cut body (${m.body.sizeBytes} bytes in full): it is never published partly.` } });
          continue;
        }
        let opts;
        try {
          opts = publishOptionsFromJson(m);
        } catch (e) {
          failed.push({ id: m.id, error: toErrorInfo(e) });
          continue;
        }
        if (opts.userId !== undefined && opts.userId !== this.d.username) {
          failed.push({ id: m.id, error: userIdError(opts.userId, this.d.username) });
          continue;
        }
        const { confirmed } = await pub.publish(queue, bodyBytes(m), opts);
        inFlight.push({ id: m.id, confirmed });
      }
      const settled = await Promise.allSettled(inFlight.map((x) => x.confirmed));
      settled.forEach((r, i) => {
        const id = inFlight[i]?.id ?? '';
        if (r.status === 'fulfilled') published.push(id);
        else failed.push({ id, error: toErrorInfo(r.reason) });
      });
      await ch.close().catch(() => undefined);
    } finally {
      await conn.close().catch(() => undefined);
    }
    if (signal?.aborted === true && published.length + failed.length < messages.length) {
      for (const m of messages.slice(published.length + failed.length)) failed.push({ id: m.id, error: cancelledError().toInfo() });
    }
    return { published, failed };
  }
}

function deliveryLimitOf(dlq: QueueSummary): number | null {
  const v = (dlq.config as Record<string, unknown> | null | undefined)?.deliveryLimit;
  if (typeof v === 'number') return v;
  if (v !== null && typeof v === 'object' && typeof (v as { value?: unknown }).value === 'number') return (v as { value: number }).value;
  return null;
}

function userIdError(userId: string, login: string): ErrorInfo {
  return {
    code: 'PERMISSION_DENIED',
    message: `The message carries user-id '${userId.slice(0, 80)}', but RabbitMQ only accepts a user-id equal to the publishing user ('${login}'; https://www.rabbitmq.com/docs/validated-user-id): it is left in the DLQ.`,
  };
}

/** Two turns of the event loop: enough for amqplib's muxer (a setImmediate) to write frames queued now. */
async function letFramesOut(): Promise<void> {
  await new Promise<void>((r) => setImmediate(r));
  await new Promise<void>((r) => setImmediate(r));
}

/** One client-side run (state for {@link RabbitmqRedriveMover.moveClientSide}). */
class ClientRun {
  private reader!: DlqReader;
  private consumerCh: Channel | null = null;
  private consumerConn: ChannelModel | null = null;
  private pub: ConfirmPublisher | null = null;
  /** Deliveries kept unacked until the end of the run, then requeued: only their delivery tags (a dry run of 1M messages must not keep 1M bodies). */
  private readonly held: Message[] = [];

  private hold(m: Message): void {
    this.held.push({ fields: { deliveryTag: m.fields.deliveryTag } } as unknown as Message);
  }
  /** Fingerprints of the copies this run put at the DLQ's tail. */
  private readonly copies = new Set<number>();
  /** Their cheap keys ({@link copyKey}): a message whose key is not here is not a copy. */
  private readonly copyKeys = new Set<number>();
  /** Decoded move targets by queue id ({@link targetOf}). */
  private readonly targets = new Map<string, string | ErrorInfo>();
  private readonly totals = { examined: 0, moved: 0, skipped: 0, failed: 0, possibleDuplicates: 0 };
  private stopAt: 'cutoff' | null = null;

  constructor(
    private readonly d: RabbitmqRedriveDeps,
    private readonly dlq: string,
    private readonly o: ClientMoveOptions,
    private readonly hooks: MoveHooks,
    private readonly signal: AbortSignal | undefined,
    private readonly cfg: { batch: number; maxBodyBytes: number; kind: QueueKind | null; deliveryLimit: number | null; singleActiveConsumer: boolean },
  ) {}

  async execute(): Promise<MoveSummary> {
    const conns: ChannelModel[] = [];
    try {
      const consumerConn = await this.d.openConnection(this.signal);
      conns.push(consumerConn);
      this.consumerConn = consumerConn;
      const publisherConn = await this.d.openConnection(this.signal);
      conns.push(publisherConn);
      this.consumerCh = await consumerConn.createChannel();
      this.reader = new DlqReader(this.consumerCh, this.dlq, this.d.vhost, this.cfg.singleActiveConsumer);
      let depth: number;
      try {
        depth = (await this.consumerCh.checkQueue(this.dlq)).messageCount;
      } catch (e) {
        throw channelError(e, this.dlq, this.d.vhost);
      }
      const pch = await publisherConn.createConfirmChannel();
      this.pub = new ConfirmPublisher(pch, this.d.vhost);
      return await this.loop(depth);
    } finally {
      await this.release();
      for (const c of conns) await c.close().catch(() => undefined);
    }
  }

  private async loop(depth: number): Promise<MoveSummary> {
    const limitByUser = this.o.maxMessages !== null && this.o.maxMessages <= depth;
    const max = Math.min(this.o.maxMessages ?? depth, depth);
    let fatal: unknown = null;
    // Reads started and not yet taken for deciding, in DLQ order (see READ_AHEAD). Reads run one
    // after the other, each started when the previous one completed (a freed slot starts one too),
    // so the broker delivers while earlier batches are decided, backed up, published and confirmed.
    const ahead: Promise<Message[]>[] = [];
    // Changed by read callbacks: an object, so the compiler does not narrow its fields.
    const r = { read: 0, reading: false, failed: false, stop: false, exhausted: false, started: 0 };
    const pump = (): void => {
      if (r.reading || r.failed || r.exhausted || r.stop || ahead.length >= READ_AHEAD) return;
      if (this.stopAt !== null || r.read >= max || this.signal?.aborted === true || this.pub?.closed() !== null || !this.reader.isOpen()) return;
      const n = Math.min(this.cfg.batch, max - r.read);
      r.reading = true;
      r.started++;
      const p = (async () => {
        await this.hooks.gate(n);
        throwIfAborted(this.signal);
        return this.reader.read(n);
      })();
      ahead.push(p);
      p.then(
        (msgs) => {
          r.reading = false;
          r.read += msgs.length;
          if (msgs.length === 0) r.exhausted = true;
          pump();
        },
        () => {
          r.reading = false;
          r.failed = true;
        },
      );
    };
    if (max > 0) pump();
    let framesOutAt = 0;
    const commits: Promise<void>[] = [];
    let commitFailure: unknown = null;
    for (let next = ahead.shift(); next !== undefined; next = ahead.shift()) {
      let msgs: Message[];
      try {
        msgs = await next;
      } catch (e) {
        fatal ??= e;
        break;
      }
      if (msgs.length === 0) break;
      pump();
      // A read just started: let its consume out to the socket (amqplib writes frames from a
      // setImmediate) before the synchronous decisions, so the broker delivers while they run.
      if (r.started !== framesOutAt) {
        framesOutAt = r.started;
        await letFramesOut();
      }
      // After a cancel, batches already read are not examined: they go back (see `process`).
      const { items, unexamined } = this.classify(msgs, this.signal?.aborted === true);
      let commit: (() => Promise<void>) | null = null;
      try {
        commit = await this.process(items, unexamined);
      } catch (e) {
        fatal = e;
      }
      // Commits run one after the other (onBatch in batch order; a batch's acks after the previous
      // batch settled), while up to COMMIT_DEPTH batches wait for their confirms.
      if (commit !== null) {
        const run = commit;
        const prev = commits[commits.length - 1] ?? Promise.resolve();
        const p = prev.then(run).catch((e: unknown) => {
          commitFailure ??= e;
        });
        commits.push(p);
      }
      while (commits.length > (fatal === null ? COMMIT_DEPTH : 0)) await commits.shift();
      if (commitFailure !== null) fatal ??= commitFailure;
      if (fatal !== null) break;
    }
    r.stop = true;
    while (commits.length > 0) await commits.shift();
    if (commitFailure !== null) fatal ??= commitFailure;
    // A failure while reads ahead were in progress: what they got stays in the DLQ.
    for (let next = ahead.shift(); next !== undefined; next = ahead.shift()) {
      const extra = await next.catch(() => [] as Message[]);
      for (const m of extra) this.hold(m);
    }
    if (fatal !== null) throw fatal instanceof QueuescopeError ? fatal : new QueuescopeError('BROKER_ERROR', `The redrive stopped: ${messageOf(fatal)}`);
    throwIfAborted(this.signal);
    const stoppedBecause: MoveSummary['stoppedBecause'] = this.stopAt ?? (r.exhausted || max === 0 && depth === 0 ? 'exhausted' : limitByUser ? 'max-messages' : 'cutoff');
    return { ...this.totals, stoppedBecause };
  }

  /** Decides each message of a batch, stopping at the cutoff or at the run's own copies; none when `cancelled`. */
  private classify(msgs: Message[], cancelled: boolean): { items: Item[]; unexamined: Message[] } {
    const items: Item[] = [];
    const unexamined: Message[] = [];
    for (const m of msgs) {
      if (this.stopAt !== null || cancelled) {
        unexamined.push(m);
        continue;
      }
      const headers = (m.properties.headers ?? {}) as Record<string, unknown>;
      const deathTime = normaliseXDeath(headers['x-death'])[0]?.time ?? null;
      if ((deathTime !== null && deathTime > this.o.cutoffMs + CLOCK_SKEW_MS) || this.isOwnCopy(m)) {
        this.stopAt = 'cutoff';
        unexamined.push(m);
        continue;
      }
      const qm = toQueueMessage(m, this.totals.examined + items.length, this.o.sourceQueueId, this.dlq, this.cfg.kind, this.cfg.maxBodyBytes);
      const decision = this.hooks.decide(qm);
      const item: Item = { m, qm, decision, target: null, refused: null };
      if (decision.action === 'move') {
        const t = this.targetOf(decision.targetQueueId);
        if (typeof t === 'string') item.target = t;
        else item.refused = t;
        if (item.refused === null && m.content.length > this.cfg.maxBodyBytes) {
          item.refused = { code: 'INVALID_INPUT', message: `The body (${m.content.length} bytes) is larger than the ${this.cfg.maxBodyBytes}-byte read limit: it is not moved.` };
        }
        const unwritable = item.refused === null ? snapshotLineProblem(qm) : null;
        if (unwritable !== null) item.refused = { code: 'INVALID_INPUT', message: `It is not moved: ${unwritable}.` };
        const userId = m.properties.userId as unknown;
        if (item.refused === null && typeof userId === 'string' && userId !== this.d.username) item.refused = userIdError(userId, this.d.username);
        if (item.refused !== null) item.target = null;
      }
      items.push(item);
    }
    return { items, unexamined };
  }

  /** A target queue id → its queue name in this vhost, or why it cannot be a target (decoded once per id). */
  private targetOf(queueId: string): string | ErrorInfo {
    let t = this.targets.get(queueId);
    if (t === undefined) {
      try {
        const ref = decodeQueueId(queueId);
        t = ref.vhost !== this.d.vhost ? { code: 'INVALID_INPUT', message: `Target ${queueId.slice(0, 120)} is in vhost '${ref.vhost}', not in this connection's vhost '${this.d.vhost}'.` } : ref.name;
      } catch (e) {
        t = toErrorInfo(e);
      }
      if (this.targets.size < 10_000) this.targets.set(queueId, t);
    }
    return t;
  }

  /**
   * Is `m` one of this run's copies at the DLQ's tail? The fingerprint (a SHA-1 over body,
   * properties and headers) is computed only for a message whose cheap key (body length,
   * message id, timestamp) matches a copy's, so a run with distinct message ids hashes only what it copies.
   */
  private isOwnCopy(m: Message): boolean {
    if (this.copies.size === 0 || !this.copyKeys.has(copyKey(m))) return false;
    return this.copies.has(copyFingerprint(m));
  }

  /** Would requeueing this delivery dead-letter it (quorum DLQ at its delivery limit)? */
  private requeueWouldDeadLetter(m: Message): boolean {
    if (this.cfg.deliveryLimit === null) return false;
    return (deliveryCount(m.properties.headers) ?? 0) >= this.cfg.deliveryLimit;
  }

  private keepHow(m: Message, dry: boolean): KeepHow {
    if (!dry) return 'copy-to-tail';
    return this.requeueWouldDeadLetter(m) ? 'copy-to-tail' : 'hold';
  }

  /** Publishes a copy of `m` to the DLQ's tail (no redrive count). */
  private async copyToTail(m: Message): Promise<{ confirmed: Promise<void> }> {
    this.copies.add(copyFingerprint(m));
    this.copyKeys.add(copyKey(m));
    if (this.pub === null) throw new QueuescopeError('INTERNAL', 'publisher missing');
    return this.pub.publish(this.dlq, m.content, republishOptions(m, false));
  }

  /**
   * Runs one batch in two stages so consecutive batches overlap: this call (stage A) runs the
   * backup hook and puts every publish in flight; the returned function (stage B) awaits the
   * confirms, copies failed moves to the tail, acks, proves the acks and reports the batch. The
   * caller runs stage B of batch k before stage B of batch k+1, so `onBatch` keeps batch order.
   * @throws when the backup hook rejects (nothing of the batch is published; it stays in the DLQ).
   */
  private async process(items: Item[], unexamined: Message[]): Promise<() => Promise<void>> {
    const dry = this.o.dryRun;
    const result: MoveBatchResult = { examined: items.length, moved: [], skipped: [], failed: [], possibleDuplicates: [] };
    const toAck: Message[] = [];
    const acked: { kind: 'moved' | 'kept'; item: Item }[] = [];
    const moves = items.filter((i) => i.decision.action === 'move' && i.target !== null);
    let fatal: Error | null = null;

    // Messages not examined (cutoff / own copies) go back unchanged.
    const unexaminedCopies: { m: Message; confirmed: Promise<void> }[] = [];
    for (const m of unexamined) {
      if (this.requeueWouldDeadLetter(m) && this.pub?.closed() === null) unexaminedCopies.push({ m, ...(await this.copyToTail(m)) });
      else this.hold(m);
    }
    const settleUnexamined = async (): Promise<void> => {
      for (const c of unexaminedCopies) {
        try {
          await c.confirmed;
          toAck.push(c.m);
        } catch {
          this.hold(c.m);
        }
      }
    };

    let confirmStage: () => Promise<void>;
    if (dry) {
      const copies: { item: Item; confirmed: Promise<void> }[] = [];
      for (const it of items) {
        if (this.keepHow(it.m, true) === 'hold' || this.pub?.closed() !== null) this.hold(it.m);
        else copies.push({ item: it, ...(await this.copyToTail(it.m)) });
        this.report(result, it, it.decision.action === 'move' && it.target !== null ? 'moved' : 'kept');
      }
      confirmStage = async () => {
        const settled = await Promise.allSettled(copies.map((c) => c.confirmed));
        settled.forEach((r, i) => {
          const c = copies[i];
          if (!c) return;
          if (r.status === 'fulfilled') toAck.push(c.item.m);
          else this.hold(c.item.m);
        });
      };
    } else {
      if (moves.length > 0) {
        try {
          await this.hooks.beforeMove(moves.map((i) => i.qm));
        } catch (e) {
          // Nothing of this batch is published: everything stays (requeued at the end), and the run fails.
          for (const it of items) this.hold(it.m);
          await settleUnexamined();
          this.ackAll(toAck);
          throw e;
        }
      }
      // Phase 1: moves to their targets, kept messages to the DLQ's tail — all in flight together.
      const flights: { item: Item; to: 'target' | 'tail'; confirmed: Promise<void> }[] = [];
      for (const it of items) {
        if (it.target !== null) flights.push({ item: it, to: 'target', ...(await this.pubOrThrow().publish(it.target, it.m.content, republishOptions(it.m, true))) });
        else flights.push({ item: it, to: 'tail', ...(await this.copyToTail(it.m)) });
      }
      confirmStage = async () => {
        const settled = await Promise.allSettled(flights.map((f) => f.confirmed));
        // Phase 2: a move that failed keeps its message: copy it to the tail too.
        const retries: { item: Item; error: ErrorInfo; confirmed: Promise<void> }[] = [];
        for (let i = 0; i < flights.length; i++) {
          const f = flights[i];
          const r = settled[i];
          if (!f || !r) continue;
          if (r.status === 'fulfilled') {
            toAck.push(f.item.m);
            acked.push({ kind: f.to === 'target' ? 'moved' : 'kept', item: f.item });
            continue;
          }
          const error = toErrorInfo(r.reason);
          if (f.to === 'target' && publishOutcomeUnknown(r.reason)) {
            // Written, then the channel closed before the confirm: the broker may have enqueued it.
            // It stays in the DLQ (requeued), so it is never lost, but it may also be in the target.
            this.hold(f.item.m);
            result.possibleDuplicates.push({ id: f.item.qm.id, targetQueueId: f.item.decision.action === 'move' ? f.item.decision.targetQueueId : '' });
            continue;
          }
          if (f.to === 'target' && this.pub?.closed() === null) {
            retries.push({ item: f.item, error, ...(await this.copyToTail(f.item.m)) });
          } else {
            this.hold(f.item.m);
            if (f.to === 'target') result.failed.push({ id: f.item.qm.id, error });
            else this.report(result, f.item, 'kept');
          }
        }
        const retried = await Promise.allSettled(retries.map((x) => x.confirmed));
        retries.forEach((x, i) => {
          if (retried[i]?.status === 'fulfilled') toAck.push(x.item.m);
          else this.hold(x.item.m);
          result.failed.push({ id: x.item.qm.id, error: x.error });
        });
        const gone = this.pub?.closed() ?? null;
        if (gone !== null) fatal ??= gone;
      };
    }

    return async () => {
      await confirmStage();
      await settleUnexamined();
      // Remove what is confirmed elsewhere, and prove the broker got the acks (a later synchronous
      // reply on the same channel comes after them).
      const ackedOk = this.ackAll(toAck, items.length + unexamined.length) && (await this.syncAcks());
      for (const a of acked) {
        const it = a.item;
        if (a.kind === 'moved' && it.decision.action === 'move') {
          if (ackedOk) result.moved.push({ id: it.qm.id, targetQueueId: it.decision.targetQueueId });
          else result.possibleDuplicates.push({ id: it.qm.id, targetQueueId: it.decision.targetQueueId });
        } else this.report(result, it, 'kept');
      }
      if (!ackedOk) fatal ??= this.reader.error();
      this.totals.examined += result.examined;
      this.totals.moved += result.moved.length;
      this.totals.skipped += result.skipped.length;
      this.totals.failed += result.failed.length;
      this.totals.possibleDuplicates += result.possibleDuplicates.length;
      this.hooks.onBatch(result);
      if (fatal !== null) throw fatal;
    };
  }

  private pubOrThrow(): ConfirmPublisher {
    if (this.pub === null) throw new QueuescopeError('INTERNAL', 'publisher missing');
    return this.pub;
  }

  /** Adds a kept (or, in a dry run, would-move) item to the batch result. */
  private report(result: MoveBatchResult, it: Item, as: 'moved' | 'kept'): void {
    if (as === 'moved' && it.decision.action === 'move') result.moved.push({ id: it.qm.id, targetQueueId: it.decision.targetQueueId });
    else if (it.refused !== null) result.failed.push({ id: it.qm.id, error: it.refused });
    else result.skipped.push({ id: it.qm.id, reason: it.decision.action === 'skip' ? it.decision.reason : 'not moved' });
  }

  /** Acks deliveries on the consumer channel; false when the channel is gone (the broker requeues them). */
  private ackAll(ms: Message[], batchSize = -1): boolean {
    if (ms.length === 0) return true;
    const ch = this.consumerCh;
    if (!this.reader.isOpen() || ch === null) return false;
    try {
      // The whole batch goes: one basic.ack with multiple=true up to its highest delivery tag, when
      // no delivery kept unacked for the end of the run has a lower tag (later batches have higher
      // tags, and earlier batches are settled before this one). Saves the broker 999 of 1,000 frames.
      let last = ms[0];
      for (const m of ms) if (last === undefined || m.fields.deliveryTag > last.fields.deliveryTag) last = m;
      const top = last?.fields.deliveryTag ?? 0;
      if (last !== undefined && ms.length === batchSize && this.held.every((h) => h.fields.deliveryTag > top)) {
        ch.ack(last, true);
        return true;
      }
      for (const m of ms) ch.ack(m);
      return true;
    } catch {
      return false;
    }
  }

  /** A synchronous round trip on the consumer channel after its acks. */
  private async syncAcks(): Promise<boolean> {
    if (!this.reader.isOpen()) return false;
    try {
      if (this.consumerCh === null) return false;
      await this.consumerCh.checkQueue(this.dlq);
      return true;
    } catch {
      return false;
    }
  }

  /** Requeues held deliveries (in delivery order), closes the consumer channel, and waits until the DLQ counts them again (see {@link SETTLE_MS}). */
  private async release(): Promise<void> {
    const cch = this.consumerCh;
    if (cch === null) return;
    const held = this.held.length;
    if (this.reader.isOpen() && held > 0) {
      try {
        this.held.sort((a, b) => a.fields.deliveryTag - b.fields.deliveryTag);
        for (const m of this.held) cch.nack(m, false, true);
      } catch {
        /* channel closed: the broker requeues every unacked message itself */
      }
    }
    const wasOpen = this.reader.isOpen();
    await cch.close().catch(() => undefined);
    if (held === 0 || !wasOpen || this.consumerConn === null) return;
    let ch: Channel | null = null;
    try {
      ch = await this.consumerConn.createChannel();
      ch.on('error', () => undefined);
      const started = Date.now();
      let last = -1;
      let lastRise = started;
      for (;;) {
        const counted = (await ch.checkQueue(this.dlq)).messageCount;
        if (counted >= held) return;
        const now = Date.now();
        if (counted > last) {
          last = counted;
          lastRise = now;
        } else if (now - lastRise >= SETTLE_MS) return;
        if (now - started >= SETTLE_MAX_MS) return;
        await new Promise((r) => setTimeout(r, 20));
      }
    } catch {
      /* queue or connection gone: nothing to wait for */
    } finally {
      await ch?.close().catch(() => undefined);
    }
  }
}
