/**
 * Data shapes of the pre-release configuration audit (pure). The per-broker fact collectors
 * (`core/adapters/<broker>/audit.ts`) read the broker's configuration into these plain "facts"
 * objects; the rules (`shared/audit/rules-*.ts`) turn facts into findings; the formatters render
 * an {@link AuditReport}. Units: durations in **ms** unless a field name ends in `S` (seconds, as
 * the broker states them, e.g. SQS `VisibilityTimeout`); sizes in bytes.
 *
 * `null` always means "unknown / could not be read", never "empty".
 */

/** Severity of a rule / finding. */
export type AuditSeverity = 'error' | 'warning' | 'info';
export const AUDIT_SEVERITIES: readonly AuditSeverity[] = ['error', 'warning', 'info'];

/** The brokers the audit knows rules for. */
export type AuditBroker = 'sqs' | 'rabbitmq' | 'redis';

/** A numeric threshold a rule reads from `audit.thresholds["<rule id>"]`. */
export interface RuleThreshold {
  default: number;
  /** What it means, with its unit. */
  description: string;
  min?: number;
  max?: number;
}

/** Catalog entry of one rule. */
export interface AuditRuleMeta {
  /** `<broker>.<kebab-name>`, e.g. `sqs.no-redrive-policy`. Stable: used in config files and suppressions. */
  id: string;
  broker: AuditBroker;
  /** Default severity (the project file can override it or turn the rule `off`). */
  severity: AuditSeverity;
  /** Short name. */
  title: string;
  /** One sentence: what is wrong and why it loses or duplicates messages. */
  why: string;
  /** How to fix it. */
  fix: string;
  /** The broker's documentation. */
  docUrl: string;
  /** Thresholds by name. */
  thresholds: Record<string, RuleThreshold>;
  /** `queue`: evaluated per queue; `server`: once per broker server. */
  scope: 'queue' | 'server';
  /** True when the rule needs a measured processing time (a measurements file). */
  needsMeasurement?: boolean;
  /** True when the rule needs sampled messages (SQS: opt-in, a receive counts toward maxReceiveCount). */
  needsSample?: boolean;
}

// ------------------------------------------------------------------ facts

/** SQS `RedriveAllowPolicy` as parsed (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html). */
export interface SqsRedriveAllowPolicy {
  /** `allowAll` | `denyAll` | `byQueue` (anything else is kept as given). */
  redrivePermission: string;
  sourceQueueArns: string[];
}

/** The dead-letter queue an SQS queue's RedrivePolicy names, as found on the server. */
export interface SqsDeadLetterQueueFacts {
  arn: string;
  name: string;
  /** False when no queue with that ARN exists (the RedrivePolicy points nowhere). */
  exists: boolean;
  fifo: boolean | null;
  /** `MessageRetentionPeriod`, seconds. */
  retentionS: number | null;
  redriveAllowPolicy: SqsRedriveAllowPolicy | null;
  /** `ApproximateNumberOfMessages`. */
  depth: number | null;
}

/** Messages received from a queue to check payloads (opt-in: each receive counts toward maxReceiveCount). */
export interface SqsSampleFacts {
  messages: number;
  /** Largest body seen, bytes (body + message attributes, as SQS counts toward MaximumMessageSize). */
  largestBytes: number;
  /** Messages without a `MessageDeduplicationId` attribute (FIFO only). */
  withoutDeduplicationId: number;
}

