import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { JobsOptions } from 'bullmq';
import { QueuescopeError, type ErrorInfo, type HeaderValue, type QueueMessage } from '../../../shared/domain';
import { formatIdleThreshold } from '../../../shared/redrive/types';
import { RECENT_DELIVERY_MS, REDRIVE_COUNT_HEADER, type MoveSummary, type RedriveDecision } from '../redrive-types';
import { peekBullmq, readSortedStateJobs } from './bullmq';
import { notFound, num, type RedisContext } from './context';
import { decodeCursor, encodeCursor } from './cursor';
import { formatQueueId, parseQueueId } from './ids';
import { BULLMQ_RETRY_BATCH_LUA, BULLMQ_RETRY_LUA, LIST_MOVE_LUA, STREAM_MOVE_LUA } from './redrive-lua';
import { LuaScript } from './redrive-script';
import { pendingInRange, streamEntryMessage, type PendingEntry } from './stream';
import { LIST_ANCHOR_ENTRIES, readListPage, type ListPageRead } from './list';

/** Hash field of a BullMQ job naming the job it was redriven from (`<queue id>|<job id>`), so a repeated run finds its own copy. */
export const REDRIVEN_FROM_FIELD = 'x-queuescope-redriven-from';

/** One message the engine decided to move. */
export interface PlannedMove {
  message: QueueMessage;
  targetQueueId: string;
}

/** What committing one batch did. */
export interface Committed {
  moved: { id: string; targetQueueId: string }[];
  failed: { id: string; error: ErrorInfo }[];
  possibleDuplicates: { id: string; targetQueueId: string }[];
  /** Set when the run cannot go on (the DLQ changed under it); thrown after the batch is reported. */
  fatal?: QueuescopeError;
  /** Messages of the batch found no longer in the DLQ (removed by another client since the read): like moved ones, they no longer take a place in it. */
  vanished?: number;
}

/** A DLQ read once from its head in batches, with its own atomic commit (see redrive.ts). */
export interface BatchSource {
  /** Reads up to `n` messages after the ones already examined; `end` set when nothing follows this batch. */
  read(n: number, signal?: AbortSignal): Promise<{ messages: QueueMessage[]; end: MoveSummary['stoppedBecause'] | null }>;
  /** Why `targetQueueId` cannot receive this DLQ's messages, or null when it can. */
  checkTarget(targetQueueId: string): string | null;
  /** Moves `moves` (a subset of `batch`, the batch just read) and advances the read position past `batch`. */
  commit(moves: PlannedMove[], batch: QueueMessage[]): Promise<Committed>;
  /** Advances the read position past `batch` with nothing moved (dry run, all skipped). */
  advance(batch: QueueMessage[]): void;
  /** Optional: lets a read in flight settle before the run ends (nothing of it is used). */
  close?(): Promise<void>;
  /** Optional: told the engine's decision for each message read, right after it was made. */
  observe?(message: QueueMessage, decision: RedriveDecision): void;
  /** Optional: warnings about the messages decided so far (see {@link MoveSummary.warnings}); `dryRun` picks the tense. */
  warnings?(dryRun: boolean): string[];
  /** Optional: notes about the read (see {@link MoveSummary.notes}), e.g. a list that moved and was re-aligned on. */
  notes?(): string[];
}

/** A batch read ahead older than this when its turn comes (a pause, a rate-limit wait, a slow backup) is read again. */
const READ_AHEAD_MAX_AGE_MS = 1000;

const listMove = new LuaScript(LIST_MOVE_LUA);
const streamMove = new LuaScript(STREAM_MOVE_LUA);
const bullmqRetry = new LuaScript(BULLMQ_RETRY_LUA);
/** Null when the installed bullmq's reprocessJob is not the one the batch script was written from: then {@link bullmqRetry} runs it per job. */
const bullmqRetryBatch = BULLMQ_RETRY_BATCH_LUA === null ? null : new LuaScript(BULLMQ_RETRY_BATCH_LUA);

function err(code: ErrorInfo['code'], message: string): ErrorInfo {
  return { code, message };
}

function sameKind(kind: 'list' | 'stream' | 'bullmq', targetQueueId: string): string | null {
  let ref;
  try {
    ref = parseQueueId(targetQueueId);
  } catch (e) {
    return (e as Error).message;
  }
  if (ref.kind !== kind) {
    const what = { list: 'a Redis list', stream: 'a Redis stream', bullmq: 'a BullMQ queue' }[kind];
    return `Messages of ${what} can only be redriven to ${what} of this connection; "${targetQueueId.slice(0, 200)}" is not one.`;
  }
  return null;
}

async function checkType(conn: Redis, key: string, queueId: string, want: 'list' | 'stream'): Promise<void> {
  const type = await conn.type(key);
  // Redis removes a list when its last element is popped: a DLQ list seen a moment ago was emptied.
  const gone = want === 'list' ? ': Redis removes a list when its last entry is popped, so if it held messages a moment ago (the dry run), another client emptied it since — nothing was moved from it' : '';
  if (type === 'none') throw notFound(queueId, `the ${want} "${key}" does not exist (any more)${gone}`);
  if (type !== want) throw notFound(queueId, `the key "${key}" is a ${type}, not a ${want}`);
}

// ---- lists ------------------------------------------------------------------------------------

/** Sentences about list moves a source could not re-align on, listed before "… and N more". */
const MOVED_NOTES_LISTED = 3;
/** Largest shift (entries popped at the head between a batch's read and its move) the list move script looks for. */
const LIST_FOLLOW_MAX_SHIFT = 1000;
/** Bytes the list move script may read when it looks for a shifted batch (it reads up to LIST_FOLLOW_MAX_SHIFT entries before the batch). */
const LIST_FOLLOW_BYTES = 64 * 1024 * 1024;

