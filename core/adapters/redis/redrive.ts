import type { Redis } from 'ioredis';
import type { Queue } from 'bullmq';
import { QueuescopeError, type ErrorInfo, type HeaderValue, type QueueMessage, type QueueSummary } from '../../../shared/domain';
import {
  RECENT_DELIVERY_MS,
  REDRIVE_COUNT_HEADER,
  type ClientMoveOptions,
  type MoveBatchResult,
  type MoveHooks,
  type MoveSummary,
  type NativeMoveHandle,
  type NativeMoveStatus,
  type NativeMoveSupport,
  headerLossCounter,
  type OlderSnapshotTally,
  type PublishLossTally,
  type RedriveMover,
} from '../redrive-types';
import { DEFAULT_MAX_BODY_BYTES } from './body';
import { snapshotLineProblem } from '../../snapshot/format';
import { checkPendingMinIdle } from '../../../shared/redrive/types';
import { ensureDatabase, mapRedisError } from './connection';
import { num, throwIfAborted, type RedisContext } from './context';
import { formatQueueId, parseQueueId } from './ids';
import { unrecordedFieldOrder } from './stream';
import { BullmqSource, jobData, jobOptionsFrom, ListSource, redriveJobId, REDRIVEN_FROM_FIELD, StreamSource, type BatchSource, type PlannedMove } from './redrive-sources';

/**
 * The Redis {@link RedriveMover} (issue 4), exposed as the Redis adapter's `redrive`.
 *
 * What a DLQ is here, and how a message moves — always in one Lua script per batch (publish to the
 * target, then remove from the DLQ; atomic: a crash or restart sees a batch fully applied or not at all):
 * - **BullMQ**: the DLQ is a queue's `failed` set (ClientMoveOptions.state `failed`, or `completed`).
 *   Target = the job's own queue: what BullMQ's `reprocessJob` script (run by `Job.retry()`) does,
 *   for the whole batch in one script (redrive-lua.ts `BULLMQ_RETRY_BATCH_LUA`, checked against
 *   `Job.retry` by test/integration/redrive-bullmq-retry.test.ts), moves it failed → waiting with
 *   attemptsMade/attemptsStarted reset (a fresh attempt budget, as
 *   `Job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true })`; BullMQ's
 *   default retry and `queue.retryJobs` keep attemptsMade, so such a job gets one more attempt
 *   only). The redrive counter is the job hash field `x-queuescope-redrive-count`, incremented in
 *   the same script; job data is never modified. Target = another BullMQ queue: the job is re-added
 *   there with the same name, data and options (custom job id kept), then removed — ordered, not
 *   one script, see `BullmqSource.moveToOtherQueues`. Cutoff: the job's `finishedOn`.
 * - **Streams**: XADD of the entry's fields, in order, to the target stream (new entry id) with
 *   the counter field `x-queuescope-redrive-count` (+1), XDEL from the DLQ, and XACK in every
 *   consumer group of the DLQ so no pending entries list keeps pointing at a deleted entry.
 *   Entries pending in a group are read with their XPENDING idle time (`meta.state` `pending`):
 *   the engine leaves those delivered less than a minute ago (`pendingMinIdleMs`) in the DLQ unless
 *   pending entries are included, and the summary's `warnings` name the groups, consumers, counts and idle times.
 *   Cutoff: the entry id's time. The target must be set by the user (mapping); a
 *   `<name>-dlq` / `<name>:dlq` / `dlq:<name>` naming convention is offered as a suggestion.
 * - **Lists**: the head is index 0 (the left end, as the list adapter peeks); moved elements are
 *   appended to the target's right end in DLQ order; skipped ones stay where they were. Bounded by
 *   the list's length at the start. A list element has no headers: no redrive counter is added and
 *   the bytes are moved unchanged. Entries a consumer of the DLQ pops between a batch's read and its
 *   move are reported taken (failed), the rest of the batch moves (see `ListSource`).
 *
 * Moves run on a connection of their own that never re-sends a command after a reconnect (ioredis
 * `autoResendUnfulfilledCommands` off) and does not reconnect: a script is never run twice, and a
 * lost connection ends the run with an error instead of waiting.
 */
export function createRedisRedriveMover(ctx: RedisContext): RedriveMover {
  return new RedisRedriveMover(ctx);
}

interface NativeRun {
  handle: NativeMoveHandle;
  status: NativeMoveStatus['status'];
  error: string | null;
  cancelled: boolean;
  done: Promise<void>;
}

/** Jobs BullMQ's moveJobsToWait moves per call in a native retry (retryJobs' `count`). */
const NATIVE_CHUNK = 1000;

class RedisRedriveMover implements RedriveMover {
  private readonly native = new Map<string, NativeRun>();

  constructor(private readonly ctx: RedisContext) {}