/** An SQS queue, from `GetQueueAttributes(All)`. */
export interface SqsQueueFacts {
  kind: 'sqs';
  id: string;
  name: string;
  url: string;
  arn: string | null;
  fifo: boolean;
  contentBasedDeduplication: boolean | null;
  /** Seconds. */
  visibilityTimeoutS: number | null;
  /** `MessageRetentionPeriod`, seconds. */
  retentionS: number | null;
  /** `ReceiveMessageWaitTimeSeconds`. */
  receiveWaitTimeS: number | null;
  /** `MaximumMessageSize`, bytes. */
  maximumMessageSize: number | null;
  depth: number | null;
  inFlight: number | null;
  redrivePolicy: { deadLetterTargetArn: string; maxReceiveCount: number } | null;
  /** Set when `RedrivePolicy` is present but cannot be read. */
  redrivePolicyError: string | null;
  redriveAllowPolicy: SqsRedriveAllowPolicy | null;
  deadLetterQueue: SqsDeadLetterQueueFacts | null;
  /** Names of queues whose RedrivePolicy targets this one (a non-empty list makes it a DLQ). */
  deadLetterSources: string[];
  /** True when this queue is a DLQ (has sources, or is named like one). */
  isDeadLetterQueue: boolean;
  sample: SqsSampleFacts | null;
  /** Why there is no sample (e.g. "message sampling is off"). */
  sampleNote: string | null;
  /** An existing queue that looks like this one's DLQ (`<name>-dlq`, same type), for the one-click fix. */
  dlqCandidate: { name: string; url: string; arn: string } | null;
}

/** An effective RabbitMQ setting and where it comes from. */
export interface SourcedValue<T> {
  value: T;
  source: 'argument' | 'policy' | 'node' | 'default';
}

/** Where a RabbitMQ queue's dead letters go, resolved through the DLX and the vhost's bindings. */
export interface RabbitDeadLetterRouting {
  exchange: string;
  exchangeExists: boolean;
  /** The routing keys dead letters are published with (the dead-letter routing key, else the keys messages arrive with). */
  routingKeys: string[];
  /** Queues dead letters reach. */
  reachedQueues: string[];
  /** Routing that cannot be resolved statically (headers exchanges…). */
  unresolved: string[];
  /** Why dead letters are dropped, when they are. */
  problem: string | null;
}

/** A RabbitMQ queue, from the management API (`/api/queues`, `/api/exchanges`, `/api/bindings`, `/api/policies`). */
export interface RabbitQueueFacts {
  kind: 'rabbitmq';
  id: string;
  vhost: string;
  name: string;
  /** `classic` | `quorum` | `stream` (null: unknown). */
  type: string | null;
  durable: boolean | null;
  autoDelete: boolean | null;
  exclusive: boolean | null;
  policy: string | null;
  arguments: Record<string, unknown>;
  policyDefinition: Record<string, unknown>;
  deadLetterExchange: SourcedValue<string> | null;
  deadLetterRoutingKey: SourcedValue<string> | null;
  messageTtlMs: SourcedValue<number> | null;
  maxLength: SourcedValue<number> | null;
  maxLengthBytes: SourcedValue<number> | null;
  overflow: SourcedValue<string> | null;
  deliveryLimit: SourcedValue<number> | null;
  /** Consumer (delivery acknowledgement) timeout in effect, ms. */
  consumerTimeoutMs: SourcedValue<number> | null;
  deadLetterRouting: RabbitDeadLetterRouting | null;
  consumers: number | null;
  messages: number | null;
  /** Change of the message count per second as the management API reports it (`messages_details.rate`). */
  messagesGrowthPerS: number | null;
  /**
   * True when the broker's management statistics are off (`/api/overview` `disable_stats`), so
   * `consumers`, `messages` and `messagesGrowthPerS` stay null; absent = false.
   */
  statsDisabled?: boolean;
  /**
   * Only with statistics off, for dead-letter queues (classic and quorum): the counts AMQP
   * `queue.declare` (passive) answered at collection time — `ready` = messages ready for delivery
   * (`message_count`; unacknowledged messages are NOT included and stay unknown) and `consumers`
   * (`consumer_count`), both exact at that moment. `null` when they were not read (past the AMQP
   * count cap, a stream, or the declare failed): `amqpCountsNote` says why. Absent otherwise.
   */
  amqpCounts?: { ready: number; consumers: number } | null;
  /** Why `amqpCounts` is null (one sentence), when it is. */
  amqpCountsNote?: string;
  /** Queues that dead-letter into this one. */
  deadLetterSources: string[];
  isDeadLetterQueue: boolean;
  /** A place dead letters could go (an existing `<name>.dlq`-like queue), for the one-click fix. */
  dlqCandidate: { queue: string; exchange: string; routingKey: string | null } | null;
}

