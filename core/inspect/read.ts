import { QueuescopeError, type PeekPage, type QueueMessage, type QueueSummary } from '../../shared/domain';
import type { BrokerAdapter } from '../adapters/types';
import { assertPeekAllowed } from '../services/export';
import { PageMoves } from '../services/page-moves';
import { MAX_SNAPSHOT_LINE_BYTES } from '../snapshot/format';

/**
 * Why a peek of a queue that cannot be paged (RabbitMQ classic/quorum, SQS) returned fewer
 * messages than its window while the queue holds more: they are not deliverable to it right now.
 */
export const HELD_BACK = 'in flight with a consumer or another reader, delayed, or on an SQS FIFO queue behind an earlier message of their message group';

/**
 * Messages per peek page while inspecting. 256, not the 1000 a peek may return: a page stays
 * alive while it is analysed (~25 KB allocated per message), and with 1000-message pages (plus the
 * Redis adapter's read-ahead page) the pages outlived young-generation collections, so V8 copied
 * and promoted nearly every body and began allocating the adapters' message objects in the old
 * generation, where they kept their bodies alive until a full collection (bench, Redis list:
 * 89 -> 29 MB promoted per 100k messages). One snapshot checkpoint per page
 * (`SNAPSHOT_CHECKPOINT_EVERY` = 256), so a snapshot peek starts at a checkpoint and skips no lines.
 */
export const INSPECT_PAGE_SIZE = 256;
/**
 * Body bytes aimed at per page of a pageable queue: after a page whose bodies averaged more than
 * `INSPECT_PAGE_BYTES / pageSize`, the next page asks for fewer messages (at least 10), so large
 * bodies do not hold up to `pageSize` × 1 MiB in memory at once.
 */
export const INSPECT_PAGE_BYTES = 16 * 1024 * 1024;
const MIN_ADAPTIVE_PAGE = 10;
/**
 * Default body read limit: bodies up to this many bytes are read whole for analysis (larger ones
 * are analysed as cut — payload verdict `review`, "the body was cut at the read limit" — while the
 * size check still uses the reported size). 1 MiB + 1 KiB, so a 1 MiB SQS body fits. Raise it per
 * inspection with {@link ReadQueueOptions.maxBodyBytes} (`inspect --max-body-bytes`).
 */
export const INSPECT_MAX_BODY_BYTES = 1024 * 1024 + 1024;
/**
 * Largest {@link ReadQueueOptions.maxBodyBytes} accepted: 256 MiB (above RabbitMQ 3.x's 128 MiB
 * default `max_message_size`; a snapshot line holds at most 256 MiB, `MAX_SNAPSHOT_LINE_BYTES`). Each page still aims at
 * {@link INSPECT_PAGE_BYTES}, so memory grows with one body, not with a page of them.
 */
export const MAX_INSPECT_BODY_BYTES = 256 * 1024 * 1024;
/**
 * Default body read limit for a snapshot file (the adapter `broker` `snapshot`): its longest line
 * (256 MiB), i.e. every body whole. The snapshot adapter parses each line whole anyway, then cuts
 * the body to the limit asked for; with the broker default a 3 MB body exported whole
 * (`truncated: false`) was analysed as cut.
 */
export const INSPECT_SNAPSHOT_MAX_BODY_BYTES = MAX_SNAPSHOT_LINE_BYTES;

/** Options of {@link readQueue}. */
export interface ReadQueueOptions {
  /** Peek state (e.g. BullMQ `failed`); absent = the adapter's default state. */
  state?: string;
  /** Most messages to read (default: all the queue/state holds, for pageable queues). */
  limit?: number;
  /** Required when the queue's peek may dead-letter messages (see `assertPeekAllowed`). */
  acceptSideEffects?: boolean;
  /** Most messages per peek (1–1000, default {@link INSPECT_PAGE_SIZE}); pages of large bodies get smaller (see {@link INSPECT_PAGE_BYTES}). */
  pageSize?: number;
  /**
   * Bodies up to this many bytes are read whole (1 – {@link MAX_INSPECT_BODY_BYTES}; default
   * {@link INSPECT_MAX_BODY_BYTES}, for a snapshot file {@link INSPECT_SNAPSHOT_MAX_BODY_BYTES});
   * longer ones come back cut (`body.truncated`). Above the default, the first page asks for as
   * many messages as {@link INSPECT_PAGE_BYTES} holds at this size (at least 10), then adapts.
   */
  maxBodyBytes?: number;
  signal?: AbortSignal;
  /** Called before each page (pause / cancel point; may throw `CANCELLED`). */
  checkpoint?: () => Promise<void>;
  /** Called once the expected number of messages is known. */
  onTotal?: (total: number | null) => void;
}

