import { Redis, type RedisOptions } from 'ioredis';
import { Queue } from 'bullmq';
import {
  QueuescopeError,
  type ConnectionCheck,
  type ConnectionTestResult,
  type PeekOptions,
  type PeekPage,
  type QueueSummary,
  type RedisConnectionConfig,
} from '../../../shared/domain';
import type { BrokerAdapter, ListQueuesOptions } from '../types';
import { abandonConnection, CONNECT_TIMEOUT_MS, describeEndpoint, ensureDatabase, interceptAuthNotices, isSelectError, mapRedisError, probeTcp, resolveRedisOptions, type AuthNotice, type RedisEndpoint } from './connection';
import { str, throwIfAborted, type RedisContext } from './context';
import { DEFAULT_SCAN_LIMIT, discoverKeys, globToRegExp } from './discovery';
import { displayName, formatQueueId, parseQueueId, type RedisQueueRef } from './ids';
import { listSummary, peekList } from './list';
import { peekStream, streamSummary } from './stream';
import { bullmqSummary, peekBullmq } from './bullmq';
import { createRedisRedriveMover } from './redrive';
import type { RedriveMover } from '../redrive-types';
import { abortable } from '../../lib/abort';
import { createRedisAuditCollector } from './audit';
import { createRedisTuning } from './tuning';

export { resolveRedisOptions, mapRedisError } from './connection';
export { parseQueueId, formatQueueId } from './ids';
export type { RedisQueueRef } from './ids';

/** Default number of queues `listQueues` returns at most. */
const DEFAULT_LIST_LIMIT = 10_000;
/** Queues summarised concurrently during `listQueues`. */
const SUMMARY_CONCURRENCY = 32;
/** BullMQ `Queue` objects kept open at most (they share one connection). */
const MAX_CACHED_QUEUES = 500;

/** What the last `listQueues` call examined: lets the UI say "showing what the first 100,000 keys contain". */
export interface RedisDiscoveryInfo {
  /** Keys SCAN returned. */
  keysExamined: number;
  /** The bound that applied (`config.scanLimit`, default 100,000). */
  scanLimit: number;
  /** False when the bound stopped the scan early: queues beyond it are not listed. */
  complete: boolean;
}

/** The Redis adapter: a {@link BrokerAdapter} plus what the last discovery examined. */
export interface RedisAdapter extends BrokerAdapter {
  readonly broker: 'redis';
  /** Set by every successful `listQueues`; null before the first. */
  readonly lastDiscovery: RedisDiscoveryInfo | null;
}

/**
 * Creates the adapter for one Redis connection (standalone Redis/Valkey; cluster mode is not supported).
 *
 * It finds three kinds of queue with a bounded SCAN: BullMQ queues (`bullmq:<prefix>:<name>`),
 * Redis Streams (`stream:<key>`) and lists (`list:<key>`). All reads are non-destructive (XRANGE,
 * XPENDING, LRANGE, HGETALL); BullMQ counts come from BullMQ's `Queue.getJobCounts()`.
 * One ioredis connection is opened lazily on the first call and shared, also by BullMQ.
 *
 * @param config a validated {@link RedisConnectionConfig}; `config.url` must be `redis://` or `rediss://`.
 * @throws QueuescopeError `INVALID_INPUT` when the URL cannot be parsed (no connection is attempted).
 */
export function createRedisAdapter(config: RedisConnectionConfig): RedisAdapter {
  return new RedisBrokerAdapter(config);
}

class RedisBrokerAdapter implements RedisAdapter, RedisContext {
  readonly broker = 'redis' as const;
  readonly endpoint: RedisEndpoint;
  lastDiscovery: RedisDiscoveryInfo | null = null;
  /** DLQ redrive: BullMQ failed jobs, streams and lists (see `redrive.ts`). */
  readonly redrive: RedriveMover = createRedisRedriveMover(this);
  readonly audit = createRedisAuditCollector(this, (o, s) => this.listQueues(o, s));
  readonly tuning = createRedisTuning(this);
  private readonly options: RedisOptions;
  private readonly hasPassword: boolean;
  private readonly scanLimit: number;
  private redis: Redis | null = null;
  /** What the server said to our AUTH on the last connect, when it was not a plain OK/error. */
  private authNotice: AuthNotice | null = null;
  private connecting: Promise<Redis> | null = null;
  private readonly queues = new Map<string, Queue>();
  /** The page after the last one returned, being read in the background (see `peek`). */
  private readAhead: { key: string; at: number; page: Promise<PeekPage | null> } | null = null;

