/**
 * Public types of the redelivery-safety analysis (issue 3): idempotency keys, payload field
 * classes, size checks, per-queue summaries and duplicate comparisons. Pure data, JSON-safe
 * (crosses IPC and is printed by `queuescope inspect --json`). The rules themselves are listed in
 * shared/analysis/README.md, in the order they are applied.
 */
import type { QueueMessage } from '../domain';
import type { KeyExtraction, KeyHeader, KeyRule, KeyVerdict, KeyVerdictKind } from './idempotency';

export type { KeyExtraction, KeyHeader, KeyRule, KeyVerdict, KeyVerdictKind };

// ---------------------------------------------------------------------------------------------
// Options

/**
 * Per-queue analysis rules, resolved for one queue (the CLI / app store them per queue pattern in
 * `queuescope.config.json` and in the connection profile; see {@link resolveInspectRules}).
 */
export interface InspectRules {
  /** Idempotency-key rules tried before the built-in ones, in order (see {@link KeyRule}). */
  keyRules: KeyRule[];
  /**
   * Body fields the team sends as an intentional point-in-time snapshot. Glob paths over the
   * message body, with or without a leading `body.`, matched against the path inside the body and
   * against the path inside the job/event envelope (so `order.*` matches `body.data.order.status`
   * in a BullMQ/CloudEvents envelope). `*` matches one path segment, `**` any number (also zero),
   * `[*]` or `[]` any array index; a pattern also covers everything below what it matches
   * (`order` ≡ `order.**`), and a trailing `*` / `[*]` also covers the container itself.
   */
  snapshotFields: string[];
  /** The whole queue carries intentional snapshots (e.g. an audit/event log): no payload is flagged, and the verdict says so. */
  queueIsSnapshot: boolean;
  /**
   * Broker message size limit in bytes, when known from the broker (SQS `MaximumMessageSize`
   * attribute, RabbitMQ `max_message_size`). Absent: the broker's documented default
   * (see {@link SizeCheck.limitSource}).
   */
  maxMessageBytes?: number;
}

/** Broker family for the size limit; derived from {@link QueueMessage.queueId}'s prefix when not given. */
export type AnalysisBroker = 'sqs' | 'rabbitmq' | 'redis' | 'unknown';

/** Options of {@link analyzeMessage}. Everything optional. */
export interface AnalyzeOptions {
  /** Rules resolved for the message's queue; missing members default as in {@link DEFAULT_INSPECT_RULES}. */
  rules?: Partial<InspectRules>;
  /** Broker family; default from the queue id prefix (`sqs:`, `rabbitmq:`, `bullmq:`/`stream:`/`list:` = redis). */
  broker?: AnalysisBroker;
  /**
   * Broker version when known (e.g. RabbitMQ `rabbitmq_version` from the management API overview):
   * picks the documented default size limit (RabbitMQ 3.8–3.13: 128 MiB; 4.0+: 16 MiB).
   */
  brokerVersion?: string | null;
  /**
   * `full` (default): field annotations for every classified field (at most {@link MAX_FIELD_ANNOTATIONS}).
   * `verdict`: only the verdicts and reasons (`payload.fields` is empty) — what summaries use; faster.
   */
  detail?: 'full' | 'verdict';
}

// ---------------------------------------------------------------------------------------------
// Payload fields

/**
 * How a body field behaves under redelivery:
 * - `identifier`: names an entity or the operation (`id`, `orderId`, `order_id`, UUIDs, `sku`, references);
 * - `mutable-state`: state of an entity that can change between send and (re)processing
 *   (status, quantities, addresses, contact details, names, line items, `updated_at`, nested entity objects);
 * - `immutable-snapshot`: a value fixed at send time on purpose (confirmed amounts, event facts and
 *   times, values under a snapshot / event-time marker, new values a command sets, user-marked snapshot fields);
 * - `unknown`: none of the rules applied.
 */
export type FieldClass = 'identifier' | 'mutable-state' | 'immutable-snapshot' | 'unknown';

/** One classified body field. */
export interface FieldAnnotation {
  /**
   * Path from the message root in {@link readMessagePath} syntax, e.g. `body.data.order.status`,
   * `body.items[0].sku`. Inside JSON carried in a string field (SNS `Message`, CloudEvents `data`
   * as a string…) the path continues below the string field: `body.Message.order.id`; see {@link jsonIn}.
   */
  path: string;
  class: FieldClass;
  /** One short sentence: which rule classified it and on what evidence. */
  why: string;
  /** Set when the field lives in JSON decoded from a string field: that string field's path (e.g. `body.Message`). */
  jsonIn?: string;
}

