import { z } from 'zod';
import type { KeyVerdictKind } from '../analysis/idempotency';
import { QueuescopeError, type HeaderValue, type QueueMessage } from '../domain';
import { FAILURE_CLASSES, type FailureClass, type FailureInfo } from './failure-class';

/**
 * Redrive selection filters: which dead-lettered messages a redrive moves. Every present field
 * must match (AND); list fields match when any of their values does (OR).
 *
 * Text form (CLI `--filter`, audit log), terms separated by spaces, values by commas, values with
 * spaces in double quotes:
 *
 * | term | matches |
 * |---|---|
 * | `class:non-retryable,transient,unknown` | the failure class ({@link FailureInfo.class}) |
 * | `label:"HTTP 503",timeout` | the failure label, case-insensitive |
 * | `reason:TEXT` | TEXT appears in the last error text, case-insensitive |
 * | `group:KEY` | the failure group key (as the app groups messages) |
 * | `key:business-derived,missing` | the idempotency-key verdict (`business-derived`, `opaque-random`, `time-derived`, `period-key`, `missing`) |
 * | `text:TEXT` | TEXT appears in the body (text bodies) or a header name/value, case-insensitive |
 * | `age>1h`, `age>=30m`, `age<2d`, `age<=90s` | time since the message entered the DLQ ({@link deadLetteredAt}); units `ms`, `s`, `m`, `h`, `d` |
 */
export interface RedriveFilter {
  classes?: FailureClass[];
  labels?: string[];
  /** Each must appear (AND). */
  reasonContains?: string[];
  groupKeys?: string[];
  keyVerdicts?: KeyVerdictKind[];
  /** Each must appear (AND). */
  text?: string[];
  /** Only messages at least this old, ms. */
  minAgeMs?: number;
  /** Only messages at most this old, ms. */
  maxAgeMs?: number;
}

const KEY_VERDICTS: readonly KeyVerdictKind[] = ['business-derived', 'opaque-random', 'time-derived', 'period-key', 'missing'];

/** zod schema of {@link RedriveFilter} (API input). */
export const redriveFilterSchema = z.strictObject({
  classes: z.array(z.enum(['non-retryable', 'transient', 'unknown'])).max(3).optional(),
  labels: z.array(z.string().min(1).max(200)).max(100).optional(),
  reasonContains: z.array(z.string().min(1).max(500)).max(20).optional(),
  groupKeys: z.array(z.string().min(1).max(1200)).max(500).optional(),
  keyVerdicts: z.array(z.enum(['business-derived', 'opaque-random', 'time-derived', 'period-key', 'missing'])).max(5).optional(),
  text: z.array(z.string().min(1).max(500)).max(20).optional(),
  minAgeMs: z.number().int().nonnegative().optional(),
  maxAgeMs: z.number().int().nonnegative().optional(),
});

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a duration such as `90s`, `5m`, `1.5h`, `2d`, `250ms` to ms.
 * @throws QueuescopeError `INVALID_INPUT` naming the text.
 */
export function parseDuration(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/i.exec(text);
  if (m?.[1] === undefined || m[2] === undefined) throw new QueuescopeError('INVALID_INPUT', `"${text.slice(0, 40)}" is not a duration: use a number with ms, s, m, h or d (e.g. 30m).`);
  const ms = Math.round(Number(m[1]) * (UNIT_MS[m[2].toLowerCase()] ?? 1));
  if (!Number.isSafeInteger(ms)) throw new QueuescopeError('INVALID_INPUT', `Duration "${text.slice(0, 40)}" is too large.`);
  return ms;
}

/** Formats ms as the largest exact unit (`3600000` → `1h`, `1500` → `1500ms`). */
export function formatDuration(ms: number): string {
  for (const u of ['d', 'h', 'm', 's'] as const) {
    const f = UNIT_MS[u] ?? 1;
    if (ms >= f && ms % f === 0) return `${ms / f}${u}`;
  }
  return `${ms}ms`;
}

/** Splits on spaces outside double quotes; `\"` inside quotes is a quote. */
function tokenize(text: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inQuotes = false;
  let has = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charAt(i);
    if (inQuotes) {
      if (ch === '\\' && text.charAt(i + 1) === '"') {
        cur += '"';
        i++;
      } else if (ch === '"') inQuotes = false;
      else cur += ch;
    } else if (ch === '"') {
      inQuotes = true;
      has = true;
    } else if (/\s/.test(ch)) {
      if (has || cur !== '') out.push(cur);
      cur = '';
      has = false;
    } else {
      cur += ch;
      has = true;
    }
  }
  if (inQuotes) throw new QueuescopeError('INVALID_INPUT', `Filter "${text.slice(0, 80)}" has an unclosed double quote.`);
  if (has || cur !== '') out.push(cur);
  return out;
}

