/**
 * A small, fast, non-cryptographic 64-bit hash (two 32-bit lanes) for grouping payloads. Pure.
 * Collisions between different payloads are possible but rare (~1 in 2^64 per pair); it is used
 * to group messages for people to look at, never to decide anything irreversible.
 */

/** Two lanes of a hash. */
export interface Hash2 {
  a: number;
  b: number;
}

const P1 = 0x01000193; // FNV prime
const P2 = 0x5bd1e995; // MurmurHash2 multiplier

/**
 * Strings at least this long (UTF-16 code units) that are all ASCII are hashed from their UTF-8
 * bytes, four per step ({@link hashAsciiBytes}): about 3.5× faster than reading them a character
 * at a time. Shorter ones are not worth the encoder call.
 */
export const BYTE_HASH_MIN_LENGTH = 48;
/** Longest string hashed from bytes (the scratch buffer never grows beyond this); longer ones are read a character at a time. */
const BYTE_HASH_MAX_LENGTH = 1 << 22;

/** What this module uses of a `TextEncoder` (typed here: the DOM and Node type libraries declare it differently). */
interface Utf8Encoder {
  encodeInto(source: string, destination: Uint8Array): { read: number; written: number };
}
const encoder: Utf8Encoder | null = typeof TextEncoder === 'function' ? new TextEncoder() : null;
let scratch = new Uint8Array(16 * 1024);
let scratchWords = new Int32Array(scratch.buffer);

/**
 * Hashes a string, seeded by `seed` (type tags keep "1" and 1 apart), into `out` (two 32-bit lanes,
 * unsigned) and returns `out`. Equal strings always give equal lanes within one process; the
 * values are not stable across versions and are never stored.
 *
 * A string of {@link BYTE_HASH_MIN_LENGTH} or more ASCII characters is hashed from its bytes
 * ({@link hashAsciiBytes}); any other string one character (UTF-16 code unit) at a time
 * ({@link hashUnits}, exact for lone surrogates too). Which one is used depends only on the string,
 * so a string always gets the same hash.
 */
export function hashString(s: string, seed: number, out: Hash2): Hash2 {
  const n = s.length;
  if (n >= BYTE_HASH_MIN_LENGTH && n <= BYTE_HASH_MAX_LENGTH && encoder !== null && hashAsciiBytes(s, seed, out)) return out;
  return hashUnits(s, seed, out);
}

/**
 * {@link hashString} for an all-ASCII string: encodes it into a scratch buffer (UTF-8 = the
 * characters' codes for ASCII) and hashes four bytes per step, zero-padded at the end, the length
 * mixed into the finaliser. Returns false, having hashed nothing, when `s` has a non-ASCII
 * character (its UTF-8 is longer than `s`) — such strings are hashed by {@link hashUnits}, since
 * the encoder would map every lone surrogate to the same U+FFFD and make different strings equal.
 */
function hashAsciiBytes(s: string, seed: number, out: Hash2): boolean {
  const n = s.length;
  if (scratch.length < n + 4) {
    scratch = new Uint8Array(Math.max(2 * scratch.length, (n + 4 + 1023) & ~1023));
    scratchWords = new Int32Array(scratch.buffer);
  }
  // A non-ASCII string encodes to more than n bytes (at most 3 per code unit, and never beyond its end).
  const r = (encoder as Utf8Encoder).encodeInto(s, scratch);
  if (r.read !== n || r.written !== n) return false;
  scratch[n] = 0;
  scratch[n + 1] = 0;
  scratch[n + 2] = 0;
  const words = scratchWords;
  const end = (n + 3) >>> 2;
  let a = (0x811c9dc5 ^ seed) | 0;
  let b = (0x9747b28c ^ seed) | 0;
  for (let i = 0; i < end; i++) {
    const w = words[i] as number;
    a = Math.imul(a ^ w, P1);
    b = ((b << 5) - b + w) | 0;
  }
  out.a = fmix(a ^ n ^ 0x3c6ef372);
  out.b = fmix(Math.imul(b ^ n, P2) ^ a);
  return true;
}