  /**
   * BullMQ: the job's own queue (a retry). Streams and lists carry no origin: null, unless the DLQ's
   * name follows `<name>-dlq`, `<name>_dlq`, `<name>.dlq`, `<name>:dlq` or `dlq:<name>` — then
   * `<name>` of the same kind, offered with `via` saying it is only a naming convention.
   */
  resolveTarget(message: QueueMessage, dlq: QueueSummary): { queueId: string; via: string; guessed?: boolean } | null {
    let ref;
    try {
      ref = parseQueueId(dlq.id);
    } catch {
      return null;
    }
    if (ref.kind === 'bullmq') return { queueId: dlq.id, via: `BullMQ retry: the job's own queue "${ref.name}" (failed → waiting)` };
    const m = /^(.+)[-_.:](?:dlq|dead[-_.]?letters?)$/i.exec(ref.key) ?? /^(?:dlq|dead[-_.]?letters?)[-_.:](.+)$/i.exec(ref.key);
    if (!m?.[1] || message.queueId !== dlq.id) return null;
    return {
      queueId: formatQueueId({ kind: ref.kind, key: m[1] }),
      via: `naming convention only ("${ref.key}" → "${m[1]}"): Redis ${ref.kind === 'stream' ? 'streams' : 'lists'} record no source — check the target`,
      guessed: true,
    };
  }

  /**
   * See {@link RedriveMover.absentTarget}: for a list or stream DLQ, `name` as a key of the same
   * kind (`orders`, or the id `list:orders` / `stream:orders`); null for BullMQ (a retry goes to
   * the job's own queue) and for an id of another kind.
   */
  absentTarget(dlq: QueueSummary, name: string): { queueId: string; note: string } | null {
    let ref;
    try {
      ref = parseQueueId(dlq.id);
    } catch {
      return null;
    }
    if (ref.kind === 'bullmq' || name === '') return null;
    let key = name;
    if (/^(?:bullmq|stream|list):/.test(name)) {
      if (!name.startsWith(`${ref.kind}:`) || name.length === ref.kind.length + 1) return null;
      key = name.slice(ref.kind.length + 1);
    }
    const what = ref.kind === 'stream' ? 'stream' : 'list';
    return {
      queueId: formatQueueId({ kind: ref.kind, key }),
      note: `the ${what} "${key}" does not exist now (Redis deletes empty ${what}s, e.g. a source its workers drained): the first message written to it creates it — check the name`,
    };
  }

  /**
   * See {@link RedriveMover.olderSnapshotTally}: for a stream target, the entries of an older file
   * whose field order it did not record ({@link unrecordedFieldOrder}): {@link publish} writes their
   * body field first and fields named as numbers first, ascending; the other fields keep the
   * file's order (the redrive counter where it was). Null for lists (only the body is written) and
   * BullMQ queues.
   */
  olderSnapshotTally(targetQueueId: string): OlderSnapshotTally | null {
    let ref;
    try {
      ref = parseQueueId(targetQueueId);
    } catch {
      return null;
    }
    if (ref.kind !== 'stream') return null;
    const key = ref.key;
    let entries = 0;
    let lostEntries = 0;
    let body = 0;
    let numbered = 0;
    const ids: string[] = [];
    const names = new Set<string>();
    let moreNames = false;
    return {
      add(m: QueueMessage): void {
        if (m.properties.bodyField === undefined) return;
        entries++;
        const lost = unrecordedFieldOrder(m);
        if (lost === null) return;
        lostEntries++;
        if (lost.bodyField) body++;
        if (lost.indexNames.length > 0) numbered++;
        for (const n of lost.indexNames) {
          if (names.size < 3) names.add(n);
          else if (!names.has(n)) moreNames = true;
        }
        if (ids.length < 3) ids.push(m.id);
      },
      note(file: string): string | null {
        if (lostEntries === 0) return null;
        const what: string[] = [];
        if (body > 0) what.push(`${body === lostEntries ? 'all' : String(body)} with the body field first, though it may have stood elsewhere among their fields`);
        if (numbered > 0) what.push(`${numbered === lostEntries ? 'all' : String(numbered)} with the fields named as numbers (${[...names].map((x) => `"${x.slice(0, 20)}"`).join(', ')}${moreNames ? '…' : ''}) first, in ascending order`);
        return `${file} was written by an older Queuescope (or by hand: its header has no "written" record) that did not record the field order of stream entries, so the original order of ${String(lostEntries)} of its ${String(entries)} entr${entries === 1 ? 'y' : 'ies'} (e.g. ${ids.map((i) => i.slice(0, 40)).join(', ')}) cannot be restored: they are written to the stream "${key}" ${what.join('; ')}; names, values and the order of their other fields are kept`;
      },
    };
  }

  /**
   * See {@link RedriveMover.publishLossTally}: for a list target, the headers of the messages
   * published — a list element is the bare body ({@link publish} RPUSHes only the body bytes), so
   * every header of a message from another broker or a stream (other than the redrive counter,
   * which lists never carry) is dropped; the note names them, and an idempotency-key header
   * specially. Null for streams (headers become fields) and BullMQ queues.
   */
  publishLossTally(targetQueueId: string): PublishLossTally | null {
    let ref;
    try {
      ref = parseQueueId(targetQueueId);
    } catch {
      return null;
    }
    if (ref.kind !== 'list') return null;
    const key = ref.key;
    const lost = headerLossCounter();
    let total = 0;
    return {
      add(m: QueueMessage): void {
        total++;
        lost.add(Object.keys(m.headers).filter((k) => k !== REDRIVE_COUNT_HEADER));
      },
      note(file: string): string | null {
        const s = lost.summary();
        if (s.messages === 0) return null;
        const names = `${s.names.map((n) => `"${n.slice(0, 60)}"`).join(', ')}${s.moreNames > 0 ? ` and ${String(s.moreNames)} more` : ''}`;
        const key0 = s.keyHeaders[0];
        const keyText =
          key0 !== undefined
            ? `; among them the idempotency-key header "${key0.slice(0, 60)}"${s.keyHeaders.length > 1 ? ` (and ${s.keyHeaders.slice(1).map((n) => `"${n.slice(0, 60)}"`).join(', ')})` : ''}: the consumer loses its dedupe key and cannot tell these messages from ones it already processed`
            : '';
        return `${String(s.messages)} of the ${String(total)} message${total === 1 ? '' : 's'} re-injected from ${file} into the Redis list "${key.slice(0, 120)}" carry headers, which a list element cannot hold (it is the bare body): they are written without them — the headers ${names} are dropped${keyText}`;
      },
    };
  }

