import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { tokenKind } from './idempotency';

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
