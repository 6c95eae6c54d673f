import { randomBytes } from 'node:crypto';
import { QueuescopeError, type QueueSummary } from '../../../shared/domain';
import type { NativeMoveHandle, NativeMoveStatus, NativeMoveSupport } from '../redrive-types';
import { abortable } from '../../lib/abort';
import { throwIfAborted } from './errors';
import type { ManagementClient, ManagementResponse } from './management';
import { decodeQueueId } from './queue-id';
import { STATS_DISABLED_NOTE } from './parse';

/** What the shovel path needs from the adapter. */
export interface ShovelDeps {
  vhost: string;
  mgmt: ManagementClient;
  queueRef(queueId: string): string;
  mgmtStatusError(res: ManagementResponse, path: string): QueuescopeError;
  /** Ready messages of a queue right now (AMQP passive declare). @throws QueuescopeError QUEUE_NOT_FOUND. */
  readyCount(name: string, signal?: AbortSignal): Promise<number>;
  /** Consumers of a queue right now (AMQP passive declare). @throws QueuescopeError QUEUE_NOT_FOUND. */
  consumerCount(name: string, signal?: AbortSignal): Promise<number>;
  /** True when the broker's management statistics are off (no ack counter to measure a shovel by). Never throws but CANCELLED. */
  statsDisabled(signal?: AbortSignal): Promise<boolean>;
}

const MECHANISM = 'RabbitMQ dynamic shovel (Move messages)';
/** The management UI's "Move messages" uses this prefetch; it is also the fastest setting measured here. */
const SHOVEL_PREFETCH = 1000;

/** Interval between two DLQ ready-count readings while waiting for the shovel's held messages to be requeued, ms. */
const SETTLE_POLL_MS = 250;
/** At most this many readings until two in a row agree. */
const SETTLE_READS = 12;
/**
 * After a shovel finished with messages left in the DLQ, the management statistics (collected every
 * `collect_statistics_interval`, 5 s by default, and later under load) must include its acks before
 * the rest are called refused. The DLQ's ack counter is read every {@link STATS_POLL_MS} until it
 * accounts for every message, or has not changed for {@link STATS_STABLE_MS} (two intervals and a
 * margin), or {@link STATS_MAX_MS} have passed, ms. With a fixed 7 s, a CI run read 175 of 200 acks
 * and called 25 late arrivals refused; with a fixed 15 s, a run beside a 20k-message move read
 * fewer than 2,900 of 3,000.
 */
const STATS_STABLE_MS = 11_000;
const STATS_MAX_MS = 40_000;
const STATS_POLL_MS = 500;
/**
 * How long a running shovel must see an empty DLQ (no ready message on the AMQP count, none
 * unacknowledged in the management statistics) and no new ack before it is taken as waiting for
 * messages that are not there, ms: more than two statistics intervals, so messages the shovel
 * still holds show as unacknowledged first.
 */
const IDLE_MS = 12_000;
/**
 * How long a running shovel may make no progress (nothing ready in the DLQ, some messages
 * unacknowledged, the DLQ's ack counter unchanged) before it is taken as stalled, ms: the
 * unacknowledged messages are held by another consumer, or by the shovel for a target that does
 * not confirm (a memory or disk alarm, a quorum queue without a leader).
 */
const STALLED_MS = 60_000;

/** Why a running shovel was removed: `empty` = fewer messages than it was to move; `stalled` = no progress. */
type Removed = 'empty' | 'stalled';

/** A running shovel seen with nothing ready in its DLQ: since when, at which ack count. */
interface Watch {
  since: number;
  acks: number | null;
}

/**
 * A DLQ's management statistics (`GET /api/queues/<vhost>/<name>`): `acks` = `message_stats.ack`
 * (messages removed by consumer acks since the queue exists), `unacked` =
 * `messages_unacknowledged`; null = not available.
 */
interface DlqStats {
  acks: number | null;
  unacked: number | null;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return abortable(new Promise<void>((res) => setTimeout(res, ms)), signal);
}

/** The shovel parameter name for a move: `queuescope-redrive-<dlq>-<random>` (parameter names may hold any text). */
function shovelName(dlq: string): string {
  return `queuescope-redrive-${dlq.slice(0, 180)}-${randomBytes(4).toString('hex')}`;
}

