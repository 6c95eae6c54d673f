import { Gunzip } from 'fflate';
import type { MessageBody } from '../domain';

/**
 * Body decoding for the message viewer (and anything else that shows a body):
 * peels base64 and gzip layers, then classifies the innermost bytes as JSON,
 * text or binary. Pure: no DOM, no Node built-ins; never throws, whatever the bytes.
 *
 * Formats followed: gzip RFC 1952 (magic `1f 8b`, multi-member allowed), base64
 * RFC 4648 §4 (standard alphabet, padded; MIME-style line breaks tolerated),
 * JSON RFC 8259, UTF-8 per the WHATWG Encoding Standard (fatal decoder).
 */

/** A decoding step the viewer applied, outermost first. */
export type BodyLayer = 'base64' | 'gzip';

/** What {@link decodeBody} found. */
export interface DecodedBody {
  /** Classification of the innermost bytes. */
  format: 'json' | 'text' | 'binary';
  /** Decoding applied, outermost first, e.g. `['base64', 'gzip']`. Transport base64 of {@link MessageBody.encoding} is not a layer. */
  layers: BodyLayer[];
  /** Pretty JSON (2-space indent, original number literals kept), the text, or `''` for binary. */
  text: string;
  /** The parsed value when `format === 'json'`. */
  json?: unknown;
  /** Why text that looks like JSON (starts with `{` or `[`) is not JSON, e.g. "Unexpected end of JSON input". */
  jsonError?: string;
  /** Anything else worth telling the user: a gzip layer that ended early, transport data that was not base64… */
  warnings: string[];
  /** The innermost bytes (after all layers). */
  bytes: Uint8Array;
  /** Size of the original body in bytes, as the broker reported it. */
  sizeBytes: number;
  /** True when the adapter cut the body, or a layer's output was cut at {@link MAX_DECODED_BYTES}. */
  truncated: boolean;
}

/** Decompressed output beyond this many bytes is cut (defends against gzip bombs). 32 MiB. */
export const MAX_DECODED_BYTES = 32 * 1024 * 1024;
/** How many layers are peeled at most (base64 of gzip of base64 …). */
const MAX_LAYERS = 4;

const utf8Fatal = new TextDecoder('utf-8', { fatal: true });
const utf8Encoder = new TextEncoder();

/**
 * Decodes a message body for display.
 *
 * - gzip (bytes start `1f 8b`) is inflated; a truncated stream yields what inflated, with a warning.
 * - text that is strict base64 (alphabet, length a multiple of 4, correct padding) is decoded only
 *   when the result is meaningful: gzip data, valid JSON, or readable UTF-8 text — so plain words
 *   such as `test` stay text.
 * - valid UTF-8 without binary control characters is text; text starting with `{`/`[` is parsed as
 *   JSON (malformed → `format: 'text'` with {@link DecodedBody.jsonError}); other JSON scalars count as JSON.
 * - everything else is binary (`text: ''`; show it with {@link hexDump}).
 *
 * Never throws.
 */
export function decodeBody(body: MessageBody): DecodedBody {
  const warnings: string[] = [];
  let truncated = body.truncated;
  let bytes: Uint8Array;
  if (body.encoding === 'base64') {
    const raw = base64ToBytes(body.data.replace(/\s+/g, ''));
    if (raw === null) {
      warnings.push('The body was marked base64 but is not valid base64; showing the stored text.');
      bytes = utf8Encoder.encode(body.data);
    } else bytes = raw;
  } else {
    bytes = utf8Encoder.encode(body.data);
  }

  const layers: BodyLayer[] = [];
  let text: string | null = null;
  for (let depth = 0; depth < MAX_LAYERS; depth++) {
    if (isGzip(bytes)) {
      const inflated = gunzipBounded(bytes);
      if (inflated.bytes.length === 0 && inflated.error !== null) {
        warnings.push(`Looks like gzip but could not be decompressed: ${inflated.error}.`);
        break;
      }
      if (inflated.error !== null) warnings.push(`The gzip data ended early (${inflated.error}); showing what was decompressed.`);
      if (inflated.cut) {
        warnings.push(`Decompressed output was cut at ${MAX_DECODED_BYTES} bytes.`);
        truncated = true;
      }
      layers.push('gzip');
      bytes = inflated.bytes;
      text = null;
      continue;
    }
    text = toText(bytes);
    if (text === null) break;
    const inner = meaningfulBase64(text);
    if (inner === null) break;
    layers.push('base64');
    bytes = inner;
    text = null;
  }
  text ??= toText(bytes);

  const base = { layers, warnings, bytes, sizeBytes: body.sizeBytes, truncated };
  if (text === null) return { ...base, format: 'binary', text: '' };
  const parsed = parseJson(text);
  if (parsed.ok) return { ...base, format: 'json', text: prettyJson(text), json: parsed.value };
  const trimmedStart = text.trimStart();
  if (trimmedStart.startsWith('{') || trimmedStart.startsWith('[')) {
    const jsonError = truncated ? `${parsed.error} (the body was truncated)` : parsed.error;
    return { ...base, format: 'text', text, jsonError };
  }
  return { ...base, format: 'text', text };
}

