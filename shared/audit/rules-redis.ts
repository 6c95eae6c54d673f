/**
 * Redis audit rules: server settings (`CONFIG GET`, or INFO where CONFIG is refused), BullMQ job options (the `opts` field of job
 * hashes) and Streams consumer groups (XINFO, XPENDING).
 */
import { DEFAULT_FACTOR } from '../tuning/recommend';
import { fmtMs, notApplicable, p99Text, notChecked, pass, type QueueRule, type ServerRule } from './rule-kit';
import type { BullmqQueueFacts, RedisServerFacts, RemoveOnFail, StreamFacts } from './types';

export const redisMaxmemoryPolicy: ServerRule<RedisServerFacts> = {
  kind: 'redis-server',
  meta: {
    id: 'redis.maxmemory-policy',
    broker: 'redis',
    scope: 'server',
    severity: 'error',
    title: 'maxmemory-policy is not noeviction',
    why: 'With any eviction policy other than noeviction, Redis deletes keys when memory runs out — queued jobs, job hashes and stream entries vanish without an error (BullMQ requires noeviction).',
    fix: 'Set maxmemory-policy noeviction (redis.conf or CONFIG SET), so writes fail loudly instead of jobs disappearing; size maxmemory for the backlog.',
    docUrl: 'https://docs.bullmq.io/guide/going-to-production#max-memory-policy',
    thresholds: {},
  },
  check(s) {
    if (!s.holdsQueues) return notApplicable;
    if (s.maxmemoryPolicy === null) return notChecked(s.configError !== null ? `CONFIG GET is not available: ${s.configError}` : 'maxmemory-policy could not be read');
    // A value with configError set was read from INFO memory (core/adapters/redis/audit.ts readInfoFallback).
    const viaInfo = s.configError !== null;
    const source = viaInfo ? `INFO memory maxmemory_policy (CONFIG GET is not available: ${s.configError ?? ''})` : 'CONFIG GET maxmemory-policy';
    if (s.maxmemoryPolicy === 'noeviction') return viaInfo ? pass(`read from ${source}`) : pass();
    return {
      status: 'fail',
      message: `maxmemory-policy is ${s.maxmemoryPolicy} on ${s.label}${viaInfo ? ' (read from INFO memory: CONFIG GET is not available)' : ''}: under memory pressure Redis evicts queue keys.`,
      evidence: { maxmemoryPolicy: s.maxmemoryPolicy, source },
    };
  },
};

export const redisNoPersistence: ServerRule<RedisServerFacts> = {
  kind: 'redis-server',
  meta: {
    id: 'redis.no-persistence',
    broker: 'redis',
    scope: 'server',
    severity: 'error',
    title: 'No persistence (neither RDB nor AOF)',
    why: 'A Redis server holding queues with neither RDB snapshots nor the append-only file loses every queued job, stream entry and pending entry on a restart.',
    fix: 'Enable AOF (appendonly yes, appendfsync everysec) and/or RDB snapshots (save 3600 1 300 100 60 10000), or use a managed Redis with persistence.',
    docUrl: 'https://redis.io/docs/latest/operate/oss_and_stack/management/persistence/',
    thresholds: {},
  },
  check(s) {
    if (!s.holdsQueues) return notApplicable;
    if (s.configError !== null) {
      // CONFIG GET refused: `appendonly` came from INFO persistence aof_enabled (core/adapters/redis/audit.ts
      // readInfoFallback); INFO does not show the RDB `save` schedule, so "no persistence" cannot be proven.
      if (s.appendonly === 'yes') return pass(`AOF (read from INFO persistence aof_enabled:1; CONFIG GET is not available: ${s.configError})`);
      if (s.appendonly === 'no') {
        return notChecked(`AOF is off (INFO persistence aof_enabled:0), but whether RDB snapshots are scheduled cannot be read: CONFIG GET save is not available (${s.configError}) and INFO does not show the save setting`);
      }
      return notChecked(`save / appendonly could not be read: CONFIG GET is not available (${s.configError}) and INFO persistence did not answer`);
    }
    if (s.save === null || s.appendonly === null) return notChecked('save / appendonly could not be read');
    const rdb = s.save.trim() !== '';
    const aof = s.appendonly === 'yes';
    if (rdb || aof) return pass(`${aof ? 'AOF' : ''}${aof && rdb ? ' + ' : ''}${rdb ? `RDB (save ${s.save})` : ''}`);
    return { status: 'fail', message: `${s.label} holds queues but has save "" and appendonly no: a restart loses them all.`, evidence: { save: s.save, appendonly: s.appendonly } };
  },
};

