/**
 * The recommendation: timeout = p99 × safety factor, rounded up to a sensible step, clamped to the
 * broker's limits — with the reasons, the duplicate risk of the current setting, the time to the
 * dead-letter queue, lease-extension advice and a copyable snippet.
 *
 * Units: ms everywhere (SQS seconds only inside snippets).
 */
import { TIMEOUT_SETTINGS, leaseExtension, timeoutSnippet, type SnippetContext, type TuningTarget } from './brokers';
import { computeStats, formatMs, shareAbove, smallSampleWarning, type DurationStats } from './stats';
import type { CurrentSettings, Measurement } from './types';
import { checkRetrySchedule, sqsTimeToDlqMs, type RetryPolicy, type RetrySchedule } from './retry';

/** Default safety factor applied to p99. */
export const DEFAULT_FACTOR = 3;
/** p99 of an exponential distribution ÷ its mean (ln 100): used when only the mean is known. */
export const EXPONENTIAL_P99_PER_MEAN = Math.log(100);
/** Shortest lease an SQS heartbeat is advised with, ms: a ChangeMessageVisibility call every few seconds would be mostly API traffic. */
export const SQS_MIN_HEARTBEAT_LEASE_MS = 10_000;
/** Recommended timeouts at or above this suggest lease extension instead, ms (15 min). */
export const LONG_TIMEOUT_MS = 15 * 60_000;

/**
 * Rounds up to a step that reads well: ≤ 1 s → 100 ms; ≤ 10 s → 1 s; ≤ 1 min → 5 s;
 * ≤ 10 min → 30 s; ≤ 1 h → 1 min; above → 5 min.
 */
export function roundUpToStep(ms: number): { valueMs: number; stepMs: number } {
  const stepMs = ms <= 1000 ? 100 : ms <= 10_000 ? 1000 : ms <= 60_000 ? 5000 : ms <= 600_000 ? 30_000 : ms <= 3_600_000 ? 60_000 : 300_000;
  return { valueMs: Math.max(stepMs, Math.ceil(ms / stepMs) * stepMs), stepMs };
}

/** The risk of the current setting. */
export interface CurrentRisk {
  timeoutMs: number;
  /** Share (0–1) of deliveries expected to outlive the timeout and be delivered again. */
  duplicateShare: number | null;
  /** How `duplicateShare` was obtained. */
  duplicateMethod: 'samples' | 'exponential-assumption' | null;
  /** maxReceiveCount × timeout, ms: how long a message that always fails takes to reach the DLQ (SQS). null when no DLQ limit is known. */
  timeToDlqMs: number | null;
  /** One or two sentences. */
  verdict: string;
}

/** What {@link recommend} returns. */
export interface Recommendation {
  target: TuningTarget;
  setting: string;
  /** Unit of the broker setting (`s` for SQS). */
  unit: 'ms' | 's';
  /** What the recommendation is based on. */
  basis: 'p99' | 'mean-exponential';
  basisMs: number;
  factor: number;
  /** basis × factor before rounding/clamping, ms. */
  rawMs: number;
  /** The recommended timeout, ms (a whole number of seconds for SQS). */
  recommendedMs: number;
  stepMs: number;
  clamped: 'min' | 'max' | null;
  /** Why this number, sentences in order. */
  reasons: string[];
  /** Lease extension: advised when the tail is long or the timeout large/clamped. */
  leaseExtension: { advised: boolean; why: string; how: string; snippet: { language: string; text: string } };
  current: CurrentRisk | null;
  snippets: { language: string; text: string }[];
  /** What happens on this broker when processing outlives the timeout. */
  whatHappens: string;
  /** Notes specific to the broker mapping (BullMQ renewal, RabbitMQ version…). */
  brokerNotes: string[];
}

/** Input of {@link recommend}. */
export interface RecommendInput {
  target: TuningTarget;
  /** Per-message samples, ms (preferred). */
  samplesMs: readonly number[];
  /** Mean time in flight, ms, for mean-only sources (used when there are no samples). */
  meanMs?: number | null;
  /** Safety factor (default 3; 1–100). */
  factor?: number;
  current?: CurrentSettings | null;
  /** A timeout the consumer sets at receive time (SQS ReceiveMessage VisibilityTimeout), ms: overrides the queue's. */
  consumerOverrideMs?: number | null;
  snippet: SnippetContext;
}

