/**
 * Characters of untrusted text (message bodies, header names and values, queue names, keys) that
 * must be shown as visible escapes instead of being allowed to act, in the CLI and in the app: C0
 * controls other than tab, line feed and carriage return (ESC starts ANSI/OSC terminal sequences
 * and renders as an empty box), DEL, C1 controls (U+009B is a one-character CSI on some
 * terminals), the soft hyphen, line/paragraph separators, and the invisible and bidirectional
 * formatting characters used to disguise text (U+202E RIGHT-TO-LEFT OVERRIDE shows "gnp.exe" as
 * "exe.png": Trojan Source, CVE-2021-42574).
 *
 * A regular-expression character class body (without the brackets), so each consumer adds what
 * its medium needs: the CLI also escapes tab, line breaks and lone surrogates (one terminal line);
 * the app lays out tabs and line breaks itself.
 */
export const HIDDEN_CHAR_CLASS = '\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u206f\\ufeff\\ufff9-\\ufffb';

/**
 * The visible escape of one UTF-16 code unit: `\x1b` up to U+00FF, else `\u202e` (lowercase hex).
 * Pure.
 */
export function escapeCodeUnit(ch: string): string {
  const code = ch.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}
