import { QueuescopeError, type OperationSnapshot } from '../../shared/domain';
import {
  TIMEOUT_SETTINGS,
  buildReport,
  validateRetryPolicy,
  type CurrentSettings,
  type Measurement,
  type RetryPolicy,
  type SourceOption,
  type TuningReport,
  type TuningSource,
  type DurationFormat,
  type DurationUnit,
} from '../../shared/tuning';
import type { BrokerAdapter } from '../adapters';
import type { AppliedChange, BrokerTuning } from '../adapters/tuning-types';
import type { OperationContext, OperationManager } from '../services/operations';
import { importDurations, importDurationsText, type ImportDurationsOptions } from './file-source';

/** Default sampling window, ms. */
export const DEFAULT_WINDOW_MS = 60_000;
/** Longest sampling window accepted, ms (1 h). */
export const MAX_WINDOW_MS = 3_600_000;

/** The `file` source as offered for every queue. */
export const FILE_SOURCE: SourceOption = {
  source: 'file',
  measures: 'processing durations exported from logs or an APM (CSV, JSONL, or log lines with a regex; unit ms or s)',
  confidence: 'imported',
  confidenceNote: 'As good as the export: each value must be one message\'s processing time.',
  available: true,
  needsWindow: false,
};

/** What to measure and how to recommend (units: ms). */
export interface TuneOptions {
  /** Default: the first available source of the queue. */
  source?: TuningSource;
  /** Sampling window, ms (default 60 s; 1 s – 1 h). */
  windowMs?: number;
  intervalMs?: number;
  /** Redis Streams consumer group. */
  group?: string;
  /** BullMQ: most recent jobs read. */
  maxSamples?: number;
  /** Safety factor on p99 (default 3). */
  factor?: number;
  /** The timeout in force when it cannot be read (BullMQ lockDuration, a stream claimer's min-idle-time, RabbitMQ consumer_timeout), ms. */
  currentTimeoutMs?: number;
  /** SQS: a VisibilityTimeout the consumer passes to ReceiveMessage (the effective value), ms. */
  consumerOverrideMs?: number;
  /** A retry policy entered by the user (wins over the broker's). */
  retryPolicy?: RetryPolicy;
  /** For `source: 'file'`: a file to read (CLI)… */
  file?: ImportDurationsOptions;
  /** …or the text itself (the app sends the content, never a path). */
  durations?: { text: string; format: DurationFormat; unit?: DurationUnit; field?: string; regex?: string; label?: string };
  /** Allow measuring reads that count as deliveries (SQS receive-count peek). */
  acceptSideEffects?: boolean;
  /** Progress callback (fraction 0–1). */
  onProgress?: (p: { fraction: number; polls: number; samples: number }) => void;
}

/** The adapter's tuning access. @throws QueuescopeError `UNSUPPORTED` when the connection has none (snapshots). */
export function tuningOf(adapter: BrokerAdapter): BrokerTuning {
  if (!adapter.tuning) throw new QueuescopeError('UNSUPPORTED', `Tuning needs a live broker: this ${adapter.broker} connection cannot measure processing times (import durations with --source file on a broker connection).`);
  return adapter.tuning;
}

/** Sources for a queue: the broker's plus `file`. */
export async function listSources(adapter: BrokerAdapter, queueId: string, signal?: AbortSignal): Promise<SourceOption[]> {
  const own = await tuningOf(adapter).sources(queueId, signal);
  return [...own, FILE_SOURCE];
}

/** The sampling window is checked only for sources that sample over one (`needsWindow`): bullmq, file and cloudwatch ignore it. */
function validateWindow(w: number | undefined): void {
  if (w !== undefined && (!Number.isFinite(w) || w < 1000 || w > MAX_WINDOW_MS)) throw new QueuescopeError('INVALID_INPUT', `The window must be from 1 s to 1 h, got ${String(w)} ms.`);
}

