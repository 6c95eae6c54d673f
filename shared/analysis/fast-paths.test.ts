import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { chunkPieces, mayHoldDate, tokenKind } from './idempotency';
import { BYTE_HASH_MIN_LENGTH, hashHex, hashString, hashUnits, taggedHash, untagHash } from './hash';
import { sortSmall } from './sort';
import { hasOwnKeys } from './json-body';
import { EMAIL_CONTENT_NAMES, ENTITY_STATE_ROLES, LOOSE_STATE_ROLES, MUTABLE_ROLES, RECIPIENT_NAMES, nameInfo } from './field-names';

/**
 * The analysis replaces some regular expressions and per-object copies with hand-written scans
 * for speed (bench/analysis.ts). These properties pin the fast versions to the original definitions.
 */

const MS_2001 = 978307200000;
const MS_2100 = 4102444800000;

/** The original regular-expression definition of a key token's kind (README rules V2/V3). */
function tokenKindByRegex(tok: string): string {
  if (/^\d{13}$/.test(tok) && Number(tok) >= MS_2001 && Number(tok) < MS_2100) return 'epoch-ms';
  if (/^\d{10}$/.test(tok) && Number(tok) * 1000 >= MS_2001 && Number(tok) * 1000 < MS_2100) return 'epoch-s';
  if (/^[0-9A-HJKMNP-TV-Z]{26}$/.test(tok) && /[A-Z]/.test(tok) && /^[0-7]/.test(tok)) return 'ulid';
  if (/^[0-9a-f]{12,}$/i.test(tok) && /[0-9]/.test(tok) && /[a-f]/i.test(tok)) return 'hex';
  if (tok.length >= 16 && /^[A-Za-z0-9]+$/.test(tok) && /[0-9]/.test(tok) && /[a-z]/.test(tok) && /[A-Z]/.test(tok)) return 'random';
  return 'word';
}

const chars = (alphabet: string, min: number, max: number): fc.Arbitrary<string> => fc.array(fc.constantFrom(...Array.from(alphabet)), { minLength: min, maxLength: max }).map((a) => a.join(''));

describe('key token kinds: one character scan = the regular expressions', () => {
  it('known tokens', () => {
    const cases: [string, string][] = [
      ['1790000000000', 'epoch-ms'],
      ['0790000000000', 'word'],
      ['1790000000', 'epoch-s'],
      ['9999999999', 'word'],
      ['01ARZ3NDEKTSV4RRFFQ69G5FAV', 'ulid'],
      ['81ARZ3NDEKTSV4RRFFQ69G5FAV', 'word'],
      ['01ARZ3NDEKTSV4RRFFQ69G5FAU', 'word'],
      ['deadbeefcafe', 'word'],
      ['deadbeef1234', 'hex'],
      ['DEADBEEF1234', 'hex'],
      ['aB3dE5gH7jK9mN1pQ3', 'random'],
      ['charge', 'word'],
      ['1001', 'word'],
      ['ünïcödé12345678Ab', 'word'],
    ];
    for (const [tok, kind] of cases) {
      expect(tokenKind(tok)).toBe(kind);
      expect(tokenKindByRegex(tok)).toBe(kind);
    }
  });

  it('agree on arbitrary tokens (digits, hex, ULID alphabet, mixed case, non-ASCII)', () => {
    const tok = fc.oneof(
      chars('0123456789', 1, 14),
      fc.integer({ min: 900_000_000, max: 4_200_000_000 }).map(String),
      fc.integer({ min: 900_000_000_000, max: 4_200_000_000_000 }).map(String),
      chars('0123456789abcdefABCDEF', 10, 40),
      chars('0123456789ABCDEFGHJKMNPQRSTVWXYZILOU', 24, 28),
      chars('0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ', 1, 30),
      fc.string({ minLength: 1, maxLength: 30 }),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }),
    );
    fc.assert(
      fc.property(tok, (t) => {
        expect(tokenKind(t)).toBe(tokenKindByRegex(t));
      }),
      { numRuns: 5000 },
    );
  });
});