/**
 * Recommends a timeout.
 * @returns null when there is nothing to base it on (no samples and no mean).
 * @throws RangeError for a factor outside 1–100 (callers turn it into `INVALID_INPUT`).
 */
export function recommend(input: RecommendInput): Recommendation | null {
  const factor = input.factor ?? DEFAULT_FACTOR;
  if (!Number.isFinite(factor) || factor < 1 || factor > 100) throw new RangeError(`The safety factor must be a number from 1 to 100, got ${String(factor)}.`);
  const setting = TIMEOUT_SETTINGS[input.target];
  const stats = computeStats(input.samplesMs);
  let basis: Recommendation['basis'];
  let basisMs: number;
  const reasons: string[] = [];
  if (stats) {
    basis = 'p99';
    basisMs = stats.p99Ms;
    reasons.push(`p99 of ${stats.n.toLocaleString('en-US')} measured processing times is ${formatMs(stats.p99Ms)}.`);
    const rough = smallSampleWarning(stats.n);
    if (rough !== null) reasons.push(rough);
  } else if (input.meanMs !== undefined && input.meanMs !== null && Number.isFinite(input.meanMs) && input.meanMs >= 0) {
    basis = 'mean-exponential';
    basisMs = input.meanMs * EXPONENTIAL_P99_PER_MEAN;
    reasons.push(
      `Only the mean is known (${formatMs(input.meanMs)}): the tail is estimated as if processing times were exponential, p99 ≈ ${EXPONENTIAL_P99_PER_MEAN.toFixed(1)} × mean = ${formatMs(basisMs)}. Measure per-message times for a real p99.`,
    );
  } else return null;
  const rawMs = basisMs * factor;
  reasons.push(`× safety factor ${factor} = ${formatMs(rawMs)}.`);
  const rounded = roundUpToStep(rawMs);
  let recommendedMs = Math.ceil(rounded.valueMs / setting.granularityMs) * setting.granularityMs;
  if (recommendedMs !== rawMs) reasons.push(`Rounded up to ${formatMs(recommendedMs)} (steps of ${formatMs(Math.max(rounded.stepMs, setting.granularityMs))}).`);
  let clamped: Recommendation['clamped'] = null;
  if (recommendedMs > setting.maxMs) {
    clamped = 'max';
    recommendedMs = setting.maxMs;
    reasons.push(
      input.target === 'sqs'
        ? `Clamped to the ${setting.name} maximum of ${formatMs(setting.maxMs)}: processing can outlive it, and SQS cannot keep one receive invisible longer (not even with ChangeMessageVisibility): see lease extension.`
        : `Clamped to the ${setting.name} maximum of ${formatMs(setting.maxMs)}: processing can outlive it, so lease extension is required.`,
    );
  } else if (setting.floor !== undefined && recommendedMs < setting.floor.ms) {
    clamped = 'min';
    recommendedMs = setting.floor.ms;
    reasons.push(`${setting.floor.reason}.`);
  } else if (recommendedMs < setting.minMs) {
    clamped = 'min';
    recommendedMs = setting.minMs;
    reasons.push(
      input.target === 'rabbitmq'
        ? `Raised to ${formatMs(setting.minMs)}: RabbitMQ checks consumer_timeout only about once a minute, so smaller values do not act sooner.`
        : `Raised to the ${setting.name} minimum of ${formatMs(setting.minMs)}.`,
    );
  }

  const longTail = stats?.longTail ?? false;
  const big = recommendedMs >= LONG_TIMEOUT_MS;
  const advised = longTail || big || clamped === 'max';
  const why = longTail
    ? `The tail is long (p99/p50 = ${stats?.tailRatio?.toFixed(1) ?? '?'} > 5): a timeout sized for the slowest jobs keeps crashed consumers' messages invisible for a long time. Keep the timeout near the typical time and extend the lease for the slow ones.`
    : clamped === 'max'
      ? 'The needed timeout exceeds what the broker allows.'
      : big
        ? `The timeout is long (≥ ${formatMs(LONG_TIMEOUT_MS)}): a message held by a crashed consumer waits that long before anyone retries it. Extending the lease lets you keep it shorter.`
        : 'Not needed at this timeout; use it if jobs can run much longer than measured.';
  // SQS heartbeat: a short lease near the typical time (p50 × factor, at least 10 s, at most the
  // recommendation), renewed every half of it — not the long recommendation itself.
  const leaseMs =
    input.target === 'sqs' && stats !== null
      ? Math.min(recommendedMs, Math.max(SQS_MIN_HEARTBEAT_LEASE_MS, Math.ceil(roundUpToStep(stats.p50Ms * factor).valueMs / 1000) * 1000))
      : recommendedMs;
  const lease = leaseExtension(input.target, recommendedMs, input.snippet, { leaseMs, exceedsMax: clamped === 'max' });

  const brokerNotes: string[] = [];
  if (input.target === 'bullmq') {
    brokerNotes.push(
      'BullMQ renews the job lock every lockDuration/2 while the worker\'s event loop runs, so a lockDuration shorter than processing time causes duplicates only when the processor blocks the event loop (CPU-bound synchronous work) or the worker dies. lockDuration also bounds how long a crashed worker\'s job waits before the stalled checker (every stalledInterval) retries it.',
    );
  }
  if (input.target === 'rabbitmq') {
    const v = input.current?.brokerVersion ?? input.snippet.brokerVersion ?? null;
    const perQueue = input.current?.perQueueTimeoutSupported ?? null;
    const cur = input.current?.timeoutMs ?? null;
    if (perQueue !== true && cur !== null && recommendedMs < cur) {
      brokerNotes.push(`Without a per-queue value, consumer_timeout applies to every queue on the node: lower it from ${formatMs(cur)} only if the slowest consumer on the node also fits — this recommendation covers this queue.`);
    }
    brokerNotes.push(
      perQueue === true
        ? `RabbitMQ ${v ?? ''} supports a per-queue consumer timeout: set it with a policy (consumer-timeout) for this queue only, or node-wide in rabbitmq.conf.`
        : perQueue === false
          ? `RabbitMQ ${v ?? ''} has consumer_timeout only as node configuration (rabbitmq.conf, all queues; restart needed). A per-queue x-consumer-timeout argument is accepted and ignored on this version (per-queue support arrived in 3.11.15 / 3.12).`
          : 'RabbitMQ version unknown: consumer_timeout is node configuration on 3.10 and older; 3.11.15 / 3.12+ also accept a per-queue policy (consumer-timeout).',
    );
  }
  if (input.target === 'redis-stream') brokerNotes.push('Redis Streams have no timeout of their own: entries stay pending until acked; the min-idle-time your claiming consumer passes to XAUTOCLAIM/XCLAIM is the visibility timeout.');
  if (input.target === 'sqs' && input.consumerOverrideMs !== undefined && input.consumerOverrideMs !== null) {
    brokerNotes.push(`The consumer overrides the visibility timeout at receive time (${formatMs(input.consumerOverrideMs)}): that value is the effective one, and the consumer's code must change too.`);
  }

  const current = currentRisk(input, stats);
  return {
    target: input.target,
    setting: setting.name,
    unit: setting.unit,
    basis,
    basisMs,
    factor,
    rawMs,
    recommendedMs,
    stepMs: rounded.stepMs,
    clamped,
    reasons,
    leaseExtension: { advised, why, how: lease.how, snippet: lease.snippet },
    current,
    snippets: timeoutSnippet(input.target, recommendedMs, input.snippet),
    whatHappens: setting.whatHappens,
    brokerNotes,
  };
}

