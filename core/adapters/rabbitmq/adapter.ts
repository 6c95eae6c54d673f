import { connect as netConnect } from 'node:net';
import { connect as amqpConnect, type Channel, type ChannelModel } from 'amqplib';
import {
  QueuescopeError,
  toErrorInfo,
  type ConnectionCheck,
  type ConnectionTestResult,
  type ErrorCode,
  type PeekOptions,
  type PeekPage,
  type QueueKind,
  type QueueSummary,
  type RabbitmqConnectionConfig,
} from '../../../shared/domain';
import type { BrokerAdapter, ListQueuesOptions } from '../types';
import { DEFAULT_MAX_BODY_BYTES } from './body';
import { cancelledError, channelError, messageOf, networkCause, replyCode, throwIfAborted } from './errors';
import { ManagementClient, ManagementNetworkError, readAllPages, type ManagementResponse } from './management';
import { parseArray, parseBinding, parseExchange, parseOverview, parsePage, parseQueue, STATS_DISABLED_NOTE } from './parse';
import { policyDeliveryLimit, readPolicyLists, withPolicyDeadLetter, withPolicyDeliveryLimit } from './policy-limit';
import { STREAM_CURSOR_PREFIX, holdAndRelease, parseStreamCursor, readStream, toQueueMessage } from './peek';
import { decodeQueueId, encodeQueueId } from './queue-id';
import { CONNECT_TIMEOUT_MS, resolveRabbitmqSettings, type RabbitmqSettings } from './settings';
import {
  MAX_PEEK_WINDOW,
  buildTopology,
  capabilitiesFor,
  deadLetterFate,
  effectiveSettings,
  looksLikeDeadLetterQueue,
  queueConfig,
  queueKind,
  resolveDeadLetterTargets,
  type EffectiveSettings,
  type RawBinding,
  type RawExchange,
  type RawQueue,
  type Topology,
} from './topology';
import { abortable } from '../../lib/abort';
import type { RedriveMover } from '../redrive-types';
import { RabbitmqRedriveMover } from './redrive';
import { createRabbitmqTuning } from './tuning';
import { createRabbitmqAuditCollector } from './audit';

/**
 * At most this many queues of one listing (or dead-letter queues of one audit, with statistics off)
 * get their counts from AMQP passive declares (see amqpCounts): one declare per queue.
 */
export const AMQP_COUNTS_CAP = 2000;

/** Options of {@link createRabbitmqAdapter} besides the connection config. */
export interface RabbitmqAdapterOptions {
  /**
   * Overrides {@link AMQP_COUNTS_CAP} (2,000), the most queues whose counts are read over AMQP per
   * listing or audit — for tests of the past-the-cap path without thousands of queues. Integer ≥ 0.
   */
  amqpCountsCap?: number;
}
/** Columns requested from `GET /api/queues/<vhost>` (keeps a 1,000-queue listing small and fast). */
const LIST_COLUMNS = 'name,type,messages_ready,messages_unacknowledged,consumers,arguments,effective_policy_definition,policy,durable,auto_delete,exclusive,messages,state';
/** Columns needed only to resolve dead-letter sources of queues outside a filtered listing. */
const TOPOLOGY_COLUMNS = 'name,type,arguments,effective_policy_definition,policy';
/** The management API's largest page. */
const PAGE_SIZE = 500;
/** Pages fetched at once (the management API is CPU-bound on the broker; more does not help on small nodes). */
const PAGE_CONCURRENCY = 2;
/** Timeout (ms) for data requests (listing pages, exchanges, bindings) — larger than a check's. */
const DATA_TIMEOUT_MS = 30_000;
const DEFAULT_LIST_LIMIT = 10_000;
/**
 * Cap on queues read to resolve dead-letter sources outside a filtered listing (and for getQueue).
 * Every management API page costs a scan of the whole vhost on the broker, so reading far more
 * would be slow; beyond the cap, `deadLetterSources` may miss sources.
 */
const TOPOLOGY_QUEUE_CAP = 20_000;

const collator = new Intl.Collator();

/** Glob (`*` = any run of characters) → anchored RegExp source, every other character literal. */
function globToRegex(glob: string): string {
  return `^${glob
    .split('*')
    .map((p) => p.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&'))
    .join('.*')}$`;
}

function validateListOptions(options: ListQueuesOptions): { limit: number; pattern: RegExp | null; serverRegex: string | null } {
  const limit = options.limit ?? DEFAULT_LIST_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1_000_000) throw new QueuescopeError('INVALID_INPUT', `limit must be a whole number from 1 to 1,000,000, got ${String(limit)}.`);
  const pattern = options.pattern;
  if (pattern === undefined || pattern === '' || pattern === '*') return { limit, pattern: null, serverRegex: null };
  if (typeof pattern !== 'string' || pattern.length > 1000) throw new QueuescopeError('INVALID_INPUT', 'pattern must be a text of at most 1,000 characters (use * as a wildcard).');
  const source = globToRegex(pattern);
  // Erlang's re treats non-ASCII bytes differently; filter those patterns on our side only.
  return { limit, pattern: new RegExp(source, 's'), serverRegex: /^[\x20-\x7e]*$/.test(pattern) ? source : null };
}

function validatePeekOptions(options: PeekOptions): { limit: number; maxBodyBytes: number } {
  const { limit } = options;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new QueuescopeError('INVALID_INPUT', `limit must be a whole number from 1 to 1,000, got ${String(limit)}.`);
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 0) throw new QueuescopeError('INVALID_INPUT', `maxBodyBytes must be a whole number of bytes ≥ 0, got ${String(maxBodyBytes)}.`);
  const direction: unknown = options.direction;
  if (direction !== undefined && direction !== 'oldest' && direction !== 'newest') {
    throw new QueuescopeError('INVALID_INPUT', `direction must be "oldest" or "newest", got ${(JSON.stringify(direction) as string | undefined ?? 'undefined').slice(0, 60)}.`);
  }
  if (options.state !== undefined && options.state !== 'ready') {
    throw new QueuescopeError('INVALID_INPUT', `RabbitMQ queues have one peekable state ("ready"), got state ${JSON.stringify(options.state).slice(0, 60)}.`);
  }
  return { limit: Math.min(limit, MAX_PEEK_WINDOW), maxBodyBytes };
}


/** Opens a TCP connection and closes it at once. Rejects with the socket error (or a timeout error). */
function tcpProbe(host: string, port: number, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const sock = netConnect({ host, port });
    const finish = (e?: Error): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      sock.destroy();
      if (e) reject(e);
      else resolve();
    };
    const onAbort = (): void => finish(cancelledError());
    const timer = setTimeout(() => finish(Object.assign(new Error(`connect ETIMEDOUT ${host}:${port}`), { code: 'ETIMEDOUT' })), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    sock.once('connect', () => finish());
    sock.once('error', (e) => finish(e));
  });
}

