import type { HeaderValue, QueueMessage } from '../domain';

/**
 * Classifies why a dead-lettered message failed, from what the broker and the application left on
 * it, so a redrive can leave behind messages that will fail again.
 *
 * - `non-retryable`: retrying cannot help — HTTP 400, 401, 403, 404, 405, 410, 413, 415, 422, 501,
 *   validation errors, "not found" / "does not exist", missing or required fields, permission
 *   denied, BullMQ `UnrecoverableError`. These belong in the DLQ at once, and are excluded from
 *   redrive by default.
 * - `transient`: the failure is expected to pass — timeouts, HTTP 408/425/429 and 5xx, connection
 *   resets/refusals/loss (`ECONNRESET`, `ECONNREFUSED`, `ETIMEDOUT`, `EPIPE`, `EAI_AGAIN`, "socket
 *   hang up"), throttling, deadlocks, "service unavailable", BullMQ stalled jobs; a RabbitMQ
 *   `x-death` reason `expired` (TTL) or `maxlen` (queue overflow).
 * - `unknown`: no error text, or text that matches neither list.
 *
 * Where the text comes from, first found wins: BullMQ `failedReason` (meta; prefixed with the error
 * class its newest `stacktrace` entry names, e.g. `UnrecoverableError: …`); an error header /
 * SQS message attribute (`x-exception-message`, `x-error`, `x-last-error`, `x-error-message`,
 * `x-exception`, `x-failure-reason`, `error`, `error-message`, `last-error`, `lastError`,
 * `errorMessage`, case-insensitive); the RabbitMQ `x-death` reason of the newest death (or
 * `x-first-death-reason`); for SQS without an error attribute, the receive count.
 *
 * HTTP status codes are read when written as `HTTP 422`, `HTTP/1.1 404`, `status 503`,
 * `status code 404`, `statusCode: 500`, a leading `503 …`, or `404 Not Found`-style phrases; a
 * status decides the class. Otherwise the earliest matching phrase in the text decides.
 * Pure and total: never throws.
 */

/** The three failure classes. */
export type FailureClass = 'non-retryable' | 'transient' | 'unknown';

export const FAILURE_CLASSES: readonly FailureClass[] = ['non-retryable', 'transient', 'unknown'];

/** Longest reason text kept, characters. */
export const MAX_REASON_LENGTH = 500;

/** The classification of one message's last failure. */
export interface FailureInfo {
  class: FailureClass;
  /**
   * Short label of what decided the class: `HTTP 422`, `timeout`, `connection reset`, `validation`,
   * `not found`, `x-death expired`, `no error recorded`, `other error`…
   */
  label: string;
  /** The last error text as recorded (first line, ≤ {@link MAX_REASON_LENGTH} chars), null when none. */
  reason: string | null;
  /** Where the text came from: `failedReason`, `header x-last-error`, `x-death`, `receive count`, or null. */
  source: string | null;
  /**
   * Key for grouping messages that failed the same way: class + label + the reason with numbers,
   * UUIDs and hex ids replaced by `#` (so "attempt 2" and "attempt 3" group together).
   */
  groupKey: string;
  /** Attempts made (BullMQ attemptsMade, an attempts header, x-death counts, SQS receive count), null when unknown. */
  attempts: number | null;
  /** Attempts allowed, when known (BullMQ `attempts`). */
  attemptsLimit: number | null;
  /** True when a non-retryable failure was retried until all attempts were used: those retries were wasted. */
  wastedRetries: boolean;
}

/** Header / attribute names (lowercase) that carry the application's last error. */
export const ERROR_HEADER_NAMES: readonly string[] = [
  'x-exception-message',
  'x-error',
  'x-last-error',
  'x-error-message',
  'x-exception',
  'x-failure-reason',
  'x-exception-stacktrace',
  'error',
  'error-message',
  'error_message',
  'errormessage',
  'last-error',
  'last_error',
  'lasterror',
];

/** Header names (lowercase) that count attempts. */
const ATTEMPT_HEADER_NAMES: readonly string[] = ['x-attempts', 'x-attempt', 'attempts', 'attempt', 'x-retry-count', 'x-retries', 'retry-count', 'retries'];

