import { escapeCodeUnit, HIDDEN_CHAR_CLASS } from '../../../shared/body/hidden-chars';

/**
 * Hidden characters of untrusted text ({@link HIDDEN_CHAR_CLASS}: controls, bidi and invisible
 * formatting characters), which the page shows as visible escapes instead of letting them act.
 * Tab, line feed and carriage return are not in it: a text viewer lays them out itself.
 */
const HIDDEN = new RegExp(`[${HIDDEN_CHAR_CLASS}]`, 'g');

/** One piece of a {@link revealHidden} split: plain text, or one hidden character with its escape. */
export type RevealedPart = { text: string } | { escape: string; char: string };

/**
 * Splits text into plain runs and hidden characters (see above), in order. Text without hidden
 * characters comes back as one part (or none when empty). Pure; O(length).
 */
export function revealHidden(text: string): RevealedPart[] {
  const parts: RevealedPart[] = [];
  let last = 0;
  for (const m of text.matchAll(HIDDEN)) {
    if (m.index > last) parts.push({ text: text.slice(last, m.index) });
    parts.push({ escape: escapeCodeUnit(m[0]), char: m[0] });
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push({ text: text.slice(last) });
  return parts;
}

/** True when `text` holds at least one hidden character. */
export function hasHidden(text: string): boolean {
  HIDDEN.lastIndex = 0;
  const found = HIDDEN.test(text);
  HIDDEN.lastIndex = 0;
  return found;
}

/**
 * `text` with every hidden character (see above) replaced by its escape, as one string: for places
 * that take text only (`<option>`, titles, strings built into sentences).
 */
export function escapeHidden(text: string): string {
  return text.replace(HIDDEN, escapeCodeUnit);
}
