/**
 * Parses processing durations exported from logs or an APM: CSV, JSON Lines, or log lines with a
 * regular expression. Pure: takes the text, returns durations in **ms** (input in `ms` or `s`).
 *
 * Untrusted input: bad lines are skipped and counted (with the first few reasons), never thrown;
 * only an unusable configuration (no duration column, a bad regex) throws.
 */

export type DurationFormat = 'csv' | 'jsonl' | 'log';
export type DurationUnit = 'ms' | 's';

/** Options for {@link parseDurations}. */
export interface ParseDurationsOptions {
  format: DurationFormat;
  /** Unit of the numbers in the file (default `ms`). */
  unit?: DurationUnit;
  /** CSV column (header name or 1-based index) / JSONL field (dotted path). Default: auto-detected. */
  field?: string;
  /** `log`: a regex with one capture group (or a named group `duration`) around the number. */
  regex?: string;
}

/** Result of {@link parseDurations}. */
export interface ParsedDurations {
  samplesMs: number[];
  /** Lines that held no usable duration (blank lines are not counted). */
  skipped: number;
  /** Up to 5 examples: 1-based line number and why. */
  problems: { line: number; reason: string }[];
  /** The column/field actually used (auto-detection result). */
  fieldUsed: string | null;
}

/** Longest line looked at, characters (longer lines are skipped: protects the regex engine). */
export const MAX_LINE_CHARS = 10_000;
/** Most durations read from one file. */
export const MAX_IMPORTED = 1_000_000;

/** Header / field names tried, in order, when none is given. */
const AUTO_FIELDS = ['duration_ms', 'durationMs', 'duration', 'elapsed_ms', 'elapsedMs', 'elapsed', 'processing_ms', 'processingMs', 'processing_time', 'latency_ms', 'latency', 'ms', 'time_ms', 'seconds', 'secs', 'time'];

/**
 * The longest processing time of one message accepted from a file: 7 days (ms). Anything longer is
 * a unit mix-up or garbage (e.g. `1e308`), and one such value would turn p99 and the recommendation
 * into nonsense; such lines are skipped and reported like unparsable ones.
 */
export const MAX_PLAUSIBLE_DURATION_MS = 7 * 24 * 3600 * 1000;

/** Thrown for an unusable configuration (caller wraps it into `INVALID_INPUT`). */
export class DurationImportError extends Error {}

/**
 * Parses durations.
 * @throws DurationImportError when the CSV has no usable column, the field is unknown, the regex
 *   is invalid or has no capture group, or the format is unknown.
 */
export function parseDurations(text: string, options: ParseDurationsOptions): ParsedDurations {
  const unit: unknown = options.unit ?? 'ms';
  if (unit !== 'ms' && unit !== 's') throw new DurationImportError(`Unknown unit "${String(unit)}": use ms or s.`);
  const scale = unit === 's' ? 1000 : 1;
  const lines = text.split(/\r?\n/);
  const out: ParsedDurations = { samplesMs: [], skipped: 0, problems: [], fieldUsed: null };
  const skip = (line: number, reason: string): void => {
    out.skipped++;
    if (out.problems.length < 5) out.problems.push({ line, reason });
  };
  const accept = (lineNo: number, raw: unknown): void => {
    const n = toNumber(raw);
    if (n === null) skip(lineNo, `not a number: ${preview(raw)}`);
    else if (n < 0) skip(lineNo, `negative duration ${n}`);
    else if (n * scale > MAX_PLAUSIBLE_DURATION_MS) skip(lineNo, `implausible duration ${n} ${unit === 's' ? 's' : 'ms'} (over 7 days for one message: check the unit)`);
    else if (out.samplesMs.length < MAX_IMPORTED) out.samplesMs.push(n * scale);
  };
  switch (options.format) {
    case 'csv':
      parseCsv(lines, options.field, out, skip, accept);
      break;
    case 'jsonl':
      parseJsonl(lines, options.field, out, skip, accept);
      break;
    case 'log':
      parseLog(lines, options.regex, out, skip, accept);
      break;
    default:
      throw new DurationImportError(`Unknown format "${String(options.format)}": use csv, jsonl or log.`);
  }
  return out;
}

function preview(v: unknown): string {
  const s = typeof v === 'string' ? v : ((JSON.stringify(v) as string | undefined) ?? String(v));
  return JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);
}

function toNumber(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v !== 'string') return null;
  const t = v.trim();
  if (t === '' || !/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t)) return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : null;
}

/** Splits one CSV line (RFC 4180 quotes; `,` or `;` or tab as chosen). */
export function splitCsvLine(line: string, sep: string): string[] {
  const cells: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line.charAt(i);
    if (quoted) {
      if (c === '"') {
        if (line[i + 1] === '"') {
          cur += '"';
          i++;
        } else quoted = false;
      } else cur += c;
    } else if (c === '"' && cur.trim() === '') {
      quoted = true;
      cur = '';
    } else if (c === sep) {
      cells.push(cur);
      cur = '';
    } else cur += c;
  }
  cells.push(cur);
  return cells.map((s) => s.trim());
}

