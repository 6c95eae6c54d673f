import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { exactNumberText, mayBeRounded } from './exact-number';

describe('exactNumberText', () => {
  it('returns the literal JSON.parse rounded, for the named member', () => {
    const raw = '{"orderId":"A-1","idempotencyKey": 12345678901234567891,"n":1}';
    const v = (JSON.parse(raw) as { idempotencyKey: number }).idempotencyKey;
    expect(String(v)).toBe('12345678901234567000');
    expect(exactNumberText(v, raw, 'idempotencyKey')).toBe('12345678901234567891');
    expect(exactNumberText(v, raw, null)).toBe('12345678901234567891');
  });

  it('keeps the rounded form when two different literals give the same double (ambiguous), or none is found', () => {
    const raw = '{"a":12345678901234567890,"b":12345678901234567891}';
    const v = (JSON.parse(raw) as { a: number }).a;
    expect(exactNumberText(v, raw, null)).toBe(String(v));
    expect(exactNumberText(v, raw, 'a')).toBe('12345678901234567890');
    expect(exactNumberText(v, '{"x":1}', 'a')).toBe(String(v));
    expect(exactNumberText(v, undefined, 'a')).toBe(String(v));
  });

  it('ignores digits inside strings and is a no-op for safe numbers', () => {
    const raw = '{"note":"12345678901234567891","k":12345678901234567892}';
    const v = (JSON.parse(raw) as { k: number }).k;
    expect(exactNumberText(v, raw, null)).toBe('12345678901234567892');
    expect(exactNumberText(42, raw, 'k')).toBe('42');
    expect(mayBeRounded(2 ** 53 - 1)).toBe(false);
    expect(mayBeRounded(2 ** 53 + 2)).toBe(true);
  });

  it('never returns text that does not parse to the value (arbitrary documents)', () => {
    fc.assert(
      fc.property(fc.array(fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }), { minLength: 1, maxLength: 8 }), fc.string(), (ints, noise) => {
        const raw = `{"noise":${JSON.stringify(noise)},"xs":[${ints.map(String).join(',')}],"k":${String(ints[0])}}`;
        const doc = JSON.parse(raw) as { k: number };
        const t = exactNumberText(doc.k, raw, 'k');
        expect(Number(t)).toBe(doc.k);
        expect(t).toBe(String(ints[0])); // "k" occurs once, so its literal is always found
      }),
    );
  });
});
