/**
 * Which messages of a redrive backup the redrive did NOT move.
 *
 * A client-side redrive appends each batch's moves to its backup before publishing them
 * (`core/redrive/backup.ts`), so the backup also holds the moves that then failed: a message whose
 * publish or removal failed (it stayed in the DLQ), one another client took between the read and
 * the move (a Redis list popped at its head: it is in neither queue, that client has it), and one
 * whose outcome is unknown (the move's reply was lost, or the run ended before it reported the
 * batch). Re-injecting the whole backup would publish those again — duplicates of what the DLQ
 * still holds or the other client took. The engine records them per backup message, by their
 * 0-based position among the backup's message lines (its *ordinal*: ids need not be unique in a
 * list DLQ), in the redrive's audit-log entry (`details.notMoved`, a {@link NotMovedRecord}; every
 * client-side run records one, with `count` 0 when it moved all it backed up), and a re-inject
 * leaves them out unless asked to include them. Pure: no I/O.
 * @module
 */

/** Why a backed-up message was not moved. */
export type NotMovedKind =
  /** Publishing or removing it failed: it stayed in the DLQ. */
  | 'stayed'
  /** Another client took it from the DLQ after the run read it, before its move (`details.leftDlq`): in neither queue. */
  | 'taken'
  /** Its outcome is not known (the move's reply was lost, or the run ended before reporting it): in the DLQ or the target, not lost. */
  | 'unknown';

/** A run of consecutive backup ordinals not moved for one reason: `[first, last, kind]`, `last` inclusive. */
export type NotMovedRange = [number, number, NotMovedKind];

/** One not-moved message named for people: its backup ordinal, its id (at most 200 characters) and why. */
export interface NotMovedSample {
  n: number;
  id: string;
  why: NotMovedKind;
}

/**
 * The record of a redrive's backed-up messages that it did not move (`details.notMoved` of its
 * final audit-log entry; absent for a native move, which cannot tell which messages it moved, and
 * for runs logged before this record existed).
 */
export interface NotMovedRecord {
  /** Backed-up messages not moved. */
  count: number;
  /** Of them, stayed in the DLQ / taken by another client / outcome unknown. */
  stayed: number;
  taken: number;
  unknown: number;
  /** Their backup ordinals as ranges, in order; all of them when `complete`. */
  ranges: NotMovedRange[];
  /** False when there were more than {@link MAX_NOT_MOVED_RANGES} ranges: only the first are listed. */
  complete: boolean;
  /** The first {@link MAX_NOT_MOVED_SAMPLES} of them with their ids (for the app, and to check the record matches the file). */
  sample: NotMovedSample[];
}

/** Ranges kept in a record (the audit log keeps at most 200 items per array, and an entry at most 64 KiB). */
export const MAX_NOT_MOVED_RANGES = 150;
/** Samples kept in a record. */
export const MAX_NOT_MOVED_SAMPLES = 20;

/** What {@link NotMovedTracker.settle} needs of a batch result (`MoveBatchResult`). */
export interface SettledBatch {
  moved: readonly { id: string }[];
  possibleDuplicates: readonly { id: string }[];
  failed: readonly { id: string; error: { message: string; details?: Record<string, unknown> } }[];
}

/**
 * Follows a client-side redrive: {@link written} with each batch appended to the backup (its first
 * ordinal), {@link settle} with each batch result, {@link finish} at the end. A failed message that
 * was never backed up (it could not move at all, e.g. a body over the read limit) is not in the
 * backup and is ignored. Possible duplicates count as moved: they were published to the target.
 */
export class NotMovedTracker {
  /** Backed-up messages not settled yet: id → their ordinals, oldest first. */
  private readonly pending = new Map<string, number[]>();
  private readonly notMoved: { n: number; id: string; why: NotMovedKind }[] = [];

  /** Records that `messages` were appended to the backup, the first at ordinal `first`. */
  written(messages: readonly { id: string }[], first: number): void {
    messages.forEach((m, i) => {
      const list = this.pending.get(m.id);
      if (list === undefined) this.pending.set(m.id, [first + i]);
      else list.push(first + i);
    });
  }

  private take(id: string): number | undefined {
    const list = this.pending.get(id);
    const n = list?.shift();
    if (list !== undefined && list.length === 0) this.pending.delete(id);
    return n;
  }

  /** Records a batch's outcome. */
  settle(b: SettledBatch): void {
    for (const m of b.moved) this.take(m.id);
    for (const m of b.possibleDuplicates) this.take(m.id);
    for (const f of b.failed) {
      const n = this.take(f.id);
      if (n === undefined) continue;
      const why: NotMovedKind = f.error.details?.leftDlq === true ? 'taken' : /^Outcome unknown/.test(f.error.message) ? 'unknown' : 'stayed';
      this.notMoved.push({ n, id: f.id, why });
    }
  }