  /**
   * See {@link RedriveMover.moveClientSide} and this module's description.
   * @throws QueuescopeError `QUEUE_NOT_FOUND` (DLQ missing), `INVALID_INPUT` (options; a target key holding the wrong type, see {@link targetKeyProblems}), `CANCELLED`,
   * `BROKER_ERROR` (the DLQ list changed under the run), connection codes (`HOST_UNREACHABLE`…).
   */
  async moveClientSide(options: ClientMoveOptions, hooks: MoveHooks, signal?: AbortSignal): Promise<MoveSummary> {
    checkOptions(options);
    const ref = parseQueueId(options.sourceQueueId);
    const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const conn = await this.openMoverConnection(signal);
    const what = `Redriving ${options.sourceQueueId}`;
    try {
      let source: BatchSource;
      if (ref.kind === 'list') {
        if (options.state !== undefined && options.state !== 'list') throw new QueuescopeError('INVALID_INPUT', `A Redis list has no state "${options.state.slice(0, 100)}".`);
        source = await ListSource.open(conn, ref.key, maxBody);
      } else if (ref.kind === 'stream') {
        if (options.state !== undefined && options.state !== 'all') throw new QueuescopeError('INVALID_INPUT', `A stream is redriven whole (state "all"), not "${options.state.slice(0, 100)}".`);
        source = await StreamSource.open(conn, ref.key, options.cutoffMs, maxBody, options.pendingMinIdleMs ?? RECENT_DELIVERY_MS);
      } else {
        const state = options.state ?? 'failed';
        if (state !== 'failed' && state !== 'completed') throw new QueuescopeError('INVALID_INPUT', `BullMQ jobs can be redriven from state "failed" or "completed", not "${state.slice(0, 100)}".`);
        source = new BullmqSource(this.ctx, conn, ref.prefix, ref.name, state, options.cutoffMs, maxBody);
      }
      try {
        return await drive(source, options, hooks, signal, (e) => mapRedisError(e, this.ctx.endpoint, what), (ids) => targetKeyProblems(conn, ids));
      } finally {
        await source.close?.();
      }
    } catch (e) {
      throw mapRedisError(e, this.ctx.endpoint, what);
    } finally {
      conn.disconnect();
    }
  }

  /** BullMQ `queue.retryJobs` back into the same queue; streams and lists have no server-side move. */
  nativeMove(dlq: QueueSummary, targetQueueId: string | null): Promise<NativeMoveSupport> {
    const ref = parseQueueId(dlq.id);
    if (ref.kind !== 'bullmq') {
      return Promise.resolve({
        available: false,
        mechanism: 'none',
        note: `Redis has no server-side move for ${ref.kind === 'stream' ? 'streams' : 'lists'}; the client-side move runs one Lua script per batch, which is already atomic.`,
        supportsRate: false,
        supportsTarget: true,
      });
    }
    const same = targetQueueId === null || targetQueueId === dlq.id;
    return Promise.resolve({
      available: same,
      mechanism: 'BullMQ queue.retryJobs',
      note: same
        ? 'Retries every failed job that finished before the start, in BullMQ scripts of 1,000 jobs. BullMQ keeps attemptsMade, so each job gets one more attempt before it fails again (the client-side move resets it); no redrive counter is added; it cannot be rate-limited.'
        : 'queue.retryJobs retries jobs into their own queue only; another queue needs the client-side move.',
      supportsRate: false,
      supportsTarget: false,
    });
  }

