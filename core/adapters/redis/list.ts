import { hash } from 'node:crypto';
import { QueuescopeError, type PeekOptions, type PeekPage, type QueueMessage, type QueueSummary } from '../../../shared/domain';
import { toMessageBody } from './body';
import { decodeCursor, encodeCursor } from './cursor';
import { normalisePeek, notFound, redisCapabilities, throwIfAborted, type RedisContext } from './context';
import { formatQueueId } from './ids';
import { looksLikeDeadLetterName } from './naming';

type ExecResult = [Error | null, unknown][];

const ORDER_NOTE =
  'Index 0 is the left end (LPOP side). Producers that LPUSH and consumers that (B)RPOP — Sidekiq, Celery/kombu, Resque — keep the oldest message at the right end: peek "newest" to read from there.';
const CURSOR_NOTE =
  'Pages use index cursors that also carry the content hashes of the last entries read: when the list moves between pages (push/pop), the next page re-aligns on them, and when it cannot (consumed, or moved too far) the read says so.';

function checkListType(typeRes: [Error | null, unknown] | undefined, queueId: string, key: string): void {
  if (typeRes?.[0]) throw typeRes[0];
  const type = String(typeRes?.[1]);
  if (type === 'none') throw notFound(queueId, `the list "${key}" does not exist (any more; Redis removes a list when its last entry is popped, so an emptied list no longer exists)`);
  if (type !== 'list') throw notFound(queueId, `the key "${key}" is now a ${type}, not a list`);
}

function results(r: ExecResult | null): ExecResult {
  if (r === null) throw new QueuescopeError('BROKER_ERROR', 'A Redis transaction was aborted.');
  return r;
}

/**
 * Summary of the list at `key`: depth = LLEN (https://redis.io/docs/latest/commands/llen/).
 * @throws QueuescopeError `QUEUE_NOT_FOUND` when the key is missing or not a list.
 */
export async function listSummary(ctx: RedisContext, key: string, signal?: AbortSignal): Promise<QueueSummary> {
  const client = await ctx.client(signal);
  const id = formatQueueId({ kind: 'list', key });
  const [typeRes, lenRes] = results(await client.multi().type(key).llen(key).exec());
  checkListType(typeRes, id, key);
  if (lenRes?.[0]) throw lenRes[0];
  const length = Number(lenRes?.[1] ?? 0);
  return {
    id,
    name: key,
    broker: 'redis',
    kind: 'redis-list',
    depth: length,
    inFlight: null,
    delayed: null,
    consumers: null,
    counts: { length },
    deadLetterTargets: [],
    deadLetterSources: [],
    isDeadLetterQueue: looksLikeDeadLetterName(key),
    capabilities: redisCapabilities([]),
    config: { key, length, order: ORDER_NOTE, paging: CURSOR_NOTE },
  };
}

/**
 * Content hash of a list entry: the first 8 hex digits of the SHA-1 of its bytes (as in
 * {@link listEntryId}). One-shot `crypto.hash` (Node ≥ 20.12): every entry read is hashed, and it
 * costs about half of a `createHash` object per ~1 KiB entry (same digest).
 */
function entryHash(raw: Buffer): string {
  return hash('sha1', raw, 'hex').slice(0, 8);
}

/**
 * The id of a list entry: its index plus the first 8 hex digits of the SHA-1 of its bytes,
 * `#7~1a2b3c4d`. Lists have no element ids and indexes shift when consumers pop or push: an id that
 * was only the index (`#7`) could pick ANOTHER entry for a redrive `--ids` after a pop (a fresh-user
 * pass moved the wrong message that way). With the content hash, a shifted or replaced entry no
 * longer matches the id (it is reported not found) instead of standing in for it.
 */
export function listEntryId(index: number, raw: Buffer): string {
  return `#${index}~${entryHash(raw)}`;
}

