import type { QueueMessage } from '../domain';
import { decodeBody } from '../body/decode';

/**
 * Shared, cached access to a message body's JSON for the analysis modules. Pure; never throws.
 *
 * The cache holds only the last {@link CACHE_SLOTS} bodies (compared by identity): one analysis
 * reads a body several times in a row (key extraction, key verdict, payload), and nothing more is
 * needed. A WeakMap would keep every parsed body alive as long as its message (100k messages held
 * for a summary = every parsed tree in memory) and its ephemeron table slows garbage collection.
 */

/** What the body is, for the analysis: parsed JSON (`json` set), text, binary or empty. */
export interface BodyView {
  format: 'json' | 'text' | 'binary' | 'empty';
  /** Parsed value when `format === 'json'`. */
  json: unknown;
}

const CACHE_SLOTS = 4;
const cacheKeys: (object | null)[] = [null, null, null, null];
const cacheViews: (BodyView | null)[] = [null, null, null, null];
let cacheNext = 0;
const NOT_JSON_TEXT: BodyView = { format: 'text', json: undefined };
const EMPTY: BodyView = { format: 'empty', json: undefined };

/**
 * The body's parsed JSON and format. Never throws; bad bodies are `text`/`binary`. Callers must not
 * modify the returned JSON (it is shared with the other analysis steps of the same message).
 */
export function bodyView(message: QueueMessage): BodyView {
  const body = (message as { body?: unknown }).body;
  if (body === null || typeof body !== 'object') return EMPTY;
  for (let i = 0; i < CACHE_SLOTS; i++) if (cacheKeys[i] === body) return cacheViews[i] as BodyView;
  const view = computeView(message.body);
  cacheKeys[cacheNext] = body;
  cacheViews[cacheNext] = view;
  cacheNext = (cacheNext + 1) % CACHE_SLOTS;
  return view;
}

/**
 * The body's view when the cache holds it already (a step of this analysis read it), without
 * parsing; undefined otherwise. Lets a step that needs the body only sometimes use it when it is
 * free.
 */
export function cachedBodyView(message: QueueMessage): BodyView | undefined {
  const body = (message as { body?: unknown }).body;
  if (body === null || typeof body !== 'object') return EMPTY;
  for (let i = 0; i < CACHE_SLOTS; i++) if (cacheKeys[i] === body) return cacheViews[i] as BodyView;
  return undefined;
}

/** The body's parsed JSON, or undefined when the body is not JSON. Never throws. */
export function bodyJson(message: QueueMessage): unknown {
  return bodyView(message).json;
}

function computeView(b: QueueMessage['body']): BodyView {
  if (typeof b.data !== 'string' || b.data.length === 0) return EMPTY;
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
  const c0 = s.charCodeAt(0);
  if (c0 === 123 || c0 === 91) return c0 === 123 ? '{' : '[';
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

/** True when `o` has an own enumerable string-keyed member (what `Object.keys` lists), without allocating that list. */
export function hasOwnKeys(o: object): boolean {
  for (const k in o) if (Object.prototype.hasOwnProperty.call(o, k)) return true;
  return false;
}

/** An own property, never the prototype chain (`__proto__`, `constructor` are plain keys here). */
export function own(o: unknown, k: string): unknown {
  if (o === null || typeof o !== 'object') return undefined;
  return Object.prototype.hasOwnProperty.call(o, k) ? (o as Record<string, unknown>)[k] : undefined;
}

/** Index path segments (`[0]`, `[1]`…) up to this index are made once and shared. */
const INDEX_SEGS_MAX = 2000;
const INDEX_SEGS: string[] = [];

/** The path segment of array index `i`: `[i]` (shared strings for the first {@link INDEX_SEGS_MAX}, so walks do not allocate one per element). */
export function indexSeg(i: number): string {
  let s = INDEX_SEGS[i];
  if (s === undefined) {
    s = `[${i}]`;
    if (i < INDEX_SEGS_MAX) INDEX_SEGS[i] = s;
  }
  return s;
}
