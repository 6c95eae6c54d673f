import { isUtf8 } from 'node:buffer';
import type { Redis } from 'ioredis';
import { QueuescopeError, type HeaderValue, type PeekOptions, type PeekPage, type QueueMessage, type QueueSummary } from '../../../shared/domain';
import { toHeaderValue, toMessageBody } from './body';
import { decodeCursor, encodeCursor } from './cursor';
import { normalisePeek, notFound, num, pairs, redisCapabilities, str, throwIfAborted, type RedisContext } from './context';
import { formatQueueId } from './ids';
import { looksLikeDeadLetterName } from './naming';
import { REDRIVE_COUNT_HEADER } from '../redrive-types';

/** Stream fields taken as the message body, in this order of preference; other fields become headers. */
export const STREAM_BODY_FIELDS = ['body', 'payload', 'data', 'message', 'json'] as const;

/** One consumer of a consumer group (XINFO CONSUMERS). */
export interface StreamConsumerInfo {
  name: string;
  /** Entries delivered to this consumer and not yet acknowledged. */
  pending: number;
  /** ms since the consumer last attempted an interaction (read/claim). */
  idleMs: number | null;
  /** ms since the last successful interaction (Redis ≥ 7.2), else null. */
  inactiveMs: number | null;
}

/** One consumer group (XINFO GROUPS + XINFO CONSUMERS). */
export interface StreamGroupInfo {
  name: string;
  /** Entries in the group's pending entries list (delivered, not acknowledged). */
  pending: number;
  lastDeliveredId: string;
  /** Redis ≥ 7.0: logical read counter; null when unknown. */
  entriesRead: number | null;
  /** Redis ≥ 7.0: entries not yet delivered to the group; null when Redis cannot tell (after XDEL/trim). */
  lag: number | null;
  consumers: StreamConsumerInfo[];
}

type ExecResult = [Error | null, unknown][];

function execResults(r: ExecResult | null): ExecResult {
  if (r === null) throw new QueuescopeError('BROKER_ERROR', 'A Redis transaction was aborted.');
  return r;
}

function parseGroups(reply: unknown): Omit<StreamGroupInfo, 'consumers'>[] {
  if (!Array.isArray(reply)) return [];
  return reply.map((g) => {
    const o = pairs(g);
    return {
      name: str(o.name) ?? '',
      pending: num(o.pending) ?? 0,
      lastDeliveredId: str(o['last-delivered-id']) ?? '0-0',
      entriesRead: num(o['entries-read']),
      lag: num(o.lag),
    };
  });
}

/** Reads XINFO GROUPS and XINFO CONSUMERS of a stream. */
export async function readStreamGroups(client: Redis, key: string): Promise<StreamGroupInfo[]> {
  const groups = parseGroups(await client.xinfo('GROUPS', key));
  if (groups.length === 0) return [];
  const p = client.pipeline();
  for (const g of groups) p.xinfo('CONSUMERS', key, g.name);
  const res = (await p.exec()) ?? [];
  return groups.map((g, i) => {
    const [err, reply] = res[i] ?? [null, []];
    const consumers = err || !Array.isArray(reply)
      ? []
      : reply.map((c) => {
          const o = pairs(c);
          return { name: str(o.name) ?? '', pending: num(o.pending) ?? 0, idleMs: num(o.idle), inactiveMs: num(o.inactive) };
        });
    return { ...g, consumers };
  });
}

/**
 * Summary of the stream at `key` (XINFO STREAM, XINFO GROUPS, XINFO CONSUMERS,
 * https://redis.io/docs/latest/commands/xinfo-stream/).
 * depth = XLEN; inFlight = entries pending across all groups; consumers = distinct consumer names.
 * @throws QueuescopeError `QUEUE_NOT_FOUND` when the key is missing or no longer a stream.
 */
