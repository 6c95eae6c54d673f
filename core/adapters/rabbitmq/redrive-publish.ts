import { createHash } from 'node:crypto';
import type { ConfirmChannel, Message, Options } from 'amqplib';
import { QueuescopeError, type HeaderValue, type QueueMessage } from '../../../shared/domain';
import { REDRIVE_COUNT_HEADER } from '../redrive-types';
import { brokerText, messageOf, replyCode } from './errors';

/**
 * Headers a redrive never copies:
 * - `x-delivery-count`: the quorum DLQ's delivery counter of THIS copy (the broker adds it at
 *   delivery); carried over it would claim deliveries the new copy never had, and stay forever on
 *   a classic target;
 * - `CC` / `BCC`: sender-selected distribution (https://www.rabbitmq.com/docs/sender-selected): a
 *   publish carrying them is also routed to the queues they name, so a redrive would fan out.
 */
export const REDRIVE_STRIPPED_HEADERS: readonly string[] = ['x-delivery-count', 'CC', 'BCC'];

/** The redrive counter of a headers table (a number, or a numeric string); 0 when absent or unreadable. */
export function redriveCountOf(headers: Record<string, unknown> | undefined): number {
  const v = headers?.[REDRIVE_COUNT_HEADER];
  const n = typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : typeof v === 'string' ? Number(v) : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

function copyHeaders(src: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (src) for (const k of Object.keys(src)) if (!REDRIVE_STRIPPED_HEADERS.includes(k)) out[k] = src[k];
  return out;
}

/**
 * amqplib publish options that reproduce a delivered message: every basic property as delivered
 * (content type/encoding, delivery mode, priority, correlation id, reply-to, expiration, message
 * id, timestamp, type, user id, app id) and its headers (x-death, x-first-death-* included) minus
 * {@link REDRIVE_STRIPPED_HEADERS}. With `countRedrive` the {@link REDRIVE_COUNT_HEADER} is set to
 * the previous value + 1. `mandatory` is always set, so an unroutable publish comes back as
 * basic.return instead of being dropped.
 *
 * What cannot be kept exactly (amqplib decodes and re-encodes field tables): integer header values
 * keep their value but may change their AMQP width (amqplib encodes the smallest signed type that
 * fits; a 64-bit value beyond 2^53 loses precision); a `longstr` that is not valid UTF-8 is decoded
 * with replacement characters; the deprecated `cluster-id` property is not sent by amqplib.
 */
export function republishOptions(m: Message, countRedrive: boolean): Options.Publish {
  const p = m.properties;
  const headers = copyHeaders(p.headers);
  if (countRedrive) headers[REDRIVE_COUNT_HEADER] = redriveCountOf(p.headers) + 1;
  const o: Options.Publish = { mandatory: true, headers };
  const set = (k: keyof Options.Publish, v: unknown): void => {
    if (v !== undefined && v !== null) (o as Record<string, unknown>)[k] = v;
  };
  set('contentType', p.contentType);
  set('contentEncoding', p.contentEncoding);
  set('deliveryMode', p.deliveryMode);
  set('priority', p.priority);
  set('correlationId', p.correlationId);
  set('replyTo', p.replyTo);
  set('expiration', p.expiration);
  set('messageId', p.messageId);
  set('timestamp', p.timestamp);
  set('type', p.type);
  set('userId', p.userId);
  set('appId', p.appId);
  return o;
}

/**
 * A 48-bit fingerprint of what a republished copy of `m` carries (body, properties, headers minus
 * {@link REDRIVE_STRIPPED_HEADERS}), so a run can recognise its own copies at the DLQ's tail.
 */
export function copyFingerprint(m: Message): number {
  const p = m.properties;
  const h = createHash('sha1');
  h.update(m.content);
  h.update(
    JSON.stringify([p.contentType, p.contentEncoding, p.deliveryMode, p.priority, p.correlationId, p.replyTo, p.expiration, p.messageId, p.timestamp, p.type, p.userId, p.appId, copyHeaders(p.headers)], (_k, v: unknown) =>
      typeof v === 'bigint' ? v.toString() : v,
    ),
  );
  return h.digest().readUIntBE(0, 6);
}

/**
 * A cheap 32-bit key of what a copy of `m` keeps unchanged (body length, message id, timestamp):
 * equal for a message and its copies, so a message whose key differs from every copy's needs no
 * {@link copyFingerprint}. Collisions only cost a fingerprint.
 */
export function copyKey(m: Message): number {
  const p = m.properties as { messageId?: unknown; timestamp?: unknown };
  let h = (2166136261 ^ m.content.length) >>> 0;
  const id = typeof p.messageId === 'string' ? p.messageId : '';
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619);
  const ts = typeof p.timestamp === 'number' ? p.timestamp : 0;
  return (Math.imul(h ^ (ts | 0), 16777619) ^ Math.floor(ts / 4294967296)) >>> 0;
}