function currentRisk(input: RecommendInput, stats: DurationStats | null): CurrentRisk | null {
  const override = input.target === 'sqs' ? input.consumerOverrideMs ?? null : null;
  const timeoutMs = override ?? input.current?.timeoutMs ?? null;
  if (timeoutMs === null) return null;
  let duplicateShare: number | null = null;
  let duplicateMethod: CurrentRisk['duplicateMethod'] = null;
  if (stats) {
    duplicateShare = shareAbove(input.samplesMs, timeoutMs);
    duplicateMethod = 'samples';
  } else if (input.meanMs !== undefined && input.meanMs !== null && input.meanMs > 0) {
    duplicateShare = Math.exp(-timeoutMs / input.meanMs);
    duplicateMethod = 'exponential-assumption';
  }
  const mrc = input.current?.maxReceiveCount ?? null;
  const timeToDlqMs = mrc !== null && input.target === 'sqs' ? sqsTimeToDlqMs(mrc, timeoutMs) : null;
  const name = TIMEOUT_SETTINGS[input.target].name;
  const pct = duplicateShare === null ? null : duplicateShare * 100;
  let verdict: string;
  if (pct === null) verdict = `Current ${name} is ${formatMs(timeoutMs)}; the duplicate risk cannot be estimated without processing times.`;
  else if (duplicateShare === 0) verdict = `Current ${name} ${formatMs(timeoutMs)}: no measured delivery outlived it${stats ? ` (max ${formatMs(stats.maxMs)})` : ''}.`;
  else {
    const shown = pct < 0.1 ? pct.toFixed(3) : pct.toFixed(1);
    verdict = `Current ${name} ${formatMs(timeoutMs)}: ${shown}% of deliveries ${duplicateMethod === 'samples' ? 'took longer' : 'would take longer (assuming exponential times)'} and would be delivered again while still being processed — duplicates.`;
    if (input.target === 'bullmq') verdict += ' (Only if the processor blocks the event loop: BullMQ renews locks while it runs.)';
  }
  if (timeToDlqMs !== null) verdict += ` A message that always fails reaches the DLQ after ${mrc ?? 0} × ${formatMs(timeoutMs)} = ${formatMs(timeToDlqMs)}.`;
  return { timeoutMs, duplicateShare, duplicateMethod, timeToDlqMs, verdict };
}