function validate(options: TuneOptions): void {
  const f = options.factor;
  if (f !== undefined && (!Number.isFinite(f) || f < 1 || f > 100)) throw new QueuescopeError('INVALID_INPUT', `The safety factor must be a number from 1 to 100, got ${String(f)}.`);
  for (const [name, v] of [
    ['current timeout', options.currentTimeoutMs],
    ['consumer override', options.consumerOverrideMs],
  ] as const) {
    if (v !== undefined && (!Number.isFinite(v) || v < 0)) throw new QueuescopeError('INVALID_INPUT', `The ${name} must be ≥ 0 ms, got ${String(v)}.`);
  }
  if (options.retryPolicy) {
    const problem = validateRetryPolicy(options.retryPolicy);
    if (problem !== null) throw new QueuescopeError('INVALID_INPUT', `Retry policy: ${problem}.`);
  }
}

/** A queue's display name from its id (`bullmq:bull:payments` → payments). */
export function queueNameFromId(queueId: string): string {
  if (queueId.startsWith('bullmq:')) return queueId.slice(queueId.lastIndexOf(':') + 1);
  if (queueId.startsWith('stream:') || queueId.startsWith('list:')) return queueId.slice(queueId.indexOf(':') + 1);
  if (queueId.startsWith('rabbitmq:')) {
    const rest = queueId.slice('rabbitmq:'.length);
    try {
      return decodeURIComponent(rest.slice(rest.indexOf('/') + 1));
    } catch {
      return rest;
    }
  }
  if (queueId.startsWith('sqs:')) {
    const rest = queueId.slice(4).replace(/\/+$/, '');
    return rest.slice(rest.lastIndexOf('/') + 1);
  }
  return queueId;
}

/**
 * Measures, reads the current settings and builds the report (stats, recommendation, duplicate
 * risk, retry schedule). Units: ms.
 * @throws QueuescopeError `INVALID_INPUT` (bad options, a source the queue does not support, a bad
 *   file), `UNSUPPORTED`, `QUEUE_NOT_FOUND`, `CANCELLED`, connection errors.
 */