// ------------------------------------------------------------------ re-inject (JSON messages)

/** The raw body of a JSON message (`utf8` text or `base64`). */
export function bodyBytes(m: QueueMessage): Buffer {
  return Buffer.from(m.body.data, m.body.encoding === 'base64' ? 'base64' : 'utf8');
}

/** A JSON header value back to what amqplib encodes: `{ base64 }` → bytes, objects → tables, numbers as numbers. */
function toAmqpValue(v: HeaderValue): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(toAmqpValue);
  const keys = Object.keys(v);
  if (keys.length === 1 && keys[0] === 'base64' && typeof v.base64 === 'string') return Buffer.from(v.base64, 'base64');
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = toAmqpValue(v[k] as HeaderValue);
  return out;
}

/** ms since epoch (how Queuescope shows AMQP timestamps) → an AMQP `timestamp` field (seconds). */
function timestampField(v: unknown): unknown {
  return typeof v === 'number' && Number.isFinite(v) ? { '!': 'timestamp', value: Math.floor(v / 1000) } : v;
}

/**
 * amqplib publish options for a message read from a snapshot (JSON model): properties by their
 * amqplib names (`timestamp` ms → s), headers converted back (`{ base64 }` → bytes; `x-death[].time`
 * and `x-shovelled-timestamp` ms → AMQP timestamps), minus {@link REDRIVE_STRIPPED_HEADERS}, plus
 * the redrive counter. Header integer widths and decimals cannot be restored from JSON (they are
 * numbers there).
 * @throws QueuescopeError `INVALID_INPUT` when a property has the wrong type.
 */
