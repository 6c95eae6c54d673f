import { open, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { gunzip as gunzipCb, gzip as gzipCb } from 'node:zlib';
import { QueuescopeError, type QueueMessage } from '../../shared/domain';
import { assertHeaderLineFits, checkedMessageLine, formatPendingHeaderLine, formatWrittenHeaderLine, type SnapshotHeaderInput } from './format';
import { throwIfAborted } from './lines';

const gzip = promisify(gzipCb) as (data: Buffer, options?: { level?: number }) => Promise<Buffer>;
const gunzip = promisify(gunzipCb);

/** Bytes buffered in memory before one write to disk. */
const FLUSH_BYTES = 256 * 1024;

/** What a finished snapshot file holds. */
export interface SnapshotWriteResult {
  /** Final path of the file. */
  path: string;
  /** Size of the file on disk in bytes (compressed size for `.gz`). */
  bytes: number;
  /** Message lines written, over all sections. */
  messages: number;
  /** Header lines written. */
  sections: number;
}

/** Options for {@link SnapshotWriter.create}. */
export interface SnapshotWriterOptions {
  /** Replace an existing file at `path` (default false: refuse with `INVALID_INPUT`). */
  overwrite?: boolean;
  /** Gzip the output. Default: true when `path` ends in `.gz`. */
  gzip?: boolean;
}

/**
 * Streaming snapshot writer (format: see `./format.ts`).
 *
 * Lines are buffered up to 256 KiB and written with an awaited `FileHandle.write`, so a caller
 * that awaits each `write*` call is held back while the disk is slower than the broker
 * (backpressure) and memory stays bounded. Everything goes to `<path>.partial`; `finish()`
 * fsyncs it, renames it to `<path>` and fsyncs the directory, so an export under the final name
 * was finished (a redrive backup is written otherwise: `core/redrive/backup.ts`). `abort()` (or any failed write) removes the partial file.
 *
 * Each header is written with `"written":null` and room after it, as a write of its own (for gzip,
 * a gzip member of its own, stored uncompressed so its length does not depend on the digits);
 * `finish()` overwrites it in place with `written: { messages, section, sections }` (format:
 * `./format.ts`), so a reader can tell a file cut at a line boundary from a complete one.
 *
 * Usage: `create` → `writeHeader` → `writeMessage`* → (`writeHeader` → `writeMessage`*)* → `finish`.
 */
export class SnapshotWriter {
  private buffered: string[] = [];
  private bufferedBytes = 0;
  private written = 0;
  private messageCount = 0;
  private sectionCount = 0;
  private closed = false;
  /** Bytes (UTF-8) of the first header line as written. */
  private firstHeaderBytes = 0;
  /** Bytes on disk of the first flush (one gzip member when compressing), which starts with the first header. */
  private firstFlushBytes: number | null = null;
  /** A replacement for the first header, written by `finish()` (see {@link amendFirstHeader}). */
  private amended: SnapshotHeaderInput | null = null;
  /** Bytes on disk so far (compressed for gzip). */
  private diskBytes = 0;
  /** Every header written: what it says, where its line (gzip: its member) sits on disk, its message lines. */
  private headers: { header: SnapshotHeaderInput; diskOffset: number; diskLength: number; rawLength: number; messages: number }[] = [];

  private constructor(
    private fh: FileHandle | null,
    /** Final path. */
    readonly path: string,
    /** Temporary path the data goes to until `finish()`. */
    readonly partialPath: string,
    private readonly compress: boolean,
  ) {}

  /**
   * Opens `<path>.partial` for writing (truncating a stale one from an earlier crash).
   * @throws QueuescopeError `INVALID_INPUT` when `path` exists and `overwrite` is not set, or its
   *   folder does not exist; `PERMISSION_DENIED` when it cannot be written; `CANCELLED`.
   */
  static async create(path: string, options: SnapshotWriterOptions = {}, signal?: AbortSignal): Promise<SnapshotWriter> {
    throwIfAborted(signal);
    if (options.overwrite !== true) {
      const exists = await stat(path).then(
        () => true,
        () => false,
      );
      if (exists) throw new QueuescopeError('INVALID_INPUT', `${path} already exists; choose another file name or allow overwriting.`, { path });
    }
    const partialPath = `${path}.partial`;
    let fh: FileHandle;
    try {
      fh = await open(partialPath, 'w');
    } catch (e) {
      throw writeError(e, path);
    }
    return new SnapshotWriter(fh, path, partialPath, options.gzip ?? /\.gz$/i.test(path));
  }

  /** Message lines written so far. */
  get messages(): number {
    return this.messageCount;
  }

  /** Bytes handed to the file so far plus bytes buffered (uncompressed). */
  get bytes(): number {
    return this.written + this.bufferedBytes;
  }

  /**
   * Starts a queue section. The header's `written` record is filled in by `finish()` (any `written`
   * in `header` is ignored).
   */
  async writeHeader(header: SnapshotHeaderInput, signal?: AbortSignal): Promise<void> {
    // The header goes out as a write (gzip member) of its own, so finish() can overwrite it in place.
    await this.flush();
    const line = formatPendingHeaderLine(header);
    assertHeaderLineFits(line);
    if (this.closed) throw new QueuescopeError('INTERNAL', 'SnapshotWriter: the writer is already finished or aborted.');
    throwIfAborted(signal);
    const diskOffset = this.diskBytes;
    this.buffered.push(line);
    this.bufferedBytes += Buffer.byteLength(line);
    await this.flush(this.compress ? 0 : undefined);
    const rawLength = Buffer.byteLength(line);
    if (this.sectionCount === 0) this.firstHeaderBytes = rawLength;
    this.headers.push({ header, diskOffset, diskLength: this.diskBytes - diskOffset, rawLength, messages: 0 });
    this.sectionCount++;
  }

  /**
   * Replaces the first section's header when the file is finished, e.g. to mark it `partial` once
   * a streamed export learns at the end that it missed messages (the header is written before the
   * messages). `finish()` then rewrites the file once (the first gzip member only is recompressed).
   * @throws QueuescopeError `INTERNAL` when no header was written yet.
   */
  amendFirstHeader(header: SnapshotHeaderInput): void {
    if (this.sectionCount === 0) throw new QueuescopeError('INTERNAL', 'SnapshotWriter: amendFirstHeader needs a header written first.');
    this.amended = header;
  }

  /**
   * Appends one message to the current section.
   * @throws QueuescopeError `INVALID_INPUT` with `details.reason` `SNAPSHOT_LINE_TOO_LONG` (see
   *   `isSnapshotLineTooLong`) when its line would be longer than `MAX_SNAPSHOT_LINE_BYTES`, the
   *   longest a reader accepts: nothing is written and the writer stays usable (the caller reports
   *   the message as not written); `INTERNAL` when no header was written yet.
   */
  async writeMessage(message: QueueMessage, signal?: AbortSignal): Promise<void> {
    if (this.sectionCount === 0) throw new QueuescopeError('INTERNAL', 'SnapshotWriter: writeHeader must be called before writeMessage.');
    await this.push(checkedMessageLine(message), signal);
    this.messageCount++;
    const current = this.headers[this.headers.length - 1];
    if (current !== undefined) current.messages++;
  }

  private async push(line: string, signal: AbortSignal | undefined): Promise<void> {
    if (this.closed) throw new QueuescopeError('INTERNAL', 'SnapshotWriter: the writer is already finished or aborted.');
    throwIfAborted(signal);
    this.buffered.push(line);
    this.bufferedBytes += Buffer.byteLength(line);
    if (this.bufferedBytes >= FLUSH_BYTES) await this.flush();
  }

  /** Writes what is buffered; `level`: the gzip level of this member (default zlib's). */
  private async flush(level?: number): Promise<void> {
    if (this.bufferedBytes === 0 || this.fh === null) return;
    const raw = Buffer.from(this.buffered.join(''), 'utf8');
    this.buffered = [];
    this.bufferedBytes = 0;
    // Each flush becomes one gzip member; gunzip reads concatenated members as one stream (RFC 1952 §2.2).
    const data = this.compress ? await gzip(raw, level === undefined ? {} : { level }) : raw;
    try {
      let off = 0;
      while (off < data.length) {
        const { bytesWritten } = await this.fh.write(data, off, data.length - off);
        off += bytesWritten;
      }
      this.written += raw.length;
      this.diskBytes += data.length;
      this.firstFlushBytes ??= data.length;
    } catch (e) {
      await this.abort();
      throw writeError(e, this.path);
    }
  }

  /**
   * Flushes, fsyncs, renames `<path>.partial` to `<path>` and fsyncs the folder.
   * @throws QueuescopeError `CANCELLED` (the partial file is removed), or a write error.
   */
  async finish(signal?: AbortSignal): Promise<SnapshotWriteResult> {
    if (signal?.aborted === true) {
      await this.abort();
      throwIfAborted(signal);
    }
    await this.flush();
    if (this.fh === null || this.closed) throw new QueuescopeError('INTERNAL', 'SnapshotWriter: the writer is already finished or aborted.');
    try {
      await this.writeCounts();
      if (this.amended !== null) await this.rewriteFirstHeader(formatWrittenHeaderLine(this.amended, this.record(0)));
      const fh = this.fh;
      await fh.sync();
      await fh.close();
      this.fh = null;
      await rename(this.partialPath, this.path);
    } catch (e) {
      await this.abort();
      throw writeError(e, this.path);
    }
    this.closed = true;
    await syncDir(dirname(this.path));
    const { size } = await stat(this.path);
    return { path: this.path, bytes: size, messages: this.messageCount, sections: this.sectionCount };
  }

  /** The `written` record of section `i`. */
  private record(i: number): { messages: number; section: number; sections: number } {
    return { messages: this.headers[i]?.messages ?? 0, section: i, sections: this.headers.length };
  }

  /**
   * Overwrites every header line (gzip: its member) in place with its `written` record, padded to
   * the length written first. The first header is left to {@link rewriteFirstHeader} when amended.
   */
  private async writeCounts(): Promise<void> {
    const fh = this.fh;
    if (fh === null) return;
    for (const [i, h] of this.headers.entries()) {
      if (i === 0 && this.amended !== null) continue;
      const raw = Buffer.from(formatWrittenHeaderLine(h.header, this.record(i), h.rawLength), 'utf8');
      // A stored (level 0) member's length depends only on the length of what it stores.
      const data = this.compress ? await gzip(raw, { level: 0 }) : raw;
      if (data.length !== h.diskLength) throw new QueuescopeError('INTERNAL', `SnapshotWriter: header ${String(i + 1)} with its counts is ${String(data.length)} bytes on disk, not ${String(h.diskLength)}.`);
      for (let off = 0; off < data.length; ) off += (await fh.write(data, off, data.length - off, h.diskOffset + off)).bytesWritten;
    }
  }

  /**
   * Writes `<path>.partial` again with `line` instead of the first header: the first flush (gzip
   * member) is rebuilt, the rest is copied byte for byte; the copy then replaces `<path>.partial`
   * and `this.fh` is a handle on it.
   */
  private async rewriteFirstHeader(line: string): Promise<void> {
    const fh = this.fh;
    const first = this.firstFlushBytes;
    if (fh === null || first === null) return;
    await fh.close();
    this.fh = null;
    const copyPath = `${this.partialPath}.amend`;
    const src = await open(this.partialPath, 'r');
    try {
      const dst = await open(copyPath, 'w');
      try {
        const head = Buffer.alloc(first);
        await src.read(head, 0, first, 0);
        const raw = this.compress ? await gunzip(head) : head;
        const rebuilt = Buffer.concat([Buffer.from(line, 'utf8'), raw.subarray(this.firstHeaderBytes)]);
        await writeAll(dst, this.compress ? await gzip(rebuilt) : rebuilt);
        const chunk = Buffer.alloc(1024 * 1024);
        for (let pos = first; ; ) {
          const { bytesRead } = await src.read(chunk, 0, chunk.length, pos);
          if (bytesRead === 0) break;
          await writeAll(dst, chunk.subarray(0, bytesRead));
          pos += bytesRead;
        }
        await dst.sync();
      } finally {
        await dst.close();
      }
    } catch (e) {
      await unlink(copyPath).catch(() => undefined);
      throw e;
    } finally {
      await src.close();
    }
    await rename(copyPath, this.partialPath);
    this.fh = await open(this.partialPath, 'r+');
  }

  /** Closes and deletes the partial file. Idempotent; never throws. */
  async abort(): Promise<void> {
    this.closed = true;
    this.buffered = [];
    this.bufferedBytes = 0;
    const fh = this.fh;
    this.fh = null;
    if (fh !== null) await fh.close().catch(() => undefined);
    await unlink(this.partialPath).catch(() => undefined);
  }
}

/** Writes all of `data` at the handle's position (a write may take fewer bytes than asked). */
async function writeAll(fh: FileHandle, data: Buffer): Promise<void> {
  for (let off = 0; off < data.length; ) off += (await fh.write(data, off, data.length - off)).bytesWritten;
}

/** fsync a directory so a rename survives a crash (POSIX); a no-op where directories cannot be opened (Windows). */
async function syncDir(dir: string): Promise<void> {
  let fh: FileHandle | null = null;
  try {
    fh = await open(dir, 'r');
    await fh.sync();
  } catch {
    /* not supported on this platform / file system */
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

function writeError(e: unknown, path: string): QueuescopeError {
  if (e instanceof QueuescopeError) return e;
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOENT') return new QueuescopeError('INVALID_INPUT', `Cannot write ${path}: its folder does not exist.`, { path }, { cause: e });
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return new QueuescopeError('PERMISSION_DENIED', `No permission to write ${path}.`, { path }, { cause: e });
  if (code === 'ENOSPC') return new QueuescopeError('INTERNAL', `The disk is full while writing ${path}; nothing was kept under that name.`, { path }, { cause: e });
  if (code === 'EISDIR') return new QueuescopeError('INVALID_INPUT', `${path} is a directory.`, { path }, { cause: e });
  return new QueuescopeError('INTERNAL', `Writing ${path} failed: ${e instanceof Error ? e.message : String(e)}`, { path }, { cause: e });
}
