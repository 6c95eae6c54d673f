import { access, constants, mkdir, open, stat, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve as resolvePath } from 'node:path';
import { QueuescopeError } from '../../shared/domain';
import { assertHeaderLineFits, formatHeaderLine, formatWrittenHeaderLine, type SnapshotHeaderInput, type SnapshotHeaderLine } from '../snapshot/format';
import { isGzipFile, readRawLines } from '../snapshot/lines';
import { readSnapshot } from '../snapshot/reader';
import { pathExists } from './backup';

/**
 * # Re-inject remainder files
 *
 * A re-inject (`runReinject`, `queuescope reinject --from`) can leave messages of its file
 * unpublished: publishes the target refused, outcomes unknown, SQS FIFO messages held back behind
 * one of those, and — when the run was cancelled or failed — the messages it never reached. The
 * file also holds the messages that were published, so publishing it again duplicates those. A
 * remainder file holds only the unpublished ones: a snapshot (`core/snapshot/format.ts`) with the
 * same message lines, byte for byte and in the same order, under a header per queue section that
 * has any, so `reinject --from <remainder>` publishes exactly the rest.
 *
 * Each section header is the source's header with:
 * - `written` set to the remainder's own counts `{ messages, section, sections }` (a remainder cut
 *   later reads as cut), or left out when the source's header had none (an older file: readers then
 *   apply the same "cannot be checked / not recorded" rules to the remainder as to the source);
 * - `selection: "ids"` (only some messages of the queue);
 * - `remainderOf: { path, at }`: the file it was taken from (absolute) and when, ms since epoch;
 * - no `redriveRun`: the id of the redrive that wrote a backup is not copied.
 * Everything else (source queue, `partialReason` of a redrive backup…) is kept.
 *
 * A remainder has a path of its own and no redrive run id, so the audit-log records a backup is
 * looked up by (its `redriveRun` id, or its path: the redrive's not-moved record, earlier
 * re-injects) do not apply to it: the messages the redrive did not move are never in a remainder
 * (the re-inject left them out), its messages are numbered differently from the backup's, and a
 * later re-inject of the remainder publishes all of it (`remainderOf` tells it is a remainder, so
 * no "no record of the redrive" warning either).
 *
 * The file is created exclusively (never overwrites anything), fsynced, and deleted again when
 * writing fails, so a failed write leaves no half file; the source file is only read.
 * @module
 */

/** What {@link writeRemainder} wrote. */
export interface RemainderWritten {
  /** Absolute path of the remainder file. */
  path: string;
  /** Message lines written. */
  messages: number;
  /** Queue sections (header lines) written. */
  sections: number;
  /** True when the default folder (next to the source) could not be written and the fallback folder was used. */
  fellBack: boolean;
}

/** Options of {@link writeRemainder}. */
export interface WriteRemainderOptions {
  /** The snapshot file the re-inject read (plain or gzip). Only read. */
  source: string;
  /**
   * Which messages to write: true for the 0-based ordinal of a message line among the file's
   * message lines (in file order, sections included, as `runReinject` counts them). Called once per
   * message line, in ascending order.
   */
  pick: (ordinal: number) => boolean;
  /**
   * Where to write. A path: exactly there (its folder is created); refused when anything exists
   * there. Null: {@link defaultRemainderPath} next to `source`, with `-2`, `-3`… added to the name
   * while one exists.
   */
  path: string | null;
  /** Now, ms since epoch: the default name's time and the header's `remainderOf.at`. */
  now: number;
  /**
   * With `path` null: the folder tried when the one of `source` cannot be written (no permission,
   * read-only), e.g. `<config dir>/backups`; null/absent = none.
   */
  fallbackDir?: string | null;
}

/** `.jsonl.gz`, `.jsonl`, `.gz` at the end of a snapshot's file name. */
const SNAPSHOT_EXT = /(\.jsonl)?(\.gz)?$/i;

/**
 * The default remainder path of `source`: in the same folder (or `dir`),
 * `<source name without .jsonl/.jsonl.gz>.remainder-<ISO time, ':' and '.' as '-'>.jsonl`
 * (always plain JSON Lines, also for a gzip source). Pure.
 */
export function defaultRemainderPath(source: string, now: number, dir: string = dirname(resolvePath(source))): string {
  const base = basename(source).replace(SNAPSHOT_EXT, '') || 'snapshot';
  const ts = new Date(now).toISOString().replace(/[:.]/g, '-');
  return join(dir, `${base}.remainder-${ts}.jsonl`);
}

