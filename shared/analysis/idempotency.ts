import type { HeaderValue, QueueMessage } from '../domain';
import { exactNumberText, mayBeRounded } from './exact-number';
import * as fieldNames from './field-names';
import type { NameInfo } from './field-names';
import type { Finding } from './types';
import * as jsonBody from './json-body';
import * as sort from './sort';

// Imported functions bound to module-local constants once: TypeScript run as CommonJS (tsx, ts-node,
// vitest's SSR transform) turns every call of a named import into a getter call on the exporting
// module's exports object, which the per-value hot paths below paid for (~8 % of the analysis in
// bench/analysis.ts). Bundlers (electron-vite) produce plain calls either way.
const { nameInfo } = fieldNames;
const { bodyJson, bodyView, cachedBodyView, hasOwnKeys, indexSeg, isRecord, own } = jsonBody;
const { sortSmall } = sort;

/**
 * Idempotency-key extraction and classification (issue 3, first step). Pure: no I/O, no Node
 * built-ins, no DOM. Bodies, headers and keys are untrusted: nothing here throws, and all work is
 * bounded by {@link MAX_KEY_LENGTH}, {@link MAX_BODY_FIELDS} and {@link MAX_BODY_DEPTH}.
 *
 * Broker documentation followed: AMQP 0-9-1 `message-id` basic property (RabbitMQ), SQS FIFO
 * `MessageDeduplicationId`, BullMQ custom job ids (`opts.jobId`) and deduplication ids
 * (`opts.deduplication.id`, stored as `deid`), the IETF draft `Idempotency-Key` HTTP header,
 * CloudEvents 1.0 (`source` + `id` identify an event; structured mode in the body, binary mode as
 * `ce-`/`ce_` prefixed headers).
 */

/** Keys longer than this many characters are analysed on their first {@link MAX_KEY_LENGTH} characters only. */
export const MAX_KEY_LENGTH = 512;
/** At most this many scalar body values are collected for matching. */
export const MAX_BODY_FIELDS = 2000;
/** Body JSON is walked at most this many levels deep. */
export const MAX_BODY_DEPTH = 12;
/** Body string values longer than this are not matched against keys. */
const MAX_VALUE_LENGTH = 256;

/**
 * A user-defined extraction rule, tried before the built-in ones, in the order given.
 * - `header`: a header / message attribute name (matched case-insensitively).
 * - `jsonPath`: a dotted/indexed path from the message, e.g. `body.order.id`, `body.items[0].sku`,
 *   `headers.x-key`, `properties.correlationId`, `meta.messageGroupId`, `id`. No evaluation.
 * - `template`: `{path}` placeholders (same paths as `jsonPath`) joined by literal text, e.g.
 *   `{body.orderId}:{body.operation}`; the rule yields nothing when any placeholder is missing.
 */
export type KeyRule = { kind: 'header'; name: string } | { kind: 'jsonPath'; path: string } | { kind: 'template'; template: string };

/** What {@link extractIdempotencyKey} found. */
export interface KeyExtraction {
  /** The key as text (numbers are written in decimal). */
  key: string;
  /**
   * Where it was found, in words: "header Idempotency-Key", "AMQP message_id", "body.idempotencyKey",
   * "template {body.orderId}:{body.operation}"… A header is named as the message spells it
   * ("header idempotency-key" for a lower-case attribute): SQS attribute names and AMQP header
   * tables are case-sensitive, so that is the name a reader finds in the message.
   */
  source: string;
  /** `user` when a {@link KeyRule} matched, `builtin` otherwise. */
  origin: 'user' | 'builtin';
  /**
   * Message paths the key was read from (e.g. `['body.data.idempotencyKey']`). When the key was
   * read verbatim (every rule but `template`), these fields are not counted as evidence when
   * classifying: a key is not business-derived just because it is stored in the body.
   */
  fields: string[];
  /**
   * True when these fields are business values, so they are the evidence (and stay in the business
   * hash): a user `template` composed the key from them, or a user `jsonPath` reads a body
   * identifier — a member named as one (`orderId`, `order.id`, `sku`, `reference`; not a key
   * holder such as `requestId`, not per-send metadata) whose value has no random part (no UUID,
   * ULID, nanoid, random hex or token): `{kind: 'jsonPath', path: 'body.orderId'}` then gives the
   * same verdict as the template `{body.orderId}`.
   */
  composed?: boolean;
  /**
   * Set only when the header rule that found the key (K1, or a user `header` rule) matched more than
   * one header / message attribute: names equal ignoring case (`Idempotency-Key` and
   * `idempotency-key`), or K1's `Idempotency-Key` and `X-Idempotency-Key` both present. The one
   * used comes first, then the others in the message's order; at most {@link MAX_KEY_HEADERS}
   * (`headerCount` counts all). When another one's value differs from the one used, the key is
   * ambiguous — a consumer that reads that header deduplicates on another key — and the message
   * verdict is at least `review` (finding `key-headers`, see {@link keyHeadersFinding}).
   */
  headers?: KeyHeader[];
  /** How many headers the rule matched when {@link headers} is set (may exceed its length). */
  headerCount?: number;
  /**
   * Set only when the built-in header rule (K1) found the key and the body also holds a usable key
   * in a field of the body rule (K5: `idempotencyKey`, `idempotency_key`, `dedupKey`, `dedup_key`
   * at the top level, then one level inside `data`, `payload`…; the field K5 would pick): that
   * field's path and text. The header is used (K1 is applied before K5); when the body's value
   * differs, a consumer that reads the body field deduplicates on another key, and the message
   * verdict is at least `review` (finding `key-header-body`, see {@link keyBodyFinding}). Not set
   * for a user `header` rule: the team has said where its consumer reads the key.
   */
  bodyKey?: KeyBodyField;
}

/** A body key field beside a header key (see {@link KeyExtraction.bodyKey}). */
export interface KeyBodyField {
  /** Message path of the field, e.g. `body.idempotencyKey`, `body.data.dedupKey`. */
  path: string;
  /** Its text as a key (a number in decimal, as written in the body). */
  value: string;
}

/** One header / message attribute a header rule matched (see {@link KeyExtraction.headers}). */
export interface KeyHeader {
  /** The name as the message spells it. */
  name: string;
  /** Its text as a key (a binary value as its UTF-8 text); null when it cannot be a key. */
  value: string | null;
  /** Why it cannot be a key (`empty`, `a list of 2 values, not one key`, `not text (null)`…); only when {@link value} is null. */
  why?: string;
}

/** At most this many matched headers are kept in {@link KeyExtraction.headers}. */
export const MAX_KEY_HEADERS = 8;

/** Verdict names, see {@link classifyKey}. */
export type KeyVerdictKind = 'business-derived' | 'opaque-random' | 'time-derived' | 'period-key' | 'missing';

/** A key verdict with one sentence that cites the fields. */
export interface KeyVerdict {
  verdict: KeyVerdictKind;
  /** One sentence starting with the verdict name, e.g. "business-derived: built from body.orderId (A-1001) and body.operation (charge)." */
  reason: string;
}

// ---------------------------------------------------------------------------------------------
// Body access

/**
 * The raw text of the body being analysed (set by {@link extractIdempotencyKey} and
 * {@link classifyKey} for the duration of the call), so a number JSON.parse rounded (an integer
 * beyond 2^53) becomes key text as written, not its rounded form: `12345678901234567891` and
 * `…890` must not look like one key.
 */
let rawBody: string | undefined;

/** The text {@link rawBody} is set to for `message`: its body data when UTF-8 text. */
function rawBodyOf(message: QueueMessage): string | undefined {
  const body = message.body as QueueMessage['body'] | undefined;
  return body?.encoding === 'utf8' && typeof body.data === 'string' ? body.data : undefined;
}

function withRawBody<T>(message: QueueMessage, fn: () => T): T {
  const prev = rawBody;
  rawBody = rawBodyOf(message);
  try {
    return fn();
  } finally {
    rawBody = prev;
  }
}

/**
 * A scalar as key text; undefined for objects, arrays, null, empty strings and non-finite numbers.
 * `name` is the member the value came from (for a rounded number's exact text, see {@link exactNumberText}).
 */
function scalarText(v: unknown, name: string | null = null): string | undefined {
  if (typeof v === 'string') return v.length > 0 ? v : undefined;
  if (typeof v === 'number') return Number.isFinite(v) ? (mayBeRounded(v) ? exactNumberText(v, rawBody, name) : String(v)) : undefined;
  if (typeof v === 'bigint') return String(v);
  return undefined;
}

/**
 * Finds a header case-insensitively; returns its actual name and text value. A binary value as the
 * adapters write it (`{ base64: "…" }`: an SQS `Binary` message attribute, an AMQP byte array that
 * is not UTF-8) is read as its UTF-8 text when that is valid and printable ({@link binaryText});
 * `binary` is then true.
 */
function findHeader(headers: Record<string, HeaderValue> | undefined, name: string): { name: string; value: string; binary?: true } | undefined {
  if (!isRecord(headers) || !hasOwnKeys(headers)) return undefined;
  const wanted = name.toLowerCase();
  let seen = 0;
  for (const k of Object.keys(headers)) {
    if (++seen > MAX_BODY_FIELDS) break;
    if (k.toLowerCase() !== wanted) continue;
    const raw = own(headers, k);
    const text = scalarText(raw) ?? scalarText(own(raw, 'StringValue')) ?? scalarText(own(raw, 'stringValue'));
    if (text !== undefined) return { name: k, value: text };
    const bin = binaryText(raw);
    if (bin !== undefined) return { name: k, value: bin, binary: true };
  }
  return undefined;
}

/**
 * The first `Idempotency-Key` / `X-Idempotency-Key` header (any case) whose value cannot be a key,
 * and why in words: empty, a list, binary that is not printable UTF-8, or not text. Undefined when
 * there is none. For the `missing` reason: "no key was found in the headers" would contradict a
 * message view that shows the header.
 */
function unusableKeyHeader(headers: Record<string, HeaderValue> | undefined): { name: string; why: string } | undefined {
  if (!isRecord(headers) || !hasOwnKeys(headers)) return undefined;
  let seen = 0;
  for (const k of Object.keys(headers)) {
    if (++seen > MAX_BODY_FIELDS) break;
    const lower = k.toLowerCase();
    if (lower !== 'idempotency-key' && lower !== 'x-idempotency-key') continue;
    const why = unusableWhy(own(headers, k));
    if (why !== undefined) return { name: shownName(k), why };
  }
  return undefined;
}

/** A header name as reasons cite it: quoted, its first 100 characters. */
function shownName(name: string): string {
  return JSON.stringify(name.slice(0, 100));
}

/**
 * Why a header value cannot be a key, in words (`empty`, `a list of 2 values, not one key`,
 * `binary that is not printable UTF-8 text`, `not text (null)`…); undefined when none of these
 * applies (it may still be usable, or a number).
 */