/**
 * Native whole-queue moves through a dynamic shovel, the mechanism behind the management UI's
 * "Move messages" (https://www.rabbitmq.com/docs/shovel-dynamic): `PUT
 * /api/parameters/shovel/<vhost>/<name>` with `src-queue` = the DLQ, `dest-queue` = the target
 * (published through the default exchange), `src-delete-after: <n>` where n is the DLQ's ready
 * count just before (the shovel forwards that many messages from the head of the DLQ, then deletes
 * itself; the UI's `"queue-length"` would read the depth when the shovel initialises, so messages
 * dead-lettered in between were moved too and nobody could tell how many), `ack-mode: "on-confirm"` (a message
 * is acked on the DLQ only after the target confirmed it) and `src-prefetch-count` 1000. Needs the
 * `rabbitmq_shovel` and `rabbitmq_shovel_management` plugins and a user with the `policymaker`
 * (or `administrator`) tag. Body, properties and headers (x-death included) are kept; no redrive
 * counter is added; shovels have no rate setting. A publish the target refuses (nack: a full queue
 * with `x-overflow: reject-publish`…) is nacked back to the DLQ and still counts towards the
 * n the shovel forwards before deleting itself, so its end is not a success by itself:
 * {@link ShovelMover.status} measures what left the DLQ. When fewer than n messages are there
 * (another consumer took some, a message TTL, a purge) the shovel would wait for new ones for ever:
 * after {@link IDLE_MS} of an empty DLQ the status removes it and reports what it moved; so it does
 * after {@link STALLED_MS} without progress while messages are held unacknowledged.
 */
export class ShovelMover {
  private readonly cancelled = new Set<string>();
  /** DLQ counters at the start of each shovel this mover started, by shovel name. */
  private readonly baselines = new Map<string, DlqStats>();
  /** The final status of each finished shovel, by name (computed once; later polls return it). */
  private readonly finals = new Map<string, NativeMoveStatus>();
  /** Running shovels seen with nothing ready in their DLQ, by name. */
  private readonly watches = new Map<string, Watch>();
  /** Shovels whose DLQ had another consumer besides the shovel while they ran, by name. */
  private readonly shared = new Set<string>();
  private readonly idleMs: number;
  private readonly stalledMs: number;

  /** `timings` shortens the waits before an empty or stalled shovel is removed (tests). */
  constructor(
    private readonly d: ShovelDeps,
    timings: { idleMs?: number; stalledMs?: number } = {},
  ) {
    this.idleMs = timings.idleMs ?? IDLE_MS;
    this.stalledMs = timings.stalledMs ?? STALLED_MS;
  }

  private vhostPath(): string {
    return encodeURIComponent(this.d.vhost);
  }

  private paramPath(name: string): string {
    return `/api/parameters/shovel/${this.vhostPath()}/${encodeURIComponent(name)}`;
  }

  /** The target queue name: the chosen one, else the DLQ's single dead-letter source; null when there is no single source. */
  private target(dlq: QueueSummary, targetQueueId: string | null): string | null {
    if (targetQueueId !== null) return this.d.queueRef(targetQueueId);
    if (dlq.deadLetterSources.length !== 1) return null;
    const only = dlq.deadLetterSources[0];
    return only === undefined ? null : decodeQueueId(only).name;
  }

  /**
   * Whether a dynamic shovel can move `dlq` (to `targetQueueId`, else its single dead-letter
   * source): not for streams, not without a single source when no target is given, not when the
   * shovel management API (`GET /api/shovels/<vhost>`) is missing.
   * @throws QueuescopeError INVALID_INPUT (bad target id), CANCELLED; management failures other
   *   than a missing plugin (AUTH_FAILED, HOST_UNREACHABLE…).
   */
  async support(dlq: QueueSummary, targetQueueId: string | null, signal?: AbortSignal): Promise<NativeMoveSupport> {
    const s = await this.structuralSupport(dlq, targetQueueId, signal);
    if (!s.available) return s;
    // Live (AMQP), not the management statistics, which may still count a reader that just left.
    const readers = await this.d.consumerCount(this.d.queueRef(dlq.id), signal);
    if (readers > 0) {
      return { ...s, available: false, note: `${readers} consumer${readers === 1 ? ' reads' : 's read'} the DLQ: a shovel's counts could not be told from what ${readers === 1 ? 'it takes' : 'they take'}, so the messages are moved client-side (each one confirmed).` };
    }
    return s;
  }