/** The RabbitMQ implementation of {@link BrokerAdapter}. Create with {@link createRabbitmqAdapter}. */
export class RabbitmqAdapter implements BrokerAdapter {
  readonly broker = 'rabbitmq' as const;
  private readonly s: RabbitmqSettings;
  private readonly mgmt: ManagementClient;
  readonly tuning = createRabbitmqTuning(() => this.mgmt);
  readonly audit = createRabbitmqAuditCollector(
    () => this.s,
    (get) => this.sameBroker(get),
    { read: (names, signal) => this.amqpCounts(names, signal), cap: () => this.countsCap },
  );
  /** {@link AMQP_COUNTS_CAP} unless overridden (tests). */
  private readonly countsCap: number;
  private conn: Promise<ChannelModel> | null = null;

  /** DLQ redrive (issue 4): see `redrive.ts`. */
  readonly redrive: RedriveMover;

  constructor(config: RabbitmqConnectionConfig, options: RabbitmqAdapterOptions = {}) {
    this.s = resolveRabbitmqSettings(config);
    const cap = options.amqpCountsCap ?? AMQP_COUNTS_CAP;
    if (!Number.isInteger(cap) || cap < 0) throw new QueuescopeError('INVALID_INPUT', `amqpCountsCap must be an integer ≥ 0, not ${String(cap)}.`);
    this.countsCap = cap;
    this.mgmt = new ManagementClient(this.s);
    this.redrive = new RabbitmqRedriveMover({
      vhost: this.s.vhost,
      username: this.s.username,
      mgmt: this.mgmt,
      openConnection: async (signal) => {
        const p = this.openConnection(signal);
        try {
          return await abortable(p, signal);
        } catch (e) {
          // Cancelled while connecting: close the connection once it is open.
          void p.then((c) => c.close()).catch(() => undefined);
          throw e;
        }
      },
      queueRef: (id) => this.queueRef(id),
      queueInfo: (name, signal) => this.peekInfo(name, signal),
      mgmtStatusError: (res, path) => this.mgmtStatusError(res, path),
      readyCount: async (name, signal) => (await this.checkQueue(name, signal)).messageCount,
      consumerCount: async (name, signal) => (await this.checkQueue(name, signal)).consumerCount,
      statsDisabled: (signal) => this.statsDisabled(signal),
    });
    this.mgmt.setGuard((get) => this.sameBroker(get));
  }

  /**
   * Proves the management API belongs to the broker the AMQP connection reaches: the
   * `cluster_name` the broker sends in AMQP `connection.start` must be the `cluster_name` of
   * `GET /api/overview`. A management URL derived for another port (a second broker on the same
   * host: the default `http://host:15672` is the first one's) would otherwise list, count and
   * shovel the other broker's queues. Resolves when they match or cannot be compared (AMQP or the
   * overview unreachable: the operation then fails on its own).
   * @throws QueuescopeError MANAGEMENT_UNAVAILABLE when both answer with different cluster names.
   */
  private async sameBroker(get: (path: string) => Promise<ManagementResponse>): Promise<void> {
    let amqpCluster: string | null;
    try {
      const c = await this.connection();
      const v: unknown = c.connection.serverProperties.cluster_name;
      amqpCluster = typeof v === 'string' ? v : Buffer.isBuffer(v) ? v.toString('utf8') : null;
    } catch {
      return;
    }
    const res = await get('/api/overview').catch(() => null);
    const mgmtCluster = res?.status === 200 ? (parseOverview(res.body)?.cluster ?? null) : null;
    if (amqpCluster !== null && mgmtCluster !== null && amqpCluster !== mgmtCluster) throw managementMismatch(this.mgmt.base, mgmtCluster, `${this.s.host}:${this.s.port}`, amqpCluster);
  }

  /** Cached answer of {@link statsDisabled} (a failed read is not cached). */
  private statsOff: Promise<boolean> | null = null;

  /**
   * True when the broker's management statistics are off (`GET /api/overview` → `disable_stats`,
   * i.e. `management_agent.disable_metrics_collector = true`): `/api/queues` then has no counts, no
   * consumers and no `message_stats`. Read once per adapter; false when the overview cannot be read
   * (the callers then see the counts, or their absence, themselves).
   */
  async statsDisabled(signal?: AbortSignal): Promise<boolean> {
    // One shared request, not tied to the first caller's signal (each caller waits with its own).
    const p = (this.statsOff ??= this.mgmt.get('/api/overview').then((res) => (res.status === 200 ? (parseOverview(res.body)?.statsDisabled ?? false) : Promise.reject(new Error(`HTTP ${res.status}`)))));
    try {
      return await abortable(p, signal);
    } catch {
      throwIfAborted(signal);
      if (this.statsOff === p) this.statsOff = null;
      return false;
    }
  }

  /**
   * Ready and consumer counts from AMQP `queue.declare` (passive) for the queues in `names`, one
   * channel reused while it lives (a queue deleted meanwhile, or another connection's exclusive
   * queue, closes it: the next name gets a new one, that queue gets no entry). For listings whose
   * management entries carry no counts: a brand-new queue (statistics lag ~5 s) or a broker with
   * statistics off, where this is the only source.
   */
  private async amqpCounts(names: readonly string[], signal?: AbortSignal): Promise<Map<string, { messageCount: number; consumerCount: number }>> {
    const out = new Map<string, { messageCount: number; consumerCount: number }>();
    let ch: Channel | null = null;
    try {
      for (const name of names) {
        throwIfAborted(signal);
        ch ??= await this.openChannel(signal);
        try {
          const r = await ch.checkQueue(name);
          out.set(name, { messageCount: r.messageCount, consumerCount: r.consumerCount });
        } catch {
          // The broker closed the channel (404/405): leave this queue without counts, go on.
          const dead: Channel = ch;
          ch = null;
          await dead.close().catch(() => undefined);
        }
      }
    } finally {
      await ch?.close().catch(() => undefined);
    }
    return out;
  }

  private get where(): string {
    return `RabbitMQ at ${this.s.host}:${this.s.port}`;
  }

  // ---------------------------------------------------------------- AMQP connection

  /** Opens a new AMQP connection, mapping failures to causes (vhost refusals diagnosed through the management API). */
  private async openConnection(signal?: AbortSignal): Promise<ChannelModel> {
    let conn: ChannelModel;
    try {
      conn = await amqpConnect(this.s.connect, this.s.socket);
    } catch (e) {
      throw await this.connectFailure(e, signal);
    }
    // A connection-level error (e.g. 540 on a bad command) must not crash the process: amqplib
    // emits 'error' and then 'close', and we reconnect on the next call.
    conn.on('error', () => undefined);
    return conn;
  }

  /** The shared connection, opened on first use and again after it closed. */
  private connection(signal?: AbortSignal): Promise<ChannelModel> {
    throwIfAborted(signal);
    if (this.conn === null) {
      const p = this.openConnection();
      this.conn = p;
      p.then(
        (c) => {
          c.on('close', () => {
            if (this.conn === p) this.conn = null;
          });
        },
        () => {
          if (this.conn === p) this.conn = null;
        },
      );
    }
    return abortable(this.conn, signal);
  }