function unusableWhy(raw: unknown): string | undefined {
  const str = typeof raw === 'string' ? raw : isRecord(raw) ? (own(raw, 'StringValue') ?? own(raw, 'stringValue')) : undefined;
  if (typeof str === 'string' && str.trim().length === 0) return 'empty';
  if (Array.isArray(raw)) return `a list of ${String(raw.length)} value${raw.length === 1 ? '' : 's'}, not one key`;
  if (isRecord(raw) && typeof own(raw, 'base64') === 'string' && binaryText(raw) === undefined) return 'binary that is not printable UTF-8 text';
  if (raw === null || typeof raw === 'boolean' || isRecord(raw)) return `not text (${raw === null ? 'null' : typeof raw === 'boolean' ? String(raw) : 'an object'})`;
  return undefined;
}

// ignoreBOM: a leading U+FEFF is kept, so the key is exactly the bytes' text.
const utf8Strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** Base64 texts longer than this are not decoded (a key is at most 4 × {@link MAX_KEY_LENGTH} characters, up to 4 UTF-8 bytes each). */
const MAX_BINARY_BASE64 = Math.ceil((MAX_KEY_LENGTH * 16) / 3) + 4;

/**
 * The text of a binary header value `{ base64: "…" }` (exactly that member) when its bytes are
 * valid UTF-8 without control characters (C0, DEL, C1) and not empty; undefined otherwise, and for
 * anything else. Never throws.
 */
function binaryText(raw: unknown): string | undefined {
  if (!isRecord(raw)) return undefined;
  const b64 = own(raw, 'base64');
  if (typeof b64 !== 'string' || b64.length === 0 || b64.length > MAX_BINARY_BASE64 || Object.keys(raw).length !== 1) return undefined;
  let text: string;
  try {
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    text = utf8Strict.decode(bytes);
  } catch {
    return undefined;
  }
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return undefined;
  }
  return text.trim().length > 0 ? text : undefined;
}

/** Splits `body.items[0].sku` into `['body', 'items', 0, 'sku']`; null when malformed. */
function parsePath(path: string): (string | number)[] | null {
  if (path.length === 0 || path.length > MAX_KEY_LENGTH) return null;
  const out: (string | number)[] = [];
  const re = /([^.[\]]+)|\[(\d{1,6})\]|(\.)/gy;
  let m: RegExpExecArray | null;
  let last = 0;
  while ((m = re.exec(path)) !== null) {
    if (m[1] !== undefined) out.push(m[1]);
    else if (m[2] !== undefined) out.push(Number(m[2]));
    last = re.lastIndex;
    if (out.length > MAX_BODY_DEPTH + 2) return null;
  }
  return last === path.length && out.length > 0 ? out : null;
}

/**
 * Reads a path such as `body.order.id` from a message (roots: `body`, `headers`, `properties`,
 * `meta`, `id`). Own properties only. Header names match case-insensitively. Undefined when absent.
 */
export function readMessagePath(message: QueueMessage, path: string): unknown {
  const parts = parsePath(path.trim());
  if (parts === null) return undefined;
  const [root, ...rest] = parts;
  let cur: unknown;
  if (root === 'body') cur = bodyJson(message);
  else if (root === 'id') cur = message.id;
  else if (root === 'headers' && typeof rest[0] === 'string' && rest.length === 1) return findHeader(message.headers, rest[0])?.value;
  else if (root === 'headers' || root === 'properties' || root === 'meta') cur = own(message, root);
  else return undefined;
  for (const p of rest) {
    if (typeof p === 'number') cur = Array.isArray(cur) ? (cur as unknown[])[p] : undefined;
    else cur = own(cur, p);
    if (cur === undefined) return undefined;
  }
  return cur;
}

// ---------------------------------------------------------------------------------------------
// Extraction

const KEY_HEADERS = ['Idempotency-Key', 'X-Idempotency-Key'];
/** {@link KEY_HEADERS} in lower case, for {@link headerKey}. */
const KEY_HEADER_NAMES = KEY_HEADERS.map((n) => n.toLowerCase());
/** The lower-cased name of the last user `header` rule, as {@link headerKey} takes it (a summary applies the same rules to every message). */
let lastRuleName: readonly string[] = [''];
let lastRuleAscii = true;

/** A header a header rule matched: its name as spelled, which of the rule's names it is, its value. */
interface HeaderHit {
  name: string;
  group: number;
  raw: unknown;
}

/**
 * What the last {@link scanHeaders} found: how many headers, the first one, and — only when there
 * were several — all of them in {@link hitsAll}. Module state, not a result object: analysis is
 * synchronous, and the one-header case (every keyed message) then allocates nothing here.
 */
let hitCount = 0;
let hitName = '';
let hitGroup = 0;
let hitRaw: unknown = undefined;
let hitsAll: HeaderHit[] | null = null;

/** True when `s` is ASCII only. */
function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/**
 * Finds the headers / message attributes whose name equals one of `wanted` (lower case) ignoring
 * case, in the message's order, into {@link hitCount} and the `hit…` variables; returns the count.
 * At most {@link MAX_BODY_FIELDS} names are looked at, like {@link findHeader}. A name whose length
 * differs from an ASCII wanted name cannot lower-case to it, so most headers cost a length check.
 */
function scanHeaders(headers: Record<string, HeaderValue> | undefined, wanted: readonly string[], asciiWanted: boolean): number {
  hitCount = 0;
  hitsAll = null;
  hitRaw = undefined;
  if (!isRecord(headers) || !hasOwnKeys(headers)) return 0;
  let seen = 0;
  for (const k of Object.keys(headers)) {
    if (++seen > MAX_BODY_FIELDS) break;
    let lower: string | undefined;
    for (let g = 0; g < wanted.length; g++) {
      const w = wanted[g] as string;
      if (asciiWanted && w.length !== k.length) continue;
      lower ??= k.toLowerCase();
      if (lower !== w) continue;
      if (hitCount === 0) {
        hitName = k;
        hitGroup = g;
        hitRaw = own(headers, k);
      } else {
        hitsAll ??= [{ name: hitName, group: hitGroup, raw: hitRaw }];
        hitsAll.push({ name: k, group: g, raw: own(headers, k) });
      }
      hitCount++;
      break;
    }
  }
  return hitCount;
}

/** A header value's text as a key (a string, a number, an SQS `StringValue`); undefined otherwise. */
function plainHeaderText(raw: unknown): string | undefined {
  return scalarText(raw) ?? scalarText(own(raw, 'StringValue')) ?? scalarText(own(raw, 'stringValue'));
}

/**
 * The extraction of a header rule (see {@link headerKey}). The source names the header as the
 * message spells it, for K1 as for a user rule: with case-sensitive attribute names
 * (`Idempotency-Key` and `idempotency-key` can both arrive, rule K1b) a fixed spelling could name
 * the other header.
 */
function headerExtraction(name: string, value: string, binary: boolean, origin: KeyExtraction['origin']): KeyExtraction {
  return { key: value, source: `header ${name}${binary ? BINARY_NOTE : ''}`, origin, fields: [`headers.${name}`] };
}

/**
 * The key a header rule finds: rule K1 (`wanted`: `idempotency-key`, `x-idempotency-key`) or a
 * user `header` rule (`wanted`: its name in lower case). The key is the first usable value (text,
 * a number, binary read as printable UTF-8) of the first of `wanted` that has one, in the
 * message's order. When the rule matched several headers, every one is read and listed in
 * {@link KeyExtraction.headers} (the ambiguity check, {@link keyHeadersFinding}); with one,
 * nothing more is done. Null when none is usable.
 */
function headerKey(headers: Record<string, HeaderValue> | undefined, wanted: readonly string[], asciiWanted: boolean, origin: KeyExtraction['origin']): KeyExtraction | null {
  const n = scanHeaders(headers, wanted, asciiWanted);
  if (n === 0) return null;
  const hits = hitsAll;
  hitsAll = null;
  if (hits === null) {
    const raw = hitRaw;
    hitRaw = undefined;
    const text = plainHeaderText(raw);
    if (text !== undefined) return headerExtraction(hitName, text, false, origin);
    const bin = binaryText(raw);
    return bin !== undefined ? headerExtraction(hitName, bin, true, origin) : null;
  }
  hitRaw = undefined;
  // Several headers: read them all, so a reason can say when they disagree.
  const texts: (string | undefined)[] = [];
  const binary: boolean[] = [];
  for (const hit of hits) {
    let text = plainHeaderText(hit.raw);
    const bin = text === undefined ? binaryText(hit.raw) : undefined;
    if (bin !== undefined) text = bin;
    texts.push(text);
    binary.push(bin !== undefined);
  }
  let used = -1;
  for (let g = 0; g < wanted.length && used < 0; g++) {
    for (let i = 0; i < n; i++) {
      if ((hits[i] as HeaderHit).group === g && texts[i] !== undefined) {
        used = i;
        break;
      }
    }
  }
  if (used < 0) return null;
  const hit = hits[used] as HeaderHit;
  const ex = headerExtraction(hit.name, texts[used] as string, binary[used] === true, origin);
  const listed: KeyHeader[] = [{ name: hit.name, value: texts[used] as string }];
  for (let i = 0; i < n && listed.length < MAX_KEY_HEADERS; i++) {
    if (i === used) continue;
    const h = hits[i] as HeaderHit;
    const text = texts[i];
    listed.push(text !== undefined ? { name: h.name, value: text } : { name: h.name, value: null, why: unusableWhy(h.raw) ?? 'not text' });
  }
  ex.headers = listed;
  ex.headerCount = n;
  return ex;
}

/**
 * The finding (rule K1b, `key-headers`) for a key whose header rule matched several headers
 * ({@link KeyExtraction.headers}); null for any other key.
 * - Some value differs from the key (or cannot be a key): `review`, one sentence naming every
 *   header with its value, the one this analysis used, and what a consumer reading another one
 *   gets: "ambiguous idempotency key: the headers "Idempotency-Key" ('A-1001:charge') and
 *   "idempotency-key" ('A-1001:refund') differ only in case but hold different values; this
 *   analysis uses "Idempotency-Key" (the first usable spelling in the message), but a consumer
 *   that reads "idempotency-key" deduplicates on 'A-1001:refund' instead; send only one of them."
 * - All hold the key: `ok`, a mention that they agree (its text `''` when `sentences` is false).
 *
 * @internal for shared/analysis/payload.ts, which adds it to the payload findings.
 */
