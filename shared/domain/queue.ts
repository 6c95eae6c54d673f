import type { BrokerKind } from './connection';

/**
 * What kind of queue a {@link QueueSummary} describes. The UI shows it as a badge;
 * logic must not branch on it for broker behaviour — use {@link QueueCapabilities}.
 */
export type QueueKind =
  | 'bullmq'
  | 'redis-stream'
  | 'redis-list'
  | 'rabbitmq-classic'
  | 'rabbitmq-quorum'
  | 'rabbitmq-stream'
  | 'sqs-standard'
  | 'sqs-fifo'
  | 'snapshot';

/**
 * A state change a peek causes on the broker. Adapters declare these as data so the
 * app and CLI can state them before peeking and refuse when they are dangerous.
 */
export interface PeekSideEffect {
  /**
   * - `redelivered-flag`: messages come back with `redelivered=true` (RabbitMQ get + requeue).
   * - `delivery-count`: each peek counts as a delivery (quorum `x-delivery-count`, SQS `ApproximateReceiveCount`).
   * - `may-dead-letter`: a peek can move messages to the dead-letter queue (quorum at `x-delivery-limit`, SQS at `maxReceiveCount`).
   * - `temporarily-invisible`: messages are hidden from consumers for a moment while read (SQS), or held unacked (RabbitMQ).
   * - `reorders`: requeued messages may change position.
   */
  kind: 'redelivered-flag' | 'delivery-count' | 'may-dead-letter' | 'temporarily-invisible' | 'reorders';
  /** One sentence for people, e.g. "Each peek adds 1 to ApproximateReceiveCount; at maxReceiveCount 3 the next receive moves the message to orders-dlq." */
  description: string;
}

/**
 * Per-queue capabilities. `null` means "unknown" (e.g. the broker did not say), which is
 * different from `false`; docstrings on the consumers say how they treat `null`.
 */
export interface QueueCapabilities {
  /** Reading messages changes nothing on the broker (XRANGE, LRANGE, BullMQ job reads, snapshots). */
  canPeekNonDestructively: boolean;
  /** Side effects of a peek, empty when non-destructive. */
  peekSideEffects: PeekSideEffect[];
  /**
   * True when a peek can dead-letter messages (so peeking is refused unless the caller
   * passes `acceptSideEffects: true`), false when it cannot, null when unknown.
   */
  peekMayDeadLetter: boolean | null;
  /** The adapter can resume a peek from a cursor anywhere in the queue (so queues of any size can be paged). */
  canPageFromCursor: boolean;
  /** Largest number of messages one peek returns; for non-pageable brokers also the deepest reachable position. */
  maxPeekWindow: number;
  /** Message states that can be peeked separately (BullMQ `waiting`, `failed`…; stream `pending`). Empty if one state. */
  peekStates: string[];
  /**
   * How a consumer holds messages it has received but not settled: `unacknowledged` (RabbitMQ
   * classic/quorum) or `in-flight` (SQS, invisible until deleted or the visibility timeout ends).
   * Held messages are still in the queue (`inFlight` counts them when known) but no peek or redrive
   * can read them until they are released. Absent where nothing holds messages that way (Redis,
   * RabbitMQ streams, snapshots).
   */
  heldByConsumers?: 'unacknowledged' | 'in-flight';
}

/** A dead-letter link out of a queue, as resolved from broker configuration. */
export interface DeadLetterTarget {
  /** Queue id (within the same connection) of the DLQ, or null when the link could not be resolved to a queue. */
  queueId: string | null;
  /** Display name of the DLQ when known. */
  queueName: string | null;
  /**
   * Where the link comes from, in words: "RedrivePolicy (maxReceiveCount 3)",
   * "x-dead-letter-exchange 'dlx' routing key 'work' (argument)", "policy 'dlx-all'".
   */
  via: string;
  /** Problem with the link, e.g. "exchange 'dlx' has no binding for routing key 'work': dead letters are dropped". */
  problem?: string;
  /** SQS maxReceiveCount / RabbitMQ x-delivery-limit when the link has one. */
  maxReceiveCount?: number | null;
}

/** One row of the queue list. All counts are messages; `null` = unknown / not applicable. */
export interface QueueSummary {
  /** Stable id within the connection, e.g. `bullmq:payments`, `stream:orders`, `list:emails`, `rabbitmq:%2F/work`, `sqs:https://…/orders`. */
  id: string;
  /** Name as the broker shows it. */
  name: string;
  broker: BrokerKind;
  kind: QueueKind;
  /** Ready / visible / waiting messages; for a stream, its length. */
  depth: number | null;
  /** Unacked (RabbitMQ), not visible (SQS), pending entries (streams), active (BullMQ). */
  inFlight: number | null;
  /** Delayed (SQS, BullMQ) messages. */
  delayed: number | null;
  /** Consumers where the broker reports them (RabbitMQ, stream consumer groups' consumers). */
  consumers: number | null;
  /** Broker-specific counts shown in detail, e.g. BullMQ `{ waiting, active, delayed, completed, failed, paused, prioritized, waiting-children }`. */
  counts: Record<string, number>;
  /** Outgoing dead-letter links (usually zero or one). */
  deadLetterTargets: DeadLetterTarget[];
  /** Queue ids of the queues that dead-letter into this one. Non-empty ⇒ this is a DLQ. */
  deadLetterSources: string[];
  /** True if this queue is a DLQ (has sources, or is named/configured as one). */
  isDeadLetterQueue: boolean;
  capabilities: QueueCapabilities;
  /** Broker configuration for the detail panel: arguments, effective policy, attributes, consumer groups… Plain JSON. */
  config: Record<string, unknown>;
}