/** Message verdict: `ok` (safe to redeliver as far as the payload goes), `review`, `flag`. Ordered by severity. */
export type PayloadVerdictKind = 'ok' | 'review' | 'flag';

/**
 * Identifiers of the payload/size rules, in the order they are applied (see README.md).
 * `invalid-json` (rule P1b, review): a whole text body declared or opening as JSON that does not parse.
 * `analysis-limit` (rule P10, review): the walk stopped at one of its bounds (members per object,
 * elements per array, depth, values, JSON strings) and the fields beyond were not classified.
 * `key-headers` (rule K1b): the key's header rule matched several headers (`Idempotency-Key` and
 * `idempotency-key`, or `Idempotency-Key` and `X-Idempotency-Key`): review when their values
 * differ (the key is ambiguous), ok when they agree. It is a finding of the payload part so it
 * counts in the verdict, the reasons and the summary like the payload rules.
 * `key-header-body` (rule K1c): the built-in header rule found the key and the body also holds one
 * in a key field of the body rule (`body.idempotencyKey`…): review when the values differ (a
 * consumer reading the body field deduplicates on another key), ok when they agree. A payload-part
 * finding like `key-headers`.
 */
export type PayloadRuleId =
  | 'not-json'
  | 'invalid-json'
  | 'entry-deleted'
  | 'truncated'
  | 'queue-snapshot'
  | 'embedded-entity'
  | 'loose-state'
  | 'analysis-limit'
  | 'event-snapshot'
  | 'command-values'
  | 'user-snapshot'
  | 'no-mutable-state'
  | 'large-payload'
  | 'over-limit'
  | 'key-headers'
  | 'key-header-body';

/** One reason behind a verdict, in words, with the fields it cites. */
export interface Finding {
  rule: PayloadRuleId;
  /** What this finding alone would make the verdict. */
  severity: PayloadVerdictKind;
  /** One sentence citing fields in backticks, e.g. "`order.status` and `order.shippingAddress` embed state that can change before a retry; send `orderId` and read current state." */
  text: string;
  /** Message paths it cites (`body.…`). */
  fields: string[];
}

/** Payload part of a {@link MessageAnalysis}. */
export interface PayloadAnalysis {
  verdict: PayloadVerdictKind;
  /** The verdict as shown: `flag`, `review`, `ok`, or e.g. `ok (intentional snapshot: order.*)`. */
  label: string;
  /** The top reasons in words, most severe first (at most {@link MAX_REASONS}); `findings[i].text`. */
  reasons: string[];
  /** The same reasons with rule ids and cited paths. */
  findings: Finding[];
  /** Classified fields, document order (empty with `detail: 'verdict'`). */
  fields: FieldAnnotation[];
  /** True when more fields existed than were annotated (see {@link MAX_FIELD_ANNOTATIONS}) or the walk hit its bounds. */
  fieldsTruncated: boolean;
  /** The job/event envelope recognised, e.g. `CloudEvents`, `EventBridge`, `SNS notification`, `Sidekiq job`; null when none. */
  envelope: string | null;
  /** Path of the arguments inside the envelope (e.g. `body.detail`), `body` when no envelope. */
  argumentsPath: string;
  /** What the body is: JSON, text, binary, or empty. */
  format: 'json' | 'text' | 'binary' | 'empty';
  /** The user snapshot patterns (or `*` for a snapshot queue) that turned a flag/review into ok; empty when none. */
  intentionalSnapshot: string[];
}

/** Body size against the broker limit. */
export interface SizeCheck {
  /** Body size in bytes as the broker reported it ({@link MessageBody.sizeBytes}). */
  bytes: number;
  /** The limit in bytes; null when the broker has no practical per-message limit (Redis: 512 MB strings). */
  limitBytes: number | null;
  /** Where the limit came from, e.g. "SQS MaximumMessageSize attribute", "SQS default (256 KiB)", "RabbitMQ 4.x default max_message_size (16 MiB)". */
  limitSource: string;
  /** `ok`; `large` (≥ {@link LARGE_SHARE} of the limit, or ≥ {@link LARGE_ABSOLUTE_BYTES} without a limit) → review; `over-limit` → flag. */
  verdict: 'ok' | 'large' | 'over-limit';
  /** The sentence for a `large`/`over-limit` verdict (starts with "large payload"), null when ok. */
  reason: string | null;
}