/** A RabbitMQ node, from `/api/overview` (and `/api/nodes`). */
export interface RabbitServerFacts {
  kind: 'rabbitmq-server';
  label: string;
  version: string | null;
  /** Node `consumer_timeout`, ms, and whether it was read or assumed (the default). */
  consumerTimeoutMs: SourcedValue<number> | null;
}

/** One Redis server (`CONFIG GET`). */
export interface RedisServerFacts {
  kind: 'redis-server';
  label: string;
  version: string | null;
  /** True when queues (BullMQ, streams) were found on it. */
  holdsQueues: boolean;
  maxmemoryPolicy: string | null;
  /** `CONFIG GET save` (empty string = RDB snapshots off). */
  save: string | null;
  /** `yes` | `no`. */
  appendonly: string | null;
  /** Why CONFIG could not be read (disabled or renamed with `rename-command`, ACL), null when it was. */
  configError: string | null;
}

/** The `removeOnFail` option as found in job hashes (`opts` field). */
export type RemoveOnFail = boolean | number | { count?: number; age?: number } | null;

/** A BullMQ queue: options of recent jobs. */
export interface BullmqQueueFacts {
  kind: 'bullmq';
  id: string;
  name: string;
  prefix: string;
  /** Jobs whose options were read. */
  jobsRead: number;
  /** Distinct `removeOnFail` values seen (null = absent, BullMQ keeps failed jobs), with a count and an example job id. */
  removeOnFail: { value: RemoveOnFail; jobs: number; exampleJobId: string }[];
  failedCount: number | null;
}

/** A pending entry of a consumer group (from XPENDING with its extended form). */
export interface PendingEntryFacts {
  id: string;
  consumer: string;
  idleMs: number;
  deliveries: number;
}

/** A stream consumer group. */
export interface StreamGroupFacts {
  name: string;
  pending: number;
  consumers: number;
  /** Pending entries read (at most a bounded sample, oldest first). */
  pendingSample: PendingEntryFacts[];
  /** Pending entries (of the sample) whose stream entry no longer exists: trimmed or deleted while pending. */
  pendingDeleted: string[];
}

/** A Redis stream (XINFO STREAM / GROUPS, XPENDING). */
export interface StreamFacts {
  kind: 'redis-stream';
  id: string;
  name: string;
  length: number | null;
  /** `entries-added` (Redis ≥ 7.0): more than `length` means entries were trimmed or deleted. */
  entriesAdded: number | null;
  /** `max-deleted-entry-id` (Redis ≥ 7.0), `0-0` when none. */
  maxDeletedEntryId: string | null;
  firstEntryId: string | null;
  groups: StreamGroupFacts[];
}

/** Everything one collector returned. */
export interface AuditFacts {
  broker: AuditBroker;
  /** The connection, without credentials. */
  label: string;
  servers: (RabbitServerFacts | RedisServerFacts)[];
  queues: QueueFacts[];
  /** Problems reading part of the configuration (the rest was audited). */
  notes: string[];
}

export type QueueFacts = SqsQueueFacts | RabbitQueueFacts | BullmqQueueFacts | StreamFacts;

// ------------------------------------------------------------------ measurements

/** Measured processing time of one queue (from `queuescope tune --json` or a simple file). */
export interface QueueMeasurement {
  /**
   * p99 processing time, ms: measured, or — when only a mean is known (`p99Basis`
   * `mean-exponential`) — estimated as `queuescope tune` does, mean × ln 100 (≈ 4.6 × mean, as if
   * times were exponential). null when neither is known.
   */
  p99Ms: number | null;
  /** How `p99Ms` was obtained: measured (also when absent), or estimated from the mean. */
  p99Basis?: 'measured' | 'mean-exponential';
  meanMs: number | null;
  /** Where it came from (the tune source, or "file"). */
  source: string;
}

