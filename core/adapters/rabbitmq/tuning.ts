import { QueuescopeError } from '../../../shared/domain';
import { rabbitPerQueueTimeout, TIMEOUT_SETTINGS, type CurrentSettings, type MeasureOptions, type Measurement, type SourceOption } from '../../../shared/tuning';
import { sleepBetweenPolls, type BrokerTuning } from '../tuning-types';
import { throwIfAborted } from './errors';
import type { ManagementClient } from './management';
import { parseOverview, parseQueue, STATS_DISABLED_NOTE } from './parse';
import { policyDeliveryLimit, readPolicyLists, withPolicyDeadLetter, withPolicyDeliveryLimit } from './policy-limit';
import { decodeQueueId, type QueueRef } from './queue-id';
import { deadLetterFate, effectiveSettings } from './topology';

/** Default time between two management API polls, ms (the broker refreshes its stats every 5 s by default). */
const DEFAULT_INTERVAL_MS = 5_000;
/** Broker stats interval (`collect_statistics_interval` default), ms. */
const STATS_INTERVAL_MS = 5_000;

const LITTLE: Omit<SourceOption, 'available'> = {
  source: 'littles-law',
  measures: "mean time from delivery to ack per message, by Little's law: unacknowledged messages ÷ ack rate, from the management API sampled over a window",
  confidence: 'mean-only',
  confidenceNote:
    "Gives a mean, not a tail: the p99 is estimated assuming exponential times. It counts time spent in the consumer's prefetch buffer too (so prefetch > concurrency overstates it), and the management stats refresh every 5 s, so use a window of a minute or more with steady traffic.",
  needsWindow: true,
};

interface QueueStats {
  /** Local time of the answer, ms. */
  at: number;
  unacked: number;
  ack: number | null;
  redeliver: number | null;
  deliverNoAck: number | null;
  consumers: number;
  body: Record<string, unknown>;
}

/**
 * Tuning access for RabbitMQ through the management HTTP API (read-only GETs):
 * `GET /api/overview` (version), `GET /api/queues/{vhost}/{name}` with `msg_rates_age`/`lengths_age`
 * samples (https://www.rabbitmq.com/docs/management#http-api). consumer_timeout itself is node
 * configuration that the management API does not expose; per-queue values (policy `consumer-timeout`,
 * argument `x-consumer-timeout`) are read where the version supports them (3.11.15+, 3.12+).
 * The delivery limit and dead-letter exchange also come from `GET /api/policies/{vhost}` and
 * `/api/operator-policies/{vhost}` (RabbitMQ 3.10's queue record shows a new policy seconds late;
 * see policy-limit.ts), with RabbitMQ's precedence (`effectiveSettings` in topology.ts).
 * @param mgmt returns the adapter's management client (shared keep-alive agent).
 */
