import { QueuescopeError } from '../../../shared/domain';
import {
  formatMs,
  policyFromBullmqOptions,
  TIMEOUT_SETTINGS,
  type CurrentSettings,
  type MeasureOptions,
  type Measurement,
  type RetryPolicy,
  type SourceOption,
  type TuningSource,
} from '../../../shared/tuning';
import { sleepBetweenPolls, type BrokerTuning } from '../tuning-types';
import { num, pairs, str, throwIfAborted, type RedisContext } from './context';
import { parseQueueId, type RedisQueueRef } from './ids';

/** BullMQ: most recent finished jobs read by default. */
const DEFAULT_MAX_JOBS = 10_000;
/** Job hashes read per pipeline. */
const JOB_BATCH = 1000;
/** PEL entries read per XPENDING sample. */
const PEL_COUNT = 1000;
/** Default time between two PEL samples, ms. */
const DEFAULT_PEL_INTERVAL_MS = 100;

/** Short keys BullMQ 6 may store in `opts` (subset we need: attempts/backoff are stored as is). */
const BULLMQ_SOURCE: Omit<SourceOption, 'available'> = {
  source: 'bullmq',
  measures: 'processedOn → finishedOn of completed and failed jobs (the last attempt of each job), read from Redis',
  confidence: 'exact',
  confidenceNote: 'Exact per-job times recorded by BullMQ (ms clock of the worker host). Only jobs still kept by removeOnComplete/removeOnFail are seen.',
  needsWindow: false,
};

const PEL_SOURCE: Omit<SourceOption, 'available'> = {
  source: 'pel',
  measures: "time from delivery to XACK of pending entries, sampled from the consumer group's pending entries list (XPENDING idle times)",
  confidence: 'bounded',
  confidenceNote:
    'Each entry that leaves the pending entries list between two samples took between its last idle time and that plus the sampling interval (reported as the midpoint, ± half the interval). Entries processed faster than the interval may be missed. Needs live traffic during the window.',
  needsWindow: true,
};

/**
 * Tuning access for Redis: BullMQ job history and Redis Streams PEL sampling. Read-only
 * (HMGET, ZREVRANGE, XINFO, XPENDING). Lists are not supported (no in-flight state).
 * Commands followed: https://redis.io/docs/latest/commands/xpending/ (extended form: id, consumer,
 * idle ms, delivery count); BullMQ job hash fields `processedOn`, `finishedOn`, `atm`, `stc`, `opts`.
 */
export function createRedisTuning(ctx: RedisContext): BrokerTuning {
  return {
    async sources(queueId, signal) {
      const ref = tunable(queueId);
      await ensureExists(ctx, ref, signal);
      return ref.kind === 'bullmq' ? [{ ...BULLMQ_SOURCE, available: true }] : [{ ...PEL_SOURCE, available: true }];
    },

    async readSettings(queueId, signal) {
      const ref = tunable(queueId);
      await ensureExists(ctx, ref, signal);
      if (ref.kind === 'bullmq') {
        const retryPolicy = await latestRetryPolicy(ctx, ref.prefix, ref.name, signal);
        return {
          target: 'bullmq',
          timeoutMs: TIMEOUT_SETTINGS.bullmq.defaultMs,
          timeoutSource: "BullMQ's default lockDuration (30 s): worker options are not stored in Redis — enter your worker's lockDuration if you set one",
          maxReceiveCount: null,
          deadLetterTarget: null,
          brokerVersion: null,
          perQueueTimeoutSupported: null,
          retryPolicy,
          notes: retryPolicy ? [`Retry policy read from the most recent job's options (attempts ${retryPolicy.attempts}, ${retryPolicy.type} backoff).`] : [],
        } satisfies CurrentSettings;
      }
      const groups = await streamGroups(ctx, ref.key, signal);
      return {
        target: 'redis-stream',
        timeoutMs: null,
        timeoutSource: "the min-idle-time your claiming consumer passes to XAUTOCLAIM/XCLAIM (application code; not stored in Redis) — enter it if you have one",
        maxReceiveCount: null,
        deadLetterTarget: null,
        brokerVersion: null,
        perQueueTimeoutSupported: null,
        retryPolicy: null,
        streamKey: ref.key,
        ...(groups[0] !== undefined ? { group: groups[0].name } : {}),
        notes: groups.length === 0 ? ['The stream has no consumer group: nothing is pending, so there is nothing to time.'] : [],
      } satisfies CurrentSettings;
    },

    async measure(queueId, source: TuningSource, options: MeasureOptions, signal) {
      const ref = tunable(queueId);
      await ensureExists(ctx, ref, signal);
      if (ref.kind === 'bullmq') {
        if (source !== 'bullmq') throw wrongSource(source, 'a BullMQ queue', 'bullmq');
        return measureBullmq(ctx, ref.prefix, ref.name, options, signal);
      }
      if (source !== 'pel') throw wrongSource(source, 'a Redis Stream', 'pel');
      return measurePel(ctx, ref.key, options, signal);
    },
  };
}