/** "base64 → gzip → JSON": the layers and the final format, for the viewer's header. */
export function describeLayers(decoded: Pick<DecodedBody, 'layers' | 'format'>): string {
  const names = { json: 'JSON', text: 'text', binary: 'binary' } as const;
  return [...decoded.layers, names[decoded.format]].join(' → ');
}

/**
 * A one-line preview for message lists: whitespace collapsed, at most `maxChars` characters
 * (an ellipsis marks the cut). Binary bodies read "binary, N bytes".
 */
export function bodyPreview(decoded: DecodedBody, maxChars = 160): string {
  if (decoded.format === 'binary') return `binary, ${decoded.bytes.length} bytes`;
  // Only look at a bounded prefix so a 1 MiB body does not cost a full scan per row.
  const head = decoded.text.slice(0, maxChars * 4).replace(/\s+/g, ' ').trim();
  return head.length > maxChars ? `${head.slice(0, maxChars - 1)}…` : head;
}

/**
 * Classic hex dump (`hexdump -C` layout), 16 bytes a line:
 * `00000010  7b 22 69 64 22 3a 20 31  2c 20 22 6e 61 6d 65 22  |{"id": 1, "name"|`.
 * Non-printable bytes show as `.` in the ASCII column.
 *
 * @param options.offset first byte to dump (default 0; clamped to the data).
 * @param options.length bytes to dump (default: to the end).
 * @returns lines joined with `\n`; `''` for no bytes.
 */
export function hexDump(bytes: Uint8Array, options: { offset?: number; length?: number } = {}): string {
  return hexDumpLines(bytes, options).join('\n');
}

/** {@link hexDump} as an array of lines (for virtualized rendering). */
export function hexDumpLines(bytes: Uint8Array, options: { offset?: number; length?: number } = {}): string[] {
  const start = clampInt(options.offset ?? 0, 0, bytes.length);
  const end = clampInt(options.length === undefined ? bytes.length : start + options.length, start, bytes.length);
  const lines: string[] = [];
  for (let lineStart = start; lineStart < end; lineStart += 16) {
    const lineEnd = Math.min(lineStart + 16, end);
    let hex = '';
    let ascii = '';
    for (let i = 0; i < 16; i++) {
      const p = lineStart + i;
      if (i === 8) hex += ' ';
      if (p < lineEnd) {
        const b = bytes[p] ?? 0;
        hex += `${HEX[b] ?? '??'} `;
        ascii += b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.';
      } else hex += '   ';
    }
    lines.push(`${lineStart.toString(16).padStart(8, '0')}  ${hex} |${ascii}|`);
  }
  return lines;
}

const HEX: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

function clampInt(n: number, lo: number, hi: number): number {
  if (!Number.isFinite(n)) return lo;
  return Math.min(hi, Math.max(lo, Math.trunc(n)));
}

function isGzip(bytes: Uint8Array): boolean {
  // RFC 1952: ID1 0x1f, ID2 0x8b, CM 8 (deflate).
  return bytes.length >= 10 && bytes[0] === 0x1f && bytes[1] === 0x8b && bytes[2] === 0x08;
}

/** Inflates gzip in chunks, stopping at {@link MAX_DECODED_BYTES}; keeps partial output of a cut stream. */
function gunzipBounded(input: Uint8Array): { bytes: Uint8Array; error: string | null; cut: boolean } {
  const chunks: Uint8Array[] = [];
  // An object, not locals: the callback mutates it, and TS flow analysis does not see that.
  const acc = { total: 0, cut: false };
  const stream = new Gunzip((chunk) => {
    if (acc.cut) return;
    const room = MAX_DECODED_BYTES - acc.total;
    if (chunk.length > room) {
      chunks.push(chunk.subarray(0, room));
      acc.total += room;
      acc.cut = true;
    } else {
      chunks.push(chunk);
      acc.total += chunk.length;
    }
  });
  let error: string | null = null;
  const step = 64 * 1024;
  try {
    // Push everything as non-final first, so a cut stream still yields what inflated before the end.
    for (let i = 0; i < input.length && !acc.cut; i += step) stream.push(input.subarray(i, Math.min(i + step, input.length)), false);
    if (!acc.cut) stream.push(new Uint8Array(0), true);
  } catch (e) {
    error = e instanceof Error ? e.message : String(e);
  }
  return { bytes: concat(chunks, acc.total), error, cut: acc.cut };
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1 && chunks[0]) return chunks[0];
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/**
 * The bytes as text, or null when they are not text: invalid UTF-8, a NUL byte, or more than
 * 1 in 20 characters being C0/DEL controls other than tab, LF, CR, FF and ESC.
 */
