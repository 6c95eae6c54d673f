import type { AuditFacts, AuditFix, FixPreview } from '../../shared/audit/types';

/** Options of {@link AuditCollector.collect}. */
export interface AuditCollectOptions {
  /** Only queues whose name matches (`*` wildcard); the whole connection is still read to resolve dead-letter links. */
  pattern?: string;
  /**
   * SQS only: receive up to this many messages per queue to check payload sizes and
   * MessageDeduplicationId (0 / absent = off). Each receive adds 1 to `ApproximateReceiveCount`
   * and can dead-letter a message at `maxReceiveCount`, so it is opt-in; messages are made
   * visible again at once.
   */
  sampleMessages?: number;
}

/**
 * Reads what the audit rules (`shared/audit`) need from one broker — configuration only, never
 * message contents (except the opt-in SQS sample) — and applies the safe one-click fixes.
 * Implemented per broker in `core/adapters/<broker>/audit.ts`; exposed as `BrokerAdapter.audit`.
 */
export interface AuditCollector {
  /**
   * Collects the facts. Parts that cannot be read become `null` facts or `notes`, not errors.
   * @throws QueuescopeError for connection failures (HOST_UNREACHABLE, AUTH_FAILED, MANAGEMENT_UNAVAILABLE…) and `CANCELLED`.
   */
  collect(options: AuditCollectOptions, signal?: AbortSignal): Promise<AuditFacts>;
  /**
   * What applying `fix` would change, read fresh from the broker (nothing is changed).
   * @throws QueuescopeError `INVALID_INPUT` for a fix of another broker or one that no longer applies
   *   (e.g. the queue got a RedrivePolicy meanwhile), `QUEUE_NOT_FOUND`.
   */
  previewFix(fix: AuditFix, signal?: AbortSignal): Promise<FixPreview>;
  /**
   * Applies `fix` (SQS SetQueueAttributes RedrivePolicy; RabbitMQ PUT /api/policies) and returns
   * the settings read back before and after. Same errors as {@link previewFix}, plus `PERMISSION_DENIED`.
   */
  applyFix(fix: AuditFix, signal?: AbortSignal): Promise<FixPreview>;
}