/**
 * A list DLQ. Head = index 0 (the left end), as the list adapter's peek reads it; moved elements
 * are appended to the target's right end in DLQ order. Bounded by the length at the start (lists
 * carry no per-element time). Ids are `#<index>~<content hash>` at the time of the read, as in a peek.
 *
 * Batches are read with the peek's re-aligning list cursor ({@link readListPage}): when workers
 * push or pop at the head between two batches (the list moves), the next batch re-aligns on the
 * content hashes of the last entries examined that are still in the list, so a dry run neither
 * skips nor counts twice an entry still there; when it cannot re-align (those entries were
 * consumed, moved too far, or have identical copies), {@link warnings} says how far the counts may
 * be off. A run's commit moves a batch where it was read (re-aligned); its script checks the bytes
 * there, and when another client popped at the head between the read and the commit it finds the
 * batch shifted by those pops (`LIST_MOVE_LUA`): it moves the entries still there, and the ones the
 * popper took are reported failed ("taken by another client") and counted in {@link warnings}.
 * Any other change between the read and the commit (a push at the head, a removal in the middle,
 * identical entries that make it ambiguous) still stops the run with nothing of the batch moved.
 */
export class ListSource implements BatchSource {
  private left = 0;
  private examined = 0;
  /** Cursor of the next read (the peek's); null = from the head. */
  private cursor: string | null = null;
  private readonly tomb = `\u0000queuescope-redrive-tombstone:${randomUUID()}`;
  /** The batch in hand, as read. */
  private last: ListPageRead | null = null;
  /** Notes of moves the reads re-aligned on (nothing skipped or read twice), and of those they could not. */
  private readonly realigned: string[] = [];
  private readonly inexact: string[] = [];
  /** Entries selected to move that another client popped between their batch's read and its move. */
  private takenSelected = 0;
  /** Batches the move found shifted by pops at the head, nothing of them taken. */
  private followed = 0;
  /** Entries counted when the run opened the list that it never read: the list ended (or was gone, emptied by another client) before their turn came. */
  private unreadGone = 0;
  /** Whether the list was gone when a batch was read (Redis removed it when another client popped its last entry). */
  private listGone = false;
  private readonly queueId: string;

  private constructor(
    private readonly conn: Redis,
    private readonly key: string,
    private readonly maxBodyBytes: number,
  ) {
    this.queueId = formatQueueId({ kind: 'list', key });
  }

  /** @throws QueuescopeError `QUEUE_NOT_FOUND` when the key is missing or not a list. */
  static async open(conn: Redis, key: string, maxBodyBytes: number): Promise<ListSource> {
    const s = new ListSource(conn, key, maxBodyBytes);
    await checkType(conn, key, s.queueId, 'list');
    s.left = await conn.llen(key);
    return s;
  }

  checkTarget(t: string): string | null {
    return sameKind('list', t);
  }

  async read(n: number, signal?: AbortSignal): Promise<{ messages: QueueMessage[]; end: MoveSummary['stoppedBecause'] | null }> {
    const k = Math.min(n, this.left);
    // Nothing left to examine (the list was emptied right after it was opened): entries pushed since are past the cutoff.
    if (k === 0) return { messages: [], end: (await this.conn.llen(this.key)) > 0 ? 'cutoff' : 'exhausted' };
    let r: ListPageRead;
    try {
      r = await readListPage({ client: () => Promise.resolve(this.conn) }, this.key, { limit: k, direction: 'oldest', state: 'list', cursor: this.cursor, maxBodyBytes: this.maxBodyBytes }, signal);
    } catch (e) {
      // Redis deletes a list when its last element is popped: gone after it was opened means another
      // client emptied it (or deleted it) before this run read the rest. Nothing is left to move; the
      // entries it never read are counted for warnings(), and the run ends as read to its end.
      if (!(e instanceof QueuescopeError && e.code === 'QUEUE_NOT_FOUND') || (await this.conn.type(this.key)) !== 'none') throw e;
      this.unreadGone += this.left;
      this.listGone = true;
      this.left = 0;
      return { messages: [], end: 'exhausted' };
    }
    this.last = r;
    const moved = r.page.moved;
    if (moved !== undefined) (moved.realigned ? this.realigned : this.inexact).push(moved.note);
    const messages = r.page.messages;
    messages.forEach((m, i) => {
      m.position = this.examined + i;
    });
    this.left -= messages.length;
    this.examined += messages.length;
    // No cursor: nothing followed this page when it was read. Left = 0 with more to read: those came after the start.
    let end: MoveSummary['stoppedBecause'] | null = null;
    if (r.page.nextCursor === null) end = 'exhausted';
    else if (this.left === 0) end = 'cutoff';
    // The list ended before the run read as many entries as it held at the start: another client
    // removed at least the difference before the run reached them.
    if (end === 'exhausted' && this.left > 0) {
      this.unreadGone += this.left;
      this.left = 0;
    }
    return { messages, end };
  }

  advance(): void {
    this.cursor = this.last?.page.nextCursor ?? this.cursor;
  }