export function keyHeadersFinding(key: KeyExtraction | null, sentences: boolean): Finding | null {
  const hs = key?.headers;
  if (key === null || hs === undefined || hs.length < 2) return null;
  const used = hs[0] as KeyHeader;
  const usedLower = used.name.toLowerCase();
  const more = Math.max(0, (key.headerCount ?? hs.length) - hs.length);
  const differing = hs.filter((h, i) => i > 0 && h.value !== used.value);
  const caseOnly = hs.every((h) => h.name.toLowerCase() === usedLower);
  const fields = hs.map((h) => `headers.${h.name}`);
  if (differing.length === 0 && more === 0) {
    if (!sentences) return { rule: 'key-headers', severity: 'ok', text: '', fields: [] };
    const names = hs.map((h) => shownName(h.name));
    return {
      rule: 'key-headers',
      severity: 'ok',
      text: `the headers ${list(names)}${caseOnly ? ', whose names differ only in case,' : ''} ${hs.length === 2 ? 'both' : 'all'} hold the key '${clip(used.value ?? '', 60)}', so a consumer gets the same key whichever it reads.`,
      fields,
    };
  }
  const parts = hs.map((h) => `${shownName(h.name)} (${h.value !== null ? `'${clip(h.value, 60)}'` : (h.why ?? 'not text')})`);
  const listed = more > 0 ? `${parts.join(', ')} and ${String(more)} more` : list(parts);
  const relation = caseOnly ? 'differ only in case but hold different values' : 'hold different values';
  const lowerOf = (h: KeyHeader): string => h.name.toLowerCase();
  let note = '';
  if (key.origin === 'builtin' && usedLower === 'idempotency-key' && differing.some((h) => lowerOf(h) === 'x-idempotency-key')) note = ' (Idempotency-Key is read before X-Idempotency-Key)';
  else if (key.origin === 'builtin' && usedLower === 'x-idempotency-key' && hs.some((h) => lowerOf(h) === 'idempotency-key')) note = ' (no Idempotency-Key header holds a usable key)';
  else if (differing.some((h) => lowerOf(h) === usedLower)) note = ' (the first usable spelling in the message)';
  const other = differing.length === 1 && more === 0 ? differing[0] : undefined;
  const consumer =
    other !== undefined
      ? `a consumer that reads ${shownName(other.name)} ${other.value !== null ? `deduplicates on '${clip(other.value, 60)}' instead` : 'finds no usable key'}`
      : 'a consumer that reads another of them deduplicates on a different key or finds none';
  return {
    rule: 'key-headers',
    severity: 'review',
    text: `ambiguous idempotency key: the headers ${listed} ${relation}; this analysis uses ${shownName(used.name)}${note}, but ${consumer}; send only one of them.`,
    fields,
  };
}
/**
 * The finding (rule K1c, `key-header-body`) for a key the built-in header rule (K1) found while the
 * body also holds one in a key field of the body rule (K5; {@link KeyExtraction.bodyKey}); null for
 * any other key.
 * - The body's value differs from the key: `review`, one sentence naming the header and the body
 *   field with both values, the one this analysis uses and why, and what a consumer reading the
 *   body gets: "ambiguous idempotency key: the header "Idempotency-Key" holds 'X-3:charge' but
 *   body.idempotencyKey holds 'X-3:refund'; this analysis uses the header (an Idempotency-Key
 *   header is read before the body's key fields), but a consumer that reads body.idempotencyKey
 *   deduplicates on 'X-3:refund' instead; send one key, or the same value in both."
 * - The same value: `ok`, a mention that they agree (its text `''` when `sentences` is false).
 *
 * Values are compared as written (`'A-1 '` and `'A-1'` differ: a consumer compares them so).
 *
 * @internal for shared/analysis/payload.ts, which adds it to the payload findings.
 */
export function keyBodyFinding(key: KeyExtraction | null, sentences: boolean): Finding | null {
  const bk = key?.bodyKey;
  if (key === null || bk === undefined) return null;
  const field = key.fields[0] ?? '';
  const name = field.startsWith('headers.') ? field.slice(8) : key.source;
  const fields = [field, bk.path];
  if (bk.value === key.key) {
    if (!sentences) return { rule: 'key-header-body', severity: 'ok', text: '', fields: [] };
    return {
      rule: 'key-header-body',
      severity: 'ok',
      text: `the header ${shownName(name)} and ${bk.path} both hold the key '${clip(key.key, 60)}', so a consumer gets the same key whichever it reads.`,
      fields,
    };
  }
  const which = name.toLowerCase() === 'x-idempotency-key' ? 'an X-Idempotency-Key' : 'an Idempotency-Key';
  return {
    rule: 'key-header-body',
    severity: 'review',
    text: `ambiguous idempotency key: the header ${shownName(name)} holds '${clip(key.key, 60)}' but ${bk.path} holds '${clip(bk.value, 60)}'; this analysis uses the header (${which} header is read before the body's key fields), but a consumer that reads ${bk.path} deduplicates on '${clip(bk.value, 60)}' instead; send one key, or the same value in both.`,
    fields,
  };
}

/** Appended to a header source when the value was binary, read as UTF-8 ({@link binaryText}). */
const BINARY_NOTE = ' (binary, read as UTF-8)';
/** {@link KeyExtraction.source} of an SQS MessageDeduplicationId that the adapter found to be the body's SHA-256 (`meta.deduplicationIdSource: 'content'`). */
export const CONTENT_DEDUP_SOURCE = 'SQS content-based deduplication id (SHA-256 of the body)';
const DEDUP_FIELD = 'meta.messageDeduplicationId';
const BODY_KEY_FIELDS = ['idempotencyKey', 'idempotency_key', 'dedupKey', 'dedup_key'];
/** `body.<field>` for each of {@link BODY_KEY_FIELDS}, made once. */
const BODY_KEY_PATHS: Readonly<Record<string, string>> = Object.fromEntries(BODY_KEY_FIELDS.map((f) => [f, `body.${f}`]));
/** Envelope fields that wrap the real arguments in common job / event libraries. */
const ENVELOPES = ['data', 'payload', 'detail', 'body', 'message', 'args'];

function fromRule(message: QueueMessage, rule: KeyRule): KeyExtraction | null {
  if (rule.kind === 'header') {
    const wanted = rule.name.toLowerCase();
    if (wanted !== lastRuleName[0]) {
      lastRuleName = [wanted];
      lastRuleAscii = isAscii(wanted);
    }
    return headerKey(message.headers, lastRuleName, lastRuleAscii, 'user');
  }
  if (rule.kind === 'jsonPath') {
    const path = rule.path.trim();
    const member = lastMember(path);
    const v = scalarText(readMessagePath(message, path), member);
    if (v === undefined) return null;
    return { key: v, source: path, origin: 'user', fields: [path], ...(isBusinessIdentifier(path, member, v) ? { composed: true } : {}) };
  }
  const template = rule.template;
  if (typeof template !== 'string' || template.length > MAX_KEY_LENGTH) return null;
  const fields: string[] = [];
  const state = { missing: false };
  const key = template.replace(/\{([^{}]*)\}/g, (_m, p: string) => {
    const v = scalarText(readMessagePath(message, p), lastMember(p));
    if (v === undefined) state.missing = true;
    fields.push(p.trim());
    return v ?? '';
  });
  if (state.missing || fields.length === 0 || key.length === 0) return null;
  return { key, source: `template ${template}`, origin: 'user', fields, composed: true };
}

function isBullmq(message: QueueMessage): boolean {
  return message.queueId.startsWith('bullmq:') || typeof message.meta.jobName === 'string';
}

/**
 * Finds a message's idempotency key. User rules are tried first, in order; then the built-in
 * rules, in this documented order — keys a sender sets on purpose first, then transport ids that
 * client libraries often fill per send (a fresh AMQP `message_id`, SQS `MessageDeduplicationId` or
 * BullMQ job id on every retry would not deduplicate anything):
 * 1. headers / message attributes `Idempotency-Key`, `X-Idempotency-Key` (any case; a binary
 *    value — an SQS `Binary` attribute — as its UTF-8 text when that is valid and printable). Of
 *    several spellings of one name, the first usable in the message's order; `X-Idempotency-Key`
 *    only when no `Idempotency-Key` is usable. When more than one header matched, all are listed
 *    in {@link KeyExtraction.headers}, and values that differ make the key ambiguous (rule K1b,
 *    {@link keyHeadersFinding}: the message verdict is then at least `review`). A user `header`
 *    rule picks among spellings of its name the same way and is checked the same way. The source
 *    names the header as the message spells it;
 * 2. body fields `idempotencyKey`, `idempotency_key`, `dedupKey`, `dedup_key` at the top level of a
 *    JSON body, then one level inside `data`, `payload`, `detail`, `body`, `message`, `args[0]`.
 *    When rule 1 found the key and this rule would find one too, that field is kept in
 *    {@link KeyExtraction.bodyKey}: a different value makes the key ambiguous (rule K1c,
 *    {@link keyBodyFinding}: the message verdict is then at least `review`);
 * 3. AMQP `message_id` (`properties.messageId`);
 * 4. SQS FIFO `MessageDeduplicationId` (`meta.messageDeduplicationId`); its source says "SQS
 *    content-based deduplication id (SHA-256 of the body)" when `meta.deduplicationIdSource` is
 *    `content` (see {@link classifyKey} for its verdict);
 * 5. BullMQ (messages from a `bullmq:` queue): the deduplication id (`properties.deduplicationId`),
 *    then a custom job id (`headers.jobId`, or a job id that is not purely numeric — numeric ids
 *    are BullMQ's auto-increment counter);
 * 6. CloudEvents `source` + `id` (structured: body with `specversion`; binary: `ce-`/`ce_` headers),
 *    joined as `source:id`.
 *
 * @returns the first match, or null when no rule finds a key. Never throws.
 */
export function extractIdempotencyKey(message: QueueMessage, rules: readonly KeyRule[] = []): KeyExtraction | null {
  try {
    return withRawBody(message, () => {
      for (const rule of rules) {
        const r = fromRule(message, rule);
        if (r) return clampKey(r);
      }
      return clampKeyOrNull(builtin(message));
    });
  } catch {
    return null;
  }
}

/** The last member name of a path such as `body.order.id` (`id`; surrounding spaces ignored, as {@link readMessagePath} does); null when it ends in an index or is malformed. */
/**
 * Whether a key a user `jsonPath` rule read from `path` (last member `member`) is a business
 * identifier itself (see {@link KeyExtraction.composed}): a body path, a member named as an id or
 * reference that holds no send's own key and is not per-send metadata, and a value with no random
 * piece. A value like `A-1101` from `body.orderId` is the order's id; `evt_1NXW…` from `body.id`
 * or a UUID from `body.requestRef` is not shown to be one.
 */
function isBusinessIdentifier(path: string, member: string | null, value: string): boolean {
  if (member === null || !/^body\b/.test(path)) return false;
  const info = nameInfo(member);
  if (info.keyHolder || info.perSend) return false;
  if (info.role !== 'id' && !(info.role === 'ref' && !info.norm.endsWith('key'))) return false;
  const key = value.trim().slice(0, MAX_KEY_LENGTH);
  if (key.length === 0) return false;
  for (const p of pieces(key)) if (RANDOM_KINDS.has(p.kind)) return false;
  return true;
}

function lastMember(path: string): string | null {
  const segs = parsePath(path.trim());
  const last = segs?.[segs.length - 1];
  return typeof last === 'string' ? last : null;
}