type Tunable = Exclude<RedisQueueRef, { kind: 'list' }>;

function tunable(queueId: string): Tunable {
  const ref = parseQueueId(queueId);
  if (ref.kind === 'list') {
    throw new QueuescopeError(
      'UNSUPPORTED',
      `${queueId} is a plain Redis list: popped items leave no in-flight record and the list has no visibility timeout to tune. If your consumers use a reliable-queue pattern (LMOVE to a processing list and a reaper), its timeout lives in your code: size it from your logs (p99 × 3).`,
      { queueId },
    );
  }
  return ref;
}

function wrongSource(source: string, what: string, right: string): QueuescopeError {
  return new QueuescopeError('INVALID_INPUT', `The source "${source}" does not apply to ${what}: use "${right}" (or "file").`, { source });
}

async function ensureExists(ctx: RedisContext, ref: Tunable, signal?: AbortSignal): Promise<void> {
  const client = await ctx.client(signal);
  if (ref.kind === 'bullmq') {
    const n = await client.exists(`${ref.prefix}:${ref.name}:meta`, `${ref.prefix}:${ref.name}:id`, `${ref.prefix}:${ref.name}:completed`, `${ref.prefix}:${ref.name}:failed`);
    if (n === 0) throw new QueuescopeError('QUEUE_NOT_FOUND', `BullMQ queue "${ref.name}" (prefix "${ref.prefix}") was not found.`, { queue: ref.name });
  } else if ((await client.type(ref.key)) !== 'stream') {
    throw new QueuescopeError('QUEUE_NOT_FOUND', `Redis key "${ref.key}" is not a stream (any more).`, { key: ref.key });
  }
}

interface JobTimes {
  processedOn: number | null;
  finishedOn: number | null;
  attemptsMade: number;
  stalled: number;
  opts: string | null;
}

/** Job hashes per EVAL_RO of {@link TIMES_SCRIPT}. */
const SCRIPT_BATCH = 5000;
/**
 * Read-only Lua: HMGET of the timing fields of every key, flattened (5 values per job, false for a
 * missing field). One command per 5,000 jobs: ~3–7× faster than pipelined HMGETs, whose per-reply
 * parsing dominates in Node (measured in bench/tuning.ts).
 */
const TIMES_SCRIPT = `local out = {}
for _, k in ipairs(KEYS) do
  local v = redis.call('HMGET', k, 'processedOn', 'finishedOn', 'atm', 'attemptsMade', 'stc')
  for i = 1, 5 do out[#out + 1] = v[i] or false end
end
return out`;

function jobTimes(v: unknown[], opts: unknown): JobTimes {
  const [po, fo, atm, legacyAtm, stc] = v;
  return { processedOn: num(po), finishedOn: num(fo), attemptsMade: num(atm) ?? num(legacyAtm) ?? 0, stalled: num(stc) ?? 0, opts: str(opts) };
}