  /** A new channel (errors swallowed into the operation's promise) on a live connection. */
  private async openChannel(signal?: AbortSignal): Promise<Channel> {
    let conn = await this.connection(signal);
    let ch: Channel;
    try {
      ch = await conn.createChannel();
    } catch {
      // The shared connection died since its last use: reconnect once.
      if (this.conn !== null) {
        const stale = this.conn;
        this.conn = null;
        void stale.then((c) => c.close()).catch(() => undefined);
      }
      conn = await this.connection(signal);
      try {
        ch = await conn.createChannel();
      } catch (e) {
        throw new QueuescopeError('HOST_UNREACHABLE', `The connection to ${this.where} was lost and could not be reopened: ${messageOf(e)}`);
      }
    }
    ch.on('error', () => undefined);
    return ch;
  }

  /** Runs `fn` on a fresh channel of the shared connection, always closing the channel. */
  private async withChannel<T>(signal: AbortSignal | undefined, fn: (ch: Channel) => Promise<T>): Promise<T> {
    const ch = await this.openChannel(signal);
    try {
      return await fn(ch);
    } finally {
      await ch.close().catch(() => undefined);
    }
  }

  private async checkQueue(name: string, signal?: AbortSignal): Promise<{ messageCount: number; consumerCount: number }> {
    return this.withChannel(signal, async (ch) => {
      try {
        const r = await ch.checkQueue(name);
        return { messageCount: r.messageCount, consumerCount: r.consumerCount };
      } catch (e) {
        throw channelError(e, name, this.s.vhost);
      }
    });
  }

  /** Maps an amqplib connect failure to a QueuescopeError with the cause in words. */
  private async connectFailure(e: unknown, signal?: AbortSignal): Promise<QueuescopeError> {
    const msg = messageOf(e);
    const net = networkCause(e, this.where);
    if (net) return new QueuescopeError(net.code, net.message, { host: this.s.host, port: this.s.port, stage: net.code === 'TLS_ERROR' ? 'tls' : 'tcp' });
    if (/ACCESS[-_]REFUSED|\b403\b/.test(msg) && /Handshake terminated/i.test(msg)) {
      return new QueuescopeError('AUTH_FAILED', `RabbitMQ refused the login for user '${this.s.username}': wrong user name or password (or the user may not log in from this host).`, { user: this.s.username, stage: 'login' });
    }
    if (/SASL mechanism/i.test(msg)) return new QueuescopeError('AUTH_FAILED', `RabbitMQ does not offer the PLAIN login mechanism: ${msg}`, { stage: 'login' });
    if (/Handshake terminated by server/i.test(msg)) {
      return new QueuescopeError(replyCode(e) === 530 ? 'PERMISSION_DENIED' : 'BROKER_ERROR', `RabbitMQ closed the connection during login: ${msg}`, { stage: 'login' });
    }
    if (/Expected ConnectionOpenOk; got <ConnectionClose/.test(msg)) return this.diagnoseVhostRefusal(signal);
    if (/Socket closed abruptly during opening handshake/i.test(msg)) {
      if (!this.s.tls && this.s.port === 5671) return new QueuescopeError('TLS_ERROR', `${this.where} closed the connection during the AMQP handshake: port 5671 is the TLS port, use amqps://.`, { stage: 'tls' });
      return new QueuescopeError('BROKER_ERROR', `${this.where} closed the connection during the AMQP handshake: it may not be an AMQP 0-9-1 server${this.s.tls ? '' : ', or it expects TLS (amqps://)'}.`, { stage: 'handshake' });
    }
    return new QueuescopeError('BROKER_ERROR', `Could not connect to ${this.where}: ${msg || 'unknown error'}`, { stage: 'handshake' });
  }

  /**
   * The broker accepted the login but refused `connection.open` for the vhost (reply 530
   * NOT_ALLOWED, whose text amqplib drops). Tells "vhost does not exist" from "no permission on
   * it" through the management API: `GET /api/queues/<vhost>` answers 404 for an unknown vhost and
   * 401 "not authorised to access virtual host" for one the user may not use.
   */
  private async diagnoseVhostRefusal(signal?: AbortSignal): Promise<QueuescopeError> {
    const v = this.s.vhost;
    const u = this.s.username;
    const details = { vhost: v, user: u, stage: 'vhost' };
    let res: ManagementResponse | null;
    try {
      res = await this.mgmt.getUnguarded(`/api/queues/${encodeURIComponent(v)}?page=1&page_size=1&columns=name`, signal);
    } catch {
      res = null;
    }
    if (res?.status === 404) {
      const overview = await this.mgmt.getUnguarded('/api/overview', signal).catch(() => null);
      if (overview?.status === 200) return new QueuescopeError('UNKNOWN_VHOST', `Virtual host '${v}' does not exist on this broker (AMQP login as '${u}' worked).`, details);
    }
    if (res?.status === 401 && /virtual host/i.test(res.reason ?? '')) {
      return new QueuescopeError('PERMISSION_DENIED', `User '${u}' has no permissions on virtual host '${v}': grant them with rabbitmqctl set_permissions -p '${v}' '${u}' '.*' '.*' '.*'.`, details);
    }
    if (res?.status === 200) {
      // An administrator sees every vhost's queues through the API, permissions or not: ask for the user's
      // permissions on it (404 = none; a non-administrator gets 401 here and the answer stays open).
      const perm = await this.mgmt.getUnguarded(`/api/permissions/${encodeURIComponent(v)}/${encodeURIComponent(u)}`, signal).catch(() => null);
      if (perm?.status === 404) {
        return new QueuescopeError('PERMISSION_DENIED', `User '${u}' has no permissions on virtual host '${v}': grant them with rabbitmqctl set_permissions -p '${v}' '${u}' '.*' '.*' '.*'.`, details);
      }
      if (perm?.status === 200) {
        return new QueuescopeError('PERMISSION_DENIED', `RabbitMQ refused to open virtual host '${v}' for user '${u}' although it exists and the user has permissions on it: a connection limit on the vhost or user may be reached.`, details);
      }
      return new QueuescopeError('PERMISSION_DENIED', `RabbitMQ refused to open virtual host '${v}' for user '${u}' although it exists: the user may have no permissions on it (the management API could not tell), or a connection limit on the vhost or user may be reached.`, details);
    }
    return new QueuescopeError('UNKNOWN_VHOST', `RabbitMQ refused to open virtual host '${v}' for user '${u}': the vhost does not exist, or the user has no permissions on it (the management API could not tell which).`, details);
  }

  // ---------------------------------------------------------------- management API