function describeRemove(v: RemoveOnFail): string {
  if (v === null) return 'absent';
  if (typeof v === 'boolean' || typeof v === 'number') return String(v);
  return JSON.stringify(v);
}

export const bullmqRemoveOnFail: QueueRule<BullmqQueueFacts> = {
  kind: 'bullmq',
  meta: {
    id: 'redis.bullmq-remove-on-fail',
    broker: 'redis',
    scope: 'queue',
    severity: 'error',
    title: 'BullMQ removes failed jobs',
    why: "BullMQ has no dead-letter queue: the failed set is it. removeOnFail: true (or a small count/age) deletes failed jobs, so failures vanish with their data and stack traces and cannot be retried.",
    fix: 'Keep failed jobs: omit removeOnFail, or use { count: 10000 } / { age: 604800 } (7 days, seconds) in defaultJobOptions, and alert on the failed count.',
    docUrl: 'https://docs.bullmq.io/guide/queues/auto-removal-of-jobs',
    thresholds: {
      minCount: { default: 1000, min: 1, description: 'removeOnFail counts below this are reported (jobs kept)' },
      minAgeS: { default: 86_400, min: 1, description: 'removeOnFail ages below this are reported (seconds)' },
    },
  },
  check(q, ctx) {
    if (q.jobsRead === 0) return notChecked('no recent jobs to read options from');
    const minCount = ctx.threshold('minCount');
    const minAge = ctx.threshold('minAgeS');
    const bad = q.removeOnFail.filter(({ value: v }) => {
      if (v === true) return true;
      if (typeof v === 'number') return v < minCount;
      if (v !== null && typeof v === 'object') return (v.count !== undefined && v.count < minCount) || (v.age !== undefined && v.age < minAge);
      return false;
    });
    if (bad.length === 0) return pass();
    const jobs = bad.reduce((n, b) => n + b.jobs, 0);
    return {
      status: 'fail',
      message: `${jobs} of ${q.jobsRead} recent jobs of ${q.name} have removeOnFail ${[...new Set(bad.map((b) => describeRemove(b.value)))].join(', ')} (e.g. job ${bad[0]?.exampleJobId ?? '?'}): failed jobs are deleted.`,
      evidence: { removeOnFail: bad, jobsRead: q.jobsRead, minCount, minAgeS: minAge },
    };
  },
};

export const bullmqLockDuration: QueueRule<BullmqQueueFacts> = {
  kind: 'bullmq',
  meta: {
    id: 'redis.bullmq-lock-duration-below-processing-time',
    broker: 'redis',
    scope: 'queue',
    severity: 'warning',
    title: 'BullMQ lockDuration below measured processing time',
    why: 'A job whose lock expires (the worker blocked its event loop longer than lockDuration) is declared stalled and run again by another worker while the first one is still processing: a duplicate.',
    fix: 'Set the Worker lockDuration to several times the measured p99 (`queuescope tune`; keep the event loop free so locks are renewed; move CPU-heavy work to sandboxed processors).',
    docUrl: 'https://docs.bullmq.io/guide/workers/stalled-jobs',
    thresholds: {
      lockDurationMs: { default: 30_000, min: 1, description: 'the Worker lockDuration in use, ms (BullMQ default 30000; workers do not store it in Redis)' },
      // The factor `queuescope tune` recommends with: with 1 a p99 of 15 s passed against 30 s while tune --fail-on risk failed it.
      safetyFactor: { default: DEFAULT_FACTOR, min: 1, max: 100, description: 'lockDuration must be at least this many times the measured p99 (default 3, the factor queuescope tune recommends with)' },
    },
    needsMeasurement: true,
  },
  check(q, ctx) {
    const m = ctx.measurement(q);
    if (!m || m.p99Ms === null) return notChecked('no measurement');
    const lock = ctx.threshold('lockDurationMs');
    const factor = ctx.threshold('safetyFactor');
    const need = m.p99Ms * factor;
    const p99 = p99Text({ ...m, p99Ms: m.p99Ms });
    if (lock >= need) return pass(`lockDuration ${fmtMs(lock)} ≥ ${factor === 1 ? `the ${p99}` : `${String(factor)} × ${p99}`}`);
    return {
      status: 'fail',
      message: `lockDuration ${fmtMs(lock)} of ${q.name} is below ${factor === 1 ? `the ${p99}` : `${String(factor)} × ${p99} = ${fmtMs(need)}`}.`,
      evidence: { lockDurationMs: lock, p99Ms: m.p99Ms, p99Basis: m.p99Basis, meanMs: m.meanMs, safetyFactor: factor, measurementSource: m.source },
    };
  },
};

