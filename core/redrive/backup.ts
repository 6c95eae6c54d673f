import { mkdir, open, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { QueuescopeError, type QueueMessage } from '../../shared/domain';
import { assertHeaderLineFits, checkedMessageLine, formatPendingHeaderLine, formatWrittenHeaderLine, type SnapshotHeaderInput } from '../snapshot/format';

/**
 * The backup a redrive writes before it moves anything: a snapshot file in the export format
 * (`core/snapshot/format.ts`, one queue section, `selection: "ids"`) holding every message the run
 * moves (or tries to), so `queuescope reinject` can put them back. Messages are stored as the
 * adapter read them, which keeps their bytes: bodies and values that are not UTF-8 as base64, a
 * Redis stream entry's exact field names in `properties.streamFields` (see `streamEntryMessage`).
 *
 * Unlike the export writer it writes under the final name from the start and fsyncs after every
 * batch ({@link append}): the engine calls it in `MoveHooks.beforeMove`, so when the process dies
 * at any point, every message that may have left the DLQ is already on disk. The file is created
 * exclusively (`wx`): an existing file is never overwritten.
 *
 * Its header carries the same completeness record as an export's (`written`, see
 * `core/snapshot/format.ts`): written first as `"written":null` with room, and overwritten in place by
 * {@link close} with `{ messages, section: 0, sections: 1 }`. A backup whose run was killed (no
 * `close`) keeps `null`, which readers report as not finished; a finished backup cut at a line
 * boundary later (a truncated copy) reads as cut.
 */
export class RedriveBackup {
  private messageCount = 0;
  private closed = false;
  /** Bytes (UTF-8) of the header line as first written, which `close` overwrites at offset 0. */
  private headerBytes = 0;

  private constructor(
    private fh: FileHandle | null,
    /** Path of the backup file. */
    readonly path: string,
    private readonly header: SnapshotHeaderInput,
  ) {}

  /**
   * Creates the file (and its folder, mode 0700) and writes the section header.
   * @throws QueuescopeError `INVALID_INPUT` when the file exists or the path is a folder;
   *   `PERMISSION_DENIED`; `INTERNAL` for other write errors (naming the path).
   */
  static async create(path: string, header: SnapshotHeaderInput): Promise<RedriveBackup> {
    const line = formatPendingHeaderLine(header);
    assertHeaderLineFits(line);
    let fh: FileHandle;
    try {
      await mkdir(dirname(path), { recursive: true, mode: 0o700 });
      fh = await open(path, 'wx', 0o600);
    } catch (e) {
      throw backupError(e, path);
    }
    const b = new RedriveBackup(fh, path, header);
    await b.write(line);
    b.headerBytes = Buffer.byteLength(line);
    return b;
  }

  /** Messages written so far. */
  get messages(): number {
    return this.messageCount;
  }

  /**
   * Appends messages and fsyncs once. Resolves only when they are on disk. Each line is checked
   * first: the movers leave a message whose line a reader would reject in the DLQ
   * (`snapshotLineProblem`), so one reaching here is a bug and nothing of the batch is written.
   * @throws QueuescopeError when writing or syncing fails (the caller must then not move them);
   *   `INVALID_INPUT` with `details.reason` `SNAPSHOT_LINE_TOO_LONG` for a line longer than
   *   `MAX_SNAPSHOT_LINE_BYTES` (nothing written).
   */
  async append(messages: readonly QueueMessage[]): Promise<void> {
    if (messages.length === 0) return;
    // One buffer per line: a batch of large bodies joined into one string could pass V8's string limit.
    await this.write(messages.map((m) => Buffer.from(checkedMessageLine(m), 'utf8')));
    this.messageCount += messages.length;
  }

  private async write(parts: string | readonly Buffer[]): Promise<void> {
    const fh = this.fh;
    if (fh === null || this.closed) throw new QueuescopeError('INTERNAL', `The redrive backup ${this.path} is already closed.`);
    try {
      for (const data of typeof parts === 'string' ? [Buffer.from(parts, 'utf8')] : parts) {
        let off = 0;
        while (off < data.length) {
          const { bytesWritten } = await fh.write(data, off, data.length - off);
          off += bytesWritten;
        }
      }
      await fh.sync();
    } catch (e) {
      throw backupError(e, this.path);
    }
  }

  /**
   * Records the message count in the header (in place, fsynced) and closes the file. With
   * `removeIfEmpty`, a backup holding no message is deleted and null is returned (nothing was moved,
   * so there is nothing to restore). Never throws: when the count cannot be written the header keeps
   * `"written":null` (read as not finished, which errs on the side of caution).
   */
  async close(options: { removeIfEmpty?: boolean } = {}): Promise<string | null> {
    if (this.closed) return this.messageCount === 0 && options.removeIfEmpty === true ? null : this.path;
    this.closed = true;
    const fh = this.fh;
    this.fh = null;
    if (fh !== null && !(this.messageCount === 0 && options.removeIfEmpty === true)) {
      try {
        const data = Buffer.from(formatWrittenHeaderLine(this.header, { messages: this.messageCount, section: 0, sections: 1 }, this.headerBytes), 'utf8');
        for (let off = 0; off < data.length; ) off += (await fh.write(data, off, data.length - off, off)).bytesWritten;
        await fh.sync();
      } catch {
        /* the header keeps "written":null: the backup reads as not finished */
      }
    }
    await fh?.close().catch(() => undefined);
    if (this.messageCount === 0 && options.removeIfEmpty === true) {
      await unlink(this.path).catch(() => undefined);
      return null;
    }
    return this.path;
  }

  /** Closes and deletes the file whatever it holds (a pre-pass backup that is superseded). Never throws. */
  async discard(): Promise<void> {
    this.messageCount = 0;
    await this.close({ removeIfEmpty: true });
    await unlink(this.path).catch(() => undefined);
  }
}

/**
 * The default backup path
: `<configDir>/backups/redrive-<queue name>-<ISO time>.jsonl`, with
 * characters outside `[A-Za-z0-9._-]` in the queue name replaced by `_`.
 */
export function defaultBackupPath(configDir: string, queueName: string, now: number, kind = 'redrive'): string {
  const safe = queueName.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80) || 'queue';
  const ts = new Date(now).toISOString().replace(/[:.]/g, '-');
  return join(configDir, 'backups', `${kind}-${safe}-${ts}.jsonl`);
}

/** True when `path` exists. */
export async function pathExists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

function backupError(e: unknown, path: string): QueuescopeError {
  if (e instanceof QueuescopeError) return e;
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (code === 'EEXIST') return new QueuescopeError('INVALID_INPUT', `The backup file ${path} already exists; choose another name (backups are never overwritten).`, { path }, { cause: e });
  if (code === 'EISDIR') return new QueuescopeError('INVALID_INPUT', `The backup path ${path} is a folder.`, { path }, { cause: e });
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return new QueuescopeError('PERMISSION_DENIED', `No permission to write the redrive backup ${path}.`, { path }, { cause: e });
  if (code === 'ENOSPC') return new QueuescopeError('INTERNAL', `The disk is full while writing the redrive backup ${path}; nothing more was moved.`, { path }, { cause: e });
  return new QueuescopeError('INTERNAL', `Writing the redrive backup ${path} failed: ${e instanceof Error ? e.message : String(e)}`, { path }, { cause: e });
}
