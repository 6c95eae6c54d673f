import type { QueueMessage } from '../domain';
import type { AnalysisBroker, SizeCheck } from './types';

/**
 * Body size against the broker's message size limit (rule S1 in README.md). Pure.
 *
 * Broker documentation followed:
 * - Amazon SQS `MaximumMessageSize` queue attribute: 1,024 – 1,048,576 bytes, default 262,144
 *   (256 KiB); the SendMessage API accepts up to 1 MiB.
 * - RabbitMQ `max_message_size` (rabbitmq.conf): default 134,217,728 bytes (128 MiB) in 3.8–3.13,
 *   16,777,216 bytes (16 MiB) since 4.0 (rabbitmq-server PR #11455); hard ceiling 512 MiB.
 * - Redis strings (streams, lists, BullMQ job data) hold up to 512 MB: no practical per-message
 *   limit, so only the absolute threshold applies.
 */

/** A body at or above this share of the broker limit is `large` (review). */
export const LARGE_SHARE = 0.75;
/** A body at or above this many bytes is `large` whatever the limit: 256 KiB (every read, retry and redrive moves it). */
export const LARGE_ABSOLUTE_BYTES = 256 * 1024;
/** SQS `MaximumMessageSize` default, bytes. */
export const SQS_DEFAULT_MAX_BYTES = 262_144;
/** SQS `MaximumMessageSize` upper bound, bytes. */
export const SQS_MAX_BYTES = 1_048_576;
/** RabbitMQ `max_message_size` default since 4.0, bytes. */
export const RABBITMQ_4_DEFAULT_MAX_BYTES = 16 * 1024 * 1024;
/** RabbitMQ `max_message_size` default in 3.8–3.13, bytes. */
export const RABBITMQ_3_DEFAULT_MAX_BYTES = 128 * 1024 * 1024;

/** The broker family of a queue id (`sqs:`, `rabbitmq:`, `bullmq:`/`stream:`/`list:`). */
export function brokerOf(queueId: string): AnalysisBroker {
  if (typeof queueId !== 'string') return 'unknown';
  if (queueId.startsWith('sqs:')) return 'sqs';
  if (queueId.startsWith('rabbitmq:') || queueId.startsWith('amqp')) return 'rabbitmq';
  if (queueId.startsWith('bullmq:') || queueId.startsWith('stream:') || queueId.startsWith('list:') || queueId.startsWith('redis')) return 'redis';
  return 'unknown';
}

/** Human size: `900 B`, `12.5 KiB`, `1.2 MiB`. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${trim(n / 1024)} KiB`;
  return `${trim(n / (1024 * 1024))} MiB`;
}
const trim = (x: number): string => (x >= 100 ? x.toFixed(0) : x.toFixed(1).replace(/\.0$/, ''));

function majorVersion(v: string | null | undefined): number | null {
  if (typeof v !== 'string') return null;
  const m = /^(\d{1,3})\./.exec(v.trim());
  return m ? Number(m[1]) : null;
}

/**
 * The size limit that applies: `maxMessageBytes` when given (the queue's `MaximumMessageSize` /
 * the node's `max_message_size`), else the broker's documented default.
 */