/** The original split of a key fragment's remainder into chunks and tokens (regular expressions). */
function chunkPiecesByRegex(rest: string): { kind: string; text: string }[] {
  const out: { kind: string; text: string }[] = [];
  const chunks = /[:/.|#@\s]/.test(rest) ? rest.split(/[:/.|#@\s]+/) : [rest];
  for (const chunk of chunks) {
    if (chunk.length === 0) continue;
    if (chunk.length === 21 && /^[A-Za-z0-9_-]{21}$/.test(chunk) && /[0-9]/.test(chunk) && /[a-z]/.test(chunk) && /[A-Z]/.test(chunk)) {
      out.push({ kind: 'nanoid', text: chunk });
      continue;
    }
    if (chunk.includes('-') || chunk.includes('_')) {
      for (const tok of chunk.split(/[-_]+/)) if (tok.length > 0) out.push({ kind: tokenKind(tok), text: tok });
    } else out.push({ kind: tokenKind(chunk), text: chunk });
  }
  return out;
}

describe('chunkPieces (one scan) = split by regular expressions', () => {
  const scan = (s: string): { kind: string; text: string }[] => {
    const out: { kind: string; text: string }[] = [];
    chunkPieces(s, out as never);
    return out;
  };

  it('agrees on known fragments', () => {
    for (const s of ['', ':charge', 'A-100000', '/shop/orders:', 'V1StGXR8_Z5jdHi6B-myT', 'a:V1StGXR8_Z5jdHi6B-myT/b', 'x__y--z', ' \t\u00a0\u2028\ufeff a\u3000b ', '::', '-_-', 'ord\u2009er', 'A-1001:charge:2026']) {
      expect(scan(s)).toEqual(chunkPiecesByRegex(s));
    }
  });

  it('agrees on arbitrary fragments (separators, white space of every kind, nanoid-length chunks)', () => {
    const sep = fc.constantFrom(':', '/', '.', '|', '#', '@', ' ', '\t', '\n', '\v', '\f', '\r', '\u00a0', '\u1680', '\u2000', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff', '\u200b', '\u0085', '-', '_');
    const word = fc.oneof(chars('0123456789abcdefABCDEF', 1, 30), chars('0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-', 19, 23), fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 8 }));
    fc.assert(
      fc.property(fc.array(fc.oneof(word, sep), { maxLength: 12 }), (parts) => {
        const s = parts.join('');
        expect(scan(s)).toEqual(chunkPiecesByRegex(s));
      }),
      { numRuns: 5000 },
    );
  });
});

describe('mayHoldDate: false only when no timestamp, date or month pattern can match', () => {
  // The key-piece patterns (idempotency.ts ISO_TIMESTAMP, ISO_DATE, ISO_MONTH), copied as the reference.
  const patterns = [
    /(?<![0-9])\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?/i,
    /(?<![0-9])(?:\d{4}-\d{2}-\d{2}|(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01]))(?![0-9])/,
    /(?<![0-9])\d{4}-(?:0[1-9]|1[0-2])(?![0-9-])/,
  ];
  it('known fragments', () => {
    expect(mayHoldDate('A-100123')).toBe(false);
    expect(mayHoldDate('f47ac10b-58cc-4372-a567-0e02b2c3d479')).toBe(false);
    expect(mayHoldDate('2026-11')).toBe(true);
    expect(mayHoldDate('x20261129y')).toBe(true);
    expect(mayHoldDate('order:2026-06-01T10:00:00Z')).toBe(true);
  });
  it('never false where a pattern matches (digits, dashes, separators, T, Z, W)', () => {
    fc.assert(
      fc.property(chars('0123456789--::TZW x.', 0, 40), (s) => {
        if (!mayHoldDate(s)) for (const re of patterns) expect(re.test(s)).toBe(false);
      }),
      { numRuns: 5000 },
    );
  });
});

