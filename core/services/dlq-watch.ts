import { QueuescopeError, toErrorInfo, type PeekOptions, type QueueKind, type QueueSummary } from '../../shared/domain';
import type { DlqWatchEvent, DlqWatchEventType, DlqWatchFailure } from '../../shared/api/watch';
import { classifyFailure } from '../../shared/redrive/failure-class';
import type { BrokerAdapter } from '../adapters/types';

/**
 * DLQ alerts (issue 4): polls the chosen dead-letter queues of one connection with
 * `adapter.getQueue` and reports what changed, so the first dead letter is seen at once.
 *
 * Events, per DLQ:
 * - `status`: the first successful poll (the depth the watch starts from; no alert).
 * - `first-message`: depth went from 0 to more than 0 — the first dead letter matters most.
 * - `grew`: depth went up from a non-zero depth (`delta` = how much).
 * - `drained`: depth went from more than 0 to 0 (a redrive or a consumer emptied it).
 * - `error`: the DLQ could not be read (broker unreachable, queue deleted…); reported once when the
 *   watch enters the error state, then polled again with exponential back-off and full jitter
 *   (`wait = random(0, min(cap, interval·2^(n-1)))`, at least 1 s).
 * - `recovered`: the first successful poll after `error`; afterwards the depth is compared with the
 *   last depth read before the error (so a DLQ that filled during an outage still raises `first-message`).
 *
 * A queue that does not exist holds no messages: after a `QUEUE_NOT_FOUND` error, a queue that
 * appears with messages raises `first-message`; a Redis list (which Redis deletes with its last
 * element) that vanishes counts as drained, not as an error.
 *
 * Depth decreases that do not reach 0 raise nothing. The depth watched is the one a redrive takes
 * from: the `failed` count for queues whose dead letters are a `failed` state (BullMQ); on RabbitMQ
 * and SQS the messages held by consumers count too (RabbitMQ `messages`, SQS visible + in flight);
 * otherwise `depth` (a stream's or list's length).
 *
 * Where `capabilities.canPeekNonDestructively` (Redis streams, lists, BullMQ failed jobs, snapshots),
 * `first-message` and `grew` carry the newest message's failure class and reason
 * (`shared/redrive/failure-class.ts`). Queues whose peek changes broker state (RabbitMQ classic and
 * quorum, SQS — a read is a delivery and can count towards a dead-letter limit) are never peeked:
 * the event says so in `failureNote`.
 */

export type { DlqWatchEvent, DlqWatchEventType, DlqWatchFailure } from '../../shared/api/watch';

export const DLQ_WATCH_EVENT_TYPES: readonly DlqWatchEventType[] = ['status', 'first-message', 'grew', 'drained', 'error', 'recovered'];

/** Options of {@link watchDlqs}. */
export interface DlqWatchOptions {
  /** Queue ids of the DLQs to watch (duplicates ignored). */
  queueIds: readonly string[];
  /** Time between polls of one DLQ, ms (default {@link DEFAULT_WATCH_INTERVAL_MS}, at least {@link MIN_WATCH_INTERVAL_MS}). */
  intervalMs?: number;
  /** Longest back-off after errors, ms (default max(60 s, interval)). */
  maxBackoffMs?: number;
  /** Read the newest message's failure where peeking has no side effects (default true). */
  classifyNewest?: boolean;
  /** Called for every event, in order per DLQ. Exceptions thrown by the listener are ignored. */
  onEvent: (event: DlqWatchEvent) => void;
  /** Stops the watch: {@link watchDlqs} resolves once every poll loop has ended. */
  signal?: AbortSignal;
  /** Jitter source in [0, 1) (tests). Default `Math.random`. */
  random?: () => number;
  /** Clock, ms (tests). Default `Date.now`. */
  now?: () => number;
}

export const DEFAULT_WATCH_INTERVAL_MS = 5_000;
export const MIN_WATCH_INTERVAL_MS = 1_000;
const DEFAULT_MAX_BACKOFF_MS = 60_000;
/** Longest body read to classify the newest message; the failure is in metadata and headers. */
const PEEK_BODY_BYTES = 4_096;

/**
 * The depth a DLQ watch compares: `counts.failed` for queues whose dead letters are a `failed`
 * state (BullMQ); for queues whose consumers hold messages (`capabilities.heldByConsumers`) the
 * held ones too — `counts.total` when given (RabbitMQ), else `depth + inFlight` (SQS); else
 * `depth`. Null when the broker did not say.
 */
export function watchedDepth(q: QueueSummary): number | null {
  if (q.capabilities.peekStates.includes('failed') && typeof q.counts.failed === 'number') return q.counts.failed;
  // Messages a consumer holds are still in the DLQ: a DLQ whose consumer takes every dead letter
  // unacknowledged (or in flight) showed depth 0 and never alerted. A total from one reading when
  // the adapter gives it (RabbitMQ: the management API's ready + unacknowledged, raised to the
  // current ready count when that sample lags behind it; absent with statistics off, when only the
  // ready count is known), else depth + inFlight (SQS: both from one
  // GetQueueAttributes).
  if (q.capabilities.heldByConsumers !== undefined) {
    if (typeof q.counts.total === 'number') return q.counts.total;
    if (q.depth !== null && q.inFlight !== null) return q.depth + q.inFlight;
  }
  return q.depth;
}

