import { QueuescopeError } from '../../../shared/domain';

/** A Redis-side queue as addressed by its queue id. */
export type RedisQueueRef =
  | { kind: 'bullmq'; prefix: string; name: string }
  | { kind: 'stream'; key: string }
  | { kind: 'list'; key: string };

/**
 * Queue ids of the Redis adapter:
 * - `bullmq:<prefix>:<name>` (BullMQ queue names cannot contain `:`, prefixes can)
 * - `stream:<key>` for a Redis Stream, `list:<key>` for a list.
 */
export function formatQueueId(ref: RedisQueueRef): string {
  switch (ref.kind) {
    case 'bullmq':
      return `bullmq:${ref.prefix}:${ref.name}`;
    case 'stream':
      return `stream:${ref.key}`;
    case 'list':
      return `list:${ref.key}`;
  }
}

/**
 * Parses a queue id made by {@link formatQueueId}.
 * @throws QueuescopeError `QUEUE_NOT_FOUND` when the id is not a Redis queue id (e.g. another broker's).
 */
export function parseQueueId(id: string): RedisQueueRef {
  if (id.startsWith('bullmq:')) {
    const rest = id.slice('bullmq:'.length);
    const i = rest.lastIndexOf(':');
    if (i >= 0 && i < rest.length - 1) return { kind: 'bullmq', prefix: rest.slice(0, i), name: rest.slice(i + 1) };
  } else if (id.startsWith('stream:') && id.length > 'stream:'.length) {
    return { kind: 'stream', key: id.slice('stream:'.length) };
  } else if (id.startsWith('list:') && id.length > 'list:'.length) {
    return { kind: 'list', key: id.slice('list:'.length) };
  }
  throw new QueuescopeError('QUEUE_NOT_FOUND', `"${id.slice(0, 200)}" is not a queue on this Redis connection (ids look like bullmq:bull:payments, stream:orders or list:emails).`);
}

/** Display name: the BullMQ queue name, or the key. */
export function displayName(ref: RedisQueueRef): string {
  return ref.kind === 'bullmq' ? ref.name : ref.key;
}
