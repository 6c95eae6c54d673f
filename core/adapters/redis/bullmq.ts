import type { Redis } from 'ioredis';
import { QueuescopeError, type HeaderValue, type PeekOptions, type PeekPage, type QueueMessage, type QueueSummary } from '../../../shared/domain';
import { toMessageBody } from './body';
import { decodeCursor, encodeCursor } from './cursor';
import { normalisePeek, notFound, num, redisCapabilities, throwIfAborted, type RedisContext } from './context';
import { formatQueueId } from './ids';
import { looksLikeDeadLetterName } from './naming';

/** Job states a BullMQ queue can be peeked in (`capabilities.peekStates`) and counted (`counts`). */
export const BULLMQ_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed', 'paused', 'waiting-children'] as const;
export type BullmqState = (typeof BULLMQ_STATES)[number];

/** States kept in Redis lists (LPUSHed: the oldest job is at the right end); the others are sorted sets. */
const LIST_STATES = new Set<BullmqState>(['waiting', 'active', 'paused']);

/** Short option keys BullMQ stores in the job's `opts` JSON (bullmq `optsDecodeMap`). */
const OPTS_DECODE: Record<string, string> = {
  de: 'deduplication',
  fpof: 'failParentOnFailure',
  cpof: 'continueParentOnFailure',
  idof: 'ignoreDependencyOnFailure',
  kl: 'keepLogs',
  rdof: 'removeDependencyOnFailure',
};

/** Redis key suffix of a state (BullMQ's `waiting` lives in `<prefix>:<name>:wait`). */
function stateKey(prefix: string, name: string, state: BullmqState): string {
  return `${prefix}:${name}:${state === 'waiting' ? 'wait' : state}`;
}

/** The states BullMQ 6's `getJobCounts` knows (its `JobState`); `paused` is counted apart. */
const COUNTED_BY_BULLMQ = ['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed', 'waiting-children'] as const;

/**
 * Summary of a BullMQ queue. Counts come from BullMQ's own `Queue.getJobCounts()`
 * (https://api.docs.bullmq.io/classes/v5.Queue.html#getjobcounts); depth = waiting + prioritized + paused,
 * inFlight = active, delayed = delayed. The failed set plays the dead-letter role, so the queue
 * itself is not a DLQ (`isDeadLetterQueue` false) and `config.failedJobs` says how failures are kept.
 * @param withWorkers also count workers (CLIENT LIST; null when not permitted).
 * @throws QueuescopeError `QUEUE_NOT_FOUND` when none of the queue's keys exist.
 */
export async function bullmqSummary(ctx: RedisContext, prefix: string, name: string, withWorkers: boolean, signal?: AbortSignal): Promise<QueueSummary> {
  const client = await ctx.client(signal);
  const id = formatQueueId({ kind: 'bullmq', prefix, name });
  const queue = await ctx.bullQueue(prefix, name, signal);
  let countsSource = 'BullMQ Queue.getJobCounts()';
  const [countsRaw, metaRes, existsRes, legacyPaused] = await Promise.all([
    queue.getJobCounts(...COUNTED_BY_BULLMQ).catch(async (e: unknown) => {
      // getJobCounts runs a Lua script; a user without @scripting can still read the sizes.
      if (!isRefusal(e)) throw e;
      countsSource = 'LLEN / ZCARD of the state keys (this user may not run BullMQ\'s scripts)';
      return nativeCounts(client, prefix, name);
    }),
    client.hgetall(`${prefix}:${name}:meta`),
    client.exists(`${prefix}:${name}:meta`, `${prefix}:${name}:id`),
    // BullMQ ≥ 5 keeps a paused queue's jobs in `wait` (meta `paused`); queues written by older
    // versions may still hold a `:paused` list, which BullMQ 6's counters no longer name.
    client.llen(`${prefix}:${name}:paused`).catch(() => 0),
  ]);
  const counts: Record<string, number> = {};
  for (const s of BULLMQ_STATES) counts[s] = s === 'paused' ? legacyPaused : (countsRaw[s] ?? 0);
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  if (existsRes === 0 && total === 0) throw notFound(id, `no BullMQ queue "${name}" with prefix "${prefix}" exists (any more)`);
  let workers: number | null = null;
  if (withWorkers) {
    throwIfAborted(signal);
    workers = await queue.getWorkersCount().catch(() => null);
  }
  const meta = metaRes;
  const paused = meta.paused === '1' || meta.paused === 'true';
  return {
    id,
    name,
    broker: 'redis',
    kind: 'bullmq',
    depth: (counts.waiting ?? 0) + (counts.prioritized ?? 0) + (counts.paused ?? 0),
    inFlight: counts.active ?? 0,
    delayed: counts.delayed ?? 0,
    consumers: workers,
    counts,
    deadLetterTargets: [],
    deadLetterSources: [],
    isDeadLetterQueue: looksLikeDeadLetterName(name),
    capabilities: redisCapabilities([...BULLMQ_STATES]),
    config: {
      prefix,
      name,
      paused,
      ...(meta.concurrency !== undefined ? { globalConcurrency: num(meta.concurrency) } : {}),
      ...(meta.max !== undefined ? { rateLimit: { max: num(meta.max), durationMs: num(meta.duration) } } : {}),
      ...(meta.version !== undefined ? { libraryVersion: meta.version } : {}),
      ...(meta['opts.maxLenEvents'] !== undefined ? { maxLenEvents: num(meta['opts.maxLenEvents']) } : {}),
      failedJobs:
        'BullMQ has no separate dead-letter queue: a job that exhausts its attempts (or throws UnrecoverableError) moves to this queue\'s "failed" set, with failedReason and stacktrace, and is kept there unless the job option removeOnFail removes it (all, by count or by age). Peek state "failed" to see them; retry moves them back to waiting.',
      keys: `${prefix}:${name}:*`,
      countsSource,
    },
  };
}