  /**
   * GETs a management API path and returns its JSON, mapping failures:
   * no answer → `MANAGEMENT_UNAVAILABLE` when AMQP itself answers, else `HOST_UNREACHABLE`;
   * 401/403 → `AUTH_FAILED` / `PERMISSION_DENIED` with the reason; 404 → `notFound()` or
   * `MANAGEMENT_UNAVAILABLE`.
   */
  private async mgmtJson(path: string, signal: AbortSignal | undefined, notFound?: () => Promise<QueuescopeError>, timeoutMs = DATA_TIMEOUT_MS): Promise<unknown> {
    let res: ManagementResponse;
    try {
      res = await this.mgmt.get(path, signal, timeoutMs);
    } catch (e) {
      if (e instanceof ManagementNetworkError && e.code === 'HOST_UNREACHABLE') throw await this.managementUnreachable(e, signal);
      throw e;
    }
    if (res.status >= 200 && res.status < 300) {
      if (res.body === null) throw new QueuescopeError('MANAGEMENT_UNAVAILABLE', `${this.mgmt.base}${path.split('?')[0] ?? ''} did not return JSON: this is not the RabbitMQ management API.`, { managementUrl: this.mgmt.base });
      return res.body;
    }
    if (res.status === 404 && notFound) throw await notFound();
    throw this.mgmtStatusError(res, path);
  }

  private mgmtStatusError(res: ManagementResponse, path: string): QueuescopeError {
    const u = this.s.managementUser;
    const details = { managementUrl: this.mgmt.base, status: res.status, reason: res.reason };
    const sameLogin = this.s.managementUser === this.s.username && this.s.managementPassword === this.s.password;
    if (res.status === 401) {
      if (/virtual host/i.test(res.reason ?? '')) return new QueuescopeError('PERMISSION_DENIED', `User '${u}' may not access virtual host '${this.s.vhost}' through the management API (no permissions on it).`, details);
      if (/not management user/i.test(res.reason ?? '')) {
        return new QueuescopeError('AUTH_FAILED', `The management API refused user '${u}': the user lacks the management/monitoring tag (add it with rabbitmqctl set_user_tags '${u}' monitoring).`, details);
      }
      if (/not administrator/i.test(res.reason ?? '')) return new QueuescopeError('PERMISSION_DENIED', `The management API requires an administrator for ${path.split('?')[0] ?? path}.`, details);
      // The login worked, the object is off limits for this user's tags (e.g. a monitoring user
      // creating a shovel parameter: "User not authorised to access object").
      if (/not[ _]authori[sz]ed/i.test(res.reason ?? '')) {
        return new QueuescopeError('PERMISSION_DENIED', `The management API refused ${path.split('?')[0] ?? path} for user '${u}' (${res.reason ?? 'not authorised'}): the login works, but the user's tags do not allow this — shovels and policies need the policymaker (or administrator) tag.`, details);
      }
      return new QueuescopeError('AUTH_FAILED', `The management API rejected the login for user '${u}'${sameLogin ? '' : ' (the management URL carries its own login)'}: wrong user name or password.`, details);
    }
    if (res.status === 403) return new QueuescopeError('PERMISSION_DENIED', `The management API refused ${path.split('?')[0] ?? path} for user '${u}': ${res.reason ?? 'forbidden'}.`, details);
    if (res.status === 404) {
      return new QueuescopeError('MANAGEMENT_UNAVAILABLE', `${this.mgmt.base} answers but has no ${path.split('?')[0] ?? path}: it is not the RabbitMQ management API, or the management URL's path is wrong.`, details);
    }
    if (res.status === 502 || res.status === 503) return new QueuescopeError('MANAGEMENT_UNAVAILABLE', `The management API at ${this.mgmt.base} is unavailable (HTTP ${res.status}).`, details);
    return new QueuescopeError('BROKER_ERROR', `The management API answered HTTP ${res.status}${res.reason ? ` (${res.reason})` : ''} for ${path.split('?')[0] ?? path}.`, details);
  }

  /** No answer from the management API: is the whole host down, or only the management plugin? */
  private async managementUnreachable(e: QueuescopeError, signal?: AbortSignal): Promise<QueuescopeError> {
    try {
      await tcpProbe(this.s.host, this.s.port, CONNECT_TIMEOUT_MS, signal);
    } catch (probe) {
      if (probe instanceof QueuescopeError) return probe;
      const net = networkCause(probe, this.where);
      return new QueuescopeError('HOST_UNREACHABLE', net?.message ?? `${this.where} is not reachable.`, { host: this.s.host, port: this.s.port });
    }
    return new QueuescopeError(
      'MANAGEMENT_UNAVAILABLE',
      `${e.message} RabbitMQ answers on ${this.s.host}:${this.s.port}, so the management plugin is probably not enabled (enable it with \`rabbitmq-plugins enable rabbitmq_management\`) or listens elsewhere (set the management URL).`,
      { managementUrl: this.mgmt.base },
    );
  }

  private vhostPath(): string {
    return encodeURIComponent(this.s.vhost);
  }

  private unknownVhost = async (): Promise<QueuescopeError> => {
    const overview = await this.mgmt.get('/api/overview').catch(() => null);
    if (overview?.status === 200) return new QueuescopeError('UNKNOWN_VHOST', `Virtual host '${this.s.vhost}' does not exist on this broker.`, { vhost: this.s.vhost });
    return new QueuescopeError('MANAGEMENT_UNAVAILABLE', `${this.mgmt.base} answers but has no /api/queues: it is not the RabbitMQ management API, or the management URL's path is wrong.`, { managementUrl: this.mgmt.base });
  };

  /**
   * Pages through `GET /api/queues/<vhost>` (500 per page, 2 pages at a time; the API sorts by vhost and name by default) until `limit` items;
   * a listing that shrinks while it is paged is read again from page 1 ({@link readAllPages}); items are deduplicated by name.
   */
  private async fetchQueues(columns: string, limit: number, serverRegex: string | null, keep: (q: RawQueue) => boolean, signal?: AbortSignal): Promise<RawQueue[]> {
    const base = `/api/queues/${this.vhostPath()}?page_size=${PAGE_SIZE}&columns=${columns}${serverRegex === null ? '' : `&name=${encodeURIComponent(serverRegex)}&use_regex=true`}`;
    const out: RawQueue[] = [];
    const seen = new Set<string>();
    const take = (body: unknown): number => {
      const page = parsePage(body);
      if (!page) throw new QueuescopeError('MANAGEMENT_UNAVAILABLE', `${this.mgmt.base}/api/queues returned an unexpected answer: this is not the RabbitMQ management API.`);
      for (const item of page.items) {
        const q = parseQueue(item);
        if (q && !seen.has(q.name) && keep(q) && out.length < limit) {
          seen.add(q.name);
          out.push(q);
        }
      }
      return page.pageCount;
    };
    await readAllPages(
      (page) => this.mgmtJson(`${base}&page=${page}`, signal, this.unknownVhost),
      take,
      () => out.length >= limit,
      () => {
        out.length = 0;
        seen.clear();
      },
      PAGE_CONCURRENCY,
      signal,
    );
    return out;
  }