  /** {@link support} without the check for other consumers (which {@link start} leaves to the caller's plan). */
  private async structuralSupport(dlq: QueueSummary, targetQueueId: string | null, signal?: AbortSignal): Promise<NativeMoveSupport> {
    const base = { mechanism: MECHANISM, supportsRate: false, supportsTarget: true };
    const note =
      'Moves the messages in the DLQ when it starts (src-delete-after: that count; later dead letters stay) to one queue through the default exchange, acking each after the target confirmed it; body, properties and headers (x-death) are kept; no redrive counter is added, messages cannot be filtered and the rate cannot be limited; cancelling mid-move can leave up to 1,000 messages (its prefetch) in both queues.';
    if (dlq.kind === 'rabbitmq-stream') return { ...base, available: false, note: 'The DLQ is a stream: a shovel would copy it, not move it.' };
    // The shovel takes the first n messages, n = what the backup pass read. That is exactly the
    // backed-up ones only when the queue is FIFO: a quorum queue can put the messages the backup
    // pass returned behind newer dead letters, and a priority queue delivers newer high-priority
    // ones first (a run beside a dead-lettering producer moved 51 and 960 messages not in the backup).
    if (dlq.kind === 'rabbitmq-quorum') return { ...base, available: false, note: 'The DLQ is a quorum queue: messages dead-lettered during the run can be delivered before ones the backup holds, so a shovel could move messages that are not in the backup; they are moved client-side.' };
    const maxPriority = (dlq.config as { maxPriority?: unknown } | undefined)?.maxPriority;
    if (typeof maxPriority === 'number' && maxPriority > 0) return { ...base, available: false, note: 'The DLQ is a priority queue (x-max-priority): higher-priority dead letters arriving during the run are delivered first, so a shovel could move messages that are not in the backup; they are moved client-side.' };
    const target = this.target(dlq, targetQueueId);
    if (target === null) {
      return { ...base, available: false, note: `The DLQ has ${dlq.deadLetterSources.length === 0 ? 'no known dead-letter source' : `${dlq.deadLetterSources.length} dead-letter sources`}: choose the target queue.` };
    }
    if (target === dlq.name) return { ...base, available: false, note: 'The target is the DLQ itself.' };
    throwIfAborted(signal);
    // The outcome of a shovel (how many it moved, whether it stalled) is read from the DLQ's ack
    // counter and unacknowledged count in the management statistics; without them a stalled shovel
    // would never be noticed and a partial move could not be counted.
    if (await this.d.statsDisabled(signal)) {
      return { ...base, available: false, note: `A shovel's outcome is measured with the management statistics, and ${STATS_DISABLED_NOTE}: the messages are moved client-side (each one confirmed).` };
    }
    // Creating a shovel parameter needs the policymaker (or administrator) tag; a monitoring user's
    // PUT is refused with 401 "not authorised" only when the run starts.
    const who = await this.d.mgmt.get('/api/whoami', signal).catch(() => {
      throwIfAborted(signal);
      return null;
    });
    const tags = who?.status === 200 ? userTags(who.body) : null;
    if (tags !== null && !tags.some((t) => t === 'policymaker' || t === 'administrator')) {
      const name = (who?.body as { name?: unknown } | null)?.name;
      return { ...base, available: false, note: `User '${typeof name === 'string' ? name : '?'}' has the tag${tags.length === 1 ? '' : 's'} ${tags.length === 0 ? '(none)' : tags.join(', ')}: creating a shovel needs the policymaker (or administrator) tag, so the messages are moved client-side (each one confirmed).` };
    }
    const path = `/api/shovels/${this.vhostPath()}`;
    const res = await this.d.mgmt.get(path, signal);
    if (res.status === 404) return { ...base, available: false, note: 'The shovel plugins are not enabled on this broker (rabbitmq-plugins enable rabbitmq_shovel rabbitmq_shovel_management).' };
    if (res.status !== 200) throw this.d.mgmtStatusError(res, path);
    return { ...base, available: true, note };
  }

