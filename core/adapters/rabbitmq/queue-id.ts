import { QueuescopeError } from '../../../shared/domain';

/** Prefix of every RabbitMQ queue id. */
export const QUEUE_ID_PREFIX = 'rabbitmq:';

/** AMQP 0-9-1 limits a queue name (a shortstr) to 255 bytes of UTF-8. */
const MAX_NAME_BYTES = 255;

/** A queue as addressed inside one broker: its vhost and name. */
export interface QueueRef {
  vhost: string;
  name: string;
}

/**
 * Builds the stable queue id `rabbitmq:<vhost>/<name>`, both parts percent-encoded with
 * `encodeURIComponent` (so the default vhost `/` is `%2F` and a `/` in a name is `%2F`):
 * `rabbitmq:%2F/orders.work`.
 * @throws QueuescopeError `INVALID_INPUT` for an empty vhost or name (never produced by the broker).
 */
export function encodeQueueId(ref: QueueRef): string {
  if (ref.vhost === '' || ref.name === '') throw new QueuescopeError('INVALID_INPUT', 'A RabbitMQ queue id needs a vhost and a non-empty queue name.');
  try {
    return `${QUEUE_ID_PREFIX}${encodeURIComponent(ref.vhost)}/${encodeURIComponent(ref.name)}`;
  } catch {
    throw new QueuescopeError('INVALID_INPUT', 'The queue name or vhost contains text that is not valid Unicode.');
  }
}

/**
 * Parses an id made by {@link encodeQueueId}. Strict: the prefix, exactly one unencoded `/`,
 * valid percent-encoding in canonical form (hex digits of either case), a non-empty vhost and a
 * non-empty name of at most 255 UTF-8 bytes.
 * @throws QueuescopeError `INVALID_INPUT` naming what is wrong with the id.
 */
export function decodeQueueId(id: string): QueueRef {
  const shown = JSON.stringify(id.length > 120 ? `${id.slice(0, 120)}…` : id);
  if (!id.startsWith(QUEUE_ID_PREFIX)) throw new QueuescopeError('INVALID_INPUT', `${shown} is not a RabbitMQ queue id: it must look like rabbitmq:%2F/<queue name>.`);
  const rest = id.slice(QUEUE_ID_PREFIX.length);
  const slash = rest.indexOf('/');
  if (slash <= 0 || rest.indexOf('/', slash + 1) !== -1) {
    throw new QueuescopeError('INVALID_INPUT', `${shown} is not a RabbitMQ queue id: it must be rabbitmq:<url-encoded vhost>/<url-encoded queue name>.`);
  }
  const vhost = strictDecode(rest.slice(0, slash), 'vhost', shown);
  const name = strictDecode(rest.slice(slash + 1), 'queue name', shown);
  if (name === '') throw new QueuescopeError('INVALID_INPUT', `${shown} has an empty queue name.`);
  if (new TextEncoder().encode(name).length > MAX_NAME_BYTES) throw new QueuescopeError('INVALID_INPUT', `${shown} names a queue longer than ${MAX_NAME_BYTES} bytes, which RabbitMQ does not allow.`);
  return { vhost, name };
}

function strictDecode(part: string, what: string, shown: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(part);
  } catch {
    throw new QueuescopeError('INVALID_INPUT', `${shown} has a badly percent-encoded ${what}.`);
  }
  const canonical = (s: string): string => s.replace(/%[0-9a-f]{2}/gi, (m) => m.toUpperCase());
  let again: string;
  try {
    again = encodeURIComponent(decoded);
  } catch {
    throw new QueuescopeError('INVALID_INPUT', `${shown} has a ${what} that is not valid Unicode.`);
  }
  if (canonical(part) !== again) throw new QueuescopeError('INVALID_INPUT', `${shown} has a ${what} that is not percent-encoded the way Queuescope writes ids (encodeURIComponent).`);
  return decoded;
}
