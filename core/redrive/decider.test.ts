import { describe, expect, it } from 'vitest';
import type { QueueMessage, QueueSummary } from '../../shared/domain';
import { Decider, recentlyDelivered, type DeciderOptions } from './decider';

/** The "held" rule: pending entries delivered less than a minute ago stay unless included, after the selection and target checks, before one-per-key. */

const dlq: QueueSummary = {
  id: 'stream:orders-dlq',
  name: 'orders-dlq',
  broker: 'redis',
  kind: 'redis-stream',
  depth: 4,
  inFlight: 2,
  delayed: null,
  consumers: 1,
  counts: {},
  deadLetterTargets: [],
  deadLetterSources: [],
  isDeadLetterQueue: true,
  capabilities: { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: 1000, peekStates: ['all', 'pending:alerts'] },
  config: {},
};
const work: QueueSummary = { ...dlq, id: 'stream:orders', name: 'orders', isDeadLetterQueue: false };

function entry(id: string, meta: QueueMessage['meta'], body = '{"orderId":"A-1","idempotencyKey":"A-1:charge"}'): QueueMessage {
  return { id, queueId: dlq.id, queueName: dlq.name, position: null, body: { encoding: 'utf8', data: body, sizeBytes: body.length, truncated: false }, headers: { error: 'HTTP 503' }, properties: {}, meta };
}

function decider(over: Partial<DeciderOptions> = {}): Decider {
  return new Decider({
    dlq,
    selection: { kind: 'all' },
    includeNonRetryable: false,
    dedupeByKey: false,
    keyRules: [],
    targetQueueId: work.id,
    confirmLoop: false,
    queues: new Map([[work.id, work]]),
    mover: { resolveTarget: () => null },
    now: 0,
    ...over,
  });
}

const fresh = { state: 'pending', consumerGroup: 'alerts', consumer: 'pager', idleMs: 1500, receiveCount: 1 };
const stale = { state: 'pending', consumerGroup: 'alerts', consumer: 'dead', idleMs: 7_200_000, receiveCount: 1 };

describe('Decider: entries a consumer holds', () => {
  it('leaves an entry delivered 1.5 s ago (held), moves one idle for 2 h and one not pending', () => {
    const d = decider();
    expect(d.decide(entry('1-0', fresh))).toEqual({ action: 'skip', held: true, reason: 'held: pending in consumer group "alerts" (consumer "pager", delivered 2 s ago, not acknowledged): likely being processed now — include pending entries to move it' });
    expect(d.decide(entry('2-0', stale))).toEqual({ action: 'move', targetQueueId: work.id });
    expect(d.decide(entry('3-0', { state: 'new' }))).toEqual({ action: 'move', targetQueueId: work.id });
    expect(d.skipReasons()).toEqual([{ reason: 'held: pending in group "alerts", delivered < 60 s ago (likely being processed now)', category: 'held', count: 1 }]);
  });

  it('moves it with includePending', () => {
    expect(decider({ includePending: true }).decide(entry('1-0', fresh))).toEqual({ action: 'move', targetQueueId: work.id });
  });

  it('an entry not selected is counted as not selected, not as held; a held one does not take its idempotency key', () => {
    const d = decider({ selection: { kind: 'ids', ids: ['2-0'] } });
    expect(d.decide(entry('1-0', fresh)).action === 'skip' && d.skipReasons()[0]?.category).toBe('not picked');
    const k = decider({ dedupeByKey: true });
    expect(k.decide(entry('1-0', fresh))).toMatchObject({ action: 'skip', held: true });
    expect(k.decide(entry('2-0', {}))).toEqual({ action: 'move', targetQueueId: work.id });
  });

  it('with pendingMinIdleMs 3 h the entry idle for 2 h stays too; with 1 s the one delivered 1.5 s ago moves', () => {
    const d = decider({ pendingMinIdleMs: 3 * 3_600_000 });
    expect(d.decide(entry('2-0', stale))).toMatchObject({ action: 'skip', held: true });
    expect(d.skipReasons()).toEqual([{ reason: 'held: pending in group "alerts", delivered < 3 h ago (likely being processed now)', category: 'held', count: 1 }]);
    expect(decider({ pendingMinIdleMs: 1000 }).decide(entry('1-0', fresh))).toEqual({ action: 'move', targetQueueId: work.id });
    expect(decider({ pendingMinIdleMs: 1500 }).decide(entry('1-0', fresh))).toEqual({ action: 'move', targetQueueId: work.id });
    expect(decider({ pendingMinIdleMs: 1501 }).decide(entry('1-0', fresh))).toMatchObject({ action: 'skip', held: true });
  });

  it('recentlyDelivered needs state pending and an idle time under 60 s', () => {
    expect(recentlyDelivered(entry('1', { state: 'pending', idleMs: 59_999 }))).toBe(true);
    expect(recentlyDelivered(entry('1', { state: 'pending', idleMs: 60_000 }))).toBe(false);
    expect(recentlyDelivered(entry('1', { state: 'pending', idleMs: null }))).toBe(false);
    expect(recentlyDelivered(entry('1', { state: 'delivered', idleMs: 5 }))).toBe(false);
  });
});
