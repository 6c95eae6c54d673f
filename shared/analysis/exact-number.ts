/**
 * Exact text of JSON numbers that `JSON.parse` rounded.
 *
 * `JSON.parse` turns every number into an IEEE-754 double, so integers beyond 2^53 (64-bit
 * snowflake ids, 19–20 digit order numbers) come back rounded: `12345678901234567890` and
 * `12345678901234567891` both become `12345678901234567000`. Used as idempotency keys, two
 * different keys would look like one (a false duplicate group, and `--dedupe-by-key` would leave a
 * legitimate message behind). The analysis asks this module for the literal as written in the body.
 */

/** A JSON number literal (RFC 8259 §6), anchored nowhere. */
const NUMBER_LITERAL = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** True when `v` may not be the literal it was parsed from (an integer beyond 2^53, or a fraction with 17+ significant digits). */
export function mayBeRounded(v: number): boolean {
  if (!Number.isFinite(v)) return false;
  if (Number.isInteger(v)) return !Number.isSafeInteger(v);
  return String(v).replace(/^-?0?\.?|e.*$|\./g, '').length >= 16;
}

/**
 * The literal text of the number `v` in `raw` (a JSON document), for a member named `name` when
 * given (`"name": <literal>`), else anywhere in the document. Returns the literal only when exactly
 * one distinct literal in the candidates parses to `v`; otherwise `String(v)` (the rounded form),
 * so it never returns text that does not parse to `v`. Cheap when `v` cannot have been rounded
 * ({@link mayBeRounded} false): returns `String(v)` without scanning. Scans at most `maxScan`
 * characters of `raw` (default 1 MiB). Never throws.
 */
export function exactNumberText(v: number, raw: string | undefined, name: string | null, maxScan = 1 << 20): string {
  const plain = String(v);
  if (raw === undefined || !mayBeRounded(v)) return plain;
  const text = raw.length > maxScan ? raw.slice(0, maxScan) : raw;
  const state: { found: string | null } = { found: null };
  const consider = (at: number): boolean => {
    NUMBER_LITERAL.lastIndex = at;
    const m = NUMBER_LITERAL.exec(text);
    if (m === null || Number(m[0]) !== v) return true;
    if (state.found === null) state.found = m[0];
    else if (state.found !== m[0]) return false; // two different literals give the same double: ambiguous
    return true;
  };
  if (name !== null) {
    const quoted = JSON.stringify(name);
    for (let i = text.indexOf(quoted); i >= 0; i = text.indexOf(quoted, i + quoted.length)) {
      let j = i + quoted.length;
      while (j < text.length && isSpace(text.charCodeAt(j))) j++;
      if (text.charCodeAt(j) !== 58 /* : */) continue;
      j++;
      while (j < text.length && isSpace(text.charCodeAt(j))) j++;
      if (!consider(j)) return plain;
    }
  } else {
    // Every number token outside strings.
    let inString = false;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (inString) {
        if (c === 92 /* \ */) i++;
        else if (c === 34 /* " */) inString = false;
        continue;
      }
      if (c === 34) {
        inString = true;
        continue;
      }
      if (c === 45 /* - */ || (c >= 48 && c <= 57)) {
        const prev = i > 0 ? text.charCodeAt(i - 1) : 0;
        if ((prev >= 48 && prev <= 57) || prev === 46 || prev === 101 || prev === 69 || prev === 43 || prev === 45) continue;
        if (!consider(i)) return plain;
      }
    }
  }
  return state.found ?? plain;
}

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13;
}