  /**
   * Creates the shovel, which forwards `total` messages (the DLQ's ready count just before, at
   * most `maxMessages`; given, the handle is `limited`) and then deletes itself. An
   * empty DLQ (or `maxMessages` 0) creates no shovel: the handle is completed at once.
   * @throws QueuescopeError UNSUPPORTED (not available, or a rate was asked for), PERMISSION_DENIED
   *   (the user may not set parameters: needs the policymaker tag), QUEUE_NOT_FOUND, BROKER_ERROR
   *   (the broker refused the definition, with its reason).
   */
  async start(dlq: QueueSummary, targetQueueId: string | null, ratePerSecond: number | null, signal?: AbortSignal, maxMessages?: number): Promise<NativeMoveHandle> {
    if (maxMessages !== undefined && (!Number.isSafeInteger(maxMessages) || maxMessages < 0)) throw new QueuescopeError('INVALID_INPUT', `maxMessages must be a whole number ≥ 0, not ${maxMessages}.`);
    if (ratePerSecond !== null) throw new QueuescopeError('UNSUPPORTED', 'A RabbitMQ dynamic shovel cannot be rate-limited: use a client-side redrive for a rate limit.');
    const support = await this.structuralSupport(dlq, targetQueueId, signal);
    if (!support.available) throw new QueuescopeError('UNSUPPORTED', `A dynamic shovel cannot move '${dlq.name}': ${support.note ?? ''}`);
    const src = this.d.queueRef(dlq.id);
    const dest = this.target(dlq, targetQueueId);
    if (dest === null) throw new QueuescopeError('INVALID_INPUT', 'No target queue.');
    await this.d.readyCount(dest, signal);
    const ready = await this.d.readyCount(src, signal);
    const total = maxMessages === undefined ? ready : Math.min(ready, maxMessages);
    const baseline = await this.dlqStats(src, signal);
    const name = shovelName(src);
    const handle: NativeMoveHandle = { id: name, sourceQueueId: dlq.id, targetQueueId: targetQueueId ?? (dlq.deadLetterSources[0] ?? null), startedAt: Date.now(), total, ...(maxMessages !== undefined ? { limited: true } : {}) };
    if (total === 0) {
      // src-delete-after 0 is not "nothing": the shovel would wait for a message.
      this.finals.set(name, { status: 'completed', moved: 0, total, error: null });
      return handle;
    }
    const uri = `amqp:///${encodeURIComponent(this.d.vhost)}`;
    const value = {
      'src-protocol': 'amqp091',
      'src-uri': uri,
      'src-queue': src,
      'src-prefetch-count': SHOVEL_PREFETCH,
      'src-delete-after': total,
      'dest-protocol': 'amqp091',
      'dest-uri': uri,
      'dest-queue': dest,
      'ack-mode': 'on-confirm',
    };
    const path = this.paramPath(name);
    const res = await this.d.mgmt.request('PUT', path, { value }, signal);
    if (res.status === 400) throw new QueuescopeError('BROKER_ERROR', `RabbitMQ refused the shovel definition: ${res.reason ?? 'bad request'}.`, { shovel: name });
    if (res.status < 200 || res.status >= 300) throw this.d.mgmtStatusError(res, path);
    this.baselines.set(name, baseline);
    return handle;
  }

