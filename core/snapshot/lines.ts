import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';
import { QueuescopeError } from '../../shared/domain';
import { MAX_SNAPSHOT_LINE_BYTES } from './format';

/** One raw line of a snapshot file, without its `\n` (and without a trailing `\r`). */
export interface RawLine {
  /** The line's bytes. May share memory with the read buffer: decode it before the next iteration. */
  bytes: Buffer;
  /** Byte offset of the line's first byte in the (decompressed) file. */
  offset: number;
  /** 1-based line number. */
  lineNo: number;
}

/** Where to start reading: a byte offset known to be the start of line `lineNo`. */
export interface LineStart {
  offset: number;
  lineNo: number;
}

import { throwIfAborted } from '../lib/abort';

export { throwIfAborted };

/**
 * True when the file starts with the gzip magic bytes (1f 8b). Extension-independent, so a
 * renamed `.gz` still opens.
 * @throws node fs errors (ENOENT, EACCES…) — map them with {@link fileError}.
 */
export async function isGzipFile(path: string): Promise<boolean> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(2);
    const { bytesRead } = await fh.read(buf, 0, 2, 0);
    return bytesRead === 2 && buf[0] === 0x1f && buf[1] === 0x8b;
  } finally {
    await fh.close();
  }
}

/**
 * Maps a Node fs error on a snapshot file to a QueuescopeError: `INVALID_INPUT` (missing / not a file),
 * `PERMISSION_DENIED` (EACCES/EPERM), otherwise `INTERNAL`. Other errors pass through unchanged.
 */
export function fileError(e: unknown, path: string, what = 'Snapshot file'): unknown {
  if (e instanceof QueuescopeError) return e;
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOENT') return new QueuescopeError('INVALID_INPUT', `${what} not found: ${path}`, { path }, { cause: e });
  if (code === 'EISDIR') return new QueuescopeError('INVALID_INPUT', `${what} ${path} is a directory, not a file.`, { path }, { cause: e });
  if (code === 'EACCES' || code === 'EPERM') return new QueuescopeError('PERMISSION_DENIED', `No permission to read ${what.toLowerCase()} ${path}.`, { path }, { cause: e });
  if (code === 'Z_DATA_ERROR' || code === 'Z_BUF_ERROR') {
    return new QueuescopeError('SNAPSHOT_INVALID', `${what} ${path} is not a valid gzip file (${(e as Error).message}).`, { path }, { cause: e });
  }
  return e;
}

/**
 * Streams the lines of a (optionally gzip-compressed) file with their byte offsets, starting at
 * `from` (default: the beginning). Memory use is bounded by the read buffer plus the longest line.
 *
 * For gzip files offsets are positions in the decompressed data, and starting at an offset
 * decompresses (and discards) everything before it — O(offset), but still streaming.
 *
 * Empty lines are yielded too (callers skip them) so line numbers stay true.
 *
 * @throws QueuescopeError `SNAPSHOT_INVALID` for a line longer than {@link MAX_SNAPSHOT_LINE_BYTES},
 *   `CANCELLED` when `signal` aborts (checked per read chunk), and fs errors mapped by {@link fileError}.
 */