function toText(bytes: Uint8Array): string | null {
  let text: string;
  try {
    text = utf8Fatal.decode(bytes);
  } catch {
    return null;
  }
  let controls = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0) return null;
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x0c && c !== 0x1b) || c === 0x7f) controls++;
  }
  if (controls > 0 && controls * 20 > text.length) return null;
  return text;
}

const BASE64_STRICT = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Decodes standard base64 (whitespace already removed); null when invalid. */
function base64ToBytes(s: string): Uint8Array | null {
  if (s.length % 4 !== 0 || !BASE64_STRICT.test(s)) return null;
  let bin: string;
  try {
    bin = atob(s);
  } catch {
    return null;
  }
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/**
 * When `text` is strict base64 whose decoding is meaningful (gzip, JSON, or readable text),
 * the decoded bytes; otherwise null. Line breaks are allowed only in the MIME layout
 * (equal-length lines, a multiple of 4 characters each).
 */
function meaningfulBase64(text: string): Uint8Array | null {
  const trimmed = text.trim();
  if (trimmed.length < 4 || trimmed.length > 64 * 1024 * 1024) return null;
  let compact = trimmed;
  if (/[\r\n]/.test(trimmed)) {
    const lines = trimmed.split(/\r?\n/);
    const width = lines[0]?.length ?? 0;
    if (width === 0 || width % 4 !== 0) return null;
    for (let i = 0; i < lines.length - 1; i++) if (lines[i]?.length !== width) return null;
    compact = lines.join('');
  }
  const bytes = base64ToBytes(compact);
  if (bytes === null || bytes.length === 0) return null;
  if (isGzip(bytes)) return bytes;
  const inner = toText(bytes);
  if (inner === null) return null;
  if (parseJson(inner).ok && /^\s*[{["]/.test(inner)) return bytes;
  return looksLikeProse(inner) ? bytes : null;
}

/**
 * Readable text: at least 4 characters, no replacement characters, and — judged on the first
 * 4,096 characters — at least 90 % letters, digits, whitespace or common punctuation, and at
 * least a quarter letters. Random bytes that happen to be UTF-8 fail this.
 */
function looksLikeProse(text: string): boolean {
  if (text.length < 4 || text.includes('\uFFFD')) return false;
  const sample = text.length > 4096 ? text.slice(0, 4096) : text;
  let ordinary = 0;
  let letters = 0;
  let chars = 0;
  for (const ch of sample) {
    chars++;
    const c = ch.charCodeAt(0);
    if (c < 0x80) {
      if ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)) {
        letters++;
        ordinary++;
      } else if (c >= 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) ordinary++;
    } else if (/\p{L}/u.test(ch)) {
      letters++;
      ordinary++;
    } else if (/[\p{N}\p{Zs}\p{P}]/u.test(ch)) ordinary++;
  }
  return ordinary * 10 >= chars * 9 && letters * 4 >= chars;
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * Re-indents valid JSON text with 2 spaces without re-serialising it, so number literals
 * (e.g. 64-bit ids beyond 2^53) and string escapes appear exactly as sent.
 * Precondition: `text` parses as JSON.
 */
export function prettyJson(text: string): string {
  const out: string[] = [];
  let depth = 0;
  let i = 0;
  const n = text.length;
  const newline = (): void => {
    out.push('\n' + '  '.repeat(depth));
  };
  while (i < n) {
    const ch = text[i] as string;
    if (ch === '"') {
      let j = i + 1;
      while (j < n && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out.push(text.slice(i, j + 1));
      i = j + 1;
      continue;
    }
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      i++;
      continue;
    }
    if (ch === '{' || ch === '[') {
      // Empty containers stay on one line: {} and [].
      let j = i + 1;
      while (j < n && /\s/.test(text[j] as string)) j++;
      const close = ch === '{' ? '}' : ']';
      if (text[j] === close) {
        out.push(ch + close);
        i = j + 1;
        continue;
      }
      out.push(ch);
      depth++;
      newline();
      i++;
      continue;
    }
    if (ch === '}' || ch === ']') {
      depth--;
      newline();
      out.push(ch);
      i++;
      continue;
    }
    if (ch === ',') {
      out.push(',');
      newline();
      i++;
      continue;
    }
    if (ch === ':') {
      out.push(': ');
      i++;
      continue;
    }
    let j = i;
    while (j < n && !/[\s,:{}[\]"]/.test(text[j] as string)) j++;
    out.push(text.slice(i, j));
    i = j;
  }
  return out.join('');
}
