import { stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import {
  QueuescopeError,
  toErrorInfo,
  type ConnectionCheck,
  type ConnectionTestResult,
  type PeekOptions,
  type PeekPage,
  type QueueMessage,
  type QueueSummary,
  type SnapshotConnectionConfig,
} from '../../../shared/domain';
import {
  isRedriveBackupHeader,
  missingHeaderError,
  parseJsonLine,
  snapshotLineError,
  toQueueMessage,
  validateSnapshotLine,
  type SnapshotHeaderLine,
  type SnapshotMessageLine,
} from '../../snapshot/format';
import { fileError, isGzipFile, readRawLines, throwIfAborted, type LineStart, type RawLine } from '../../snapshot/lines';
import { readFirstHeader } from '../../snapshot/reader';
import type { BrokerAdapter, ListQueuesOptions } from '../types';
import { abortable } from '../../lib/abort';
import { truncateBody } from '../body';

/** Every how many messages (per section, and per state within a section) the index keeps a byte offset. */
export const SNAPSHOT_CHECKPOINT_EVERY = 256;
/** Largest page a snapshot peek returns. */
export const SNAPSHOT_MAX_PEEK_WINDOW = 1000;
/** Default `maxBodyBytes` (1 MiB + 1 KiB, as in {@link PeekOptions}). */
const DEFAULT_MAX_BODY_BYTES = 1024 * 1024 + 1024;

/** Key of {@link QueueSummary.counts} holding the number of messages the file holds for a section. */
export const SNAPSHOT_COUNT_KEY = 'in snapshot';

/**
 * What a snapshot queue summary carries in `config.snapshot` (plain JSON) next to the counts
 * recorded at export time: what the file itself holds for that section.
 */
export interface SnapshotQueueInfo {
  /** Messages in the file for this section (all states). */
  messages: number;
  /** Messages in the file per `meta.state` (messages without a state are not listed). */
  states: Record<string, number>;
  /** When the export started, ms since epoch (header `exportedAt`). */
  exportedAt: number;
  /**
   * True when the section does not hold the whole queue/state: the header says so, or the file
   * holds fewer (or more) messages than the writer recorded (`completeness: 'cut'`).
   */
  partial: boolean;
  /** Why the section is partial, in words (the header's reason, then the cut); `null` when not known. */
  partialReason: string | null;
  /**
   * Whether the file holds what the writer wrote for this section (header `written`, see
   * `core/snapshot/format.ts`): `complete` — the same number of messages; `cut` — fewer or more, or
   * the writer never finished (then `partial` is true and `partialReason` says so); `unchecked` —
   * the header has no record (an older Queuescope wrote it): it may have been cut at a line
   * boundary without anything showing it.
   */
  completeness: 'complete' | 'cut' | 'unchecked';
  /**
   * A sentence about completeness that is not in `partialReason`: why it is `unchecked`, or that
   * the file ends before sections the writer wrote after this one; `null` otherwise.
   */
  completenessNote: string | null;
  /** Messages the writer recorded for this section (header `written.messages`); `null` when not recorded. */
  writtenMessages: number | null;
  /** Why the file does not hold what the writer wrote (the part of `partialReason` about the cut); `null` when it does or it cannot be checked. */
  cutReason: string | null;
  /** True when the section is a redrive backup (header `partialReason`, see `core/snapshot/format.ts`). */
  redriveBackup: boolean;
  /** Peek state exported (header `state`); `null` = the default state / all states. */
  state: string | null;
  /** `ids` when only chosen messages were exported. */
  selection: 'all' | 'ids';
  /** Absolute path of the snapshot file. */
  file: string;
  /** Connection label the section was exported from (no secrets). */
  connection: string;
  /** The queue's id on the original broker. */
  originalId: string;
}

/** Positions of one selection (all messages of a section, or those of one state). */
interface Selection {
  count: number;
  /** `checkpoints[k]` is where the selection's message number `k * SNAPSHOT_CHECKPOINT_EVERY` starts. */
  checkpoints: LineStart[];
}

interface SectionIndex {
  /** Queue id within this snapshot connection (the original id, `#2`… appended on duplicates). */
  id: string;
  header: SnapshotHeaderLine;
  all: Selection;
  /** Per `meta.state` (`''` for messages without a state). */
  states: Map<string, Selection>;
  /** Sections of the same write missing after this one (the file ends or another write begins first); 0 when none or unknown. */
  missingAfter: number;
}

interface FileIndex {
  size: number;
  mtimeMs: number;
  gzip: boolean;
  sections: SectionIndex[];
  byId: Map<string, SectionIndex>;
  /** Original queue id → section id (first occurrence), to resolve dead-letter links inside the file. */
  byOriginalId: Map<string, string>;
}

function addToSelection(sel: Selection, at: LineStart): void {
  if (sel.count % SNAPSHOT_CHECKPOINT_EVERY === 0) sel.checkpoints.push(at);
  sel.count++;
}

/** `*` wildcard match on names, case-sensitive, anchored. */
function globToRegExp(pattern: string): RegExp {
  const body = pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  return new RegExp(`^${body}$`);
}

/** Re-exported for callers that imported it from here; the one implementation is core/adapters/body.ts. */
export { truncateBody };

/** `p:<n>` pages oldest first, `n:<n>` newest first (the direction travels with the cursor). */
const CURSOR = /^([pn]):(\d{1,12})$/;

/** A resume point left unused this long is closed (its file handle released: Windows cannot delete an open file), ms. */
const RESUME_IDLE_MS = 5000;

/**
 * Where the last page of a selection stopped: its line reader, still open after the page's last
 * message, so the next page (which starts at `ordinal`) reads on from there instead of opening the
 * file again at a checkpoint (and, for gzip, decompressing everything before it again: without
 * this, paging a gzip snapshot was quadratic).
 */
interface ResumePoint {
  /** The index it was made with: a rebuilt index (a changed file) is never resumed. */
  idx: FileIndex;
  sel: Selection;
  state: string | null;
  /** Ordinal (in `sel`) of the next message `lines` yields. */
  ordinal: number;
  lines: AsyncGenerator<RawLine, void, undefined>;
  timer: NodeJS.Timeout;
}

/**
 * Read-only adapter over a snapshot file (format: `core/snapshot/format.ts`), plain or gzip.
 *
 * The first call that needs the queue list makes one streaming pass over the file that records,
 * per section, the message count, the count per `meta.state`, and the byte offset of every
 * 256th message (overall and per state). Bodies are never kept, so files of 100k+ messages open
 * in bounded memory. A peek seeks to the nearest recorded offset and reads forward at most 255
 * lines plus the page. The index is rebuilt when the file's size or mtime changes.
 *
 * Queue summaries keep the original `broker` and `kind` (so badges show where the data came from)
 * and the counts recorded at export time (`depth`, `inFlight`, `delayed`, `consumers`, `counts`,
 * as the header holds them: a snapshot may hold fewer messages than the queue had). What the file
 * holds is reported separately: `counts['in snapshot']` ({@link SNAPSHOT_COUNT_KEY}) and
 * `config.snapshot` ({@link SnapshotQueueInfo}: messages, per-state counts, exportedAt, partial,
 * partialReason, state, selection). Capabilities are non-destructive; the adapter's own
 * `broker` is `snapshot`. Queue ids are the original ids; a second section with the same id gets
 * `#2` appended (and so on). Cursors are `p:<n>` (the n-th message of the selection, 0-based; `n:<n>`
 * for a page newest first, so following a cursor keeps the direction).
 *
 * Every line is validated during the pass, so a bad file fails on open with `SNAPSHOT_INVALID`
 * naming the line and field, not halfway through paging.
 */
export function createSnapshotAdapter(config: SnapshotConnectionConfig): BrokerAdapter {
  return new SnapshotAdapter(config);
}

class SnapshotAdapter implements BrokerAdapter {
  readonly broker = 'snapshot' as const;
  private readonly path: string;
  private readonly label: string;
  private cached: FileIndex | null = null;
  private building: Promise<FileIndex> | null = null;
  private resume: ResumePoint | null = null;

  constructor(config: SnapshotConnectionConfig) {
    this.path = resolve(config.path);
    this.label = basename(this.path);
  }

  async testConnection(signal?: AbortSignal): Promise<ConnectionTestResult> {
    const checks: ConnectionCheck[] = [];
    let t = Date.now();
    try {
      throwIfAborted(signal);
      let size: number;
      try {
        const st = await stat(this.path);
        if (!st.isFile()) throw Object.assign(new Error('not a file'), { code: 'EISDIR' });
        size = st.size;
      } catch (e) {
        throw fileError(e, this.path);
      }
      checks.push({ name: `Open ${this.label}`, ok: true, detail: `${size} bytes`, ms: Date.now() - t });
      t = Date.now();
      const { header, gzip } = await readFirstHeader(this.path, signal);
      checks.push({
        name: 'First line is a Queuescope snapshot header',
        ok: true,
        detail: `version ${header.version}${gzip ? ', gzip' : ''}, exported ${new Date(header.exportedAt).toISOString()} from ${header.source.connection}, queue ${header.source.queue.name}`,
        ms: Date.now() - t,
      });
      return { ok: true, server: `Queuescope snapshot v${header.version}`, checks, error: null };
    } catch (e) {
      const error = toErrorInfo(e);
      checks.push({ name: checks.length === 0 ? `Open ${this.label}` : 'First line is a Queuescope snapshot header', ok: false, detail: error.message, ms: Date.now() - t });
      return { ok: false, server: null, checks, error };
    }
  }

  async listQueues(options: ListQueuesOptions, signal?: AbortSignal): Promise<QueueSummary[]> {
    const idx = await this.index(signal);
    const re = options.pattern !== undefined && options.pattern !== '' ? globToRegExp(options.pattern) : null;
    return idx.sections
      .filter((s) => re === null || re.test(s.header.source.queue.name))
      .map((s) => this.summary(s, idx))
      .sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id))
      .slice(0, options.limit ?? 10_000);
  }

  async getQueue(queueId: string, signal?: AbortSignal): Promise<QueueSummary> {
    const idx = await this.index(signal);
    return this.summary(this.section(idx, queueId), idx);
  }

  async peek(queueId: string, options: PeekOptions, signal?: AbortSignal): Promise<PeekPage> {
    const idx = await this.index(signal);
    const section = this.section(idx, queueId);
    const limit = Math.min(Math.max(1, Math.floor(options.limit)), SNAPSHOT_MAX_PEEK_WINDOW);
    if (!Number.isFinite(limit)) throw new QueuescopeError('INVALID_INPUT', 'Peek limit must be a number between 1 and 1000.');
    let sel: Selection = section.all;
    const state = options.state;
    if (state !== undefined && state !== '') {
      const s = section.states.get(state);
      if (s === undefined) {
        const known = [...section.states.keys()].filter((k) => k !== '');
        throw new QueuescopeError(
          'INVALID_INPUT',
          `Snapshot queue ${section.header.source.queue.name} has no messages in state "${state}"${known.length > 0 ? `; states in the file: ${known.join(', ')}` : ''}.`,
          { state, states: known },
        );
      }
      sel = s;
    }
    let start: number | null = null;
    let cursorNewest = false;
    if (options.cursor !== undefined && options.cursor !== null && options.cursor !== '') {
      const m = CURSOR.exec(options.cursor);
      if (m === null) throw new QueuescopeError('INVALID_INPUT', `"${options.cursor.slice(0, 40)}" is not a snapshot cursor (expected p:<number> or n:<number> from a previous page).`);
      start = Number(m[2]);
      cursorNewest = m[1] === 'n';
    }
    const newest = cursorNewest || options.direction === 'newest';
    let lo: number;
    let hi: number;
    let next: number | null;
    if (!newest) {
      lo = start ?? 0;
      hi = Math.min(sel.count - 1, lo + limit - 1);
      next = hi + 1 < sel.count ? hi + 1 : null;
    } else {
      hi = Math.min(start ?? sel.count - 1, sel.count - 1);
      lo = Math.max(0, hi - limit + 1);
      next = lo > 0 ? lo - 1 : null;
    }
    const messages = lo <= hi && lo < sel.count ? await this.readRange(idx, section, sel, state && state !== '' ? state : null, lo, hi, options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, signal) : [];
    if (newest) messages.reverse();
    return { messages, nextCursor: next === null || messages.length === 0 ? null : `${newest ? 'n' : 'p'}:${next}`, total: sel.count, sideEffects: [] };
  }

  async close(): Promise<void> {
    this.cached = null;
    await this.dropResume();
  }

  /** The resume point for a page of `sel` starting at `lo`, taken (a concurrent page opens its own), or null. */
  private takeResume(idx: FileIndex, sel: Selection, state: string | null, lo: number): ResumePoint | null {
    const r = this.resume;
    if (r === null || r.idx !== idx || r.sel !== sel || r.state !== state || r.ordinal !== lo) return null;
    clearTimeout(r.timer);
    this.resume = null;
    return r;
  }

  /** Keeps a page's line reader for the next page (closing the one kept before, and this one when unused for {@link RESUME_IDLE_MS}). */
  private keepResume(point: Omit<ResumePoint, 'timer'>): void {
    void this.dropResume();
    const timer = setTimeout(() => {
      if (this.resume?.lines === point.lines) void this.dropResume();
    }, RESUME_IDLE_MS);
    timer.unref();
    this.resume = { ...point, timer };
  }

  private async dropResume(): Promise<void> {
    const r = this.resume;
    if (r === null) return;
    this.resume = null;
    clearTimeout(r.timer);
    await r.lines.return(undefined).catch(() => undefined);
  }

  /** Reads messages `lo..hi` (0-based, inclusive) of a selection. */
  private async readRange(
    idx: FileIndex,
    section: SectionIndex,
    sel: Selection,
    state: string | null,
    lo: number,
    hi: number,
    maxBodyBytes: number,
    signal: AbortSignal | undefined,
  ): Promise<QueueMessage[]> {
    let lines: AsyncGenerator<RawLine, void, undefined>;
    let ordinal: number;
    const resumed = this.takeResume(idx, sel, state, lo);
    if (resumed !== null) {
      lines = resumed.lines;
      ordinal = lo;
    } else {
      const cpIndex = Math.floor(lo / SNAPSHOT_CHECKPOINT_EVERY);
      const from = sel.checkpoints[cpIndex];
      if (from === undefined) throw new QueuescopeError('INTERNAL', `Snapshot index has no checkpoint ${cpIndex}.`);
      // No signal here: the reader may outlive this call (a resume point); this loop checks it.
      lines = readRawLines(this.path, { from, gzip: idx.gzip, fileLabel: this.label });
      ordinal = cpIndex * SNAPSHOT_CHECKPOINT_EVERY;
    }
    const out: QueueMessage[] = [];
    let keep = false;
    try {
      for (;;) {
        throwIfAborted(signal);
        const next = await lines.next();
        if (next.done === true) break;
        const raw = next.value;
        if (raw.bytes.length === 0) continue;
        const loc = { file: this.label, line: raw.lineNo };
        const needed = ordinal >= lo;
        // Lines before `lo` only need to be counted; with a state filter their state must be read.
        if (!needed && state === null) {
          ordinal++;
          continue;
        }
        const obj = parseJsonLine(raw.bytes.toString('utf8'), loc);
        if (obj.type === 'queue') break; // end of section
        if (state !== null && !isState(obj, state)) continue;
        if (ordinal >= lo) {
          // The index pass validated every line of the file at this size and mtime (index() rebuilds
          // it when either changes), so a page skips zod here (~0.2 s per 100k lines); a line that
          // is not a message object still fails loudly.
          if (obj.type !== 'message') validateSnapshotLine(obj, loc);
          const m = toQueueMessage(obj as unknown as SnapshotMessageLine);
          m.queueId = section.id;
          m.body = truncateBody(m.body, maxBodyBytes);
          out.push(m);
        }
        ordinal++;
        if (ordinal > hi) {
          keep = ordinal < sel.count;
          break;
        }
      }
    } finally {
      if (keep) this.keepResume({ idx, sel, state, ordinal, lines });
      else await lines.return(undefined).catch(() => undefined);
    }
    return out;
  }

  private section(idx: FileIndex, queueId: string): SectionIndex {
    const s = idx.byId.get(queueId);
    if (s === undefined) {
      const cut = idx.sections.find((x) => x.missingAfter > 0);
      const why = cut === undefined ? '' : ` ${completeness(cut, this.label).note ?? ''}`;
      throw new QueuescopeError('QUEUE_NOT_FOUND', `Snapshot ${this.label} has no queue "${queueId.slice(0, 200)}".${why}`, {
        queueId,
        available: idx.sections.map((x) => x.id).slice(0, 50),
      });
    }
    return s;
  }

  private summary(s: SectionIndex, idx: FileIndex): QueueSummary {
    const orig = s.header.source.queue;
    const states = [...s.states.entries()].filter(([k]) => k !== '');
    const mapId = (id: string | null): string | null => (id === null ? null : (idx.byOriginalId.get(id) ?? null));
    const check = completeness(s, this.label);
    const partialReason = [s.header.partialReason ?? null, check.cut].filter((x): x is string => x !== null);
    const info: SnapshotQueueInfo = {
      messages: s.all.count,
      states: Object.fromEntries(states.map(([k, v]) => [k, v.count])),
      exportedAt: s.header.exportedAt,
      partial: s.header.partial === true || check.cut !== null,
      partialReason: partialReason.length > 0 ? partialReason.join(' ') : null,
      completeness: check.cut !== null ? 'cut' : s.header.written === undefined ? 'unchecked' : 'complete',
      completenessNote: check.note,
      writtenMessages: s.header.written?.messages ?? null,
      cutReason: check.cut,
      redriveBackup: isRedriveBackupHeader(s.header),
      state: s.header.state ?? null,
      selection: s.header.selection ?? 'all',
      file: this.path,
      connection: s.header.source.connection,
      originalId: orig.id,
    };
    return {
      ...orig,
      id: s.id,
      // depth, inFlight, delayed, consumers and counts stay as recorded at export time
      counts: { ...orig.counts, [SNAPSHOT_COUNT_KEY]: s.all.count },
      deadLetterTargets: orig.deadLetterTargets.map((t) => ({ ...t, queueId: mapId(t.queueId) })),
      deadLetterSources: orig.deadLetterSources.map(mapId).filter((x): x is string => x !== null),
      capabilities: {
        canPeekNonDestructively: true,
        peekSideEffects: [],
        peekMayDeadLetter: false,
        canPageFromCursor: true,
        maxPeekWindow: SNAPSHOT_MAX_PEEK_WINDOW,
        peekStates: states.length > 1 ? states.map(([k]) => k) : [],
      },
      config: { ...orig.config, snapshot: { ...info } },
    };
  }

  /** The index for the file as it is now (rebuilt when size/mtime changed). */
  private async index(signal: AbortSignal | undefined): Promise<FileIndex> {
    throwIfAborted(signal);
    let st;
    try {
      st = await stat(this.path);
    } catch (e) {
      throw fileError(e, this.path);
    }
    if (!st.isFile()) throw new QueuescopeError('INVALID_INPUT', `Snapshot ${this.path} is not a file.`, { path: this.path });
    const c = this.cached;
    if (c !== null && c.size === st.size && c.mtimeMs === st.mtimeMs) return c;
    // One shared pass; a caller's abort stops its wait, not the pass other callers share.
    const building = (this.building ??= this.build(st.size, st.mtimeMs).finally(() => {
      this.building = null;
    }));
    const idx = await abortable(building, signal);
    this.cached = idx;
    return idx;
  }

  private async build(size: number, mtimeMs: number): Promise<FileIndex> {
    let gzip: boolean;
    try {
      gzip = await isGzipFile(this.path);
    } catch (e) {
      throw fileError(e, this.path);
    }
    const sections: SectionIndex[] = [];
    const byId = new Map<string, SectionIndex>();
    const byOriginalId = new Map<string, string>();
    let current: SectionIndex | null = null;
    for await (const raw of readRawLines(this.path, { gzip, fileLabel: this.label })) {
      if (raw.bytes.length === 0) continue;
      const loc = { file: this.label, line: raw.lineNo };
      const line = validateSnapshotLine(parseJsonLine(raw.bytes.toString('utf8'), loc), loc);
      const at = { offset: raw.offset, lineNo: raw.lineNo };
      if (line.type === 'queue') {
        const origId = line.source.queue.id;
        let id = origId;
        for (let n = 2; byId.has(id); n++) id = `${origId}#${n}`;
        closeWrite(current, line);
        current = { id, header: line, all: { count: 0, checkpoints: [] }, states: new Map(), missingAfter: 0 };
        sections.push(current);
        byId.set(id, current);
        if (!byOriginalId.has(origId)) byOriginalId.set(origId, id);
        continue;
      }
      if (current === null) throw missingHeaderError(loc);
      addToSelection(current.all, at);
      const state = line.meta.state ?? '';
      let sel = current.states.get(state);
      if (sel === undefined) {
        sel = { count: 0, checkpoints: [] };
        current.states.set(state, sel);
      }
      addToSelection(sel, at);
    }
    if (sections.length === 0) throw snapshotLineError({ file: this.label, line: 1 }, 'the file is empty: a snapshot starts with a "queue" header line.');
    closeWrite(current, null);
    return { size, mtimeMs, gzip, sections, byId, byOriginalId };
  }
}