/** What {@link readQueue} read, besides the messages it handed to `onPage`. */
export interface ReadQueueResult {
  /** Messages handed to `onPage`. */
  read: number;
  /** The queue's message count in the state read when known (the first page's total, or the depth). */
  total: number | null;
  /** True when fewer messages were read than the queue (state) holds. */
  partial: boolean;
  /** Why it is partial, in words. */
  partialReason: string | null;
  /** Side effects the peeks caused (empty where reading is non-destructive). */
  sideEffects: string[];
  /**
   * How the read went when the queue moved between pages (`PeekPage.moved`, e.g. a Redis list
   * popped meanwhile): a note that pages were re-aligned, and when they could not be, that entries
   * may have been skipped or read twice (then `partial` is true and `partialReason` says so too).
   * Absent or empty = no move seen.
   */
  notes?: string[];
}

/**
 * Reads a queue page by page, the way `exportQueue` does, handing each page to `onPage`:
 * - first refuses with `PEEK_REFUSED` (reading nothing) when a peek may dead-letter messages and
 *   `acceptSideEffects` is not true — the same gate as peek and export;
 * - pageable queues (`capabilities.canPageFromCursor`): cursors from the oldest message, with the
 *   first page's total as a cutoff so messages arriving meanwhile are not swept in; a repeated
 *   cursor stops the loop (`partial` says so); a page whose entries moved since the previous one
 *   (`PeekPage.moved`: a Redis list pushed or popped meanwhile) adds to `notes`, and one the adapter
 *   could not re-align makes the read partial (entries may be skipped or read twice);
 * - other queues (RabbitMQ, SQS): one peek of up to `min(limit, maxPeekWindow)` messages, marked
 *   partial when that is less than the depth.
 *
 * @throws QueuescopeError `PEEK_REFUSED`, `QUEUE_NOT_FOUND`, `INVALID_INPUT` (bad state, a
 *   limit below 1, a `maxBodyBytes` that is not a whole number from 1 to
 *   {@link MAX_INSPECT_BODY_BYTES}), `CANCELLED`, or the adapter's connection errors.
 */