export async function* readRawLines(
  path: string,
  opts: { from?: LineStart; gzip?: boolean; fileLabel?: string } = {},
  signal?: AbortSignal,
): AsyncGenerator<RawLine, void, undefined> {
  const from = opts.from ?? { offset: 0, lineNo: 1 };
  const label = opts.fileLabel ?? path;
  throwIfAborted(signal);
  let stream: Readable | null = null;
  let source: Readable | null = null;
  let chunks: AsyncIterable<Buffer>;
  let skip = 0;
  if (opts.gzip === true) {
    source = createReadStream(path, { highWaterMark: READ_CHUNK_BYTES });
    const gunzip = createGunzip({ chunkSize: READ_CHUNK_BYTES });
    source.on('error', (e) => gunzip.destroy(e));
    stream = source.pipe(gunzip);
    chunks = stream as AsyncIterable<Buffer>;
    skip = from.offset;
  } else {
    chunks = fileChunks(path, from.offset);
  }
  let offset = from.offset; // absolute offset of the next unconsumed byte
  let lineNo = from.lineNo;
  let lineStart = offset;
  const pending: Buffer[] = [];
  let pendingBytes = 0;
  try {
    for await (const raw of chunks) {
      throwIfAborted(signal);
      let chunk = raw;
      if (skip > 0) {
        if (chunk.length <= skip) {
          skip -= chunk.length;
          continue;
        }
        chunk = chunk.subarray(skip);
        skip = 0;
      }
      let pos = 0;
      for (;;) {
        const nl = chunk.indexOf(10, pos);
        if (nl === -1) {
          if (pos < chunk.length) {
            pending.push(chunk.subarray(pos));
            pendingBytes += chunk.length - pos;
            if (pendingBytes > MAX_SNAPSHOT_LINE_BYTES) {
              throw new QueuescopeError('SNAPSHOT_INVALID', `Snapshot ${label} is not valid at line ${lineNo}: the line is longer than ${MAX_SNAPSHOT_LINE_BYTES} bytes.`, {
                file: label,
                line: lineNo,
              });
            }
          }
          offset += chunk.length - pos;
          break;
        }
        let bytes: Buffer;
        if (pending.length === 0) bytes = chunk.subarray(pos, nl);
        else {
          pending.push(chunk.subarray(pos, nl));
          bytes = Buffer.concat(pending);
          pending.length = 0;
          pendingBytes = 0;
        }
        offset += nl - pos + 1;
        if (bytes.length > 0 && bytes[bytes.length - 1] === 13) bytes = bytes.subarray(0, bytes.length - 1);
        yield { bytes, offset: lineStart, lineNo };
        lineNo++;
        lineStart = offset;
        pos = nl + 1;
      }
    }
    if (pending.length > 0) {
      let bytes = Buffer.concat(pending);
      if (bytes.length > 0 && bytes[bytes.length - 1] === 13) bytes = bytes.subarray(0, bytes.length - 1);
      yield { bytes, offset: lineStart, lineNo };
    }
  } catch (e) {
    throw fileError(e, path);
  } finally {
    stream?.destroy();
    source?.destroy();
  }
}

/** Bytes per read (plain files) or per decompressed chunk (gzip). */
const READ_CHUNK_BYTES = 256 * 1024;

/**
 * The bytes of a plain file from `start`, in chunks of up to {@link READ_CHUNK_BYTES}, each in a
 * buffer of its own (lines may keep pointing into a chunk after the next read). Plain reads on one
 * file handle instead of a ReadStream: a snapshot peek reads one page and stops, and stopping a
 * stream's iterator creates an AbortError with its stack trace every time; the stream machinery
 * also cost more per page than the reads (the inspect bench peeks 391 pages per 100k messages).
 * The next chunk is read while the caller works on this one (one read ahead), so the wait for the
 * thread pool overlaps with parsing. The handle is closed when the caller stops iterating.
 */
async function* fileChunks(path: string, start: number): AsyncGenerator<Buffer, void, undefined> {
  const fh = await open(path, 'r');
  const readAt = async (position: number): Promise<Buffer> => {
    const buf = Buffer.allocUnsafe(READ_CHUNK_BYTES);
    const { bytesRead } = await fh.read(buf, 0, READ_CHUNK_BYTES, position);
    return bytesRead === READ_CHUNK_BYTES ? buf : buf.subarray(0, bytesRead);
  };
  let ahead: Promise<Buffer> | null = null;
  try {
    let position = start;
    ahead = readAt(position);
    for (;;) {
      const chunk: Buffer = await ahead;
      ahead = null;
      if (chunk.length === 0) return;
      position += chunk.length;
      ahead = readAt(position);
      yield chunk;
    }
  } finally {
    // A read still in flight must end before its handle closes (its result is not needed).
    if (ahead !== null) await ahead.catch(() => undefined);
    await fh.close();
  }
}