  async commit(moves: PlannedMove[], batch: QueueMessage[]): Promise<Committed> {
    const read = this.last;
    if (read === null || read.raw.length !== batch.length) throw new Error('ListSource.commit: the batch is not the one read last.');
    const at = read.start;
    const targets = new Map<string, number>();
    const keys: string[] = [this.key];
    const byId = new Map<string, string>();
    for (const m of moves) {
      byId.set(m.message.id, m.targetQueueId);
      if (!targets.has(m.targetQueueId)) {
        keys.push((parseQueueId(m.targetQueueId) as { key: string }).key);
        targets.set(m.targetQueueId, keys.length - 1);
      }
    }
    // How far left of where it was read the script looks for the batch (pops at the head since the
    // read): at most LIST_FOLLOW_MAX_SHIFT entries, fewer when they are large (it reads them all).
    const avg = read.raw.reduce((a, b) => a + b.length, 0) / Math.max(1, read.raw.length);
    const maxShift = Math.max(10, Math.min(LIST_FOLLOW_MAX_SHIFT, Math.floor(LIST_FOLLOW_BYTES / Math.max(1, avg))));
    const args: (string | Buffer)[] = [String(at), this.tomb, String(maxShift), String(read.page.total ?? 0)];
    batch.forEach((m, i) => {
      const t = byId.get(m.id);
      args.push(t === undefined ? '0' : String(targets.get(t)), read.raw[i] as Buffer);
    });
    const r = (await listMove.run(this.conn, keys, args)) as number[];
    if (r[0] !== 1) {
      const code = r[0];
      const i = Number(r[1]);
      const why =
        code === -1
          ? `the list "${this.key}" holds ${String(i)} elements from index ${at} instead of the ${batch.length} read, and no pops at its head explain it`
          : code === -2
            ? `element #${at + i - 1} of "${this.key}" changed after it was read, and no pops at its head explain it`
            : code === -3
              ? `the entries read match more than one place after entries were popped at its head (identical contents), so which ones another client took cannot be told`
              : code === -4
                ? `entry #${at + i - 1} was popped from its head after it was read, but the same bytes were pushed back or are near the batch, or more was pushed than checked, so whether another client took it cannot be told`
                : 'entries were popped at its head after the read, and telling which ones needs LPOS, which this server lacks (Redis before 6.0.6)';
      const e = new QueuescopeError(
        'BROKER_ERROR',
        `The DLQ list changed while it was being redriven (${why}: another client pushed, removed or popped entries). Nothing in this batch was moved; stop the DLQ's other clients and run the redrive again.`,
        { queueId: this.queueId },
      );
      return { moved: [], failed: moves.map((m) => ({ id: m.message.id, error: e.toInfo() })), possibleDuplicates: [], fatal: e };
    }
    // The script found the batch's first `taken` entries gone (another client popped them after the
    // read) and the rest from index `found` (at, or left of it after pops at the head).
    const taken = r[2] ?? 0;
    const found = r[3] ?? at;
    const moved: Committed['moved'] = [];
    const failed: Committed['failed'] = [];
    const index = new Map(batch.map((m, i) => [m.id, i]));
    for (const m of moves) {
      if ((index.get(m.message.id) ?? 0) < taken) {
        this.takenSelected++;
        failed.push({
          id: m.message.id,
          error: { ...err('BROKER_ERROR', `Entry ${m.message.id} was taken by another client (popped from the DLQ list "${this.key}" after this run read it, before its move): it is not in the DLQ, that client has it.`), details: { leftDlq: true } },
        });
      } else moved.push({ id: m.message.id, targetQueueId: m.targetQueueId });
    }
    if (found !== at && taken === 0) this.followed++;
    // The next read continues after the entries of this batch that stayed, anchored on the last
    // ones still in the list (those before the batch when all of it moved), as the peek's cursor does.
    const stayed = read.hashes.filter((_, i) => i >= taken && !byId.has((batch[i] as QueueMessage).id));
    const next = found + stayed.length;
    const h = [...read.anchorBefore, ...stayed].slice(-LIST_ANCHOR_ENTRIES);
    // The head is unchanged unless the batch started there (then it is the batch's first entry that
    // stayed), or entries were popped since the read (then it is not known here).
    const head = found === 0 ? (stayed[0] ?? null) : found === at ? read.head : null;
    this.cursor =
      next === 0
        ? null
        : encodeCursor({ v: 1, q: this.queueId, s: 'list', d: 'oldest', n: this.examined, o: next, ...(h.length > 0 ? { h } : {}), l: Math.max(0, (read.page.total ?? 0) - (batch.length - stayed.length) - Math.max(0, at - found)), ...(head !== null ? { f: head } : {}) });
    return { moved, failed, possibleDuplicates: [] };
  }

  /** Re-aligned moves of the list during the read, in one sentence (nothing was skipped or read twice); batches found where pops at the head had shifted them. */
  notes(): string[] {
    const out: string[] = [];
    if (this.realigned.length === 1) out.push(this.realigned[0] as string);
    else if (this.realigned.length > 1) out.push(`The list ${this.key} moved ${String(this.realigned.length)} times while it was read (entries pushed or popped at its left end); each time reading re-aligned on the last entry read, so none was skipped or read twice.`);
    if (this.followed > 0) out.push(`Another client popped entries at the head of the list ${this.key} between the read and the move of ${String(this.followed)} batch${this.followed === 1 ? '' : 'es'}; each move found the batch's entries where the pops had put them (byte for byte), so nothing was moved twice or skipped.`);
    return out;
  }

