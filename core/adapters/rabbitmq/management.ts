import http from 'node:http';
import https from 'node:https';
import { QueuescopeError } from '../../../shared/domain';
import { abortable, throwIfAborted } from '../../lib/abort';
import { cancelledError, networkCause } from './errors';
import type { RabbitmqSettings } from './settings';

/** A management API answer: the HTTP status, the parsed JSON body (null when not JSON) and RabbitMQ's `reason`. */
export interface ManagementResponse {
  status: number;
  body: unknown;
  /** The `reason` (or `error`) field RabbitMQ puts in error bodies, e.g. "Not management user". */
  reason: string | null;
}

/** Thrown for a failure to talk to the management API at all (network, TLS, timeout). */
export class ManagementNetworkError extends QueuescopeError {
  readonly managementNetwork = true;
}

/**
 * A check {@link ManagementClient.setGuard} runs before the first request: resolves when the
 * requests may go on, throws a QueuescopeError (kept for every later request) when they must not.
 * `get` is a raw GET that bypasses the guard.
 */
export type ManagementGuard = (get: (path: string, signal?: AbortSignal) => Promise<ManagementResponse>) => Promise<void>;

/** Default per-request timeout (ms) of the management API client. */
export const MANAGEMENT_TIMEOUT_MS = 5_000;

/**
 * A small client for the RabbitMQ management HTTP API (https://www.rabbitmq.com/docs/management#http-api,
 * reference: `/api/index.html` on the broker). Uses node:http/https with a keep-alive agent rather
 * than global fetch because the connection's TLS settings (a private CA, `rejectUnauthorized`,
 * a server name) must apply to `https:` management URLs too, which fetch cannot take without undici.
 * Sends HTTP basic auth; never puts credentials in URLs or messages.
 */
export class ManagementClient {
  private readonly agent: http.Agent;
  private readonly auth: string;
  private guard: ManagementGuard | null = null;
  private guarded: Promise<void> | null = null;

  /**
   * Sets a check run once before this client's first request (and again after it failed other
   * than by throwing a permanent error): the adapter proves the API belongs to the broker its AMQP
   * connection reaches. The check gets a raw GET that does not wait for itself.
   */
  setGuard(guard: ManagementGuard): void {
    this.guard = guard;
    this.guarded = null;
  }

  constructor(private readonly s: RabbitmqSettings) {
    const https_ = s.managementBase.protocol === 'https:';
    this.agent = https_
      ? new https.Agent({ keepAlive: true, maxSockets: 8, ...s.managementTls })
      : new http.Agent({ keepAlive: true, maxSockets: 8 });
    this.auth = `Basic ${Buffer.from(`${s.managementUser}:${s.managementPassword}`).toString('base64')}`;
  }

  /** The base URL shown in messages, e.g. `http://127.0.0.1:15672`. */
  get base(): string {
    return this.s.managementBase.toString().replace(/\/$/, '');
  }

  /**
   * GETs `path` (starting with `/api/`), parsed as JSON.
   * @throws ManagementNetworkError (`HOST_UNREACHABLE`, `TLS_ERROR`, `TIMEOUT`) when no HTTP answer arrives;
   *   QueuescopeError `CANCELLED` when `signal` aborts.
   */
  async get(path: string, signal?: AbortSignal, timeoutMs = MANAGEMENT_TIMEOUT_MS): Promise<ManagementResponse> {
    return this.request('GET', path, undefined, signal, timeoutMs);
  }

  /**
   * {@link get} without the guard (see {@link setGuard}): for the diagnostics of a failed AMQP
   * connection, which the guard itself opens (waiting on the guard there would wait on itself), and
   * for the connection test, which compares the brokers itself.
   */
  getUnguarded(path: string, signal?: AbortSignal, timeoutMs = MANAGEMENT_TIMEOUT_MS): Promise<ManagementResponse> {
    return this.send('GET', path, undefined, signal, timeoutMs);
  }

  /**
   * Sends `method` to `path` (starting with `/api/`) with an optional JSON body (PUT/DELETE are used
   * for dynamic shovels: `/api/parameters/shovel/<vhost>/<name>`), parsed like {@link get}.
   * @throws like {@link get}.
   */
  async request(method: 'GET' | 'PUT' | 'DELETE', path: string, json: unknown, signal?: AbortSignal, timeoutMs = MANAGEMENT_TIMEOUT_MS): Promise<ManagementResponse> {
    if (signal?.aborted === true) throw cancelledError();
    if (this.guard !== null) {
      const guard = this.guard;
      // One check for every caller, not tied to the first caller's signal; each waits with its own.
      const p = (this.guarded ??= guard((path_, sig) => this.send('GET', path_, undefined, sig, MANAGEMENT_TIMEOUT_MS)));
      await abortable(p, signal);
    }
    return this.send(method, path, json, signal, timeoutMs);
  }