  private async fetchExchangesAndBindings(signal?: AbortSignal): Promise<{ exchanges: RawExchange[]; bindings: RawBinding[] }> {
    const v = this.vhostPath();
    const [ex, bi] = await Promise.all([
      this.mgmtJson(`/api/exchanges/${v}?columns=name,type,arguments`, signal, this.unknownVhost),
      this.mgmtJson(`/api/bindings/${v}`, signal, this.unknownVhost),
    ]);
    return {
      exchanges: (parseArray(ex) ?? []).map(parseExchange).filter((x): x is RawExchange => x !== null),
      bindings: (parseArray(bi) ?? []).map(parseBinding).filter((x): x is RawBinding => x !== null),
    };
  }

  // ---------------------------------------------------------------- summaries

  /**
   * `policyLimit`: the delivery limit of the vhost's policy definitions (getQueue, listQueues), lowering a quorum queue's record limit.
   * `fresh`: the passive declare's current ready and consumer counts (getQueue): they replace the
   * management API's sampled ones, and `counts.total` (its ready + unacknowledged) is raised to at
   * least the current ready count.
   */
  private summary(q: RawQueue, topo: Topology, sources: Map<string, string[]>, fresh?: { messageCount: number; consumerCount: number }, statsOff = false, policyLimit: number | null = null): QueueSummary {
    const kind = queueKind(q.type);
    const settings = kind === 'rabbitmq-quorum' ? withPolicyDeliveryLimit(effectiveSettings(q), policyLimit) : effectiveSettings(q);
    const id = encodeQueueId({ vhost: this.s.vhost, name: q.name });
    const isStream = kind === 'rabbitmq-stream';
    const depth = isStream ? q.messages : (fresh?.messageCount ?? q.messagesReady);
    const counts: Record<string, number> = {};
    if (depth !== null) counts[isStream ? 'messages' : 'ready'] = depth;
    if (!isStream && q.messagesUnacknowledged !== null) counts.unacknowledged = q.messagesUnacknowledged;
    // The management API's total (ready + unacknowledged) is a statistics sample, up to
    // collect_statistics_interval (5 s by default) old, more on a busy broker; the ready count of a
    // passive declare (getQueue) is current. A total below it is stale: a DLQ watch comparing it
    // saw its second and third dead letters a sample late. Never more than both readings said.
    if (!isStream && q.messages !== null) counts.total = fresh !== undefined ? Math.max(q.messages, fresh.messageCount) : q.messages;
    const deadLetterSources = sources.get(q.name) ?? [];
    return {
      id,
      name: q.name,
      broker: 'rabbitmq',
      kind,
      depth,
      inFlight: isStream ? null : q.messagesUnacknowledged,
      delayed: null,
      consumers: fresh?.consumerCount ?? q.consumers,
      counts,
      deadLetterTargets: resolveDeadLetterTargets(q, topo),
      deadLetterSources,
      isDeadLetterQueue: deadLetterSources.length > 0 || looksLikeDeadLetterQueue(q.name),
      capabilities: capabilitiesFor(kind, settings),
      config: statsOff ? { ...queueConfig(q, settings), managementStatistics: `off: ${STATS_DISABLED_NOTE}; ready and consumer counts here come from AMQP, unacknowledged counts are not known` } : queueConfig(q, settings),
    };
  }

  /** For every queue of the vhost, the ids of the queues that dead-letter into it. */
  private sourcesIndex(topo: Topology): Map<string, string[]> {
    const m = new Map<string, string[]>();
    for (const q of topo.queues.values()) {
      const targets = resolveDeadLetterTargets(q, topo);
      for (const t of targets) {
        if (t.queueName === null || t.queueName === q.name) continue;
        const id = encodeQueueId({ vhost: this.s.vhost, name: q.name });
        const l = m.get(t.queueName);
        if (l) {
          if (!l.includes(id)) l.push(id);
        } else m.set(t.queueName, [id]);
      }
    }
    return m;
  }

  private queueRef(queueId: string): string {
    const ref = decodeQueueId(queueId);
    if (ref.vhost !== this.s.vhost) {
      throw new QueuescopeError('INVALID_INPUT', `Queue id ${JSON.stringify(queueId.slice(0, 120))} belongs to vhost '${ref.vhost}', but this connection is to vhost '${this.s.vhost}'.`);
    }
    return ref.name;
  }

  // ---------------------------------------------------------------- BrokerAdapter