function clampKey(r: KeyExtraction): KeyExtraction {
  return r.key.length > MAX_KEY_LENGTH * 4 ? { ...r, key: r.key.slice(0, MAX_KEY_LENGTH * 4) } : r;
}

function clampKeyOrNull(r: KeyExtraction | null): KeyExtraction | null {
  return r ? clampKey(r) : null;
}

const b = (key: string, source: string, fields: string[]): KeyExtraction => ({ key, source, origin: 'builtin', fields });
const CE_PREFIXES = ['ce-', 'ce_'];

function builtin(message: QueueMessage): KeyExtraction | null {
  // 1. Explicit idempotency-key headers / message attributes.
  const header = headerKey(message.headers, KEY_HEADER_NAMES, true, 'builtin');
  if (header) {
    // Beside a header key, the body field K5 would pick is kept for the ambiguity check (rule K1c).
    // The body is used when already parsed (analyzeMessage parses it first), else parsed only when
    // its text may name such a field, so a caller of extraction alone does not pay for a parse.
    const cached = cachedBodyView(message);
    const hj = cached !== undefined ? cached.json : mayHoldBodyKey(message) ? bodyJson(message) : undefined;
    const bk = isRecord(hj) ? bodyKeyField(hj) : null;
    // Clamped as the key is (clampKey), so a long key copied into the body compares equal.
    if (bk !== null) header.bodyKey = { path: bk.source, value: bk.key.slice(0, MAX_KEY_LENGTH * 4) };
    return header;
  }
  // 2. Explicit body fields: set by the sender on purpose, so they beat transport ids.
  const json = bodyJson(message);
  const bodyKey = isRecord(json) ? bodyKeyField(json) : null;
  if (bodyKey) return bodyKey;
  // 3–5. Transport ids that client libraries may fill per send.
  const props = message.properties as Record<string, unknown> | undefined;
  const amqpId = scalarText(own(props, 'messageId')) ?? scalarText(own(props, 'message_id'));
  if (amqpId !== undefined) return b(amqpId, 'AMQP message_id', ['properties.messageId']);
  const dedup = scalarText(own(message.meta, 'messageDeduplicationId'));
  if (dedup !== undefined) return b(dedup, contentDedup(message) ? CONTENT_DEDUP_SOURCE : 'SQS MessageDeduplicationId', [DEDUP_FIELD]);
  if (isBullmq(message)) {
    const deid = scalarText(own(props, 'deduplicationId'));
    if (deid !== undefined) return b(deid, 'BullMQ deduplication id', ['properties.deduplicationId']);
    const jobId = scalarText(own(message.headers, 'jobId'));
    if (jobId !== undefined) return b(jobId, 'BullMQ custom job id', ['headers.jobId']);
    if (typeof message.id === 'string' && message.id.length > 0 && !/^\d+$/.test(message.id)) return b(message.id, 'BullMQ custom job id', ['id']);
  }
  // 6. CloudEvents source + id.
  if (isRecord(json)) {
    const source = scalarText(own(json, 'source'), 'source');
    const id = scalarText(own(json, 'id'), 'id');
    if (own(json, 'specversion') !== undefined && source !== undefined && id !== undefined) {
      return b(`${source}:${id}`, 'CloudEvents source+id', ['body.source', 'body.id']);
    }
  }
  for (const prefix of CE_PREFIXES) {
    const source = findHeader(message.headers, `${prefix}source`);
    const id = findHeader(message.headers, `${prefix}id`);
    if (source && id) return b(`${source.value}:${id.value}`, 'CloudEvents source+id', [`headers.${source.name}`, `headers.${id.name}`]);
  }
  return null;
}

/**
 * False only when the body is UTF-8 text that cannot hold a field of {@link BODY_KEY_FIELDS}: its
 * text contains neither `idempotency` nor `dedup` nor a `\u` escape (a member name may be spelled
 * with one). Other encodings are decoded before parsing, so they may.
 */
function mayHoldBodyKey(message: QueueMessage): boolean {
  const body = message.body as QueueMessage['body'] | undefined;
  if (body?.encoding !== 'utf8' || typeof body.data !== 'string') return true;
  const d = body.data;
  return d.includes('idempotency') || d.includes('dedup') || d.includes('\\u');
}