/**
 * Reads the timing fields of jobs: the first `withOpts` with `opts` too (pipelined HMGET; `opts` is
 * the largest field), the rest with a read-only script per {@link SCRIPT_BATCH} jobs — or pipelined
 * HMGETs where scripts are not permitted (managed Redis with EVAL disabled, Redis < 7 without EVAL_RO).
 */
async function readJobs(ctx: RedisContext, prefix: string, name: string, ids: string[], signal?: AbortSignal, withOpts = ids.length): Promise<JobTimes[]> {
  const client = await ctx.client(signal);
  const key = (id: string): string => `${prefix}:${name}:${id}`;
  const out: JobTimes[] = [];
  const pipelined = async (part: string[], opts: boolean): Promise<void> => {
    for (let i = 0; i < part.length; i += JOB_BATCH) {
      throwIfAborted(signal);
      const p = client.pipeline();
      for (const id of part.slice(i, i + JOB_BATCH)) {
        if (opts) p.hmget(key(id), 'processedOn', 'finishedOn', 'atm', 'attemptsMade', 'stc', 'opts');
        else p.hmget(key(id), 'processedOn', 'finishedOn', 'atm', 'attemptsMade', 'stc');
      }
      for (const [err, v] of (await p.exec()) ?? []) if (!err && Array.isArray(v)) out.push(jobTimes(v as unknown[], (v as unknown[])[5]));
    }
  };
  await pipelined(ids.slice(0, withOpts), true);
  const rest = ids.slice(withOpts);
  for (let i = 0; i < rest.length; i += SCRIPT_BATCH) {
    throwIfAborted(signal);
    const keys = rest.slice(i, i + SCRIPT_BATCH).map(key);
    let flat: unknown;
    try {
      flat = await client.call('EVAL_RO', TIMES_SCRIPT, keys.length, ...keys);
    } catch {
      await pipelined(rest.slice(i), false);
      break;
    }
    if (!Array.isArray(flat)) continue;
    for (let j = 0; j + 4 < flat.length; j += 5) out.push(jobTimes(flat.slice(j, j + 5) as unknown[], null));
  }
  return out;
}

async function latestRetryPolicy(ctx: RedisContext, prefix: string, name: string, signal?: AbortSignal): Promise<RetryPolicy | null> {
  const client = await ctx.client(signal);
  const ids = [...(await client.zrevrange(`${prefix}:${name}:failed`, 0, 0)), ...(await client.zrevrange(`${prefix}:${name}:completed`, 0, 0))];
  const jobs = await readJobs(ctx, prefix, name, ids, signal);
  for (const j of jobs) {
    if (j.opts === null) continue;
    try {
      const p = policyFromBullmqOptions(JSON.parse(j.opts));
      if (p) return p;
    } catch {
      /* unreadable opts: no policy */
    }
  }
  return null;
}