  /**
   * Starts retrying the queue's failed jobs that finished up to now (`timestamp` = the start), in
   * chunks of {@link NATIVE_CHUNK}; runs in the background until done or cancelled. `total` = the
   * failed jobs up to the start (ZCOUNT). BullMQ's moveJobsToWait has no rate: the rate is ignored (`supportsRate` false).
   * @throws QueuescopeError `UNSUPPORTED` (not a BullMQ queue, or another target), `QUEUE_NOT_FOUND`, connection codes.
   */
  async startNativeMove(dlq: QueueSummary, targetQueueId: string | null, _ratePerSecond: number | null, signal?: AbortSignal): Promise<NativeMoveHandle> {
    const support = await this.nativeMove(dlq, targetQueueId);
    if (!support.available) throw new QueuescopeError('UNSUPPORTED', `No native move for ${dlq.id}${targetQueueId ? ` to ${targetQueueId}` : ''}: ${support.note ?? ''}`);
    const ref = parseQueueId(dlq.id) as { kind: 'bullmq'; prefix: string; name: string };
    const what = `Retrying the failed jobs of ${dlq.id}`;
    try {
      const client = await this.ctx.client(signal);
      const queue = await this.ctx.bullQueue(ref.prefix, ref.name, signal);
      const startedAt = Date.now();
      const total = await client.zcount(`${ref.prefix}:${ref.name}:failed`, 0, startedAt);
      const handle: NativeMoveHandle = { id: `retryJobs:${dlq.id}:${startedAt}`, sourceQueueId: dlq.id, targetQueueId: dlq.id, startedAt, total };
      const run: NativeRun = { handle, status: 'running', error: null, cancelled: false, done: Promise.resolve() };
      run.done = retryInChunks(queue, startedAt, () => run.cancelled).then(
        () => {
          run.status = run.cancelled ? 'cancelled' : 'completed';
        },
        (e: unknown) => {
          run.status = 'failed';
          run.error = mapRedisError(e, this.ctx.endpoint, what).message;
        },
      );
      this.native.set(handle.id, run);
      return handle;
    } catch (e) {
      throw mapRedisError(e, this.ctx.endpoint, what);
    }
  }

  /**
   * moved = failed jobs up to the start minus those still failed (ZCOUNT), so it also counts jobs
   * another client retried or removed meanwhile.
   * @throws QueuescopeError `INVALID_INPUT` for a handle this mover did not start; connection codes.
   */
  async nativeMoveStatus(handle: NativeMoveHandle, signal?: AbortSignal): Promise<NativeMoveStatus> {
    const run = this.native.get(handle.id);
    if (!run) throw new QueuescopeError('INVALID_INPUT', `No native move ${handle.id.slice(0, 200)} was started by this connection.`);
    const ref = parseQueueId(handle.sourceQueueId) as { kind: 'bullmq'; prefix: string; name: string };
    try {
      const client = await this.ctx.client(signal);
      const left = await client.zcount(`${ref.prefix}:${ref.name}:failed`, 0, handle.startedAt);
      const total = handle.total ?? left;
      return { status: run.status, moved: Math.max(0, total - left), total: handle.total, error: run.error };
    } catch (e) {
      throw mapRedisError(e, this.ctx.endpoint, `Reading the progress of ${handle.id}`);
    }
  }

  /** Stops after the chunk in flight (jobs already retried stay retried); resolves when it has stopped. Idempotent. */
  async cancelNativeMove(handle: NativeMoveHandle): Promise<void> {
    const run = this.native.get(handle.id);
    if (!run) return;
    run.cancelled = true;
    await run.done;
  }

  /**
   * Re-injects messages (e.g. from a snapshot), adding the redrive counter where the kind has one:
   * - list: RPUSH of the body bytes (right end = the tail), confirmed by the reply;
   * - stream: XADD of the body under its original field (`properties.bodyField`; null: the fields
   *   of the JSON map the body then is; absent — a message not read from a Redis stream, e.g. from
   *   another broker's backup — under `body`, whatever the body, so the stream adapter reads it
   *   back as the same body) plus the headers as fields (`{ base64 }` values as bytes, other
   *   non-text values as JSON) and the counter field; a message with `properties.streamFields` (an entry with field names
   *   that are not valid UTF-8 or repeated, or whose field order the body field and headers
   *   cannot tell, see `streamEntryMessage`) gets exactly those names, in that order; without it
   *   the body field comes first, then the other fields in the message's key order. The counter
   *   is updated in place as the move script does (appended when absent); each reply (the new id)
   *   confirms one message. A file written before the field-order record may not hold an entry's
   *   order: see {@link olderSnapshotTally};
   * - BullMQ: `Queue.addBulk` with the job name, data (the JSON body) and options; custom job ids
   *   are kept, then the counter hash field is set. A message whose custom job id already exists in
   *   the queue is reported failed, not published: BullMQ would ignore the add (see `publishJobs`).
   * Truncated bodies are never published (reported failed).
   * @throws QueuescopeError `QUEUE_NOT_FOUND` for an id that is not a Redis queue id; connection codes.
   */
  async publish(targetQueueId: string, messages: readonly QueueMessage[], signal?: AbortSignal): Promise<{ published: string[]; failed: { id: string; error: ErrorInfo }[] }> {
    const ref = parseQueueId(targetQueueId);
    const published: string[] = [];
    const failed: { id: string; error: ErrorInfo }[] = [];
    const ok: QueueMessage[] = [];
    for (const m of messages) {
      if (m.body.truncated) failed.push({ id: m.id, error: { code: 'INVALID_INPUT', message: `Message ${m.id} has a truncated body (${m.body.sizeBytes} bytes in full); it is not published.` } });
      else ok.push(m);
    }
    if (ok.length === 0) return { published, failed };
    const what = `Publishing to ${targetQueueId}`;
    try {
      throwIfAborted(signal);
      const client = await this.ctx.client(signal);
      if (ref.kind === 'list') {
        for (let i = 0; i < ok.length; i += 1000) {
          const chunk = ok.slice(i, i + 1000);
          await client.rpush(ref.key, ...chunk.map(bodyBytes));
          published.push(...chunk.map((m) => m.id));
        }
      } else if (ref.kind === 'stream') {
        const p = client.pipeline();
        const sent: QueueMessage[] = [];
        for (const m of ok) {
          const fields = streamFields(m);
          if (typeof fields === 'string') failed.push({ id: m.id, error: { code: 'INVALID_INPUT', message: `Message ${m.id}: ${fields}.` } });
          else {
            p.xadd(ref.key, '*', ...fields);
            sent.push(m);
          }
        }
        const res = sent.length > 0 ? ((await p.exec()) ?? []) : [];
        sent.forEach((m, i) => {
          const e = res[i]?.[0];
          if (e) failed.push({ id: m.id, error: mapRedisError(e, this.ctx.endpoint, what).toInfo() });
          else published.push(m.id);
        });
      } else {
        await this.publishJobs(ref.prefix, ref.name, ok, published, failed);
      }
    } catch (e) {
      throw mapRedisError(e, this.ctx.endpoint, what);
    }
    return { published, failed };
  }