describe('sortSmall = Array.prototype.sort (stable)', () => {
  it('same order, ties kept in input order', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ k: fc.integer({ min: 0, max: 5 }), i: fc.nat() }), { maxLength: 40 }), (xs) => {
        const cmp = (a: { k: number }, b: { k: number }): number => a.k - b.k;
        expect(sortSmall(xs.slice(), cmp)).toEqual(xs.slice().sort(cmp));
      }),
      { numRuns: 2000 },
    );
  });
});

/** The hash as first written (two UTF-16 units per step, one step per iteration). */
function hashStringReference(s: string, seed: number): { a: number; b: number } {
  const fmix = fmixRef;
  let a = (0x811c9dc5 ^ seed) >>> 0;
  let b = (0x9747b28c ^ seed) | 0;
  const n = s.length;
  const even = n & ~1;
  for (let i = 0; i < even; i += 2) {
    const c = s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16);
    a = Math.imul(a ^ c, 0x01000193);
    b = ((b << 5) - b + c) | 0;
  }
  if (even !== n) {
    const c = s.charCodeAt(even);
    a = Math.imul(a ^ c, 0x01000193);
    b = ((b << 5) - b + c) | 0;
  }
  return { a: fmix(a ^ n), b: fmix(Math.imul(b ^ n, 0x5bd1e995) ^ a) };
}

describe('hashString', () => {
  it('hashUnits (unrolled) = the original loop, for any string and seed', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ minLength: 200, maxLength: 900 })), fc.integer({ min: 0, max: 20 }), (s, seed) => {
        const h = hashUnits(s, seed, { a: 0, b: 0 });
        expect({ a: h.a, b: h.b }).toEqual(hashStringReference(s, seed));
      }),
      { numRuns: 3000 },
    );
  });

  it('short or non-ASCII strings: hashUnits; long ASCII strings: their bytes, four per step', () => {
    const ascii = fc.string({ unit: fc.integer({ min: 0, max: 127 }).map((c) => String.fromCharCode(c)), minLength: BYTE_HASH_MIN_LENGTH, maxLength: 3000 });
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: BYTE_HASH_MIN_LENGTH - 1 }), fc.string({ unit: 'binary', minLength: 40, maxLength: 300 }), ascii), fc.integer({ min: 0, max: 20 }), (s, seed) => {
        const h = hashString(s, seed, { a: 0, b: 0 });
        const isAscii = /^[\x00-\x7f]*$/.test(s);
        const expected = s.length >= BYTE_HASH_MIN_LENGTH && isAscii ? hashBytesReference(s, seed) : hashStringReference(s, seed);
        expect({ a: h.a, b: h.b }).toEqual(expected);
      }),
      { numRuns: 3000 },
    );
  });

  it('different strings get different hashes: one changed character, a longer string, lone surrogates', () => {
    const base = 'x'.repeat(BYTE_HASH_MIN_LENGTH + 5);
    const seen = new Map<string, string>();
    const add = (s: string): void => {
      const h = hashString(s, 1, { a: 0, b: 0 });
      const k = `${h.a}:${h.b}`;
      expect(seen.get(k) ?? s).toBe(s);
      seen.set(k, s);
    };
    for (let i = 0; i < base.length; i++) add(`${base.slice(0, i)}y${base.slice(i + 1)}`);
    for (let n = BYTE_HASH_MIN_LENGTH - 4; n < BYTE_HASH_MIN_LENGTH + 9; n++) add('x'.repeat(n));
    // The padding of the last word is not content: "…x" + "\0" differs from "…x".
    add(`${base}\u0000`);
    // Lone surrogates (which an encoder turns into the same U+FFFD) stay apart.
    add(`${base}\ud800`);
    add(`${base}\ud801`);
    add(`${base}\ufffd`);
    expect(seen.size).toBe(base.length + 13 + 4);
    // The same string always hashes the same, whichever strings came between.
    const h1 = hashString(base, 1, { a: 0, b: 0 });
    add('z'.repeat(100_000));
    expect(hashString(base, 1, { a: 0, b: 0 })).toEqual(h1);
  });
});