/**
 * The interval in ms, checked.
 * @throws QueuescopeError `INVALID_INPUT` when it is not a finite number ≥ {@link MIN_WATCH_INTERVAL_MS}.
 */
export function checkInterval(intervalMs: number | undefined): number {
  const ms = intervalMs ?? DEFAULT_WATCH_INTERVAL_MS;
  if (!Number.isFinite(ms) || ms < MIN_WATCH_INTERVAL_MS) {
    throw new QueuescopeError('INVALID_INPUT', `The watch interval must be at least ${MIN_WATCH_INTERVAL_MS / 1000} s, got ${Number.isFinite(ms) ? `${ms} ms` : String(ms)}.`);
  }
  return Math.round(ms);
}

/**
 * Back-off before the `failures`-th retry (1-based): full jitter over
 * `min(cap, interval·2^(failures-1))`, never below {@link MIN_WATCH_INTERVAL_MS}.
 */
export function backoffMs(failures: number, intervalMs: number, capMs: number, random: () => number): number {
  const ceiling = Math.min(capMs, intervalMs * 2 ** Math.min(30, Math.max(0, failures - 1)));
  return Math.max(MIN_WATCH_INTERVAL_MS, Math.floor(random() * ceiling));
}

/** True once `signal` has aborted (a function, so narrowing does not survive an `await`). */
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Reads the newest message of a DLQ and classifies its failure, only where reading changes
 * nothing on the broker. Never throws: a failed read becomes `note`.
 */
export async function newestFailure(adapter: BrokerAdapter, q: QueueSummary, signal?: AbortSignal): Promise<{ failure: DlqWatchFailure | null; note: string | null }> {
  const caps = q.capabilities;
  if (!caps.canPeekNonDestructively || caps.peekSideEffects.length > 0) {
    return { failure: null, note: 'not read: reading a message of this queue changes it on the broker (a delivery), so the watch never peeks it' };
  }
  const options: PeekOptions = { limit: 1, direction: 'newest', maxBodyBytes: PEEK_BODY_BYTES, ...(caps.peekStates.includes('failed') ? { state: 'failed' } : {}) };
  try {
    let page;
    try {
      page = await adapter.peek(q.id, options, signal);
    } catch (e) {
      // Brokers that read only from the head (e.g. RabbitMQ streams) refuse `newest`.
      if (!(e instanceof QueuescopeError) || e.code !== 'INVALID_INPUT') throw e;
      page = await adapter.peek(q.id, { ...options, direction: 'oldest' }, signal);
    }
    const m = page.messages[0];
    if (m === undefined) return { failure: null, note: 'no message to read (the queue emptied meanwhile)' };
    const f = classifyFailure(m);
    return { failure: { messageId: m.id, class: f.class, label: f.label, reason: f.reason, source: f.source }, note: null };
  } catch (e) {
    return { failure: null, note: `could not read the newest message: ${toErrorInfo(e).message}` };
  }
}

interface QueueState {
  phase: 'init' | 'ok' | 'error';
  /** Last depth read successfully (kept through errors). */
  depth: number | null;
  failures: number;
  name: string;
  sources: string[];
  /** Kind of the queue when last read (null before). */
  kind: QueueKind | null;
  /** Error code of the current error phase. */
  errorCode: string | null;
}

/**
 * Watches DLQs until `options.signal` aborts; resolves then (never rejects for broker errors:
 * they are `error` events). One poll loop per DLQ, so a deleted queue does not hold up the others.
 * @throws QueuescopeError `INVALID_INPUT` for no queue ids or an interval below 1 s.
 */
export async function watchDlqs(adapter: BrokerAdapter, options: DlqWatchOptions): Promise<void> {
  const interval = checkInterval(options.intervalMs);
  const ids = [...new Set(options.queueIds)];
  if (ids.length === 0) throw new QueuescopeError('INVALID_INPUT', 'No dead-letter queue to watch: name at least one.');
  const cap = Math.max(options.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS, interval);
  const random = options.random ?? Math.random;
  const now = options.now ?? Date.now;
  const { signal } = options;
  const emit = (e: DlqWatchEvent): void => {
    try {
      options.onEvent(e);
    } catch {
      /* a listener's failure must not stop the watch */
    }
  };

  const loop = async (queueId: string): Promise<void> => {
    const st: QueueState = { phase: 'init', depth: null, failures: 0, name: queueId, sources: [], kind: null, errorCode: null };
    while (signal?.aborted !== true) {
      const wait = await pollOne(adapter, queueId, st, { interval, cap, random, now, classify: options.classifyNewest !== false, emit, ...(signal !== undefined ? { signal } : {}) });
      if (wait === null) return;
      await sleep(wait, signal);
    }
  };
  await Promise.all(ids.map((id) => loop(id)));
}