  /**
   * Runs, in order: TCP connect to the AMQP port; AMQP login (TLS for amqps://); opening the vhost;
   * the management API `/api/overview` (reachability, login, server version); listing the vhost's
   * queues through the management API. Stops at the first failure, whose cause is `error`:
   * HOST_UNREACHABLE, TLS_ERROR, AUTH_FAILED (also: a user without the management/monitoring tag),
   * UNKNOWN_VHOST, PERMISSION_DENIED, MANAGEMENT_UNAVAILABLE. Each check has a 5 s timeout.
   * Never throws for broker-side failures; throws `CANCELLED` when `signal` aborts.
   */
  async testConnection(signal?: AbortSignal): Promise<ConnectionTestResult> {
    throwIfAborted(signal);
    const checks: ConnectionCheck[] = [];
    let server: string | null = null;
    const s = this.s;
    const fail = (name: string, t0: number, e: unknown): ConnectionTestResult => {
      if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
      const info = toErrorInfo(e);
      checks.push({ name, ok: false, detail: info.message, ms: Math.round(performance.now() - t0) });
      return { ok: false, server, checks, error: info };
    };
    const pass = (name: string, t0: number, detail: string): void => {
      checks.push({ name, ok: true, detail, ms: Math.round(performance.now() - t0) });
    };

    // 1. TCP
    let t0 = performance.now();
    const tcpName = `TCP connect ${s.host}:${s.port}`;
    try {
      await tcpProbe(s.host, s.port, CONNECT_TIMEOUT_MS, signal);
      pass(tcpName, t0, 'port open');
    } catch (e) {
      if (e instanceof QueuescopeError) return fail(tcpName, t0, e);
      const net = networkCause(e, this.where);
      return fail(tcpName, t0, new QueuescopeError(net?.code ?? 'HOST_UNREACHABLE', net?.message ?? `${this.where} is not reachable: ${messageOf(e)}`));
    }

    // 2. AMQP login + vhost (one handshake: login is start-ok, the vhost is connection.open)
    t0 = performance.now();
    const loginName = `AMQP login as ${s.username}${s.tls ? ' (TLS)' : ''}`;
    const vhostName = `vhost '${s.vhost}' opened`;
    let conn: ChannelModel | null = null;
    let amqpCluster: string | null;
    try {
      conn = await abortable(this.openConnection(signal), signal);
      const sp = conn.connection.serverProperties;
      server = `${sp.product} ${sp.version}`;
      const cn: unknown = sp.cluster_name;
      amqpCluster = typeof cn === 'string' ? cn : Buffer.isBuffer(cn) ? cn.toString('utf8') : null;
      pass(loginName, t0, `${server}, login accepted`);
      pass(vhostName, t0, `virtual host '${s.vhost}' is open for '${s.username}'`);
    } catch (e) {
      const stage = e instanceof QueuescopeError ? e.details?.stage : undefined;
      if (stage === 'vhost') {
        pass(loginName, t0, 'login accepted');
        return fail(vhostName, t0, e);
      }
      return fail(loginName, t0, e);
    } finally {
      await conn?.close().catch(() => undefined);
    }

    // 3. Management API reachable, login, version
    t0 = performance.now();
    const mgmtName = `Management API ${this.mgmt.base}/api/overview`;
    const mgmtLogin = `Management API login as ${s.managementUser}`;
    let res: ManagementResponse;
    try {
      res = await this.mgmt.getUnguarded('/api/overview', signal);
    } catch (e) {
      if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
      const qe = e as QueuescopeError;
      const code: ErrorCode = qe.code === 'TLS_ERROR' ? 'TLS_ERROR' : 'MANAGEMENT_UNAVAILABLE';
      return fail(
        mgmtName,
        t0,
        new QueuescopeError(code, `${qe.message}${code === 'MANAGEMENT_UNAVAILABLE' ? ' AMQP works, so the management plugin is probably not enabled: enable it with `rabbitmq-plugins enable rabbitmq_management` (or set the management URL).' : ''}`, {
          managementUrl: this.mgmt.base,
        }),
      );
    }
    if (res.status === 404 || (res.status === 200 && parseOverview(res.body) === null)) {
      return fail(mgmtName, t0, new QueuescopeError('MANAGEMENT_UNAVAILABLE', `${this.mgmt.base} answers but not as the RabbitMQ management API (/api/overview: HTTP ${res.status}): check the management URL, or enable the plugin with \`rabbitmq-plugins enable rabbitmq_management\`.`, { managementUrl: this.mgmt.base }));
    }
    pass(mgmtName, t0, `HTTP ${res.status}`);
    if (res.status === 401) {
      const sameLogin = s.managementUser === s.username && s.managementPassword === s.password;
      const lacksTag = sameLogin || /not management user/i.test(res.reason ?? '');
      return fail(
        mgmtLogin,
        t0,
        new QueuescopeError(
          'AUTH_FAILED',
          lacksTag
            ? `The management API refused user '${s.managementUser}' although AMQP login worked: the user lacks the management/monitoring tag (add it with rabbitmqctl set_user_tags '${s.managementUser}' monitoring).`
            : `The management API rejected the login for user '${s.managementUser}': wrong user name or password.`,
          { managementUrl: this.mgmt.base, reason: res.reason },
        ),
      );
    }
    if (res.status !== 200) return fail(mgmtLogin, t0, this.mgmtStatusError(res, '/api/overview'));
    const ov = parseOverview(res.body);
    if (amqpCluster !== null && ov?.cluster != null && ov.cluster !== amqpCluster) return fail(mgmtLogin, t0, managementMismatch(this.mgmt.base, ov.cluster, `${s.host}:${s.port}`, amqpCluster));
    if (ov?.version) server = `${ov.product} ${ov.version}`;
    pass(
      mgmtLogin,
      t0,
      [server, ov?.erlang ? `Erlang ${ov.erlang}` : null, ov?.cluster ? `cluster '${ov.cluster}'` : null, ov?.statsDisabled === true ? `note: ${STATS_DISABLED_NOTE}; Queuescope reads counts over AMQP instead and moves DLQs client-side (no shovel)` : null].filter(Boolean).join(', '),
    );

    // 4. Listing works for this vhost
    t0 = performance.now();
    const listName = `Management API lists queues of vhost '${s.vhost}'`;
    try {
      const body = await this.mgmtJson(`/api/queues/${this.vhostPath()}?page=1&page_size=1&columns=name`, signal, this.unknownVhost, CONNECT_TIMEOUT_MS);
      const total = (body as { filtered_count?: unknown }).filtered_count;
      pass(listName, t0, typeof total === 'number' ? `${total} queue${total === 1 ? '' : 's'}` : 'ok');
    } catch (e) {
      return fail(listName, t0, e);
    }
    return { ok: true, server, checks, error: null };
  }

