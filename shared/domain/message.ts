/**
 * The message model shared by every adapter, snapshots, the UI and the CLI.
 * Everything is plain JSON so it crosses IPC and is written as one JSONL line.
 */

/** A message body as raw bytes. */
export interface MessageBody {
  /**
   * `utf8`: `data` is the body text (the bytes were valid UTF-8).
   * `base64`: `data` is the raw bytes base64-encoded (binary or invalid UTF-8).
   */
  encoding: 'utf8' | 'base64';
  data: string;
  /** Size of the original body in bytes. */
  sizeBytes: number;
  /** True when the adapter cut the body at its read limit; `sizeBytes` is still the full size when known. */
  truncated: boolean;
}

/** Header / attribute values: AMQP field tables and SQS attributes reduced to JSON. */
export type HeaderValue = string | number | boolean | null | HeaderValue[] | { [k: string]: HeaderValue };

/** One `x-death` entry as RabbitMQ writes it (times in ms since epoch). */
export interface XDeathEntry {
  count: number;
  reason: string;
  queue: string;
  exchange: string;
  routingKeys: string[];
  time: number | null;
}

/** Broker metadata, normalised. Every field optional; absent = the broker does not have it. Times are ms since epoch; durations in ms. */
export interface MessageMeta {
  /** State within the queue: BullMQ `waiting|active|delayed|completed|failed|…`, stream `pending|delivered|new`, `ready` for RabbitMQ, `visible` for SQS. */
  state?: string;
  /** When the message entered the queue (SQS SentTimestamp, stream id time, BullMQ timestamp, AMQP timestamp property). */
  enqueuedAt?: number | null;
  /** SQS ApproximateFirstReceiveTimestamp. */
  firstReceivedAt?: number | null;
  /** SQS ApproximateReceiveCount, quorum x-delivery-count, stream delivery count. */
  receiveCount?: number | null;
  /** AMQP redelivered flag as seen by the peek. */
  redelivered?: boolean | null;
  /** Stream pending entry idle time. */
  idleMs?: number | null;
  /** Stream consumer that owns the pending entry / consumer group name. */
  consumer?: string | null;
  consumerGroup?: string | null;
  /** BullMQ */
  jobName?: string;
  attemptsMade?: number;
  attemptsLimit?: number | null;
  failedReason?: string | null;
  stacktrace?: string[];
  processedOn?: number | null;
  finishedOn?: number | null;
  delayMs?: number | null;
  /** RabbitMQ dead-letter history. */
  xDeath?: XDeathEntry[];
  firstDeathReason?: string | null;
  firstDeathQueue?: string | null;
  firstDeathExchange?: string | null;
  /** AMQP routing */
  exchange?: string | null;
  routingKey?: string | null;
  /** SQS FIFO */
  messageGroupId?: string | null;
  messageDeduplicationId?: string | null;
  /**
   * Where {@link messageDeduplicationId} came from, when the adapter could tell: `content` = it is
   * the lowercase hex SHA-256 of the body (UTF-8), i.e. SQS made it for a queue with
   * `ContentBasedDeduplication` (the hash equality is the proof; the queue attribute is not read).
   * Absent = not known to be content-based (an id the sender chose, or no id).
   */
  deduplicationIdSource?: 'content';
  sequenceNumber?: string | null;
}

export interface QueueMessage {
  /** Broker id: stream entry id, BullMQ job id, SQS MessageId, AMQP message_id (or `#<position>` when absent), list index. */
  id: string;
  /** Queue id ({@link QueueSummary.id}) the message was read from. */
  queueId: string;
  /** Display name of that queue. */
  queueName: string;
  /** 0-based position in the order read (head first), when meaningful. */
  position: number | null;
  body: MessageBody;
  /** Application headers: AMQP headers, SQS MessageAttributes, stream fields besides the body field, BullMQ opts. */
  headers: Record<string, HeaderValue>;
  /** Transport properties: AMQP basic properties, SQS system attributes, raw stream fields. */
  properties: Record<string, HeaderValue>;
  meta: MessageMeta;
}

/** Options for one peek call. */
export interface PeekOptions {
  /** Opaque cursor from a previous page; null/absent = from the head. */
  cursor?: string | null;
  /** Maximum messages to return (1–1000; the adapter may cap lower, see `maxPeekWindow`). */
  limit: number;
  /** Which end to start from, for brokers that can read both ways (streams, lists, BullMQ). Default `oldest`. */
  direction?: 'oldest' | 'newest';
  /** A state from `capabilities.peekStates` (BullMQ `failed`, stream `pending`…). */
  state?: string;
  /**
   * Required to be true when `capabilities.peekSideEffects` is non-empty and a side effect could
   * dead-letter messages; otherwise the adapter throws `PEEK_REFUSED` and changes nothing.
   */
  acceptSideEffects?: boolean;
  /** Bodies longer than this many bytes are truncated in the result (default 1 MiB + 1 KiB, so a 1 MiB SQS body fits). */
  maxBodyBytes?: number;
}

/** One page of peeked messages. */
export interface PeekPage {
  messages: QueueMessage[];
  /** Cursor for the next page; null at the end or when the adapter cannot page. */
  nextCursor: string | null;
  /** Total messages in the selected state when known. */
  total: number | null;
  /** Side effects this peek actually caused, one sentence each for people (empty when non-destructive). */
  sideEffects: string[];
  /**
   * Entries of this page's range that `total` counts but that hold no message, so none is returned
   * for them (BullMQ: a job id in the state whose job hash is gone — removed after its id was read,
   * or an orphan id). Absent = 0.
   */
  missing?: number;
  /**
   * Set on a page read with a cursor when the queue's entries moved since the previous page (Redis
   * lists: entries pushed or popped at the end read from shift every index). `realigned: true`: the
   * adapter found the last entries the previous page returned again by their content and this page
   * starts right after them, so nothing was skipped or read twice. `realigned: false`: it could not
   * tell where they are now; `uncertain` entries (null = an unknown number) may have been skipped
   * or read twice between the two pages, and a reader must not call its read complete. `note` says
   * so in one sentence for people. Absent = no move seen.
   */
  moved?: { realigned: boolean; uncertain: number | null; note: string };
}