/** Rule 2: an explicit key field at the top level of the body, then one level inside an envelope. */
function bodyKeyField(json: Record<string, unknown>): KeyExtraction | null {
  for (const f of BODY_KEY_FIELDS) {
    const v = scalarText(own(json, f), f);
    if (v !== undefined) {
      const path = BODY_KEY_PATHS[f] ?? `body.${f}`;
      return b(v, path, [path]);
    }
  }
  for (const env of ENVELOPES) {
    let inner = own(json, env);
    const isArray = Array.isArray(inner);
    if (isArray) inner = (inner as unknown[])[0];
    if (!isRecord(inner)) continue;
    for (const f of BODY_KEY_FIELDS) {
      const v = scalarText(own(inner, f), f);
      if (v !== undefined) {
        const path = `body.${env}${isArray ? '[0]' : ''}.${f}`;
        return b(v, path, [path]);
      }
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Classification

interface Scalar {
  path: string;
  text: string;
  /**
   * The member the value came from (for array elements, the member holding the array); null for
   * a body that is itself the value. Its role ({@link nameInfo}) decides whether the value can be
   * a time, changes per send, or is shared by unrelated messages.
   */
  name: string | null;
}

/** The member name of the value at `segs` (the last segment that is not an index); null when none. */
function memberOf(segs: readonly string[]): string | null {
  for (let i = segs.length - 1; i >= 0; i--) {
    const s = segs[i] as string;
    if (!s.startsWith('[')) return s;
  }
  return null;
}


/**
 * Collects the body's scalar values (strings ≤ 256 chars, finite numbers) that occur in `key`,
 * walking at most {@link MAX_BODY_FIELDS} values per container, {@link MAX_BODY_DEPTH} levels and
 * 4 × {@link MAX_BODY_FIELDS} nodes in all. Recursion is bounded by {@link MAX_BODY_DEPTH}, so deep
 * bodies cannot overflow the stack; paths are built only for values that match.
 */
function collectScalars(json: unknown, exclude: readonly string[], key: string): ScalarWalk {
  const ex: string[][] = [];
  for (const p of exclude) {
    const segs = cachedPathSegs(p);
    if (segs !== null) ex.push(segs);
  }
  // `out` and `copies` are handed to the caller, so they are new; the path stack is shared.
  const w: ScalarWalk = { out: [], copies: [], key, keyHasDigit: hasDigit(key), exclude: ex, segs: SEGS, visited: 0 };
  if (SEGS.length !== 0) SEGS.length = 0;
  collect(w, json, 0);
  return w;
}

/** The path stack of {@link collect} (analysis is synchronous; a walk leaves it empty). */
const SEGS: string[] = [];

const segsCache = new Map<string, string[] | null>();

/** {@link pathSegs}, cached (the same few key fields — `body.idempotencyKey`… — come with every message). Callers must not modify the result. */
function cachedPathSegs(path: string): string[] | null {
  const hit = segsCache.get(path);
  if (hit !== undefined) return hit;
  const segs = pathSegs(path);
  if (path.length <= 200) {
    if (segsCache.size >= 1000) segsCache.clear();
    segsCache.set(path, segs);
  }
  return segs;
}


interface ScalarWalk {
  out: Scalar[];
  /** Key-holding members ({@link NameInfo.keyHolder}) whose value occurs in the key: skipped as evidence, named in the reason. */
  copies: Scalar[];
  key: string;
  /** Numbers are written with at least one digit: a key without digits cannot contain one. */
  keyHasDigit: boolean;
  exclude: string[][];
  segs: string[];
  visited: number;
}

/** `body.a.b[0]` → `['a', 'b', '[0]']`; null for paths outside the body. */
function pathSegs(path: string): string[] | null {
  if (path !== 'body' && !path.startsWith('body.') && !path.startsWith('body[')) return null;
  const out: string[] = [];
  const re = /\.([^.[\]]+)|\[(\d{1,6})\]/gy;
  re.lastIndex = 4;
  let m: RegExpExecArray | null;
  while ((m = re.exec(path)) !== null) out.push(m[1] ?? `[${m[2] ?? ''}]`);
  return out;
}

function excluded(w: ScalarWalk): boolean {
  for (const ex of w.exclude) {
    if (ex.length !== w.segs.length) continue;
    let same = true;
    for (let i = 0; i < ex.length && same; i++) if (ex[i] !== w.segs[i]) same = false;
    if (same) return true;
  }
  return false;
}

function scalarPath(segs: readonly string[]): string {
  let p = 'body';
  for (const s of segs) p += s.startsWith('[') ? s : `.${s}`;
  return p;
}

function collect(w: ScalarWalk, v: unknown, depth: number): void {
  if (w.visited++ >= MAX_BODY_FIELDS * 4 || w.out.length >= MAX_BODY_FIELDS) return;
  if (w.exclude.length > 0 && excluded(w)) return;
  if (typeof v === 'string') {
    if (v.length <= MAX_VALUE_LENGTH && v.length > 0 && (v.length >= 2 || (v >= '0' && v <= '9')) && w.key.includes(v)) w.out.push({ path: scalarPath(w.segs), text: v, name: memberOf(w.segs) });
    return;
  }
  if (typeof v === 'number' || typeof v === 'bigint') {
    if (!w.keyHasDigit) return;
    const last = w.segs[w.segs.length - 1];
    const t = scalarText(v, last !== undefined && !last.startsWith('[') ? last : null);
    if (t !== undefined && (t.length >= 2 || (t >= '0' && t <= '9')) && w.key.includes(t)) w.out.push({ path: scalarPath(w.segs), text: t, name: memberOf(w.segs) });
    return;
  }
  if (depth >= MAX_BODY_DEPTH || v === null || typeof v !== 'object') return;
  if (Array.isArray(v)) {
    const n = Math.min(v.length, MAX_BODY_FIELDS);
    for (let i = 0; i < n; i++) {
      w.segs.push(indexSeg(i));
      collect(w, v[i], depth + 1);
      w.segs.pop();
    }
    return;
  }
  const keys = Object.keys(v);
  const n = Math.min(keys.length, MAX_BODY_FIELDS);
  for (let i = 0; i < n; i++) {
    const k = keys[i] as string;
    const val = (v as Record<string, unknown>)[k];
    w.segs.push(k);
    if (nameInfo(k).keyHolder) {
      // The key's own copy (or a per-send id): not business evidence.
      const t = scalarText(val, k);
      if (t !== undefined && t.length <= MAX_VALUE_LENGTH && w.copies.length < 4 && w.key.includes(t)) w.copies.push({ path: scalarPath(w.segs), text: t, name: k });
    } else collect(w, val, depth + 1);
    w.segs.pop();
  }
}

// ---------------------------------------------------------------------------------------------
// Key evidence gathered by the payload walk (one walk over the body instead of two)

/**
 * The body values a key verdict needs ({@link collectScalars}'s `out` and `copies`), gathered by
 * the payload walk of the same message (shared/analysis/payload.ts), which visits every value
 * {@link collect} would, in the same order, whenever it is not cut short. The walk calls
 * {@link evidenceAt} at each value and {@link evidenceKeyHolder} at each object member, and says
 * whether its visit covered everything `collect` would have visited ({@link exact}); when it did
 * not (a long array or wide object, the walk's node limit), {@link classify} walks the body itself.
 *
 * @internal for shared/analysis (analyze.ts and payload.ts).
 */
export interface KeyEvidence {
  /** The key as classified (trimmed, at most {@link MAX_KEY_LENGTH} characters). */
  key: string;
  keyHasDigit: boolean;
  exclude: string[][];
  out: Scalar[];
  copies: Scalar[];
  /** The message's raw body text, for the exact text of rounded numbers. */
  raw: string | undefined;
  /** False when the walk may have missed values `collect` would see; then the evidence is not used. */
  exact: boolean;
  /** Set by the walk when it has visited the whole document. */
  done: boolean;
}

/**
 * Evidence to gather for `extraction`'s key, or null when the key is empty or an SQS
 * content-based deduplication id (their verdicts need none). See {@link KeyEvidence}.
 *
 * @internal for shared/analysis.
 */
export function keyEvidence(extraction: KeyExtraction | null, message: QueueMessage): KeyEvidence | null {
  if (extraction === null || typeof extraction.key !== 'string') return null;
  const key = extraction.key.trim().slice(0, MAX_KEY_LENGTH);
  // An SQS content-based id is judged by the body's members, not by matching values (contentKeyVerdict).
  if (key.length === 0 || isContentKey(key, message, extraction)) return null;
  const ex: string[][] = [];
  if (extraction.composed !== true) {
    for (const f of extraction.fields) {
      const segs = cachedPathSegs(f);
      if (segs !== null) ex.push(segs);
    }
  }
  return { key, keyHasDigit: hasDigit(key), exclude: ex, out: [], copies: [], raw: rawBodyOf(message), exact: true, done: false };
}

function excludedPath(exclude: readonly string[][], segs: readonly string[]): boolean {
  for (const ex of exclude) {
    if (ex.length !== segs.length) continue;
    let same = true;
    for (let i = 0; i < ex.length && same; i++) if (ex[i] !== segs[i]) same = false;
    if (same) return true;
  }
  return false;
}

/**
 * What {@link collect} does at the value `v` at path `segs` (below the body, no JSON string
 * crossed): records it when it occurs in the key. Returns true when `collect` would look inside
 * `v` (an object or array above {@link MAX_BODY_DEPTH}, not excluded); the walk does not gather
 * evidence below a value for which this returned false.
 *
 * @internal for shared/analysis/payload.ts.
 */
export function evidenceAt(ev: KeyEvidence, segs: readonly string[], v: unknown): boolean {
  if (ev.out.length >= MAX_BODY_FIELDS) {
    ev.exact = false;
    return false;
  }
  if (ev.exclude.length > 0 && excludedPath(ev.exclude, segs)) return false;
  if (typeof v === 'string') {
    // A value longer than the key cannot occur in it (checked before the substring search).
    if (v.length <= MAX_VALUE_LENGTH && v.length > 0 && v.length <= ev.key.length && (v.length >= 2 || (v >= '0' && v <= '9')) && ev.key.includes(v)) ev.out.push({ path: scalarPath(segs), text: v, name: memberOf(segs) });
    return false;
  }
  if (typeof v === 'number') {
    if (!ev.keyHasDigit) return false;
    const last = segs[segs.length - 1];
    const t = numberText(v, ev.raw, last !== undefined && !last.startsWith('[') ? last : null);
    if (t !== undefined && (t.length >= 2 || (t >= '0' && t <= '9')) && ev.key.includes(t)) ev.out.push({ path: scalarPath(segs), text: t, name: memberOf(segs) });
    return false;
  }
  return segs.length < MAX_BODY_DEPTH && v !== null && typeof v === 'object';
}

/**
 * What {@link collect} does at object member `name` (its path `segs`, value `v`): for a
 * key-holding member ({@link NameInfo.keyHolder}), notes a copy of the key and returns true — the
 * walk then gathers no evidence below it; false for other members.
 *
 * @internal for shared/analysis/payload.ts.
 */
export function evidenceKeyHolder(ev: KeyEvidence, segs: readonly string[], info: NameInfo, name: string, v: unknown): boolean {
  if (!info.keyHolder) return false;
  const t = typeof v === 'number' ? numberText(v, ev.raw, name) : scalarText(v, name);
  if (t !== undefined && t.length <= MAX_VALUE_LENGTH && ev.copies.length < 4 && ev.key.includes(t)) ev.copies.push({ path: scalarPath(segs), text: t, name });
  return true;
}

/** {@link scalarText} of a number with the raw body given (not the module's {@link rawBody}). */
function numberText(v: number, raw: string | undefined, name: string | null): string | undefined {
  return Number.isFinite(v) ? (mayBeRounded(v) ? exactNumberText(v, raw, name) : String(v)) : undefined;
}

/** `: - _ / . | # @`, space, tab, newline — or outside the key (NaN). */
function isSepCode(c: number): boolean {
  return c !== c || c === 58 || c === 45 || c === 95 || c === 47 || c === 46 || c === 124 || c === 35 || c === 64 || c === 32 || c === 9 || c === 10;
}

/**
 * Which characters of the key {@link matchValues} covered (1) — shared: classification is
 * synchronous, keys are at most {@link MAX_KEY_LENGTH} characters, and a typed array per message
 * was one of the larger allocations of the key verdict. Valid for the key of the last call only.
 */
const COVERED = new Uint8Array(MAX_KEY_LENGTH);

/** Non-overlapping occurrences of payload values in the key, aligned on separators, longest values first; marks them in {@link COVERED}. */
function matchValues(key: string, scalars: Scalar[]): (Scalar & { at: number })[] {
  const covered = COVERED;
  covered.fill(0, 0, key.length);
  const matches: (Scalar & { at: number })[] = [];
  const candidates = sortSmall(scalars, byLengthDesc);
  for (const s of candidates) {
    if (s.text.length > key.length || matchedText(matches, s.text)) continue;
    let from = 0;
    while (from <= key.length - s.text.length) {
      const at = key.indexOf(s.text, from);
      if (at < 0) break;
      const end = at + s.text.length;
      let free = isSepCode(key.charCodeAt(at - 1)) && isSepCode(key.charCodeAt(end));
      for (let i = at; free && i < end; i++) if (covered[i] === 1) free = false;
      if (free) {
        for (let i = at; i < end; i++) covered[i] = 1;
        matches.push({ path: s.path, text: s.text, name: s.name, at });
        break;
      }
      from = at + 1;
    }
    if (matches.length >= 16) break;
  }
  sortSmall(matches, byPosition);
  return matches;
}

const byLengthDesc = (a: Scalar, b: Scalar): number => b.text.length - a.text.length;
const byPosition = (a: { at: number }, b: { at: number }): number => a.at - b.at;

/** A value with this text already matched (at most 16 matches: a scan beats a Set). */
function matchedText(matches: readonly Scalar[], text: string): boolean {
  for (let i = 0; i < matches.length; i++) if ((matches[i] as Scalar).text === text) return true;
  return false;
}

const ISO_TIMESTAMP = /(?<![0-9])\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?/gi;
const ISO_WEEK = /(?<![0-9])\d{4}-?W\d{2}(?:-?\d)?(?![0-9])/g;
const ISO_DATE = /(?<![0-9])(?:\d{4}-\d{2}-\d{2}|(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01]))(?![0-9])/g;
const ISO_MONTH = /(?<![0-9])\d{4}-(?:0[1-9]|1[0-2])(?![0-9-])/g;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

type Piece = { kind: 'timestamp' | 'epoch-ms' | 'epoch-s' | 'week' | 'date' | 'month' | 'uuid' | 'ulid' | 'nanoid' | 'hex' | 'random' | 'word'; text: string };

/** Pulls typed pieces out of a key fragment: timestamps and periods first, then UUIDs, then tokens. */
const UUID_ONLY = /^[:/.|#@\s_-]*([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})[:/.|#@\s_-]*$/i;

function pieces(fragment: string): Piece[] {
  // Fast path for the commonest random key: a bare UUID.
  if (fragment.length >= 36 && fragment.length <= 44) {
    const u = UUID_ONLY.exec(fragment);
    if (u) return [{ kind: 'uuid', text: u[1] ?? '' }];
  }
  const out: Piece[] = [];
  let rest = fragment;
  // Cheap guards first: every pattern below needs a run of 4 digits (UUIDs: 8 hex digits and '-').
  if (/\d{4}/.test(rest)) {
    const dash = rest.includes('-');
    // Timestamps, dates and months need `dddd-dd` or 8 digits in a row (see mayHoldDate).
    const dated = mayHoldDate(rest);
    if (dated && rest.includes(':')) rest = take(rest, ISO_TIMESTAMP, 'timestamp', out);
    if (rest.includes('W')) rest = take(rest, ISO_WEEK, 'week', out);
    if (dated) rest = take(rest, ISO_DATE, 'date', out);
    if (dated && dash) rest = take(rest, ISO_MONTH, 'month', out);
  }
  if (rest.length >= 36 && rest.includes('-')) rest = take(rest, UUID, 'uuid', out);
  chunkPieces(rest, out);
  return out;
}

/**
 * False when no {@link ISO_TIMESTAMP}, {@link ISO_DATE} or {@link ISO_MONTH} match is possible in
 * `s`: each needs four digits, `-` and two digits (`2026-11`), or eight digits in a row
 * (`20261129`). One character scan, so keys holding other digits (`A-100123`, most UUIDs) skip
 * three regular expressions. Replacing matches by a space (what `take` does) never creates such a
 * run, so a false answer stays false while `pieces` works on the fragment.
 */
/** @internal exported for the tests. */
export function mayHoldDate(s: string): boolean {
  let run = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (++run >= 8) return true;
      continue;
    }
    if (c === 45 && run >= 4 && isDigitAt(s, i + 1) && isDigitAt(s, i + 2)) return true;
    run = 0;
  }
  return false;
}

function isDigitAt(s: string, i: number): boolean {
  const c = s.charCodeAt(i);
  return c >= 48 && c <= 57;
}

/**
 * The pieces of what is left of a fragment, appended to `out`: split into chunks at runs of
 * `[:/.|#@\s]`; a chunk of 21 `[A-Za-z0-9_-]` with a digit, a lower- and an upper-case letter is a
 * nanoid, any other chunk is split into tokens at runs of `-`/`_` (empty chunks and tokens skipped).
 * One scan over the characters instead of `split` with regular expressions (two arrays per key);
 * fast-paths.test.ts pins it to that definition.
 *
 * @internal exported for the tests.
 */
export function chunkPieces(rest: string, out: Piece[]): void {
  const n = rest.length;
  let start = 0;
  for (let i = 0; i <= n; i++) {
    if (i < n && !isChunkSeparator(rest.charCodeAt(i))) continue;
    if (i > start) chunkTokens(rest, start, i, out);
    start = i + 1;
  }
}

/** One chunk `rest[from, to)` (not empty, no chunk separator in it): a nanoid or its tokens. */
function chunkTokens(rest: string, from: number, to: number, out: Piece[]): void {
  if (to - from === 21) {
    let digit = false;
    let lower = false;
    let upper = false;
    let other = false;
    for (let i = from; i < to; i++) {
      const c = rest.charCodeAt(i);
      if (c >= 48 && c <= 57) digit = true;
      else if (c >= 97 && c <= 122) lower = true;
      else if (c >= 65 && c <= 90) upper = true;
      else if (c !== 45 && c !== 95) other = true;
    }
    if (!other && digit && lower && upper) {
      out.push({ kind: 'nanoid', text: rest.slice(from, to) });
      return;
    }
  }
  let start = from;
  for (let i = from; i <= to; i++) {
    if (i < to) {
      const c = rest.charCodeAt(i);
      if (c !== 45 && c !== 95) continue;
    }
    if (i > start) out.push(tokenPiece(start === 0 && i === rest.length ? rest : rest.slice(start, i)));
    start = i + 1;
  }
}

/** `: / . | # @` or a character of the regular expression class `\s` (JavaScript's white space and line terminators). */
function isChunkSeparator(c: number): boolean {
  if (c < 128) return c === 58 || c === 47 || c === 46 || c === 124 || c === 35 || c === 64 || c === 32 || (c >= 9 && c <= 13);
  return c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/** Moves every match of the global `re` out of `rest` into `out` (replaced by a space); `rest` unchanged when none. */
function take(rest: string, re: RegExp, kind: Piece['kind'], out: Piece[]): string {
  re.lastIndex = 0;
  if (!re.test(rest)) {
    re.lastIndex = 0;
    return rest;
  }
  re.lastIndex = 0;
  return rest.replace(re, (m) => {
    out.push({ kind, text: m });
    return ' ';
  });
}

const MS_2001 = 978307200000;
const MS_2100 = 4102444800000;

/**
 * The kind of one token (no separators in it). One scan over the characters instead of a dozen
 * regular expressions; same rules as the regular expressions in fast-paths.test.ts (the reference):
 * epoch ms = 13 digits in 2001–2099, epoch s = 10 digits in 2001–2099, ULID = 26 of
 * `[0-9A-HJKMNP-TV-Z]` with a letter, starting `0`–`7`; random hex = 12+ hex digits with a digit
 * and a letter; random token = 16+ letters and digits with a digit, a lower- and an upper-case letter.
 */
function tokenPiece(tok: string): Piece {
  return { kind: tokenKind(tok), text: tok };
}

/** @internal exported for the tests: see {@link tokenPiece}. */
export function tokenKind(tok: string): Piece['kind'] {
  const n = tok.length;
  let digits = 0;
  let lower = 0;
  let upper = 0;
  let hexLetters = 0;
  let other = 0;
  let notUlid = 0;
  for (let i = 0; i < n; i++) {
    const c = tok.charCodeAt(i);
    if (c >= 48 && c <= 57) digits++;
    else if (c >= 97 && c <= 122) {
      lower++;
      if (c <= 102) hexLetters++;
    } else if (c >= 65 && c <= 90) {
      upper++;
      if (c <= 70) hexLetters++;
      if (c === 73 || c === 76 || c === 79 || c === 85) notUlid++; // I L O U
    } else other++;
  }
  if (digits === n && (n === 13 || n === 10)) {
    const ms = n === 13 ? Number(tok) : Number(tok) * 1000;
    if (ms >= MS_2001 && ms < MS_2100) return n === 13 ? 'epoch-ms' : 'epoch-s';
  }
  if (other > 0) return 'word';
  const c0 = tok.charCodeAt(0);
  if (n === 26 && lower === 0 && notUlid === 0 && upper > 0 && c0 >= 48 && c0 <= 55) return 'ulid';
  if (n >= 12 && lower + upper === hexLetters && digits > 0 && hexLetters > 0) return 'hex';
  if (n >= 16 && digits > 0 && lower > 0 && upper > 0) return 'random';
  return 'word';
}

const RANDOM_KINDS = new Set<Piece['kind']>(['uuid', 'ulid', 'nanoid', 'hex', 'random']);
const TIME_KINDS = new Set<Piece['kind']>(['timestamp', 'epoch-ms', 'epoch-s']);
const PERIOD_KINDS = new Set<Piece['kind']>(['week', 'date', 'month']);
const KIND_NAMES: Record<Piece['kind'], string> = {
  timestamp: 'an ISO timestamp',
  'epoch-ms': 'an epoch time in ms',
  'epoch-s': 'an epoch time in seconds',
  week: 'an ISO week',
  date: 'a date',
  month: 'a month',
  uuid: 'a UUID',
  ulid: 'a ULID',
  nanoid: 'a nanoid-style random id',
  hex: 'random hex',
  random: 'a random-looking token',
  word: 'a literal',
};

/**
 * Flags of a matched payload value ({@link matchFlags}): what its pieces are (all time kinds, all
 * period kinds — 0 for anything else) and what its member name says about it.
 */
const MATCH_OTHER = 0;
const MATCH_TIME = 1;
const MATCH_PERIOD = 2;
/** From a member that changes on every send (`attempt`, `retryCount`, `nonce`…: {@link NameInfo.perSend}). */
const MATCH_PER_SEND = 4;
/** A value many unrelated messages share: from a currency, amount, quantity, status or operation member, and not identifier-like itself. */
const MATCH_SHARED = 8;
const MATCH_PIECES = MATCH_TIME | MATCH_PERIOD;
const NO_MATCH_FLAGS: number[] = [];

/** Which time pieces of a matched value count as time: none (an identifier's name), ISO timestamps only (a name that does not say), or all (a time name). */
const TIME_NONE = 0;
const TIME_ISO = 1;
const TIME_ALL = 2;

/**
 * Roles whose values many unrelated messages share (a currency, an amount, a status, an
 * operation name): a key made only of them does not tell one business operation from another.
 * Not `version`: its names include `seq` / `sequence`, which a producer may number uniquely.
 */
const SHARED_ROLES: ReadonlySet<string> = new Set(['currency', 'amount', 'quantity', 'balance', 'state', 'op']);
/** Of {@link SHARED_ROLES}, the numeric ones: a long number there is still a quantity, not an id. */
const QUANTITY_ROLES: ReadonlySet<string> = new Set(['amount', 'quantity', 'balance']);

/**
 * For each match, its flags: {@link MATCH_TIME} when the value is made of time pieces only (at
 * least one) that its member name lets count as time ({@link timeMode}), {@link MATCH_PERIOD} when
 * of period pieces only, plus {@link MATCH_PER_SEND} and {@link MATCH_SHARED} from the member
 * name. Values without a digit are words (no piece analysis).
 */
function matchFlags(matches: readonly Scalar[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < matches.length; i++) {
    const m = matches[i] as Scalar;
    const info = m.name !== null ? nameInfo(m.name) : null;
    const digits = hasDigit(m.text);
    let f = digits ? piecesClass(pieces(m.text), timeMode(info)) : MATCH_OTHER;
    if (info !== null) {
      if (info.perSend) f |= MATCH_PER_SEND;
      if (SHARED_ROLES.has(info.role) && !idLikeValue(m.text, digits, QUANTITY_ROLES.has(info.role))) f |= MATCH_SHARED;
    }
    out.push(f);
  }
  return out;
}

/**
 * Which time pieces of a value from member `info` count as time: none when the name says
 * identifier (`orderId: 1234567890` is an order number, not 2009-02-13), all when it says time
 * (`createdAt`, `sent_at`, `timestamp`, `ts`, `date`, `…Epoch`…), else ISO timestamps only — a
 * 10- or 13-digit number in a member whose name does not say time is no evidence of a time.
 */
function timeMode(info: NameInfo | null): number {
  if (info === null) return TIME_ISO;
  const role = info.role;
  if (role === 'id' || role === 'ref') return TIME_NONE;
  if (role === 'time' || role === 'updated' || role === 'marker' || timeWord(info.norm)) return TIME_ALL;
  return TIME_ISO;
}

/** A normalised name that says time with a unit after it (`eventTimeMs`, `createdAtMillis`, `sent_at_sec`) or an epoch (`epoch`, `epochSeconds`). */
function timeWord(norm: string): boolean {
  if (norm.includes('epoch') || norm.includes('time') || norm.includes('stamp')) return true;
  for (const unit of TIME_UNITS) if (norm.endsWith(unit) && norm.length > unit.length + 1 && norm.endsWith('at', norm.length - unit.length)) return true;
  return false;
}
const TIME_UNITS = ['ms', 'millis', 'sec', 'secs', 'seconds'];

/** The value looks like an identifier itself: letters and digits (`A-1001`), or six digits or more outside a quantity. */
function idLikeValue(text: string, digits: boolean, quantity: boolean): boolean {
  if (!digits) return false;
  let nd = 0;
  let letters = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) nd++;
    else if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122)) letters = true;
  }
  return letters || (!quantity && nd >= 6);
}