export function createRabbitmqTuning(mgmt: () => ManagementClient): BrokerTuning {
  const getJson = async (path: string, signal: AbortSignal | undefined, what: QueueRef | null): Promise<Record<string, unknown>> => {
    const client = mgmt();
    const res = await client.get(path, signal, 10_000);
    if (res.status === 200 && res.body !== null && typeof res.body === 'object' && !Array.isArray(res.body)) return res.body as Record<string, unknown>;
    if (res.status === 404 && what) throw new QueuescopeError('QUEUE_NOT_FOUND', `RabbitMQ queue '${what.name}' in vhost '${what.vhost}' was not found.`, { queue: what.name, vhost: what.vhost });
    if (res.status === 401) throw new QueuescopeError('AUTH_FAILED', `The management API at ${client.base} rejected the login (or the user lacks the monitoring tag).`, { managementUrl: client.base });
    if (res.status === 403) throw new QueuescopeError('PERMISSION_DENIED', `The management API refused ${path.split('?')[0] ?? path}: ${res.reason ?? 'forbidden'}.`, { managementUrl: client.base });
    throw new QueuescopeError('MANAGEMENT_UNAVAILABLE', `The management API at ${client.base} answered HTTP ${res.status} for ${path.split('?')[0] ?? path}.`, { managementUrl: client.base, status: res.status });
  };
  /** True when `GET /api/overview` says the statistics are off (`disable_stats`); false when it cannot be read. */
  const statsDisabled = async (signal: AbortSignal | undefined): Promise<boolean> => {
    const overview = await getJson('/api/overview', signal, null).catch(() => {
      throwIfAborted(signal);
      return null;
    });
    return overview !== null && parseOverview(overview)?.statsDisabled === true;
  };
  const queuePath = (ref: QueueRef): string => `/api/queues/${encodeURIComponent(ref.vhost)}/${encodeURIComponent(ref.name)}`;
  const readQueue = async (ref: QueueRef, signal: AbortSignal | undefined, query = ''): Promise<QueueStats> => {
    const body = await getJson(`${queuePath(ref)}${query}`, signal, ref);
    const at = Date.now();
    const ms = obj(body.message_stats);
    return {
      at,
      unacked: numOr(body.messages_unacknowledged, 0),
      ack: numOrNull(ms.ack),
      redeliver: numOrNull(ms.redeliver),
      deliverNoAck: numOrNull(ms.deliver_no_ack),
      consumers: numOr(body.consumers, 0),
      body,
    };
  };

  return {
    async sources(queueId, signal) {
      const ref = decodeQueueId(queueId);
      const [, off] = await Promise.all([readQueue(ref, signal), statsDisabled(signal)]);
      // Little's law reads the ack counter and the unacknowledged gauge from the management statistics.
      return [off ? { ...LITTLE, available: false, unavailableReason: `${STATS_DISABLED_NOTE}, so processing time cannot be read from the broker: turn them on, or measure in your workers and load the durations from a file (--source file)` } : { ...LITTLE, available: true }];
    },

    async readSettings(queueId, signal) {
      const ref = decodeQueueId(queueId);
      const [q, overview, policies] = await Promise.all([readQueue(ref, signal), getJson('/api/overview', signal, null).catch(() => null), readPolicyLists(mgmt(), ref.vhost, signal)]);
      const version = overview ? strOrNull(overview.rabbitmq_version) : null;
      const perQueue = rabbitPerQueueTimeout(version);
      const args = obj(q.body.arguments);
      const policy = obj(q.body.effective_policy_definition);
      const notes: string[] = [];
      let timeoutMs: number | null = TIMEOUT_SETTINGS.rabbitmq.defaultMs;
      let timeoutSource = "RabbitMQ's default consumer_timeout (30 min): the node's value is in rabbitmq.conf and not exposed by the management API — enter yours if it was changed (rabbitmq-diagnostics environment | grep consumer_timeout)";
      const queueLevel = numOrNull(args['x-consumer-timeout']) ?? numOrNull(policy['consumer-timeout']);
      if (queueLevel !== null) {
        if (perQueue === false) notes.push(`This queue sets a consumer timeout of ${queueLevel} ms (argument/policy), but RabbitMQ ${version ?? ''} ignores per-queue consumer timeouts: the node's consumer_timeout applies.`);
        else {
          timeoutMs = queueLevel;
          timeoutSource = args['x-consumer-timeout'] !== undefined ? 'queue argument x-consumer-timeout' : 'policy key consumer-timeout';
        }
      }
      // Argument vs policy as RabbitMQ combines them (lower limit; argument DLX wins), policies read
      // directly too because the record shows a new one seconds late (3.10).
      const record = parseQueue(q.body);
      const settings = record === null ? null : withPolicyDeliveryLimit(effectiveSettings(withPolicyDeadLetter(record, policies)), policyDeliveryLimit(ref.name, policies));
      const limit = settings?.deliveryLimit?.value ?? null;
      const dlx = settings?.deadLetterExchange?.value ?? null;
      if (q.body.type === 'quorum' && limit !== null) notes.push(`Quorum queue delivery limit ${limit}: a message is ${deadLetterFate(settings)} after ${limit + 1} deliver${limit === 0 ? 'y' : 'ies'}; a consumer_timeout requeue counts as one.`);
      return {
        target: 'rabbitmq',
        timeoutMs,
        timeoutSource,
        maxReceiveCount: q.body.type === 'quorum' && limit !== null ? limit + 1 : null,
        deadLetterTarget: dlx === '' ? null : dlx,
        brokerVersion: version,
        perQueueTimeoutSupported: perQueue,
        retryPolicy: null,
        vhost: ref.vhost,
        notes,
      } satisfies CurrentSettings;
    },

    async measure(queueId, source, options: MeasureOptions, signal) {
      if (source !== 'littles-law') throw new QueuescopeError('INVALID_INPUT', `The source "${source}" does not apply to a RabbitMQ queue: use "littles-law" (or "file").`, { source });
      const ref = decodeQueueId(queueId);
      if (await statsDisabled(signal)) {
        throw new QueuescopeError('UNSUPPORTED', `Little's law needs the management statistics, and ${STATS_DISABLED_NOTE}: turn them on, or measure in your workers and load the durations from a file (--source file --file <path>).`);
      }
      const intervalMs = Math.max(500, options.intervalMs ?? DEFAULT_INTERVAL_MS);
      const windowMs = Math.max(intervalMs, options.windowMs);
      const startedAt = Date.now();
      const polls: QueueStats[] = [];
      for (;;) {
        const elapsed = Date.now() - startedAt;
        const last = elapsed + intervalMs >= windowMs;
        if (last) await sleepBetweenPolls(windowMs - elapsed, signal);
        // The last poll asks for the broker's own timestamped samples over the window.
        const ageS = Math.max(1, Math.round(windowMs / 1000));
        const incrS = Math.max(1, Math.round(STATS_INTERVAL_MS / 1000));
        polls.push(await readQueue(ref, signal, last ? `?lengths_age=${ageS}&lengths_incr=${incrS}&msg_rates_age=${ageS}&msg_rates_incr=${incrS}` : ''));
        const done = Math.min(1, (Date.now() - startedAt) / windowMs);
        options.onProgress?.({ fraction: last ? 1 : done, polls: polls.length, samples: 0 });
        if (last) break;
        await sleepBetweenPolls(intervalMs, signal);
      }
      return littlesLaw(polls, windowMs, startedAt);
    },
  };
}

