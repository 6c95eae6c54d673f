import { connect as netConnect } from 'node:net';
import type { Redis, RedisOptions } from 'ioredis';
import { QueuescopeError, type ErrorCode, type RedisConnectionConfig } from '../../../shared/domain';

/** Connect timeout (ms) for the TCP (+TLS) handshake: fail fast instead of hanging a UI. */
export const CONNECT_TIMEOUT_MS = 5_000;
/** Per-command timeout (ms). Generous: a pipeline of 1,000 job hashes with large bodies must fit. */
export const COMMAND_TIMEOUT_MS = 30_000;

/** Largest database index Redis can have (`databases` is a C int): larger ones are refused before connecting. */
export const MAX_DB_INDEX = 2_147_483_647;

/** Where a Redis connection goes, as parsed from the config (never holds the password). */
export interface RedisEndpoint {
  host: string;
  port: number;
  db: number;
  tls: boolean;
  username: string | null;
}

/** ioredis options plus the parsed endpoint for messages and checks. */
export interface ResolvedRedisOptions {
  endpoint: RedisEndpoint;
  options: RedisOptions;
}

/**
 * Builds ioredis options from a {@link RedisConnectionConfig}.
 *
 * - `redis://[user[:pass]@]host[:port][/db]` or `rediss://…` (TLS). Explicit config fields
 *   (`username`, `password`, `db`) override the URL's — we parse the URL ourselves because
 *   ioredis lets the URL win over the options object.
 * - TLS is on exactly when the scheme is `rediss://`; `config.tls` then tunes it
 *   (`rejectUnauthorized`, `ca`, `servername`; SNI defaults to the URL host name when it is not an IP).
 * - Fails fast: `lazyConnect`, 5 s connect timeout, one retry per command, at most two quick
 *   reconnects (so a dead server surfaces as an error instead of an endless reconnect loop).
 *
 * Follows https://redis.github.io/ioredis/interfaces/CommonRedisOptions.html and the
 * `redis://` scheme of https://www.iana.org/assignments/uri-schemes/prov/redis.
 * @throws QueuescopeError `INVALID_INPUT` for a malformed URL (the message never echoes a password).
 */