/** Content hashes of the last entries returned that a list cursor carries (the anchor is the last). */
const ANCHOR_ENTRIES = 8;
/** {@link ANCHOR_ENTRIES}, for readers that build a list cursor themselves (the redrive's list source, after a commit). */
export const LIST_ANCHOR_ENTRIES = ANCHOR_ENTRIES;

/**
 * How far (in entries, either way) a list may have moved between two pages for {@link peekList}
 * to find the previous page's last entries again: twice the page, at least 100, at most 1000.
 */
export function listRealignWindow(limit: number): number {
  return Math.min(1000, Math.max(100, 2 * limit));
}

/**
 * Bytes the re-aligning LRANGE may bring back (about twice the window, whole entries): with large
 * entries the window shrinks (at least 10 either way), so a list of 1 MiB messages does not pull
 * gigabytes into memory to re-align.
 */
const REALIGN_BYTES = 64 * 1024 * 1024;

interface RankRead {
  /** LLEN at the read. */
  length: number;
  /** Entries of ranks `from`.. (rank 0 = the end read from), in read order. */
  items: Buffer[];
  /** The entry at rank 0, null when the list is empty. */
  head: Buffer | null;
}

/**
 * Reads ranks `from`..`to` (inclusive, counted from the end read from: the left for `oldest`, the
 * right for `newest`), LLEN and the rank-0 entry in one MULTI, so the three agree.
 */
async function readRanks(ctx: Pick<RedisContext, 'client'>, key: string, queueId: string, direction: 'oldest' | 'newest', from: number, to: number, signal?: AbortSignal): Promise<RankRead> {
  throwIfAborted(signal);
  const client = await ctx.client(signal);
  const m = client.multi().type(key).llen(key);
  if (direction === 'oldest') m.lindexBuffer(key, 0).lrangeBuffer(key, from, to);
  else m.lindexBuffer(key, -1).lrangeBuffer(key, -(to + 1), -(from + 1));
  const [typeRes, lenRes, headRes, rangeRes] = results(await m.exec());
  checkListType(typeRes, queueId, key);
  for (const r of [lenRes, headRes, rangeRes]) if (r?.[0]) throw r[0];
  const items = (rangeRes?.[1] ?? []) as Buffer[];
  return { length: Number(lenRes?.[1] ?? 0), items: direction === 'newest' ? items.reverse() : items, head: (headRes?.[1] ?? null) as Buffer | null };
}

/**
 * Peeks a list with LRANGE (read-only, https://redis.io/docs/latest/commands/lrange/), as raw
 * bytes (binary elements come back base64). `oldest` reads from index 0 (left), `newest` from
 * the right end. Message ids are `#<index from the left>~<content hash>` at the time of the read
 * ({@link listEntryId}); `position` counts the messages returned so far across pages.
 *
 * Lists have no stable element ids, and a push or pop at the end read from shifts every index, so
 * an index cursor alone would skip or repeat entries. The cursor therefore also carries the content
 * hashes of the last {@link ANCHOR_ENTRIES} entries returned, LLEN and the hash of the entry at the
 * end read from. The next page checks them in the same MULTI as its LRANGE; when the end read from
 * changed or those entries are not where they were, it looks for them within
 * {@link listRealignWindow} positions either way (fewer for large entries, see `REALIGN_BYTES`;
 * one more LRANGE) and:
 * - found at exactly one place: continues right after them (`moved.realigned: true` when they
 *   moved), so no entry still in the list is skipped or read twice;
 * - found at several places (identical contents): continues after the first one, so nothing is
 *   skipped but up to their spread may be read twice (`moved.realigned: false`);
 * - not found (consumed, or moved farther than the window): continues from the end read from when
 *   the window reached it, else at the old offset or before it, and says an unknown number of
 *   entries may have been skipped or read twice (`moved.realigned: false`, `uncertain: null`).
 * Entries popped at the far end before they were reached are gone, not skipped: they are simply not
 * read (a reader compares what it read with the first page's `total`).
 * @throws QueuescopeError `QUEUE_NOT_FOUND`, `INVALID_INPUT` (cursor, options), `CANCELLED`.
 */