/** Splits a term value on commas outside quotes (the tokenizer already removed the quotes, so commas inside quoted values are protected by a marker). */
function values(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.split(QUOTED_COMMA).join(','))
    .filter((s) => s !== '');
}

const QUOTED_COMMA = '\u0000';

/**
 * Parses filter expressions (each may hold several terms; all are ANDed) into one {@link RedriveFilter}.
 * @throws QueuescopeError `INVALID_INPUT` naming the bad term and listing the valid ones.
 */
export function parseFilter(exprs: readonly string[]): RedriveFilter {
  const f: RedriveFilter = {};
  for (const expr of exprs) {
    // Protect commas inside quotes before tokenizing removes the quotes.
    const protectedExpr = expr.replace(/"((?:[^"\\]|\\.)*)"/g, (_m, inner: string) => `"${inner.split(',').join(QUOTED_COMMA)}"`);
    for (const term of tokenize(protectedExpr)) {
      const age = /^age\s*(<=|>=|<|>)\s*(.+)$/i.exec(term);
      if (age?.[1] !== undefined && age[2] !== undefined) {
        const ms = parseDuration(age[2]);
        if (age[1].startsWith('>')) f.minAgeMs = Math.max(f.minAgeMs ?? 0, ms);
        else f.maxAgeMs = Math.min(f.maxAgeMs ?? Number.MAX_SAFE_INTEGER, ms);
        continue;
      }
      const m = /^([a-z]+)[:=](.*)$/is.exec(term);
      if (m?.[1] === undefined || m[2] === undefined) throw badTerm(term);
      const name = m[1].toLowerCase();
      const vals = values(m[2]);
      if (vals.length === 0) throw new QueuescopeError('INVALID_INPUT', `Filter term "${cut(term)}" has no value.`);
      switch (name) {
        case 'class': {
          for (const v of vals) {
            const c = v.toLowerCase() as FailureClass;
            if (!FAILURE_CLASSES.includes(c)) throw new QueuescopeError('INVALID_INPUT', `Unknown failure class "${cut(v)}" in filter; use ${FAILURE_CLASSES.join(', ')}.`);
            f.classes = addUnique(f.classes, c);
          }
          break;
        }
        case 'key': {
          for (const v of vals) {
            const k = v.toLowerCase() as KeyVerdictKind;
            if (!KEY_VERDICTS.includes(k)) throw new QueuescopeError('INVALID_INPUT', `Unknown idempotency-key verdict "${cut(v)}" in filter; use ${KEY_VERDICTS.join(', ')}.`);
            f.keyVerdicts = addUnique(f.keyVerdicts, k);
          }
          break;
        }
        case 'label':
          for (const v of vals) f.labels = addUnique(f.labels, v);
          break;
        case 'group':
          f.groupKeys = addUnique(f.groupKeys, m[2].split(QUOTED_COMMA).join(','));
          break;
        case 'reason':
          f.reasonContains = addUnique(f.reasonContains, m[2].split(QUOTED_COMMA).join(','));
          break;
        case 'text':
          f.text = addUnique(f.text, m[2].split(QUOTED_COMMA).join(','));
          break;
        default:
          throw badTerm(term);
      }
    }
  }
  if (f.minAgeMs !== undefined && f.maxAgeMs !== undefined && f.minAgeMs > f.maxAgeMs) {
    throw new QueuescopeError('INVALID_INPUT', `The age filter selects nothing: older than ${formatDuration(f.minAgeMs)} and younger than ${formatDuration(f.maxAgeMs)}.`);
  }
  return f;
}

function addUnique<T>(list: T[] | undefined, v: T): T[] {
  const l = list ?? [];
  if (!l.includes(v)) l.push(v);
  return l;
}

function cut(s: string): string {
  return s.length > 60 ? `${s.slice(0, 60)}…` : s;
}

function badTerm(term: string): QueuescopeError {
  return new QueuescopeError(
    'INVALID_INPUT',
    `Unknown filter term "${cut(term.split(QUOTED_COMMA).join(','))}"; use class:…, label:…, reason:…, group:…, key:…, text:… or age>/age< with a duration (e.g. age>1h).`,
  );
}

