/**
 * Audit fact collector for Redis:
 * - server: `CONFIG GET maxmemory-policy|save|appendonly` (https://redis.io/docs/latest/commands/config-get/);
 *   CONFIG disabled or renamed (`rename-command CONFIG ""`, managed services, ACL) is reported, not
 *   thrown, and the facts INFO also shows are read from there instead ({@link readInfoFallback});
 * - BullMQ: the `opts` field (JSON job options, e.g. `{"removeOnFail":true,"attempts":2}`) of the
 *   most recent jobs of each state list/set, read with pipelined HGET — never the job data;
 * - Streams: XINFO STREAM (`entries-added`, `max-deleted-entry-id`, first entry), XINFO GROUPS and
 *   XPENDING (extended form, oldest first, bounded) with an XRANGE existence check of each sampled
 *   pending id, to find pending entries whose stream entry was trimmed or deleted.
 * Everything is read-only.
 */
import type { Redis } from 'ioredis';
import { QueuescopeError, type QueueSummary } from '../../../shared/domain';
import type { AuditFacts, AuditFix, BullmqQueueFacts, FixPreview, PendingEntryFacts, RedisServerFacts, RemoveOnFail, StreamFacts, StreamGroupFacts } from '../../../shared/audit/types';
import type { AuditCollectOptions, AuditCollector } from '../audit-types';
import type { ListQueuesOptions } from '../types';
import { throwIfAborted } from '../../lib/abort';
import { describeEndpoint } from './connection';
import { num, pairs, str, type RedisContext } from './context';
import { parseQueueId } from './ids';

/** Most recent jobs read per BullMQ state. */
export const JOBS_PER_STATE = 50;
/** Pending entries read per consumer group (oldest first). */
export const PENDING_SAMPLE = 200;

/** Parses a job's `opts` JSON into its `removeOnFail` (null when absent or unreadable). */
export function removeOnFailOf(opts: string | null): RemoveOnFail | undefined {
  if (opts === null) return undefined;
  try {
    const o = JSON.parse(opts) as unknown;
    if (o === null || typeof o !== 'object') return undefined;
    const v = (o as Record<string, unknown>).removeOnFail;
    if (v === undefined) return null;
    if (typeof v === 'boolean' || typeof v === 'number') return v;
    if (v !== null && typeof v === 'object') {
      const r = v as Record<string, unknown>;
      return { ...(typeof r.count === 'number' ? { count: r.count } : {}), ...(typeof r.age === 'number' ? { age: r.age } : {}) };
    }
    return null;
  } catch {
    return undefined;
  }
}

/** `a-b` stream ids compared numerically. */
export function compareStreamIds(a: string, b: string): number {
  const [a1 = '0', a2 = '0'] = a.split('-');
  const [b1 = '0', b2 = '0'] = b.split('-');
  const d = BigInt(a1) - BigInt(b1);
  if (d !== 0n) return d < 0n ? -1 : 1;
  const e = BigInt(a2) - BigInt(b2);
  return e === 0n ? 0 : e < 0n ? -1 : 1;
}

class RedisAuditCollector implements AuditCollector {
  constructor(
    private readonly ctx: RedisContext,
    private readonly listQueues: (o: ListQueuesOptions, s?: AbortSignal) => Promise<QueueSummary[]>,
  ) {}

  /**
   * Server facts: CONFIG GET, or — when CONFIG is refused — what INFO shows ({@link readInfoFallback}).
   * `notes` receives a sentence saying INFO was used and what it could not tell.
   */
  private async server(client: Redis, holdsQueues: boolean, notes: string[]): Promise<RedisServerFacts> {
    const label = describeEndpoint(this.ctx.endpoint);
    let version: string | null;
    try {
      version = /redis_version:([^\r\n]+)/.exec(await client.info('server'))?.[1] ?? null;
    } catch {
      version = null;
    }
    const facts: RedisServerFacts = { kind: 'redis-server', label, version, holdsQueues, maxmemoryPolicy: null, save: null, appendonly: null, configError: null };
    try {
      const read = async (k: string): Promise<string | null> => {
        const r = (await client.call('CONFIG', 'GET', k)) as unknown[];
        return Array.isArray(r) && r.length >= 2 ? str(r[1]) : null;
      };
      facts.maxmemoryPolicy = await read('maxmemory-policy');
      facts.save = await read('save');
      facts.appendonly = await read('appendonly');
    } catch (e) {
      facts.configError = configErrorText(e);
      facts.maxmemoryPolicy = null;
      facts.save = null;
      facts.appendonly = null;
      const note = await readInfoFallback(client, facts);
      if (note !== null) notes.push(`${label}: ${note}`);
    }
    return facts;
  }