export async function peekList(ctx: RedisContext, key: string, options: PeekOptions, signal?: AbortSignal): Promise<PeekPage> {
  return (await readListPage(ctx, key, options, signal)).page;
}

/** A page of a list as {@link readListPage} reads it: the peek page plus what a reader that changes the list needs. */
export interface ListPageRead {
  /** The page exactly as {@link peekList} returns it. */
  page: PeekPage;
  /** The raw bytes of the page's entries, in page order (bodies may be cut at `maxBodyBytes`; these never are). */
  raw: Buffer[];
  /** Content hashes of `raw` (as in the entry ids, {@link listEntryId}). */
  hashes: string[];
  /** Rank (from the end read from) of the page's first entry when it was read: where reading continued, re-aligned or not. */
  start: number;
  /**
   * Content hashes of the anchor entries still valid just before `start` (oldest first, at most
   * the cursor's): empty when there was no cursor or the list could not be re-aligned.
   */
  anchorBefore: string[];
  /** Content hash of the entry at the end read from (rank 0) when the page was read; null when the list was empty. */
  head: string | null;
}

/**
 * Reads one page of a list exactly as {@link peekList} does (same cursor, re-alignment and
 * `moved` report) and also returns the raw entries and where the page starts, for readers that
 * act on the entries read (the redrive's list source, which moves them with a script that checks
 * their bytes at their index). `ctx` only needs `client`: the redrive reads on its own connection.
 * @throws QueuescopeError as {@link peekList}.
 */