/**
 * Checks, before a re-inject publishes anything, that a remainder can be created at the explicit
 * `path`: nothing exists there, and the nearest existing folder above it is a folder this process
 * can write. (Writing can still fail later, e.g. a full disk: {@link writeRemainder} says so then.)
 * @throws QueuescopeError `INVALID_INPUT` when something exists at `path` (a remainder never
 *   overwrites a file) or a path component is not a folder; `PERMISSION_DENIED` when the folder
 *   cannot be written.
 */
export async function checkRemainderPath(path: string): Promise<void> {
  const full = resolvePath(path);
  if (await pathExists(full)) throw new QueuescopeError('INVALID_INPUT', `The remainder file ${full} already exists; choose another name (a remainder never overwrites a file).`, { path: full });
  let dir = dirname(full);
  for (;;) {
    const st = await stat(dir).catch(() => null);
    if (st !== null) {
      if (!st.isDirectory()) throw new QueuescopeError('INVALID_INPUT', `The remainder file ${full} cannot be created: ${dir} is not a folder.`, { path: full });
      try {
        await access(dir, constants.W_OK);
      } catch (e) {
        throw new QueuescopeError('PERMISSION_DENIED', `No permission to write the remainder file ${full} (folder ${dir}).`, { path: full }, { cause: e });
      }
      return;
    }
    const up = dirname(dir);
    if (up === dir) return;
    dir = up;
  }
}

/**
 * Writes the messages `pick` selects from `source` to a new remainder file (format: see the module
 * docs above): the message lines as they are in `source` (a trailing `\r` dropped, `\n`-ended), in
 * the same order, each under its section's header. Reads `source` twice (once to validate and
 * count, once to copy); memory grows with the number of messages picked (their line numbers).
 * Returns null, creating nothing, when `pick` selects no message.
 * @throws QueuescopeError `INVALID_INPUT` when the explicit `path` exists or is a folder, or
 *   `source` changed between the two reads (the partial file is deleted); `PERMISSION_DENIED`;
 *   `INTERNAL` (disk full, other write errors), each naming the path; errors of reading `source`
 *   like `readSnapshot`. Whatever it throws, no remainder file is left behind.
 */
export async function writeRemainder(o: WriteRemainderOptions): Promise<RemainderWritten | null> {
  // Pass 1: validate, and find the message lines picked and the headers of their sections.
  const sections: { header: SnapshotHeaderLine; lineNo: number; messages: number }[] = [];
  const lines: number[] = [];
  let ordinal = 0;
  for await (const item of readSnapshot(o.source)) {
    if (item.type === 'header') {
      sections[item.section] = { header: item.header, lineNo: item.lineNo, messages: 0 };
      continue;
    }
    if (!o.pick(ordinal++)) continue;
    lines.push(item.lineNo);
    const s = sections[item.section];
    if (s !== undefined) s.messages++;
  }
  if (lines.length === 0) return null;
  const kept = sections.filter((s) => s.messages > 0);
  const at = resolvePath(o.source);
  const headerLines = new Map<number, Buffer>();
  for (const [i, s] of kept.entries()) {
    // Not the redrive run's id: its not-moved record numbers the backup's messages, not these (see the module doc).
    const { written, type: _t, version: _v, redriveRun: _run, ...rest } = s.header;
    const input: SnapshotHeaderInput = { ...rest, selection: 'ids', remainderOf: { path: at, at: o.now } };
    const line = written === undefined ? formatHeaderLine(input) : formatWrittenHeaderLine(input, { messages: s.messages, section: i, sections: kept.length });
    assertHeaderLineFits(line);
    headerLines.set(s.lineNo, Buffer.from(line, 'utf8'));
  }

  const { fh, path, fellBack } = await createRemainderFile(o);
  try {
    // Pass 2: copy. Line numbers of pass 1 address the same lines (the file is only read).
    const out = new BufferedOut(fh);
    let next = 0;
    const gzip = await isGzipFile(o.source);
    for await (const raw of readRawLines(o.source, { gzip, fileLabel: basename(o.source) })) {
      const header = headerLines.get(raw.lineNo);
      if (header !== undefined) {
        await out.write(header);
        headerLines.delete(raw.lineNo);
      } else if (lines[next] === raw.lineNo) {
        next++;
        await out.write(raw.bytes, true);
      }
    }
    if (next < lines.length || headerLines.size > 0) {
      throw new QueuescopeError('INVALID_INPUT', `${o.source} changed while its remainder was written (${String(lines.length - next)} of the ${String(lines.length)} messages were not found again); no remainder was kept.`, { path: o.source });
    }
    await out.flush();
    await fh.sync();
    await fh.close();
    return { path, messages: lines.length, sections: kept.length, fellBack };
  } catch (e) {
    await fh.close().catch(() => undefined);
    await unlink(path).catch(() => undefined);
    throw remainderError(e, path);
  }
}