/** Measurements by queue name (and id, when the file has one). */
export type Measurements = Map<string, QueueMeasurement>;

// ------------------------------------------------------------------ fixes

/** A one-click fix the app can apply (safe: it only adds dead-lettering; the before/after diff is shown first). */
export type AuditFix =
  | { kind: 'sqs.set-redrive-policy'; queueId: string; queueName: string; queueUrl: string; deadLetterTargetArn: string; deadLetterQueueName: string; maxReceiveCount: number }
  | {
      kind: 'rabbitmq.add-dlx-policy';
      queueId: string;
      vhost: string;
      queueName: string;
      /** Name of the policy to create. */
      policyName: string;
      deadLetterExchange: string;
      deadLetterRoutingKey: string | null;
      deadLetterQueue: string;
    };

/** What applying a fix would change: settings before and after. */
export interface FixPreview {
  fix: AuditFix;
  /** One sentence. */
  summary: string;
  before: Record<string, unknown>;
  after: Record<string, unknown>;
  /** Caveats (e.g. "the queue's current policy 'x' is replaced by one that keeps its keys"). */
  notes: string[];
}

// ------------------------------------------------------------------ results

/** Outcome of one rule on one target. */
export type RuleOutcome =
  | { status: 'pass'; note?: string }
  | { status: 'fail'; message: string; evidence: Record<string, unknown>; fix?: AuditFix }
  | { status: 'not-checked'; reason: string }
  | { status: 'not-applicable' };

/** A failed check. */
export interface AuditFinding {
  ruleId: string;
  broker: AuditBroker;
  severity: AuditSeverity;
  title: string;
  /** Queue id, or null for a server-level finding. */
  queueId: string | null;
  /** Queue name, or the server label. */
  target: string;
  /** What was found, with the values (one or two sentences). */
  message: string;
  why: string;
  fix: string;
  docUrl: string;
  evidence: Record<string, unknown>;
  /** Set when a suppression in the project file matches (the finding is reported, but does not fail the run). */
  suppressed: { reason: string } | null;
  /** A one-click fix, where safe. */
  autoFix: AuditFix | null;
}

/** A check that passed or could not run. */
export interface AuditCheck {
  ruleId: string;
  target: string;
  queueId: string | null;
  status: 'pass' | 'not-checked';
  /** For not-checked: why ("not checked: no measurement"). */
  note: string | null;
}

/** A project-file suppression that matched no finding: where it is and why it matched nothing. */
export interface UnusedSuppression {
  /** Index in `audit.suppress`. */
  index: number;
  rule: string;
  queue: string;
  /** e.g. `queue pattern "notifcations" matches no audited queue; similar: notifications`. */
  why: string;
}

/** The result of an audit. */
export interface AuditReport {
  version: 1;
  /** ms since epoch. */
  generatedAt: number;
  connections: { broker: AuditBroker; label: string }[];
  /** Queues audited (after the pattern filter). */
  queues: { id: string; name: string; broker: AuditBroker }[];
  findings: AuditFinding[];
  checks: AuditCheck[];
  /** Rules turned `off` in the project file. */
  disabledRules: string[];
  /** Collector notes (parts of the configuration that could not be read). */
  notes: string[];
  /**
   * Suppressions in the project file that suppressed no finding in this run (a typo'd queue name,
   * a queue that no longer exists, a rule that now passes or is turned off). A warning, never a
   * failure. Suppressions of rules for brokers that were not audited in this run are not listed.
   */
  unusedSuppressions: UnusedSuppression[];
  counts: { error: number; warning: number; info: number; suppressed: number; notChecked: number; passed: number };
  /** The project file used, if any. */
  configPath: string | null;
  measurementsPath: string | null;
}