  private async bullmq(client: Redis, id: string, prefix: string, name: string): Promise<BullmqQueueFacts> {
    const base = `${prefix}:${name}`;
    const p = client.pipeline();
    p.lrange(`${base}:wait`, 0, JOBS_PER_STATE - 1);
    p.lrange(`${base}:active`, 0, JOBS_PER_STATE - 1);
    p.lrange(`${base}:paused`, 0, JOBS_PER_STATE - 1);
    p.zrevrange(`${base}:delayed`, 0, JOBS_PER_STATE - 1);
    p.zrevrange(`${base}:prioritized`, 0, JOBS_PER_STATE - 1);
    p.zrevrange(`${base}:completed`, 0, JOBS_PER_STATE - 1);
    p.zrevrange(`${base}:failed`, 0, JOBS_PER_STATE - 1);
    p.zcard(`${base}:failed`);
    const res = (await p.exec()) ?? [];
    const ids = new Set<string>();
    for (let i = 0; i < 7; i++) {
      const [err, v] = res[i] ?? [null, []];
      if (!err && Array.isArray(v)) for (const x of v) ids.add(String(x));
    }
    const failedReply = res[7];
    const failedCount = failedReply && !failedReply[0] ? num(failedReply[1]) : null;
    const list = [...ids];
    const q = client.pipeline();
    for (const jid of list) q.hget(`${base}:${jid}`, 'opts');
    const opts = list.length > 0 ? ((await q.exec()) ?? []) : [];
    const groups = new Map<string, { value: RemoveOnFail; jobs: number; exampleJobId: string }>();
    let read = 0;
    opts.forEach(([err, v], i) => {
      if (err) return;
      const r = removeOnFailOf(typeof v === 'string' ? v : null);
      if (r === undefined) return;
      read++;
      const key = JSON.stringify(r);
      const g = groups.get(key);
      if (g) g.jobs++;
      else groups.set(key, { value: r, jobs: 1, exampleJobId: list[i] ?? '' });
    });
    return { kind: 'bullmq', id, name, prefix, jobsRead: read, removeOnFail: [...groups.values()], failedCount };
  }

  private async stream(client: Redis, id: string, key: string): Promise<StreamFacts> {
    const info = pairs(await client.xinfo('STREAM', key));
    const first = info['first-entry'];
    const firstEntryId = Array.isArray(first) ? str(first[0]) : null;
    const groupsRaw: unknown = await client.xinfo('GROUPS', key);
    const groups: StreamGroupFacts[] = [];
    for (const gr of Array.isArray(groupsRaw) ? groupsRaw : []) {
      const g = pairs(gr);
      const name = str(g.name) ?? '';
      const pending = num(g.pending) ?? 0;
      const consumers = num(g.consumers) ?? 0;
      const sample: PendingEntryFacts[] = [];
      if (pending > 0) {
        const rows = await client.xpending(key, name, '-', '+', PENDING_SAMPLE);
        for (const r of rows) {
          if (!Array.isArray(r)) continue;
          sample.push({ id: str(r[0]) ?? '', consumer: str(r[1]) ?? '', idleMs: num(r[2]) ?? 0, deliveries: num(r[3]) ?? 0 });
        }
      }
      // A pending id older than the first entry was trimmed; others are checked one by one (XRANGE id id).
      const deleted: string[] = [];
      const check = sample.filter((e) => firstEntryId === null || compareStreamIds(e.id, firstEntryId) >= 0);
      for (const e of sample) if (firstEntryId === null || compareStreamIds(e.id, firstEntryId) < 0) deleted.push(e.id);
      if (check.length > 0) {
        const p = client.pipeline();
        for (const e of check) p.xrange(key, e.id, e.id);
        const res = (await p.exec()) ?? [];
        res.forEach(([err, v], i) => {
          if (!err && Array.isArray(v) && v.length === 0) deleted.push(check[i]?.id ?? '');
        });
      }
      groups.push({ name, pending, consumers, pendingSample: sample, pendingDeleted: deleted });
    }
    return {
      kind: 'redis-stream',
      id,
      name: key,
      length: num(info.length),
      entriesAdded: num(info['entries-added']),
      maxDeletedEntryId: str(info['max-deleted-entry-id']),
      firstEntryId,
      groups,
    };
  }