/** Everything {@link analyzeMessage} says about one message. */
export interface MessageAnalysis {
  /** {@link QueueMessage.id}. */
  messageId: string;
  /** The idempotency key and where it was found; null when none. */
  key: KeyExtraction | null;
  keyVerdict: KeyVerdict;
  payload: PayloadAnalysis;
  size: SizeCheck;
  /** Worst of the payload verdict and the size verdict (`large` → review, `over-limit` → flag). */
  verdict: PayloadVerdictKind;
  /** Payload reasons and the size reason, most severe first (flag, review, ok; the payload's first among equals), so `reasons[0]` explains {@link verdict}; at most {@link MAX_REASONS} + 1. */
  reasons: string[];
  /** The operation the message asks for / reports (job name, `type`, `operation`, `command`…), see README; null when none. */
  operation: string | null;
  /** Where {@link operation} came from, e.g. `meta.jobName`, `body.type`. */
  operationSource: string | null;
  /**
   * Hash of the business payload: the body JSON minus the key's fields and per-send envelope
   * metadata (ids, timestamps, signatures), order-independent for object members. Null for non-JSON bodies.
   * Two messages with the same hash carry the same business content.
   */
  businessHash: string | null;
}

// ---------------------------------------------------------------------------------------------
// Queue summary

/** Messages sharing one idempotency key within the analysed set. */
export interface DuplicateGroup {
  key: string;
  /** Messages carrying the key. */
  count: number;
  /** Up to {@link SummaryOptions.examplesPerGroup} message ids, first seen first. */
  exampleIds: string[];
}

/**
 * One key used for different operations. Names that are spellings of one operation (equal ignoring
 * case, or one's words all among the other's: `order.charge` and `charge`; see `sameOperation`)
 * count as one operation, shown by the first spelling seen.
 */
export interface KeyCollision {
  key: string;
  /** The operations seen under the key (at most 16), each with a count and example ids, most messages first. */
  operations: { operation: string; count: number; exampleIds: string[] }[];
  /** One sentence, e.g. "key `A-1001:charge` is used for `order.created` (1) and `order.paid` (1): a handler that deduplicates on it will skip one of them." */
  reason: string;
}

/**
 * The same business payload in two or more messages that a consumer cannot recognise as copies:
 * under different keys, or without an idempotency key (at least one message has none). Copies
 * under one and the same key are a {@link DuplicateGroup} instead.
 */
export interface SamePayloadGroup {
  /** {@link MessageAnalysis.businessHash}. */
  hash: string;
  /** Messages with this payload (with or without a key). */
  count: number;
  /** Distinct keys seen (at most {@link SummaryOptions.examplesPerGroup}); `distinctKeys` counts all. Empty when no message had a key. */
  keys: string[];
  /** Distinct keys (at most 32 are told apart; the reason says `32+`). 0 when no message had a key. */
  distinctKeys: number;
  /** Messages with this payload and no idempotency key (`keyVerdict` `missing`); 0 when all had one. */
  withoutKey: number;
  exampleIds: string[];
  /**
   * One sentence, e.g. "3 messages carry the same payload under 3 different keys: the key is not
   * derived from the business data, …", "2 messages carry the same payload without an idempotency
   * key: …", or "3 messages carry the same payload, 2 without an idempotency key and 1 under one key: …".
   */
  reason: string;
}

/** Options of {@link createQueueSummary} / {@link summarizeQueue}: {@link AnalyzeOptions} plus bounds. */
export interface SummaryOptions extends AnalyzeOptions {
  /** Distinct keys / payload hashes tracked for grouping (default {@link DEFAULT_MAX_TRACKED}); beyond it new keys are counted but not grouped, and `bounds.capped` says so. */
  maxTracked?: number;
  /** Groups returned per list (default 50), largest first. */
  maxGroups?: number;
  /** Example message ids per group (default 5). */
  examplesPerGroup?: number;
  /**
   * Whether {@link createQueueSummary}'s `add()` returns raw messages' analyses with every sentence
   * (default true: what {@link analyzeMessage} gives). With false it returns the cheaper analysis
   * `summarizeQueue` uses internally, which has the same verdicts (key, payload, overall), key,
   * size check (with its sentence), operation, business hash, payload label, field annotations (per
   * `detail`), findings (rule, severity and order) and texts and fields of `flag`/`review` findings,
   * lacks the sentences built from the message:
   * - `keyVerdict.reason` is `''` (the fixed sentences for a missing key or an analysis that failed stay);
   * - for JSON bodies, `ok` findings have `text` `''` and `fields` `[]`, and `payload.reasons` is
   *   `[]` (other bodies — empty, text, binary, truncated — keep their one fixed sentence);
   * - `reasons` is `[]`, one array shared by such analyses: do not modify it (a message that could
   *   not be analysed at all keeps its one fixed sentence).
   *
   * The summary is the same either way. Analyses passed to `add()` are used and returned as they are.
   */
  sentences?: boolean;
}