export function sizeLimit(broker: AnalysisBroker, maxMessageBytes: number | undefined, brokerVersion?: string | null): { limitBytes: number | null; limitSource: string } {
  const name = broker === 'sqs' ? 'SQS MaximumMessageSize' : broker === 'rabbitmq' ? 'RabbitMQ max_message_size' : 'configured limit';
  if (typeof maxMessageBytes === 'number' && Number.isFinite(maxMessageBytes) && maxMessageBytes >= 1) return { limitBytes: Math.floor(maxMessageBytes), limitSource: `${name} (${formatBytes(Math.floor(maxMessageBytes))})` };
  if (broker === 'sqs') return { limitBytes: SQS_DEFAULT_MAX_BYTES, limitSource: 'SQS default MaximumMessageSize (256 KiB; a queue can allow up to 1 MiB)' };
  if (broker === 'rabbitmq') {
    const major = majorVersion(brokerVersion);
    if (major !== null && major < 4) return { limitBytes: RABBITMQ_3_DEFAULT_MAX_BYTES, limitSource: `RabbitMQ ${brokerVersion ?? '3.x'} default max_message_size (128 MiB)` };
    return { limitBytes: RABBITMQ_4_DEFAULT_MAX_BYTES, limitSource: major !== null ? `RabbitMQ ${brokerVersion ?? '4.x'} default max_message_size (16 MiB)` : 'RabbitMQ 4.x default max_message_size (16 MiB; 128 MiB on 3.8–3.13)' };
  }
  return { limitBytes: null, limitSource: broker === 'redis' ? 'Redis: no per-message limit (512 MB strings)' : 'unknown broker: no limit known' };
}

/** The last {@link sizeLimit} and its arguments: every message of a queue asks the same. */
let lastBroker: AnalysisBroker | null = null;
let lastMax: number | undefined;
let lastVersion: string | null | undefined;
let lastLimit: { limitBytes: number | null; limitSource: string } = { limitBytes: null, limitSource: '' };

function cachedSizeLimit(broker: AnalysisBroker, maxMessageBytes: number | undefined, brokerVersion?: string | null): { limitBytes: number | null; limitSource: string } {
  if (broker !== lastBroker || !Object.is(maxMessageBytes, lastMax) || brokerVersion !== lastVersion) {
    lastLimit = sizeLimit(broker, maxMessageBytes, brokerVersion);
    lastBroker = broker;
    lastMax = maxMessageBytes;
    lastVersion = brokerVersion;
  }
  return lastLimit;
}

/**
 * Checks a body's size (rule S1): `over-limit` (flag) above the limit; `large` (review) at or above
 * min({@link LARGE_SHARE} × limit, {@link LARGE_ABSOLUTE_BYTES}); `ok` otherwise. Never throws.
 *
 * @param message its `body.sizeBytes` (bytes, as the broker reported it) is checked; when absent or
 *   invalid, the length of the stored data is used.
 */
export function checkSize(message: QueueMessage, broker: AnalysisBroker, maxMessageBytes?: number, brokerVersion?: string | null): SizeCheck {
  const body = (message as { body?: Partial<QueueMessage['body']> }).body;
  let bytes = typeof body?.sizeBytes === 'number' && Number.isFinite(body.sizeBytes) && body.sizeBytes >= 0 ? Math.floor(body.sizeBytes) : typeof body?.data === 'string' ? body.data.length : 0;
  if (bytes > Number.MAX_SAFE_INTEGER) bytes = Number.MAX_SAFE_INTEGER;
  const { limitBytes, limitSource } = cachedSizeLimit(broker, maxMessageBytes, brokerVersion);
  if (limitBytes !== null && bytes > limitBytes) {
    return { bytes, limitBytes, limitSource, verdict: 'over-limit', reason: `large payload: ${formatBytes(bytes)} is over the limit of ${formatBytes(limitBytes)} (${limitSource}): a re-send or redrive to this queue is rejected; store the data elsewhere and send a reference.` };
  }
  const threshold = limitBytes !== null ? Math.min(LARGE_SHARE * limitBytes, LARGE_ABSOLUTE_BYTES) : LARGE_ABSOLUTE_BYTES;
  if (bytes >= threshold) {
    const share = limitBytes !== null ? ` (${Math.round((bytes / limitBytes) * 100)}% of ${formatBytes(limitBytes)}, ${limitSource})` : '';
    return { bytes, limitBytes, limitSource, verdict: 'large', reason: `large payload: ${formatBytes(bytes)}${share}; every read, retry and redrive moves it — send a reference to the data instead.` };
  }
  return { bytes, limitBytes, limitSource, verdict: 'ok', reason: null };
}