  /**
   * Polls a shovel: `running` while its parameter exists and its state (`GET /api/shovels/<vhost>`)
   * is not `terminated` (`moved` is then `total − ready messages in the DLQ`, an estimate that
   * counts messages in flight); `cancelled` after {@link cancel}; `failed` with the broker's reason
   * when terminated.
   *
   * Once the parameter is gone the shovel has deleted itself, which it does after the target
   * confirmed OR REFUSED `total` publishes (`src-delete-after` counts nacks too: a target that
   * rejects publishes — a full queue with `x-overflow: reject-publish`, a quorum queue without a
   * leader — gets each message nacked and returned to the DLQ, and the shovel still ends). So the
   * outcome is measured on the DLQ: after the messages it held are back (two equal readings of its
   * ready count), none left = `completed` with `moved = total`; some left = refused messages or
   * messages dead-lettered since the start (which the shovel does not take), told apart by the
   * DLQ's ack counter (management statistics, read until it stands still: {@link STATS_STABLE_MS}): `moved` =
   * acks since the start (at least `total − left`). When fewer than `total` moved the status is
   * `failed`, `moved` is exact (what left the DLQ) and the error says how many of the `total`
   * stayed. RabbitMQ 3.10 reports no transferred count itself.
   *
   * A running shovel is removed (its parameter deleted) and the outcome measured the same way
   * (`failed` when fewer than `total` went through it) when, with nothing ready in the DLQ and the
   * DLQ's ack counter unchanged, either nothing is unacknowledged for {@link IDLE_MS} (it waits for
   * messages that left another way: another consumer, a TTL, a purge) or something is for
   * {@link STALLED_MS} (held by another consumer, or a target that does not confirm). Without
   * management statistics it is never removed (cancel it).
   */
  async status(handle: NativeMoveHandle, signal?: AbortSignal): Promise<NativeMoveStatus> {
    const done = this.finals.get(handle.id);
    if (done !== undefined) return done;
    const src = this.d.queueRef(handle.sourceQueueId);
    const total = handle.total;
    if (this.cancelled.has(handle.id)) {
      const moved = await this.estimate(src, total, signal, true);
      // What the shovel held when it was deleted is requeued, confirmed by the target or not.
      return { status: 'cancelled', moved, total, error: null, possibleDuplicates: Math.min(SHOVEL_PREFETCH, Math.max(0, (total ?? 0) - moved)) };
    }
    const listPath = `/api/shovels/${this.vhostPath()}`;
    const list = await this.d.mgmt.get(listPath, signal);
    if (list.status !== 200) throw this.d.mgmtStatusError(list, listPath);
    const entry = Array.isArray(list.body) ? (list.body as unknown[]).find((x): x is Record<string, unknown> => x !== null && typeof x === 'object' && (x as { name?: unknown }).name === handle.id) : undefined;
    if (entry?.state === 'terminated') {
      const reason = typeof entry.reason === 'string' ? entry.reason : 'terminated';
      return { status: 'failed', moved: await this.estimate(src, total, signal), total, error: `The shovel stopped: ${reason}` };
    }
    if (entry === undefined) {
      const param = await this.d.mgmt.get(this.paramPath(handle.id), signal);
      if (param.status === 404) return this.finish(handle, src, null, signal);
    }
    const ready = await this.d.readyCount(src, signal).catch(() => null);
    // The shovel is one consumer of the DLQ; more = another reader, whose acks the counters include.
    if (entry !== undefined && ((await this.d.consumerCount(src, signal).catch(() => 0)) > 1)) this.shared.add(handle.id);
    if (ready === 0) {
      const removed = await this.watch(handle.id, src, signal);
      if (removed !== null) {
        const path = this.paramPath(handle.id);
        const res = await this.d.mgmt.request('DELETE', path, undefined, signal);
        if (res.status !== 404 && (res.status < 200 || res.status >= 300)) throw this.d.mgmtStatusError(res, path);
        return this.finish(handle, src, removed, signal);
      }
    } else {
      this.watches.delete(handle.id);
    }
    return { status: 'running', moved: total === null || ready === null ? 0 : Math.max(0, total - ready), total, error: null };
  }

  /**
   * Watches a running shovel whose DLQ has nothing ready: the reason to remove it once it has made
   * no progress (same ack counter) for {@link IDLE_MS} with nothing unacknowledged, or for
   * {@link STALLED_MS} with something unacknowledged; else null (also when statistics are missing).
   */
  private async watch(name: string, src: string, signal?: AbortSignal): Promise<Removed | null> {
    const { acks, unacked } = await this.dlqStats(src, signal);
    const now = Date.now();
    let w = this.watches.get(name);
    if (w === undefined || w.acks !== acks) {
      w = { since: now, acks };
      this.watches.set(name, w);
    }
    if (unacked === null || acks === null) return null;
    if (unacked === 0) return now - w.since >= this.idleMs ? 'empty' : null;
    return now - w.since >= this.stalledMs ? 'stalled' : null;
  }