/** {@link hashString} of a long ASCII string as specified: its bytes four per little-endian word, zero-padded. */
function hashBytesReference(s: string, seed: number): { a: number; b: number } {
  const n = s.length;
  let a = (0x811c9dc5 ^ seed) | 0;
  let b = (0x9747b28c ^ seed) | 0;
  for (let i = 0; i < n; i += 4) {
    const byte = (j: number): number => (i + j < n ? s.charCodeAt(i + j) : 0);
    const w = byte(0) | (byte(1) << 8) | (byte(2) << 16) | (byte(3) << 24);
    a = Math.imul(a ^ w, 0x01000193);
    b = ((b << 5) - b + w) | 0;
  }
  return { a: fmixRef(a ^ n ^ 0x3c6ef372), b: fmixRef(Math.imul(b ^ n, 0x5bd1e995) ^ a) };
}

function fmixRef(h0: number): number {
  let h = h0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

describe('hasOwnKeys = Object.keys(o).length > 0', () => {
  it('for JSON objects, objects with inherited members and non-enumerable members', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue(), { maxKeys: 4 }), (o) => {
        expect(hasOwnKeys(o)).toBe(Object.keys(o).length > 0);
        const child = Object.create(o) as object;
        expect(hasOwnKeys(child)).toBe(false);
      }),
      { numRuns: 500 },
    );
    const hidden = {};
    Object.defineProperty(hidden, 'x', { value: 1, enumerable: false });
    expect(hasOwnKeys(hidden)).toBe(Object.keys(hidden).length > 0);
  });
});

describe('taggedHash = tag + hashHex, and untagHash inverts it', () => {
  it('round trip for any tag and lanes; other texts are refused', () => {
    fc.assert(
      fc.property(fc.constantFrom('j', 'r', 't', 'b'), fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }), fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }), (tag, a, b) => {
        const text = taggedHash(tag, a, b);
        expect(text).toBe(`${tag}${hashHex({ a, b })}`);
        const out = { tag: 0, a: 0, b: 0 };
        expect(untagHash(text, out)).toBe(true);
        expect(out).toEqual({ tag: tag.charCodeAt(0), a: a | 0, b: b | 0 });
        expect(taggedHash(String.fromCharCode(out.tag), out.a, out.b)).toBe(text);
      }),
    );
    const out = { tag: 0, a: 0, b: 0 };
    // Wrong length, a character outside the alphabet, a sixth character with more than 2 bits.
    for (const text of ['', 'jAAAA', 'j0000000000000', 'j!00000000000', 'j00000z000000', 'j00000000000z']) expect(untagHash(text, out)).toBe(false);
  });
});

describe('NameInfo role classes = the role sets they are precomputed from', () => {
  const known = ['id', 'orderId', 'status', 'shippingAddress', 'city', 'email', 'items', 'quantity', 'balance', 'updatedAt', 'name', 'amountCents', 'currency', 'version', 'type', 'createdAt', 'asOf', 'snapshot', 'newAddress', 'sku', 'note', 'messageId', ...RECIPIENT_NAMES, ...EMAIL_CONTENT_NAMES, 'To', 'reply_to', 'Template-Id', 'Subject'];
  const check = (name: string): void => {
    const info = nameInfo(name);
    expect(info.entityState).toBe(ENTITY_STATE_ROLES.has(info.role));
    expect(info.mutableRole).toBe(MUTABLE_ROLES.has(info.role));
    expect(info.looseState).toBe(LOOSE_STATE_ROLES.has(info.role));
    expect(info.email).toBe(EMAIL_CONTENT_NAMES.has(info.norm) ? 'content' : RECIPIENT_NAMES.has(info.norm) ? 'recipient' : null);
  };
  it('known names (every role, every email member name, other spellings)', () => {
    for (const n of known) check(n);
    expect(nameInfo('reply_to').email).toBe('recipient');
    expect(nameInfo('Template-Id').email).toBe('content');
    expect(nameInfo('status').entityState).toBe(true);
  });
  it('arbitrary names', () => {
    fc.assert(fc.property(fc.string({ maxLength: 24 }), (n) => check(n)), { numRuns: 500 });
  });
});