/** Creates the remainder file exclusively (mode 0600, folder 0700): the explicit path, or the first free default name. */
async function createRemainderFile(o: WriteRemainderOptions): Promise<{ fh: FileHandle; path: string; fellBack: boolean }> {
  if (o.path !== null) {
    const path = resolvePath(o.path);
    return { fh: await createExclusive(path), path, fellBack: false };
  }
  const dirs = [dirname(resolvePath(o.source)), ...(o.fallbackDir != null ? [resolvePath(o.fallbackDir)] : [])];
  let firstError: QueuescopeError | null = null;
  for (const [d, dir] of dirs.entries()) {
    const base = defaultRemainderPath(o.source, o.now, dir);
    for (let n = 1; n <= 100; n++) {
      const path = n === 1 ? base : base.replace(/\.jsonl$/, `-${String(n)}.jsonl`);
      try {
        return { fh: await createExclusive(path), path, fellBack: d > 0 };
      } catch (e) {
        const err = remainderError(e, path);
        if (err.details?.reason === 'exists') continue;
        firstError ??= err;
        break;
      }
    }
    // Only a folder that cannot be written sends the remainder to the fallback folder.
    if (firstError?.code !== 'PERMISSION_DENIED') break;
  }
  throw firstError ?? new QueuescopeError('INTERNAL', `No free remainder file name next to ${o.source}.`, { path: o.source });
}

async function createExclusive(path: string): Promise<FileHandle> {
  try {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    return await open(path, 'wx', 0o600);
  } catch (e) {
    throw remainderError(e, path);
  }
}

/** Writes buffered, 256 KiB at a time; message lines get their `\n` back. */
class BufferedOut {
  private parts: Buffer[] = [];
  private bytes = 0;
  constructor(private readonly fh: FileHandle) {}
  async write(data: Buffer, newline = false): Promise<void> {
    // Copy: a raw line may point into the reader's buffer, which the next read reuses.
    this.parts.push(Buffer.from(data));
    this.bytes += data.length;
    if (newline) {
      this.parts.push(NEWLINE);
      this.bytes++;
    }
    if (this.bytes >= 256 * 1024) await this.flush();
  }
  async flush(): Promise<void> {
    if (this.parts.length === 0) return;
    const data = Buffer.concat(this.parts);
    this.parts = [];
    this.bytes = 0;
    for (let off = 0; off < data.length; ) off += (await this.fh.write(data, off, data.length - off)).bytesWritten;
  }
}
const NEWLINE = Buffer.from('\n');

function remainderError(e: unknown, path: string): QueuescopeError {
  if (e instanceof QueuescopeError) return e;
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (code === 'EEXIST') return new QueuescopeError('INVALID_INPUT', `The remainder file ${path} already exists; choose another name (a remainder never overwrites a file).`, { path, reason: 'exists' }, { cause: e });
  if (code === 'EISDIR') return new QueuescopeError('INVALID_INPUT', `The remainder path ${path} is a folder.`, { path }, { cause: e });
  if (code === 'ENOTDIR') return new QueuescopeError('INVALID_INPUT', `The remainder file ${path} cannot be created: a part of its folder is not a folder.`, { path }, { cause: e });
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return new QueuescopeError('PERMISSION_DENIED', `No permission to write the remainder file ${path}.`, { path }, { cause: e });
  if (code === 'ENOSPC') return new QueuescopeError('INTERNAL', `The disk is full while writing the remainder file ${path}.`, { path }, { cause: e });
  return new QueuescopeError('INTERNAL', `Writing the remainder file ${path} failed: ${e instanceof Error ? e.message : String(e)}`, { path }, { cause: e });
}