  constructor(config: RedisConnectionConfig) {
    const resolved = resolveRedisOptions(config);
    this.endpoint = resolved.endpoint;
    this.options = resolved.options;
    this.hasPassword = resolved.options.password !== undefined;
    this.scanLimit = config.scanLimit ?? DEFAULT_SCAN_LIMIT;
  }

  // ---- connection -------------------------------------------------------

  async client(signal?: AbortSignal): Promise<Redis> {
    throwIfAborted(signal);
    if (this.redis && this.redis.status !== 'end') return this.redis;
    this.connecting ??= this.open().finally(() => {
      this.connecting = null;
    });
    return abortable(this.connecting, signal);
  }

  private async open(): Promise<Redis> {
    const old = this.redis;
    if (old) {
      this.redis = null;
      this.dropQueues();
      old.disconnect();
    }
    const r = new Redis(this.options);
    this.authNotice = null;
    interceptAuthNotices(r, (n) => {
      this.authNotice = n;
    });
    let lastError: unknown = null;
    // ioredis reports the real cause (ECONNREFUSED, WRONGPASS, certificate…) only as an event;
    // connect() itself rejects with "Connection is closed".
    r.on('error', (e: unknown) => {
      lastError = e;
      // A reconnect whose SELECT failed: ioredis would carry on, on database 0. Its SELECT reply
      // arrives (and this event fires) before the ready check's, so nothing queued has been sent
      // yet: the waiting commands fail with the reason and the connection closes; the next call
      // reconnects and fails with the reason too (ensureDatabase).
      if (isSelectError(e) && this.redis === r) {
        this.redis = null;
        this.dropQueues();
        abandonConnection(r, mapRedisError(e, this.endpoint, `Reconnecting to Redis at ${describeEndpoint(this.endpoint)}`));
      }
    });
    try {
      await r.connect();
    } catch (e) {
      r.disconnect();
      throw await this.explainConnectFailure(lastError ?? e);
    }
    try {
      await ensureDatabase(r, this.endpoint, `Connecting to Redis at ${describeEndpoint(this.endpoint)}`);
    } catch (e) {
      r.disconnect();
      throw e;
    }
    this.redis = r;
    return r;
  }

  /** Maps a connect failure; a TLS handshake that merely timed out is told apart from an unreachable host with a plain TCP probe. */
  private async explainConnectFailure(e: unknown): Promise<QueuescopeError> {
    const mapped = mapRedisError(e, this.endpoint, `Connecting to Redis at ${describeEndpoint(this.endpoint)}`);
    if (this.endpoint.tls && mapped.code === 'HOST_UNREACHABLE' && (e as { code?: unknown } | null)?.code === 'ETIMEDOUT') {
      const tcpOk = await probeTcp(this.endpoint.host, this.endpoint.port, 2_000).then(
        () => true,
        () => false,
      );
      if (tcpOk) {
        return new QueuescopeError(
          'TLS_ERROR',
          `Connecting to Redis at ${describeEndpoint(this.endpoint)}: the TCP connection works but the TLS handshake did not finish within ${CONNECT_TIMEOUT_MS / 1000} s — the port probably speaks plain Redis (use redis:// instead of rediss://).`,
          { host: this.endpoint.host, port: this.endpoint.port },
        );
      }
    }
    return mapped;
  }

  async bullQueue(prefix: string, name: string, signal?: AbortSignal): Promise<Queue> {
    const client = await this.client(signal);
    const key = `${prefix}\u0000${name}`;
    const cached = this.queues.get(key);
    if (cached) return cached;
    if (this.queues.size >= MAX_CACHED_QUEUES) {
      const [oldestKey, oldest] = this.queues.entries().next().value ?? [];
      if (oldestKey !== undefined) this.queues.delete(oldestKey);
      void oldest?.close().catch(() => undefined);
    }
    // Shares our connection (BullMQ then never closes it). skipMetasUpdate: a Queue object otherwise
    // writes `<prefix>:<name>:meta` on creation — an inspector must not write (nor resurrect a
    // deleted queue). Version/eviction checks are ours (testConnection).
    const q = new Queue(name, { connection: client, prefix, skipVersionCheck: true, skipMetasUpdate: true });
    q.on('error', () => undefined); // errors surface through the awaited calls
    this.queues.set(key, q);
    return q;
  }

  private dropQueues(): void {
    const qs = [...this.queues.values()];
    this.queues.clear();
    for (const q of qs) void q.close().catch(() => undefined);
  }