/**
 * One poll of one DLQ: reads it, emits what changed, updates `st`.
 * @returns ms until the next poll, or null when aborted.
 */
async function pollOne(
  adapter: BrokerAdapter,
  queueId: string,
  st: QueueState,
  o: { interval: number; cap: number; random: () => number; now: () => number; classify: boolean; emit: (e: DlqWatchEvent) => void; signal?: AbortSignal },
): Promise<number | null> {
  const base = (type: DlqWatchEventType, depth: number | null, previousDepth: number | null): DlqWatchEvent => ({
    type,
    at: o.now(),
    queueId,
    queueName: st.name,
    depth,
    previousDepth,
    delta: depth !== null && previousDepth !== null ? depth - previousDepth : null,
    deadLetterSources: [...st.sources],
    failure: null,
    failureNote: null,
    error: null,
    retryInMs: null,
  });
  let q: QueueSummary | null;
  try {
    q = await adapter.getQueue(queueId, o.signal);
  } catch (e) {
    if (isAborted(o.signal)) return null;
    const info = toErrorInfo(e);
    if (info.code === 'QUEUE_NOT_FOUND' && st.kind === 'redis-list' && st.phase !== 'error') {
      // Redis deletes a list with its last element: a vanished list DLQ is an empty one.
      q = null;
    } else {
      st.failures++;
      const wait = backoffMs(st.failures, o.interval, o.cap, o.random);
      if (st.phase !== 'error') o.emit({ ...base('error', null, st.depth), delta: null, error: info, retryInMs: wait });
      st.phase = 'error';
      st.errorCode = info.code;
      return wait;
    }
  }
  if (isAborted(o.signal)) return null;
  if (q !== null) {
    st.name = q.name;
    st.sources = [...q.deadLetterSources];
    st.kind = q.kind;
  }
  const depth = q === null ? 0 : watchedDepth(q);
  // A queue that did not exist held no messages: one that appears with messages raises first-message.
  const prev = st.depth ?? (st.phase === 'error' && st.errorCode === 'QUEUE_NOT_FOUND' ? 0 : null);
  const wasPhase = st.phase;
  st.phase = 'ok';
  st.failures = 0;
  st.errorCode = null;
  if (depth !== null) st.depth = depth;

  if (wasPhase === 'init') o.emit(base('status', depth, null));
  else if (wasPhase === 'error') o.emit(base('recovered', depth, prev));

  if (prev !== null && depth !== null && wasPhase !== 'init') {
    let type: DlqWatchEventType | null = null;
    if (prev === 0 && depth > 0) type = 'first-message';
    else if (prev > 0 && depth > prev) type = 'grew';
    else if (prev > 0 && depth === 0) type = 'drained';
    if (type !== null) {
      const e = base(type, depth, prev);
      if (o.classify && type !== 'drained') {
        const r = q === null ? { failure: null, note: null } : await newestFailure(adapter, q, o.signal);
        if (isAborted(o.signal)) return null;
        e.failure = r.failure;
        e.failureNote = r.note;
      }
      o.emit(e);
    }
  }
  return o.interval;
}

/**
 * One poll of each DLQ (`queuescope watch --once`): a `status` event per DLQ, or an `error` event
 * for one that could not be read. With `classifyNewest`, non-empty DLQs carry the newest
 * message's failure where peeking is side-effect free.
 */
export async function checkDlqsOnce(adapter: BrokerAdapter, queueIds: readonly string[], options: { classifyNewest?: boolean; signal?: AbortSignal; now?: () => number } = {}): Promise<DlqWatchEvent[]> {
  const now = options.now ?? Date.now;
  const out: DlqWatchEvent[] = [];
  for (const queueId of new Set(queueIds)) {
    const blank: DlqWatchEvent = { type: 'status', at: now(), queueId, queueName: queueId, depth: null, previousDepth: null, delta: null, deadLetterSources: [], failure: null, failureNote: null, error: null, retryInMs: null };
    try {
      const q = await adapter.getQueue(queueId, options.signal);
      const e: DlqWatchEvent = { ...blank, at: now(), queueName: q.name, depth: watchedDepth(q), deadLetterSources: [...q.deadLetterSources] };
      if (options.classifyNewest !== false && (e.depth ?? 0) > 0) {
        const r = await newestFailure(adapter, q, options.signal);
        e.failure = r.failure;
        e.failureNote = r.note;
      }
      out.push(e);
    } catch (err) {
      if (isAborted(options.signal)) throw new QueuescopeError('CANCELLED', 'The operation was cancelled.');
      out.push({ ...blank, type: 'error', at: now(), error: toErrorInfo(err) });
    }
  }
  return out;
}