/** {@link hashString} one UTF-16 code unit at a time (two per 32-bit step): any string, exact. */
export function hashUnits(s: string, seed: number, out: Hash2): Hash2 {
  // Lane a: FNV-1a. Lane b: a polynomial (×31) hash — no multiply per character, so both lanes
  // cost little more than one; the finalisers spread their bits.
  let a = (0x811c9dc5 ^ seed) | 0;
  let b = (0x9747b28c ^ seed) | 0;
  const n = s.length;
  const even = n & ~1;
  const quad = n & ~3;
  let i = 0;
  // Two UTF-16 units per step (half the multiplies), two steps per iteration.
  for (; i < quad; i += 4) {
    const c = s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16);
    const d = s.charCodeAt(i + 2) | (s.charCodeAt(i + 3) << 16);
    a = Math.imul(a ^ c, P1);
    b = ((b << 5) - b + c) | 0;
    a = Math.imul(a ^ d, P1);
    b = ((b << 5) - b + d) | 0;
  }
  for (; i < even; i += 2) {
    const c = s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16);
    a = Math.imul(a ^ c, P1);
    b = ((b << 5) - b + c) | 0;
  }
  if (even !== n) {
    const c = s.charCodeAt(even);
    a = Math.imul(a ^ c, P1);
    b = ((b << 5) - b + c) | 0;
  }
  out.a = fmix(a ^ n);
  out.b = fmix(Math.imul(b ^ n, P2) ^ a);
  return out;
}

/** MurmurHash3 finaliser: spreads every input bit over the output. */
export function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Mixes `x` into an ordered accumulator `h`. */
export function mixOrdered(h: number, x: number): number {
  return fmix(Math.imul(h ^ x, 0x9e3779b1) + 0x7f4a7c15);
}

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_';
const CODES = Array.from(ALPHABET, (c) => c.charCodeAt(0));
const ch = (x: number): number => CODES[x & 63] ?? 48;
/** Character code → its 6-bit value in {@link ALPHABET}, -1 for other characters. */
const VALUES: Int8Array = (() => {
  const v = new Int8Array(128).fill(-1);
  CODES.forEach((c, i) => (v[c] = i));
  return v;
})();

/** The hash as 12 URL-safe characters (6 bits each, both lanes); cheaper than number-to-string conversions. */
export function hashHex(h: Hash2): string {
  const a = h.a >>> 0;
  const b = h.b >>> 0;
  return String.fromCharCode(ch(a), ch(a >>> 6), ch(a >>> 12), ch(a >>> 18), ch(a >>> 24), ch(a >>> 30), ch(b), ch(b >>> 6), ch(b >>> 12), ch(b >>> 18), ch(b >>> 24), ch(b >>> 30));
}

/**
 * `tag` followed by {@link hashHex} of lanes `a`, `b` (`j` + 12 characters), made as one flat string:
 * `tag + hashHex(h)` would be a rope (13+ characters) that every Map lookup of the summary first
 * has to flatten, and it needs no {@link Hash2} object.
 *
 * @param tag one ASCII character (`j`, `r`, `t`, `b`: how the hash was made).
 */
export function taggedHash(tag: string, a: number, b: number): string {
  a >>>= 0;
  b >>>= 0;
  return String.fromCharCode(tag.charCodeAt(0), ch(a), ch(a >>> 6), ch(a >>> 12), ch(a >>> 18), ch(a >>> 24), ch(a >>> 30), ch(b), ch(b >>> 6), ch(b >>> 12), ch(b >>> 18), ch(b >>> 24), ch(b >>> 30));
}

/**
 * The inverse of {@link taggedHash}: the tag's character code and both lanes (as signed 32-bit
 * integers) written into `out`, or false when `s` is not exactly what taggedHash makes (then `out`
 * is unspecified). Lets the queue summary keep two numbers per payload instead of a string.
 */
export function untagHash(s: string, out: { tag: number; a: number; b: number }): boolean {
  if (s.length !== 13) return false;
  let a = 0;
  let b = 0;
  for (let i = 0; i < 6; i++) {
    const ca = s.charCodeAt(1 + i);
    const cb = s.charCodeAt(7 + i);
    const va = ca < 128 ? (VALUES[ca] as number) : -1;
    const vb = cb < 128 ? (VALUES[cb] as number) : -1;
    if (va < 0 || vb < 0) return false;
    a |= va << (6 * i);
    b |= vb << (6 * i);
  }
  // The sixth character carries the top 2 bits only.
  if (((VALUES[s.charCodeAt(6)] as number) & ~3) !== 0 || ((VALUES[s.charCodeAt(12)] as number) & ~3) !== 0) return false;
  out.tag = s.charCodeAt(0);
  out.a = a;
  out.b = b;
  return true;
}