export function publishOptionsFromJson(m: QueueMessage): Options.Publish {
  const headers: Record<string, unknown> = {};
  for (const k of Object.keys(m.headers)) {
    if (REDRIVE_STRIPPED_HEADERS.includes(k)) continue;
    const v = m.headers[k] as HeaderValue;
    let a = toAmqpValue(v);
    if (k === 'x-death' && Array.isArray(a)) {
      a = a.map((e: unknown) => (e !== null && typeof e === 'object' && !Buffer.isBuffer(e) && !Array.isArray(e) ? { ...e, time: timestampField((e as { time?: unknown }).time) } : e));
    } else if (k === 'x-shovelled-timestamp') a = timestampField(a);
    headers[k] = a;
  }
  headers[REDRIVE_COUNT_HEADER] = redriveCountOf(m.headers) + 1;
  const o: Options.Publish = { mandatory: true, headers };
  const p = m.properties;
  const str = (k: string): string | undefined => {
    const v = p[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') throw new QueuescopeError('INVALID_INPUT', `Message ${m.id.slice(0, 80)}: property ${k} must be text.`);
    return v;
  };
  const num = (k: string): number | undefined => {
    const v = p[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new QueuescopeError('INVALID_INPUT', `Message ${m.id.slice(0, 80)}: property ${k} must be a number.`);
    return v;
  };
  const maybe = <K extends keyof Options.Publish>(k: K, v: Options.Publish[K] | undefined): void => {
    if (v !== undefined) o[k] = v;
  };
  maybe('contentType', str('contentType'));
  maybe('contentEncoding', str('contentEncoding'));
  const mode = num('deliveryMode');
  if (mode !== undefined && mode !== 1 && mode !== 2) throw new QueuescopeError('INVALID_INPUT', `Message ${m.id.slice(0, 80)}: deliveryMode must be 1 or 2, got ${mode}.`);
  maybe('deliveryMode', mode);
  const priority = num('priority');
  if (priority !== undefined && (!Number.isInteger(priority) || priority < 0 || priority > 255)) throw new QueuescopeError('INVALID_INPUT', `Message ${m.id.slice(0, 80)}: priority must be a whole number from 0 to 255, got ${priority}.`);
  maybe('priority', priority);
  maybe('correlationId', str('correlationId'));
  maybe('replyTo', str('replyTo'));
  const exp = p.expiration;
  maybe('expiration', typeof exp === 'number' ? String(exp) : str('expiration'));
  maybe('messageId', str('messageId'));
  const ts = num('timestamp');
  if (ts !== undefined && ts < 0) throw new QueuescopeError('INVALID_INPUT', `Message ${m.id.slice(0, 80)}: timestamp must be ms since the epoch, got ${ts}.`);
  maybe('timestamp', ts === undefined ? undefined : Math.floor(ts / 1000));
  maybe('type', str('type'));
  maybe('userId', str('userId'));
  maybe('appId', str('appId'));
  return o;
}

// ------------------------------------------------------------------ confirmed publishing

interface Pending {
  queue: string;
  content: Buffer;
  returned: string | null;
}

/**
 * Publishes through the default exchange (routing key = queue name, so exactly that queue gets the
 * message — never the original exchange, which could fan out) on a confirm channel, with
 * `mandatory` set, and settles each publish only when the broker confirmed it
 * (https://www.rabbitmq.com/docs/confirms#publisher-confirms):
 * - basic.ack without a basic.return → delivered to the queue;
 * - basic.return (NO_ROUTE: the queue does not exist) → failure. RabbitMQ sends the return before
 *   the ack of the same publish. A return carries no publish sequence number, so it is matched by
 *   routing key and body to the unconfirmed publishes; every match is failed (when identical
 *   bodies are in flight to the same queue, all of them), so a routed publish may be reported
 *   failed, but an unrouted one is never reported delivered;
 * - basic.nack (e.g. a full queue with `overflow: reject-publish`) or the channel closing → failure.
 */
/**
 * The rejection of a publish that was written to the socket but whose confirm never came because
 * the channel closed: the broker may or may not have enqueued it (`details.outcome: 'unknown'`),
 * except when it closed the channel for a refused write permission (`outcome: 'refused'`).
 */
function unconfirmed(closedBy: QueuescopeError): QueuescopeError {
  // 403 ACCESS_REFUSED: the user may not write to the exchange (the default one, for every target),
  // so the broker refused this publish as it refused the one that closed the channel — nothing
  // was enqueued (a failure, not a possible duplicate).
  if ((closedBy.details as { replyCode?: unknown } | undefined)?.replyCode === 403) return new QueuescopeError(closedBy.code, closedBy.message, { ...closedBy.details, outcome: 'refused' });
  return new QueuescopeError(closedBy.code, closedBy.message, { ...closedBy.details, outcome: 'unknown' });
}

/** True for the rejection of a publish whose fate is unknown (written, then the channel closed before its confirm). */
export function publishOutcomeUnknown(e: unknown): boolean {
  return e instanceof QueuescopeError && (e.details as { outcome?: unknown } | undefined)?.outcome === 'unknown';
}

export class ConfirmPublisher {
  private readonly pending = new Set<Pending>();
  private closedBy: QueuescopeError | null = null;
  private lastError: unknown = null;

  constructor(
    private readonly ch: ConfirmChannel,
    private readonly vhost: string,
  ) {
    ch.on('return', (m: Message) => {
      const f = m.fields as Message['fields'] & { replyCode?: number; replyText?: string };
      const why = `${String(f.replyCode ?? '')} ${f.replyText ?? ''}`.trim();
      for (const p of this.pending) if (p.returned === null && p.queue === m.fields.routingKey && p.content.equals(m.content)) p.returned = why;
    });
    ch.on('error', (e: unknown) => {
      this.lastError = e;
    });
    ch.on('close', () => {
      this.closedBy ??= this.channelGone();
    });
  }

  /** Null while the channel is open, else why it closed. (A method: the value changes under callbacks.) */
  closed(): QueuescopeError | null {
    return this.closedBy;
  }

  private channelGone(): QueuescopeError {
    const e = this.lastError;
    const code = replyCode(e);
    if (e === null || code === undefined) return new QueuescopeError('HOST_UNREACHABLE', `The publishing channel to RabbitMQ closed${e === null ? '' : `: ${messageOf(e)}`}; unconfirmed publishes are not counted as delivered.`);
    return new QueuescopeError(code === 403 ? 'PERMISSION_DENIED' : 'BROKER_ERROR', `RabbitMQ closed the publishing channel (${code}): ${brokerText(e) ?? messageOf(e)}`, { replyCode: code, vhost: this.vhost });
  }

  /**
   * Publishes one message. Resolves once it is written (after waiting for 'drain' when amqplib's
   * buffer is full) with `confirmed`, which resolves once the broker confirmed it and did not
   * return it, and rejects with a QueuescopeError otherwise. Never throws itself.
   */
  async publish(queue: string, content: Buffer, options: Options.Publish): Promise<{ confirmed: Promise<void> }> {
    if (this.closedBy) {
      const closed = Promise.reject(this.closedBy);
      closed.catch(() => undefined);
      return { confirmed: closed };
    }
    const entry: Pending = { queue, content, returned: null };
    this.pending.add(entry);
    const write = { ok: true };
    const confirmed = new Promise<void>((resolve, reject) => {
      try {
        write.ok = this.ch.publish('', queue, content, { ...options, mandatory: true }, (err: unknown) => {
          this.pending.delete(entry);
          if (entry.returned !== null) {
            reject(new QueuescopeError('QUEUE_NOT_FOUND', `RabbitMQ could not route the message to queue '${queue}' (basic.return ${entry.returned}): the queue does not exist in vhost '${this.vhost}'.`, { queue, vhost: this.vhost }));
          } else if (err !== null && err !== undefined) {
            reject(/channel closed/i.test(messageOf(err)) ? unconfirmed(this.closedBy ?? this.channelGone()) : new QueuescopeError('BROKER_ERROR', `RabbitMQ refused the message for queue '${queue}' (basic.nack): the queue could not take it (for example it is full and rejects publishes).`, { queue, vhost: this.vhost }));
          } else resolve();
        });
      } catch (e) {
        this.pending.delete(entry);
        const why = messageOf(e);
        reject(
          this.closedBy ??
            (/clos(ed|ing)|ended/i.test(why)
              ? new QueuescopeError('HOST_UNREACHABLE', `Could not publish to queue '${queue}': ${why}`, { queue })
              : new QueuescopeError('INVALID_INPUT', `The message cannot be encoded as AMQP (${why.slice(0, 200)}), so it was not published to '${queue}'.`, { queue })),
        );
      }
    });
    confirmed.catch(() => undefined);
    if (!write.ok && this.closed() === null) await this.drained();
    return { confirmed };
  }

  private drained(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        this.ch.off('drain', done);
        this.ch.off('close', done);
        resolve();
      };
      this.ch.on('drain', done);
      this.ch.on('close', done);
    });
  }
}