function obj(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
function numOrNull(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}
function numOr(v: unknown, d: number): number {
  return numOrNull(v) ?? d;
}
function strOrNull(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

/** Timestamped samples (`{ sample, timestamp }`, newest first as the API returns them) → oldest first. */
function samples(v: unknown): { value: number; t: number }[] {
  if (!Array.isArray(v)) return [];
  const out: { value: number; t: number }[] = [];
  for (const s of v) {
    const o = obj(s);
    const value = numOrNull(o.sample);
    const t = numOrNull(o.timestamp);
    if (value !== null && t !== null) out.push({ value, t });
  }
  return out.sort((a, b) => a.t - b.t);
}

/**
 * Little's law W = L / λ over the window: L = mean unacknowledged, λ = acks per second.
 * Uses the broker's timestamped samples from the last poll when it returned them, else the polls.
 */
function littlesLaw(polls: QueueStats[], windowMs: number, startedAt: number): Measurement {
  const notes: string[] = [];
  const last = polls[polls.length - 1];
  const first = polls[0];
  let meanUnacked: number | null = null;
  let ackRate: number | null = null;
  let redeliverRate: number | null = null;
  let redelivered = 0;
  let acked = 0;
  if (last) {
    const ms = obj(last.body.message_stats);
    const ackS = samples(obj(ms.ack_details).samples);
    const unS = samples(obj(last.body.messages_unacknowledged_details).samples);
    const redS = samples(obj(ms.redeliver_details).samples);
    const a0 = ackS[0];
    const a1 = ackS[ackS.length - 1];
    if (a0 && a1 && a1.t > a0.t && unS.length >= 2) {
      ackRate = (a1.value - a0.value) / ((a1.t - a0.t) / 1000);
      acked = a1.value - a0.value;
      // Time-weighted mean of the gauge within the ack samples' span.
      const inSpan = unS.filter((s) => s.t >= a0.t && s.t <= a1.t);
      const use = inSpan.length >= 2 ? inSpan : unS;
      meanUnacked = use.reduce((x, s) => x + s.value, 0) / use.length;
      const r0 = redS[0];
      const r1 = redS[redS.length - 1];
      if (r0 && r1 && r1.t > r0.t) {
        redeliverRate = (r1.value - r0.value) / ((r1.t - r0.t) / 1000);
        redelivered = r1.value - r0.value;
      }
      notes.push(`Computed from the broker's own samples over ${Math.round((a1.t - a0.t) / 1000)} s (management API msg_rates_age/lengths_age).`);
    }
  }
  if (ackRate === null && first && last && last.at > first.at && first.ack !== null && last.ack !== null) {
    ackRate = (last.ack - first.ack) / ((last.at - first.at) / 1000);
    acked = last.ack - first.ack;
    meanUnacked = polls.reduce((x, p) => x + p.unacked, 0) / polls.length;
    if (first.redeliver !== null && last.redeliver !== null) {
      redelivered = last.redeliver - first.redeliver;
      redeliverRate = redelivered / ((last.at - first.at) / 1000);
    }
    notes.push(`Computed from ${polls.length} polls of the management API (the broker returned no timestamped samples); its counters refresh every ~5 s, so short windows are imprecise.`);
  }
  let meanMs: number | null = null;
  if (ackRate !== null && ackRate > 0 && meanUnacked !== null) meanMs = (meanUnacked / ackRate) * 1000;
  else if (last && (last.deliverNoAck ?? 0) > 0 && (last.ack ?? 0) === 0) {
    notes.unshift('The consumers use automatic acknowledgement (no-ack): there is no in-flight state to time, and consumer_timeout does not apply to them.');
  } else {
    notes.unshift(`No acknowledgements during the ${Math.round(windowMs / 1000)} s window${last && last.consumers === 0 ? ' (the queue has no consumers)' : ''}: measure while consumers are working (or import durations from logs).`);
  }
  if (windowMs < 30_000) notes.push('Windows shorter than 30 s cover only a few 5-second stats intervals: expect ±20 % or more.');
  return {
    source: 'littles-law',
    measures: LITTLE.measures,
    confidence: 'mean-only',
    confidenceNote: LITTLE.confidenceNote,
    samplesMs: [],
    meanMs,
    sampleErrorMs: null,
    redeliveries:
      redeliverRate === null
        ? null
        : {
            redelivered,
            observed: acked,
            ratePerSecond: redeliverRate,
            histogram: [],
            note: 'Redeliveries (messages delivered again after a requeue, a consumer crash or a consumer_timeout) during the window, from the management API.',
          },
    retryPolicy: null,
    startedAt,
    endedAt: last?.at ?? Date.now(),
    polls: polls.length,
    notes,
  };
}