  /**
   * Lists the vhost's queues through the management API (`GET /api/queues/<vhost>` with `columns`,
   * 500 per page, pages fetched 2 at a time), with dead-letter links resolved from one exchanges and
   * one bindings request. Concurrently proves the AMQP endpoint by opening (or reusing) the adapter's
   * shared AMQP connection: a closed AMQP port, a refused login or TLS to a plain port fail the
   * listing with that cause even though the management API answers. `pattern` (`*` wildcard) is sent as an anchored `name` regex and checked
   * again here; `limit` (default 10,000) bounds the result. Counts come from management stats, which
   * lag AMQP by up to ~5 s; queues listed without counts (brand new, or all of them on a broker with
   * statistics off) get ready and consumer counts from AMQP passive declares (at most
   * {@link AMQP_COUNTS_CAP}, or the `amqpCountsCap` option; in-flight stays null), and with statistics off `config.managementStatistics`
   * says so. Sorted by name (locale collation). Effective settings, links and capabilities come from
   * each queue's record and the vhost's policies (`GET /api/policies` and `/api/operator-policies`,
   * read alongside; see policy-limit.ts), as in getQueue: RabbitMQ 3.10's record shows a policy set
   * seconds ago late, and the redrive's loop check reads this listing's links. When the policies
   * cannot be read the records stand.
   * @throws QueuescopeError HOST_UNREACHABLE, MANAGEMENT_UNAVAILABLE, AUTH_FAILED, PERMISSION_DENIED,
   *   UNKNOWN_VHOST, TLS_ERROR, TIMEOUT, INVALID_INPUT (bad options), CANCELLED.
   */
  async listQueues(options: ListQueuesOptions, signal?: AbortSignal): Promise<QueueSummary[]> {
    const { limit, pattern, serverRegex } = validateListOptions(options);
    throwIfAborted(signal);
    const keep = pattern === null ? () => true : (q: RawQueue) => pattern.test(q.name);
    // The management API alone would list happily while the AMQP port is closed or refuses the
    // login, so the (cached, cheap after the first call) AMQP connection is proven concurrently; its
    // failure wins, because AMQP is what peeking and moving need.
    const [amqp, listing] = await Promise.allSettled([
      this.connection(signal),
      Promise.all([this.fetchQueues(LIST_COLUMNS, limit, serverRegex, keep, signal), this.fetchExchangesAndBindings(signal), readPolicyLists(this.mgmt, this.s.vhost, signal)]),
    ]);
    if (amqp.status === 'rejected') throw amqp.reason;
    if (listing.status === 'rejected') throw listing.reason;
    const [records, { exchanges, bindings }, policies] = listing.value;
    throwIfAborted(signal);
    // The records show a policy's dead-letter keys seconds late (3.10): the policies fill them in.
    const queues = records.map((q) => withPolicyDeadLetter(q, policies));
    let all: RawQueue[] = queues;
    if (pattern !== null || queues.length >= limit) {
      // The listing is a subset: read every queue's dead-letter settings to find sources and targets.
      const everything = await this.fetchQueues(TOPOLOGY_COLUMNS, TOPOLOGY_QUEUE_CAP, null, () => true, signal);
      const byName = new Map(everything.map((q) => [q.name, withPolicyDeadLetter(q, policies)]));
      for (const q of queues) byName.set(q.name, q);
      all = [...byName.values()];
    }
    const topo = buildTopology(this.s.vhost, all, exchanges, bindings);
    const sources = this.sourcesIndex(topo);
    // Queues listed without counts (brand new, or every queue when the broker's statistics are
    // off): their ready and consumer counts from AMQP, for at most countsCap (AMQP_COUNTS_CAP) of them.
    const uncounted = queues.filter((q) => q.messagesReady === null && q.messages === null && queueKind(q.type) !== 'rabbitmq-stream').map((q) => q.name);
    const [statsOff, fresh] = uncounted.length === 0 ? [false, new Map<string, { messageCount: number; consumerCount: number }>()] : await Promise.all([this.statsDisabled(signal), this.amqpCounts(uncounted.slice(0, this.countsCap), signal)]);
    throwIfAborted(signal);
    const beyondCap = new Set(uncounted.slice(this.countsCap));
    return queues
      .map((q) => {
        const summary = this.summary(q, topo, sources, fresh.get(q.name), statsOff, queueKind(q.type) === 'rabbitmq-quorum' ? policyDeliveryLimit(q.name, policies) : null);
        // Past the cap: say why this queue has no counts (the listing is too long to declare every queue).
        if (beyondCap.has(q.name)) summary.config = { ...summary.config, counts: `not read: counts over AMQP are read for the first ${this.countsCap} queues of a listing without them; list fewer (a name pattern) or open the queue` };
        return summary;
      })
      .sort((a, b) => collator.compare(a.name, b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * A fresh summary of one queue: existence and ready/consumer counts from AMQP `queue.declare`
   * (passive, immediate), the rest from the management API (stats may lag ~5 s), dead-letter links
   * and sources resolved against the whole vhost. For a quorum queue the delivery limit (and so
   * `capabilities.peekMayDeadLetter`, the peek gate) is the lower of the queue's record and the
   * vhost's policy definitions, read alongside (`policyDeliveryLimit` in policy-limit.ts): RabbitMQ
   * 3.10's record shows a quorum queue's policy seconds late. The policies' dead-letter exchange and
   * routing key are laid over every queue's record the same way (`withPolicyDeadLetter`; queue
   * arguments still win), so the links, `config` and the sources show a DLX set seconds ago.
   * @throws QueuescopeError QUEUE_NOT_FOUND (also when deleted since listed), INVALID_INPUT (bad id),
   *   HOST_UNREACHABLE, MANAGEMENT_UNAVAILABLE, AUTH_FAILED, CANCELLED.
   */
  async getQueue(queueId: string, signal?: AbortSignal): Promise<QueueSummary> {
    const name = this.queueRef(queueId);
    throwIfAborted(signal);
    let fresh: { messageCount: number; consumerCount: number } | undefined;
    try {
      fresh = await this.checkQueue(name, signal);
    } catch (e) {
      // 405: exclusive queue of another connection — it exists; the management API still describes it.
      if (!(e instanceof QueuescopeError) || e.details?.replyCode !== 405) throw e;
    }
    const notFound = (): Promise<QueuescopeError> => Promise.resolve(new QueuescopeError('QUEUE_NOT_FOUND', `Queue '${name}' does not exist in vhost '${this.s.vhost}' (it may have been deleted).`, { queue: name, vhost: this.s.vhost }));
    const [one, { exchanges, bindings }, everything, policies] = await Promise.all([
      this.mgmtJson(`/api/queues/${this.vhostPath()}/${encodeURIComponent(name)}?columns=${LIST_COLUMNS}`, signal, notFound),
      this.fetchExchangesAndBindings(signal),
      this.fetchQueues(TOPOLOGY_COLUMNS, TOPOLOGY_QUEUE_CAP, null, () => true, signal),
      // Two small requests: the delivery limit (quorum queues) and dead-letter keys the policies set now.
      readPolicyLists(this.mgmt, this.s.vhost, signal),
    ]);
    const parsed = parseQueue(one);
    if (!parsed) throw new QueuescopeError('MANAGEMENT_UNAVAILABLE', `The management API returned an unexpected answer for queue '${name}'.`);
    // Every queue of the topology gets the policies' dead-letter keys, so this queue's sources are current too.
    const q = withPolicyDeadLetter(parsed, policies);
    const byName = new Map(everything.map((x) => [x.name, withPolicyDeadLetter(x, policies)]));
    byName.set(q.name, q);
    const topo = buildTopology(this.s.vhost, byName.values(), exchanges, bindings);
    const statsOff = q.messagesReady === null && q.messages === null ? await this.statsDisabled(signal) : false;
    return this.summary(q, topo, this.sourcesIndex(topo), fresh, statsOff, policyDeliveryLimit(name, policies));
  }

  /** Type and settings of one queue for peeking, from its management record alone; null when the management API cannot tell. */
  private async peekInfo(name: string, signal?: AbortSignal): Promise<{ kind: QueueKind; settings: EffectiveSettings; messages: number | null } | null> {
    const q = await this.peekRecord(name, signal);
    return q ? { kind: queueKind(q.type), settings: effectiveSettings(q), messages: q.messages } : null;
  }

  /** One queue's management record for peeking; null when the management API cannot tell. */
  private async peekRecord(name: string, signal?: AbortSignal): Promise<RawQueue | null> {
    try {
      const body = await this.mgmtJson(`/api/queues/${this.vhostPath()}/${encodeURIComponent(name)}?columns=${LIST_COLUMNS}`, signal, undefined, CONNECT_TIMEOUT_MS);
      return parseQueue(body);
    } catch (e) {
      if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
      // 404 right after a successful passive declare = deleted meanwhile: the AMQP read reports it.
      return null;
    }
  }

  /**
   * Reads messages from the head of a queue.
   *
   * - Classic / quorum: there is no non-destructive read in AMQP 0-9-1. Up to `min(limit, 500)`
   *   messages are held unacknowledged on a dedicated channel and requeued (see `holdAndRelease`),
   *   with the side effects declared in the capabilities. When `capabilities.peekMayDeadLetter !== false`
   *   (quorum with a delivery limit, or type unknown) the call throws `PEEK_REFUSED` before touching a
   *   message unless `options.acceptSideEffects`. A quorum queue's delivery limit is the lower of its
   *   management record and the vhost's policy definitions (`policyDeliveryLimit`; the record shows
   *   a new policy seconds late on 3.10), and its dead-letter exchange comes from both too
   *   (`withPolicyDeadLetter`), so the refusal says the message would be dead-lettered to that
   *   exchange, or dropped only when none applies. No cursor paging (`nextCursor` is null).
   * - Streams: non-destructive, from the oldest retained message or a cursor `offset:<n>`.
   *
   * `total` is the ready count (classic/quorum, immediate) or the stream's message count (lagging).
   * @throws QueuescopeError QUEUE_NOT_FOUND, PEEK_REFUSED, INVALID_INPUT (bad id, limit, cursor,
   *   direction or state), HOST_UNREACHABLE, CANCELLED (messages already held are requeued first).
   */
  async peek(queueId: string, options: PeekOptions, signal?: AbortSignal): Promise<PeekPage> {
    const { limit, maxBodyBytes } = validatePeekOptions(options);
    const name = this.queueRef(queueId);
    throwIfAborted(signal);
    const before = await this.checkQueue(name, signal);
    const record = await this.peekRecord(name, signal);
    const kind = record === null ? null : queueKind(record.type);
    let info = record === null ? null : { settings: effectiveSettings(record), messages: record.messages };
    // The record shows a quorum queue's policy seconds late (3.10): the gate (delivery limit) and its
    // refusal (dead-lettered where, or dropped) also read the policies.
    if (record !== null && kind === 'rabbitmq-quorum') {
      const policies = await readPolicyLists(this.mgmt, this.s.vhost, signal);
      info = { messages: record.messages, settings: withPolicyDeliveryLimit(effectiveSettings(withPolicyDeadLetter(record, policies)), policyDeliveryLimit(name, policies)) };
    }
    const conn = await this.connection(signal);

    if (kind === 'rabbitmq-stream') {
      if (options.direction === 'newest') throw new QueuescopeError('INVALID_INPUT', 'Streams are read from the oldest retained message (or a cursor); direction "newest" is not supported.');
      const from = options.cursor === undefined || options.cursor === null ? 'first' : parseStreamCursor(options.cursor);
      const got = await readStream({ conn, queue: name, vhost: this.s.vhost, from, limit, signal });
      const last = got[got.length - 1];
      return {
        messages: got.map((g) => {
          const m = toQueueMessage(g.message, g.offset, queueId, name, kind, maxBodyBytes);
          m.meta.state = 'stored';
          return m;
        }),
        nextCursor: got.length === limit && last ? `${STREAM_CURSOR_PREFIX}${last.offset + 1}` : null,
        total: info?.messages ?? null,
        sideEffects: [],
      };
    }

    if (options.cursor !== undefined && options.cursor !== null) {
      throw new QueuescopeError('INVALID_INPUT', `Queue '${name}' is a ${kind === null ? 'RabbitMQ' : kind === 'rabbitmq-quorum' ? 'quorum' : 'classic'} queue: it can only be read from the head, so cursors are not supported.`);
    }
    if (options.direction === 'newest') throw new QueuescopeError('INVALID_INPUT', `Queue '${name}' can only be read from the head (oldest first); direction "newest" is not supported.`);
    const caps = capabilitiesFor(kind, info?.settings ?? null);
    if (caps.peekMayDeadLetter !== false && options.acceptSideEffects !== true) {
      const reason = caps.peekSideEffects.find((x) => x.kind === 'may-dead-letter')?.description ?? 'A peek could dead-letter messages.';
      throw new QueuescopeError('PEEK_REFUSED', `Peeking '${name}' was refused and nothing was read: ${reason} Pass acceptSideEffects to peek anyway.`, { queue: name, sideEffects: caps.peekSideEffects.map((x) => x.kind) });
    }
    throwIfAborted(signal);
    const target = Math.min(limit, before.messageCount);
    if (target === 0) return { messages: [], nextCursor: null, total: before.messageCount, sideEffects: [] };
    const { messages, deadLettered } = await holdAndRelease({
      conn,
      queue: name,
      vhost: this.s.vhost,
      target,
      before,
      useGet: info?.settings.singleActiveConsumer === true,
      deliveryLimit: kind === 'rabbitmq-quorum' ? (info?.settings.deliveryLimit?.value ?? null) : null,
      signal,
    });
    // Sentences for people, like the other adapters: what this peek did to the queue.
    const sideEffects: string[] =
      messages.length === 0
        ? []
        : [
            `Held ${messages.length} message${messages.length === 1 ? '' : 's'} unacknowledged while reading, then requeued ${messages.length === 1 ? 'it' : 'them'}.`,
            ...caps.peekSideEffects.filter((x) => x.kind !== 'may-dead-letter' && x.kind !== 'temporarily-invisible').map((x) => x.description),
          ];
    if (deadLettered > 0) sideEffects.push(`${deadLettered} message${deadLettered === 1 ? ' was' : 's were'} at the delivery limit and ${deadLetterFate(info?.settings ?? null)} by this peek.`);
    return {
      messages: messages.map((m, i) => toQueueMessage(m, i, queueId, name, kind, maxBodyBytes)),
      nextCursor: null,
      total: before.messageCount,
      sideEffects,
    };
  }

  /** `rabbitmq_version` of the management API `/api/overview` (see {@link BrokerAdapter.brokerVersion}); null when it cannot be read. */
  async brokerVersion(signal?: AbortSignal): Promise<string | null> {
    try {
      const res = await this.mgmt.get('/api/overview', signal);
      const v = res.status === 200 && res.body !== null && typeof res.body === 'object' ? (res.body as { rabbitmq_version?: unknown }).rabbitmq_version : null;
      return typeof v === 'string' && v.length > 0 ? v : null;
    } catch (e) {
      if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
      return null;
    }
  }

  /** Closes the AMQP connection and the management API's idle sockets. Idempotent; a later call reconnects. */
  async close(): Promise<void> {
    const p = this.conn;
    this.conn = null;
    this.mgmt.close();
    if (p) {
      const c = await p.catch(() => null);
      await c?.close().catch(() => undefined);
    }
  }
}

/**
 * Creates the RabbitMQ adapter (RabbitMQ 3.x, AMQP 0-9-1 via amqplib plus the management HTTP API).
 * Nothing connects until the first call. `options.amqpCountsCap` is for tests (see {@link RabbitmqAdapterOptions}).
 * @throws QueuescopeError `INVALID_INPUT` for a malformed URL or management URL, or a bad option.
 */
export function createRabbitmqAdapter(config: RabbitmqConnectionConfig, options: RabbitmqAdapterOptions = {}): BrokerAdapter {
  return new RabbitmqAdapter(config, options);
}

/** The error for a management API that belongs to another broker than the AMQP connection (see RabbitmqAdapter.sameBroker). */
function managementMismatch(mgmtBase: string, mgmtCluster: string, amqpWhere: string, amqpCluster: string): QueuescopeError {
  return new QueuescopeError(
    'MANAGEMENT_UNAVAILABLE',
    `The management API at ${mgmtBase} belongs to another broker (cluster '${mgmtCluster}') than the AMQP connection to ${amqpWhere} (cluster '${amqpCluster}'): nothing was read or changed. Pass the management URL of that broker (--management-url, or ?management= in the URL).`,
    { managementUrl: mgmtBase, managementCluster: mgmtCluster, amqpCluster },
  );
}