async function measureBullmq(ctx: RedisContext, prefix: string, name: string, options: MeasureOptions, signal?: AbortSignal): Promise<Measurement> {
  const client = await ctx.client(signal);
  const max = Math.max(1, Math.min(1_000_000, options.maxSamples ?? DEFAULT_MAX_JOBS));
  // Most recent first: the sorted sets are scored by finishedOn.
  const [completed, failed] = await Promise.all([client.zrevrange(`${prefix}:${name}:completed`, 0, max - 1), client.zrevrange(`${prefix}:${name}:failed`, 0, max - 1)]);
  const ids = [...completed, ...failed];
  // opts (for the retry policy) of the most recent jobs only: it is the largest field.
  const jobs = await readJobs(ctx, prefix, name, ids, signal, 100);
  const samplesMs: number[] = [];
  let missing = 0;
  let retried = 0;
  let stalled = 0;
  const attemptsHist = new Map<number, number>();
  let policy: RetryPolicy | null = null;
  for (const j of jobs) {
    if (j.processedOn === null || j.finishedOn === null || j.finishedOn < j.processedOn) missing++;
    else samplesMs.push(j.finishedOn - j.processedOn);
    if (j.attemptsMade > 1) retried++;
    if (j.stalled > 0) stalled++;
    attemptsHist.set(j.attemptsMade, (attemptsHist.get(j.attemptsMade) ?? 0) + 1);
    if (policy === null && j.opts !== null) {
      try {
        policy = policyFromBullmqOptions(JSON.parse(j.opts));
      } catch {
        /* ignore */
      }
    }
  }
  options.onProgress?.({ fraction: 1, polls: 1, samples: samplesMs.length });
  const notes: string[] = [];
  if (ids.length === 0) notes.push(`BullMQ queue "${name}" has no completed or failed jobs to time (removeOnComplete/removeOnFail may delete them at once): run with a worker first, or import durations from logs.`);
  if (missing > 0) notes.push(`${missing} job(s) without both processedOn and finishedOn were skipped.`);
  if (completed.length >= max || failed.length >= max) notes.push(`Read the most recent ${max.toLocaleString('en-US')} completed and ${max.toLocaleString('en-US')} failed jobs.`);
  notes.push('For a retried job, processedOn is the start of its last attempt, so each sample is one attempt.');
  return {
    source: 'bullmq',
    measures: BULLMQ_SOURCE.measures,
    confidence: 'exact',
    confidenceNote: BULLMQ_SOURCE.confidenceNote,
    samplesMs,
    meanMs: null,
    sampleErrorMs: 0,
    redeliveries: {
      redelivered: retried + stalled,
      observed: jobs.length,
      ratePerSecond: null,
      histogram: [...attemptsHist.entries()].sort((a, b) => a[0] - b[0]).map(([count, messages]) => ({ count, messages })),
      note: `${retried} job(s) needed more than one attempt (retries after failure); ${stalled} were recovered from a stalled state (lock lost: processed twice). Histogram: attemptsMade → jobs.`,
    },
    retryPolicy: policy,
    startedAt: null,
    endedAt: null,
    polls: 1,
    notes,
  };
}

async function streamGroups(ctx: RedisContext, key: string, signal?: AbortSignal): Promise<{ name: string; pending: number }[]> {
  const client = await ctx.client(signal);
  const raw = (await client.xinfo('GROUPS', key)) as unknown[];
  return raw.map((g) => {
    const p = pairs(g);
    return { name: str(p.name) ?? '', pending: num(p.pending) ?? 0 };
  });
}

interface PelEntry {
  /** Local time of the sample that last saw it, ms. */
  seenAt: number;
  idleMs: number;
  deliveries: number;
  consumer: string;
}

