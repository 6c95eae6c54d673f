import { CloudWatchClient, GetMetricDataCommand, type CloudWatchClientConfig } from '@aws-sdk/client-cloudwatch';
import {
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { fromIni } from '@aws-sdk/credential-providers';
import { QueuescopeError, type SqsConnectionConfig } from '../../../shared/domain';
import { TIMEOUT_SETTINGS, littlesLawFromPeriods, type PeriodValue, type CurrentSettings, type MeasureOptions, type Measurement, type RedeliveryEvidence, type SourceOption } from '../../../shared/tuning';
import { sleepBetweenPolls, type AppliedChange, type BrokerTuning } from '../tuning-types';
import { parseArn, parseRedrivePolicy, queueNameFromUrl } from './attributes';

/** What the SQS tuning needs from the adapter (its mapped-error call wrapper and queue-URL resolution). */
export interface SqsTuningAccess {
  /** Runs one SDK call with the adapter's client, mapping errors (see `SqsAdapter.call`). */
  call<T>(action: string, queueName: string | undefined, run: (client: SQSClient, abortSignal: AbortSignal | undefined) => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** `sqs:<QueueUrl>` → URL; `sqs:<name>` → GetQueueUrl. */
  resolveQueueUrl(queueId: string, signal?: AbortSignal): Promise<string>;
  /** The connection config (for the CloudWatch client: same region and credentials). */
  config(): SqsConnectionConfig;
}

/** Default time between two GetQueueAttributes polls, ms. */
const DEFAULT_INTERVAL_MS = 1_000;
/** CloudWatch: shortest history read, ms (SQS metrics are per minute and arrive minutes late). */
const CLOUDWATCH_MIN_LOOKBACK_MS = 15 * 60_000;

const ATTRS: Omit<SourceOption, 'available'> = {
  source: 'littles-law',
  measures: "mean time a received message stays in flight (receive → delete), by Little's law: ApproximateNumberOfMessagesNotVisible ÷ deletion rate, from queue attributes sampled while the queue drains",
  confidence: 'mean-only',
  confidenceNote:
    'Gives a mean, not a tail (p99 estimated assuming exponential times). The deletion rate is inferred from the shrinking backlog, so it is only right while nothing is sent to the queue; SQS counts are approximate (eventually consistent).',
  needsWindow: true,
};

const CLOUDWATCH: Omit<SourceOption, 'available'> = {
  source: 'cloudwatch',
  measures: "mean time in flight by Little's law from CloudWatch: average ApproximateNumberOfMessagesNotVisible ÷ NumberOfMessagesDeleted per second, over the last minutes",
  confidence: 'mean-only',
  confidenceNote: 'A mean, not a tail; CloudWatch SQS metrics are 1-minute aggregates arriving a few minutes late. Needs cloudwatch:GetMetricData permission.',
  needsWindow: false,
};

function obj(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/**
 * Tuning access for SQS (Amazon SQS API Reference: GetQueueAttributes, SetQueueAttributes,
 * ReceiveMessage; Amazon CloudWatch GetMetricData on the AWS/SQS namespace).
 * Measuring is read-only, except the optional receive-count peek (`options.acceptSideEffects`),
 * which receives up to 10 messages with VisibilityTimeout 0 (each receive counts towards maxReceiveCount).
 */
export function createSqsTuning(access: SqsTuningAccess): BrokerTuning {
  const attributes = async (url: string, names: string[], signal?: AbortSignal): Promise<Record<string, string>> => {
    const out = await access.call('GetQueueAttributes', queueNameFromUrl(url), (c, s) => c.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: names as never }), { abortSignal: s }), signal);
    return out.Attributes ?? {};
  };

  return {
    async sources(queueId, signal) {
      const url = await access.resolveQueueUrl(queueId, signal);
      await attributes(url, ['VisibilityTimeout'], signal);
      const custom = access.config().endpoint !== undefined;
      return [
        { ...ATTRS, available: true },
        custom
          ? { ...CLOUDWATCH, available: false, unavailableReason: `This connection uses a custom endpoint (${access.config().endpoint ?? ''}); CloudWatch metrics exist only on AWS.` }
          : { ...CLOUDWATCH, available: true },
      ];
    },

    async readSettings(queueId, signal) {
      const url = await access.resolveQueueUrl(queueId, signal);
      const a = await attributes(url, ['All'], signal);
      const vt = Number(a.VisibilityTimeout);
      const redrive = parseRedrivePolicy(a.RedrivePolicy);
      const notes: string[] = [];
      let maxReceiveCount: number | null = null;
      let dlq: string | null = null;
      if (redrive && 'error' in redrive) notes.push(`RedrivePolicy is unreadable: ${redrive.error}.`);
      else if (redrive) {
        maxReceiveCount = redrive.maxReceiveCount;
        dlq = parseArn(redrive.deadLetterTargetArn)?.resource ?? redrive.deadLetterTargetArn;
      } else notes.push('No RedrivePolicy: a message that keeps failing is received again every visibility timeout until its retention period ends.');
      const timeoutMs = Number.isFinite(vt) ? vt * 1000 : TIMEOUT_SETTINGS.sqs.defaultMs;
      return {
        target: 'sqs',
        timeoutMs,
        timeoutSource: Number.isFinite(vt) ? 'queue attribute VisibilityTimeout (a consumer that passes VisibilityTimeout to ReceiveMessage overrides it: enter that value if yours does)' : 'SQS default (30 s): VisibilityTimeout was not returned',
        maxReceiveCount,
        deadLetterTarget: dlq,
        brokerVersion: null,
        perQueueTimeoutSupported: null,
        retryPolicy: maxReceiveCount !== null && timeoutMs !== null ? { attempts: maxReceiveCount, type: 'visibility-timeout', delayMs: timeoutMs, jitter: 0, capMs: null } : null,
        queueUrl: url,
        notes,
      } satisfies CurrentSettings;
    },

    async measure(queueId, source, options: MeasureOptions, signal) {
      const url = await access.resolveQueueUrl(queueId, signal);
      if (source === 'cloudwatch') return measureCloudWatch(access.config(), url, options, signal);
      if (source !== 'littles-law') throw new QueuescopeError('INVALID_INPUT', `The source "${source}" does not apply to an SQS queue: use "littles-law", "cloudwatch" or "file".`, { source });
      const intervalMs = Math.max(200, options.intervalMs ?? DEFAULT_INTERVAL_MS);
      const windowMs = Math.max(intervalMs, options.windowMs);
      const startedAt = Date.now();
      const polls: { t: number; visible: number; inFlight: number; delayed: number }[] = [];
      for (;;) {
        const t0 = Date.now();
        const a = await attributes(url, ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'], signal);
        const t = (t0 + Date.now()) / 2;
        polls.push({ t, visible: Number(a.ApproximateNumberOfMessages ?? 0), inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0), delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0) });
        const elapsed = Date.now() - startedAt;
        options.onProgress?.({ fraction: Math.min(1, elapsed / windowMs), polls: polls.length, samples: 0 });
        if (elapsed >= windowMs) break;
        await sleepBetweenPolls(Math.min(intervalMs, windowMs - elapsed), signal);
      }
      const notes: string[] = [];
      // Deletion rate = −slope of the backlog (visible + in flight + delayed) by least squares.
      const n = polls.length;
      const mt = polls.reduce((x, p) => x + p.t, 0) / n;
      const total = (p: (typeof polls)[number]): number => p.visible + p.inFlight + p.delayed;
      const mv = polls.reduce((x, p) => x + total(p), 0) / n;
      let sxx = 0;
      let sxy = 0;
      for (const p of polls) {
        sxx += (p.t - mt) ** 2;
        sxy += (p.t - mt) * (total(p) - mv);
      }
      const slopePerS = sxx > 0 ? (sxy / sxx) * 1000 : 0;
      const deletionRate = -slopePerS;
      const drained = polls.findIndex((p) => total(p) === 0);
      // In flight while work was going on: drop the polls after the queue ran empty.
      const working = drained > 0 ? polls.slice(0, drained) : polls;
      const meanInFlight = working.reduce((x, p) => x + p.inFlight, 0) / working.length;
      let meanMs: number | null = null;
      if (deletionRate > 0 && meanInFlight > 0) meanMs = (meanInFlight / deletionRate) * 1000;
      else if (slopePerS > 0) notes.push('The backlog grew during the window (messages were sent): the deletion rate cannot be inferred from queue attributes. Measure while the queue drains without new sends, or use CloudWatch.');
      else notes.push('No messages were deleted during the window (or nothing was in flight): measure while consumers are working.');
      if (drained > 0) notes.push(`The queue ran empty after ${Math.round((polls[drained]?.t ?? startedAt) - startedAt)} ms; later polls were left out of the in-flight mean.`);
      notes.push(`Deletion rate ${deletionRate.toFixed(2)} msg/s from the backlog's slope over ${n} polls; mean in flight ${meanInFlight.toFixed(2)}.`);
      const redeliveries = await receiveCounts(access, url, options, signal, notes);
      return {
        source: 'littles-law',
        measures: ATTRS.measures,
        confidence: 'mean-only',
        confidenceNote: ATTRS.confidenceNote,
        samplesMs: [],
        meanMs,
        sampleErrorMs: null,
        redeliveries,
        retryPolicy: null,
        startedAt,
        endedAt: Date.now(),
        polls: n,
        notes,
      } satisfies Measurement;
    },

    async applyTimeout(queueId, timeoutMs, signal): Promise<AppliedChange> {
      const s = TIMEOUT_SETTINGS.sqs;
      if (!Number.isInteger(timeoutMs) || timeoutMs < s.minMs || timeoutMs > s.maxMs || timeoutMs % 1000 !== 0) {
        throw new QueuescopeError('INVALID_INPUT', `VisibilityTimeout must be whole seconds from 0 to 43,200 (12 h); got ${String(timeoutMs)} ms.`, { timeoutMs });
      }
      const url = await access.resolveQueueUrl(queueId, signal);
      const before = await attributes(url, ['VisibilityTimeout'], signal);
      await access.call('SetQueueAttributes', queueNameFromUrl(url), (c, sig) => c.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { VisibilityTimeout: String(timeoutMs / 1000) } }), { abortSignal: sig }), signal);
      const after = await attributes(url, ['VisibilityTimeout'], signal);
      return { setting: 'VisibilityTimeout', before: { VisibilityTimeout: before.VisibilityTimeout ?? '' }, after: { VisibilityTimeout: after.VisibilityTimeout ?? '' } };
    },
  };
}

