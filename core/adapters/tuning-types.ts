import { QueuescopeError } from '../../shared/domain';
import type { CurrentSettings, MeasureOptions, Measurement, SourceOption, TuningSource } from '../../shared/tuning';

/** Before/after values of an applied change (broker attribute names → values as the broker reports them). */
export interface AppliedChange {
  setting: string;
  before: Record<string, string>;
  after: Record<string, string>;
}

/**
 * Broker access for visibility-timeout tuning (issue 5). Exposed by an adapter as the optional
 * `BrokerAdapter.tuning`; `core/tuning` uses only this interface. Units: **ms** everywhere.
 *
 * Rules as for {@link BrokerAdapter}: plain data out, `QueuescopeError` only (QUEUE_NOT_FOUND,
 * UNSUPPORTED, INVALID_INPUT, CANCELLED…), `signal` last and checked between polls.
 * Measuring is read-only on every broker (XPENDING, HMGET, management API GETs, GetQueueAttributes).
 */
export interface BrokerTuning {
  /**
   * The measurement sources this queue supports (the `file` source is added by core/tuning), each
   * with what it measures and its confidence.
   * @throws QueuescopeError `QUEUE_NOT_FOUND`, `UNSUPPORTED` (a queue kind with no in-flight state, e.g. a plain Redis list).
   */
  sources(queueId: string, signal?: AbortSignal): Promise<SourceOption[]>;

  /**
   * Reads the timeout in effect and the dead-letter limit (SQS VisibilityTimeout + RedrivePolicy;
   * RabbitMQ version, per-queue consumer-timeout policy/argument, delivery limit; BullMQ: the default
   * lockDuration, because worker options are not stored in Redis).
   * @throws QueuescopeError `QUEUE_NOT_FOUND`, `UNSUPPORTED`, connection errors.
   */
  readSettings(queueId: string, signal?: AbortSignal): Promise<CurrentSettings>;

  /**
   * Measures processing time with one source. Sampling sources run for `options.windowMs` and
   * report progress through `options.onProgress`.
   * @throws QueuescopeError `INVALID_INPUT` (a source this queue does not support), `UNSUPPORTED`
   *   (e.g. CloudWatch not reachable), `CANCELLED`, connection errors.
   */
  measure(queueId: string, source: TuningSource, options: MeasureOptions, signal?: AbortSignal): Promise<Measurement>;

  /**
   * Changes the queue's timeout where the broker allows it (SQS `SetQueueAttributes` VisibilityTimeout),
   * reading the value before and after. Absent on brokers where the timeout is client/node configuration.
   * @param timeoutMs whole seconds for SQS (0–43,200,000 ms).
   * @throws QueuescopeError `INVALID_INPUT` (out of range / not whole seconds), `PERMISSION_DENIED`, `QUEUE_NOT_FOUND`.
   */
  applyTimeout?(queueId: string, timeoutMs: number, signal?: AbortSignal): Promise<AppliedChange>;
}

/**
 * Waits `ms` between two polls of a sampling measurement.
 * @throws QueuescopeError `CANCELLED` when `signal` aborts (at once, not after the wait).
 */
export function sleepBetweenPolls(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const cancelled = (): QueuescopeError => new QueuescopeError('CANCELLED', 'The measurement was cancelled.');
    if (signal?.aborted === true) {
      reject(cancelled());
      return;
    }
    const onAbort = (): void => {
      clearTimeout(t);
      reject(cancelled());
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
