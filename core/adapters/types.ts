import type { ConnectionTestResult, PeekOptions, PeekPage, QueueSummary, BrokerKind } from '../../shared/domain';
import type { BrokerTuning } from './tuning-types';
import type { RedriveMover } from './redrive-types';
import type { AuditCollector } from './audit-types';

/** Options for listing queues. */
export interface ListQueuesOptions {
  /** Glob-like filter on queue names (`*` wildcard), applied by the adapter when it can page server-side. */
  pattern?: string;
  /** Upper bound on queues returned (default 10,000). */
  limit?: number;
}

/**
 * The only broker operations Queuescope uses. One implementation per broker
 * (`redis/`, `rabbitmq/`, `sqs/`, `snapshot/`), all verified by the shared contract
 * suite in `test/integration/adapter-contract.ts` against the real broker.
 *
 * Rules for implementations:
 * - Return plain JSON data (see `shared/domain`), never client objects.
 * - Throw only `QueuescopeError` with the most specific code (HOST_UNREACHABLE, AUTH_FAILED,
 *   TLS_ERROR, UNKNOWN_VHOST, MANAGEMENT_UNAVAILABLE, PERMISSION_DENIED, QUEUE_NOT_FOUND,
 *   PEEK_REFUSED, TIMEOUT, CANCELLED…); messages never contain credentials.
 * - `signal` is the last parameter of every async call; check it between batches and
 *   throw `QueuescopeError('CANCELLED', …)` when aborted.
 * - Differences between brokers are expressed in `QueueSummary.capabilities`, not in callers.
 */
export interface BrokerAdapter {
  readonly broker: BrokerKind;

  /** Connects and runs the checks "Test connection" shows. Never throws for broker-side failures: they are in the result. */
  testConnection(signal?: AbortSignal): Promise<ConnectionTestResult>;

  /** Discovers queues (bounded; never KEYS / unbounded scans). Sorted by name. */
  listQueues(options: ListQueuesOptions, signal?: AbortSignal): Promise<QueueSummary[]>;

  /** Fresh summary of one queue. @throws QueuescopeError `QUEUE_NOT_FOUND` when it does not exist (any more). */
  getQueue(queueId: string, signal?: AbortSignal): Promise<QueueSummary>;

  /**
   * Reads messages. Non-destructive where `capabilities.canPeekNonDestructively`; otherwise the
   * side effects are as declared, and when `capabilities.peekMayDeadLetter !== false` the call
   * throws `PEEK_REFUSED` (changing nothing) unless `options.acceptSideEffects` is true.
   * @throws QueuescopeError `QUEUE_NOT_FOUND`, `INVALID_INPUT` (bad cursor/state), `PEEK_REFUSED`.
   */
  peek(queueId: string, options: PeekOptions, signal?: AbortSignal): Promise<PeekPage>;

  /** Releases connections. Idempotent. */
  close(): Promise<void>;

  /** DLQ redrive operations (see `redrive-types.ts`); absent where the connection cannot move messages (snapshots). */
  readonly redrive?: RedriveMover;

  /** Visibility-timeout tuning: measurement, current settings, apply (see `tuning-types.ts`); absent where unsupported (snapshots). */
  readonly tuning?: BrokerTuning;

  /** Configuration audit: collects the facts the audit rules read, applies safe fixes (see `audit-types.ts`); absent for snapshots. */
  readonly audit?: AuditCollector;

  /**
   * The broker server's version, e.g. `3.13.7` (RabbitMQ: `rabbitmq_version` of the management API
   * `/api/overview`), for version-dependent defaults such as RabbitMQ's `max_message_size` (128 MiB
   * on 3.8–3.13, 16 MiB since 4.0). Absent where the adapter cannot report one; resolves `null`
   * when the version is unknown (not reported, not reachable).
   * @throws QueuescopeError `CANCELLED` only.
   */
  brokerVersion?(signal?: AbortSignal): Promise<string | null>;
}
