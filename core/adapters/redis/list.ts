import { createHash } from 'node:crypto';
import { QueuescopeError, type PeekOptions, type PeekPage, type QueueMessage, type QueueSummary } from '../../../shared/domain';
import { toMessageBody } from './body';
import { decodeCursor, encodeCursor } from './cursor';
import { normalisePeek, notFound, redisCapabilities, throwIfAborted, type RedisContext } from './context';
import { formatQueueId } from './ids';
import { looksLikeDeadLetterName } from './naming';

type ExecResult = [Error | null, unknown][];

const ORDER_NOTE =
  'Index 0 is the left end (LPOP side). Producers that LPUSH and consumers that (B)RPOP — Sidekiq, Celery/kombu, Resque — keep the oldest message at the right end: peek "newest" to read from there.';
const CURSOR_NOTE = 'Pages use index cursors: if the list changes between pages (push/pop), a page can repeat or skip elements.';

function checkListType(typeRes: [Error | null, unknown] | undefined, queueId: string, key: string): void {
  if (typeRes?.[0]) throw typeRes[0];
  const type = String(typeRes?.[1]);
  if (type === 'none') throw notFound(queueId, `the list "${key}" does not exist (any more)`);
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
 * Peeks a list with LRANGE (read-only, https://redis.io/docs/latest/commands/lrange/), as raw
 * bytes (binary elements come back base64). `oldest` reads from index 0 (left), `newest` from
 * the right end. Message ids are `#<index from the left>` at the time of the read.
 *
 * Cursors are index offsets: if the list changes between pages, elements can shift
 * (a page may repeat or skip some) — lists have no stable element ids.
 * @throws QueuescopeError `QUEUE_NOT_FOUND`, `INVALID_INPUT` (cursor, options), `CANCELLED`.
 */
/**
 * The id of a list entry: its index plus the first 8 hex digits of the SHA-1 of its bytes,
 * `#7~1a2b3c4d`. Lists have no element ids and indexes shift when consumers pop or push: an id that
 * was only the index (`#7`) could pick ANOTHER entry for a redrive `--ids` after a pop (a fresh-user
 * pass moved the wrong message that way). With the content hash, a shifted or replaced entry no
 * longer matches the id (it is reported not found) instead of standing in for it.
 */
export function listEntryId(index: number, raw: Buffer): string {
  return `#${index}~${createHash('sha1').update(raw).digest('hex').slice(0, 8)}`;
}

export async function peekList(ctx: RedisContext, key: string, options: PeekOptions, signal?: AbortSignal): Promise<PeekPage> {
  const { limit, direction, maxBodyBytes } = normalisePeek(options);
  const queueId = formatQueueId({ kind: 'list', key });
  const state = options.state ?? 'list';
  if (state !== 'list' && state !== 'all') throw new QueuescopeError('INVALID_INPUT', `A Redis list has no states to peek; got state "${state.slice(0, 100)}".`);
  const cursor = options.cursor ? decodeCursor(options.cursor, { queueId, state, direction }) : null;
  if (cursor && cursor.o === undefined) throw new QueuescopeError('INVALID_INPUT', 'The peek cursor is not a list cursor.');
  const offset = cursor?.o ?? 0;
  throwIfAborted(signal);
  const client = await ctx.client(signal);
  const m = client.multi().type(key).llen(key);
  if (direction === 'oldest') m.lrangeBuffer(key, offset, offset + limit);
  else m.lrangeBuffer(key, -(offset + limit + 1), -(offset + 1));
  const [typeRes, lenRes, rangeRes] = results(await m.exec());
  checkListType(typeRes, queueId, key);
  if (lenRes?.[0]) throw lenRes[0];
  if (rangeRes?.[0]) throw rangeRes[0];
  const length = Number(lenRes?.[1] ?? 0);
  let items = (rangeRes?.[1] ?? []) as Buffer[];
  if (direction === 'newest') items = items.reverse();
  const hasMore = items.length > limit;
  const page = items.slice(0, limit);
  const messages: QueueMessage[] = page.map((buf, i) => {
    const index = direction === 'oldest' ? offset + i : length - 1 - (offset + i);
    return {
      id: listEntryId(index, buf),
      queueId,
      queueName: key,
      position: offset + i,
      body: toMessageBody(buf, maxBodyBytes),
      headers: {},
      properties: { index },
      meta: {},
    };
  });
  return {
    messages,
    nextCursor: hasMore ? encodeCursor({ v: 1, q: queueId, s: state, d: direction, n: offset + page.length, o: offset + page.length }) : null,
    total: length,
    sideEffects: [],
  };
}