export async function readQueue(adapter: BrokerAdapter, queue: QueueSummary, options: ReadQueueOptions, onPage: (messages: QueueMessage[]) => void): Promise<ReadQueueResult> {
  assertPeekAllowed(queue, options.acceptSideEffects);
  const { signal } = options;
  const caps = queue.capabilities;
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  if (!(limit >= 1)) throw new QueuescopeError('INVALID_INPUT', `The message limit must be at least 1, got ${String(options.limit)}.`);
  const maxBodyBytes = options.maxBodyBytes ?? (adapter.broker === 'snapshot' ? INSPECT_SNAPSHOT_MAX_BODY_BYTES : INSPECT_MAX_BODY_BYTES);
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 1 || maxBodyBytes > MAX_INSPECT_BODY_BYTES) {
    throw new QueuescopeError('INVALID_INPUT', `The body read limit must be a whole number of bytes from 1 to ${String(MAX_INSPECT_BODY_BYTES)} (256 MiB), got ${String(options.maxBodyBytes)}.`);
  }
  const pageSize = Math.min(1000, Math.max(1, Math.floor(options.pageSize ?? INSPECT_PAGE_SIZE)));
  const base = {
    direction: 'oldest' as const,
    maxBodyBytes,
    ...(options.state !== undefined ? { state: options.state } : {}),
    ...(options.acceptSideEffects === true ? { acceptSideEffects: true } : {}),
  };
  const sideEffects = new Set<string>();
  const moves = new PageMoves(queue.name);
  let read = 0;
  /** Entries the adapter counted in `total` that hold no message (PeekPage.missing: e.g. orphan BullMQ job ids). */
  let missing = 0;
  const minPage = Math.min(MIN_ADAPTIVE_PAGE, pageSize);
  // Until a page shows how large the bodies are, a raised limit could fill a page with pageSize of them.
  let pageLimit = maxBodyBytes > INSPECT_MAX_BODY_BYTES ? Math.max(minPage, Math.min(pageSize, Math.floor(INSPECT_PAGE_BYTES / maxBodyBytes))) : pageSize;
  const take = (page: PeekPage, room: number): void => {
    for (const s of page.sideEffects) sideEffects.add(s);
    moves.add(page);
    missing += page.missing ?? 0;
    const msgs = page.messages.length > room ? page.messages.slice(0, room) : page.messages;
    read += msgs.length;
    if (msgs.length > 0) {
      let bytes = 0;
      for (const m of msgs) bytes += Math.min(m.body.sizeBytes, maxBodyBytes);
      const fit = Math.floor(INSPECT_PAGE_BYTES / Math.max(1, bytes / msgs.length));
      pageLimit = Math.max(minPage, Math.min(pageSize, fit));
      onPage(msgs);
    }
  };

  if (caps.canPageFromCursor) {
    let cursor: string | null = null;
    let cutoff: number | null = null;
    const seen = new Set<string>();
    let partialReason: string | null = null;
    for (;;) {
      await options.checkpoint?.();
      const room = Math.min(limit, cutoff ?? Number.POSITIVE_INFINITY) - read;
      if (room <= 0) break;
      const page = await adapter.peek(queue.id, { ...base, limit: Math.min(pageLimit, room), cursor }, signal);
      if (cursor === null) {
        cutoff = page.total;
        options.onTotal?.(cutoff === null ? (Number.isFinite(limit) ? limit : null) : Math.min(cutoff, limit));
      }
      take(page, room);
      if (page.nextCursor === null || page.messages.length === 0) break;
      if (seen.has(page.nextCursor)) {
        partialReason = `The adapter returned the cursor ${page.nextCursor.slice(0, 60)} twice; reading stopped there to avoid a loop.`;
        break;
      }
      seen.add(page.nextCursor);
      cursor = page.nextCursor;
    }
    // Entries without a message (a job id whose job is gone) are not messages left unread.
    const total = cutoff === null ? null : Math.max(read, cutoff - missing);
    if (partialReason === null && total !== null && read < total) {
      partialReason = read >= limit ? `Limited to the first ${String(limit)} of ${String(total)} messages.` : `Read ${String(read)} of ${String(total)} messages (the queue changed while it was read).`;
    }
    // A move the pages could not follow: entries may be missing or doubled even when the count adds up.
    const moved = moves.reason();
    if (moved !== null) partialReason = partialReason === null ? moved : `${moved} ${partialReason}`;
    const notes = moves.notes();
    return { read, total, partial: partialReason !== null, partialReason, sideEffects: [...sideEffects], ...(notes.length > 0 ? { notes } : {}) };
  }

  await options.checkpoint?.();
  const window = Math.max(1, Math.min(1000, caps.maxPeekWindow, limit));
  const page = await adapter.peek(queue.id, { ...base, limit: window }, signal);
  const depth = page.total ?? (options.state === undefined ? queue.depth : null);
  options.onTotal?.(Math.min(depth ?? page.messages.length, window));
  take(page, window);
  let partialReason: string | null = null;
  if (depth === null || read < depth || (read >= window && depth < read)) {
    partialReason =
      read >= limit && depth !== null && depth > read
        ? `Limited to the first ${String(limit)} of about ${String(depth)} messages.`
        : read < window && depth !== null && depth > read
          ? // Not the window's limit: the broker returned fewer than one peek can read.
            `${queue.name} cannot be paged (${queue.kind}), and one peek returned ${String(read)} of about ${String(depth)} messages, fewer than the ${String(window)} it can read: the broker held the others back (${HELD_BACK}).`
          : `${queue.name} cannot be paged (${queue.kind}): one peek reads at most ${String(Math.min(1000, caps.maxPeekWindow))} messages, and it returned ${String(read)} of ${depth === null || depth < read ? 'an unknown number of' : `about ${String(depth)}`} messages${read >= window ? '; there may be more' : ''}.`;
  }
  return { read, total: depth, partial: partialReason !== null, partialReason, sideEffects: [...sideEffects] };
}