  private async run<T>(what: string, signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
    throwIfAborted(signal);
    try {
      return await fn();
    } catch (e) {
      throw mapRedisError(e, this.endpoint, what);
    }
  }

  // ---- BrokerAdapter ----------------------------------------------------

  /**
   * Runs, in order: TCP connect; TLS handshake and AUTH (as part of opening the connection); PING;
   * server version (INFO server); `maxmemory-policy` (BullMQ requires `noeviction`,
   * https://docs.bullmq.io/guide/going-to-production#max-memory-policy); persistence (CONFIG GET
   * save/appendonly, else INFO persistence); keys in the selected database.
   * `ok` is true when the connection, authentication and PING succeed; the later checks report
   * problems in their own `ok`/`detail`. Never throws for broker errors.
   * @throws QueuescopeError `CANCELLED` when `signal` is aborted.
   */
  async testConnection(signal?: AbortSignal): Promise<ConnectionTestResult> {
    const checks: ConnectionCheck[] = [];
    const where = describeEndpoint(this.endpoint);
    const fail = (e: unknown, context: string): ConnectionTestResult => {
      if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
      const err = mapRedisError(e, this.endpoint, context);
      const last = checks[checks.length - 1];
      if (last) {
        last.ok = false;
        last.detail = err.message;
      }
      return { ok: false, server: null, checks, error: err.toInfo() };
    };
    const step = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
      throwIfAborted(signal);
      const check: ConnectionCheck = { name, ok: true, detail: '', ms: 0 };
      checks.push(check);
      const t = performance.now();
      try {
        return await fn();
      } finally {
        check.ms = Math.round(performance.now() - t);
      }
    };

    try {
      const ms = await step(`TCP connect ${where}`, () => abortable(probeTcp(this.endpoint.host, this.endpoint.port, CONNECT_TIMEOUT_MS), signal));
      setDetail(checks, `connected in ${ms} ms`);
    } catch (e) {
      return fail(e, `TCP connect to ${where}`);
    }
    const authName = `${this.endpoint.tls ? 'TLS handshake, ' : ''}${this.hasPassword ? `AUTH as "${this.endpoint.username ?? 'default'}"` : 'connect without password'}, SELECT ${this.endpoint.db}`;
    let client: Redis;
    try {
      client = await step(authName, () => this.client(signal));
      setDetail(
        checks,
        !this.hasPassword
          ? 'connected (no password given)'
          : this.authNotice === 'password-not-required'
            ? 'connected: the server requires no password; the password given was ignored'
            : this.authNotice === 'auth-arity'
              ? 'connected: the server does not accept a user name with AUTH (Redis 5 or older); the credentials given were ignored — give only a password'
              : 'authenticated',
      );
    } catch (e) {
      return fail(e, `Connecting to ${where}`);
    }
    try {
      const pong = await step('PING', () => client.ping());
      setDetail(checks, pong);
    } catch (e) {
      return fail(e, `PING ${where}`);
    }

    let server: string | null = null;
    let info = new Map<string, string>();
    try {
      info = await step('Server version (INFO)', async () => parseInfo(await client.info()));
      const product = info.has('valkey_version') ? 'Valkey' : info.has('dragonfly_version') ? 'Dragonfly' : 'Redis';
      const version = info.get('valkey_version') ?? info.get('dragonfly_version') ?? info.get('redis_version') ?? '?';
      server = `${product} ${version}`;
      const mode = info.get('redis_mode') ?? 'standalone';
      setDetail(checks, `${server}, ${mode}${info.get('cluster_enabled') === '1' ? ' — cluster mode is not supported: only this node\'s keys are listed' : ''}`);
    } catch (e) {
      noteFailure(checks, e, this.endpoint);
    }

    if (info.size > 0) {
      await step('maxmemory-policy', () => {
        const policy = info.get('maxmemory_policy') ?? 'unknown';
        const maxmemory = Number(info.get('maxmemory') ?? '0');
        const limit = maxmemory > 0 ? `maxmemory ${(maxmemory / 1024 / 1024).toFixed(0)} MiB` : 'no maxmemory limit';
        setDetail(
          checks,
          policy === 'noeviction'
            ? `noeviction (${limit}) — as BullMQ requires`
            : `WARNING: ${policy} (${limit}). BullMQ requires noeviction: under memory pressure Redis may evict job keys and queues silently lose jobs.`,
        );
        return Promise.resolve();
      });
    }