/** Everything the CLI and the app show for one queue. */
export interface TuningReport {
  queueId: string;
  queueName: string;
  target: TuningTarget;
  measurement: Measurement;
  stats: DurationStats | null;
  recommendation: Recommendation | null;
  current: CurrentSettings | null;
  retry: RetrySchedule | null;
  /** Why there is no recommendation, when `recommendation` is null. */
  noRecommendationReason: string | null;
  /** Units of every duration in the report. */
  units: 'ms';
}

/**
 * Builds the report from a measurement and the current settings (pure).
 * @param options.retryPolicy a retry policy the user entered (wins over the one found on the broker).
 * @throws RangeError for a bad factor (see {@link recommend}).
 */
export function buildReport(
  args: { queueId: string; queueName: string; target: TuningTarget; measurement: Measurement; current: CurrentSettings | null },
  options: { factor?: number; consumerOverrideMs?: number | null; retryPolicy?: RetryPolicy | null } = {},
): TuningReport {
  const { measurement: m, current } = args;
  const stats = computeStats(m.samplesMs);
  const snippet: SnippetContext = {
    queueName: args.queueName,
    ...(current?.queueUrl !== undefined ? { queueUrl: current.queueUrl } : {}),
    ...(current?.streamKey !== undefined ? { streamKey: current.streamKey } : {}),
    ...(current?.group !== undefined ? { group: current.group } : {}),
    ...(current?.vhost !== undefined ? { vhost: current.vhost } : {}),
    brokerVersion: current?.brokerVersion ?? null,
  };
  const rec = recommend({
    target: args.target,
    samplesMs: m.samplesMs,
    meanMs: m.meanMs,
    ...(options.factor !== undefined ? { factor: options.factor } : {}),
    current,
    consumerOverrideMs: options.consumerOverrideMs ?? null,
    snippet,
  });
  const policy = options.retryPolicy ?? m.retryPolicy ?? current?.retryPolicy ?? null;
  let retry: RetrySchedule | null = null;
  if (policy) {
    const attemptMs = policy.attemptMs ?? (stats ? stats.p50Ms : m.meanMs ?? 0);
    retry = checkRetrySchedule({ ...policy, attemptMs: policy.type === 'visibility-timeout' ? 0 : attemptMs });
  }
  return {
    queueId: args.queueId,
    queueName: args.queueName,
    target: args.target,
    measurement: m,
    stats,
    recommendation: rec,
    current,
    retry,
    noRecommendationReason: rec ? null : m.notes[0] ?? 'No processing times were measured: no job finished in the window, or the history is empty.',
    units: 'ms',
  };
}
