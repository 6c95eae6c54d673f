/**
 * Characters of untrusted text (message bodies, header names and values) that the page must show
 * as visible escapes instead of letting them act: C0 controls other than tab, line feed and
 * carriage return (ESC starts terminal sequences and renders as an empty box), DEL, C1 controls,
 * the soft hyphen, line/paragraph separators, and the invisible and bidirectional formatting
 * characters (U+202E RIGHT-TO-LEFT OVERRIDE displays "gnp.exe" as "exe.png": Trojan Source,
 * CVE-2021-42574). The same set as the CLI's `escapeForTerminal` (core/cli/format.ts) minus the
 * line breaks and tabs a text viewer lays out itself.
 */
const HIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/g;

/** One piece of a {@link revealHidden} split: plain text, or one hidden character with its escape. */
export type RevealedPart = { text: string } | { escape: string; char: string };

/**
 * The visible escape of one hidden character, as the CLI prints it: `\x1b` up to U+00FF, else
 * `\u202e` (lowercase hex).
 */
export function escapeOf(ch: string): string {
  const code = ch.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * Splits text into plain runs and hidden characters (see above), in order. Text without hidden
 * characters comes back as one part (or none when empty). Pure; O(length).
 */
export function revealHidden(text: string): RevealedPart[] {
  const parts: RevealedPart[] = [];
  let last = 0;
  for (const m of text.matchAll(HIDDEN)) {
    if (m.index > last) parts.push({ text: text.slice(last, m.index) });
    parts.push({ escape: escapeOf(m[0]), char: m[0] });
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
  return text.replace(HIDDEN, escapeOf);
}