    try {
      const detail = await step('Persistence', async () => {
        try {
          const [save, aof] = await Promise.all([client.config('GET', 'save'), client.config('GET', 'appendonly')]);
          const saveVal = str((save as unknown[])[1]) ?? '';
          const aofVal = str((aof as unknown[])[1]);
          return describePersistence(saveVal === '' ? 'RDB snapshots off' : `RDB snapshots "${saveVal}"`, aofVal === 'yes');
        } catch {
          // CONFIG is often disabled or not permitted on managed Redis; INFO persistence still tells AOF.
          if (info.size === 0) return 'not readable (CONFIG and INFO not permitted)';
          return describePersistence(`RDB last save ${info.get('rdb_last_save_time') ?? '?'}`, info.get('aof_enabled') === '1');
        }
      });
      setDetail(checks, detail);
    } catch (e) {
      noteFailure(checks, e, this.endpoint);
    }

    try {
      const n = await step(`Database ${this.endpoint.db}`, () => client.dbsize());
      setDetail(checks, `${n.toLocaleString('en-US')} keys; discovery examines at most ${this.scanLimit.toLocaleString('en-US')} with SCAN`);
    } catch (e) {
      noteFailure(checks, e, this.endpoint);
    }
    return { ok: true, server, checks, error: null };
  }

  /**
   * Bounded discovery (SCAN, at most `config.scanLimit` keys) of BullMQ queues, streams and lists,
   * filtered by `options.pattern` on the queue name, sorted by name, at most `options.limit`
   * (default 10,000). A queue deleted during the call is left out. `lastDiscovery` tells whether the
   * scan was complete.
   * @throws QueuescopeError `HOST_UNREACHABLE`, `AUTH_FAILED`, `PERMISSION_DENIED`, `TLS_ERROR`, `CANCELLED`…
   */
  listQueues(options: ListQueuesOptions, signal?: AbortSignal): Promise<QueueSummary[]> {
    return this.run('Listing Redis queues', signal, async () => {
      const client = await this.client(signal);
      const found = await discoverKeys(client, this.scanLimit, signal);
      this.lastDiscovery = { keysExamined: found.keysExamined, scanLimit: this.scanLimit, complete: found.complete };
      let refs: RedisQueueRef[] = [
        ...found.bullmq.map((q) => ({ kind: 'bullmq' as const, prefix: q.prefix, name: q.name })),
        ...found.streams.map((key) => ({ kind: 'stream' as const, key })),
        ...found.lists.map((key) => ({ kind: 'list' as const, key })),
      ];
      if (options.pattern !== undefined && options.pattern !== '' && options.pattern !== '*') {
        const re = globToRegExp(options.pattern);
        refs = refs.filter((r) => re.test(displayName(r)));
      }
      refs.sort((a, b) => compare(displayName(a), displayName(b)) || compare(formatQueueId(a), formatQueueId(b)));
      refs = refs.slice(0, Math.max(0, options.limit ?? DEFAULT_LIST_LIMIT));
      const out: QueueSummary[] = [];
      for (let i = 0; i < refs.length; i += SUMMARY_CONCURRENCY) {
        throwIfAborted(signal);
        const batch = await Promise.all(
          refs.slice(i, i + SUMMARY_CONCURRENCY).map((r) =>
            this.summary(r, false, signal).catch((e: unknown) => {
              if (e instanceof QueuescopeError && e.code === 'QUEUE_NOT_FOUND') return null;
              throw e;
            }),
          ),
        );
        for (const s of batch) if (s) out.push(s);
      }
      return out;
    });
  }

  /**
   * Fresh summary of one queue (for BullMQ also the number of workers, via CLIENT LIST, null when not permitted).
   * @throws QueuescopeError `QUEUE_NOT_FOUND` when the key/queue is gone or the id is not a Redis queue id.
   */
  getQueue(queueId: string, signal?: AbortSignal): Promise<QueueSummary> {
    return this.run(`Reading queue ${queueId}`, signal, () => this.summary(parseQueueId(queueId), true, signal));
  }

  private summary(ref: RedisQueueRef, withWorkers: boolean, signal?: AbortSignal): Promise<QueueSummary> {
    switch (ref.kind) {
      case 'bullmq':
        return bullmqSummary(this, ref.prefix, ref.name, withWorkers, signal);
      case 'stream':
        return streamSummary(this, ref.key, signal);
      case 'list':
        return listSummary(this, ref.key, signal);
    }
  }

  /**
   * Non-destructive peek: streams (states `all`, `pending:<group>`), lists, BullMQ job states
   * (default `waiting`). See `peekStream`, `peekList`, `peekBullmq` for order and cursors.
   *
   * Read-ahead: once a caller pages with a cursor (sequential reading: "load more", export), the
   * page after the one returned is read in the background, so Redis works while the caller
   * converts and uses this one. It is used only by a peek with exactly that cursor and options
   * within {@link READ_AHEAD_TTL_MS}, after checking the queue still exists; otherwise it is dropped.
   * @throws QueuescopeError `QUEUE_NOT_FOUND`, `INVALID_INPUT` (cursor, state, limit), `CANCELLED`, connection errors.
   */
  peek(queueId: string, options: PeekOptions, signal?: AbortSignal): Promise<PeekPage> {
    return this.run(`Peeking ${queueId}`, signal, async () => {
      const ref = parseQueueId(queueId);
      const ahead = this.readAhead;
      const key = readAheadKey(queueId, options);
      if (ahead && options.cursor) {
        this.readAhead = null;
        if (ahead.key === key && Date.now() - ahead.at < READ_AHEAD_TTL_MS) {
          const page = await ahead.page;
          throwIfAborted(signal);
          if (page && (await this.stillExists(ref, signal))) {
            this.startReadAhead(queueId, ref, options, page.nextCursor);
            return page;
          }
        }
      }
      const page = await this.readPage(ref, options, signal);
      if (options.cursor) this.startReadAhead(queueId, ref, options, page.nextCursor);
      return page;
    });
  }

  private readPage(ref: RedisQueueRef, options: PeekOptions, signal?: AbortSignal): Promise<PeekPage> {
    switch (ref.kind) {
      case 'bullmq':
        return peekBullmq(this, ref.prefix, ref.name, options, signal);
      case 'stream':
        return peekStream(this, ref.key, options, signal);
      case 'list':
        return peekList(this, ref.key, options, signal);
    }
  }

  private startReadAhead(queueId: string, ref: RedisQueueRef, options: PeekOptions, cursor: string | null): void {
    if (cursor === null) return;
    const next = { ...options, cursor };
    // Errors are dropped: the caller's own peek then reads (and reports) normally.
    const page = this.readPage(ref, next).catch(() => null);
    this.readAhead = { key: readAheadKey(queueId, next), at: Date.now(), page };
  }

  /** True when the queue's key(s) still exist: a read-ahead page is not served for a queue deleted meanwhile. */
  private async stillExists(ref: RedisQueueRef, signal?: AbortSignal): Promise<boolean> {
    const client = await this.client(signal);
    const keys = ref.kind === 'bullmq' ? [`${ref.prefix}:${ref.name}:meta`, `${ref.prefix}:${ref.name}:id`] : [ref.key];
    return (await client.exists(...keys)) > 0;
  }

  /** Closes the BullMQ `Queue` objects and the connection. Idempotent; a later call reconnects. */
  async close(): Promise<void> {
    const ahead = this.readAhead;
    this.readAhead = null;
    if (ahead) await ahead.page;
    const pending = this.connecting;
    if (pending) await pending.catch(() => undefined);
    const qs = [...this.queues.values()];
    this.queues.clear();
    await Promise.allSettled(qs.map((q) => q.close()));
    const r = this.redis;
    this.redis = null;
    if (!r) return;
    try {
      if (r.status === 'ready') await r.quit();
      else r.disconnect();
    } catch {
      r.disconnect();
    }
  }
}

