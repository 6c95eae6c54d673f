import { QueuescopeError, type PeekPage, type QueueMessage, type QueueSummary } from '../../shared/domain';
import type { BrokerAdapter } from '../adapters/types';
import { isSnapshotLineTooLong, MAX_SNAPSHOT_LINE_BYTES } from '../snapshot/format';
import { SnapshotWriter } from '../snapshot/writer';
import { PageMoves } from './page-moves';
import type { OperationContext } from './operations';

/** Default messages per peek page during an export. */
export const EXPORT_PAGE_SIZE = 500;
/** Bodies up to this size are exported whole by default (the largest `maxBodyBytes` the API allows: 8 MiB). */
export const EXPORT_MAX_BODY_BYTES = 8 * 1024 * 1024;
/**
 * Largest {@link ExportOptions.maxBodyBytes}: 128 MiB (RabbitMQ's largest message). Its line,
 * base64 included, stays under `MAX_SNAPSHOT_LINE_BYTES` (256 MiB).
 */
export const MAX_EXPORT_MAX_BODY_BYTES = 128 * 1024 * 1024;

/** At most this many messages are listed in {@link ExportResult.notWritten}. */
export const MAX_NOT_WRITTEN_LISTED = 100;
/** Chosen ids (`messageIds`) not found that the result lists (`notFoundIds`) and its reason names. */
export const MAX_NOT_FOUND_LISTED = 20;

/** Options of {@link exportQueue}. */
export interface ExportOptions {
  /** Destination file (`.jsonl`, or `.jsonl.gz` to compress). Written via `<path>.partial` + rename. */
  path: string;
  /** Peek state to export (e.g. BullMQ `failed`); absent = the adapter's default state. */
  state?: string;
  /** Export only these message ids (those not found are counted in `notFound`). */
  messageIds?: readonly string[];
  /** Required when the queue's peek may dead-letter messages (`capabilities.peekMayDeadLetter !== false`). */
  acceptSideEffects?: boolean;
  /** Messages per peek page (1–1000, default 500). */
  pageSize?: number;
  /** `describeConnection(config)` for the header (no secrets). Default: the adapter's broker kind. */
  connection?: string;
  /** Replace an existing file (default false). The app passes true after its save dialog asked. */
  overwrite?: boolean;
  /**
   * Bodies up to this many bytes are written whole (1 – {@link MAX_EXPORT_MAX_BODY_BYTES}; default
   * {@link EXPORT_MAX_BODY_BYTES}, 8 MiB); a longer one is written cut (`body.truncated`) and
   * counted in {@link ExportResult.truncatedBodies}. A page holds up to `pageSize` × this in memory.
   */
  maxBodyBytes?: number;
}

/** What an export wrote. */
export interface ExportResult {
  path: string;
  /** Message lines written. */
  messages: number;
  /** File size in bytes. */
  bytes: number;
  /** True when the file is known not to hold every message asked for. */
  partial: boolean;
  /** Why it is partial, in words. */
  reason?: string;
  /** With `messageIds`: how many of them were not found. */
  notFound?: number;
  /** With `messageIds`: the first {@link MAX_NOT_FOUND_LISTED} of those not found, in the order given. */
  notFoundIds?: string[];
  /** Side effects the peeks caused on the broker (empty for non-destructive brokers). */
  sideEffects: string[];
  /**
   * How the export went when the queue moved between pages (`PeekPage.moved`: a Redis list pushed
   * or popped meanwhile): re-aligned, or — then `partial` is true and `reason` says so too — entries
   * may have been skipped or written twice. Absent = no move seen.
   */
  notes?: string[];
  /**
   * Messages read but not written because their line would be longer than
   * `MAX_SNAPSHOT_LINE_BYTES` (256 MiB), the longest a snapshot reader accepts: `{ id, reason }`,
   * at most {@link MAX_NOT_WRITTEN_LISTED} listed (`notWrittenCount` has them all). Such an export
   * is also `partial` with the reason. Absent = every message read was written.
   */
  notWritten?: { id: string; reason: string }[];
  /** How many messages were not written (see {@link notWritten}); absent when none. */
  notWrittenCount?: number;
  /**
   * How many messages were written with their body cut at the read limit (`maxBodyBytes`, see
   * `body.truncated` in the file): the file does not hold those bodies, and a re-inject refuses
   * them. Such an export is `partial` (the `reason` says so; the file's header is not marked for
   * this, its lines are). Absent when every body was written whole.
   */
  truncatedBodies?: number;
  /** Ids of the messages with a cut body, at most {@link MAX_NOT_WRITTEN_LISTED} (see {@link truncatedBodies}). */
  truncatedIds?: string[];
  /** The body read limit the export used, bytes (see {@link ExportOptions.maxBodyBytes}). */
  maxBodyBytes: number;
  /** Queue id and name exported. */
  queueId: string;
  queueName: string;
}

