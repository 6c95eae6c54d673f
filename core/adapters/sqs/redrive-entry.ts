import { createHash } from 'node:crypto';
import type { MessageAttributeValue, SendMessageBatchRequestEntry } from '@aws-sdk/client-sqs';
import type { ErrorInfo, HeaderValue, QueueMessage } from '../../../shared/domain';
import { REDRIVE_COUNT_HEADER } from '../redrive-types';

/**
 * Pure helpers that turn a {@link QueueMessage} read from an SQS DLQ (or a snapshot) into a
 * `SendMessageBatch` entry for a redrive, following the SQS API reference (SendMessageBatch,
 * MessageAttributeValue, "Amazon SQS message attributes" and "Amazon SQS message quotas"):
 * at most 10 message attributes, names of `[A-Za-z0-9_.-]` (≤ 256 characters, not starting with
 * `AWS.`/`Amazon.`, no `..`), a message (body + attribute names, types and values) at most the
 * target's `MaximumMessageSize`, batches of at most 10 entries.
 */

/** SQS's limit on message attributes per message. */
export const SQS_MAX_MESSAGE_ATTRIBUTES = 10;
/** SQS's limit on entries per batch call. */
export const SQS_MAX_BATCH_ENTRIES = 10;
/**
 * Payload bytes per `SendMessageBatch` call we allow: 256 KiB, the limit of every SQS queue before
 * the 1 MiB raise (and of the emulators). A single larger message is sent in a batch of its own.
 */
export const SQS_BATCH_PAYLOAD_BYTES = 262_144;

/** What the entry builder needs to know about the target queue. */
export interface SendTarget {
  /** Queue name, for messages. */
  name: string;
  /** FIFO target: needs MessageGroupId and MessageDeduplicationId. */
  fifo: boolean;
  /** The target's `MaximumMessageSize` in bytes (SQS default 262,144). */
  maxMessageBytes: number;
}

/** A ready entry and its size in bytes as SQS counts it (body + attribute names, types and values). */
export interface BuiltEntry {
  entry: SendMessageBatchRequestEntry;
  bytes: number;
  /** The redrive counter the entry carries. */
  redriveCount: number;
}

const utf8 = (s: string): number => Buffer.byteLength(s, 'utf8');
const NAME_RE = /^[A-Za-z0-9_.-]{1,256}$/;

function fail(message: string, details?: Record<string, unknown>): { error: ErrorInfo } {
  return { error: { code: 'INVALID_INPUT', message, ...(details ? { details } : {}) } };
}

/** The redrive counter already on a message (its {@link REDRIVE_COUNT_HEADER} header as a whole number ≥ 0), 0 when absent or unreadable. */
export function existingRedriveCount(headers: Record<string, HeaderValue>): number {
  const v = headers[REDRIVE_COUNT_HEADER];
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/**
 * The MessageDeduplicationId a FIFO redrive sends: SHA-256 (hex, 64 characters) of the message's
 * original deduplication id (or none), its MessageId and the new redrive count.
 *
 * Why not keep the original id: FIFO queues drop a message whose deduplication id they accepted in
 * the last 5 minutes while still reporting it sent. A message that dead-lettered within 5 minutes of
 * its first send would be silently dropped by its source queue, and then deleted from the DLQ —
 * lost. The derived id is new for each redrive of a message yet the same when a crashed run sends the
 * same message again, so the target deduplicates that retry instead of enqueuing it twice.
 *
 * Why the MessageId too: two different dead letters can carry the same deduplication id — sent more
 * than 5 minutes apart, or in two groups of a queue with `DeduplicationScope=messageGroup`, or the
 * same body under content-based deduplication. An id made of the old id and the count alone would be
 * equal for both, and a target that deduplicates per queue would silently drop the second one.
 * A message keeps its MessageId while it sits in the DLQ, so a retry still gets the same id.
 *
 * `publishSalt` (a re-inject: `SqsRedriveMover.publish`) is mixed in so a re-inject gets ids of
 * its own: with the redrive's ids, re-injecting a redrive's backup within 5 minutes was silently
 * dropped by the FIFO queue (reported published, nothing arrived).
 */
export function derivedDeduplicationId(original: string | null | undefined, messageId: string, redriveCount: number, publishSalt?: string): string {
  const salt = publishSalt === undefined ? '' : `\u0000publish:${publishSalt}`;
  return createHash('sha256').update(`${original ?? ''}\u0000id:${messageId}\u0000queuescope-redrive\u0000${redriveCount}${salt}`).digest('hex');
}

/** Why an attribute name is not allowed by SQS, or null. */
export function attributeNameProblem(name: string): string | null {
  if (!NAME_RE.test(name)) return 'SQS attribute names are 1–256 characters of A–Z, a–z, 0–9, "_", "-", "."';
  if (/^(aws|amazon)\./i.test(name)) return 'SQS reserves names starting with "AWS." and "Amazon."';
  if (name.includes('..') || name.startsWith('.') || name.endsWith('.')) return 'SQS attribute names cannot start or end with "." or contain ".."';
  return null;
}

function typeOf(message: QueueMessage, name: string, value: HeaderValue): string {
  const types = message.properties.messageAttributeTypes;
  const t = types !== null && typeof types === 'object' && !Array.isArray(types) ? types[name] : undefined;
  if (typeof t === 'string' && /^(String|Number|Binary)(\..+)?$/.test(t)) return t;
  if (typeof value === 'number') return 'Number';
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && typeof value.base64 === 'string' && Object.keys(value).length === 1) return 'Binary';
  return 'String';
}

