/**
 * Error codes that cross every boundary (adapter → service → IPC/CLI → UI).
 *
 * Each code names a cause a person can act on; the UI and the CLI map codes to
 * words, so adapters must pick the most specific one they can prove.
 */
export const ERROR_CODES = [
  'HOST_UNREACHABLE', // DNS failure, connection refused, network timeout
  'AUTH_FAILED', // wrong username/password, bad AWS signature / unknown key
  'TLS_ERROR', // handshake failed, untrusted certificate, TLS to a plain port
  'UNKNOWN_VHOST', // RabbitMQ vhost does not exist
  'MANAGEMENT_UNAVAILABLE', // RabbitMQ management plugin missing or its port closed
  'PERMISSION_DENIED', // authenticated, but not allowed (ACL, vhost permissions, IAM)
  'QUEUE_NOT_FOUND', // unknown queue, or deleted while open
  'PEEK_REFUSED', // a peek would change broker state in a way the caller did not accept
  'INVALID_INPUT', // caller gave something malformed (URL, option, file)
  'SNAPSHOT_INVALID', // a JSONL snapshot line that cannot be read
  'TIMEOUT', // the broker did not answer in time
  'CANCELLED', // the caller aborted (AbortSignal)
  'UNSUPPORTED', // the broker / emulator does not implement the operation
  'BROKER_ERROR', // anything else the broker said
  'INTERNAL', // a bug in Queuescope
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** Plain, serialisable error shape used across IPC and in `--json` CLI output. */
export interface ErrorInfo {
  code: ErrorCode;
  /** One sentence a person can act on; never contains credentials. */
  message: string;
  /** Extra plain data (host, queue name, broker reply code…); credentials stripped. */
  details?: Record<string, unknown>;
}

/**
 * The one error class the core throws on purpose.
 * Messages and details are redacted on construction, so a password that slipped
 * into a broker's error text never reaches a log, an export or the UI.
 */
export class QueuescopeError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>, options?: { cause?: unknown }) {
    super(redactSecrets(message), options);
    this.name = 'QueuescopeError';
    this.code = code;
    this.details = details === undefined ? undefined : (redactValue(details) as Record<string, unknown>);
  }

  /** The serialisable form sent across IPC / printed by `--json`. */
  toInfo(): ErrorInfo {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

/** True for a QueuescopeError, also across realms (checks the shape, not the prototype). */
export function isQueuescopeError(e: unknown): e is QueuescopeError {
  return e instanceof QueuescopeError;
}

/**
 * Converts anything thrown into an {@link ErrorInfo}. Unknown errors become
 * `INTERNAL` with their (redacted) message, so nothing is swallowed silently.
 */
export function toErrorInfo(e: unknown): ErrorInfo {
  if (e instanceof QueuescopeError) return e.toInfo();
  if (e instanceof Error && e.name === 'AbortError') return { code: 'CANCELLED', message: 'The operation was cancelled.' };
  const msg = e instanceof Error ? e.message : String(e);
  return { code: 'INTERNAL', message: redactSecrets(msg || 'Unexpected error') };
}

const URL_USERINFO = /\b([a-z][a-z0-9+.-]{0,31}:\/\/)([^/@\s:]*)(?::([^/@\s]*))?@/gi;
const SECRET_KV = /((?:password|passwd|pwd|secret|secretAccessKey|sessionToken|token|authorization)["']?\s*[:=]\s*["']?)([^"'\s,&}]+)/gi;
const AWS_SECRET_LIKE = /\b(?=[A-Za-z0-9/+]{0,39}[/+])[A-Za-z0-9/+]{40}\b/g;

/**
 * Removes credentials from free text: the password of any `scheme://user:pass@host`
 * URL, `password=…`-style pairs, and 40-character strings shaped like AWS secret keys.
 * The user name is kept (it helps diagnose "authentication failed").
 */
export function redactSecrets(text: string): string {
  return text
    .replace(URL_USERINFO, (_m, scheme: string, user: string, pass: string | undefined) =>
      pass === undefined ? `${scheme}${user}@` : `${scheme}${user}:***@`,
    )
    .replace(SECRET_KV, (_m, k: string) => `${k}***`)
    .replace(AWS_SECRET_LIKE, '***');
}

const SECRET_KEYS = /^(password|passwd|pwd|secret|secretaccesskey|sessiontoken|token|authorization|credentials)$/i;

/** Deep-copies plain data, replacing values under secret-looking keys and redacting strings. */
export function redactValue(v: unknown, depth = 0): unknown {
  if (depth > 8) return '[…]';
  if (typeof v === 'string') return redactSecrets(v);
  if (Array.isArray(v)) return v.map((x) => redactValue(x, depth + 1));
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, val] of Object.entries(v)) out[k] = SECRET_KEYS.test(k) ? '***' : redactValue(val, depth + 1);
    return out;
  }
  return v;
}