export function resolveRedisOptions(config: RedisConnectionConfig): ResolvedRedisOptions {
  let url: URL;
  try {
    url = new URL(config.url.trim());
  } catch {
    throw new QueuescopeError('INVALID_INPUT', 'The Redis URL is not a valid URL: use redis://host:port or rediss://host:port.');
  }
  const scheme = url.protocol.replace(/:$/, '').toLowerCase();
  if (scheme !== 'redis' && scheme !== 'rediss') {
    throw new QueuescopeError('INVALID_INPUT', `A Redis URL must start with redis:// or rediss://, not ${scheme}://.`);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw new QueuescopeError('INVALID_INPUT', 'The Redis URL has no host name.');
  const port = url.port === '' ? 6379 : Number(url.port);
  const dbPath = url.pathname.replace(/^\//, '');
  if (dbPath !== '' && !/^\d+$/.test(dbPath)) {
    throw new QueuescopeError('INVALID_INPUT', 'The Redis URL path must be a database index such as /0.');
  }
  const db = config.db ?? (dbPath === '' ? 0 : Number(dbPath));
  if (!Number.isSafeInteger(db) || db < 0 || db > MAX_DB_INDEX) {
    throw new QueuescopeError('INVALID_INPUT', `The Redis database index must be a whole number from 0 to ${MAX_DB_INDEX}, got ${String(db).slice(0, 40)}.`);
  }
  const urlUser = url.username === '' ? undefined : safeDecode(url.username);
  const urlPass = url.password === '' ? undefined : safeDecode(url.password);
  const username = config.username !== undefined && config.username !== '' ? config.username : urlUser;
  const password = config.password !== undefined && config.password !== '' ? config.password : urlPass;
  const tls = scheme === 'rediss';

  const options: RedisOptions = {
    host,
    port,
    db,
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    // Two quick reconnects, then give up: the adapter recreates the client on the next call.
    retryStrategy: (times: number) => (times > 2 ? null : 200 * times),
    enableReadyCheck: true,
    // Commands wait through the (bounded) reconnects above, then fail with "Connection is closed".
    enableOfflineQueue: true,
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
  };
  if (tls) {
    const isIp = /^[\d.]+$/.test(host) || host.includes(':');
    options.tls = {
      rejectUnauthorized: config.tls?.rejectUnauthorized ?? true,
      ...(config.tls?.ca !== undefined ? { ca: config.tls.ca } : {}),
      ...(config.tls?.servername !== undefined ? { servername: config.tls.servername } : !isIp ? { servername: host } : {}),
    };
  }
  return { endpoint: { host, port, db, tls, username: username ?? null }, options };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** `host:port` for messages (IPv6 in brackets). */
export function describeEndpoint(e: RedisEndpoint): string {
  return `${e.host.includes(':') ? `[${e.host}]` : e.host}:${e.port}`;
}

const TLS_CODES = new Set([
  'EPROTO',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'ERR_TLS_HANDSHAKE_TIMEOUT',
  'ECONNRESET_TLS',
]);
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ETIMEDOUT', 'ECONNRESET', 'EPIPE', 'EADDRNOTAVAIL']);

/**
 * Maps anything ioredis (or BullMQ through it) throws to a {@link QueuescopeError} with the most
 * specific code we can prove:
 *
 * - `ECONNREFUSED` / `ENOTFOUND` / `EHOSTUNREACH` / connect `ETIMEDOUT` / a lost connection → `HOST_UNREACHABLE`
 * - `WRONGPASS` / `NOAUTH` / "invalid password" → `AUTH_FAILED`
 * - `NOPERM` → `PERMISSION_DENIED`
 * - certificate and handshake errors (`ERR_SSL_*`, `CERT_*`, `EPROTO`, …) → `TLS_ERROR`
 * - a SELECT refused because the database does not exist → `INVALID_INPUT` (see {@link ensureDatabase})
 * - "Command timed out" → `TIMEOUT`; everything else the server said → `BROKER_ERROR`.
 *
 * `context` is prepended ("Listing queues on 127.0.0.1:6379: …"). Already-mapped errors pass through.
 * Messages never include credentials (we never put them in, and QueuescopeError redacts).
 */
export function mapRedisError(e: unknown, endpoint: RedisEndpoint, context: string): QueuescopeError {
  if (e instanceof QueuescopeError) return e;
  const err = e as { code?: unknown; message?: unknown; name?: unknown } | null;
  const code = typeof err?.code === 'string' ? err.code : '';
  const msg = typeof err?.message === 'string' ? err.message : String(e);
  const where = describeEndpoint(endpoint);
  const make = (c: ErrorCode, text: string): QueuescopeError =>
    new QueuescopeError(c, `${context}: ${text}`, { host: endpoint.host, port: endpoint.port, ...(code !== '' ? { cause: code } : {}) }, { cause: e });

  if (/^WRONGPASS/.test(msg) || /invalid (username-)?password/i.test(msg)) {
    return make('AUTH_FAILED', `Redis at ${where} rejected the user name or password${endpoint.username !== null ? ` (user "${endpoint.username}")` : ''}.`);
  }
  if (/^NOAUTH/.test(msg)) return make('AUTH_FAILED', `Redis at ${where} requires a password, and none was given.`);
  // Also inside a transaction: "EXECABORT Transaction discarded because of: NOPERM … 'exec' command".
  if (/^NOPERM|\bbecause of: NOPERM\b/.test(msg)) {
    const detail = firstLine(msg).replace(/^EXECABORT Transaction discarded because of: /, '');
    return make(
      'PERMISSION_DENIED',
      `Redis at ${where} denied a command for user "${endpoint.username ?? 'default'}": ${detail}. Queuescope reads with +@read plus MULTI/EXEC (consistent snapshots of a queue's keys) and SCAN; redrives also need +@write and +@scripting (ACL SETUSER <user> +@read +multi +exec …).`,
    );
  }
  if (TLS_CODES.has(code) || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || /SSL routines|TLS|certificate/i.test(msg)) {
    return make('TLS_ERROR', `TLS with ${where} failed: ${firstLine(msg)}. Check the CA certificate, the server name, and that the port speaks TLS.`);
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return make('HOST_UNREACHABLE', `the host name "${endpoint.host}" could not be resolved (${code}).`);
  if (code === 'ECONNREFUSED') return make('HOST_UNREACHABLE', `connection to ${where} was refused: is Redis running and listening on that port?`);
  if (code === 'ETIMEDOUT') return make('HOST_UNREACHABLE', `connecting to ${where} timed out after ${CONNECT_TIMEOUT_MS / 1000} s.`);
  if (UNREACHABLE_CODES.has(code)) return make('HOST_UNREACHABLE', `the network connection to ${where} failed (${code}).`);
  if (/Command timed out/i.test(msg)) return make('TIMEOUT', `Redis at ${where} did not answer within ${COMMAND_TIMEOUT_MS / 1000} s.`);
  if (/Connection is closed|Reached the max retries per request|Stream isn't writeable|enableOfflineQueue/i.test(msg)) {
    return make('HOST_UNREACHABLE', `the connection to ${where} was lost.`);
  }
  if (isSelectError(e) && /out of range|invalid DB index|invalid database/i.test(msg)) {
    return make('INVALID_INPUT', `Redis at ${where} has no database ${endpoint.db} (SELECT ${endpoint.db}: ${firstLine(msg)}). Use an existing database index in the URL (redis://host:port/N).`);
  }
  if (/Protocol error/i.test(msg)) return make('HOST_UNREACHABLE', `the server at ${where} does not speak the Redis protocol.`);
  if (err?.name === 'ReplyError' || /^[A-Z]+ /.test(msg)) return make('BROKER_ERROR', `Redis at ${where} answered: ${firstLine(msg)}`);
  return make('INTERNAL', firstLine(msg));
}

function firstLine(s: string): string {
  return (s.split('\n')[0] ?? '').slice(0, 300).replace(/\.$/, '');
}

/**
 * Opens and closes a plain TCP connection to tell "host unreachable" from "TLS handshake
 * stalled" (a TLS client on a plain Redis port waits silently until the connect timeout).
 * Resolves with the duration in ms; rejects with the socket error.
 */
export function probeTcp(host: string, port: number, timeoutMs: number): Promise<number> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host, port });
    const done = (err?: Error): void => {
      socket.removeAllListeners();
      socket.destroy();
      if (err) reject(err);
      else resolve(Date.now() - started);
    };
    socket.setTimeout(timeoutMs, () => done(Object.assign(new Error(`connect ETIMEDOUT ${host}:${port}`), { code: 'ETIMEDOUT' })));
    socket.once('connect', () => done());
    socket.once('error', (e) => done(e));
  });
}