function piecesClass(ps: readonly Piece[], mode: number): number {
  if (ps.length === 0) return MATCH_OTHER;
  let allTime = mode !== TIME_NONE;
  let allPeriod = true;
  for (let i = 0; i < ps.length; i++) {
    const k = (ps[i] as Piece).kind;
    if (!TIME_KINDS.has(k) || (mode === TIME_ISO && k !== 'timestamp')) allTime = false;
    if (!PERIOD_KINDS.has(k)) allPeriod = false;
  }
  return allTime ? MATCH_TIME : allPeriod ? MATCH_PERIOD : MATCH_OTHER;
}

/** The first match whose piece class (see {@link matchFlags}) is `cls`, or undefined. */
function firstMatchOf<T extends Scalar>(matches: readonly T[], flags: readonly number[], cls: number): T | undefined {
  for (let i = 0; i < matches.length; i++) if (((flags[i] as number) & MATCH_PIECES) === cls) return matches[i];
  return undefined;
}

/** The first match with `flag` set, or undefined. */
function firstFlagged<T extends Scalar>(matches: readonly T[], flags: readonly number[], flag: number): T | undefined {
  for (let i = 0; i < matches.length; i++) if (((flags[i] as number) & flag) !== 0) return matches[i];
  return undefined;
}

/** Every match has `flag` set (false when there is none). */
function allFlagged(flags: readonly number[], flag: number): boolean {
  for (let i = 0; i < flags.length; i++) if (((flags[i] as number) & flag) === 0) return false;
  return flags.length > 0;
}