/**
 * The ApproximateReceiveCount of up to 10 visible messages, received with VisibilityTimeout 0 (so
 * they are visible again at once). Each receive counts: with a RedrivePolicy this could move a
 * message to the DLQ, so it runs only when `options.acceptSideEffects` is true.
 */
async function receiveCounts(access: SqsTuningAccess, url: string, options: MeasureOptions, signal: AbortSignal | undefined, notes: string[]): Promise<RedeliveryEvidence | null> {
  if (options.acceptSideEffects !== true) {
    notes.push('Receive counts were not sampled (that would count as a receive of each message; allow it with --peek-receive-counts).');
    return null;
  }
  const out = await access.call(
    'ReceiveMessage',
    queueNameFromUrl(url),
    (c, s) => c.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 0, WaitTimeSeconds: 0, MessageSystemAttributeNames: ['ApproximateReceiveCount'] }), { abortSignal: s }),
    signal,
  );
  const hist = new Map<number, number>();
  let redelivered = 0;
  const msgs = out.Messages ?? [];
  for (const m of msgs) {
    // Our own receive is included: earlier receives = count − 1. A visible message that was received before came back without being deleted.
    const prior = Math.max(0, Number(obj(m.Attributes).ApproximateReceiveCount ?? 1) - 1);
    hist.set(prior, (hist.get(prior) ?? 0) + 1);
    if (prior >= 1) redelivered++;
  }
  return {
    redelivered,
    observed: msgs.length,
    ratePerSecond: null,
    histogram: [...hist.entries()].sort((a, b) => a[0] - b[0]).map(([count, messages]) => ({ count, messages })),
    note: 'Earlier receives of up to 10 visible messages (ApproximateReceiveCount − 1; this peek added one receive to each). A visible message received before came back without being deleted: its visibility timeout expired or the consumer failed.',
  };
}