  /**
   * The BullMQ part of {@link publish}. BullMQ ignores an add whose custom job id already exists in
   * the queue and returns the existing job as if it had been added, so — as the redrive into another
   * queue does (`BullmqSource.moveToOtherQueues`) — each custom id is looked up first (EXISTS) and a
   * message whose id is taken, or appears twice in `messages`, is reported failed and not added.
   * After the add, each job hash must carry the timestamp this add gave it: a job another client
   * added with that id in between is reported failed too. Only jobs this call added get the
   * redrive counter and origin fields; an existing job is never touched.
   */
  private async publishJobs(prefix: string, name: string, messages: QueueMessage[], published: string[], failed: { id: string; error: ErrorInfo }[]): Promise<void> {
    const queue = await this.ctx.bullQueue(prefix, name);
    const queueId = formatQueueId({ kind: 'bullmq', prefix, name });
    const notAdded = (m: QueueMessage, jobId: string, why: string): void => {
      failed.push({ id: m.id, error: { code: 'BROKER_ERROR', message: `A job with id "${jobId}" ${why} in ${queueId}: BullMQ ignores the add; message ${m.id} was not re-injected.` } });
    };
    const jobs: { m: QueueMessage; data: unknown; jobId: string | undefined }[] = [];
    const ids = new Set<string>();
    for (const m of messages) {
      const d = jobData(m);
      const jobId = /^\d+$/.test(m.id) || m.id.includes(':') || m.id.startsWith('#') ? undefined : redriveJobId(name, m.id);
      if (!d.ok) failed.push({ id: m.id, error: { code: 'INVALID_INPUT', message: `Message ${m.id} cannot become a BullMQ job: ${d.why}.` } });
      else if (jobId !== undefined && ids.has(jobId)) notAdded(m, jobId, 'is re-injected twice (an earlier message of this batch has it)');
      else {
        if (jobId !== undefined) ids.add(jobId);
        jobs.push({ m, data: d.data, jobId });
      }
    }
    const client = await this.ctx.client();
    for (let i = 0; i < jobs.length; i += 1000) {
      const chunk = jobs.slice(i, i + 1000);
      const custom = chunk.filter((j) => j.jobId !== undefined);
      const exists = custom.length > 0 ? await execAll(custom.reduce((p, j) => p.exists(`${prefix}:${name}:${j.jobId}`), client.pipeline())) : [];
      const taken = new Set(custom.filter((_, k) => Number(exists[k]) > 0));
      for (const j of taken) notAdded(j.m, j.jobId as string, 'already exists');
      const toAdd = chunk.filter((j) => !taken.has(j));
      if (toAdd.length === 0) continue;
      const added = await queue.addBulk(
        toAdd.map((j) => ({
          name: typeof j.m.meta.jobName === 'string' && j.m.meta.jobName !== '' ? j.m.meta.jobName : 'job',
          data: j.data,
          opts: { ...jobOptionsFrom(j.m), ...(j.jobId !== undefined ? { jobId: j.jobId } : {}) },
        })),
      );
      const stamps = await execAll(toAdd.reduce((p, _, k) => p.hget(`${prefix}:${name}:${added[k]?.id ?? ''}`, 'timestamp'), client.pipeline()));
      const mark = client.multi();
      const ours: QueueMessage[] = [];
      toAdd.forEach((j, k) => {
        const job = added[k];
        if (job?.id === undefined || stamps[k] !== String(job.timestamp)) {
          notAdded(j.m, job?.id ?? j.jobId ?? '?', 'was added by another client meanwhile (it already exists)');
          return;
        }
        mark.hset(`${prefix}:${name}:${job.id}`, REDRIVE_COUNT_HEADER, String(counterOf(j.m) + 1), REDRIVEN_FROM_FIELD, `${j.m.queueId}|${j.m.id}`);
        ours.push(j.m);
      });
      if (ours.length > 0) await mark.exec();
      published.push(...ours.map((m) => m.id));
    }
  }