/** State sizes read directly (what BullMQ's getCounts script returns, without its legacy-marker cleanup). */
async function nativeCounts(client: Redis, prefix: string, name: string): Promise<Record<string, number>> {
  const p = client.pipeline();
  for (const st of COUNTED_BY_BULLMQ) {
    if (LIST_STATES.has(st)) p.llen(stateKey(prefix, name, st));
    else p.zcard(stateKey(prefix, name, st));
  }
  const res = (await p.exec()) ?? [];
  const out: Record<string, number> = {};
  COUNTED_BY_BULLMQ.forEach((st, i) => {
    const [err, v] = res[i] ?? [null, 0];
    if (err) throw err;
    out[st] = Number(v);
  });
  return out;
}

/** Parses a JSON text, or returns null. */
function parseJson(s: string | undefined): unknown {
  if (s === undefined || s === '') return null;
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return null;
  }
}

/** Job options as headers, with BullMQ's short keys spelled out; the parsed object itself when it has none. */
function toHeaders(v: unknown): Record<string, HeaderValue> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return {};
  const opts = v as Record<string, HeaderValue>;
  let short = false;
  for (const k in opts) {
    if (Object.hasOwn(OPTS_DECODE, k)) {
      short = true;
      break;
    }
  }
  if (!short) return opts;
  const out: Record<string, HeaderValue> = {};
  for (const k in opts) out[OPTS_DECODE[k] ?? k] = opts[k] as HeaderValue;
  return out;
}

