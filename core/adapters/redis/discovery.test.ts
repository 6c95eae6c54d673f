import { describe, expect, it } from 'vitest';
import { bullmqCandidateOf, globToRegExp, insideNamespace } from './discovery';
import { formatQueueId, parseQueueId } from './ids';
import { looksLikeDeadLetterName } from './naming';

describe('BullMQ key shapes', () => {
  it('finds prefix and queue name from the right (prefixes may contain ":")', () => {
    expect(bullmqCandidateOf('bull:payments:meta')).toEqual({ prefix: 'bull', name: 'payments' });
    expect(bullmqCandidateOf('myapp:{bull}:emails:wait')).toEqual({ prefix: 'myapp:{bull}', name: 'emails' });
    expect(bullmqCandidateOf('bull:payments:waiting-children')).toEqual({ prefix: 'bull', name: 'payments' });
    expect(bullmqCandidateOf('bull:payments:123')).toBeNull();
    expect(bullmqCandidateOf('payments:meta')).toBeNull();
    expect(bullmqCandidateOf('orders')).toBeNull();
  });

  it('tells BullMQ-internal keys apart', () => {
    const ns = new Set(['bull:payments', 'a:b:c']);
    expect(insideNamespace('bull:payments:123', ns)).toBe(true);
    expect(insideNamespace('bull:payments:123:logs', ns)).toBe(true);
    expect(insideNamespace('a:b:c:events', ns)).toBe(true);
    expect(insideNamespace('bull:paymentsX:1', ns)).toBe(false);
    expect(insideNamespace('bull:payments', ns)).toBe(false);
  });
});

describe('queue ids', () => {
  it('round-trip, with ":" in prefixes and keys', () => {
    for (const ref of [
      { kind: 'bullmq' as const, prefix: 'a:b', name: 'payments' },
      { kind: 'stream' as const, key: 'orders:eu:stream' },
      { kind: 'list' as const, key: 'emails:outbox' },
    ]) {
      expect(parseQueueId(formatQueueId(ref))).toEqual(ref);
    }
    expect(() => parseQueueId('sqs:https://x')).toThrow(/not a queue on this Redis connection/);
    expect(() => parseQueueId('bullmq:nocolon')).toThrow();
  });
});

describe('globs and names', () => {
  it('matches * and ? only', () => {
    expect(globToRegExp('emails:*').test('emails:outbox')).toBe(true);
    expect(globToRegExp('emails:*').test('xemails:outbox')).toBe(false);
    expect(globToRegExp('a.b?').test('a.bc')).toBe(true);
    expect(globToRegExp('a.b?').test('axbc')).toBe(false);
    expect(globToRegExp('(x)[y]').test('(x)[y]')).toBe(true);
  });

  it('recognises dead-letter names', () => {
    for (const n of ['orders-dlq', 'dlq:orders', 'emails.dead-letter', 'jobs_deadletters']) expect(looksLikeDeadLetterName(n)).toBe(true);
    for (const n of ['orders', 'dlqueue-stats', 'headless']) expect(looksLikeDeadLetterName(n)).toBe(false);
  });
});