/**
 * True when another body value with the same text as the per-send match `m` comes from a member
 * that does not change per send (`lineNo: 1` beside `attempt: 1`): the key part may as well be that
 * one, so it is not called per-send.
 */
function alsoStable(m: Scalar, scalars: readonly Scalar[]): boolean {
  for (let i = 0; i < scalars.length; i++) {
    const s = scalars[i] as Scalar;
    if (s.text === m.text && s.path !== m.path && (s.name === null || !nameInfo(s.name).perSend)) return true;
  }
  return false;
}

/** What a per-send member changes with, for the reason (`a retry counter`, `a one-time nonce`…). */
function perSendWhat(name: string | null): string {
  const norm = name !== null ? nameInfo(name).norm : '';
  if (norm.includes('attempt') || norm.includes('retr') || norm.includes('receivecount') || norm.includes('deliverycount') || norm.includes('tries') || norm.includes('trycount')) return 'a retry counter';
  if (norm.includes('nonce')) return 'a one-time nonce';
  if (norm.endsWith('at') || norm.endsWith('time')) return 'the send time';
  if (norm.includes('signature') || norm.includes('signing')) return 'a signature of the send';
  return 'an id of the send, not of the business operation';
}

/** A residual literal holds a digit: likely an id the body does not carry (`ORD-77` in `ORD-77:EUR`), so the key may identify the operation. */
function residualHasDigit(residual: readonly Piece[]): boolean {
  for (let i = 0; i < residual.length; i++) if (hasDigit((residual[i] as Piece).text)) return true;
  return false;
}

/** The first piece of one of `kinds`, or undefined. */
function firstOfKinds(ps: readonly Piece[], kinds: ReadonlySet<Piece['kind']>): Piece | undefined {
  for (let i = 0; i < ps.length; i++) if (kinds.has((ps[i] as Piece).kind)) return ps[i];
  return undefined;
}

/** True when `s` has an ASCII digit (`/\d/.test(s)` without the regular expression). */
function hasDigit(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) return true;
  }
  return false;
}

const clip = (s: string, n = 40): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const cite = (m: Scalar): string => `${m.path} (${clip(m.text)})`;
const list = (xs: string[]): string => (xs.length <= 1 ? (xs[0] ?? '') : `${xs.slice(0, -1).join(', ')} and ${xs[xs.length - 1] ?? ''}`);

/**
 * Classifies an idempotency key against the message it came with, in one sentence citing fields.
 *
 * Evidence: the body's JSON scalar values (walked to {@link MAX_BODY_DEPTH} levels, at most
 * {@link MAX_BODY_FIELDS} values), matched as whole separator-aligned substrings of the key (so
 * ids that contain separators, like `A-1001`, match). The fields the key was read from
 * (`extraction.fields`) are not evidence unless a template composed it (`extraction.composed`). What remains of the key is split into pieces (ISO
 * timestamps, weeks, dates and months; UUIDs, ULIDs, nanoids, random hex; epoch s/ms; words).
 * A matched value's member name says what it is: an identifier's value (`orderId`, `…_id`, `sku`,
 * `reference`, `…Number`) is never a time, epoch digits count as a time only from a member named as
 * one (`createdAt`, `ts`, `timestamp`, `…Ms`…; ISO timestamps from any other member too), a
 * per-send member (`attempt`, `retryCount`, `nonce`…, {@link NameInfo.perSend}) is no business
 * evidence.
 * Verdicts, first that applies:
 * - `missing`: empty key;
 * - an SQS MessageDeduplicationId the adapter found to be the SHA-256 of the body
 *   (`meta.deduplicationIdSource: 'content'`, the key read verbatim from
 *   `meta.messageDeduplicationId`) is judged by what the body carries, not by the key's text
 *   ({@link contentKeyVerdict}): `time-derived` when a body member holds a time, `opaque-random`
 *   when one changes per send (or the body was cut at the read limit, so it could not be checked),
 *   else `business-derived` — identical sends share it;
 * - `time-derived`: an epoch (s or ms, years 2001–2099) or ISO timestamp in the unmatched text, or
 *   a matched time value (above);
 * - `opaque-random`: a part from a per-send member — a retry gets a new key (the reason names it);
 * - `opaque-random`: a UUID / ULID / nanoid / random hex / random token not found in the payload;
 * - `period-key`: an ISO week (`2026-W36`), date (`2026-11-29`) or month (`2026-11`);
 * - `opaque-random`: only values many unrelated messages share (currency, amount, quantity,
 *   balance, status, operation members, not identifier-like themselves) and no literal with a
 *   digit — different operations collide; not business-derived, which would pass it as safe;
 * - `business-derived`: at least one payload value, remaining pieces are literal words;
 * - otherwise `opaque-random` (no payload value explains the key). When the body was cut at the
 *   read limit and no value of it matched, the reason says the key could not be checked rather
 *   than that it matches no payload value.
 *
 * Never throws; keys longer than {@link MAX_KEY_LENGTH} are analysed on their prefix.
 *
 * @param key the key, usually {@link KeyExtraction.key}; `''` when none was found (→ `missing`).
 * @param message the message the key came with; its body is the evidence.
 * @param extraction where the key came from (from {@link extractIdempotencyKey}); its source is named
 *   in the reason and its fields are excluded from the evidence (see {@link KeyExtraction.fields}).
 */
export function classifyKey(key: string, message: QueueMessage, extraction?: Pick<KeyExtraction, 'fields' | 'source' | 'composed'>): KeyVerdict {
  return classifyOrFallback(key, message, extraction, true, null);
}

/**
 * {@link classifyKey} (`sentences`) or {@link classifyKeyVerdictOnly} with the body values gathered
 * by the payload walk ({@link keyEvidence}); the body is walked here only when that evidence is not
 * exact. Same result as without evidence. Never throws.
 *
 * @internal for shared/analysis/analyze.ts.
 */
export function classifyKeyWithEvidence(key: string, message: QueueMessage, extraction: Pick<KeyExtraction, 'fields' | 'source' | 'composed'> | undefined, sentences: boolean, evidence: KeyEvidence | null): KeyVerdict {
  return classifyOrFallback(key, message, extraction, sentences, evidence);
}

/**
 * {@link classifyKey} for the queue summary, which reads only the verdict: the same verdict, with
 * `reason` left empty (`''`) instead of a sentence built from the key and message that the summary
 * would drop (fixed sentences — no key, not analysable — stay). Never throws.
 *
 * @internal for shared/analysis (the summary); results must not reach callers of the public API.
 */
export function classifyKeyVerdictOnly(key: string, message: QueueMessage, extraction?: Pick<KeyExtraction, 'fields' | 'source' | 'composed'>): KeyVerdict {
  return classifyOrFallback(key, message, extraction, false, null);
}

function classifyOrFallback(key: string, message: QueueMessage, extraction: Pick<KeyExtraction, 'fields' | 'source' | 'composed'> | undefined, sentences: boolean, evidence: KeyEvidence | null): KeyVerdict {
  // withRawBody() inlined: this runs once per message, and its closure was one more allocation.
  const prev = rawBody;
  try {
    rawBody = rawBodyOf(message);
    return classify(typeof key === 'string' ? key : '', message, extraction, sentences, evidence);
  } catch {
    return { verdict: 'opaque-random', reason: 'opaque-random: the key could not be analysed, so it cannot be shown to come from the payload.' };
  } finally {
    rawBody = prev;
  }
}

