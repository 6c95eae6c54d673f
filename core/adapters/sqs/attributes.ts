import type { PeekSideEffect, QueueCapabilities, QueueKind } from '../../../shared/domain';

/**
 * Pure helpers that turn SQS queue attributes (all strings, as `GetQueueAttributes` returns them;
 * see the SQS API reference, "GetQueueAttributes" and "SetQueueAttributes") into Queuescope data.
 * Nothing here throws on malformed input: bad values become `null` plus a note.
 */

/** Visibility timeout a peek's receives use, in seconds: long enough that the repeated receives of
 * one peek never get the same message twice, short enough that a crashed peek hides messages briefly. */
export const PEEK_VISIBILITY_TIMEOUT_S = 30;
/** Most messages one peek returns. SQS cannot page from a cursor, so this is also the deepest reachable position. */
export const SQS_MAX_PEEK_WINDOW = 100;

/** A parsed `RedrivePolicy` attribute. */
export interface RedrivePolicy {
  deadLetterTargetArn: string;
  /** Receives after which the next receive moves the message to the DLQ (1–1000). */
  maxReceiveCount: number;
}

/** A parsed `RedriveAllowPolicy` attribute (which source queues may use this queue as their DLQ). */
export interface RedriveAllowPolicy {
  /** `allowAll` (the AWS default), `denyAll` or `byQueue`; other values are kept as given. */
  redrivePermission: string;
  sourceQueueArns: string[];
}

/** Parts of an ARN `arn:partition:service:region:account:resource`. */
export interface Arn {
  partition: string;
  service: string;
  region: string;
  accountId: string;
  /** For SQS, the queue name. */
  resource: string;
}

/** Parses an ARN; `null` when it is not one. */
export function parseArn(arn: string): Arn | null {
  const m = /^arn:([^:]+):([^:]+):([^:]*):([^:]*):(.+)$/.exec(arn.trim());
  if (!m) return null;
  const [, partition = '', service = '', region = '', accountId = '', resource = ''] = m;
  return { partition, service, region, accountId, resource };
}

/**
 * Parses the `RedrivePolicy` attribute (`{"deadLetterTargetArn":"arn:…","maxReceiveCount":3}`;
 * `maxReceiveCount` may be a number or a numeric string).
 * @returns the policy, `null` when absent/empty, or `{ error }` when present but unreadable.
 */
export function parseRedrivePolicy(raw: string | undefined): RedrivePolicy | { error: string } | null {
  if (raw === undefined || raw.trim() === '') return null;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return { error: 'RedrivePolicy is not valid JSON' };
  }
  if (typeof v !== 'object' || v === null) return { error: 'RedrivePolicy is not a JSON object' };
  const o = v as Record<string, unknown>;
  const arn = o.deadLetterTargetArn;
  const count = typeof o.maxReceiveCount === 'string' ? Number(o.maxReceiveCount) : o.maxReceiveCount;
  if (typeof arn !== 'string' || arn === '') return { error: 'RedrivePolicy has no deadLetterTargetArn' };
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1) return { error: 'RedrivePolicy has no valid maxReceiveCount' };
  return { deadLetterTargetArn: arn, maxReceiveCount: count };
}

/** Parses `RedriveAllowPolicy`; `null` when absent or unreadable. */
export function parseRedriveAllowPolicy(raw: string | undefined): RedriveAllowPolicy | null {
  if (raw === undefined || raw.trim() === '') return null;
  try {
    const v: unknown = JSON.parse(raw);
    if (typeof v !== 'object' || v === null) return null;
    const o = v as Record<string, unknown>;
    if (typeof o.redrivePermission !== 'string') return null;
    const arns = Array.isArray(o.sourceQueueArns) ? o.sourceQueueArns.filter((x): x is string => typeof x === 'string') : [];
    return { redrivePermission: o.redrivePermission, sourceQueueArns: arns };
  } catch {
    return null;
  }
}