async function measureCloudWatch(config: SqsConnectionConfig, url: string, options: MeasureOptions, signal?: AbortSignal): Promise<Measurement> {
  if (config.endpoint !== undefined) {
    throw new QueuescopeError('UNSUPPORTED', `CloudWatch metrics are not available for the custom endpoint ${config.endpoint}: use --source littles-law (sampled queue attributes) instead.`);
  }
  const cwConfig: CloudWatchClientConfig = { region: config.region, maxAttempts: 2 };
  if (config.accessKeyId !== undefined && config.accessKeyId !== '' && config.secretAccessKey !== undefined) {
    cwConfig.credentials = { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey, ...(config.sessionToken ? { sessionToken: config.sessionToken } : {}) };
  } else if (config.profile !== undefined && config.profile !== '') cwConfig.credentials = fromIni({ profile: config.profile });
  const cw = new CloudWatchClient(cwConfig);
  const name = queueNameFromUrl(url);
  const end = new Date();
  const lookback = Math.max(CLOUDWATCH_MIN_LOOKBACK_MS, options.windowMs);
  const start = new Date(end.getTime() - lookback);
  const dims = [{ Name: 'QueueName', Value: name }];
  try {
    const res = await cw.send(
      new GetMetricDataCommand({
        StartTime: start,
        EndTime: end,
        MetricDataQueries: [
          { Id: 'inflight', MetricStat: { Metric: { Namespace: 'AWS/SQS', MetricName: 'ApproximateNumberOfMessagesNotVisible', Dimensions: dims }, Period: 60, Stat: 'Average' } },
          { Id: 'deleted', MetricStat: { Metric: { Namespace: 'AWS/SQS', MetricName: 'NumberOfMessagesDeleted', Dimensions: dims }, Period: 60, Stat: 'Sum' } },
        ],
      }),
      { abortSignal: signal },
    );
    options.onProgress?.({ fraction: 1, polls: 1, samples: 0 });
    const series = (id: string): PeriodValue[] => {
      const r = res.MetricDataResults?.find((x) => x.Id === id);
      const out: PeriodValue[] = [];
      (r?.Timestamps ?? []).forEach((t, i) => {
        const v = r?.Values?.[i];
        if (v !== undefined) out.push({ t: t.getTime(), value: v });
      });
      return out;
    };
    const est = littlesLawFromPeriods(series('inflight'), series('deleted'), 60_000);
    const notes: string[] = [];
    if (est === null) notes.push(`CloudWatch shows no deletions on "${name}" in the last ${Math.round(lookback / 60_000)} min (metrics arrive a few minutes late).`);
    else notes.push(`${est.periods} one-minute periods with deletions: mean in flight ${est.inFlight.toFixed(2)}, ${est.perSecond.toFixed(2)} deletions/s.`);
    const meanMs = est?.meanMs ?? null;
    return { source: 'cloudwatch', measures: CLOUDWATCH.measures, confidence: 'mean-only', confidenceNote: CLOUDWATCH.confidenceNote, samplesMs: [], meanMs, sampleErrorMs: null, redeliveries: null, retryPolicy: null, startedAt: start.getTime(), endedAt: end.getTime(), polls: 1, notes };
  } catch (e) {
    if (signal?.aborted === true) throw new QueuescopeError('CANCELLED', 'The measurement was cancelled.');
    const code = obj(e).name;
    const msg = e instanceof Error ? e.message : String(e);
    if (code === 'AccessDenied' || code === 'AccessDeniedException') throw new QueuescopeError('PERMISSION_DENIED', `CloudWatch refused GetMetricData (${msg}): grant cloudwatch:GetMetricData, or use --source littles-law.`);
    throw new QueuescopeError('UNSUPPORTED', `CloudWatch metrics could not be read (${msg}): use --source littles-law (sampled queue attributes) instead.`);
  } finally {
    cw.destroy();
  }
}