  /**
   * Moves of the list the reads could not re-align on: the counts may be off (entries skipped or
   * examined twice); and entries another client took between a batch's read and its move.
   */
  warnings(dryRun: boolean): string[] {
    const out: string[] = [];
    const sel = this.takenSelected;
    if (sel > 0) {
      out.push(
        `${String(sel)} entr${sel === 1 ? 'y' : 'ies'} this run read and selected to move ${sel === 1 ? 'was' : 'were'} taken by another client (popped from the DLQ list ${this.key} after the read, before the move): not moved, and not in the DLQ — that client has ${sel === 1 ? 'it' : 'them'}; counted as failed. Entries the run had not read yet may have been taken as well; they are not counted (examined counts only the entries read).`,
      );
    }
    // Left out when a read could not re-align (entries may have been skipped: still in the list, not
    // removed); a list that is gone held nothing more, whatever the reads did.
    const gone = this.listGone || this.inexact.length === 0 ? this.unreadGone : 0;
    if (gone > 0) {
      const what = this.listGone
        ? `The DLQ list ${this.key} was emptied by another client while this run read it (Redis removes a list when its last entry is popped)`
        : `The DLQ list ${this.key} ended before this run had read as many entries as it held when the run started`;
      out.push(
        `${what}: at least ${String(gone)} entr${gone === 1 ? 'y' : 'ies'} it held then ${gone === 1 ? 'was' : 'were'} removed by another client before the run reached ${gone === 1 ? 'it' : 'them'} — not examined, not moved, and not in the DLQ.`,
      );
    }
    if (this.inexact.length === 0) return out;
    const more = this.inexact.length > MOVED_NOTES_LISTED ? ` (and ${String(this.inexact.length - MOVED_NOTES_LISTED)} more such moves)` : '';
    const what = dryRun ? "this dry run's counts (examined, would move, would stay)" : "this run's counts";
    return [...out, ...this.inexact.slice(0, MOVED_NOTES_LISTED).map((n, i) => `${n} So ${what} may be off by as many${i === Math.min(MOVED_NOTES_LISTED, this.inexact.length) - 1 ? more : ''}; stop the DLQ's other clients for exact counts.`)];
  }
}

// ---- streams ----------------------------------------------------------------------------------