/** Queue name from a queue URL (`https://sqs.us-east-1.amazonaws.com/123456789012/orders` → `orders`). */
export function queueNameFromUrl(url: string): string {
  const path = url.replace(/[?#].*$/, '').replace(/\/+$/, '');
  const name = path.slice(path.lastIndexOf('/') + 1);
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/** True for names people give dead-letter queues: `orders-dlq`, `orders_DLQ.fifo`, `dead-letter-orders`, `orders-deadletter`. */
export function looksLikeDeadLetterQueue(name: string): boolean {
  return /(^|[-_.])(dlq|dead[-_]?letters?|deadletters?)([-_.]|$)/i.test(name);
}

/** `sqs-fifo` for `.fifo` names (or `FifoQueue=true`), else `sqs-standard`. */
export function queueKind(name: string, attrs: Record<string, string> | null): QueueKind {
  return name.endsWith('.fifo') || attrs?.FifoQueue === 'true' ? 'sqs-fifo' : 'sqs-standard';
}

/** Integer attribute, or null when missing / not a number. */
export function intAttr(attrs: Record<string, string> | null, key: string): number | null {
  const v = attrs?.[key];
  if (v === undefined || v.trim() === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

function boolAttr(attrs: Record<string, string>, key: string): boolean | null {
  const v = attrs[key];
  if (v === undefined) return null;
  return v.toLowerCase() === 'true';
}

/** Epoch seconds (SQS `CreatedTimestamp`) → ISO 8601, or null. */
function secondsToIso(attrs: Record<string, string>, key: string): string | null {
  const s = intAttr(attrs, key);
  if (s === null) return null;
  const d = new Date(s * 1000);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

function jsonAttr(attrs: Record<string, string>, key: string): unknown {
  const v = attrs[key];
  if (v === undefined) return null;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return v;
  }
}

/**
 * The queue's configuration for the detail panel and for audits, units in the key names:
 * `visibilityTimeoutSeconds`, `messageRetentionPeriodSeconds`, `maximumMessageSizeBytes`,
 * `receiveMessageWaitTimeSeconds`, `delaySeconds`, `kmsDataKeyReusePeriodSeconds`; timestamps as ISO
 * strings; `redrivePolicy` / `redriveAllowPolicy` / `policy` parsed; `fifoQueue`,
 * `contentBasedDeduplication`, `deduplicationScope`, `fifoThroughputLimit`, `sqsManagedSseEnabled`,
 * `kmsMasterKeyId`. `attributes` keeps every attribute exactly as SQS returned it (strings).
 * Absent attributes are `null`.
 */
export function queueConfigFromAttributes(queueUrl: string, attrs: Record<string, string>): Record<string, unknown> {
  const redrive = parseRedrivePolicy(attrs.RedrivePolicy);
  return {
    queueUrl,
    queueArn: attrs.QueueArn ?? null,
    visibilityTimeoutSeconds: intAttr(attrs, 'VisibilityTimeout'),
    messageRetentionPeriodSeconds: intAttr(attrs, 'MessageRetentionPeriod'),
    maximumMessageSizeBytes: intAttr(attrs, 'MaximumMessageSize'),
    receiveMessageWaitTimeSeconds: intAttr(attrs, 'ReceiveMessageWaitTimeSeconds'),
    delaySeconds: intAttr(attrs, 'DelaySeconds'),
    redrivePolicy: redrive,
    redriveAllowPolicy: attrs.RedriveAllowPolicy === undefined ? null : (parseRedriveAllowPolicy(attrs.RedriveAllowPolicy) ?? { error: 'RedriveAllowPolicy is not valid JSON', raw: attrs.RedriveAllowPolicy }),
    fifoQueue: attrs.FifoQueue === undefined ? queueNameFromUrl(queueUrl).endsWith('.fifo') : boolAttr(attrs, 'FifoQueue'),
    contentBasedDeduplication: boolAttr(attrs, 'ContentBasedDeduplication'),
    deduplicationScope: attrs.DeduplicationScope ?? null,
    fifoThroughputLimit: attrs.FifoThroughputLimit ?? null,
    createdAt: secondsToIso(attrs, 'CreatedTimestamp'),
    lastModifiedAt: secondsToIso(attrs, 'LastModifiedTimestamp'),
    sqsManagedSseEnabled: boolAttr(attrs, 'SqsManagedSseEnabled'),
    kmsMasterKeyId: attrs.KmsMasterKeyId ?? null,
    kmsDataKeyReusePeriodSeconds: intAttr(attrs, 'KmsDataKeyReusePeriodSeconds'),
    policy: jsonAttr(attrs, 'Policy'),
    attributes: { ...attrs },
  };
}

/** Approximate counts as SQS reports them (they lag by up to a minute on AWS). */
export function queueCounts(attrs: Record<string, string> | null): Record<string, number> {
  const out: Record<string, number> = {};
  const pairs: [string, string][] = [
    ['visible', 'ApproximateNumberOfMessages'],
    ['notVisible', 'ApproximateNumberOfMessagesNotVisible'],
    ['delayed', 'ApproximateNumberOfMessagesDelayed'],
  ];
  for (const [k, a] of pairs) {
    const n = intAttr(attrs, a);
    if (n !== null) out[k] = n;
  }
  return out;
}

/**
 * Peek capabilities of an SQS queue. Every SQS read is a `ReceiveMessage`, so a peek:
 * - adds 1 to `ApproximateReceiveCount` (`delivery-count`),
 * - hides the messages it reads from consumers until it makes them visible again (`temporarily-invisible`),
 * - with a `RedrivePolicy`, can move a message already received `maxReceiveCount` times to the DLQ
 *   (`may-dead-letter`, `peekMayDeadLetter: true`, so peeking needs `acceptSideEffects`).
 *
 * @param attrs the queue's attributes, or null when they could not be read (then `peekMayDeadLetter` is null: unknown).
 * @param dlqName display name of the DLQ the RedrivePolicy points to, when known.
 */
export function sqsCapabilities(attrs: Record<string, string> | null, dlqName: string | null): QueueCapabilities {
  const effects: PeekSideEffect[] = [
    {
      kind: 'delivery-count',
      description: 'Each peek adds 1 to ApproximateReceiveCount of every message it reads (SQS has no read without receive).',
    },
    {
      kind: 'temporarily-invisible',
      description: `Messages being read are hidden from consumers for up to ${PEEK_VISIBILITY_TIMEOUT_S} s, then made visible again right after reading.`,
    },
  ];
  let mayDeadLetter: boolean | null = null;
  if (attrs !== null) {
    const redrive = parseRedrivePolicy(attrs.RedrivePolicy);
    if (redrive === null) mayDeadLetter = false;
    else if ('error' in redrive) mayDeadLetter = null;
    else {
      mayDeadLetter = true;
      const target = dlqName ?? parseArn(redrive.deadLetterTargetArn)?.resource ?? redrive.deadLetterTargetArn;
      effects.push({
        kind: 'may-dead-letter',
        description: `RedrivePolicy maxReceiveCount ${redrive.maxReceiveCount}: a message already received ${redrive.maxReceiveCount} time${redrive.maxReceiveCount === 1 ? '' : 's'} is moved to ${target} by the next receive, and a peek is a receive.`,
      });
    }
  }
  if (mayDeadLetter === null && attrs !== null) {
    effects.push({ kind: 'may-dead-letter', description: 'The RedrivePolicy could not be read, so a peek may move messages to a dead-letter queue.' });
  }
  return {
    canPeekNonDestructively: false,
    peekSideEffects: effects,
    peekMayDeadLetter: mayDeadLetter,
    canPageFromCursor: false,
    maxPeekWindow: SQS_MAX_PEEK_WINDOW,
    peekStates: [],
    heldByConsumers: 'in-flight',
  };
}

/**
 * Glob filter on queue names: `*` any run of characters, `?` one character, everything else literal,
 * matched against the whole (case-sensitive, like SQS names) name. No pattern matches everything.
 */
export function globMatcher(pattern: string | undefined): (name: string) => boolean {
  if (pattern === undefined || pattern === '' || pattern === '*') return () => true;
  const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`, 's');
  return (name) => re.test(name);
}

/** The literal text before the first wildcard, usable as `ListQueues` `QueueNamePrefix` (SQS allows up to 80 characters). */
export function literalPrefix(pattern: string | undefined): string {
  if (pattern === undefined) return '';
  const i = pattern.search(/[*?]/);
  const prefix = i < 0 ? pattern : pattern.slice(0, i);
  return prefix.slice(0, 80);
}