function classify(rawKey: string, message: QueueMessage, extraction: Pick<KeyExtraction, 'fields' | 'source' | 'composed'> | undefined, sentences: boolean, evidence: KeyEvidence | null): KeyVerdict {
  const key = rawKey.trim().slice(0, MAX_KEY_LENGTH);
  const from = extraction ? ` (from ${extraction.source})` : '';
  if (key.length === 0) {
    if (message.body.truncated) {
      return { verdict: 'missing', reason: `missing: no idempotency key was found in the headers or properties, and the body (${message.body.sizeBytes} bytes) was cut at the read limit, so a key in the body could not be read; raise the read limit to check it.` };
    }
    const unusable = unusableKeyHeader(message.headers);
    if (unusable !== undefined) {
      return { verdict: 'missing', reason: `missing: the header ${unusable.name} is present but ${unusable.why}, so it cannot serve as a key, and no other idempotency key was found in the headers, properties or body; redelivered copies cannot be recognised.` };
    }
    return { verdict: 'missing', reason: 'missing: no idempotency key was found in the headers, properties or body, so redelivered copies cannot be recognised.' };
  }
  if (extraction !== undefined && isContentKey(key, message, extraction)) return contentKeyVerdict(key, message, extraction.source, sentences);
  const exclude = extraction?.composed === true ? [] : (extraction?.fields ?? []);
  // The payload walk's evidence when it is for this key and complete; else walk the body here.
  const walked: { out: Scalar[]; copies: Scalar[] } = evidence !== null && evidence.done && evidence.exact && evidence.key === key ? evidence : collectScalars(bodyJson(message), exclude, key);
  const copy = walked.copies[0];
  const copied = copy !== undefined ? ` (its copy in ${copy.path} is the key itself, not a business value)` : '';
  let matches: (Scalar & { at: number })[];
  let residual: Piece[];
  if (walked.out.length === 0) {
    // No payload value in the key: the whole key is one uncovered run.
    matches = [];
    residual = pieces(key);
  } else {
    matches = matchValues(key, walked.out);
    const covered = COVERED;
    residual = [];
    // The uncovered runs of the key, in order.
    let start = -1;
    for (let i = 0; i <= key.length; i++) {
      if (i < key.length && covered[i] === 0) {
        if (start < 0) start = i;
      } else if (start >= 0) {
        for (const p of pieces(key.slice(start, i))) residual.push(p);
        start = -1;
      }
    }
  }
  // Only values with a digit need piece analysis; the member names say the rest (see matchFlags).
  const flags = matches.length === 0 ? NO_MATCH_FLAGS : matchFlags(matches);
  const q = `'${clip(key, 60)}'`;
  const time = firstOfKinds(residual, TIME_KINDS);
  const timeField = firstMatchOf(matches, flags, MATCH_TIME);
  if (time ?? timeField) {
    if (!sentences) return { verdict: 'time-derived', reason: '' };
    const what = time ? `contains ${KIND_NAMES[time.kind]} (${clip(time.text)})` : `uses the timestamp ${cite(timeField ?? { path: '', text: '', name: null })}`;
    return { verdict: 'time-derived', reason: `time-derived: the key ${q}${from} ${what}, so a copy sent at another time gets a different key and is not deduplicated.` };
  }
  // A part from a member that changes on every send (a retry counter, a nonce): not business evidence.
  let perSend = firstFlagged(matches, flags, MATCH_PER_SEND);
  if (perSend !== undefined && alsoStable(perSend, walked.out)) perSend = undefined;
  if (perSend !== undefined) {
    if (!sentences) return { verdict: 'opaque-random', reason: '' };
    const ps = perSend;
    const rest = matches.filter((m) => m !== ps).map(cite);
    const keep = rest.length > 0 ? `; build it from the business values alone (${list(rest)})` : '';
    return {
      verdict: 'opaque-random',
      reason: `opaque-random: the key ${q}${from} includes ${cite(ps)}, which changes on every send (${perSendWhat(ps.name)}), so a retry gets a new key and is not deduplicated${keep}.`,
    };
  }
  // The body was cut at the read limit and no value of it was found: nothing was checked.
  const unchecked = matches.length === 0 && message.body.truncated;
  const cut = unchecked ? `the body (${String(message.body.sizeBytes)} bytes) was cut at the read limit, so the key could not be checked against the payload; raise the read limit (queuescope inspect --max-body-bytes) to check it` : '';
  const random = firstOfKinds(residual, RANDOM_KINDS);
  if (random) {
    if (!sentences) return { verdict: 'opaque-random', reason: '' };
    if (unchecked) {
      return { verdict: 'opaque-random', reason: `opaque-random: the key ${q}${from} contains ${KIND_NAMES[random.kind]} (${clip(random.text)}), but ${cut}; if the sender makes a new one per send, retries are not deduplicated.` };
    }
    const partly = matches.length > 0 ? ` (it also uses ${list(matches.map(cite))})` : '';
    return {
      verdict: 'opaque-random',
      reason: `opaque-random: the key ${q}${from} contains ${KIND_NAMES[random.kind]} (${clip(random.text)}) found in no payload value${copied}${partly}; if the sender makes a new one per send, retries are not deduplicated.`,
    };
  }
  const period = firstOfKinds(residual, PERIOD_KINDS) ?? firstMatchOf(matches, flags, MATCH_PERIOD);
  if (period) {
    if (!sentences) return { verdict: 'period-key', reason: '' };
    const what = 'kind' in period ? `${KIND_NAMES[period.kind]} (${period.text})` : `the period ${cite(period)}`;
    return { verdict: 'period-key', reason: `period-key: the key ${q}${from} is built on ${what}, right for a scheduled job that must run once per period.` };
  }
  if (matches.length > 0) {
    // Only values unrelated messages share (a currency, an amount, a status, an operation name) and
    // no literal with a digit: the key does not identify one operation. Not business-derived (that
    // would pass it as safe); opaque-random is the nearest verdict — "not shown to identify the
    // business operation" — and the reason says that different operations collide.
    if (allFlagged(flags, MATCH_SHARED) && !residualHasDigit(residual)) {
      if (!sentences) return { verdict: 'opaque-random', reason: '' };
      const one = matches.length === 1;
      return {
        verdict: 'opaque-random',
        reason: `opaque-random: the key ${q}${from} is built only from ${list(matches.map(cite))}, ${one ? 'a value' : 'values'} many unrelated messages share, so it does not identify one business operation: different operations get the same key, and a consumer that deduplicates on it drops all but the first; build it from the operation's business id (such as an order id).`,
      };
    }
    if (!sentences) return { verdict: 'business-derived', reason: '' };
    const words = residual.filter((p) => p.kind === 'word').map((p) => `'${clip(p.text)}'`);
    const lit = words.length > 0 ? ` and the literal ${list(words)}` : '';
    return { verdict: 'business-derived', reason: `business-derived: the key ${q}${from} is built from ${list(matches.map(cite))}${lit}, so every send of the same business operation gets the same key.` };
  }
  if (!sentences) return { verdict: 'opaque-random', reason: '' };
  if (unchecked) return { verdict: 'opaque-random', reason: `opaque-random: the key ${q}${from} could not be shown to be business-derived: ${cut}.` };
  return {
    verdict: 'opaque-random',
    reason: `opaque-random: the key ${q}${from} matches no payload value${copied}, so it cannot be shown to be business-derived; if the sender makes a new one per send, retries are not deduplicated.`,
  };
}

// ---------------------------------------------------------------------------------------------
// SQS content-based deduplication ids

/** The message's SQS MessageDeduplicationId is the SHA-256 of its body (the SQS adapter checked it; {@link MessageMeta.deduplicationIdSource}). */
function contentDedup(message: QueueMessage): boolean {
  return own(message.meta, 'deduplicationIdSource') === 'content';
}

/**
 * True when `key` is the message's content-based MessageDeduplicationId, read verbatim (rule K3,
 * or a user rule on `meta.messageDeduplicationId`): then the key's text says nothing — it is a hash
 * — and the body is the evidence.
 */
function isContentKey(key: string, message: QueueMessage, extraction: Pick<KeyExtraction, 'fields' | 'composed'>): boolean {
  if (extraction.composed === true || extraction.fields.length !== 1 || extraction.fields[0] !== DEDUP_FIELD || !contentDedup(message)) return false;
  return scalarText(own(message.meta, 'messageDeduplicationId'))?.trim() === key;
}

/** What {@link contentMembers} found: the first body member holding a time, the first that changes per send. */
interface ContentWalk {
  time: Scalar | undefined;
  perSend: Scalar | undefined;
  visited: number;
}

/**
 * Walks a JSON body for members that make its SHA-256 differ between sends of the same operation:
 * a time (the member name and value judged as in {@link matchFlags}: ISO timestamps from any
 * member but an identifier, epoch digits only from a member named as a time) and a per-send member
 * ({@link NameInfo.perSend}: `attempt`, `requestId`, `nonce`, `sentAt`…). Bounded like
 * {@link collect}: {@link MAX_BODY_DEPTH} levels, {@link MAX_BODY_FIELDS} members per container,
 * 4 × {@link MAX_BODY_FIELDS} nodes in all; stops at the first time.
 */
function contentMembers(json: unknown): ContentWalk {
  const w: ContentWalk = { time: undefined, perSend: undefined, visited: 0 };
  walkContent(w, json, null, [], 0);
  return w;
}

/** One value of {@link contentMembers}'s walk; true once a time was found (the walk stops). */
function walkContent(w: ContentWalk, v: unknown, name: string | null, segs: string[], depth: number): boolean {
  if (w.visited++ >= MAX_BODY_FIELDS * 4) return true;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
    const info = name !== null ? nameInfo(name) : null;
    const t = typeof v === 'string' ? (v.length > 0 ? v : undefined) : typeof v === 'number' ? numberText(v, rawBody, name) : String(v);
    if (t === undefined) return false;
    if (typeof v !== 'boolean' && t.length <= MAX_VALUE_LENGTH && hasDigit(t) && piecesClass(pieces(t), timeMode(info)) === MATCH_TIME) {
      w.time = { path: scalarPath(segs), text: t, name };
      return true;
    }
    if (w.perSend === undefined && info?.perSend === true) w.perSend = { path: scalarPath(segs), text: t, name };
    return false;
  }
  if (depth >= MAX_BODY_DEPTH || v === null || typeof v !== 'object') return false;
  if (Array.isArray(v)) {
    const n = Math.min(v.length, MAX_BODY_FIELDS);
    for (let i = 0; i < n; i++) {
      segs.push(indexSeg(i));
      const stop = walkContent(w, v[i], name, segs, depth + 1);
      segs.pop();
      if (stop) return true;
    }
    return false;
  }
  const keys = Object.keys(v);
  const n = Math.min(keys.length, MAX_BODY_FIELDS);
  for (let i = 0; i < n; i++) {
    const k = keys[i] as string;
    segs.push(k);
    const stop = walkContent(w, (v as Record<string, unknown>)[k], k, segs, depth + 1);
    segs.pop();
    if (stop) return true;
  }
  return false;
}

/** Advice closing a content-based verdict that is not business-derived. */
const EXPLICIT_ID = 'send an explicit MessageDeduplicationId built from business values (such as the order id and operation)';

/**
 * The verdict of an SQS content-based MessageDeduplicationId (SQS Developer Guide, "Using the
 * message deduplication ID": with `ContentBasedDeduplication`, SQS makes the id as the SHA-256 of
 * the body, so sends with identical bodies share it and SQS drops repeats within its 5-minute
 * deduplication interval). The body decides, first that applies:
 * - the body was cut at the read limit → `opaque-random` (it could not be checked; the reason says
 *   to raise the read limit);
 * - a JSON member holding a time ({@link contentMembers}; `body.requestedAt`) → `time-derived`;
 *   a text body with an ISO timestamp → `time-derived`;
 * - a per-send member (`body.attempt`, `body.requestId`) → `opaque-random`;
 * - otherwise `business-derived`: identical sends share the id.
 */
function contentKeyVerdict(key: string, message: QueueMessage, source: string, sentences: boolean): KeyVerdict {
  const q = `'${clip(key, 17)}'`;
  const from = ` (from ${source})`;
  if (message.body.truncated) {
    if (!sentences) return { verdict: 'opaque-random', reason: '' };
    return {
      verdict: 'opaque-random',
      reason: `opaque-random: the key ${q}${from} changes with the body, but the body (${String(message.body.sizeBytes)} bytes) was cut at the read limit, so it could not be checked for per-send or time members; raise the read limit (queuescope inspect --max-body-bytes) to check it.`,
    };
  }
  const view = bodyView(message);
  let time: Scalar | undefined;
  let perSend: Scalar | undefined;
  if (view.format === 'json') {
    const w = contentMembers(view.json);
    time = w.time;
    perSend = w.perSend;
  } else if (view.format === 'text' && typeof message.body.data === 'string') {
    ISO_TIMESTAMP.lastIndex = 0;
    const m = ISO_TIMESTAMP.exec(message.body.data);
    ISO_TIMESTAMP.lastIndex = 0;
    if (m !== null) time = { path: 'the body text', text: m[0], name: null };
  }
  if (time !== undefined) {
    if (!sentences) return { verdict: 'time-derived', reason: '' };
    const what = time.name !== null && nameInfo(time.name).perSend ? 'the send time' : 'a time';
    return {
      verdict: 'time-derived',
      reason: `time-derived: the key ${q}${from} changes with the body, which carries ${cite(time)}, ${what}: a retry that builds the body again later gets a new id and is not deduplicated; ${EXPLICIT_ID}.`,
    };
  }
  if (perSend !== undefined) {
    if (!sentences) return { verdict: 'opaque-random', reason: '' };
    return {
      verdict: 'opaque-random',
      reason: `opaque-random: the key ${q}${from} changes with the body, which carries ${cite(perSend)}, a value that changes on every send (${perSendWhat(perSend.name)}): a retry gets a new id and is not deduplicated; ${EXPLICIT_ID}, or leave ${perSend.path} out of the body.`,
    };
  }
  if (!sentences) return { verdict: 'business-derived', reason: '' };
  const carries = view.format === 'json' ? 'which carries no per-send or time member' : view.format === 'text' ? 'which is not JSON and holds no timestamp' : 'which holds nothing that changes per send';
  return {
    verdict: 'business-derived',
    reason: `business-derived: the key ${q}${from} changes only with the body, ${carries}, so identical sends share it and SQS drops a repeat sent within its 5-minute deduplication interval.`,
  };
}