export async function readListPage(ctx: Pick<RedisContext, 'client'>, key: string, options: PeekOptions, signal?: AbortSignal): Promise<ListPageRead> {
  const { limit, direction, maxBodyBytes } = normalisePeek(options);
  const queueId = formatQueueId({ kind: 'list', key });
  const state = options.state ?? 'list';
  if (state !== 'list' && state !== 'all') throw new QueuescopeError('INVALID_INPUT', `A Redis list has no states to peek; got state "${state.slice(0, 100)}".`);
  const cursor = options.cursor ? decodeCursor(options.cursor, { queueId, state, direction }) : null;
  if (cursor && cursor.o === undefined) throw new QueuescopeError('INVALID_INPUT', 'The peek cursor is not a list cursor.');
  const offset = cursor?.o ?? 0;
  const returned = cursor?.n ?? 0;
  // The anchor entries sat at ranks offset-k .. offset-1 when the previous page was read.
  const anchor = cursor?.h ? cursor.h.slice(cursor.h.length - Math.min(cursor.h.length, offset)) : [];
  const k = anchor.length;
  const end = direction === 'oldest' ? 'left end' : 'right end';

  const first = await readRanks(ctx, key, queueId, direction, offset - k, offset + limit, signal);
  let { length, head } = first;
  let start = offset;
  let items = first.items.slice(k);
  let moved: PeekPage['moved'];
  /** Anchor entries still valid just before `start` (0 when the list could not be re-aligned). */
  let kept = k;
  const inPlace = first.items.length >= k && anchor.every((h, i) => entryHash(first.items[i] as Buffer) === h);
  const headSame = cursor?.f === undefined || (head !== null && entryHash(head) === cursor.f);
  if (k > 0 && !(inPlace && headSame)) {
    let sampled = 0;
    for (const b of first.items) sampled += b.length;
    const perEntry = Math.max(1, first.items.length > 0 ? sampled / first.items.length : 1);
    const window = Math.max(10, Math.min(listRealignWindow(limit), Math.floor(REALIGN_BYTES / perEntry / 2)));
    const lo = Math.max(0, offset - k - window);
    const wide = await readRanks(ctx, key, queueId, direction, lo, offset + window + limit, signal);
    ({ length, head } = wide);
    const hashes = wide.items.map(entryHash);
    // Shifts d at which the anchor entries sit at ranks offset-k+d .. offset-1+d; ranks below 0
    // were popped with everything before them, so only the surviving suffix is compared.
    const shifts: number[] = [];
    for (let d = -window; d <= window; d++) {
      const at = offset - 1 + d;
      if (at < 0 || at - lo >= hashes.length) continue;
      let ok = true;
      for (let j = 0; j < k && at - j >= 0; j++) {
        if (hashes[at - j - lo] !== anchor[k - 1 - j]) {
          ok = false;
          break;
        }
      }
      if (ok) shifts.push(d);
    }
    const prevLength = cursor?.l ?? length;
    const last = `…~${anchor[k - 1] ?? ''}`;
    if (shifts.length > 0) {
      // The first place: any other one is later, so choosing it can repeat entries but never skip one.
      const d = shifts[0] as number;
      start = offset + d;
      items = wide.items.slice(start - lo, start - lo + limit + 1);
      kept = Math.min(k, start);
      const spread = (shifts[shifts.length - 1] as number) - d;
      if (shifts.length > 1) {
        moved = {
          realigned: false,
          uncertain: spread,
          note: `The list ${key} changed between two pages, so up to ${String(spread)} entries may have been read twice: the last entries read (${last}) match ${String(shifts.length)} places up to ${String(spread)} positions apart (identical contents; length ${String(prevLength)} → ${String(length)}), and reading continued after the first.`,
        };
      } else if (d !== 0) {
        moved = {
          realigned: true,
          uncertain: 0,
          note: `The list ${key} moved by ${String(Math.abs(d))} position${Math.abs(d) === 1 ? '' : 's'} between two pages (entries ${d > 0 ? 'pushed onto' : 'popped from'} its ${end}); reading re-aligned on the last entry read (${last}), so none was skipped or read twice.`,
        };
      }
    } else {
      // Not within the window: consumed, or moved farther. Prefer reading something twice to skipping it.
      start = lo === 0 ? 0 : Math.max(0, Math.min(offset, offset + length - prevLength));
      kept = 0;
      const again = await readRanks(ctx, key, queueId, direction, start, start + limit, signal);
      ({ length, head, items } = again);
      moved = {
        realigned: false,
        uncertain: null,
        note: `The list ${key} changed between two pages, so an unknown number of entries may have been skipped or read twice: the last entry read (${last}) is no longer within ${String(window)} positions of where it was (consumed, or more than ${String(window)} entries pushed or popped at its ${end}; length ${String(prevLength)} → ${String(length)}), and reading continued ${start === 0 ? `from its ${end}` : `at position ${String(start)} from its ${end}`}.`,
      };
    }
  }

  const hasMore = items.length > limit;
  const page = items.slice(0, limit);
  const pageHashes = page.map(entryHash);
  const messages: QueueMessage[] = page.map((buf, i) => {
    const rank = start + i;
    const index = direction === 'oldest' ? rank : length - 1 - rank;
    return {
      id: `#${String(index)}~${pageHashes[i] ?? entryHash(buf)}`,
      queueId,
      queueName: key,
      position: returned + i,
      body: toMessageBody(buf, maxBodyBytes),
      headers: {},
      properties: { index },
      meta: {},
    };
  });
  const next = start + page.length;
  const carried = [...anchor.slice(k - kept), ...pageHashes];
  const h = carried.slice(carried.length - Math.min(ANCHOR_ENTRIES, next, carried.length));
  const headHash = head !== null ? entryHash(head) : null;
  return {
    page: {
      messages,
      nextCursor:
        hasMore && h.length > 0
          ? encodeCursor({ v: 1, q: queueId, s: state, d: direction, n: returned + page.length, o: next, h, l: length, ...(headHash !== null ? { f: headHash } : {}) })
          : null,
      total: length,
      sideEffects: [],
      ...(moved !== undefined ? { moved } : {}),
    },
    raw: page,
    hashes: pageHashes,
    start,
    anchorBefore: anchor.slice(k - kept),
    head: headHash,
  };
}