export async function streamSummary(ctx: RedisContext, key: string, signal?: AbortSignal): Promise<QueueSummary> {
  const client = await ctx.client(signal);
  const id = formatQueueId({ kind: 'stream', key });
  const [typeRes, infoRes] = execResults(await client.multi().type(key).xinfo('STREAM', key).exec());
  if (typeRes?.[0]) throw typeRes[0];
  const type = String(typeRes?.[1]);
  if (type !== 'stream') throw notFound(id, type === 'none' ? `the key "${key}" does not exist` : `the key "${key}" is a ${type}, not a stream`);
  if (infoRes?.[0]) throw infoRes[0];
  const info = pairs(infoRes?.[1]);
  throwIfAborted(signal);
  const groups = await readStreamGroups(client, key);
  const firstEntry = info['first-entry'];
  const lastEntry = info['last-entry'];
  const length = num(info.length) ?? 0;
  const pending = groups.reduce((s, g) => s + g.pending, 0);
  const consumers = new Set(groups.flatMap((g) => g.consumers.map((c) => c.name)));
  return {
    id,
    name: key,
    broker: 'redis',
    kind: 'redis-stream',
    depth: length,
    inFlight: pending,
    delayed: null,
    consumers: consumers.size,
    counts: { length, pending, groups: groups.length },
    deadLetterTargets: [],
    deadLetterSources: [],
    isDeadLetterQueue: looksLikeDeadLetterName(key),
    capabilities: redisCapabilities(['all', ...groups.map((g) => `pending:${g.name}`)]),
    config: {
      key,
      length,
      lastGeneratedId: str(info['last-generated-id']),
      entriesAdded: num(info['entries-added']),
      maxDeletedEntryId: str(info['max-deleted-entry-id']),
      firstEntryId: Array.isArray(firstEntry) ? str(firstEntry[0]) : null,
      lastEntryId: Array.isArray(lastEntry) ? str(lastEntry[0]) : null,
      bodyFields: [...STREAM_BODY_FIELDS],
      groups: groups.map((g) => ({
        name: g.name,
        pending: g.pending,
        lastDeliveredId: g.lastDeliveredId,
        entriesRead: g.entriesRead,
        lag: g.lag,
        consumers: g.consumers.map((c) => ({ name: c.name, pending: c.pending, idleMs: c.idleMs, inactiveMs: c.inactiveMs })),
      })),
      note: 'Peeking uses XRANGE / XPENDING, which change nothing: no entry is read into a group, claimed or acknowledged.',
    },
  };
}

/** One row of extended XPENDING: an entry a consumer of `group` read and has not acknowledged. */
export interface PendingEntry {
  group: string;
  consumer: string;
  /** ms since the entry was last delivered (to this consumer). */
  idleMs: number;
  /** Times it was delivered. */
  deliveries: number;
}

/**
 * The pending entries with ids from `lo` to `hi` (inclusive) in every consumer group of the stream
 * `key`: XINFO GROUPS, then, for each group with a non-empty pending entries list, extended
 * XPENDING over that id range (https://redis.io/docs/latest/commands/xpending/), paged with an
 * exclusive start (Redis ≥ 6.2) until the range is read. Returns, per entry id, one row per group
 * holding it (empty map when the stream has no group with pending entries).
 * @throws Redis errors as thrown by ioredis (e.g. NOPERM).
 */
export async function pendingInRange(conn: Redis, key: string, lo: string, hi: string, page = 500): Promise<Map<string, PendingEntry[]>> {
  const out = new Map<string, PendingEntry[]>();
  const groups = parseGroups(await conn.xinfo('GROUPS', key)).filter((g) => g.pending > 0);
  for (const g of groups) {
    let start = lo;
    for (;;) {
      const rows = (await conn.xpending(key, g.name, start, hi, page)) as unknown[][];
      for (const row of rows) {
        const id = str(row[0]);
        if (id === null) continue;
        const e: PendingEntry = { group: g.name, consumer: str(row[1]) ?? '', idleMs: num(row[2]) ?? 0, deliveries: num(row[3]) ?? 0 };
        const list = out.get(id);
        if (list) list.push(e);
        else out.set(id, [e]);
      }
      const last = rows.length === page ? str(rows[rows.length - 1]?.[0]) : null;
      if (last === null) break;
      start = `(${last}`;
    }
  }
  return out;
}

/** Stream entry id → [ms, seq] for comparisons. */
function parseId(id: string): [number, number] {
  const dash = id.indexOf('-');
  return dash < 0 ? [Number(id), 0] : [Number(id.slice(0, dash)), Number(id.slice(dash + 1))];
}
function idGreater(a: string, b: string): boolean {
  const [am, as] = parseId(a);
  const [bm, bs] = parseId(b);
  return am > bm || (am === bm && as > bs);
}