/** One header as an SQS message attribute, or why it cannot be one. */
function toAttribute(message: QueueMessage, name: string, value: HeaderValue): { attr: MessageAttributeValue; bytes: number } | { problem: string } {
  const type = typeOf(message, name, value);
  if (type.startsWith('Binary')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || typeof value.base64 !== 'string') return { problem: `attribute "${name}" has type ${type} but no base64 value` };
    const bytes = Buffer.from(value.base64, 'base64');
    if (bytes.length === 0) return { problem: `attribute "${name}" is empty (SQS rejects empty attribute values)` };
    return { attr: { DataType: type, BinaryValue: new Uint8Array(bytes) }, bytes: utf8(name) + utf8(type) + bytes.length };
  }
  let text: string;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number' || typeof value === 'boolean') text = String(value);
  else text = JSON.stringify(value);
  if (text === '') return { problem: `attribute "${name}" is empty (SQS rejects empty attribute values)` };
  if (type.startsWith('Number') && !/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text.trim())) return { problem: `attribute "${name}" has type ${type} but the value "${text.slice(0, 40)}" is not a number` };
  return { attr: { DataType: type, StringValue: text }, bytes: utf8(name) + utf8(type) + utf8(text) };
}

/**
 * The headers of `message` that {@link buildSendEntry} leaves out because their value is the empty
 * string (SQS rejects an empty attribute value), in the message's order; the redrive counter is
 * never one.
 */
export function emptyHeaderNames(message: Pick<QueueMessage, 'headers'>): string[] {
  return Object.entries(message.headers)
    .filter(([name, value]) => value === '' && name !== REDRIVE_COUNT_HEADER)
    .map(([name]) => name);
}

/**
 * The MessageGroupId a FIFO send of `message` carries ({@link buildSendEntry}): `meta.messageGroupId`,
 * else the `MessageGroupId` property; null when it has none (or an empty one).
 */
export function messageGroupOf(message: QueueMessage): string | null {
  const prop = message.properties.MessageGroupId;
  const group = message.meta.messageGroupId ?? (typeof prop === 'string' ? prop : null);
  return group === null || group === '' ? null : group;
}

/**
 * Builds the `SendMessageBatch` entry that redrives `message` to `target`:
 * - the body exactly as read (UTF-8 text; a `base64` body — binary from another broker — cannot be
 *   an SQS body and is refused, as is a body the read cut short);
 * - every message attribute with its original SQS DataType (`properties.messageAttributeTypes`),
 *   plus {@link REDRIVE_COUNT_HEADER} as a `Number` = previous count + 1. When the message already
 *   has 10 attributes (the SQS maximum) and no counter, it is refused rather than dropping one.
 *   A header whose value is the empty string cannot be an attribute (SQS rejects empty values) and
 *   is left out ({@link emptyHeaderNames}; it does not count toward the 10);
 * - `AWSTraceHeader` (system attribute) kept;
 * - FIFO targets: MessageGroupId kept (refused when the message has none), MessageDeduplicationId
 *   {@link derivedDeduplicationId derived}. Standard targets get neither.
 * - refused when body + attributes exceed the target's `MaximumMessageSize`.
 *
 * @param id the batch entry id (unique within one batch, `[A-Za-z0-9_-]{1,80}`).
 * @param publishSalt for FIFO targets, mixed into the deduplication id ({@link derivedDeduplicationId}):
 *   none for a redrive (a retried send deduplicates), a fresh value per re-inject.
 * @returns the entry, or `{ error }` (code `INVALID_INPUT`) saying why this message cannot be sent.
 */
