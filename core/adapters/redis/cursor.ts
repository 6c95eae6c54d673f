import { z } from 'zod';
import { QueuescopeError } from '../../../shared/domain';

const cursorSchema = z
  .object({
    v: z.literal(1),
    /** Queue id the cursor belongs to. */
    q: z.string(),
    /** Peek state (`all`, `pending:<group>`, BullMQ state, `list`). */
    s: z.string(),
    d: z.enum(['oldest', 'newest']),
    /** Messages returned so far (positions continue from here). */
    n: z.number().int().min(0),
    /** Last stream entry id returned (exclusive start of the next page). */
    id: z.string().max(64).optional(),
    /** Index offset of the next element (lists, BullMQ states). */
    o: z.number().int().min(0).optional(),
    /** Last BullMQ job id returned, used to re-find the position when the state changed meanwhile. */
    j: z.string().max(1024).optional(),
    /**
     * Lists: content hashes (first 8 hex of SHA-1, as in the entry ids) of the last entries returned,
     * oldest read first, the last one being the entry just before `o`; used to check the list did
     * not move between pages and to re-align when it did (see `peekList`).
     */
    h: z.array(z.string().regex(/^[0-9a-f]{8}$/)).min(1).max(16).optional(),
    /** Lists: LLEN when the previous page was read. */
    l: z.number().int().min(0).optional(),
    /** Lists: content hash of the entry at the end read from (rank 0) when the previous page was read. */
    f: z.string().regex(/^[0-9a-f]{8}$/).optional(),
  })
  .strict();

/** The decoded form of an opaque Redis peek cursor. */
export type RedisCursor = z.infer<typeof cursorSchema>;

/** Encodes a cursor as an opaque base64url string. */
export function encodeCursor(c: RedisCursor): string {
  return Buffer.from(JSON.stringify(c), 'utf8').toString('base64url');
}

/**
 * Decodes and validates a cursor produced by {@link encodeCursor} for this queue, state and direction.
 * @throws QueuescopeError `INVALID_INPUT` when the string is not such a cursor, or belongs to another queue/state/direction.
 */
export function decodeCursor(raw: string, expect: { queueId: string; state: string; direction: 'oldest' | 'newest' }): RedisCursor {
  let parsed: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(raw) || raw.length > 4096) throw new Error('not base64url');
    parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw new QueuescopeError('INVALID_INPUT', 'The peek cursor is not one this Redis adapter produced: start again from the first page, without a cursor.');
  }
  const r = cursorSchema.safeParse(parsed);
  if (!r.success) throw new QueuescopeError('INVALID_INPUT', 'The peek cursor is malformed: start again from the first page, without a cursor.');
  const c = r.data;
  if (c.q !== expect.queueId || c.s !== expect.state || c.d !== expect.direction) {
    throw new QueuescopeError(
      'INVALID_INPUT',
      'The peek cursor belongs to another queue, state or direction: pass the cursor returned for the same queue, state and direction, or start again from the first page without one.',
    );
  }
  return c;
}