async function measurePel(ctx: RedisContext, key: string, options: MeasureOptions, signal?: AbortSignal): Promise<Measurement> {
  const client = await ctx.client(signal);
  const groups = await streamGroups(ctx, key, signal);
  const groupName = options.group ?? groups[0]?.name;
  if (groupName === undefined) throw new QueuescopeError('UNSUPPORTED', `Stream "${key}" has no consumer group: there is no pending entries list to sample.`, { key });
  if (!groups.some((g) => g.name === groupName)) throw new QueuescopeError('INVALID_INPUT', `Stream "${key}" has no consumer group "${groupName}" (groups: ${groups.map((g) => g.name).join(', ') || 'none'}).`, { key });
  const intervalMs = Math.max(10, options.intervalMs ?? DEFAULT_PEL_INTERVAL_MS);
  const windowMs = Math.max(intervalMs, options.windowMs);
  const startedAt = Date.now();
  let prev = new Map<string, PelEntry>();
  let prevAt = 0;
  const samplesMs: number[] = [];
  const gaps: number[] = [];
  const redeliveredIds = new Set<string>();
  const seenIds = new Set<string>();
  const deliveryHist = new Map<string, number>();
  let polls = 0;
  let truncated = false;
  for (;;) {
    throwIfAborted(signal);
    const reply = await client.xpending(key, groupName, 'IDLE', 0, '-', '+', PEL_COUNT);
    const at = Date.now();
    polls++;
    if (reply.length >= PEL_COUNT) truncated = true;
    const now = new Map<string, PelEntry>();
    for (const row of reply) {
      if (!Array.isArray(row)) continue;
      const id = str(row[0]);
      if (id === null) continue;
      const e: PelEntry = { seenAt: at, consumer: str(row[1]) ?? '', idleMs: num(row[2]) ?? 0, deliveries: num(row[3]) ?? 1 };
      now.set(id, e);
      seenIds.add(id);
      deliveryHist.set(id, e.deliveries);
      if (e.deliveries > 1) redeliveredIds.add(id);
      const before = prev.get(id);
      // Claimed by someone else, or redelivered: the earlier delivery's processing ended unobserved.
      if (before && (before.deliveries !== e.deliveries || before.consumer !== e.consumer)) redeliveredIds.add(id);
    }
    if (polls > 1) {
      const gap = at - prevAt;
      for (const [id, e] of prev) {
        if (now.has(id)) continue;
        samplesMs.push(e.idleMs + gap / 2);
        gaps.push(gap);
      }
    }
    prev = now;
    prevAt = at;
    const elapsed = at - startedAt;
    options.onProgress?.({ fraction: Math.min(1, elapsed / windowMs), polls, samples: samplesMs.length });
    if (elapsed >= windowMs) break;
    // A random interval (0.5–1.5 × the mean) keeps the samples from phase-locking with a regular
    // service time (a 200 ms job sampled every 100 ms would otherwise be seen at the same phase every time).
    await sleepBetweenPolls(Math.min(intervalMs * (0.5 + Math.random()), windowMs - elapsed), signal);
  }
  const endedAt = Date.now();
  const meanGap = gaps.length === 0 ? intervalMs : gaps.reduce((a, b) => a + b, 0) / gaps.length;
  const stillPending = [...prev.values()];
  const notes: string[] = [];
  if (samplesMs.length === 0) notes.push(`No entry of group "${groupName}" was acknowledged during the ${Math.round(windowMs / 1000)} s window: measure while consumers are working (or import durations from logs).`);
  if (stillPending.length > 0) {
    const oldest = Math.max(...stillPending.map((e) => e.idleMs));
    notes.push(`${stillPending.length} entr${stillPending.length === 1 ? 'y was' : 'ies were'} still pending at the end (oldest idle ${formatMs(oldest)}); they are not in the samples${oldest > windowMs ? ' — entries idle longer than the window may be stranded (their consumer died): claim them' : ''}.`);
  }
  if (truncated) notes.push(`The pending entries list held more than ${PEL_COUNT} entries: only the oldest ${PEL_COUNT} were tracked.`);
  notes.push(`Sampled every ~${Math.round(meanGap)} ms on average (randomised intervals): entries processed faster than that may be missed, so the sample leans towards longer entries.`);
  const hist = new Map<number, number>();
  for (const d of deliveryHist.values()) hist.set(d, (hist.get(d) ?? 0) + 1);
  return {
    source: 'pel',
    measures: `${PEL_SOURCE.measures}, group "${groupName}"`,
    confidence: 'bounded',
    confidenceNote: PEL_SOURCE.confidenceNote,
    samplesMs,
    meanMs: null,
    sampleErrorMs: meanGap / 2,
    redeliveries: {
      redelivered: redeliveredIds.size,
      observed: seenIds.size,
      ratePerSecond: null,
      histogram: [...hist.entries()].sort((a, b) => a[0] - b[0]).map(([count, messages]) => ({ count, messages })),
      note: 'Entries with a delivery count above 1 (or claimed by another consumer during the window) were delivered more than once. Histogram: delivery count → entries.',
    },
    retryPolicy: null,
    startedAt,
    endedAt,
    polls,
    notes,
  };
}