export const streamTrimmedWhilePending: QueueRule<StreamFacts> = {
  kind: 'redis-stream',
  meta: {
    id: 'redis.stream-trimmed-while-pending',
    broker: 'redis',
    scope: 'queue',
    severity: 'error',
    title: 'Stream trimmed while entries are pending',
    why: 'XADD MAXLEN/MINID and XTRIM remove entries whether or not a consumer group still has them pending: the pending entries list then points at deleted entries and the work is lost (XCLAIM returns nothing for them).',
    fix: 'Trim by MINID below the oldest pending id of every group (or by an approximate MAXLEN sized far above the backlog), and acknowledge or claim pending entries before they age out.',
    docUrl: 'https://redis.io/docs/latest/commands/xtrim/',
    thresholds: {},
  },
  check(s) {
    if (s.groups.length === 0) return notApplicable;
    const hit = s.groups.filter((g) => g.pendingDeleted.length > 0);
    if (hit.length > 0) {
      const n = hit.reduce((a, g) => a + g.pendingDeleted.length, 0);
      return {
        status: 'fail',
        message: `${n} pending entr${n === 1 ? 'y' : 'ies'} of ${hit.map((g) => `group ${g.name}`).join(', ')} on ${s.name} point at stream entries that were trimmed or deleted (e.g. ${hit[0]?.pendingDeleted[0] ?? '?'}).`,
        evidence: { groups: hit.map((g) => ({ group: g.name, deletedPending: g.pendingDeleted.slice(0, 10) })), length: s.length, entriesAdded: s.entriesAdded, maxDeletedEntryId: s.maxDeletedEntryId },
      };
    }
    return pass();
  },
};

export const streamStrandedPending: QueueRule<StreamFacts> = {
  kind: 'redis-stream',
  meta: {
    id: 'redis.stream-stranded-pending-entries',
    broker: 'redis',
    scope: 'queue',
    severity: 'warning',
    title: 'Pending entries idle far longer than the claim time',
    why: 'A pending entry idle much longer than the time after which consumers claim (XAUTOCLAIM) belongs to a consumer that crashed and nobody is reclaiming it: stranded work that is never processed.',
    fix: 'Run XAUTOCLAIM with a min-idle-time in every consumer (or a janitor), dead-letter entries whose delivery count is high, and delete consumers that are gone (XGROUP DELCONSUMER).',
    docUrl: 'https://redis.io/docs/latest/commands/xautoclaim/',
    thresholds: {
      claimIdleMs: { default: 60_000, min: 1, description: 'the min-idle-time your consumers claim after, ms' },
      factor: { default: 10, min: 1, description: 'entries idle more than factor × claimIdleMs are stranded' },
    },
  },
  check(s, ctx) {
    if (s.groups.length === 0) return notApplicable;
    const limit = ctx.threshold('claimIdleMs') * ctx.threshold('factor');
    const stranded = s.groups.map((g) => ({ group: g.name, entries: g.pendingSample.filter((p) => p.idleMs > limit) })).filter((g) => g.entries.length > 0);
    if (stranded.length === 0) return pass();
    const n = stranded.reduce((a, g) => a + g.entries.length, 0);
    const oldest = Math.max(...stranded.flatMap((g) => g.entries.map((e) => e.idleMs)));
    const consumers = [...new Set(stranded.flatMap((g) => g.entries.map((e) => e.consumer)))];
    return {
      status: 'fail',
      message: `${n} pending entr${n === 1 ? 'y' : 'ies'} of ${stranded.map((g) => `group ${g.group}`).join(', ')} on ${s.name} ${n === 1 ? 'has' : 'have'} been idle longer than ${fmtMs(limit)} (oldest ${fmtMs(oldest)}; consumer${consumers.length === 1 ? '' : 's'} ${consumers.join(', ')}).`,
      evidence: { stranded: stranded.map((g) => ({ group: g.group, ids: g.entries.slice(0, 10).map((e) => e.id), count: g.entries.length })), oldestIdleMs: oldest, limitMs: limit },
    };
  },
};

export const REDIS_SERVER_RULES: ServerRule<RedisServerFacts>[] = [redisMaxmemoryPolicy, redisNoPersistence];
export const BULLMQ_RULES: QueueRule<BullmqQueueFacts>[] = [bullmqRemoveOnFail, bullmqLockDuration];
export const STREAM_RULES: QueueRule<StreamFacts>[] = [streamTrimmedWhilePending, streamStrandedPending];
