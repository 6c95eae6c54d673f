import { basename } from 'node:path';
import type { QueueMessage } from '../../shared/domain';
import { missingHeaderError, parseSnapshotLine, snapshotLineError, toQueueMessage, type SnapshotHeaderLine } from './format';
import { fileError, isGzipFile, readRawLines, type LineStart } from './lines';

/** One validated item of a snapshot, in file order. */
export type SnapshotItem =
  | { type: 'header'; header: SnapshotHeaderLine; section: number; lineNo: number; offset: number }
  | { type: 'message'; message: QueueMessage; header: SnapshotHeaderLine; section: number; lineNo: number; offset: number };

/**
 * Streams a snapshot file (plain or gzip, detected by magic bytes), validating every line.
 * Bodies are not kept: memory is bounded by the longest line.
 *
 * `section` is the 0-based index of the header the item belongs to.
 *
 * @throws QueuescopeError `SNAPSHOT_INVALID` naming the line number and field of the first bad line;
 *   `INVALID_INPUT` when the file does not exist; `PERMISSION_DENIED`; `CANCELLED` when `signal` aborts.
 */
export async function* readSnapshot(path: string, signal?: AbortSignal): AsyncGenerator<SnapshotItem, void, undefined> {
  let gzip: boolean;
  try {
    gzip = await isGzipFile(path);
  } catch (e) {
    throw fileError(e, path);
  }
  const file = basename(path);
  let header: SnapshotHeaderLine | null = null;
  let section = -1;
  for await (const raw of readRawLines(path, { gzip, fileLabel: file }, signal)) {
    if (raw.bytes.length === 0) continue;
    const loc = { file, line: raw.lineNo };
    const line = parseSnapshotLine(raw.bytes.toString('utf8'), loc);
    if (line.type === 'queue') {
      header = line;
      section++;
      yield { type: 'header', header, section, lineNo: raw.lineNo, offset: raw.offset };
    } else {
      if (header === null) throw missingHeaderError(loc);
      yield { type: 'message', message: toQueueMessage(line), header, section, lineNo: raw.lineNo, offset: raw.offset };
    }
  }
}

/** A whole section held in memory. */
export interface SnapshotSection {
  header: SnapshotHeaderLine;
  messages: QueueMessage[];
}

/**
 * Reads a whole snapshot into memory. Meant for small files (tests, redrive backups of one
 * window); use {@link readSnapshot} or the snapshot adapter for large ones.
 * @throws like {@link readSnapshot}.
 */
export async function readSnapshotFile(path: string, signal?: AbortSignal): Promise<SnapshotSection[]> {
  const sections: SnapshotSection[] = [];
  for await (const item of readSnapshot(path, signal)) {
    if (item.type === 'header') sections.push({ header: item.header, messages: [] });
    else sections[item.section]?.messages.push(item.message);
  }
  return sections;
}

/**
 * Reads the first non-empty line and validates it as a header (the check "Test connection" does
 * for a snapshot). Reads at most up to the end of that line.
 * @throws QueuescopeError `SNAPSHOT_INVALID` (empty file, first line not a header), `INVALID_INPUT` (missing).
 */
export async function readFirstHeader(path: string, signal?: AbortSignal): Promise<{ header: SnapshotHeaderLine; gzip: boolean; start: LineStart }> {
  let gzip: boolean;
  try {
    gzip = await isGzipFile(path);
  } catch (e) {
    throw fileError(e, path);
  }
  const file = basename(path);
  for await (const raw of readRawLines(path, { gzip, fileLabel: file }, signal)) {
    if (raw.bytes.length === 0) continue;
    const loc = { file, line: raw.lineNo };
    const line = parseSnapshotLine(raw.bytes.toString('utf8'), loc);
    if (line.type !== 'queue') throw missingHeaderError(loc);
    return { header: line, gzip, start: { offset: raw.offset, lineNo: raw.lineNo } };
  }
  throw snapshotLineError({ file, line: 1 }, 'the file is empty: a snapshot starts with a "queue" header line.');
}