function quote(v: string): string {
  return /[\s",]/.test(v) || v === '' ? `"${v.replace(/"/g, '\\"')}"` : v;
}

/** The canonical text form of a filter (parseable by {@link parseFilter}); `all` for an empty filter. */
export function formatFilter(f: RedriveFilter): string {
  const terms: string[] = [];
  if (f.classes !== undefined && f.classes.length > 0) terms.push(`class:${f.classes.join(',')}`);
  if (f.labels !== undefined && f.labels.length > 0) terms.push(`label:${f.labels.map(quote).join(',')}`);
  for (const r of f.reasonContains ?? []) terms.push(`reason:${quote(r)}`);
  for (const g of f.groupKeys ?? []) terms.push(`group:${quote(g)}`);
  if (f.keyVerdicts !== undefined && f.keyVerdicts.length > 0) terms.push(`key:${f.keyVerdicts.join(',')}`);
  for (const t of f.text ?? []) terms.push(`text:${quote(t)}`);
  if (f.minAgeMs !== undefined) terms.push(`age>=${formatDuration(f.minAgeMs)}`);
  if (f.maxAgeMs !== undefined) terms.push(`age<=${formatDuration(f.maxAgeMs)}`);
  return terms.length === 0 ? 'all' : terms.join(' ');
}

/** True when the filter has no terms (selects every message). */
export function isEmptyFilter(f: RedriveFilter | null | undefined): boolean {
  return f === null || f === undefined || formatFilter(f) === 'all';
}

/**
 * When the message entered the DLQ, ms since epoch: BullMQ `finishedOn`, the newest RabbitMQ
 * `x-death` time, else when it was enqueued (SQS SentTimestamp, which standard DLQs keep from the
 * source; stream id time). Null when unknown.
 */
export function deadLetteredAt(message: QueueMessage): number | null {
  const m = message.meta;
  if (typeof m.finishedOn === 'number') return m.finishedOn;
  const t = m.xDeath?.[0]?.time;
  if (typeof t === 'number') return t;
  return typeof m.enqueuedAt === 'number' ? m.enqueuedAt : null;
}

/** What {@link matchFilter} needs besides the message (computed once per message by the engine). */
export interface FilterFacts {
  failure: FailureInfo;
  /** The idempotency-key verdict, null when not computed (then `key:` terms do not match). */
  keyVerdict: KeyVerdictKind | null;
  /** Now, ms since epoch. */
  now: number;
}

/**
 * Checks a message against a filter.
 * @returns null when it matches, else the first term it failed, in the text form (e.g. `class:transient`).
 */
export function matchFilter(message: QueueMessage, f: RedriveFilter, facts: FilterFacts): string | null {
  if (f.classes !== undefined && f.classes.length > 0 && !f.classes.includes(facts.failure.class)) return `class:${f.classes.join(',')}`;
  if (f.labels !== undefined && f.labels.length > 0 && !f.labels.some((l) => l.toLowerCase() === facts.failure.label.toLowerCase())) return `label:${f.labels.map(quote).join(',')}`;
  for (const r of f.reasonContains ?? []) {
    if (!(facts.failure.reason ?? '').toLowerCase().includes(r.toLowerCase())) return `reason:${quote(r)}`;
  }
  if (f.groupKeys !== undefined && f.groupKeys.length > 0 && !f.groupKeys.includes(facts.failure.groupKey)) return 'group';
  if (f.keyVerdicts !== undefined && f.keyVerdicts.length > 0 && (facts.keyVerdict === null || !f.keyVerdicts.includes(facts.keyVerdict))) return `key:${f.keyVerdicts.join(',')}`;
  for (const t of f.text ?? []) {
    if (!textMatches(message, t.toLowerCase())) return `text:${quote(t)}`;
  }
  if (f.minAgeMs !== undefined || f.maxAgeMs !== undefined) {
    const at = deadLetteredAt(message);
    if (at === null) return 'age (unknown)';
    const age = facts.now - at;
    if (f.minAgeMs !== undefined && age < f.minAgeMs) return `age>=${formatDuration(f.minAgeMs)}`;
    if (f.maxAgeMs !== undefined && age > f.maxAgeMs) return `age<=${formatDuration(f.maxAgeMs)}`;
  }
  return null;
}

function textMatches(message: QueueMessage, needle: string): boolean {
  if (message.body.encoding === 'utf8' && message.body.data.toLowerCase().includes(needle)) return true;
  for (const [k, v] of Object.entries(message.headers)) {
    if (k.toLowerCase().includes(needle) || headerString(v).toLowerCase().includes(needle)) return true;
  }
  return false;
}

function headerString(v: HeaderValue): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}
