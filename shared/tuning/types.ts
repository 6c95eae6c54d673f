/**
 * Data shapes of visibility-timeout tuning, shared by the adapters (which measure), core/tuning
 * (which orchestrates), the CLI and the app. Units: **ms everywhere**.
 */
import type { TuningTarget } from './brokers';
import type { RetryPolicy } from './retry';

/**
 * Where processing times come from:
 * - `bullmq`: BullMQ `processedOn → finishedOn` of completed and failed jobs (exact per job).
 * - `pel`: Redis Streams pending entries list sampled over a window (bounded per entry).
 * - `littles-law`: mean time in flight = in-flight ÷ completion rate, sampled over a window
 *   (RabbitMQ management API; SQS queue attributes while the queue drains). A mean, not a tail.
 * - `cloudwatch`: SQS Little's law from CloudWatch metrics.
 * - `file`: durations imported from CSV / JSONL / log lines.
 */
export const TUNING_SOURCES = ['bullmq', 'pel', 'littles-law', 'cloudwatch', 'file'] as const;
export type TuningSource = (typeof TUNING_SOURCES)[number];

/** How sure a source is. */
export type Confidence = 'exact' | 'bounded' | 'mean-only' | 'imported';

/** A source as offered for one queue. */
export interface SourceOption {
  source: TuningSource;
  /** What it measures, one sentence. */
  measures: string;
  confidence: Confidence;
  /** Why this confidence (its error bound or blind spot). */
  confidenceNote: string;
  /** False when it cannot run for this queue; `unavailableReason` says why. */
  available: boolean;
  unavailableReason?: string;
  /** True when it needs traffic during a window (sampling), false when it reads history. */
  needsWindow: boolean;
}

/** Redelivery evidence seen while measuring. */
export interface RedeliveryEvidence {
  /** Deliveries seen with a delivery/receive count > 1 (or jobs with attemptsMade > 1). */
  redelivered: number;
  /** Out of how many observed. */
  observed: number;
  /** Rate per second where the broker reports one (RabbitMQ redeliver rate), else null. */
  ratePerSecond: number | null;
  /** Distribution: count → how many (e.g. SQS ApproximateReceiveCount of peeked messages). */
  histogram: { count: number; messages: number }[];
  note: string;
}

/** The result of one measurement. */
export interface Measurement {
  source: TuningSource;
  measures: string;
  confidence: Confidence;
  confidenceNote: string;
  /** Per-message processing times, ms (empty for mean-only sources). */
  samplesMs: number[];
  /** Mean time in flight for mean-only sources, ms (null when it could not be estimated). */
  meanMs: number | null;
  /** Samples that are bounds: each within ± this many ms of the truth (PEL sampling: half the interval). */
  sampleErrorMs: number | null;
  redeliveries: RedeliveryEvidence | null;
  /** Retry policy found on the broker (BullMQ job options), if any. */
  retryPolicy: RetryPolicy | null;
  /** Window actually measured, ms since epoch (null for history reads / files). */
  startedAt: number | null;
  endedAt: number | null;
  /** Samples taken of the broker (sampling sources). */
  polls: number;
  /** Things the user should know (gaps, lags, assumptions), sentences. */
  notes: string[];
}

/** The queue's current settings as read from the broker (or entered by the user). */
export interface CurrentSettings {
  target: TuningTarget;
  /** Timeout in effect, ms (null: unknown). */
  timeoutMs: number | null;
  /** Where `timeoutMs` came from, in words ("queue attribute VisibilityTimeout", "BullMQ default — worker options cannot be read"…). */
  timeoutSource: string;
  /** Deliveries before dead-lettering (SQS maxReceiveCount, quorum delivery-limit + 1), null when none/unknown. */
  maxReceiveCount: number | null;
  /** Name of the dead-letter target, if any. */
  deadLetterTarget: string | null;
  /** Broker version when known (RabbitMQ `rabbitmq_version`). */
  brokerVersion: string | null;
  /** RabbitMQ: whether a per-queue consumer timeout is supported by this version (null: unknown / not RabbitMQ). */
  perQueueTimeoutSupported: boolean | null;
  /** Retry policy in force (SQS: the visibility-timeout interval × maxReceiveCount). */
  retryPolicy: RetryPolicy | null;
  /** Values for snippets. */
  queueUrl?: string;
  streamKey?: string;
  group?: string;
  vhost?: string;
  notes: string[];
}

/** Options of a sampling measurement. */
export interface MeasureOptions {
  /** Window length, ms (sampling sources). */
  windowMs: number;
  /** Time between two samples, ms (default per source). */
  intervalMs?: number;
  /** History reads: most recent jobs read at most (BullMQ, default 10,000). */
  maxSamples?: number;
  /** Redis Streams: the consumer group whose PEL is sampled (default: the first group). */
  group?: string;
  /**
   * Allow reads that count as a delivery (SQS: receiving up to 10 messages with VisibilityTimeout 0
   * to read their ApproximateReceiveCount — with a RedrivePolicy this can move a message to the DLQ).
   */
  acceptSideEffects?: boolean;
  /** Called after each poll with the fraction done (0–1) and what was seen so far. */
  onProgress?: (p: { fraction: number; polls: number; samples: number }) => void;
}