type Skip = (line: number, reason: string) => void;
type Accept = (line: number, raw: unknown) => void;

function parseCsv(lines: string[], field: string | undefined, out: ParsedDurations, skip: Skip, accept: Accept): void {
  const firstIdx = lines.findIndex((l) => l.trim() !== '');
  if (firstIdx < 0) return;
  const first = lines[firstIdx] ?? '';
  const sep = [',', ';', '\t'].reduce((best, s) => (first.split(s).length > first.split(best).length ? s : best), ',');
  const head = splitCsvLine(first, sep);
  const hasHeader = head.some((h) => toNumber(h) === null);
  let col: number;
  if (field !== undefined && field !== '') {
    const asIndex = /^\d+$/.test(field) ? Number(field) - 1 : -1;
    col = asIndex >= 0 ? asIndex : head.findIndex((h) => h.toLowerCase() === field.toLowerCase());
    if (col < 0 || (asIndex >= 0 && asIndex >= head.length)) throw new DurationImportError(`The CSV has no column "${field.slice(0, 60)}" (columns: ${head.slice(0, 20).join(', ').slice(0, 300)}).`);
  } else if (!hasHeader) {
    if (head.length !== 1) throw new DurationImportError('The CSV has no header and more than one column: say which column holds the durations (--field N).');
    col = 0;
  } else {
    const lower = head.map((h) => h.toLowerCase());
    col = -1;
    for (const f of AUTO_FIELDS) {
      col = lower.indexOf(f.toLowerCase());
      if (col >= 0) break;
    }
    if (col < 0) throw new DurationImportError(`No duration column found among: ${head.slice(0, 20).join(', ').slice(0, 300)}. Name it with --field.`);
  }
  out.fieldUsed = hasHeader ? (head[col] ?? null) : `column ${col + 1}`;
  for (let i = hasHeader ? firstIdx + 1 : firstIdx; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.trim() === '') continue;
    if (line.length > MAX_LINE_CHARS) {
      skip(i + 1, `line longer than ${MAX_LINE_CHARS} characters`);
      continue;
    }
    const cells = splitCsvLine(line, sep);
    if (col >= cells.length) skip(i + 1, 'missing the duration column');
    else accept(i + 1, cells[col]);
  }
}

function getPath(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    if (!Object.prototype.hasOwnProperty.call(cur, part)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function parseJsonl(lines: string[], field: string | undefined, out: ParsedDurations, skip: Skip, accept: Accept): void {
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').trim();
    if (line === '') continue;
    if (line.length > MAX_LINE_CHARS) {
      skip(i + 1, `line longer than ${MAX_LINE_CHARS} characters`);
      continue;
    }
    let obj: unknown;
    try {
      obj = JSON.parse(line);
    } catch {
      skip(i + 1, 'not valid JSON');
      continue;
    }
    if (typeof obj === 'number') {
      out.fieldUsed ??= '(bare number)';
      accept(i + 1, obj);
      continue;
    }
    let f = field;
    if (f === undefined || f === '') {
      f = AUTO_FIELDS.find((k) => getPath(obj, k) !== undefined);
      if (f === undefined) {
        skip(i + 1, 'no duration field (name it with --field)');
        continue;
      }
    }
    out.fieldUsed ??= f;
    const v = getPath(obj, f);
    if (v === undefined) skip(i + 1, `no field "${f.slice(0, 60)}"`);
    else accept(i + 1, v);
  }
}

function parseLog(lines: string[], regex: string | undefined, out: ParsedDurations, skip: Skip, accept: Accept): void {
  if (regex === undefined || regex === '') throw new DurationImportError('Log import needs a regex with one capture group around the duration, e.g. "took (\\d+(?:\\.\\d+)?)ms".');
  let re: RegExp;
  try {
    re = new RegExp(regex);
  } catch (e) {
    throw new DurationImportError(`Invalid regex: ${e instanceof Error ? e.message : String(e)}`);
  }
  // Count capture groups by matching the empty alternative: `new RegExp(src + '|')` always matches "".
  const groups = (new RegExp(`${regex}|`).exec('')?.length ?? 1) - 1;
  if (groups < 1) throw new DurationImportError('The regex needs a capture group around the duration, e.g. "took (\\d+)ms".');
  out.fieldUsed = regex;
  let matched = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.trim() === '') continue;
    if (line.length > MAX_LINE_CHARS) {
      skip(i + 1, `line longer than ${MAX_LINE_CHARS} characters`);
      continue;
    }
    const m = re.exec(line);
    if (!m) continue; // other log lines are normal, not problems
    matched++;
    const v = m.groups?.duration ?? m[1];
    if (v === undefined) skip(i + 1, 'the capture group did not take part in the match');
    else accept(i + 1, v);
  }
  if (matched === 0) out.problems.push({ line: 0, reason: 'the regex matched no line' });
}