interface PendingInfo {
  group: string;
  consumer: string;
  idleMs: number;
  deliveries: number;
}

/**
 * Builds a {@link QueueMessage} from a stream entry: the body is the first of
 * {@link STREAM_BODY_FIELDS} present (else the whole field map as JSON, `properties.bodyField`
 * null), other fields are headers (binary values as `{ base64 }`); enqueuedAt = the id's ms part.
 *
 * Field names are bytes in Redis and need not be valid UTF-8 or distinct (XADD accepts the same
 * name twice). A name that is valid UTF-8 is its own header key (its first occurrence); any other
 * field gets a distinct key ({@link streamFieldKeys}): a name that is not valid UTF-8 is shown
 * with its invalid bytes as `\xHH` (and `\` as `\\`), a repeated name, or one no header map can
 * hold (`__proto__`), gets ` #2`, ` #3`… appended. Such an entry then also carries
 * `properties.streamFields`: every field in entry order as `{ name, key }`, `name` the exact
 * name (text, or `{ base64 }` of the bytes when not valid UTF-8) and `key` the header key (the
 * body JSON's key when there is no body field) holding its value, null for the body field. The
 * re-inject publisher (`RedisRedriveMover.publish`) rebuilds the entry from it byte for byte.
 * An entry with plain names carries it too when its field order cannot be told from the body
 * field and the header map ({@link plainOrderKept}): the body field not first, a name that is an
 * array index (`7`, which JavaScript objects list first), or the redrive counter not last.
 */
export function streamEntryMessage(
  idBuf: Buffer | string,
  fields: Buffer[],
  at: { queueId: string; queueName: string; position: number; maxBodyBytes: number },
): QueueMessage {
  const id = typeof idBuf === 'string' ? idBuf : idBuf.toString('latin1');
  const count = fields.length >> 1;
  const nameBufs = new Array<Buffer>(count);
  let bodyIndex = -1;
  let bodyRank: number = STREAM_BODY_FIELDS.length;
  for (let i = 0; i < count; i++) {
    const buf = fields[i * 2] as Buffer;
    nameBufs[i] = buf;
    const rank = isUtf8(buf) ? BODY_RANK.get(buf.toString('utf8')) : undefined;
    if (rank !== undefined && rank < bodyRank) {
      bodyRank = rank;
      bodyIndex = i;
    }
  }
  const { keys, exact } = streamFieldKeys(nameBufs);
  const headers: Record<string, HeaderValue> = {};
  let body;
  /** The map the fields' values are read back from: the headers, or the body's JSON object when there is no body field. */
  let values = headers;
  if (bodyIndex >= 0) {
    body = toMessageBody(fields[bodyIndex * 2 + 1], at.maxBodyBytes);
    for (let i = 0; i < count; i++) if (i !== bodyIndex) headers[keys[i] as string] = toHeaderValue(fields[i * 2 + 1] as Buffer);
  } else {
    const map: Record<string, HeaderValue> = {};
    for (let i = 0; i < count; i++) map[keys[i] as string] = toHeaderValue(fields[i * 2 + 1] as Buffer);
    body = toMessageBody(Buffer.from(JSON.stringify(map), 'utf8'), at.maxBodyBytes);
    values = map;
  }
  const properties: Record<string, HeaderValue> = { bodyField: bodyIndex >= 0 ? (keys[bodyIndex] as string) : null };
  if (!exact || !plainOrderKept(keys, bodyIndex, values)) properties.streamFields = nameBufs.map((b, i) => ({ name: toHeaderValue(b), key: i === bodyIndex ? null : (keys[i] as string) }));
  const ms = Number(id.slice(0, id.indexOf('-')));
  return {
    id,
    queueId: at.queueId,
    queueName: at.queueName,
    position: at.position,
    body,
    headers,
    properties,
    meta: { enqueuedAt: Number.isFinite(ms) ? ms : null },
  };
}

/**
 * Whether an entry whose field names are all distinct text (`keys` = the names, in entry order) is
 * written back in the same order without `properties.streamFields`: the re-inject publisher then
 * writes the body field first, then the keys of `values` (the headers, or the body's JSON map when
 * `bodyIndex` is -1) in JavaScript's key order (array indexes first, ascending), and the redrive
 * counter last (see `streamFields` in redrive.ts).
 */
