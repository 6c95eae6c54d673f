import type { Redis } from 'ioredis';
import type { Queue } from 'bullmq';
import { QueuescopeError, type PeekOptions, type QueueCapabilities } from '../../../shared/domain';
import type { RedisEndpoint } from './connection';
import { DEFAULT_MAX_BODY_BYTES } from './body';

/** What the per-kind modules (streams, lists, BullMQ) need from the adapter. */
export interface RedisContext {
  readonly endpoint: RedisEndpoint;
  /** The shared, connected ioredis client (connects on first use). @throws QueuescopeError mapped connection errors, `CANCELLED`. */
  client(signal?: AbortSignal): Promise<Redis>;
  /** A BullMQ `Queue` for reading counts, cached per prefix+name and sharing {@link client}'s connection. */
  bullQueue(prefix: string, name: string, signal?: AbortSignal): Promise<Queue>;
}

/** Largest page a peek returns. */
export const MAX_PEEK = 1000;

export { throwIfAborted } from '../../lib/abort';

/** The `QUEUE_NOT_FOUND` error for a queue id, with the reason in words. */
export function notFound(queueId: string, why: string): QueuescopeError {
  return new QueuescopeError('QUEUE_NOT_FOUND', `Queue ${queueId} was not found: ${why}.`, { queueId });
}

/** Validated common peek options. */
export interface NormalisedPeek {
  limit: number;
  direction: 'oldest' | 'newest';
  maxBodyBytes: number;
}

/**
 * Checks the options every Redis peek shares.
 * @throws QueuescopeError `INVALID_INPUT` for a limit outside 1–1000, an unknown direction or a negative body limit.
 */
export function normalisePeek(options: PeekOptions): NormalisedPeek {
  const { limit } = options;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PEEK) {
    throw new QueuescopeError('INVALID_INPUT', `Peek limit must be a whole number from 1 to ${MAX_PEEK}, got ${String(limit)}.`);
  }
  const direction: unknown = options.direction ?? 'oldest';
  if (direction !== 'oldest' && direction !== 'newest') {
    throw new QueuescopeError('INVALID_INPUT', `Peek direction must be "oldest" or "newest", got "${String(direction).slice(0, 40)}".`);
  }
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 0) {
    throw new QueuescopeError('INVALID_INPUT', `maxBodyBytes must be a whole number of bytes ≥ 0, got ${String(maxBodyBytes)}.`);
  }
  return { limit, direction, maxBodyBytes };
}

/** Capabilities shared by every Redis queue kind: reads are XRANGE / LRANGE / HGETALL, which change nothing. */
export function redisCapabilities(peekStates: string[]): QueueCapabilities {
  return {
    canPeekNonDestructively: true,
    peekSideEffects: [],
    peekMayDeadLetter: false,
    canPageFromCursor: true,
    maxPeekWindow: MAX_PEEK,
    peekStates,
  };
}

/** Turns ioredis' flat `[k1, v1, k2, v2…]` replies (XINFO) into an object. */
export function pairs(reply: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!Array.isArray(reply)) return out;
  for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = reply[i + 1];
  return out;
}

/** A number from a Redis reply value, or null. */
export function num(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' && v !== '') {
    const n = Number(v);
    return Number.isFinite(n) ? n : null;
  }
  if (Buffer.isBuffer(v)) return num(v.toString('latin1'));
  return null;
}

/** A string from a Redis reply value (Buffer or string), or null. */
export function str(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  if (typeof v === 'number') return String(v);
  return null;
}