  /** Measures the outcome of a shovel that is gone (deleted itself, or removed: `removed`) once, and keeps it. */
  private async finish(handle: NativeMoveHandle, src: string, removed: Removed | null, signal?: AbortSignal): Promise<NativeMoveStatus> {
    const final = await this.outcome(handle, src, removed, signal);
    this.finals.set(handle.id, final);
    this.baselines.delete(handle.id);
    this.watches.delete(handle.id);
    this.shared.delete(handle.id);
    return final;
  }

  /** The outcome of a shovel that is gone, measured on the DLQ (see {@link status}). */
  private async outcome(handle: NativeMoveHandle, src: string, removed: Removed | null, signal?: AbortSignal): Promise<NativeMoveStatus> {
    const idle = removed !== null;
    const total = handle.total;
    if (total === null) return { status: 'completed', moved: 0, total, error: null };
    const left = await this.settledReady(src, signal);
    if (left === 0 && !idle) return { status: 'completed', moved: total, total, error: null };
    // Messages in the DLQ were refused by the target and returned, or dead-lettered since the start;
    // an idle shovel's DLQ lost messages another way. The ack counter tells what went through the shovel.
    const atLeast = idle ? 0 : Math.max(0, total - left);
    let moved = atLeast;
    let counted = false;
    const base = this.baselines.get(handle.id);
    if (base !== undefined && base.acks !== null) {
      // Acks since the start = messages that left the DLQ through the shovel (ack-mode on-confirm
      // acks only what the target confirmed). The shovel forwards `total` at most, so more = someone
      // else acked on the DLQ, or acks made just before the start were not in the statistics yet:
      // the counter is then not used.
      const started = Date.now();
      let last: number | null = null;
      let changedAt = started;
      for (;;) {
        const now = await this.dlqStats(src, signal);
        const t = Date.now();
        if (now.acks !== last) {
          last = now.acks;
          changedAt = t;
        }
        if (now.acks !== null && now.acks >= base.acks && now.acks - base.acks <= total) {
          counted = true;
          moved = Math.max(atLeast, now.acks - base.acks);
        }
        // A removed shovel's counter has already stood still for a while: one reading is enough.
        if (moved >= total || idle || t - changedAt >= STATS_STABLE_MS || t - started >= STATS_MAX_MS) break;
        await sleep(STATS_POLL_MS, signal);
      }
    }
    // Another consumer read the DLQ during the move (seen, or implied: a removed shovel cannot have
    // forwarded all `total`, yet the acks say so): the counters include what it took.
    const shared = this.shared.has(handle.id) || (idle && moved >= total);
    if (shared) {
      const upTo = Math.min(total, moved);
      return {
        status: 'failed',
        moved: upTo,
        total,
        error: `Another consumer read the DLQ during the move, and the DLQ's counters include what it took: at most ${upTo} of the ${total} messages went to the target through the shovel (${left} ready in the DLQ now)${removed === 'empty' ? '; the shovel waited on an empty DLQ and was removed' : removed === 'stalled' ? `; the shovel made no progress for ${Math.round(this.stalledMs / 1000)} s and was removed` : ''}. Check the target queue before running the redrive again.`,
      };
    }
    if (moved >= total) return { status: 'completed', moved, total, error: null };
    const stayed = total - moved;
    if (removed !== null) {
      const what =
        removed === 'empty'
          ? `waited on an empty DLQ: the other ${stayed} left the DLQ another way during the move (another consumer, a message TTL, a purge)`
          : `made no progress for ${Math.round(this.stalledMs / 1000)} s with nothing ready in the DLQ and messages unacknowledged: held by another consumer, or by the shovel for a target that does not confirm (a memory or disk alarm, a queue without a leader); the other ${stayed} are in the DLQ (${left} ready now) or held by that consumer`;
      return counted
        ? { status: 'failed', moved, total, error: `The shovel moved ${moved} of the ${total} messages and then ${what}. The shovel was removed.` }
        : {
            status: 'failed',
            moved: total - left,
            total,
            error: `The shovel ${removed === 'empty' ? 'waited on an empty DLQ' : 'made no progress'} and was removed; without the DLQ's ack statistics how many of the ${total} it moved cannot be told (${left} ready in the DLQ now).`,
          };
    }
    const why = counted
      ? 'the target refused them (a full queue with x-overflow reject-publish, a queue without a leader…) and RabbitMQ returned them to the DLQ'
      : 'the target refused them and RabbitMQ returned them to the DLQ (the DLQ\'s ack statistics were not available to tell them from messages dead-lettered since the start)';
    return {
      status: 'failed',
      moved,
      total,
      error: `The shovel finished, but only ${moved} of the ${total} messages left the DLQ: ${stayed} stayed (${left} in the DLQ now); ${why}`,
    };
  }