export function plainOrderKept(keys: readonly string[], bodyIndex: number, values: Readonly<Record<string, HeaderValue>>): boolean {
  const own = bodyIndex >= 0 ? [keys[bodyIndex] as string, ...Object.keys(values)] : Object.keys(values);
  const written = own.filter((k) => k !== REDRIVE_COUNT_HEADER);
  if (keys.includes(REDRIVE_COUNT_HEADER)) written.push(REDRIVE_COUNT_HEADER);
  return written.length === keys.length && written.every((k, i) => k === keys[i]);
}

/** An array index as JavaScript objects list them first, ascending (`0`, `7`; not `07` or `-1`). */
function isIndexKey(k: string): boolean {
  return /^(0|[1-9][0-9]*)$/.test(k) && Number(k) < 4294967295;
}

/**
 * What a snapshot written before Queuescope recorded stream field order cannot tell about the
 * field order of stream message `m`. Such a file (an export or redrive backup whose queue header
 * has no `written` record, see `core/snapshot/format.ts`: both came after the field-order record)
 * gives `properties.streamFields` only to entries with binary or repeated names; for the others
 * the order was not recorded when it differed from what {@link plainOrderKept} re-injects:
 * - `bodyField`: the message has a body field and other fields — its place among them is not in
 *   the file (re-inject writes it first); the other fields' order is (the header map keeps it);
 * - `indexNames`: field names that are array indexes (`7`) among two or more fields (headers, or
 *   the body's JSON map without a body field) — JavaScript listed them first, ascending, before
 *   the file was written, so their places are not in it.
 * Null when the order is fully in the file (`properties.streamFields`, a lone body field, no
 * index names) or `m` is not a Redis stream message (`properties.bodyField` absent).
 */
export function unrecordedFieldOrder(m: QueueMessage): { bodyField: boolean; indexNames: string[] } | null {
  const bodyField = m.properties.bodyField;
  if (bodyField === undefined || m.properties.streamFields !== undefined) return null;
  let names: string[];
  if (typeof bodyField === 'string' && bodyField !== '') names = Object.keys(m.headers);
  else {
    let map: unknown;
    try {
      map = JSON.parse(m.body.encoding === 'utf8' ? m.body.data : Buffer.from(m.body.data, 'base64').toString('utf8'));
    } catch {
      return null;
    }
    if (map === null || typeof map !== 'object' || Array.isArray(map)) return null;
    names = Object.keys(map);
  }
  const lostBody = typeof bodyField === 'string' && bodyField !== '' && names.length > 0;
  const indexNames = names.length >= 2 ? names.filter(isIndexKey) : [];
  return lostBody || indexNames.length > 0 ? { bodyField: lostBody, indexNames } : null;
}

/**
 * Distinct map keys for the field names of one stream entry, in entry order, and whether every
 * key is exactly its name (valid UTF-8, not repeated, not `__proto__`, which JSON readers drop).
 * Valid UTF-8 names are taken first, so a text name always keeps its own key (its first
 * occurrence); the others get {@link escapeFieldName} of the name, with ` #2`, ` #3`… appended
 * until the key is unused.
 */
export function streamFieldKeys(names: readonly Buffer[]): { keys: string[]; exact: boolean } {
  const keys = new Array<string>(names.length);
  const used = new Set<string>(['__proto__']);
  let exact = true;
  for (let i = 0; i < names.length; i++) {
    const b = names[i] as Buffer;
    if (!isUtf8(b)) continue;
    const s = b.toString('utf8');
    if (used.has(s)) continue;
    used.add(s);
    keys[i] = s;
  }
  for (let i = 0; i < names.length; i++) {
    if (keys[i] !== undefined) continue;
    exact = false;
    const base = escapeFieldName(names[i] as Buffer);
    let key = base;
    for (let n = 2; used.has(key); n++) key = `${base} #${n}`;
    used.add(key);
    keys[i] = key;
  }
  return { keys, exact };
}

/**
 * A field name as readable text: valid UTF-8 sequences as their characters; when the name is not
 * valid UTF-8, every other byte as `\xHH` (lower-case hex) and `\` as `\\`, so two different
 * binary names never read the same. Valid UTF-8 names are returned unchanged.
 */