function intField(h: RawJob, k: string): number | null {
  if (h.int) return h.int(k);
  const v = h.get(k);
  if (v === undefined || v === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/** Parses a non-negative decimal integer straight from bytes (timestamps, counters); falls back to Number() for anything else. */
function bytesToInt(b: Buffer): number | null {
  if (b.length === 0) return null;
  let n = 0;
  for (let i = 0; i < b.length; i++) {
    const c = b[i] as number;
    if (c < 48 || c > 57 || i >= 15) {
      const x = Number(b.toString('latin1'));
      return Number.isFinite(x) ? x : null;
    }
    n = n * 10 + (c - 48);
  }
  return n;
}

/** A job hash as read for a peek: fields as text on demand, `data` as raw bytes. */
export interface RawJob {
  /** A field's value as UTF-8 text; undefined when the hash has no such field. */
  get(field: string): string | undefined;
  /** The `data` field's bytes, or null when the hash has none. */
  data: Buffer | null;
  /** Optional fast path: a numeric field without building a string first. */
  int?(field: string): number | null;
  /** Optional fast path: whether the hash has the field, without decoding it. */
  has?(field: string): boolean;
  /** Optional fast path: the field parsed as JSON (null when absent or not JSON), a fresh value on every call. */
  json?(field: string): unknown;
}

/** {@link RawJob} over a field → value record (HGETALL). */
export function rawJobFromRecord(fields: Record<string, string>, data: Buffer | null): RawJob {
  return { get: (f) => fields[f], data };
}

const PROPERTY_FIELDS = [
  ['pb', 'processedBy'],
  ['rjk', 'repeatJobKey'],
  ['deid', 'deduplicationId'],
  ['parentKey', 'parentKey'],
  ['parent', 'parent'],
  ['defa', 'deferredFailure'],
  ['returnvalue', 'returnvalue'],
  // Queuescope's redrive counter (core/adapters/redis/redrive.ts): a hash field, job data stays untouched.
  ['x-queuescope-redrive-count', 'x-queuescope-redrive-count'],
] as const;

/**
 * Builds a {@link QueueMessage} from a BullMQ job hash (`<prefix>:<name>:<id>`, the layout
 * BullMQ reads in `Job.fromJSON`): body = the `data` field exactly as stored, headers = the job
 * options (long names), meta = state, name, attempts, failure and timing, properties = the rest.
 */
export function bullmqJobMessage(
  jobId: string,
  job: RawJob,
  at: { queueId: string; queueName: string; position: number; state: string; maxBodyBytes: number },
): QueueMessage {
  const h = job;
  const opts = h.json ? h.json('opts') : parseJson(h.get('opts'));
  const attemptsOpt = (opts as { attempts?: unknown } | null)?.attempts;
  const stack = h.json ? h.json('stacktrace') : parseJson(h.get('stacktrace'));
  const properties: Record<string, HeaderValue> = {};
  const prio = intField(h, 'priority');
  if (prio !== null) properties.priority = prio;
  const progress = h.get('progress');
  if (progress !== undefined) properties.progress = (parseJson(progress) ?? progress) as HeaderValue;
  const ats = intField(h, 'ats');
  if (ats !== null) properties.attemptsStarted = ats;
  const stc = intField(h, 'stc');
  if (stc !== null) properties.stalledCounter = stc;
  for (const [field, prop] of PROPERTY_FIELDS) {
    const v = h.get(field);
    if (v !== undefined) properties[prop] = v;
  }
  return {
    id: jobId,
    queueId: at.queueId,
    queueName: at.queueName,
    position: at.position,
    body: job.data ? toMessageBody(job.data, at.maxBodyBytes) : { encoding: 'utf8', data: '', sizeBytes: 0, truncated: false },
    headers: toHeaders(opts),
    properties,
    meta: {
      state: at.state,
      jobName: h.get('name') ?? '',
      attemptsMade: intField(h, 'atm') ?? intField(h, 'attemptsMade') ?? 0,
      attemptsLimit: typeof attemptsOpt === 'number' ? attemptsOpt : 1,
      failedReason: h.get('failedReason') ?? null,
      stacktrace: Array.isArray(stack) ? (stack.every((x) => typeof x === 'string') ? stack : stack.filter((x): x is string => typeof x === 'string')) : [],
      processedOn: intField(h, 'processedOn'),
      finishedOn: intField(h, 'finishedOn'),
      enqueuedAt: intField(h, 'timestamp'),
      delayMs: intField(h, 'delay'),
    },
  };
}

/**
 * Peeks the jobs of one state without side effects, reading BullMQ's documented key layout
 * (state list / sorted set + one hash per job) rather than `Queue.getJobs`, which pages at
 * ~17k jobs/s here. Fast path: `SORT_RO … GET` returns ids and job fields in one read-only
 * command per 250 jobs (see `readPageBySort`); fallback when SORT_RO is refused (Redis < 7, ACL):
 * ZRANGE/LRANGE for the ids, then {@link readJobHashes}.
 *
 * Order: `oldest` = the job that entered the state first (next to process for waiting; soonest
 * for delayed; first failed for failed). Cursors carry the index and the last job id; when the
 * state changed between pages, the next page restarts right after that job (ZRANK / LPOS), so a
 * job is not skipped or repeated unless that job itself left the state.
 * @throws QueuescopeError `QUEUE_NOT_FOUND`, `INVALID_INPUT` (state, cursor, options), `CANCELLED`.
 */
export async function peekBullmq(ctx: RedisContext, prefix: string, name: string, options: PeekOptions, signal?: AbortSignal): Promise<PeekPage> {
  const { limit, direction, maxBodyBytes } = normalisePeek(options);
  const queueId = formatQueueId({ kind: 'bullmq', prefix, name });
  const stateIn = options.state ?? 'waiting';
  if (!(BULLMQ_STATES as readonly string[]).includes(stateIn)) {
    throw new QueuescopeError('INVALID_INPUT', `A BullMQ queue can be peeked in state ${BULLMQ_STATES.join(', ')}; got "${stateIn.slice(0, 100)}".`);
  }
  const state = stateIn as BullmqState;
  const cursor = options.cursor ? decodeCursor(options.cursor, { queueId, state, direction }) : null;
  if (cursor && cursor.o === undefined) throw new QueuescopeError('INVALID_INPUT', 'The peek cursor is not a BullMQ cursor.');
  throwIfAborted(signal);
  const client = await ctx.client(signal);
  const key = stateKey(prefix, name, state);
  const isList = LIST_STATES.has(state);
  const asc = direction === 'oldest';

  const m = client.multi().exists(`${prefix}:${name}:meta`, `${prefix}:${name}:id`).type(key);
  if (isList) m.llen(key);
  else m.zcard(key);
  if (cursor?.j !== undefined) {
    if (isList) m.lpos(key, cursor.j);
    else if (asc) m.zrank(key, cursor.j);
    else m.zrevrank(key, cursor.j);
  }
  const res = await m.exec();
  if (res === null) throw new QueuescopeError('BROKER_ERROR', 'A Redis transaction was aborted.');
  for (const r of res) if (r[0]) throw r[0];
  const exists = Number(res[0]?.[1] ?? 0);
  const type = String(res[1]?.[1]);
  const total = Number(res[2]?.[1] ?? 0);
  if (exists === 0 && type === 'none') throw notFound(queueId, `no BullMQ queue "${name}" with prefix "${prefix}" exists (any more)`);
  if (type !== 'none' && type !== (isList ? 'list' : 'zset')) {
    throw new QueuescopeError('BROKER_ERROR', `The key "${key}" is a ${type}, not the ${isList ? 'list' : 'sorted set'} BullMQ keeps "${state}" jobs in.`);
  }
  let start = cursor?.o ?? 0;
  if (cursor?.j !== undefined) {
    const found = num(res[3]?.[1]);
    if (found !== null) {
      // ZRANK/ZREVRANK give the rank in the read order; LPOS gives the index from the left,
      // and the list is read from the right for `oldest`.
      start = (isList && asc ? total - 1 - found : found) + 1;
    }
  }
  throwIfAborted(signal);

  const messages: QueueMessage[] = [];
  const at = (position: number) => ({ queueId, queueName: name, position, state, maxBodyBytes });
  const base = `${prefix}:${name}:`;
  let pageIds: string[] | null = null;
  let hasMore = false;
  /** Ids of the page whose job hash is gone (PeekPage.missing). */
  let missing = 0;
  if (!noSort.has(client) && !base.includes('*') && start < total) {
    // One native command per 250 jobs returns ids and job fields together (SORT_RO … GET).
    const count = Math.min(limit, total - start);
    // SORT BY nosort follows the sorted-set order (ascending score) or the list order (head first);
    // BullMQ LPUSHes into its lists, so their oldest job is read with DESC.
    const desc = isList ? asc : !asc;
    // Jobs written by BullMQ < 5 keep attempts in `attemptsMade` instead of `atm`: patched below.
    const legacy: QueueMessage[] = [];
    const got = await readPageBySort(client, key, base, state, start, count, desc, (i, id, job) => {
      if (!job) {
        missing++;
        return;
      }
      const msg = bullmqJobMessage(id, job, at(start + i));
      messages.push(msg);
      if (isLegacyJob(job)) legacy.push(msg);
    }, signal);
    if (got !== null) {
      pageIds = got;
      hasMore = start + got.length < total;
    }
    await patchLegacyAttempts(client, base, legacy);
  }
  if (pageIds === null) {
    let ids: string[];
    if (isList) {
      ids = asc ? (await client.lrange(key, -(start + limit + 1), -(start + 1))).reverse() : await client.lrange(key, start, start + limit);
    } else {
      ids = asc ? await client.zrange(key, start, start + limit) : await client.zrevrange(key, start, start + limit);
    }
    hasMore = ids.length > limit;
    const ids2 = ids.slice(0, limit);
    pageIds = ids2;
    throwIfAborted(signal);
    if (ids2.length > 0) {
      await readJobHashes(
        client,
        ids2.map((id) => base + id),
        (i, job) => {
          // A job removed between reading its id and its hash is skipped (as BullMQ's getJobs does).
          if (job) messages.push(bullmqJobMessage(ids2[i] as string, job, at(start + i)));
          else missing++;
        },
        signal,
      );
    }
  }
  const lastId = pageIds[pageIds.length - 1];
  return {
    messages,
    nextCursor:
      hasMore && lastId !== undefined
        ? encodeCursor({ v: 1, q: queueId, s: state, d: direction, n: (cursor?.n ?? 0) + messages.length, o: start + pageIds.length, j: lastId })
        : null,
    total,
    sideEffects: [],
    ...(missing > 0 ? { missing } : {}),
  };
}

/** Jobs written by BullMQ < 5 keep attempts in `attemptsMade` instead of `atm`: read it for those. */
async function patchLegacyAttempts(client: Redis, base: string, legacy: QueueMessage[]): Promise<void> {
  if (legacy.length === 0) return;
  const p = client.pipeline();
  for (const m of legacy) p.hget(base + m.id, 'attemptsMade');
  const res = (await p.exec()) ?? [];
  legacy.forEach((m, i) => {
    const n = num(res[i]?.[1]);
    if (n !== null) m.meta.attemptsMade = n;
  });
}

/** True when a job read by SORT_RO needs {@link patchLegacyAttempts}. */
function isLegacyJob(job: RawJob): boolean {
  return job.has ? !job.has('atm') && job.has('finishedOn') : job.get('atm') === undefined && job.get('finishedOn') !== undefined;
}

/**
 * Reads up to `count` jobs of a sorted-set state (`failed`, `completed`…) from rank `start`,
 * oldest first, into the message model, for the redrive mover: the peek's SORT_RO … GET read
 * (same fields, same conversion as {@link peekBullmq}) but as one command for the whole batch on
 * the caller's connection — one round trip per batch instead of one per 50 jobs, which is what
 * the run waits on when Redis or the machine is busy. `ids` = the ids read in rank order (a job
 * whose hash is gone takes a rank but gives no message); `messages[i].position` = its rank.
 * Returns null when the server refuses SORT_RO (Redis < 7, ACL): the caller then pages with
 * {@link peekBullmq}, which falls back to ZRANGE + HGETALL.
 * @throws QueuescopeError `CANCELLED`; Redis errors as thrown by ioredis.
 */
export async function readSortedStateJobs(
  client: Redis,
  prefix: string,
  name: string,
  state: 'failed' | 'completed',
  start: number,
  count: number,
  maxBodyBytes: number,
  signal?: AbortSignal,
): Promise<{ messages: QueueMessage[]; ids: string[] } | null> {
  throwIfAborted(signal);
  const queueId = formatQueueId({ kind: 'bullmq', prefix, name });
  const base = `${prefix}:${name}:`;
  if (noSort.has(client) || base.includes('*')) return null;
  const messages: QueueMessage[] = [];
  const legacy: QueueMessage[] = [];
  const ids = await readPageBySort(
    client,
    stateKey(prefix, name, state),
    base,
    state,
    start,
    count,
    false,
    (i, id, job) => {
      if (!job) return;
      const msg = bullmqJobMessage(id, job, { queueId, queueName: name, position: start + i, state, maxBodyBytes });
      messages.push(msg);
      if (isLegacyJob(job)) legacy.push(msg);
    },
    signal,
    count,
    1,
  );
  if (ids === null) return null;
  await patchLegacyAttempts(client, base, legacy);
  return { messages, ids };
}

/**
 * Job hash fields the fast path reads, per state — BullMQ's job hash layout (`Job.fromJSON` /
 * `rawToJobJson` in BullMQ 6). Every returned value costs Redis and client time (measured here:
 * 19 fields ≈ 30% slower than 13), so fields that only matter in some states are read there only.
 * Index 1 (`data`) is kept as bytes. The HGETALL fallback reads every field.
 */
const BASE_FIELDS = ['name', 'data', 'opts', 'timestamp', 'delay', 'priority', 'processedOn', 'finishedOn', 'failedReason', 'stacktrace', 'atm', 'ats', 'deid', 'x-queuescope-redrive-count'];
const EXTRA_FIELDS: Partial<Record<BullmqState, string[]>> = {
  active: ['pb', 'progress', 'stc'],
  completed: ['returnvalue', 'pb', 'progress'],
  'waiting-children': ['parentKey'],
};
const FIELDS_BY_STATE = new Map<BullmqState, { list: string[]; index: Map<string, number> }>(
  BULLMQ_STATES.map((st) => {
    const list = [...BASE_FIELDS, ...(EXTRA_FIELDS[st] ?? [])];
    return [st, { list, index: new Map(list.map((f, i) => [f, i])) }];
  }),
);
/** Jobs per SORT_RO command; each chunk is converted as it arrives while Redis serves the next ({@link SORT_WINDOW}). */
const SORT_CHUNK = 50;
/** SORT_RO commands of a page in flight at once: 2 measured ~70k jobs/s here vs ~47k with all 20 sent together (3: no better). */
const SORT_WINDOW = 2;
/** Clients on which SORT_RO is refused (Redis < 7, ACL without it or without access to all keys — {@link isRefusal}): they read ids, then hashes. */
const noSort = new WeakSet<Redis>();

/**
 * Reads `count` jobs of a state from offset `start` with `SORT_RO <state key> BY nosort LIMIT … GET #
 * GET <prefix>:<name>:*->field …` (https://redis.io/docs/latest/commands/sort_ro/, Redis ≥ 7): one
 * read-only command returns the ids and the job fields, with none of the per-command cost of
 * 1,000 HGETALLs (measured here ~10 µs of client CPU per job instead of ~25–35). Hands each job to
 * `onJob(index, id, job)` (`job` null when its hash is gone). Returns the ids read, or null when the
 * server refuses the command (then this connection uses ids + HGETALL from now on).
 * Consecutive chunks are separate commands: a job leaving the state in between can shift one chunk by one.
 * @throws QueuescopeError `CANCELLED`; other Redis errors as thrown by ioredis.
 */
async function readPageBySort(
  client: Redis,
  key: string,
  base: string,
  state: BullmqState,
  start: number,
  count: number,
  desc: boolean,
  onJob: (index: number, id: string, job: RawJob | null) => void,
  signal?: AbortSignal,
  chunk = SORT_CHUNK,
  window = SORT_WINDOW,
): Promise<string[] | null> {
  const fields = FIELDS_BY_STATE.get(state) ?? { list: BASE_FIELDS, index: new Map<string, number>() };
  const gets: string[] = ['GET', '#'];
  for (const f of fields.list) gets.push('GET', `${base}*->${f}`);
  const width = fields.list.length + 1;
  type Settled = { ok: true; v: (Buffer | null)[] } | { ok: false; e: unknown };
  // A sliding window rather than all chunks at once: Redis runs every command it reads in one go
  // before it writes any reply, so 20 commands sent together kept the client idle for all 20 and
  // Redis idle while the client converted them. With SORT_WINDOW in flight, Redis serves the next
  // chunk while the client converts the last one.
  const inFlight: Promise<Settled>[] = [];
  let next = 0;
  const fill = (): void => {
    while (inFlight.length < window && next < count) {
      const args: (string | number)[] = [key, 'BY', 'nosort', 'LIMIT', start + next, Math.min(chunk, count - next)];
      if (desc) args.push('DESC');
      inFlight.push(
        (client.callBuffer('SORT_RO', ...args, ...gets) as Promise<(Buffer | null)[]>).then(
          (v) => ({ ok: true as const, v }),
          (e: unknown) => ({ ok: false as const, e }),
        ),
      );
      next += chunk;
    }
  };
  fill();
  const ids: string[] = [];
  const memo = new FieldMemo(width);
  while (inFlight.length > 0) {
    const r = await (inFlight.shift() as Promise<Settled>);
    if (!r.ok) {
      await Promise.all(inFlight);
      if (ids.length === 0 && isRefusal(r.e)) {
        noSort.add(client);
        return null;
      }
      throw r.e;
    }
    if (signal?.aborted) {
      await Promise.all(inFlight);
      throwIfAborted(signal);
    }
    fill();
    const v = r.v;
    for (let i = 0; i + width <= v.length; i += width) {
      const id = (v[i] as Buffer).toString('utf8');
      const index = ids.length;
      ids.push(id);
      if (v[i + 1] === null && v[i + 4] === null) {
        onJob(index, id, null); // neither name nor timestamp: the hash is gone
        continue;
      }
      onJob(index, id, new SortRow(v, i, fields.index, memo));
    }
  }
  return ids;
}

/**
 * The last decoded value of each field within one page read: consecutive jobs often carry the same
 * bytes (job name, options, failure reason and stack of one failure cause), which are then compared
 * (memcmp) instead of decoded and parsed again. Strings are immutable and shared; parsed JSON is
 * kept pristine and handed out as a fresh copy, so no two messages share a mutable object.
 */
class FieldMemo {
  readonly strBytes: (Buffer | null)[];
  readonly str: string[];
  readonly jsonBytes: (Buffer | null)[];
  readonly json: unknown[];
  constructor(width: number) {
    this.strBytes = new Array<Buffer | null>(width).fill(null);
    this.str = new Array<string>(width).fill('');
    this.jsonBytes = new Array<Buffer | null>(width).fill(null);
    this.json = new Array<unknown>(width).fill(null);
  }
}

/** A deep copy of a JSON.parse result (plain objects, arrays, primitives); own `__proto__` keys stay data. */
function cloneJson(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(cloneJson);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) {
    const x = cloneJson((v as Record<string, unknown>)[k]);
    if (k === '__proto__') Object.defineProperty(out, k, { value: x, enumerable: true, writable: true, configurable: true });
    else out[k] = x;
  }
  return out;
}

/** One job of a SORT_RO reply: fields decoded on demand. */
class SortRow implements RawJob {
  readonly data: Buffer | null;
  constructor(
    private readonly reply: (Buffer | null)[],
    private readonly offset: number,
    private readonly index: Map<string, number>,
    private readonly memo: FieldMemo,
  ) {
    this.data = reply[offset + 2] ?? null;
  }

  get(field: string): string | undefined {
    const k = this.index.get(field);
    const b = k === undefined ? null : this.reply[this.offset + 1 + k];
    if (!b) return undefined;
    const m = this.memo;
    const last = m.strBytes[k as number];
    if (last && last.equals(b)) return m.str[k as number];
    const s = b.toString('utf8');
    m.strBytes[k as number] = b;
    m.str[k as number] = s;
    return s;
  }

  has(field: string): boolean {
    const k = this.index.get(field);
    return k !== undefined && this.reply[this.offset + 1 + k] != null;
  }

  json(field: string): unknown {
    const k = this.index.get(field);
    const b = k === undefined ? null : this.reply[this.offset + 1 + k];
    if (!b || b.length === 0) return null;
    const m = this.memo;
    const last = m.jsonBytes[k as number];
    if (!last || !last.equals(b)) {
      m.jsonBytes[k as number] = b;
      m.json[k as number] = parseJson(b.toString('utf8'));
    }
    return cloneJson(m.json[k as number]);
  }

  int(field: string): number | null {
    const k = this.index.get(field);
    const b = k === undefined ? null : this.reply[this.offset + 1 + k];
    return b ? bytesToInt(b) : null;
  }
}

/**
 * Texts of Redis replies that refuse a command as such — unknown or renamed command, or an ACL
 * denial — as opposed to data or state errors. The ACL ones, as Redis 7.0 words them:
 * `NOPERM this user has no permissions to run the 'sort_ro' command`, `NOPERM … to access one of
 * the keys used as arguments`, and for SORT / SORT_RO with BY or GET patterns, which need access to
 * all keys (a user restricted to `~myapp:payments:*`): `ERR BY option of SORT denied due to
 * insufficient ACL permissions.` / `ERR GET option of SORT denied due to insufficient ACL permissions.`
 */
const REFUSAL = /^(NOPERM\b|ERR unknown command|ERR unknown subcommand|ERR.*not allowed|ERR.*\b(BY|GET) option|ERR.*insufficient ACL permissions|ERR.*no permissions to)/i;

/** True when Redis refused a command as such (unknown command, ACL, see {@link REFUSAL}), not for data or state errors. */
export function isRefusal(e: unknown): boolean {
  const err = e as { name?: unknown; message?: unknown } | null;
  return err?.name === 'ReplyError' && typeof err.message === 'string' && REFUSAL.test(err.message);
}

/** The Redis key holding a state's job ids (a list for waiting/active/paused, else a sorted set). */
export function bullmqStateKey(prefix: string, name: string, state: BullmqState): string {
  return stateKey(prefix, name, state);
}

/** Jobs per batch of HGETALLs; up to {@link WINDOW} batches are in flight, so Node converts one batch while Redis serves the next. */
const CHUNK = 250;
const WINDOW = 4;

/** A flat `[field, value, …]` HGETALL reply as Buffers → {@link RawJob}; null when empty (no such job). */
function rawJob(flat: Buffer[]): RawJob | null {
  if (flat.length === 0) return null;
  const fields: Record<string, string> = {};
  let data: Buffer | null = null;
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const f = (flat[i] as Buffer).toString('latin1');
    const v = flat[i + 1] as Buffer;
    if (f === 'data') data = v;
    else fields[f] = v.toString('utf8');
  }
  return rawJobFromRecord(fields, data);
}