  /**
   * The DLQ's ready count once the messages a shovel held are back: read every
   * {@link SETTLE_POLL_MS} until two readings agree (at most {@link SETTLE_READS}).
   */
  private async settledReady(src: string, signal?: AbortSignal): Promise<number> {
    let last = await this.d.readyCount(src, signal);
    for (let i = 1; i < SETTLE_READS; i++) {
      await sleep(SETTLE_POLL_MS, signal);
      const now = await this.d.readyCount(src, signal);
      if (now === last) return now;
      last = now;
    }
    return last;
  }

  /** The DLQ's ack counter and unacknowledged messages from the management API, in one request (see {@link DlqStats}). */
  private async dlqStats(src: string, signal?: AbortSignal): Promise<DlqStats> {
    try {
      const res = await this.d.mgmt.get(`/api/queues/${this.vhostPath()}/${encodeURIComponent(src)}?columns=message_stats.ack,messages_unacknowledged`, signal);
      if (res.status !== 200 || res.body === null || typeof res.body !== 'object') return { acks: null, unacked: null };
      const body = res.body as { message_stats?: { ack?: unknown }; messages_unacknowledged?: unknown };
      // No message_stats yet: nothing was ever acked on this queue (or statistics are off; then it stays absent).
      const acks = body.message_stats === undefined ? 0 : typeof body.message_stats.ack === 'number' ? body.message_stats.ack : 0;
      return { acks, unacked: typeof body.messages_unacknowledged === 'number' ? body.messages_unacknowledged : null };
    } catch {
      throwIfAborted(signal);
      return { acks: null, unacked: null };
    }
  }

  private async estimate(src: string, total: number | null, signal?: AbortSignal, settle = false): Promise<number> {
    if (total === null) return 0;
    try {
      return Math.max(0, total - (settle ? await this.settledReady(src, signal) : await this.d.readyCount(src, signal)));
    } catch {
      return 0;
    }
  }

  /**
   * Deletes the shovel parameter (`DELETE /api/parameters/shovel/<vhost>/<name>`); idempotent.
   * Messages the shovel had published and the target had confirmed but that were not yet acked at
   * the DLQ (at most its prefetch, 1,000) are requeued there too: possible duplicates.
   */
  async cancel(handle: NativeMoveHandle, signal?: AbortSignal): Promise<void> {
    const path = this.paramPath(handle.id);
    const res = await this.d.mgmt.request('DELETE', path, undefined, signal);
    if (res.status === 404 || (res.status >= 200 && res.status < 300)) {
      if (res.status !== 404) this.cancelled.add(handle.id);
      return;
    }
    throw this.d.mgmtStatusError(res, path);
  }
}

/** The tags of `GET /api/whoami` (an array on RabbitMQ 3.9+, a comma-separated string before); null when absent. */
function userTags(body: unknown): string[] | null {
  const t = body !== null && typeof body === 'object' ? (body as { tags?: unknown }).tags : undefined;
  if (Array.isArray(t)) return t.filter((x): x is string => typeof x === 'string');
  if (typeof t === 'string') return t.split(',').map((x) => x.trim()).filter((x) => x.length > 0);
  return null;
}