export function escapeFieldName(b: Buffer): string {
  if (isUtf8(b)) return b.toString('utf8');
  let out = '';
  let i = 0;
  while (i < b.length) {
    const c = b[i] as number;
    const len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    const seq = len > 0 ? b.subarray(i, i + len) : null;
    if (seq !== null && seq.length === len && isUtf8(seq)) {
      out += c === 0x5c ? '\\\\' : seq.toString('utf8');
      i += len;
    } else {
      out += `\\x${c.toString(16).padStart(2, '0')}`;
      i += 1;
    }
  }
  return out;
}

const BODY_RANK = new Map<string, number>(STREAM_BODY_FIELDS.map((f, i) => [f, i]));

/**
 * Peeks a stream without side effects.
 *
 * - state `all` (default): XRANGE (oldest first) / XREVRANGE (newest first) with an exclusive
 *   cursor `(<last id>` (Redis ≥ 6.2). Entries get `meta.state`: `pending` (in some group's PEL,
 *   with that group's consumer, idle time and delivery count), `new` (after every group's
 *   last-delivered-id) or `delivered` (delivered and acknowledged); no state when the stream has no group.
 * - state `pending:<group>`: the group's pending entries list via extended XPENDING (idle ms,
 *   delivery count, consumer), bodies via XRANGE. Oldest first only. An entry deleted while
 *   pending comes back with an empty body and `properties.entryDeleted: true`.
 *
 * Cursors are entry ids, so entries added or acknowledged meanwhile do not shift a page.
 * @throws QueuescopeError `QUEUE_NOT_FOUND`, `INVALID_INPUT` (state, cursor, direction), `CANCELLED`.
 */