/** The part of an operation context an export uses (`checkpoint` optional for callers outside the OperationManager). */
export type ExportContext = Pick<OperationContext, 'signal' | 'report' | 'setTotal'> & Partial<Pick<OperationContext, 'checkpoint' | 'addError'>>;

/**
 * Refuses with `PEEK_REFUSED` when peeking `queue` may dead-letter messages (or might: `null`)
 * and the caller did not accept side effects. The message lists the declared side effects.
 */
export function assertPeekAllowed(queue: QueueSummary, acceptSideEffects: boolean | undefined): void {
  const caps = queue.capabilities;
  if (caps.peekMayDeadLetter === false || acceptSideEffects === true) return;
  const deadLetter = caps.peekSideEffects.filter((e) => e.kind === 'may-dead-letter');
  const effects = (deadLetter.length > 0 ? deadLetter : caps.peekSideEffects).map((e) => e.description).join(' ');
  throw new QueuescopeError(
    'PEEK_REFUSED',
    `Reading ${queue.name} ${caps.peekMayDeadLetter === null ? 'might' : 'can'} move messages to a dead-letter queue${effects ? `: ${effects}` : '.'} To read it anyway, accept the side effects (--accept-side-effects in the CLI; in the app, confirm them when it asks before reading).`,
    { queueId: queue.id, sideEffects: caps.peekSideEffects.map((e) => e.kind) },
  );
}

/**
 * Exports a queue (or one state of it, or chosen messages) into a snapshot file
 * (format: `core/snapshot/format.ts`), streaming page by page so memory stays bounded.
 *
 * - Pageable queues (`capabilities.canPageFromCursor`): follows cursors from the oldest message.
 *   The count the first page reports is a cutoff, so messages that arrive during the export are
 *   not swept in (BullMQ `retryJobs({ timestamp })` idea); a repeated cursor stops the loop. A
 *   page whose entries moved since the previous one (`PeekPage.moved`, a Redis list pushed or
 *   popped meanwhile) adds to `notes`; one the adapter could not re-align makes the result
 *   `partial` with the reason (entries may be missing from the file or written twice). A partial
 *   read also marks the file's header `partial` / `partialReason` (rewritten when it finishes).
 * - Non-pageable queues (RabbitMQ classic/quorum, SQS): one peek of up to `maxPeekWindow`
 *   (≤ 1000) messages; the result says `partial: true` with the reason when that is not all.
 * - With `messageIds`, only those messages are written (the scan stops once all are found).
 * - A body longer than `maxBodyBytes` (default 8 MiB) is written cut (`body.truncated`): counted
 *   in `truncatedBodies` (ids in `truncatedIds`), and the result is `partial` with the reason.
 * - A message whose line would be longer than `MAX_SNAPSHOT_LINE_BYTES` (no reader would accept
 *   it) is not written: it is listed in `notWritten` (and `ctx.addError`), and the result and the
 *   file's header are `partial` with the reason.
 *
 * Progress: `setTotal` (expected messages), `report({ processed, skipped })` after each page;
 * `checkpoint()` between pages (pause/cancel).
 *
 * @throws QueuescopeError `PEEK_REFUSED` (see {@link assertPeekAllowed}; nothing is read or
 *   written), `QUEUE_NOT_FOUND`, `INVALID_INPUT` (bad state, existing file), `CANCELLED`, or the
 *   adapter's connection errors. On any error the partial file is removed. `INVALID_INPUT` also
 *   for a `maxBodyBytes` that is not a whole number from 1 to {@link MAX_EXPORT_MAX_BODY_BYTES}.
 */