/**
 * The fallback read when SORT_RO is refused: job hashes (HGETALL as Buffers,
 * https://redis.io/docs/latest/commands/hgetall/) in order, each handed to `onJob(index, job)` as
 * soon as its batch arrives (`null` for a missing hash). Bodies are cut to the peek's limit
 * afterwards, client-side: Redis has no substring read for hash fields.
 *
 * Each batch is raw `callBuffer('HGETALL')` calls issued in one tick, which ioredis writes as one
 * pipelined burst. Measured here per job: `pipeline().hgetallBuffer()` costs ~35–60 µs of client
 * CPU (Pipeline bookkeeping and reply-to-object conversion); raw calls ~12–20 µs with ~5–8 µs on
 * the Redis side. (A read-only Lua script returning many hashes was tried as well: ~9 µs client but
 * ~25 µs of Redis time per job, blocking a shared server for milliseconds, and it needs @scripting.)
 * @throws QueuescopeError `CANCELLED` between batches; Redis errors as thrown by ioredis.
 */
export async function readJobHashes(
  client: Redis,
  keys: string[],
  onJob: (index: number, job: RawJob | null) => void,
  signal?: AbortSignal,
): Promise<void> {
  type Settled = { ok: true; v: Buffer[][] } | { ok: false; e: unknown };
  const send = (from: number): Promise<Settled> =>
    Promise.all(keys.slice(from, from + CHUNK).map((k) => client.callBuffer('HGETALL', k) as Promise<Buffer[]>)).then(
      (v) => ({ ok: true as const, v }),
      (e: unknown) => ({ ok: false as const, e }),
    );
  const inFlight: Promise<Settled>[] = [];
  let next = 0;
  const fill = (): void => {
    while (inFlight.length < WINDOW && next < keys.length) {
      inFlight.push(send(next));
      next += CHUNK;
    }
  };
  fill();
  let index = 0;
  while (inFlight.length > 0) {
    const r = await (inFlight.shift() as Promise<Settled>);
    if (!r.ok) {
      await Promise.all(inFlight); // let the others settle quietly
      throw r.e;
    }
    if (signal?.aborted) {
      await Promise.all(inFlight);
      throwIfAborted(signal);
    }
    fill();
    for (const flat of r.v) onJob(index++, rawJob(flat));
  }
}

/** Reads `<prefix>:<name>:meta` and `:id` existence for many candidates at once (discovery). */
export async function confirmBullmqQueues(client: Redis, candidates: { prefix: string; name: string }[]): Promise<boolean[]> {
  if (candidates.length === 0) return [];
  const p = client.pipeline();
  for (const c of candidates) p.exists(`${c.prefix}:${c.name}:meta`, `${c.prefix}:${c.name}:id`);
  const res = (await p.exec()) ?? [];
  return candidates.map((_, i) => Number(res[i]?.[1] ?? 0) > 0);
}
