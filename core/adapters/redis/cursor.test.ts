import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { QueuescopeError } from '../../../shared/domain';
import { decodeCursor, encodeCursor } from './cursor';

const at = { queueId: 'stream:orders', state: 'all', direction: 'oldest' as const };

describe('peek cursors', () => {
  it('round-trip', () => {
    const c = { v: 1 as const, q: 'stream:orders', s: 'all', d: 'oldest' as const, n: 1000, id: '1700000000000-5' };
    expect(decodeCursor(encodeCursor(c), at)).toEqual(c);
  });

  it('refuse a cursor of another queue, state or direction', () => {
    const c = encodeCursor({ v: 1, q: 'stream:orders', s: 'all', d: 'oldest', n: 1, id: '1-0' });
    for (const other of [{ ...at, queueId: 'stream:x' }, { ...at, state: 'pending:g' }, { ...at, direction: 'newest' as const }]) {
      expect(() => decodeCursor(c, other)).toThrow(QueuescopeError);
    }
  });

  it('say what to do in words that fit the CLI and the app (no "cursor null")', () => {
    for (const [raw, where] of [['garbage!', at], [Buffer.from('{"v":2}').toString('base64url'), at], [encodeCursor({ v: 1, q: 'stream:x', s: 'all', d: 'oldest', n: 1, id: '1-0' }), at]] as const) {
      let message = '';
      try {
        decodeCursor(raw, where);
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toMatch(/first page/);
      expect(message).not.toMatch(/null/);
    }
  });

  it('turn any garbage into INVALID_INPUT, never another error', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.base64String(), fc.json().map((j) => Buffer.from(j).toString('base64url'))), (s) => {
        try {
          decodeCursor(s, at);
        } catch (e) {
          expect(e).toBeInstanceOf(QueuescopeError);
          expect((e as QueuescopeError).code).toBe('INVALID_INPUT');
        }
      }),
    );
  });
});