const NON_RETRYABLE_STATUS = new Set([400, 401, 403, 404, 405, 410, 413, 415, 422, 501]);
const TRANSIENT_STATUS = new Set([408, 425, 429]);

const STATUS_PATTERNS: readonly RegExp[] = [
  /\bHTTP(?:\/\d(?:\.\d)?)?[\s:]*([1-5]\d\d)\b/i,
  /\bstatus(?:[\s_-]?code)?["']?\s*[:=]?\s*([1-5]\d\d)\b/i,
  /^\s*(?:Error:\s*)?([1-5]\d\d)\b(?![\d.,:/-])/,
  /\b([1-5]\d\d)\s+(?:Bad Request|Unauthori[sz]ed|Forbidden|Not Found|Method Not Allowed|Request Timeout|Conflict|Gone|Payload Too Large|Unsupported Media Type|Unprocessable|Too Many Requests|Internal Server Error|Not Implemented|Bad Gateway|Service Unavailable|Gateway Time-?out)\b/i,
];

interface PhraseRule {
  re: RegExp;
  class: Exclude<FailureClass, 'unknown'>;
  label: string;
}

/** Phrase rules; the earliest match in the text wins (ties: the first rule listed). */
const PHRASES: readonly PhraseRule[] = [
  { re: /\bUnrecoverableError\b/, class: 'non-retryable', label: 'unrecoverable' },
  { re: /\b(?:ETIMEDOUT|ESOCKETTIMEDOUT|timed?\s?out|timeout)\b/i, class: 'transient', label: 'timeout' },
  { re: /\b(?:ECONNRESET|EPIPE|socket hang up|connection (?:was )?(?:reset|lost|closed|aborted|dropped)|(?:lost|closed) connection|broken pipe)\b/i, class: 'transient', label: 'connection lost' },
  { re: /\b(?:ECONNREFUSED|connection refused)\b/i, class: 'transient', label: 'connection refused' },
  { re: /\b(?:EAI_AGAIN|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|network (?:error|unreachable))\b/i, class: 'transient', label: 'network' },
  { re: /\b(?:too many requests|rate[\s-]?limit(?:ed)?|throttl(?:ed|ing)|slow down)\b/i, class: 'transient', label: 'throttled' },
  { re: /\b(?:service unavailable|temporarily unavailable|bad gateway|gateway time-?out|internal server error|server error|unavailable)\b/i, class: 'transient', label: 'server error' },
  { re: /\b(?:deadlock|lock wait|try again|retry later|circuit (?:breaker )?open|stalled|missing lock)\b/i, class: 'transient', label: 'temporary' },
  { re: /\b(?:validation\w*|\w*ValidationError|validat(?:e|ing) failed|invalid|malformed|schema|unprocessable|bad request|must be|must not|cannot be (?:empty|null|negative)|out of range|parse error|unexpected token|syntax ?error)\b/i, class: 'non-retryable', label: 'validation' },
  { re: /\b(?:missing|required|is required|no value for)\b/i, class: 'non-retryable', label: 'missing field' },
  { re: /\b(?:not found|does not exist|doesn't exist|no such|unknown (?:customer|order|account|user|id|entity))\b/i, class: 'non-retryable', label: 'not found' },
  { re: /\b(?:unauthori[sz]ed|forbidden|permission denied|access denied|not allowed|authentication failed|invalid (?:token|credentials))\b/i, class: 'non-retryable', label: 'not permitted' },
  { re: /\b(?:duplicate key|already exists|conflict)\b/i, class: 'non-retryable', label: 'conflict' },
];

/**
 * Classifies one error text (see the module description). Total: empty text is `unknown`.
 * @returns the class, the label of what decided it, and the HTTP status when one was read.
 */
export function classifyErrorText(text: string): { class: FailureClass; label: string; status: number | null } {
  if (typeof text !== 'string' || text.trim() === '') return { class: 'unknown', label: 'no error recorded', status: null };
  const sample = text.length > 4000 ? text.slice(0, 4000) : text;
  const status = httpStatus(sample);
  if (status !== null) {
    if (NON_RETRYABLE_STATUS.has(status)) return { class: 'non-retryable', label: `HTTP ${status}`, status };
    if (TRANSIENT_STATUS.has(status) || (status >= 500 && status <= 599)) return { class: 'transient', label: `HTTP ${status}`, status };
  }
  let best: { index: number; rule: PhraseRule } | null = null;
  for (const rule of PHRASES) {
    const m = rule.re.exec(sample);
    if (m !== null && (best === null || m.index < best.index)) best = { index: m.index, rule };
  }
  if (best !== null) return { class: best.rule.class, label: best.rule.label, status };
  return { class: 'unknown', label: status !== null ? `HTTP ${status}` : 'other error', status };
}

/** The HTTP status code written in `text`, or null. */
export function httpStatus(text: string): number | null {
  for (const re of STATUS_PATTERNS) {
    const m = re.exec(text);
    if (m?.[1] !== undefined) return Number(m[1]);
  }
  return null;
}

/** Classifies a dead-lettered message's last failure (see the module description). Never throws. */
export function classifyFailure(message: QueueMessage): FailureInfo {
  try {
    return classifyUnsafe(message);
  } catch {
    return { class: 'unknown', label: 'other error', reason: null, source: null, groupKey: 'unknown|other error|', attempts: null, attemptsLimit: null, wastedRetries: false };
  }
}

function classifyUnsafe(message: QueueMessage): FailureInfo {
  const meta = message.meta;
  const found = errorText(message);
  const attempts = attemptsOf(message);
  const attemptsLimit = typeof meta.attemptsLimit === 'number' && meta.attemptsLimit > 0 ? meta.attemptsLimit : null;
  let cls: FailureClass;
  let label: string;
  let reason: string | null = null;
  let source: string | null = null;
  if (found !== null) {
    reason = firstLine(found.text);
    source = found.source;
    const c = classifyErrorText(found.text);
    cls = c.class;
    label = c.label;
  } else {
    const death = deathReason(message);
    if (death !== null) {
      source = 'x-death';
      reason = death.queue === null ? `dead-lettered: ${death.reason}` : `dead-lettered from ${death.queue}: ${death.reason}`;
      label = `x-death ${death.reason}`;
      cls = death.reason === 'expired' || death.reason === 'maxlen' ? 'transient' : 'unknown';
    } else if (typeof meta.receiveCount === 'number' && meta.receiveCount > 0 && message.properties.ApproximateReceiveCount !== undefined) {
      source = 'receive count';
      reason = `received ${meta.receiveCount} time${meta.receiveCount === 1 ? '' : 's'} without being deleted (no error attribute)`;
      label = 'no error recorded';
      cls = 'unknown';
    } else {
      label = 'no error recorded';
      cls = 'unknown';
    }
  }
  const used = attempts !== null && attempts > 1 && (attemptsLimit === null || attempts >= attemptsLimit);
  return {
    class: cls,
    label,
    reason,
    source,
    groupKey: `${cls}|${label}|${reason === null ? '' : normalizeReason(reason)}`,
    attempts,
    attemptsLimit,
    wastedRetries: cls === 'non-retryable' && used,
  };
}

/**
 * The error class named by the newest stack trace (BullMQ appends one per failed attempt, so the
 * last entry is the failure that moved the job to "failed"): `UnrecoverableError` from
 * `UnrecoverableError: card declined\n    at …`; null without one or when its first line names no
 * `…Error` / `…Exception` class (a plain `Error` adds nothing and is left out).
 */
function errorName(stacktrace: unknown): string | null {
  if (!Array.isArray(stacktrace) || stacktrace.length === 0) return null;
  const last: unknown = stacktrace[stacktrace.length - 1];
  if (typeof last !== 'string') return null;
  const m = /^\s*([A-Za-z_$][\w$]*(?:Error|Exception))(?::|\s*$)/m.exec(last.slice(0, 300));
  return m === null || m[1] === 'Error' ? null : (m[1] ?? null);
}

/** The first error text found on the message, with where it came from. */
function errorText(message: QueueMessage): { text: string; source: string } | null {
  const fr = message.meta.failedReason;
  if (typeof fr === 'string' && fr.trim() !== '') {
    // BullMQ keeps only the error's message in failedReason; its class (`UnrecoverableError`,
    // `ValidationError`…) is only in the stack trace of that attempt.
    const name = errorName(message.meta.stacktrace);
    return name !== null && !fr.includes(name) ? { text: `${name}: ${fr}`, source: 'failedReason + stacktrace' } : { text: fr, source: 'failedReason' };
  }
  const byLower = new Map<string, [string, HeaderValue]>();
  for (const [k, v] of Object.entries(message.headers)) {
    const lk = k.toLowerCase();
    if (!byLower.has(lk)) byLower.set(lk, [k, v]);
  }
  for (const name of ERROR_HEADER_NAMES) {
    const hit = byLower.get(name);
    if (hit === undefined) continue;
    const text = headerText(hit[1]);
    if (text !== null && text.trim() !== '') return { text, source: `header ${hit[0]}` };
  }
  return null;
}

/** Text of a header value: strings as is, numbers as decimals, an object's `message`/`error` field. */
function headerText(v: HeaderValue): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return v.length > 0 && v[0] !== undefined ? headerText(v[0]) : null;
  if (v !== null && typeof v === 'object') {
    for (const k of ['message', 'error', 'reason', 'StringValue']) {
      const x = v[k];
      if (x !== undefined) return headerText(x);
    }
  }
  return null;
}

function deathReason(message: QueueMessage): { reason: string; queue: string | null } | null {
  const xd = message.meta.xDeath;
  const first = Array.isArray(xd) ? xd[0] : undefined;
  if (first !== undefined && typeof first.reason === 'string' && first.reason !== '') return { reason: first.reason, queue: typeof first.queue === 'string' ? first.queue : null };
  const r = message.meta.firstDeathReason;
  if (typeof r === 'string' && r !== '') return { reason: r, queue: message.meta.firstDeathQueue ?? null };
  return null;
}

function attemptsOf(message: QueueMessage): number | null {
  const meta = message.meta;
  if (typeof meta.attemptsMade === 'number' && Number.isFinite(meta.attemptsMade)) return meta.attemptsMade;
  for (const [k, v] of Object.entries(message.headers)) {
    if (!ATTEMPT_HEADER_NAMES.includes(k.toLowerCase())) continue;
    const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : Number.NaN;
    if (Number.isInteger(n) && n >= 0) return n;
  }
  if (Array.isArray(meta.xDeath) && meta.xDeath.length > 0) {
    const rejected = meta.xDeath.filter((d) => d.reason === 'rejected' || d.reason === 'delivery_limit');
    if (rejected.length > 0) return rejected.reduce((s, d) => s + (Number.isFinite(d.count) ? d.count : 0), 0);
  }
  if (typeof meta.receiveCount === 'number' && Number.isFinite(meta.receiveCount) && meta.receiveCount > 0) return meta.receiveCount;
  return null;
}

function firstLine(text: string): string {
  const nl = text.search(/[\r\n]/);
  const line = (nl >= 0 ? text.slice(0, nl) : text).trim();
  return line.length > MAX_REASON_LENGTH ? `${line.slice(0, MAX_REASON_LENGTH)}…` : line;
}

/**
 * The reason with variable parts replaced by `#`: UUIDs, hex ids of 8+ digits, and numbers
 * (except a leading HTTP status written as `HTTP nnn`), whitespace collapsed.
 */
export function normalizeReason(reason: string): string {
  return reason
    .slice(0, MAX_REASON_LENGTH)
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '#')
    .replace(/\b[0-9a-f]{8,}\b/gi, (m) => (/[a-f]/i.test(m) ? '#' : m))
    .replace(/(HTTP(?:\/\d(?:\.\d)?)?\s*)?(\d+(?:\.\d+)?)/gi, (m, http: string | undefined) => (http !== undefined ? m : '#'))
    .replace(/\s+/g, ' ')
    .trim();
}