/**
 * Called at each header (`next`) and at the end of the file (`next` null) with the section before
 * it: when that section's header says the writer wrote more sections after it than followed in the
 * file before `next` (which does not continue the same write), sets its `missingAfter`.
 * Only the last section of a write can have sections missing after it, and only it is checked.
 */
function closeWrite(prev: SectionIndex | null, next: SnapshotHeaderLine | null): void {
  const w = prev?.header.written;
  if (prev === null || w === undefined || w === null) return;
  const continues = next?.written !== undefined && next.written !== null && next.written.section === w.section + 1 && next.written.sections === w.sections;
  if (!continues && w.section + 1 < w.sections) prev.missingAfter = w.sections - w.section - 1;
}

/**
 * A section's completeness against its header's `written` record: `cut` — why the file does not
 * hold what was written (null when it does, or when there is no record); `note` — a sentence that
 * is not about this section's own messages (no record to check, sections missing after it).
 */
function completeness(s: SectionIndex, file: string): { cut: string | null; note: string | null } {
  const w = s.header.written;
  if (w === undefined) {
    return {
      cut: null,
      note: `${file} does not record how many messages were written for ${s.header.source.queue.name} (written by an older Queuescope, or by hand): whether the file was cut short (a truncated download or copy) cannot be checked.`,
    };
  }
  // A redrive backup is written by a redrive, under its final name, while the redrive runs.
  const backup = isRedriveBackupHeader(s.header);
  if (w === null) {
    return {
      cut: backup
        ? `The backup was not finished: the redrive that wrote it did not end (killed, crashed, or still running), so its header has no message count; it holds the ${String(s.all.count)} messages that run wrote before moving them, unless the file was also cut later (which cannot be checked).`
        : `The file was cut: the export never finished writing it (its header has no message count; the ${String(s.all.count)} messages in the file may be only the first ones).`,
      note: null,
    };
  }
  const writer = backup ? 'the redrive' : 'the export';
  const held = s.all.count;
  let cut: string | null = null;
  if (held < w.messages) cut = `The file was cut: it holds ${String(held)} of the ${String(w.messages)} messages ${writer} wrote for this queue (a truncated download or copy, or a write that stopped).`;
  else if (held > w.messages) cut = `The file does not match its header: it holds ${String(held)} messages where ${writer} wrote ${String(w.messages)} (edited or joined wrongly).`;
  const note =
    s.missingAfter > 0
      ? `${file} lacks ${String(s.missingAfter)} queue section${s.missingAfter === 1 ? '' : 's'} written after ${s.header.source.queue.name} by the same export: the file was cut there (or joined wrongly), and ${s.missingAfter === 1 ? 'that queue is' : 'those queues are'} missing from it.`
      : null;
  return { cut, note };
}

function isState(obj: Record<string, unknown>, state: string): boolean {
  const meta = obj.meta;
  return meta !== null && typeof meta === 'object' && (meta as Record<string, unknown>).state === state;
}