/** True when `e` is the server's error reply to a SELECT (ioredis puts the command on its reply errors). */
export function isSelectError(e: unknown): boolean {
  const command = (e as { command?: { name?: unknown } } | null)?.command;
  return typeof command?.name === 'string' && command.name.toLowerCase() === 'select';
}

/**
 * Makes sure the connected client `r` is on database `endpoint.db`, by sending SELECT and waiting
 * for its reply. ioredis sends its own SELECT for the `db` option when it connects, but when that
 * fails it only emits an `error` event and carries on — every later command then runs on
 * database 0. Nothing to do for database 0 (every connection starts there).
 * @throws QueuescopeError `INVALID_INPUT` when the server has no such database (the message names the
 * index and, when `CONFIG GET databases` is permitted, how many there are); otherwise the mapped
 * SELECT error (`PERMISSION_DENIED` for an ACL refusal, `BROKER_ERROR` e.g. in cluster mode, connection codes).
 */
export async function ensureDatabase(r: Redis, endpoint: RedisEndpoint, context: string): Promise<void> {
  if (endpoint.db === 0) return;
  try {
    await r.select(endpoint.db);
  } catch (e) {
    throw await explainSelectFailure(r, e, endpoint, context);
  }
}

/**
 * Closes `r` after its reconnect's SELECT failed, so that nothing it holds runs on database 0:
 * the commands ioredis would re-send after the reconnect (its `prevCommandQueue`, ioredis 5
 * internals, read defensively) and those waiting in its offline queue are rejected with `error`
 * now — a plain `disconnect()` leaves the re-send queue waiting until the command timeout — then
 * the connection is closed without reconnecting. Call it from the client's `error` listener: the
 * SELECT reply, and so that event, comes before the ready check that would send those commands.
 */