  /**
   * The record (`count` 0 when every backed-up message moved: a record is kept then too, so a
   * reader can tell "none" from "not recorded"); messages never settled count as outcome unknown.
   */
  finish(): NotMovedRecord {
    for (const [id, ns] of this.pending) for (const n of ns) this.notMoved.push({ n, id, why: 'unknown' });
    this.pending.clear();
    const all = [...this.notMoved].sort((a, b) => a.n - b.n);
    const ranges: NotMovedRange[] = [];
    for (const m of all) {
      const last = ranges[ranges.length - 1];
      if (last !== undefined && last[1] === m.n - 1 && last[2] === m.why) last[1] = m.n;
      else ranges.push([m.n, m.n, m.why]);
    }
    const count = (k: NotMovedKind): number => all.filter((m) => m.why === k).length;
    return {
      count: all.length,
      stayed: count('stayed'),
      taken: count('taken'),
      unknown: count('unknown'),
      ranges: ranges.slice(0, MAX_NOT_MOVED_RANGES),
      complete: ranges.length <= MAX_NOT_MOVED_RANGES,
      sample: all.slice(0, MAX_NOT_MOVED_SAMPLES).map((m) => ({ n: m.n, id: m.id.slice(0, 200), why: m.why })),
    };
  }
}

const KINDS: readonly NotMovedKind[] = ['stayed', 'taken', 'unknown'];
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isKind = (v: unknown): v is NotMovedKind => typeof v === 'string' && (KINDS as readonly string[]).includes(v);

/**
 * Reads a {@link NotMovedRecord} from an audit entry's `details` (untrusted: the log is a file a
 * person can edit); null when there is none or it is malformed.
 */
export function notMovedRecordOf(details: unknown): NotMovedRecord | null {
  if (typeof details !== 'object' || details === null) return null;
  const r = (details as { notMoved?: unknown }).notMoved;
  if (typeof r !== 'object' || r === null) return null;
  const o = r as Record<string, unknown>;
  if (!isCount(o.count) || !isCount(o.stayed) || !isCount(o.taken) || !isCount(o.unknown) || typeof o.complete !== 'boolean' || !Array.isArray(o.ranges) || !Array.isArray(o.sample)) return null;
  const ranges: NotMovedRange[] = [];
  for (const x of o.ranges as unknown[]) {
    if (!Array.isArray(x) || x.length !== 3) return null;
    const [first, last, kind] = x as unknown[];
    if (!isCount(first) || !isCount(last) || last < first || !isKind(kind)) return null;
    ranges.push([first, last, kind]);
  }
  const sample: NotMovedSample[] = [];
  for (const x of o.sample as unknown[]) {
    const s = x as Partial<NotMovedSample> | null;
    if (typeof s !== 'object' || s === null || !isCount(s.n) || typeof s.id !== 'string' || !isKind(s.why)) return null;
    sample.push({ n: s.n, id: s.id, why: s.why });
  }
  return { count: o.count, stayed: o.stayed, taken: o.taken, unknown: o.unknown, ranges, complete: o.complete, sample };
}

/** Why the message at backup ordinal `n` was not moved, or null when the record does not list it (moved, or beyond an incomplete record). */
export function notMovedKindAt(record: NotMovedRecord, n: number): NotMovedKind | null {
  // Ranges are sorted and disjoint: binary search.
  let lo = 0;
  let hi = record.ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = record.ranges[mid] as NotMovedRange;
    if (n < r[0]) hi = mid - 1;
    else if (n > r[1]) lo = mid + 1;
    else return r[2];
  }
  return null;
}

/** Backup ordinals the record lists (≤ `count`; all of them when `complete`). */
export function listedNotMoved(record: NotMovedRecord): number {
  return record.ranges.reduce((s, r) => s + (r[1] - r[0] + 1), 0);
}

/** The reasons of a record in words: "2 taken by another client (…), 1 stayed in the DLQ (…)". */
export function describeNotMovedKinds(r: Pick<NotMovedRecord, 'stayed' | 'taken' | 'unknown'>): string {
  const parts: string[] = [];
  if (r.taken > 0) parts.push(`${String(r.taken)} taken by another client (it popped ${r.taken === 1 ? 'it' : 'them'} from the DLQ after the run read ${r.taken === 1 ? 'it' : 'them'}: not in the DLQ, that client has ${r.taken === 1 ? 'it' : 'them'})`);
  if (r.stayed > 0) parts.push(`${String(r.stayed)} stayed in the DLQ (${r.stayed === 1 ? 'its' : 'their'} move failed)`);
  if (r.unknown > 0) parts.push(`${String(r.unknown)} with an unknown outcome (in the DLQ or the target, not lost)`);
  return parts.join(', ');
}
