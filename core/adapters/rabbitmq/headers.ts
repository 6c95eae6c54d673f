import { isUtf8 } from 'node:buffer';
import type { HeaderValue, MessageMeta, XDeathEntry } from '../../../shared/domain';

/** Nesting deeper than this is replaced by a marker string (AMQP tables can nest arbitrarily). */
const MAX_DEPTH = 32;

/**
 * Converts one decoded AMQP field value (as amqplib 2 decodes field tables) to a JSON
 * {@link HeaderValue}. Never throws:
 * - `longstr`/`bytes` Buffers → the text when valid UTF-8, else `{ base64: "…" }`;
 * - `timestamp` (`{ '!': 'timestamp', value: seconds }`) → ms since epoch (the project's unit for times);
 * - `decimal` (`{ '!': 'decimal', value: { places, digits } }`) → the number `digits / 10^places`;
 * - bigint → a number when it is a safe integer, else its decimal string;
 * - NaN / ±Infinity (`float`/`double`) → the strings "NaN", "Infinity", "-Infinity";
 * - nested tables → objects (own keys only, `__proto__` kept as a plain key), arrays → arrays;
 * - `void` and `undefined` → null; anything else → its `String()` form.
 * See the field types in https://www.rabbitmq.com/amqp-0-9-1-errata.html#section_3.
 */
export function toHeaderValue(v: unknown, depth = 0): HeaderValue {
  try {
    if (depth > MAX_DEPTH) return '[nested too deep]';
    if (v === null || v === undefined) return null;
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return v;
      case 'number':
        return Number.isFinite(v) ? v : String(v);
      case 'bigint':
        return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
      case 'object':
        break;
      default:
        return `[unsupported ${typeof v}]`;
    }
    if (Buffer.isBuffer(v) || v instanceof Uint8Array) return bytesToHeaderValue(v);
    if (Array.isArray(v)) return v.map((x: unknown) => toHeaderValue(x, depth + 1));
    const o = v as Record<string, unknown>;
    if (Object.hasOwn(o, '!') && Object.hasOwn(o, 'value') && typeof o['!'] === 'string') {
      const tag = o['!'];
      const value = o.value;
      if (tag === 'timestamp') {
        const s = typeof value === 'bigint' ? Number(value) : value;
        return typeof s === 'number' && Number.isFinite(s) ? s * 1000 : toHeaderValue(value, depth + 1);
      }
      if (tag === 'decimal' && value !== null && typeof value === 'object') {
        const d = value as { places?: unknown; digits?: unknown };
        if (typeof d.places === 'number' && typeof d.digits === 'number') return d.digits / 10 ** d.places;
      }
      return toHeaderValue(value, depth + 1);
    }
    const entries: [string, HeaderValue][] = [];
    for (const k of Object.keys(o)) entries.push([k, toHeaderValue(o[k], depth + 1)]);
    return Object.fromEntries(entries);
  } catch {
    return '[unreadable value]';
  }
}

function bytesToHeaderValue(b: Uint8Array): HeaderValue {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return isUtf8(buf) ? buf.toString('utf8') : { base64: buf.toString('base64') };
}

/** Converts an AMQP headers table to JSON headers (see {@link toHeaderValue}). Never throws. */
export function toHeaders(headers: unknown): Record<string, HeaderValue> {
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) return {};
  const out: [string, HeaderValue][] = [];
  for (const k of Object.keys(headers)) out.push([k, toHeaderValue((headers as Record<string, unknown>)[k], 1)]);
  return Object.fromEntries(out);
}

/** A string from a decoded AMQP value (string or bytes), else null. */
function asText(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
  return null;
}

function asNumber(v: unknown): number | null {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'bigint') return Number(v);
  return null;
}

/** Seconds since epoch in an AMQP `timestamp` (or a bare number) → ms, else null. */
export function timestampMs(v: unknown): number | null {
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.hasOwn(v, '!')) return timestampMs((v as { value?: unknown }).value);
  const n = asNumber(v);
  return n === null ? null : n * 1000;
}

/**
 * Normalises the `x-death` header RabbitMQ writes when it dead-letters a message
 * (https://www.rabbitmq.com/docs/dlx#effects): a list of tables with `count`, `reason`,
 * `queue`, `exchange`, `routing-keys` and `time` (an AMQP timestamp in seconds → ms).
 * Entries that are not tables are skipped; missing fields become `0`, `''`, `[]` or `null`.
 */
export function normaliseXDeath(v: unknown): XDeathEntry[] {
  if (!Array.isArray(v)) return [];
  const out: XDeathEntry[] = [];
  for (const e of v) {
    if (e === null || typeof e !== 'object' || Array.isArray(e) || e instanceof Uint8Array) continue;
    const t = e as Record<string, unknown>;
    const keys = t['routing-keys'];
    out.push({
      count: asNumber(t.count) ?? 0,
      reason: asText(t.reason) ?? '',
      queue: asText(t.queue) ?? '',
      exchange: asText(t.exchange) ?? '',
      routingKeys: Array.isArray(keys) ? keys.map(asText).filter((k): k is string => k !== null) : [],
      time: timestampMs(t.time),
    });
  }
  return out;
}

/** The AMQP basic properties Queuescope shows, in the names amqplib uses. */
const PROPERTY_NAMES = [
  'contentType',
  'contentEncoding',
  'deliveryMode',
  'priority',
  'correlationId',
  'replyTo',
  'expiration',
  'messageId',
  'timestamp',
  'type',
  'userId',
  'appId',
  'clusterId',
] as const;

/**
 * AMQP basic properties as JSON, only those present. `timestamp` (seconds on the wire) is
 * converted to ms since epoch. Never throws.
 */
export function toProperties(props: Partial<Record<(typeof PROPERTY_NAMES)[number], unknown>> | undefined): Record<string, HeaderValue> {
  const out: Record<string, HeaderValue> = {};
  if (!props) return out;
  for (const k of PROPERTY_NAMES) {
    const v = props[k];
    if (v === undefined || v === null) continue;
    out[k] = k === 'timestamp' ? (timestampMs(v) ?? toHeaderValue(v)) : toHeaderValue(v);
  }
  return out;
}

/** Dead-letter and delivery metadata from the raw AMQP headers. */
export function deathMeta(headers: Record<string, unknown> | undefined): Pick<MessageMeta, 'xDeath' | 'firstDeathReason' | 'firstDeathQueue' | 'firstDeathExchange'> {
  const h = headers ?? {};
  const meta: Pick<MessageMeta, 'xDeath' | 'firstDeathReason' | 'firstDeathQueue' | 'firstDeathExchange'> = {};
  if (Object.hasOwn(h, 'x-death')) meta.xDeath = normaliseXDeath(h['x-death']);
  if (Object.hasOwn(h, 'x-first-death-reason')) meta.firstDeathReason = asText(h['x-first-death-reason']);
  if (Object.hasOwn(h, 'x-first-death-queue')) meta.firstDeathQueue = asText(h['x-first-death-queue']);
  if (Object.hasOwn(h, 'x-first-death-exchange')) meta.firstDeathExchange = asText(h['x-first-death-exchange']);
  return meta;
}

/** `x-delivery-count` (quorum queues) as a number, or null when absent / not a number. */
export function deliveryCount(headers: Record<string, unknown> | undefined): number | null {
  if (!headers || !Object.hasOwn(headers, 'x-delivery-count')) return null;
  return asNumber(headers['x-delivery-count']);
}

/** The `message_id` property as text, or null. */
export function messageIdOf(v: unknown): string | null {
  const s = asText(v);
  return s === null || s === '' ? null : s;
}