export function abandonConnection(r: Redis, error: Error): void {
  type Queued = { command?: { reject?: (e: Error) => void } };
  type Deque = { shift(): Queued | undefined; length: number };
  const internals = r as unknown as { prevCommandQueue?: Deque | null; offlineQueue?: Deque | null };
  for (const queue of [internals.prevCommandQueue, internals.offlineQueue]) {
    if (queue === null || queue === undefined || typeof queue.shift !== 'function') continue;
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) item.command?.reject?.(error);
  }
  internals.prevCommandQueue = null;
  r.disconnect();
}

/** The error for a failed `SELECT endpoint.db` (see {@link ensureDatabase}); reads the server's database count when permitted. */
async function explainSelectFailure(r: Redis, e: unknown, endpoint: RedisEndpoint, context: string): Promise<QueuescopeError> {
  const msg = e instanceof Error ? e.message : String(e);
  // Redis/Valkey: "ERR DB index is out of range"; others: "invalid DB index", "value is not an integer or out of range".
  if (!/out of range|invalid DB index|invalid database/i.test(msg)) return mapRedisError(e, endpoint, `${context}: SELECT ${endpoint.db}`);
  let count: number | null = null;
  try {
    const reply = (await r.config('GET', 'databases')) as unknown[];
    const n = Number(reply[1] instanceof Buffer ? reply[1].toString() : reply[1]);
    count = Number.isSafeInteger(n) && n > 0 ? n : null;
  } catch {
    // CONFIG is often disabled or not permitted on managed Redis: the SELECT error alone is the signal.
  }
  const limit =
    count !== null
      ? `it has ${count} database${count === 1 ? '' : 's'} (${count === 1 ? 'only 0' : `0–${count - 1}`})`
      : `it has fewer databases (how many could not be read: CONFIG GET databases is not permitted; databases are numbered from 0)`;
  return new QueuescopeError(
    'INVALID_INPUT',
    `${context}: the server has no database ${endpoint.db} (SELECT ${endpoint.db}: ${firstLine(msg)}): ${limit}. Use an existing database index in the URL (redis://host:port/N); nothing was read or changed.`,
    { host: endpoint.host, port: endpoint.port, db: endpoint.db, databases: count },
    { cause: e },
  );
}

/** What a server said to the AUTH that ioredis sends on connect, when ioredis would only have printed it. */
export type AuthNotice = 'password-not-required' | 'auth-arity';

const AUTH_NOTICES: [RegExp, AuthNotice][] = [
  [/no password is set|without any password configured for the default user/i, 'password-not-required'],
  [/wrong number of arguments for 'auth' command/i, 'auth-arity'],
];

/**
 * Keeps ioredis from writing to the console about the AUTH it sends on connect, for this one
 * client. ioredis 5 (`built/redis/event_handler.js`, `connectHandler`) calls `self.auth(…, cb)`
 * and, for "no password is set" / "without any password configured for the default user" /
 * "wrong number of arguments for 'auth'", only `console.warn`s and carries on. We wrap the
 * instance's `auth` so those replies reach `onNotice` instead and ioredis sees success (it would
 * have carried on anyway); every other AUTH error (WRONGPASS…) passes through unchanged.
 * No global console patch: other clients and other code are untouched.
 */
export function interceptAuthNotices(client: Redis, onNotice: (notice: AuthNotice) => void): void {
  type Callback = (err: Error | null, res?: unknown) => void;
  type AuthFn = (...args: unknown[]) => Promise<unknown>;
  const target = client as unknown as { auth: AuthFn };
  const original = target.auth.bind(client);
  target.auth = (...args: unknown[]): Promise<unknown> => {
    const last = args[args.length - 1];
    if (typeof last !== 'function') return original(...args);
    const cb = last as Callback;
    const wrapped: Callback = (err, res) => {
      const notice = err ? AUTH_NOTICES.find(([re]) => re.test(err.message))?.[1] : undefined;
      if (notice !== undefined) {
        onNotice(notice);
        cb(null, 'OK');
        return;
      }
      cb(err, res);
    };
    return original(...args.slice(0, -1), wrapped);
  };
}