  async collect(options: AuditCollectOptions, signal?: AbortSignal): Promise<AuditFacts> {
    const client = await this.ctx.client(signal);
    const summaries = await this.listQueues(options.pattern !== undefined && options.pattern !== '' ? { pattern: options.pattern } : {}, signal);
    const notes: string[] = [];
    const queues: AuditFacts['queues'] = [];
    for (const s of summaries) {
      throwIfAborted(signal);
      let ref;
      try {
        ref = parseQueueId(s.id);
      } catch {
        continue;
      }
      try {
        if (ref.kind === 'bullmq') queues.push(await this.bullmq(client, s.id, ref.prefix, ref.name));
        else if (ref.kind === 'stream') queues.push(await this.stream(client, s.id, ref.key));
      } catch (e) {
        if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
        notes.push(`${s.name}: could not be read (${(e instanceof Error ? e.message : String(e)).slice(0, 200)}).`);
      }
    }
    // The server holds queues when any were discovered (the pattern narrows the report, not this fact).
    const filtered = options.pattern !== undefined && options.pattern !== '' && options.pattern !== '*';
    const holds = summaries.length > 0 || (filtered && (await this.listQueues({ limit: 1 }, signal)).length > 0);
    const server = await this.server(client, holds, notes);
    return { broker: 'redis', label: server.label, servers: [server], queues, notes };
  }

  previewFix(fix: AuditFix): Promise<FixPreview> {
    return Promise.reject(new QueuescopeError('INVALID_INPUT', `A ${fix.kind} fix cannot be applied to Redis: Redis findings have no one-click fix.`));
  }

  applyFix(fix: AuditFix): Promise<FixPreview> {
    return this.previewFix(fix);
  }
}

/**
 * The first line of a refused CONFIG GET, without the arguments Redis echoes
 * (`ERR unknown command 'CONFIG', with args beginning with: 'GET' 'maxmemory-policy'` → `ERR
 * unknown command 'CONFIG'`): the same refusal stands for every setting, so it must not name one.
 */
export function configErrorText(e: unknown): string {
  const line = (e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '';
  const text = line.replace(/,? with args beginning with:.*$/i, '').trim().slice(0, 200);
  return text === '' ? 'CONFIG failed' : text;
}

/** `field:value` lines of an INFO section (https://redis.io/docs/latest/commands/info/). */
function infoFields(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0 && !line.startsWith('#')) out.set(line.slice(0, i), line.slice(i + 1).trim());
  }
  return out;
}

/**
 * Where CONFIG GET is refused (renamed away as on many managed services, or not permitted), reads
 * what INFO reports instead (https://redis.io/docs/latest/commands/info/):
 * - `INFO memory` `maxmemory_policy` → `facts.maxmemoryPolicy` (the live setting, as CONFIG GET shows it);
 * - `INFO persistence` `aof_enabled` (0/1) → `facts.appendonly` (`no`/`yes`).
 * `facts.save` stays null: INFO shows RDB activity (`rdb_saves`, `rdb_last_save_time`), not the
 * `save` schedule. `facts.configError` stays set, which tells the rules the values came from INFO.
 * Returns a note for the report saying so (null when INFO is refused too).
 */
export async function readInfoFallback(client: Redis, facts: RedisServerFacts): Promise<string | null> {
  let memory: Map<string, string>;
  let persistence: Map<string, string>;
  try {
    memory = infoFields(await client.info('memory'));
    persistence = infoFields(await client.info('persistence'));
  } catch (e) {
    return `CONFIG GET is not available (${facts.configError ?? ''}) and INFO failed too (${configErrorText(e)}): the server settings were not checked.`;
  }
  const policy = memory.get('maxmemory_policy');
  if (policy !== undefined && policy !== '') facts.maxmemoryPolicy = policy;
  const aof = persistence.get('aof_enabled');
  if (aof === '1' || aof === '0') facts.appendonly = aof === '1' ? 'yes' : 'no';
  const read: string[] = [];
  if (facts.maxmemoryPolicy !== null) read.push(`maxmemory-policy ${facts.maxmemoryPolicy} (INFO memory maxmemory_policy)`);
  if (facts.appendonly !== null) read.push(`appendonly ${facts.appendonly} (INFO persistence aof_enabled:${aof ?? ''})`);
  const rdb = persistence.get('rdb_saves');
  const rdbNote =
    'the RDB save schedule is not in INFO' +
    (rdb !== undefined ? ` (INFO persistence shows ${rdb} RDB save${rdb === '1' ? '' : 's'} since the server started, rdb_last_bgsave_status:${persistence.get('rdb_last_bgsave_status') ?? '?'})` : '');
  return `CONFIG GET is not available (${facts.configError ?? ''}); read from INFO instead: ${read.length > 0 ? read.join(', ') : 'nothing'}; ${rdbNote}.`;
}

/** Creates the Redis audit collector (uses the adapter's connection and its queue discovery). */
export function createRedisAuditCollector(ctx: RedisContext, listQueues: (o: ListQueuesOptions, s?: AbortSignal) => Promise<QueueSummary[]>): AuditCollector {
  return new RedisAuditCollector(ctx, listQueues);
}