export async function exportQueue(adapter: BrokerAdapter, queueId: string, options: ExportOptions, ctx: ExportContext): Promise<ExportResult> {
  const { signal } = ctx;
  const maxBodyBytes = options.maxBodyBytes ?? EXPORT_MAX_BODY_BYTES;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 1 || maxBodyBytes > MAX_EXPORT_MAX_BODY_BYTES) {
    throw new QueuescopeError('INVALID_INPUT', `The body read limit (maxBodyBytes) must be a whole number of bytes from 1 to ${String(MAX_EXPORT_MAX_BODY_BYTES)} (128 MiB), got ${String(maxBodyBytes)}.`);
  }
  const pageSize = Math.min(1000, Math.max(1, Math.floor(options.pageSize ?? EXPORT_PAGE_SIZE)));
  const queue = await adapter.getQueue(queueId, signal);
  assertPeekAllowed(queue, options.acceptSideEffects);
  const caps = queue.capabilities;
  const wanted = options.messageIds === undefined ? null : new Set(options.messageIds);
  const exportedAt = Date.now();
  const base = {
    limit: pageSize,
    direction: 'oldest' as const,
    maxBodyBytes,
    ...(options.state !== undefined ? { state: options.state } : {}),
    ...(options.acceptSideEffects === true ? { acceptSideEffects: true } : {}),
  };
  const header = {
    exportedAt,
    source: { broker: queue.broker, connection: options.connection ?? adapter.broker, queue },
    ...(options.state !== undefined ? { state: options.state } : {}),
    selection: wanted === null ? ('all' as const) : ('ids' as const),
  };
  const sideEffects = new Set<string>();
  const moves = new PageMoves(queue.name);
  const found = new Set<string>();
  let written = 0;
  let scanned = 0;
  const notWritten: { id: string; reason: string }[] = [];
  let notWrittenCount = 0;
  const truncatedIds: string[] = [];
  let truncatedBodies = 0;

  const writer = await SnapshotWriter.create(options.path, { overwrite: options.overwrite === true }, signal);
  try {
    const writeSelected = async (messages: QueueMessage[]): Promise<void> => {
      for (const m of messages) {
        scanned++;
        if (wanted !== null) {
          if (!wanted.has(m.id) || found.has(m.id)) continue;
          found.add(m.id);
        }
        try {
          await writer.writeMessage(m, signal);
        } catch (e) {
          // A line no reader would accept: leave it out (the writer stays usable) and say so.
          if (!isSnapshotLineTooLong(e)) throw e;
          notWrittenCount++;
          if (notWritten.length < MAX_NOT_WRITTEN_LISTED) notWritten.push({ id: m.id, reason: e.message });
          ctx.addError?.(e);
          continue;
        }
        written++;
        if (m.body.truncated) {
          truncatedBodies++;
          if (truncatedIds.length < MAX_NOT_WRITTEN_LISTED) truncatedIds.push(m.id);
        }
      }
      ctx.report({ processed: written, skipped: scanned - written });
    };
    let partial = false;
    let reason: string | undefined;

    if (caps.canPageFromCursor) {
      await writer.writeHeader(header, signal);
      let cursor: string | null = null;
      let cutoff: number | null = null;
      /** Entries the adapter counted in `total` that hold no message (PeekPage.missing: e.g. orphan BullMQ job ids). */
      let missing = 0;
      const seen = new Set<string>();
      for (;;) {
        await ctx.checkpoint?.();
        const page: PeekPage = await adapter.peek(queue.id, { ...base, cursor }, signal);
        for (const s of page.sideEffects) sideEffects.add(s);
        moves.add(page);
        missing += page.missing ?? 0;
        if (cutoff === null) {
          cutoff = page.total;
          ctx.setTotal(wanted !== null ? wanted.size : cutoff);
        }
        const take = cutoff === null ? page.messages : page.messages.slice(0, Math.max(0, cutoff - scanned));
        await writeSelected(take);
        if (page.nextCursor === null || page.messages.length === 0) break;
        if (cutoff !== null && scanned >= cutoff) break;
        if (wanted !== null && found.size === wanted.size) break;
        if (seen.has(page.nextCursor)) {
          partial = true;
          reason = `The adapter returned the cursor ${page.nextCursor.slice(0, 60)} twice; the export stopped there to avoid a loop.`;
          break;
        }
        seen.add(page.nextCursor);
        cursor = page.nextCursor;
      }
      // Fewer than the first page counted: consumed or removed before the export reached them.
      if (!partial && wanted === null && cutoff !== null && scanned < cutoff - missing) {
        partial = true;
        reason = `Wrote ${String(scanned)} of the ${String(cutoff - missing)} messages ${queue.name} held when the export started (the queue changed while it was exported: the others were consumed or removed before they were read).`;
      }
    } else {
      await ctx.checkpoint?.();
      const window = Math.min(1000, Math.max(1, caps.maxPeekWindow));
      const page = await adapter.peek(queue.id, { ...base, limit: window }, signal);
      for (const s of page.sideEffects) sideEffects.add(s);
      const depth = page.total ?? (options.state === undefined ? queue.depth : null);
      ctx.setTotal(wanted !== null ? wanted.size : Math.min(depth ?? page.messages.length, window));
      // Partial when fewer than the known depth came back, when the depth is unknown, or when the
      // window was filled beyond a depth that is evidently stale (broker stats lag): more may follow.
      const got = page.messages.length;
      if (wanted === null && (depth === null || got < depth || (got >= window && depth < got))) {
        partial = true;
        reason =
          `${queue.name} cannot be paged (${queue.kind}): one peek reads at most ${window} messages, ` +
          `and it returned ${got} of ${depth === null || depth < got ? 'an unknown number of' : `about ${depth}`} messages` +
          `${got >= window ? '; there may be more' : ''}.`;
      }
      await writer.writeHeader({ ...header, ...(partial ? { partial: true, partialReason: reason } : {}) }, signal);
      await writeSelected(page.messages);
    }
    // A move the pages could not follow: lines may be missing or doubled even when the count adds up.
    const moved = moves.reason();
    if (moved !== null && wanted === null) {
      partial = true;
      reason = reason === undefined ? moved : `${moved} ${reason}`;
    }
    const notFoundIds = wanted === null ? [] : [...wanted].filter((id) => !found.has(id)).slice(0, MAX_NOT_FOUND_LISTED);
    if (wanted !== null && found.size < wanted.size) {
      partial = true;
      const missing = wanted.size - found.size;
      const listed = notFoundIds.map((id) => id.slice(0, 80)).join(', ') + (missing > notFoundIds.length ? `, and ${String(missing - notFoundIds.length)} more` : '');
      const where = `consumed, moved, or beyond the ${caps.canPageFromCursor ? 'queue' : 'peek window'}`;
      reason =
        wanted.size === 1
          ? `The chosen message ${listed} was not found (${where}).`
          : `${missing} of the ${wanted.size} chosen messages ${missing === 1 ? 'was' : 'were'} not found (${where}): ${listed}.`;
    }
    if (notWrittenCount > 0) {
      partial = true;
      const left = `${String(notWrittenCount)} message${notWrittenCount === 1 ? ' was' : 's were'} not written: ${notWrittenCount === 1 ? 'its line' : 'their lines'} would be longer than ${String(MAX_SNAPSHOT_LINE_BYTES)} bytes, the longest line a snapshot reader accepts (${notWritten
        .slice(0, 5)
        .map((n) => n.id.slice(0, 80))
        .join(', ')}${notWrittenCount > 5 ? ', …' : ''}).`;
      reason = reason === undefined ? left : `${reason} ${left}`;
    }
    // The header went out before the messages: mark it now, so the file itself says it is partial.
    if (partial && (notWrittenCount > 0 || (caps.canPageFromCursor && wanted === null)) && reason !== undefined) writer.amendFirstHeader({ ...header, partial: true, partialReason: reason });
    const done = await writer.finish(signal);
    // Cut bodies: every message is in the file, but not whole (its line says body.truncated), so
    // the header is not marked; the result is partial, as the file is no backup of those bodies.
    if (truncatedBodies > 0) {
      partial = true;
      const cut = truncatedBodiesReason(truncatedBodies, truncatedIds, maxBodyBytes);
      reason = reason === undefined ? cut : `${reason} ${cut}`;
    }
    return {
      path: done.path,
      messages: done.messages,
      bytes: done.bytes,
      partial,
      ...(reason !== undefined ? { reason } : {}),
      ...(wanted !== null ? { notFound: wanted.size - found.size, notFoundIds } : {}),
      sideEffects: [...sideEffects],
      ...(moves.notes().length > 0 ? { notes: moves.notes() } : {}),
      ...(notWrittenCount > 0 ? { notWritten, notWrittenCount } : {}),
      ...(truncatedBodies > 0 ? { truncatedBodies, truncatedIds } : {}),
      maxBodyBytes,
      queueId: queue.id,
      queueName: queue.name,
    };
  } catch (e) {
    await writer.abort();
    throw e;
  }
}

/**
 * The sentence saying that `count` bodies were written cut at `limit` bytes: the first five ids,
 * that the file holds only their first `limit` bytes (a re-inject refuses them), and how to export
 * them whole (`--max-body-bytes`, up to {@link MAX_EXPORT_MAX_BODY_BYTES}) when the limit is below it.
 */
export function truncatedBodiesReason(count: number, ids: readonly string[], limit: number): string {
  const shown = `${ids
    .slice(0, 5)
    .map((id) => id.slice(0, 80))
    .join(', ')}${count > 5 ? ', …' : ''}`;
  const raise = limit < MAX_EXPORT_MAX_BODY_BYTES ? ` To write ${count === 1 ? 'it' : 'them'} whole, export again from the CLI with a higher --max-body-bytes (up to ${String(MAX_EXPORT_MAX_BODY_BYTES)}, 128 MiB).` : '';
  return `${String(count)} message bod${count === 1 ? 'y was' : 'ies were'} longer than the ${String(limit)}-byte read limit and written cut (body.truncated): the file holds only the first ${String(limit)} bytes of ${count === 1 ? 'it' : 'each'}, and a re-inject refuses ${count === 1 ? 'it' : 'them'} (${shown}).${raise}`;
}