/** How long a read-ahead page may wait for the peek that asks for it (ms). */
const READ_AHEAD_TTL_MS = 2_000;

function readAheadKey(queueId: string, o: PeekOptions): string {
  return JSON.stringify([queueId, o.cursor ?? null, o.limit, o.direction ?? 'oldest', o.state ?? null, o.maxBodyBytes ?? null]);
}

function compare(a: string, b: string): number {
  return a.localeCompare(b);
}


function setDetail(checks: ConnectionCheck[], detail: string): void {
  const last = checks[checks.length - 1];
  if (last) last.detail = detail;
}

function noteFailure(checks: ConnectionCheck[], e: unknown, endpoint: RedisEndpoint): void {
  if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
  const last = checks[checks.length - 1];
  if (!last) return;
  last.ok = false;
  last.detail = mapRedisError(e, endpoint, last.name).message;
}

function parseInfo(text: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0 && !line.startsWith('#')) m.set(line.slice(0, i), line.slice(i + 1));
  }
  return m;
}

function describePersistence(rdb: string, aof: boolean): string {
  const lost = rdb === 'RDB snapshots off' && !aof;
  return `${rdb}, AOF ${aof ? 'on' : 'off'}${lost ? ' — data (including queued jobs) is lost when Redis restarts' : ''}`;
}