export function buildSendEntry(message: QueueMessage, target: SendTarget, id: string, publishSalt?: string): BuiltEntry | { error: ErrorInfo } {
  if (message.body.truncated) {
    return fail(`The body of message ${message.id} (${message.body.sizeBytes} bytes) was cut at the read limit, so it is not moved (raise maxBodyBytes).`, { messageId: message.id });
  }
  if (message.body.encoding !== 'utf8') {
    return fail(`Message ${message.id} has a binary (base64) body; SQS bodies are text, so it cannot be sent to ${target.name} unchanged.`, { messageId: message.id });
  }
  const body = message.body.data;
  if (body === '') return fail(`Message ${message.id} has an empty body, which SQS does not accept.`, { messageId: message.id });
  const count = existingRedriveCount(message.headers) + 1;
  const attrs: Record<string, MessageAttributeValue> = {};
  let bytes = utf8(body);
  let n = 0;
  for (const [name, value] of Object.entries(message.headers)) {
    if (name === REDRIVE_COUNT_HEADER) continue;
    // SQS rejects an empty attribute value; such a header (RabbitMQ's x-first-death-exchange of a
    // message dead-lettered from the default exchange) is left out, not the message refused.
    if (value === '') continue;
    const problem = attributeNameProblem(name);
    if (problem !== null) return fail(`Message ${message.id} has header "${name.slice(0, 80)}", which cannot be an SQS message attribute (${problem}).`, { messageId: message.id, attribute: name.slice(0, 256) });
    const a = toAttribute(message, name, value);
    if ('problem' in a) return fail(`Message ${message.id}: ${a.problem}.`, { messageId: message.id, attribute: name });
    attrs[name] = a.attr;
    bytes += a.bytes;
    n++;
  }
  if (n + 1 > SQS_MAX_MESSAGE_ATTRIBUTES) {
    return fail(
      `Message ${message.id} already has ${n} message attributes, the SQS maximum of ${SQS_MAX_MESSAGE_ATTRIBUTES}, so the redrive counter "${REDRIVE_COUNT_HEADER}" cannot be added; it is not moved (no attribute is dropped).`,
      { messageId: message.id, attributes: n },
    );
  }
  const countText = String(count);
  attrs[REDRIVE_COUNT_HEADER] = { DataType: 'Number', StringValue: countText };
  bytes += utf8(REDRIVE_COUNT_HEADER) + utf8('Number') + utf8(countText);
  if (bytes > target.maxMessageBytes) {
    return fail(`Message ${message.id} is ${bytes} bytes with its attributes, more than ${target.name}'s MaximumMessageSize of ${target.maxMessageBytes} bytes.`, { messageId: message.id, bytes });
  }
  const entry: SendMessageBatchRequestEntry = { Id: id, MessageBody: body, MessageAttributes: attrs };
  const trace = message.properties.AWSTraceHeader;
  if (typeof trace === 'string' && trace !== '') entry.MessageSystemAttributes = { AWSTraceHeader: { DataType: 'String', StringValue: trace } };
  if (target.fifo) {
    const group = messageGroupOf(message);
    if (group === null) {
      return fail(`Message ${message.id} has no MessageGroupId (it comes from a standard queue), but ${target.name} is a FIFO queue that requires one.`, { messageId: message.id });
    }
    const dedupProp = message.properties.MessageDeduplicationId;
    entry.MessageGroupId = group;
    entry.MessageDeduplicationId = derivedDeduplicationId(message.meta.messageDeduplicationId ?? (typeof dedupProp === 'string' ? dedupProp : null), message.id, count, publishSalt);
  }
  return { entry, bytes, redriveCount: count };
}

/**
 * Splits entries into batches of at most {@link SQS_MAX_BATCH_ENTRIES} entries and
 * `maxPayloadBytes` payload (a single bigger entry forms its own batch), keeping their order.
 */
export function chunkEntries<T extends { bytes: number }>(entries: readonly T[], maxPayloadBytes: number = SQS_BATCH_PAYLOAD_BYTES): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  let size = 0;
  for (const e of entries) {
    if (cur.length > 0 && (cur.length >= SQS_MAX_BATCH_ENTRIES || size + e.bytes > maxPayloadBytes)) {
      out.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(e);
    size += e.bytes;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}