  private async send(method: 'GET' | 'PUT' | 'DELETE', path: string, json: unknown, signal: AbortSignal | undefined, timeoutMs: number): Promise<ManagementResponse> {
    if (signal?.aborted === true) throw cancelledError();
    const url = new URL(this.s.managementBase.toString().replace(/\/$/, '') + path);
    const mod = url.protocol === 'https:' ? https : http;
    const timeout = AbortSignal.timeout(timeoutMs);
    const both = signal ? AbortSignal.any([signal, timeout]) : timeout;
    return new Promise<ManagementResponse>((resolve, reject) => {
      const payload = json === undefined ? null : Buffer.from(JSON.stringify(json), 'utf8');
      const headers: Record<string, string | number> = { authorization: this.auth, accept: 'application/json' };
      if (payload !== null) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = payload.length;
      }
      const req = mod.request(url, { method, agent: this.agent, headers, signal: both }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => {
          reject(this.failure(e, signal, timeout, timeoutMs));
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = text === '' ? null : JSON.parse(text);
          } catch {
            body = null;
          }
          let reason: string | null = null;
          if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
            const b = body as { reason?: unknown; error?: unknown };
            reason = typeof b.reason === 'string' ? b.reason : typeof b.error === 'string' ? b.error : null;
          }
          resolve({ status: res.statusCode ?? 0, body, reason });
        });
      });
      req.on('error', (e) => {
        reject(this.failure(e, signal, timeout, timeoutMs));
      });
      req.end(payload ?? undefined);
    });
  }

  private failure(e: unknown, signal: AbortSignal | undefined, timeout: AbortSignal, timeoutMs: number): QueuescopeError {
    if (signal?.aborted === true) return cancelledError();
    if (timeout.aborted) {
      return new ManagementNetworkError('TIMEOUT', `The RabbitMQ management API at ${this.base} did not answer within ${Math.round(timeoutMs / 1000)} s.`, { managementUrl: this.base });
    }
    const cause = networkCause(e, `the RabbitMQ management API at ${this.base}`);
    if (cause) return new ManagementNetworkError(cause.code, cause.message, { managementUrl: this.base });
    return new ManagementNetworkError('HOST_UNREACHABLE', `The RabbitMQ management API at ${this.base} could not be reached: ${e instanceof Error ? e.message : String(e)}`, { managementUrl: this.base });
  }

  /** Closes idle keep-alive sockets. */
  close(): void {
    this.agent.destroy();
  }
}

/** Times a paged listing starts again from page 1 after it changed under it (see {@link readAllPages}). */
export const MAX_LISTING_RESTARTS = 3;

/**
 * True for the management API's answer to a page past the end of a listing: HTTP 400
 * "Page out of range, page: 2 page size: 500, len: 475" — the listing shrank since its first page
 * was read. Recognised on a {@link QueuescopeError} whose `details` carry `status` and `reason`.
 */
export function isPageOutOfRange(e: unknown): boolean {
  if (!(e instanceof QueuescopeError) || e.details?.status !== 400) return false;
  const reason = e.details.reason;
  return /page out of range/i.test(typeof reason === 'string' ? reason : e.message);
}

/**
 * Reads every page of a paged management API listing (`GET /api/queues/<vhost>?page=N&page_size=…`,
 * https://www.rabbitmq.com/docs/management#pagination-in-http-api): page 1, then pages 2… of the
 * page count page 1 announced, `concurrency` at a time, until `done()`.
 *
 * A listing that changes while it is paged — queues deleted meanwhile (auto-delete and exclusive
 * reply queues on a busy broker, tests cleaning up) — shifts items from a later page into an earlier
 * one, and can make a later page "out of range" (HTTP 400, {@link isPageOutOfRange}). Before, that
 * failed the whole listing. Now the caller's items are dropped (`reset`) and the reading starts
 * again from page 1, at most {@link MAX_LISTING_RESTARTS} times, so the result is one reading of
 * the shrunken listing: no queue present throughout is missed and none deleted meanwhile is listed.
 * After the last restart the pages of that reading are kept (a later page may then be missing).
 * Items shifted within one reading can still come twice: `take` deduplicates them (by name).
 *
 * @param fetchPage the JSON body of page `page` (1-based); throws the caller's errors.
 * @param take consumes one page's body and returns its page count.
 * @param done true when the caller has enough items (a cap): no further page is read.
 * @param reset drops the items taken so far (called before a restart).
 * @throws whatever `fetchPage` or `take` throw, except out-of-range pages; `CANCELLED` on abort.
 */
export async function readAllPages(
  fetchPage: (page: number) => Promise<unknown>,
  take: (body: unknown) => number,
  done: () => boolean,
  reset: () => void,
  concurrency: number,
  signal?: AbortSignal,
): Promise<void> {
  for (let restart = 0; ; restart++) {
    throwIfAborted(signal);
    if (restart > 0) reset();
    const pageCount = take(await fetchPage(1));
    // Set from the page callbacks (an object, so the loop condition reads its current value).
    const listing = { shrank: false };
    for (let next = 2; next <= pageCount && !listing.shrank && !done(); next += concurrency) {
      throwIfAborted(signal);
      const batch: number[] = [];
      for (let p = next; p < next + concurrency && p <= pageCount; p++) batch.push(p);
      const bodies = await Promise.all(
        batch.map((p) =>
          fetchPage(p).catch((e: unknown) => {
            if (!isPageOutOfRange(e)) throw e;
            listing.shrank = true;
            return null;
          }),
        ),
      );
      for (const b of bodies) if (b !== null) take(b);
    }
    if (!listing.shrank || done() || restart >= MAX_LISTING_RESTARTS) return;
  }
}
