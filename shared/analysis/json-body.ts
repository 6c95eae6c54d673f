import type { QueueMessage } from '../domain';
import { decodeBody } from '../body/decode';

/**
 * Shared, cached access to a message body's JSON for the analysis modules. Pure; never throws.
 * The cache is a WeakMap keyed by the body object, so it lives as long as the message does.
 */

/** What the body is, for the analysis: parsed JSON (`json` set), text, binary or empty. */
export interface BodyView {
  format: 'json' | 'text' | 'binary' | 'empty';
  /** Parsed value when `format === 'json'`. */
  json: unknown;
}

const cache = new WeakMap<object, BodyView>();
const NOT_JSON_TEXT: BodyView = { format: 'text', json: undefined };

/** The body's parsed JSON and format. Never throws; bad bodies are `text`/`binary`. */
export function bodyView(message: QueueMessage): BodyView {
  const body = (message as { body?: unknown }).body;
  if (body === null || typeof body !== 'object') return { format: 'empty', json: undefined };
  const hit = cache.get(body);
  if (hit !== undefined) return hit;
  const view = computeView(message.body);
  cache.set(body, view);
  return view;
}

/** The body's parsed JSON, or undefined when the body is not JSON. Never throws. */
export function bodyJson(message: QueueMessage): unknown {
  return bodyView(message).json;
}

function computeView(b: QueueMessage['body']): BodyView {
  if (typeof b.data !== 'string') return { format: 'empty', json: undefined };
  if (b.data.length === 0) return { format: 'empty', json: undefined };
  const fast = fastJson(b);
  if (fast !== undefined) return fast;
  try {
    const d = decodeBody(b);
    if (d.format === 'json') return { format: 'json', json: d.json };
    return d.format === 'binary' ? { format: 'binary', json: undefined } : NOT_JSON_TEXT;
  } catch {
    return NOT_JSON_TEXT;
  }
}

/**
 * Fast path for the common case (about 8× faster than {@link decodeBody}, which also pretty-prints):
 * a complete UTF-8 body whose text starts with `{` or `[` (never gzip or base64, so decodeBody
 * would only parse it). Gives the same value decodeBody would; undefined otherwise (then decodeBody
 * decides). Known limit, shared with decodeBody: integers beyond 2^53 lose precision.
 */
function fastJson(b: QueueMessage['body']): BodyView | undefined {
  if (b.encoding !== 'utf8' || b.truncated) return undefined;
  const c = firstNonSpace(b.data);
  if (c !== '{' && c !== '[') return undefined;
  try {
    return { format: 'json', json: JSON.parse(b.data) as unknown };
  } catch {
    return undefined;
  }
}

function firstNonSpace(s: string): string {
  const n = Math.min(s.length, 64);
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c !== 32 && c !== 9 && c !== 10 && c !== 13) return s.charAt(i);
  }
  return '';
}

/** True for a plain JSON object (not an array, not null). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** An own property, never the prototype chain (`__proto__`, `constructor` are plain keys here). */
export function own(o: unknown, k: string): unknown {
  if (o === null || typeof o !== 'object') return undefined;
  return Object.prototype.hasOwnProperty.call(o, k) ? (o as Record<string, unknown>)[k] : undefined;
}