/** A reason counted over the queue. */
export interface ReasonCount {
  rule: PayloadRuleId;
  severity: PayloadVerdictKind;
  count: number;
  /** The text of the first message with this reason. */
  example: string;
  exampleIds: string[];
}

/** The per-queue "redelivery safety" summary. All counts are messages. */
export interface RedeliverySummary {
  total: number;
  /** Messages per key verdict (every verdict present, 0 when none). */
  keyVerdicts: Record<KeyVerdictKind, number>;
  /** Share (0–1) of messages whose key is business-derived; 0 for an empty set. */
  businessDerivedShare: number;
  /** Messages per overall verdict (payload and size). */
  verdicts: Record<PayloadVerdictKind, number>;
  flagged: number;
  review: number;
  /** Messages whose size check is `large` or `over-limit`. */
  largePayloads: number;
  /** Payload/size reasons by rule, most frequent first. */
  reasons: ReasonCount[];
  /** Keys carried by more than one message, largest first (at most `maxGroups`). */
  duplicateGroups: DuplicateGroup[];
  /** All duplicate groups found among tracked keys (may exceed `duplicateGroups.length`). */
  duplicateGroupCount: number;
  /** Messages in duplicate groups beyond the first of each (the redundant copies). */
  duplicateMessages: number;
  /** Keys used for different operations (rule D2), most messages first (at most `maxGroups`). */
  keyCollisions: KeyCollision[];
  keyCollisionCount: number;
  /**
   * Payloads a consumer cannot recognise as copies (rule D3): the same business payload under
   * different keys, or without a key ({@link SamePayloadGroup.withoutKey} > 0); most messages first
   * (at most `maxGroups`).
   */
  samePayloadDifferentKeys: SamePayloadGroup[];
  samePayloadDifferentKeysCount: number;
  /** Memory bounds: what was tracked (distinct keys; distinct payload hashes of messages with or without a key) and whether the cap was reached. */
  bounds: { maxTracked: number; trackedKeys: number; trackedPayloads: number; capped: boolean; note: string | null };
}

/** Streaming accumulator for a {@link RedeliverySummary}. */
export interface QueueSummaryAccumulator {
  /**
   * Adds one message (analysed with the accumulator's options) or an existing analysis; returns the
   * analysis (an existing one as it is; for a message, with fewer sentences when `sentences: false`).
   */
  add(item: QueueMessage | MessageAnalysis): MessageAnalysis;
  /** The summary so far (can be called repeatedly; adding more afterwards is allowed). */
  result(): RedeliverySummary;
}

// ---------------------------------------------------------------------------------------------
// Duplicate comparison (DLQ vs source, snapshot vs snapshot)

/** One side of {@link compareDuplicates}. */
export interface CompareSide {
  /** Shown in reasons, e.g. `orders.dlq` or `snapshot 2026-06-01`. */
  label: string;
  messages: Iterable<QueueMessage | MessageAnalysis>;
  /** Options used to analyse raw messages of this side (rules of that queue). */
  options?: AnalyzeOptions;
}

/** A key (or payload) present on both sides. */
export interface SharedGroup {
  key: string;
  countA: number;
  countB: number;
  exampleIdsA: string[];
  exampleIdsB: string[];
}

/** What {@link compareDuplicates} found. */
export interface DuplicateComparison {
  a: { label: string; total: number; withKey: number };
  b: { label: string; total: number; withKey: number };
  /** Keys found on both sides, largest first (at most `maxGroups`). */
  sharedKeys: SharedGroup[];
  sharedKeyCount: number;
  /** Messages of side B whose key also occurs on side A. */
  messagesBWithKeyInA: number;
  /** Same business payload on both sides under different keys (grouped by payload hash; `key` holds the hash). */
  samePayloadDifferentKeys: (SharedGroup & { keysA: string[]; keysB: string[] })[];
  samePayloadDifferentKeysCount: number;
  /** Sentences for people, e.g. "12 messages in `orders.dlq` share a key with `orders.work`: redriving them re-runs operations that may already have happened unless the handler checks the key." */
  reasons: string[];
  bounds: { maxTracked: number; capped: boolean; note: string | null };
}