export async function tuneQueue(adapter: BrokerAdapter, queueId: string, options: TuneOptions, signal?: AbortSignal): Promise<TuningReport> {
  validate(options);
  const tuning = tuningOf(adapter);
  const sources = await listSources(adapter, queueId, signal);
  const source = options.source ?? sources.find((s) => s.available)?.source;
  const offered = sources.find((s) => s.source === source);
  if (source === undefined || !offered) {
    throw new QueuescopeError('INVALID_INPUT', `The source "${String(source)}" does not apply to ${queueId}: choose one of ${sources.map((s) => s.source).join(', ')}.`, { source });
  }
  if (!offered.available) throw new QueuescopeError('UNSUPPORTED', `The source "${source}" is not available for ${queueId}: ${(offered.unavailableReason ?? 'unsupported').replace(/[.\s]+$/, '')}.`, { source });
  if (options.source === undefined && source === 'file' && !options.durations && !options.file) {
    // Chosen for the user because no broker source is available: say why those are not, not that a file is missing.
    const why = sources.filter((s) => s.source !== 'file').map((s) => `${s.source}: ${(s.unavailableReason ?? 'not available').replace(/[.\s]+$/, '')}`);
    throw new QueuescopeError('UNSUPPORTED', `No source can measure ${queueId} on this broker${why.length > 0 ? ` (${why.join('; ')})` : ''}. Measure in your workers and pass the durations: --source file --file durations.csv.`, { source });
  }
  if (offered.needsWindow) validateWindow(options.windowMs);
  const current = await tuning.readSettings(queueId, signal);
  let measurement: Measurement;
  if (source === 'file') {
    if (options.durations) measurement = importDurationsText(options.durations.text, options.durations);
    else if (options.file) measurement = await importDurations(options.file);
    else throw new QueuescopeError('INVALID_INPUT', 'The file source needs durations: a file (--file durations.csv) or pasted text.');
    options.onProgress?.({ fraction: 1, polls: 0, samples: measurement.samplesMs.length });
  } else {
    measurement = await tuning.measure(
      queueId,
      source,
      {
        windowMs: options.windowMs ?? DEFAULT_WINDOW_MS,
        ...(options.intervalMs !== undefined ? { intervalMs: options.intervalMs } : {}),
        ...(options.group !== undefined ? { group: options.group } : {}),
        ...(options.maxSamples !== undefined ? { maxSamples: options.maxSamples } : {}),
        ...(options.acceptSideEffects !== undefined ? { acceptSideEffects: options.acceptSideEffects } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      },
      signal,
    );
  }
  const effective: CurrentSettings =
    options.currentTimeoutMs !== undefined ? { ...current, timeoutMs: options.currentTimeoutMs, timeoutSource: 'entered by you' } : current;
  // An entered SQS timeout changes the visibility-timeout retry interval as well.
  if (options.currentTimeoutMs !== undefined && effective.retryPolicy?.type === 'visibility-timeout') effective.retryPolicy = { ...effective.retryPolicy, delayMs: options.currentTimeoutMs };
  return buildReport(
    { queueId, queueName: queueNameFromId(queueId), target: current.target, measurement, current: effective },
    {
      ...(options.factor !== undefined ? { factor: options.factor } : {}),
      consumerOverrideMs: options.consumerOverrideMs ?? null,
      retryPolicy: options.retryPolicy ?? null,
    },
  );
}

/**
 * Runs {@link tuneQueue} as an operation (type `tune`): progress is the fraction of the window
 * (`processed` out of `total` = 1000), cancellable; the report is the operation's `result.report`.
 * @param adapter owned by the caller (e.g. the connection manager's); not closed here.
 */
export function startTuneOperation(manager: OperationManager, label: string, adapter: BrokerAdapter, queueId: string, options: TuneOptions): OperationSnapshot {
  return manager.start('tune', label, async (ctx: OperationContext) => {
    ctx.setTotal(1000);
    const report = await tuneQueue(
      adapter,
      queueId,
      {
        ...options,
        onProgress: (p) => {
          ctx.report({ processed: Math.round(p.fraction * 1000) });
        },
      },
      ctx.signal,
    );
    ctx.report({ processed: 1000 });
    return { report: report as unknown as Record<string, unknown> };
  });
}

/** Something that records broker changes (`core/services/audit-log.ts` `AuditLog`). */
export interface AuditSink {
  append(entry: {
    actor: 'app' | 'cli';
    action: string;
    connection?: string | null;
    target?: string | null;
    status?: string | null;
    details?: Record<string, unknown>;
  }): Promise<unknown>;
}

/**
 * Applies a timeout on the broker (SQS `SetQueueAttributes` VisibilityTimeout), then appends an
 * audit-log entry `apply-visibility-timeout` with the before/after values. The caller must have
 * shown the diff and obtained confirmation.
 * @param timeoutMs whole seconds for SQS.
 * @throws QueuescopeError `UNSUPPORTED` where the broker's timeout is client/node configuration
 *   (use the snippet), `INVALID_INPUT` for an out-of-range value, broker errors. A failed audit append
 *   is reported as `INTERNAL` after the change was made (the message says so).
 */
export async function applyTimeout(
  adapter: BrokerAdapter,
  queueId: string,
  timeoutMs: number,
  audit: AuditSink,
  meta: { actor: 'app' | 'cli'; connection: string; reason?: string },
  signal?: AbortSignal,
): Promise<AppliedChange> {
  const tuning = tuningOf(adapter);
  if (!tuning.applyTimeout) {
    throw new QueuescopeError('UNSUPPORTED', `This broker's timeout is not a queue attribute Queuescope can change (it is worker, consumer or node configuration): copy the snippet instead.`);
  }
  const s = TIMEOUT_SETTINGS.sqs;
  if (!Number.isFinite(timeoutMs) || timeoutMs < s.minMs || timeoutMs > s.maxMs) throw new QueuescopeError('INVALID_INPUT', `VisibilityTimeout must be from 0 s to 12 h, got ${String(timeoutMs)} ms.`);
  const change = await tuning.applyTimeout(queueId, timeoutMs, signal);
  try {
    await audit.append({
      actor: meta.actor,
      action: 'apply-visibility-timeout',
      connection: meta.connection,
      target: queueId,
      status: 'completed',
      details: { setting: change.setting, before: change.before, after: change.after, requestedMs: timeoutMs, ...(meta.reason !== undefined ? { reason: meta.reason } : {}) },
    });
  } catch (e) {
    throw new QueuescopeError('INTERNAL', `${change.setting} was changed (${JSON.stringify(change.before)} → ${JSON.stringify(change.after)}) but the audit-log entry could not be written: ${e instanceof Error ? e.message : String(e)}`, { before: change.before, after: change.after });
  }
  return change;
}