/** Formats an idle time in ms for a warning: "0.4 s", "12 s", "5 min", "3.2 h". */
function idleText(ms: number): string {
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 2 * 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** What happens to stream entries pending in a group: they stay (delivered recently), or move though delivered recently, or move after a long idle. */
type PendingFate = 'stays' | 'moves-recent' | 'moves-idle';

/**
 * A stream DLQ, read with XRANGE from its first entry up to the cutoff (entry id time ≤ cutoffMs).
 * Each batch's entries that are pending in a consumer group of the DLQ (read by a consumer with
 * XREADGROUP and not XACKed; extended XPENDING over the batch's id range) get `meta.state`
 * `pending` with the group, consumer, idle time and delivery count of the most recent delivery, so
 * the engine can leave those delivered less than `minIdleMs` ago (the run's pending idle threshold,
 * default {@link RECENT_DELIVERY_MS}) in the DLQ; the source counts them per group and consumer for
 * {@link warnings}.
 */
export class StreamSource implements BatchSource {
  private lastId: string | null = null;
  private examined = 0;
  /** Pending rows of the batch in hand, by entry id. */
  private batchPending = new Map<string, PendingEntry[]>();
  /** Per group, per fate, per consumer: entries and their idle range (ms). */
  private readonly tally = new Map<string, Map<PendingFate, Map<string, { n: number; min: number; max: number }>>>();

  private constructor(
    private readonly conn: Redis,
    private readonly key: string,
    private readonly cutoffMs: number,
    private readonly maxBodyBytes: number,
    private readonly minIdleMs: number,
  ) {}

  /**
   * `minIdleMs`: pending entries idle for less than this (ms) are taken to be being processed.
   * @throws QueuescopeError `QUEUE_NOT_FOUND` when the key is missing or not a stream.
   */
  static async open(conn: Redis, key: string, cutoffMs: number, maxBodyBytes: number, minIdleMs: number = RECENT_DELIVERY_MS): Promise<StreamSource> {
    await checkType(conn, key, formatQueueId({ kind: 'stream', key }), 'stream');
    return new StreamSource(conn, key, Math.max(0, Math.floor(cutoffMs)), maxBodyBytes, minIdleMs);
  }

  checkTarget(t: string): string | null {
    return sameKind('stream', t);
  }

  async read(n: number): Promise<{ messages: QueueMessage[]; end: MoveSummary['stoppedBecause'] | null }> {
    const queueId = formatQueueId({ kind: 'stream', key: this.key });
    const entries = (await this.conn.xrangeBuffer(this.key, this.lastId === null ? '-' : `(${this.lastId}`, String(this.cutoffMs), 'COUNT', n)) as unknown as [Buffer, Buffer[]][];
    const messages = entries.map(([id, fields], i) => streamEntryMessage(id, fields, { queueId, queueName: this.key, position: this.examined + i, maxBodyBytes: this.maxBodyBytes }));
    this.examined += messages.length;
    const last = messages[messages.length - 1];
    if (last) this.lastId = last.id;
    this.batchPending = last ? await pendingInRange(this.conn, this.key, (messages[0] as QueueMessage).id, last.id) : new Map<string, PendingEntry[]>();
    for (const m of messages) {
      const rows = this.batchPending.get(m.id);
      if (rows === undefined) continue;
      // The most recent delivery decides whether someone is on it now.
      const recent = rows.reduce((a, b) => (b.idleMs < a.idleMs ? b : a));
      m.meta.state = 'pending';
      m.meta.consumerGroup = recent.group;
      m.meta.consumer = recent.consumer;
      m.meta.idleMs = recent.idleMs;
      m.meta.receiveCount = recent.deliveries;
    }
    let end: MoveSummary['stoppedBecause'] | null = null;
    if (entries.length < n) {
      const after = await this.conn.xrange(this.key, String(this.cutoffMs + 1), '+', 'COUNT', 1);
      end = after.length > 0 ? 'cutoff' : 'exhausted';
    }
    return { messages, end };
  }

  advance(): void {
    // The cursor is the last entry id read: nothing to do.
  }

  /** Counts a pending entry the engine decided to move, or left because it was delivered recently (`held`); other skips are not this run's concern. */
  observe(m: QueueMessage, d: RedriveDecision): void {
    const rows = this.batchPending.get(m.id);
    if (rows === undefined || (d.action === 'skip' && d.held !== true)) return;
    for (const r of rows) {
      const recent = r.idleMs < this.minIdleMs;
      // A held entry stays for all its groups; its long-idle rows in other groups are no news.
      if (d.action === 'skip' && !recent) continue;
      const fate: PendingFate = d.action === 'skip' ? 'stays' : recent ? 'moves-recent' : 'moves-idle';
      let byFate = this.tally.get(r.group);
      if (byFate === undefined) this.tally.set(r.group, (byFate = new Map<PendingFate, Map<string, { n: number; min: number; max: number }>>()));
      let byConsumer = byFate.get(fate);
      if (byConsumer === undefined) byFate.set(fate, (byConsumer = new Map<string, { n: number; min: number; max: number }>()));
      const c = byConsumer.get(r.consumer);
      if (c === undefined) byConsumer.set(r.consumer, { n: 1, min: r.idleMs, max: r.idleMs });
      else {
        c.n++;
        c.min = Math.min(c.min, r.idleMs);
        c.max = Math.max(c.max, r.idleMs);
      }
    }
  }

  /**
   * One sentence per consumer group and fate: entries delivered less than the idle threshold
   * (`minIdleMs`) ago that stay (or, with pending entries included, move although a consumer is likely on them),
   * and long-idle ones that move — naming the consumers, their counts and idle times.
   */
  warnings(dryRun: boolean): string[] {
    const out: string[] = [];
    const key = this.key.length > 200 ? `${this.key.slice(0, 200)}…` : this.key;
    const threshold = formatIdleThreshold(this.minIdleMs);
    for (const [group, byFate] of this.tally) {
      for (const fate of ['stays', 'moves-recent', 'moves-idle'] as const) {
        const byConsumer = byFate.get(fate);
        if (byConsumer === undefined) continue;
        const total = [...byConsumer.values()].reduce((a, c) => a + c.n, 0);
        const list = [...byConsumer.entries()].sort((a, b) => b[1].n - a[1].n);
        const who = list
          .slice(0, 5)
          .map(([name, c]) => `consumer "${name.slice(0, 120)}": ${c.n}, idle ${c.min === c.max ? idleText(c.min) : `${idleText(c.min)}–${idleText(c.max)}`}`)
          .join('; ');
        const more = list.length > 5 ? `; and ${list.length - 5} more consumers` : '';
        const head = `${total} entr${total === 1 ? 'y' : 'ies'} of stream "${key}" ${total === 1 ? 'is' : 'are'} pending in consumer group "${group.slice(0, 120)}" (${who}${more})`;
        const moved = dryRun ? 'would be moved' : 'were moved';
        if (fate === 'stays') {
          out.push(`${head}: delivered less than ${threshold} ago and not acknowledged, so likely being processed right now; ${total === 1 ? 'it stays' : 'they stay'} in the DLQ (include pending entries — --include-pending in the CLI — to move ${total === 1 ? 'it' : 'them'}: the move XACKs ${total === 1 ? 'it' : 'them'}, so that consumer's XACK or XCLAIM finds nothing and its work may be done twice)`);
        } else if (fate === 'moves-recent') {
          out.push(`${head}: delivered less than ${threshold} ago and likely being processed right now, yet ${moved} (pending entries included) and XACKed in the group: that consumer's XACK or XCLAIM finds nothing, and its work may be done twice`);
        } else {
          out.push(`${head}: delivered ${threshold} or more ago and never acknowledged (a consumer that stopped or crashed?); ${total === 1 ? 'it' : 'they'} ${moved} and XACKed in the group`);
        }
      }
    }
    return out;
  }

  async commit(moves: PlannedMove[]): Promise<Committed> {
    const targets = new Map<string, number>();
    const keys: string[] = [this.key];
    const args: string[] = [REDRIVE_COUNT_HEADER, String(this.minIdleMs)];
    for (const m of moves) {
      let t = targets.get(m.targetQueueId);
      if (t === undefined) {
        keys.push((parseQueueId(m.targetQueueId) as { key: string }).key);
        t = keys.length - 1;
        targets.set(m.targetQueueId, t);
      }
      // Guarded unless it was decided on knowing a consumer had just received it (pending entries
      // included): the script leaves it if a consumer received it since the read.
      const { state, idleMs } = m.message.meta;
      const knownRecent = state === 'pending' && typeof idleMs === 'number' && idleMs < this.minIdleMs;
      args.push(m.message.id, `${knownRecent ? '' : 'g'}${String(t)}`);
    }
    const r = (await streamMove.run(this.conn, keys, args)) as (string | undefined)[];
    const out: Committed = { moved: [], failed: [], possibleDuplicates: [] };
    moves.forEach((m, i) => {
      const v = r[i] ?? '';
      if (v === '') out.failed.push({ id: m.message.id, error: err('BROKER_ERROR', `Entry ${m.message.id} is no longer in the DLQ stream (deleted or moved by another client); nothing was published.`) });
      else if (v.startsWith('!')) out.failed.push({ id: m.message.id, error: err('BROKER_ERROR', `Adding entry ${m.message.id} to ${m.targetQueueId} failed: ${v.slice(1, 300)}; it stays in the DLQ.`) });
      else if (v.startsWith('~')) {
        const [group = '?', consumer = '?', idle = '?'] = v.slice(1).split('\0');
        out.failed.push({
          id: m.message.id,
          error: err('BROKER_ERROR', `Entry ${m.message.id} was delivered to consumer "${consumer.slice(0, 120)}" of group "${group.slice(0, 120)}" after it was read (idle ${idle} ms, not acknowledged): it is likely being processed now, so it stays in the DLQ; nothing was published.`),
        });
      }
      else out.moved.push({ id: m.message.id, targetQueueId: m.targetQueueId });
    });
    return out;
  }
}

// ---- BullMQ -----------------------------------------------------------------------------------

/** Job options that must not follow a job into another queue (or a re-inject): they would delay, repeat, re-parent or silently deduplicate it away. */
const DROPPED_OPTS = new Set(['jobId', 'delay', 'repeat', 'repeatJobKey', 'prevMillis', 'parent', 'deduplication', 'debounce', 'timestamp', 'de']);

/** BullMQ job options for re-adding a message: its headers (the job's options, long names) minus {@link DROPPED_OPTS}. */
export function jobOptionsFrom(message: QueueMessage): JobsOptions {
  const out: JobsOptions & Record<string, HeaderValue> = {};
  for (const [k, v] of Object.entries(message.headers)) if (!DROPPED_OPTS.has(k)) out[k] = v;
  return out;
}

/** The job id a job gets in another queue: its own when custom (BullMQ forbids integer custom ids and `:`), else `qsr-<queue>-<id>` — stable, so a repeated run finds it. */
export function redriveJobId(sourceName: string, jobId: string): string {
  const custom = !/^\d+$/.test(jobId) && !jobId.includes(':');
  return custom ? jobId : `qsr-${sourceName}-${jobId}`.replace(/:/g, '-');
}

/** The job data (the message body) parsed, or an error when it is not JSON (BullMQ stores data as JSON text). */
export function jobData(message: QueueMessage): { ok: true; data: unknown } | { ok: false; why: string } {
  if (message.body.encoding !== 'utf8') return { ok: false, why: 'its data is not UTF-8 JSON text' };
  if (message.body.data === '') return { ok: true, data: {} };
  try {
    return { ok: true, data: JSON.parse(message.body.data) as unknown };
  } catch {
    return { ok: false, why: 'its data is not valid JSON' };
  }
}

/**
 * A BullMQ queue's `failed` (or `completed`) jobs, oldest `finishedOn` first (the sorted set's
 * order), up to the cutoff. Read with one SORT_RO … GET per batch on the mover's connection
 * (the peek's fields and conversion; the peek's paging when SORT_RO is refused), moved either
 * back into the same queue (BullMQ's reprocessJob semantics, one script per batch) or into another
 * queue (see {@link BullmqSource.commit}).
 */
export class BullmqSource implements BatchSource {
  /** Rank in the state set of the next job to read: the jobs examined so far that are still there. */
  private off = 0;
  private readEnd = 0;
  private checked = false;
  private sortRefused = false;
  /**
   * The next batch, read ahead (see {@link read}): sent right after a batch was read, before its
   * commit goes out on the same connection, so Redis serves it at the rank where that batch ended
   * while the client decides, backs up and commits — and the client converts it while Redis runs
   * the commit. `n` = jobs asked for, `at` = when it was sent (ms).
   */
  private ahead: { n: number; at: number; p: Promise<{ ok: true; v: { messages: QueueMessage[]; ids: string[] } | null } | { ok: false; e: unknown }> } | null = null;
  private readonly queueId: string;
  private readonly base: string;

  constructor(
    private readonly ctx: RedisContext,
    private readonly conn: Redis,
    private readonly prefix: string,
    private readonly name: string,
    private readonly state: 'failed' | 'completed',
    private readonly cutoffMs: number,
    private readonly maxBodyBytes: number,
  ) {
    this.queueId = formatQueueId({ kind: 'bullmq', prefix, name });
    this.base = `${prefix}:${name}:`;
  }

  checkTarget(t: string): string | null {
    return sameKind('bullmq', t);
  }

  /**
   * The next `n` jobs from rank {@link off}: one SORT_RO command on the mover's connection
   * ({@link readSortedStateJobs}); when the server refuses SORT_RO, the peek's paging
   * ({@link peekBullmq}: ZRANGE + HGETALL). The queue's existence is checked on the first read.
   */
  async read(n: number, signal?: AbortSignal): Promise<{ messages: QueueMessage[]; end: MoveSummary['stoppedBecause'] | null }> {
    if (!this.checked) {
      await this.checkQueue();
      this.checked = true;
    }
    for (;;) {
      let messages: QueueMessage[];
      let more: boolean;
      let fast = await this.takeAhead(n);
      if (fast === undefined) fast = this.sortRefused ? null : await readSortedStateJobs(this.conn, this.prefix, this.name, this.state, this.off, n, this.maxBodyBytes, signal);
      if (fast !== null) {
        messages = fast.messages;
        more = fast.ids.length === n;
        this.readEnd = this.off + fast.ids.length;
        // Only when no commit is in flight (one is sent after this returns), so the rank is exact.
        if (more && messages.length > 0) this.readAhead(this.readEnd, n, signal);
      } else {
        this.sortRefused = true;
        const cursor = this.off > 0 ? encodeCursor({ v: 1, q: this.queueId, s: this.state, d: 'oldest', n: this.off, o: this.off }) : null;
        const page = await peekBullmq(this.ctx, this.prefix, this.name, { limit: n, state: this.state, cursor, maxBodyBytes: this.maxBodyBytes }, signal);
        more = page.nextCursor !== null;
        this.readEnd = page.nextCursor ? (decodeCursor(page.nextCursor, { queueId: this.queueId, state: this.state, direction: 'oldest' }).o ?? this.off) : Infinity;
        messages = page.messages;
        messages.forEach((m, i) => {
          m.position = this.off + i;
        });
      }
      const beyond = messages.findIndex((m) => typeof m.meta.finishedOn === 'number' && m.meta.finishedOn > this.cutoffMs);
      if (beyond >= 0) return { messages: messages.slice(0, beyond), end: 'cutoff' };
      if (more && messages.length === 0 && Number.isFinite(this.readEnd)) {
        // Every id read had lost its hash (removed meanwhile): they keep their ranks; read on.
        this.off = this.readEnd;
        continue;
      }
      if (more) return { messages, end: null };
      const later = await this.conn.zcount(`${this.base}${this.state}`, `(${this.cutoffMs}`, '+inf');
      return { messages, end: later > 0 ? 'cutoff' : 'exhausted' };
    }
  }

  private readAhead(start: number, n: number, signal?: AbortSignal): void {
    const p = readSortedStateJobs(this.conn, this.prefix, this.name, this.state, start, n, this.maxBodyBytes, signal).then(
      (v) => ({ ok: true as const, v }),
      (e: unknown) => ({ ok: false as const, e }),
    );
    this.ahead = { n, at: Date.now(), p };
  }

  /**
   * The batch read ahead, when there is one for `n` jobs and it is at most {@link READ_AHEAD_MAX_AGE_MS}
   * old (after a pause or a rate-limit wait it is read again, so decisions are made on fresh
   * jobs); undefined when there is none or it was dropped. It starts at rank {@link off}: it was
   * read where the batch before it ended, and that batch's moves (now committed) came before it.
   */
  private async takeAhead(n: number): Promise<{ messages: QueueMessage[]; ids: string[] } | null | undefined> {
    const a = this.ahead;
    if (a === null) return undefined;
    this.ahead = null;
    const r = await a.p;
    if (a.n !== n || Date.now() - a.at > READ_AHEAD_MAX_AGE_MS) return undefined;
    if (!r.ok) throw r.e;
    return r.v;
  }

  async close(): Promise<void> {
    const a = this.ahead;
    this.ahead = null;
    if (a) await a.p;
  }

  /** @throws QueuescopeError `QUEUE_NOT_FOUND` when the queue does not exist; `BROKER_ERROR` when its state key is not a sorted set. */
  private async checkQueue(): Promise<void> {
    const key = `${this.base}${this.state}`;
    const [exists, type] = await Promise.all([this.conn.exists(`${this.base}meta`, `${this.base}id`), this.conn.type(key)]);
    if (exists === 0 && type === 'none') throw notFound(this.queueId, `no BullMQ queue "${this.name}" with prefix "${this.prefix}" exists (any more)`);
    if (type !== 'none' && type !== 'zset') throw new QueuescopeError('BROKER_ERROR', `The key "${key}" is a ${type}, not the sorted set BullMQ keeps "${this.state}" jobs in.`);
  }

  advance(batch: QueueMessage[]): void {
    this.off = Number.isFinite(this.readEnd) ? this.readEnd : this.off + batch.length;
  }

  async commit(moves: PlannedMove[], batch: QueueMessage[]): Promise<Committed> {
    const same = moves.filter((m) => m.targetQueueId === this.queueId);
    const other = moves.filter((m) => m.targetQueueId !== this.queueId);
    const out: Committed = { moved: [], failed: [], possibleDuplicates: [] };
    if (same.length > 0) await this.retry(same, out);
    if (other.length > 0) {
      // Those moves go through other connections: the read ahead must have run before them.
      if (this.ahead) await this.ahead.p;
      await this.moveToOtherQueues(other, out);
    }
    const removed = out.moved.length + out.possibleDuplicates.length + (out.vanished ?? 0);
    const end = Number.isFinite(this.readEnd) ? this.readEnd : this.off + batch.length;
    this.off = Math.max(0, end - removed);
    return out;
  }

  /**
   * Failed → waiting of the same queue as BullMQ's reprocessJob does it (fresh attempt budget) +
   * counter, one script: the batch script (BULLMQ_RETRY_BATCH_LUA) when it matches the installed
   * bullmq, else BullMQ's script once per job (BULLMQ_RETRY_LUA).
   */
  private async retry(moves: PlannedMove[], out: Committed): Promise<void> {
    const b = this.base;
    const keys = [`${b}events`, `${b}${this.state}`, `${b}wait`, `${b}meta`, `${b}active`, `${b}marker`, `${b}prioritized`, `${b}pc`];
    const args: string[] = [b, REDRIVE_COUNT_HEADER, this.state, this.state === 'failed' ? 'failedReason' : 'returnvalue'];
    let r: number[];
    if (bullmqRetryBatch !== null) {
      let dirs = '';
      for (const m of moves) dirs += m.message.headers.lifo === true ? 'R' : 'L';
      args.push(dirs);
      for (const m of moves) args.push(m.message.id);
      r = (await bullmqRetryBatch.run(this.conn, keys, args)) as number[];
    } else {
      for (const m of moves) args.push(m.message.id, m.message.headers.lifo === true ? 'RPUSH' : 'LPUSH');
      r = (await bullmqRetry.run(this.conn, keys, args)) as number[];
    }
    moves.forEach((m, i) => {
      const code = Number(r[i]);
      if (code === 1) {
        out.moved.push({ id: m.message.id, targetQueueId: m.targetQueueId });
        return;
      }
      // -3 / -4: no longer in the state set, so it no longer takes a place there (the next read
      // starts earlier); -1 (hash gone): its id may still be in the set, so it is counted as staying.
      if (code === -3 || code === -4) out.vanished = (out.vanished ?? 0) + 1;
      out.failed.push({
        id: m.message.id,
        error: err('BROKER_ERROR', code === -1 || code === -4 ? `Job ${m.message.id} no longer exists.` : `Job ${m.message.id} is no longer in the ${this.state} set (retried or removed by another client).`),
      });
    });
  }

  /**
   * Into another BullMQ queue. Not one script: adding a job is BullMQ's own addJob logic
   * (markers, priorities, events, its Lua), so the steps are ordered to lose nothing instead:
   * 1. ask whether each new job id already exists in the target, and whether it is our copy of
   *    this very job ({@link REDRIVEN_FROM_FIELD}) — then step 2 is skipped for it (an earlier run
   *    crashed after adding it); a foreign job with that id fails the message (left in the DLQ);
   * 2. `Queue.addBulk` (one MULTI) with the same name, data and options and a stable job id;
   * 3. mark the copies (redriven-from + redrive counter) in one MULTI;
   * 4. only then remove the originals (BullMQ `Queue.remove`).
   * A crash after 2 leaves the job in both queues — a duplicate, never a loss; it is reported in
   * `possibleDuplicates` when step 3 or 4 fails.
   */
  private async moveToOtherQueues(moves: PlannedMove[], out: Committed): Promise<void> {
    const plan = moves.map((m) => {
      const ref = parseQueueId(m.targetQueueId) as { kind: 'bullmq'; prefix: string; name: string };
      const newId = redriveJobId(this.name, m.message.id);
      return { m, ref, newId, newKey: `${ref.prefix}:${ref.name}:${newId}`, origin: `${this.queueId}|${m.message.id}` };
    });
    const p = this.conn.pipeline();
    for (const x of plan) p.exists(x.newKey).hget(x.newKey, REDRIVEN_FROM_FIELD).hget(`${this.base}${x.m.message.id}`, REDRIVE_COUNT_HEADER);
    const res = (await p.exec()) ?? [];
    const toAdd: typeof plan = [];
    const added: (typeof plan[number] & { count: number })[] = [];
    plan.forEach((x, i) => {
      for (const [e] of res.slice(i * 3, i * 3 + 3)) if (e) throw e;
      const exists = Number(res[i * 3]?.[1]) > 0;
      const from = res[i * 3 + 1]?.[1];
      const count = (num(res[i * 3 + 2]?.[1]) ?? 0) + 1;
      if (exists && from !== x.origin) {
        out.failed.push({ id: x.m.message.id, error: err('BROKER_ERROR', `A job with id "${x.newId}" already exists in ${x.m.targetQueueId} and is not a redrive of this job; job ${x.m.message.id} stays in the DLQ.`) });
      } else if (exists) {
        added.push({ ...x, count });
      } else {
        const data = jobData(x.m.message);
        if (!data.ok) out.failed.push({ id: x.m.message.id, error: err('INVALID_INPUT', `Job ${x.m.message.id} cannot be re-added to another queue: ${data.why}.`) });
        else toAdd.push(x);
        if (data.ok) added.push({ ...x, count });
      }
    });
    const byTarget = new Map<string, typeof plan>();
    for (const x of toAdd) byTarget.set(x.m.targetQueueId, [...(byTarget.get(x.m.targetQueueId) ?? []), x]);
    for (const [, xs] of byTarget) {
      const ref = (xs[0] as (typeof plan)[number]).ref;
      const q = await this.ctx.bullQueue(ref.prefix, ref.name);
      await q.addBulk(
        xs.map((x) => ({
          name: typeof x.m.message.meta.jobName === 'string' && x.m.message.meta.jobName !== '' ? x.m.message.meta.jobName : 'job',
          data: (jobData(x.m.message) as { data: unknown }).data,
          opts: { ...jobOptionsFrom(x.m.message), jobId: x.newId },
        })),
      );
    }
    // From here on the copies exist: a failure reports possible duplicates, never a loss.
    try {
      const mark = this.conn.multi();
      for (const x of added) mark.hset(x.newKey, REDRIVEN_FROM_FIELD, x.origin, REDRIVE_COUNT_HEADER, String(x.count));
      await mark.exec();
      const src = await this.ctx.bullQueue(this.prefix, this.name);
      const removed = await Promise.all(added.map((x) => src.remove(x.m.message.id, { removeChildren: false }).catch(() => -1)));
      added.forEach((x, i) => {
        if (removed[i] === 1) out.moved.push({ id: x.m.message.id, targetQueueId: x.m.targetQueueId });
        else out.possibleDuplicates.push({ id: x.m.message.id, targetQueueId: x.m.targetQueueId });
      });
    } catch {
      for (const x of added) out.possibleDuplicates.push({ id: x.m.message.id, targetQueueId: x.m.targetQueueId });
    }
  }
}
