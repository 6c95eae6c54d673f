import { createHash } from 'node:crypto';
import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { HeaderValue, MessageBody, QueueMessage } from '../../../shared/domain';

/** Default body limit (bytes) when `PeekOptions.maxBodyBytes` is absent: 1 MiB + 1 KiB, so a 1 MiB SQS body fits. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024 + 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8');

/**
 * An SQS body as a {@link MessageBody}. SQS bodies are Unicode text (the API accepts only
 * `#x9 | #xA | #xD | #x20–#xD7FF | #xE000–#xFFFD | #x10000–#x10FFFF`), so the encoding is always
 * `utf8`; a producer that base64-encoded binary data leaves base64 text, which the body decoder
 * (`shared/body/decode.ts`) recognises. Bodies over `maxBytes` UTF-8 bytes are cut at a character
 * boundary (`truncated: true`); `sizeBytes` is always the full UTF-8 size.
 */
export function sqsBody(text: string | undefined, maxBytes: number): MessageBody {
  const body = text ?? '';
  const bytes = encoder.encode(body);
  if (bytes.length <= maxBytes) return { encoding: 'utf8', data: body, sizeBytes: bytes.length, truncated: false };
  let end = Math.max(0, Math.floor(maxBytes));
  // Step back over UTF-8 continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return { encoding: 'utf8', data: decoder.decode(bytes.subarray(0, end)), sizeBytes: bytes.length, truncated: true };
}

/**
 * A message attribute as a {@link HeaderValue}:
 * - `String` (and custom `String.x` types) → the string;
 * - `Number` (`Number.x`) → a JS number when it round-trips exactly, else the original string
 *   (SQS numbers have up to 38 significant digits);
 * - `Binary` (`Binary.x`) → `{ base64: "…" }`.
 */
export function attributeToHeader(v: MessageAttributeValue): HeaderValue {
  const type = v.DataType ?? 'String';
  if (type.startsWith('Binary')) return { base64: v.BinaryValue ? Buffer.from(v.BinaryValue).toString('base64') : '' };
  const s = v.StringValue ?? '';
  if (type.startsWith('Number')) {
    const n = Number(s);
    return Number.isFinite(n) && String(n) === s.trim() ? n : s;
  }
  return s;
}

const HEX64 = /^[0-9a-fA-F]{64}$/;

/**
 * True when `deduplicationId` is the SHA-256 (hex) of `body` as UTF-8: the id SQS makes for a FIFO
 * queue with `ContentBasedDeduplication` when the sender gives none ("SQS uses a SHA-256 hash to
 * generate the MessageDeduplicationId using the body of the message (but not the attributes of the
 * message)", SQS Developer Guide, "Using the message deduplication ID"). Only a 64-hex-digit id is
 * hashed against, so other ids cost nothing; hex case is ignored. Takes the full body, not the
 * truncated {@link sqsBody}.
 */
export function isContentDeduplicationId(deduplicationId: string | undefined, body: string | undefined): boolean {
  if (deduplicationId === undefined || !HEX64.test(deduplicationId)) return false;
  return createHash('sha256').update(body ?? '', 'utf8').digest('hex') === deduplicationId.toLowerCase();
}

function num(v: string | undefined): number | null {
  if (v === undefined || v === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/** Where the mapped message came from. */
export interface SqsMessageContext {
  queueId: string;
  queueName: string;
  /** 0-based position in the peek's result. */
  position: number;
  /** See {@link sqsBody}. */
  maxBodyBytes: number;
}

/**
 * Maps a received SQS message to a {@link QueueMessage}:
 * - `id` = MessageId; `headers` = MessageAttributes ({@link attributeToHeader});
 * - `properties` = the system attributes exactly as SQS returned them (strings: `SenderId`,
 *   `SentTimestamp`, `ApproximateReceiveCount`, `ApproximateFirstReceiveTimestamp`, `MessageGroupId`,
 *   `MessageDeduplicationId`, `SequenceNumber`, `AWSTraceHeader`, `DeadLetterQueueSourceArn`…), plus
 *   `MD5OfBody`, `MD5OfMessageAttributes` and `messageAttributeTypes` (attribute name → SQS DataType, so
 *   a redrive can re-send attributes with their exact types). The receipt handle is not kept.
 * - `meta.receiveCount` = ApproximateReceiveCount **including the peek's own receive**;
 *   `meta.enqueuedAt` = SentTimestamp (ms); `meta.firstReceivedAt` = ApproximateFirstReceiveTimestamp (ms);
 *   FIFO `messageGroupId`, `messageDeduplicationId`, `sequenceNumber`; `state` = `visible`;
 *   `deduplicationIdSource: 'content'` when the MessageDeduplicationId is the SHA-256 of the body
 *   ({@link isContentDeduplicationId}: SQS content-based deduplication), absent otherwise.
 */
export function toQueueMessage(m: Message, ctx: SqsMessageContext): QueueMessage {
  const sys = m.Attributes ?? {};
  const headers: Record<string, HeaderValue> = {};
  const types: Record<string, HeaderValue> = {};
  for (const [k, v] of Object.entries(m.MessageAttributes ?? {})) {
    headers[k] = attributeToHeader(v);
    types[k] = v.DataType ?? 'String';
  }
  const properties: Record<string, HeaderValue> = {};
  for (const [k, v] of Object.entries(sys)) properties[k] = v;
  if (m.MD5OfBody !== undefined) properties.MD5OfBody = m.MD5OfBody;
  if (m.MD5OfMessageAttributes !== undefined) properties.MD5OfMessageAttributes = m.MD5OfMessageAttributes;
  if (Object.keys(types).length > 0) properties.messageAttributeTypes = types;
  return {
    id: m.MessageId ?? `#${ctx.position}`,
    queueId: ctx.queueId,
    queueName: ctx.queueName,
    position: ctx.position,
    body: sqsBody(m.Body, ctx.maxBodyBytes),
    headers,
    properties,
    meta: {
      state: 'visible',
      enqueuedAt: num(sys.SentTimestamp),
      firstReceivedAt: num(sys.ApproximateFirstReceiveTimestamp),
      receiveCount: num(sys.ApproximateReceiveCount),
      messageGroupId: sys.MessageGroupId ?? null,
      messageDeduplicationId: sys.MessageDeduplicationId ?? null,
      ...(isContentDeduplicationId(sys.MessageDeduplicationId, m.Body) ? { deduplicationIdSource: 'content' as const } : {}),
      sequenceNumber: sys.SequenceNumber ?? null,
    },
  };
}