export async function peekStream(ctx: RedisContext, key: string, options: PeekOptions, signal?: AbortSignal): Promise<PeekPage> {
  const { limit, direction, maxBodyBytes } = normalisePeek(options);
  const state = options.state ?? 'all';
  const queueId = formatQueueId({ kind: 'stream', key });
  if (state !== 'all' && !state.startsWith('pending:')) {
    throw new QueuescopeError('INVALID_INPUT', `A stream can be peeked in state "all" or "pending:<group>", not "${state.slice(0, 100)}".`);
  }
  const cursor = options.cursor ? decodeCursor(options.cursor, { queueId, state, direction }) : null;
  if (cursor && cursor.id === undefined) throw new QueuescopeError('INVALID_INPUT', 'The peek cursor is not a stream cursor.');
  throwIfAborted(signal);
  const client = await ctx.client(signal);
  const done = cursor?.n ?? 0;

  if (state === 'all') {
    const m = client.multi().type(key).xlen(key).xinfo('GROUPS', key);
    if (direction === 'oldest') m.xrangeBuffer(key, cursor?.id !== undefined ? `(${cursor.id}` : '-', '+', 'COUNT', limit + 1);
    else m.xrevrangeBuffer(key, cursor?.id !== undefined ? `(${cursor.id}` : '+', '-', 'COUNT', limit + 1);
    const [typeRes, lenRes, groupsRes, rangeRes] = execResults(await m.exec());
    checkStreamType(typeRes, queueId, key);
    for (const r of [lenRes, groupsRes, rangeRes]) if (r?.[0]) throw r[0];
    const entries = (rangeRes?.[1] ?? []) as [Buffer, Buffer[]][];
    const groups = parseGroups(groupsRes?.[1]);
    const page = entries.slice(0, limit);
    throwIfAborted(signal);

    const pendingById = new Map<string, PendingInfo>();
    if (groups.length > 0 && page.length > 0) {
      const ids = page.map((e) => e[0].toString('latin1'));
      const lo = direction === 'oldest' ? (ids[0] as string) : (ids[ids.length - 1] as string);
      const hi = direction === 'oldest' ? (ids[ids.length - 1] as string) : (ids[0] as string);
      const p = client.pipeline();
      for (const g of groups) p.xpending(key, g.name, lo, hi, page.length);
      const res = (await p.exec()) ?? [];
      res.forEach(([err, reply], gi) => {
        if (err || !Array.isArray(reply)) return;
        for (const row of reply as unknown[][]) {
          const id = str(row[0]);
          if (id === null || pendingById.has(id)) continue;
          pendingById.set(id, { group: groups[gi]?.name ?? '', consumer: str(row[1]) ?? '', idleMs: num(row[2]) ?? 0, deliveries: num(row[3]) ?? 0 });
        }
      });
    }
    const messages = page.map(([idBuf, fields], i) => {
      const msg = streamEntryMessage(idBuf, fields, { queueId, queueName: key, position: done + i, maxBodyBytes });
      if (groups.length > 0) {
        const pend = pendingById.get(msg.id);
        if (pend) {
          msg.meta.state = 'pending';
          msg.meta.consumerGroup = pend.group;
          msg.meta.consumer = pend.consumer;
          msg.meta.idleMs = pend.idleMs;
          msg.meta.receiveCount = pend.deliveries;
        } else {
          msg.meta.state = groups.every((g) => idGreater(msg.id, g.lastDeliveredId)) ? 'new' : 'delivered';
        }
      }
      return msg;
    });
    const last = messages[messages.length - 1];
    return {
      messages,
      nextCursor: entries.length > limit && last ? encodeCursor({ v: 1, q: queueId, s: state, d: direction, n: done + messages.length, id: last.id }) : null,
      total: Number(lenRes?.[1] ?? 0),
      sideEffects: [],
    };
  }

  // pending:<group>
  const group = state.slice('pending:'.length);
  if (direction !== 'oldest') throw new QueuescopeError('INVALID_INPUT', 'Pending entries can be read oldest first only (XPENDING has no reverse form).');
  const [typeRes, groupsRes] = execResults(await client.multi().type(key).xinfo('GROUPS', key).exec());
  checkStreamType(typeRes, queueId, key);
  if (groupsRes?.[0]) throw groupsRes[0];
  const g = parseGroups(groupsRes?.[1]).find((x) => x.name === group);
  if (!g) throw new QueuescopeError('INVALID_INPUT', `The stream "${key}" has no consumer group "${group.slice(0, 200)}".`, { queueId });
  const rows = (await client.xpending(key, group, cursor?.id !== undefined ? `(${cursor.id}` : '-', '+', limit + 1)) as unknown[][];
  const pageRows = rows.slice(0, limit);
  throwIfAborted(signal);
  const p = client.pipeline();
  for (const row of pageRows) {
    const id = str(row[0]) ?? '0-0';
    p.xrangeBuffer(key, id, id);
  }
  const bodies = pageRows.length > 0 ? ((await p.exec()) ?? []) : [];
  const messages = pageRows.map((row, i) => {
    const id = str(row[0]) ?? '';
    const [err, res] = bodies[i] ?? [null, []];
    if (err) throw err;
    const entry = (res as [Buffer, Buffer[]][])[0];
    const msg = entry
      ? streamEntryMessage(entry[0], entry[1], { queueId, queueName: key, position: done + i, maxBodyBytes })
      : deletedEntryMessage(id, queueId, key, done + i);
    msg.meta.state = 'pending';
    msg.meta.consumerGroup = group;
    msg.meta.consumer = str(row[1]);
    msg.meta.idleMs = num(row[2]);
    msg.meta.receiveCount = num(row[3]);
    return msg;
  });
  const last = messages[messages.length - 1];
  return {
    messages,
    nextCursor: rows.length > limit && last ? encodeCursor({ v: 1, q: queueId, s: state, d: direction, n: done + messages.length, id: last.id }) : null,
    total: g.pending,
    sideEffects: [],
  };
}

function checkStreamType(typeRes: [Error | null, unknown] | undefined, queueId: string, key: string): void {
  if (typeRes?.[0]) throw typeRes[0];
  const type = String(typeRes?.[1]);
  if (type === 'none') throw notFound(queueId, `the stream "${key}" does not exist (any more)`);
  if (type !== 'stream') throw notFound(queueId, `the key "${key}" is now a ${type}, not a stream`);
}

function deletedEntryMessage(id: string, queueId: string, key: string, position: number): QueueMessage {
  const ms = parseId(id)[0];
  return {
    id,
    queueId,
    queueName: key,
    position,
    body: { encoding: 'utf8', data: '', sizeBytes: 0, truncated: false },
    headers: {},
    properties: { entryDeleted: true },
    meta: { enqueuedAt: Number.isFinite(ms) ? ms : null },
  };
}