  /** A connection for moves only: no command is ever re-sent after a reconnect (it would run a script twice), and it does not reconnect. */
  private async openMoverConnection(signal?: AbortSignal): Promise<Redis> {
    const shared = await this.ctx.client(signal);
    const conn = shared.duplicate({ lazyConnect: true, autoResendUnfulfilledCommands: false, enableOfflineQueue: false, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    conn.on('error', () => undefined);
    try {
      await conn.connect();
      // ioredis carries on on database 0 when the SELECT it sends on connect fails: check it.
      await ensureDatabase(conn, this.ctx.endpoint, 'Opening a Redis connection for the redrive');
    } catch (e) {
      conn.disconnect();
      throw mapRedisError(e, this.ctx.endpoint, 'Opening a Redis connection for the redrive');
    }
    return conn;
  }
}

/** Runs BullMQ's moveJobsToWait (what `queue.retryJobs({ state: 'failed', count, timestamp })` loops over) chunk by chunk so a cancel takes effect between chunks. */
async function retryInChunks(queue: Queue, timestamp: number, cancelled: () => boolean): Promise<void> {
  // `retryJobs` loops to the end on its own; its backend call is the same script one chunk at a
  // time. Used when present (BullMQ 6), else the public call (then a cancel waits for the end).
  const backend = (queue as unknown as { backend?: { retryFinishedJobs?: (state: string, count: number, timestamp: number) => Promise<number> } }).backend;
  const step = backend?.retryFinishedJobs?.bind(backend);
  if (!step) {
    await queue.retryJobs({ state: 'failed', count: NATIVE_CHUNK, timestamp });
    return;
  }
  while (!cancelled()) {
    const more = await step('failed', NATIVE_CHUNK, timestamp);
    if (!more) return;
  }
}

function checkOptions(o: ClientMoveOptions): void {
  if (!Number.isInteger(o.batchSize) || o.batchSize < 1 || o.batchSize > 1000) throw new QueuescopeError('INVALID_INPUT', `batchSize must be a whole number from 1 to 1000, got ${String(o.batchSize)}.`);
  if (!Number.isFinite(o.cutoffMs) || o.cutoffMs < 0) throw new QueuescopeError('INVALID_INPUT', `cutoffMs must be a time in ms since the epoch, got ${String(o.cutoffMs)}.`);
  if (o.maxMessages !== null && (!Number.isInteger(o.maxMessages) || o.maxMessages < 0)) throw new QueuescopeError('INVALID_INPUT', `maxMessages must be a whole number ≥ 0 or null, got ${String(o.maxMessages)}.`);
  if (o.maxBodyBytes !== undefined && (!Number.isInteger(o.maxBodyBytes) || o.maxBodyBytes < 0)) throw new QueuescopeError('INVALID_INPUT', `maxBodyBytes must be a whole number ≥ 0, got ${String(o.maxBodyBytes)}.`);
  checkPendingMinIdle(o.pendingMinIdleMs);
}

/** Key type(s) a redrive target's writes need, per queue kind (`TYPE` replies; `none` is always fine: the write creates the key). */
const BULLMQ_KEY_TYPES: readonly (readonly [suffix: string, type: string, what: string])[] = [
  ['wait', 'list', 'waiting jobs'],
  ['paused', 'list', 'paused jobs (BullMQ < 5)'],
  ['active', 'list', 'active jobs'],
  ['prioritized', 'zset', 'prioritized jobs'],
  ['delayed', 'zset', 'delayed jobs'],
  ['marker', 'zset', 'the worker wake-up marker'],
  ['failed', 'zset', 'failed jobs'],
  ['completed', 'zset', 'completed jobs'],
  ['meta', 'hash', 'queue settings'],
  ['id', 'string', 'the job id counter'],
  ['events', 'stream', 'queue events'],
];

const TYPE_NAMES: Record<string, string> = { list: 'list', stream: 'stream', zset: 'sorted set', hash: 'hash', string: 'string', set: 'set' };

/**
 * Checks, with one pipelined `TYPE` per key (https://redis.io/docs/latest/commands/type/), that each
 * target can take the writes a redrive makes, before anything is written: a list target must be a
 * list or absent (RPUSH), a stream target a stream or absent (XADD), a BullMQ queue's keys the
 * types BullMQ keeps there (`:wait` list, `:meta` hash, `:id` string, `:events` stream, the state
 * sorted sets…) or absent. Otherwise the move script would stop with `WRONGTYPE` (nothing lost,
 * but a dry run would have promised the move).
 * Returns, per target queue id with a problem, a clause naming the key and the type it holds;
 * ids that are not Redis queue ids are left to `checkTarget`.
 * @throws Redis errors as thrown by ioredis (the pipeline's first error).
 */
export async function targetKeyProblems(conn: Redis, queueIds: readonly string[]): Promise<Map<string, string>> {
  const checks: { queueId: string; key: string; want: string; what: string }[] = [];
  for (const queueId of new Set(queueIds)) {
    let ref;
    try {
      ref = parseQueueId(queueId);
    } catch {
      continue;
    }
    if (ref.kind === 'bullmq') {
      for (const [suffix, want, what] of BULLMQ_KEY_TYPES) checks.push({ queueId, key: `${ref.prefix}:${ref.name}:${suffix}`, want, what: `the ${TYPE_NAMES[want] ?? want} of ${what} of BullMQ queue "${ref.name}"` });
    } else {
      checks.push({ queueId, key: ref.key, want: ref.kind, what: `a ${ref.kind}` });
    }
  }
  const out = new Map<string, string>();
  if (checks.length === 0) return out;
  const p = conn.pipeline();
  for (const c of checks) p.type(c.key);
  const types = await execAll(p);
  checks.forEach((c, i) => {
    const type = String(types[i]);
    if (type === 'none' || type === c.want || out.has(c.queueId)) return;
    const shown = c.key.length > 200 ? `${c.key.slice(0, 200)}…` : c.key;
    out.set(c.queueId, `the key "${shown}" holds a ${TYPE_NAMES[type] ?? type}, not ${c.what} (the write would fail with WRONGTYPE); choose another target, or rename or delete that key`);
  });
  return out;
}

/**
 * The batch loop every kind shares: gate → read → decide → target key check → (backup → commit) → report.
 * `targetProblems` checks the targets of each batch's moves before anything of it is backed up or
 * written (also in a dry run): a target whose key holds the wrong type ends the run with
 * `INVALID_INPUT` naming the key and its type; the batch stays in the DLQ untouched.
 * A commit that throws (connection lost mid-script) leaves the batch's outcome unknown — the
 * script ran entirely or not at all — so its moves are reported failed with that said, then the error is thrown.
 */
async function drive(
  source: BatchSource,
  options: ClientMoveOptions,
  hooks: MoveHooks,
  signal: AbortSignal | undefined,
  map: (e: unknown) => QueuescopeError,
  targetProblems: (queueIds: string[]) => Promise<Map<string, string>>,
): Promise<MoveSummary> {
  const totals = { examined: 0, moved: 0, skipped: 0, failed: 0, possibleDuplicates: 0 };
  let stoppedBecause: MoveSummary['stoppedBecause'];
  for (;;) {
    const left = options.maxMessages === null ? Infinity : options.maxMessages - totals.examined;
    if (left <= 0) {
      stoppedBecause = 'max-messages';
      break;
    }
    const n = Math.min(options.batchSize, left);
    await hooks.gate(n);
    throwIfAborted(signal);
    const { messages, end } = await source.read(n, signal);
    if (messages.length === 0) {
      stoppedBecause = end ?? 'exhausted';
      break;
    }
    const result: MoveBatchResult = { examined: messages.length, moved: [], skipped: [], failed: [], possibleDuplicates: [] };
    const moves: PlannedMove[] = [];
    for (const m of messages) {
      const d = hooks.decide(m);
      source.observe?.(m, d);
      if (d.action === 'skip') {
        result.skipped.push({ id: m.id, reason: d.reason });
        continue;
      }
      const bad = m.body.truncated
        ? `its body (${m.body.sizeBytes} bytes) is larger than the read limit of ${options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES} bytes, so it cannot be backed up whole`
        : (snapshotLineProblem(m) ?? source.checkTarget(d.targetQueueId));
      if (bad !== null) result.failed.push({ id: m.id, error: { code: 'INVALID_INPUT', message: `Message ${m.id} was not moved: ${bad}` } });
      else moves.push({ message: m, targetQueueId: d.targetQueueId });
    }
    if (moves.length > 0) {
      const problems = await targetProblems(moves.map((p) => p.targetQueueId));
      const [queueId, why] = [...problems][0] ?? [];
      if (queueId !== undefined && why !== undefined) {
        // Refuse the run here, before this batch is backed up or written (as a rejected beforeMove does).
        const before = totals.moved > 0 ? ` ${String(totals.moved)} message(s) moved to other targets before this stay moved; the rest stay in the DLQ.` : options.dryRun ? '' : ' Nothing was moved.';
        throw new QueuescopeError('INVALID_INPUT', `Refusing to redrive to ${queueId}: ${why}.${before}`, { targetQueueId: queueId });
      }
    }
    let fatal: QueuescopeError | undefined;
    if (options.dryRun || moves.length === 0) {
      if (options.dryRun) result.moved = moves.map((p) => ({ id: p.message.id, targetQueueId: p.targetQueueId }));
      source.advance(messages);
    } else {
      await hooks.beforeMove(moves.map((p) => p.message));
      try {
        const c = await source.commit(moves, messages);
        result.moved = c.moved;
        result.failed.push(...c.failed);
        result.possibleDuplicates = c.possibleDuplicates;
        fatal = c.fatal;
      } catch (e) {
        const err = map(e);
        for (const p of moves) {
          result.failed.push({
            id: p.message.id,
            error: { code: err.code, message: `Outcome unknown: ${err.message} — the batch's move is one Lua script, so message ${p.message.id} is either still in the DLQ or in ${p.targetQueueId}, not lost; run the redrive again.` },
          });
        }
        hooks.onBatch(result);
        throw err;
      }
    }
    hooks.onBatch(result);
    totals.examined += result.examined;
    totals.moved += result.moved.length;
    totals.skipped += result.skipped.length;
    totals.failed += result.failed.length;
    totals.possibleDuplicates += result.possibleDuplicates.length;
    if (fatal) throw fatal;
    if (end) {
      stoppedBecause = end;
      break;
    }
  }
  const warnings = source.warnings?.(options.dryRun) ?? [];
  const notes = source.notes?.() ?? [];
  return { ...totals, stoppedBecause, ...(warnings.length > 0 ? { warnings } : {}), ...(notes.length > 0 ? { notes } : {}) };
}

/** Runs a pipeline and returns its replies in order. @throws the first command error. */
async function execAll(p: ReturnType<Redis['pipeline']>): Promise<unknown[]> {
  const res = (await p.exec()) ?? [];
  return res.map(([e, v]) => {
    if (e) throw e;
    return v;
  });
}

function bodyBytes(m: QueueMessage): Buffer {
  return Buffer.from(m.body.data, m.body.encoding === 'utf8' ? 'utf8' : 'base64');
}

function counterOf(m: QueueMessage): number {
  return num(m.headers[REDRIVE_COUNT_HEADER] ?? m.properties[REDRIVE_COUNT_HEADER]) ?? 0;
}

function fieldValue(v: HeaderValue): string | Buffer {
  if (typeof v === 'string') return v;
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && typeof v.base64 === 'string' && Object.keys(v).length === 1) return Buffer.from(v.base64, 'base64');
  return JSON.stringify(v);
}

/**
 * Stream fields for re-publishing a stream message (see {@link RedisRedriveMover.publish}), or why it cannot be.
 * With `properties.streamFields` (an entry whose names are not all distinct UTF-8 text, see
 * `streamEntryMessage`), the fields are rebuilt from it: exact names (bytes from `{ base64 }`),
 * in entry order, values from the key each names, the counter field updated where it is (as the
 * stream move script does) or appended.
 */
function streamFields(m: QueueMessage): (string | Buffer)[] | string {
  // Not read from a Redis stream (another broker, a list, BullMQ): the body under "body", the field
  // the stream adapter reads a body from first (STREAM_BODY_FIELDS), headers as the other fields —
  // the entry reads back with the same body and headers, whatever the body is.
  const bodyField = m.properties.bodyField === undefined ? 'body' : m.properties.bodyField;
  const hasBodyField = typeof bodyField === 'string' && bodyField !== '';
  let map: Record<string, HeaderValue> | null = null;
  if (!hasBodyField) {
    const parsed = jobData(m);
    if (!parsed.ok || parsed.data === null || typeof parsed.data !== 'object' || Array.isArray(parsed.data)) return 'a stream message without a body field must carry a JSON object of fields as its body';
    map = parsed.data as Record<string, HeaderValue>;
  }
  if (m.properties.streamFields !== undefined) return exactStreamFields(m, map);
  const out: (string | Buffer)[] = [];
  if (map === null) out.push(bodyField as string, bodyBytes(m));
  // The counter where the entry had it (last, unless the file predates the field-order record),
  // else appended; as the stream move script does.
  let counted = false;
  for (const [k, v] of [...Object.entries(map ?? {}), ...Object.entries(m.headers)]) {
    if (k !== REDRIVE_COUNT_HEADER) out.push(k, fieldValue(v));
    else if (!counted) {
      out.push(k, String((num(v) ?? 0) + 1));
      counted = true;
    }
  }
  if (!counted) out.push(REDRIVE_COUNT_HEADER, String(counterOf(m) + 1));
  return out;
}

/** {@link streamFields} from `properties.streamFields`; `map` is the body's field map when there is no body field. */
function exactStreamFields(m: QueueMessage, map: Record<string, HeaderValue> | null): (string | Buffer)[] | string {
  const list = m.properties.streamFields;
  const bad = 'its properties.streamFields is not a list of { name, key } (name text or { base64 }, key text or null)';
  if (!Array.isArray(list)) return bad;
  const values = map ?? m.headers;
  const hasOwn = (k: string): boolean => Object.prototype.hasOwnProperty.call(values, k);
  const used = new Set<string>();
  const out: (string | Buffer)[] = [];
  let counted = false;
  for (const f of list) {
    if (f === null || typeof f !== 'object' || Array.isArray(f)) return bad;
    const { name, key } = f;
    let nameOut: string | Buffer;
    if (typeof name === 'string') nameOut = name;
    else if (name !== null && typeof name === 'object' && !Array.isArray(name) && typeof name.base64 === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(name.base64)) nameOut = Buffer.from(name.base64, 'base64');
    else return bad;
    let value: string | Buffer;
    if (key === null) {
      if (map !== null) return bad;
      value = bodyBytes(m);
    } else if (typeof key === 'string' && hasOwn(key)) {
      value = fieldValue(values[key] as HeaderValue);
      used.add(key);
    } else return `its properties.streamFields names the field "${typeof key === 'string' ? key.slice(0, 100) : JSON.stringify(key ?? null).slice(0, 100)}", which it does not carry`;
    if (nameOut === REDRIVE_COUNT_HEADER) {
      // As STREAM_MOVE_LUA: every field of that name becomes its number + 1 (1 when not a number).
      const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
      value = String((Number.isFinite(n) ? n : 0) + 1);
      counted = true;
    }
    out.push(nameOut, value);
  }
  // Fields added to the message after it was read (none from a backup) are kept, after the entry's own.
  for (const [k, v] of Object.entries(values)) if (!used.has(k) && k !== REDRIVE_COUNT_HEADER) out.push(k, fieldValue(v));
  if (!counted) out.push(REDRIVE_COUNT_HEADER, String(counterOf(m) + 1));
  return out;
}
