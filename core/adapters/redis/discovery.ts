import type { Redis } from 'ioredis';
import { confirmBullmqQueues } from './bullmq';
import { throwIfAborted } from './context';

/** Default upper bound on keys SCAN examines during discovery. */
export const DEFAULT_SCAN_LIMIT = 100_000;
/** Keys asked for per SCAN call (a hint to Redis) and per TYPE pipeline. */
const BATCH = 1000;

/** Key suffixes BullMQ creates under `<prefix>:<queue>:` (queue-keys.ts of BullMQ). */
export const BULLMQ_KEY_SUFFIXES = new Set([
  'meta',
  'id',
  'wait',
  'paused',
  'active',
  'delayed',
  'prioritized',
  'completed',
  'failed',
  'waiting-children',
  'events',
  'marker',
  'stalled-check',
  'stalled',
  'limiter',
  'pc',
  'de',
  'repeat',
]);

/**
 * If `key` is shaped like a BullMQ queue key `<prefix>:<name>:<suffix>` (suffix from
 * {@link BULLMQ_KEY_SUFFIXES}), returns its prefix and queue name. BullMQ forbids `:` in queue
 * names, so the name is the last segment before the suffix and the prefix is everything before.
 * A candidate is only a queue once its `:meta` or `:id` key is confirmed to exist.
 */
export function bullmqCandidateOf(key: string): { prefix: string; name: string } | null {
  const last = key.lastIndexOf(':');
  if (last <= 0 || !BULLMQ_KEY_SUFFIXES.has(key.slice(last + 1))) return null;
  const rest = key.slice(0, last);
  const i = rest.lastIndexOf(':');
  if (i < 0) return null;
  const name = rest.slice(i + 1);
  if (name === '') return null;
  return { prefix: rest.slice(0, i), name };
}

/** True when `key` lies under one of `namespaces` (`<prefix>:<name>`), i.e. is a BullMQ-internal key. */
export function insideNamespace(key: string, namespaces: ReadonlySet<string>): boolean {
  for (let i = key.indexOf(':'); i >= 0; i = key.indexOf(':', i + 1)) if (namespaces.has(key.slice(0, i))) return true;
  return false;
}

/** What one bounded discovery pass found. */
export interface DiscoveredKeys {
  bullmq: { prefix: string; name: string }[];
  streams: string[];
  lists: string[];
  /** Keys SCAN returned (≤ the limit). */
  keysExamined: number;
  /** False when the limit stopped the scan before the whole keyspace was seen. */
  complete: boolean;
}

/**
 * Walks the keyspace with SCAN (never KEYS, https://redis.io/docs/latest/commands/scan/), examining
 * at most `scanLimit` keys, and classifies them: BullMQ queues (confirmed by `:meta`/`:id`), then
 * streams and lists (TYPE, pipelined) outside BullMQ's own keys. Sets, sorted sets, hashes and
 * strings are not queues and are skipped. Checks `signal` between batches.
 * @throws QueuescopeError `CANCELLED`; Redis errors are thrown as is for the caller to map.
 */
export async function discoverKeys(client: Redis, scanLimit: number, signal?: AbortSignal): Promise<DiscoveredKeys> {
  const keys: string[] = [];
  let cursor = '0';
  let truncated = false;
  do {
    throwIfAborted(signal);
    const count = Math.min(BATCH, scanLimit - keys.length);
    const [next, batch] = await client.scan(cursor, 'COUNT', count);
    cursor = next;
    for (const k of batch) {
      if (keys.length >= scanLimit) {
        truncated = true;
        break;
      }
      keys.push(k);
    }
  } while (cursor !== '0' && keys.length < scanLimit);
  const complete = cursor === '0' && !truncated;

  const candidates = new Map<string, { prefix: string; name: string }>();
  for (const k of keys) {
    const c = bullmqCandidateOf(k);
    if (c) candidates.set(`${c.prefix}:${c.name}`, c);
  }
  const cand = [...candidates.values()];
  throwIfAborted(signal);
  const confirmed = await confirmBullmqQueues(client, cand);
  const bullmq = cand.filter((_, i) => confirmed[i]);
  const namespaces = new Set(bullmq.map((q) => `${q.prefix}:${q.name}`));

  const others = keys.filter((k) => !insideNamespace(k, namespaces));
  const streams: string[] = [];
  const lists: string[] = [];
  for (let i = 0; i < others.length; i += BATCH) {
    throwIfAborted(signal);
    const slice = others.slice(i, i + BATCH);
    const p = client.pipeline();
    for (const k of slice) p.type(k);
    const res = (await p.exec()) ?? [];
    slice.forEach((k, j) => {
      const t = res[j]?.[1];
      if (t === 'stream') streams.push(k);
      else if (t === 'list') lists.push(k);
    });
  }
  return { bullmq, streams, lists, keysExamined: keys.length, complete };
}

/** Converts a `*` / `?` glob into an anchored RegExp (everything else literal). */
export function globToRegExp(glob: string): RegExp {
  const src = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${src}$`, 's');
}
