import { describe, expect, it } from 'vitest';
import { QueuescopeError, type PeekPage, type QueueMessage, type QueueSummary } from '../../shared/domain';
import { classifyKey, extractIdempotencyKey } from '../../shared/analysis/idempotency';
import { checkTargetKeys, TargetKeyCollector, type TargetReader } from './target-keys';
import { redriveKeyOf } from './decider';

/**
 * The target-keys check's logic against in-memory queues (the real Redis, BullMQ and RabbitMQ
 * targets are in test/integration/redrive-target-keys.test.ts): refused messages do not count, the
 * key bound, a target that cannot be read never fails the plan.
 */

function queue(id: string, over: Partial<QueueSummary> = {}, sideEffects = false): QueueSummary {
  return {
    id,
    name: id.replace(/^list:/, ''),
    broker: 'redis',
    kind: 'redis-list',
    depth: 0,
    inFlight: null,
    delayed: null,
    consumers: null,
    counts: {},
    deadLetterTargets: [],
    deadLetterSources: [],
    isDeadLetterQueue: false,
    config: {},
    capabilities: {
      canPeekNonDestructively: !sideEffects,
      peekSideEffects: sideEffects ? [{ kind: 'redelivered-flag', description: 'Peeked messages are requeued with redelivered=true.' }] : [],
      peekMayDeadLetter: false,
      canPageFromCursor: !sideEffects,
      maxPeekWindow: 1000,
      peekStates: [],
    },
    ...over,
  };
}

function msg(id: string, key: string | null, queueId = 'list:dlq'): QueueMessage {
  const body = JSON.stringify(key === null ? { note: 'none' } : { idempotencyKey: key });
  return { id, queueId, queueName: queueId, position: 0, body: { encoding: 'utf8', data: body, sizeBytes: body.length, truncated: false }, headers: {}, properties: {}, meta: {} };
}

/** A reader over in-memory queues; `peek` pages from a numeric cursor, or throws `failPeek`. */
function reader(queues: Map<string, { q: QueueSummary; messages: QueueMessage[] }>, failPeek: Error | null = null): TargetReader & { peeks: number } {
  const r = {
    broker: 'redis' as const,
    peeks: 0,
    getQueue: (id: string): Promise<QueueSummary> => {
      const e = queues.get(id);
      return e === undefined ? Promise.reject(new QueuescopeError('QUEUE_NOT_FOUND', `no ${id}`)) : Promise.resolve(e.q);
    },
    peek: (id: string, o: { limit: number; cursor?: string | null }): Promise<PeekPage> => {
      r.peeks++;
      if (failPeek !== null) return Promise.reject(failPeek);
      const all = queues.get(id)?.messages ?? [];
      const from = Number(o.cursor ?? 0);
      const messages = all.slice(from, from + o.limit);
      const next = from + messages.length;
      return Promise.resolve({ messages, nextCursor: next < all.length ? String(next) : null, total: all.length, sideEffects: [] } as PeekPage);
    },
  };
  return r;
}

const dlq = queue('list:dlq');

describe('TargetKeyCollector', () => {
  it('counts the keys of a batch but those of the messages the mover refused, and messages without a key apart', () => {
    const c = new TargetKeyCollector([], () => true);
    c.see(msg('1', 'K-1'), 'list:work');
    c.see(msg('2', 'K-2'), 'list:work');
    c.see(msg('3', 'K-1'), 'list:work');
    c.see(msg('4', null), 'list:work');
    c.endBatch(new Set(['2']));
    const k = c.of('list:work');
    expect([...k.keys.entries()]).toEqual([['K-1', { dlqId: '1', count: 2 }]]);
    expect(k.withoutKey).toBe(1);
  });

  it('keeps at most maxKeys keys over all targets and counts the messages whose key it did not keep', () => {
    const c = new TargetKeyCollector([], () => true, 2);
    c.see(msg('1', 'K-1'), 'list:a');
    c.see(msg('2', 'K-2'), 'list:b');
    c.see(msg('3', 'K-3'), 'list:b');
    c.see(msg('4', 'K-2'), 'list:b');
    c.endBatch(new Set());
    expect(c.of('list:b').keys.get('K-2')?.count).toBe(2);
    expect(c.of('list:b').notKept).toBe(1);
  });

  it('does not key messages for a target it does not want', () => {
    const c = new TargetKeyCollector([], (id) => id !== 'list:skip');
    c.see(msg('1', 'K-1'), 'list:skip');
    c.endBatch(new Set());
    expect(c.of('list:skip').keys.size).toBe(0);
  });
});

describe('redriveKeyOf', () => {
  it("has no key exactly where classifyKey's verdict is missing (it skips the classification)", () => {
    const cases = [msg('a', 'K-1'), msg('b', null), msg('c', '   '), { ...msg('d', null), headers: { 'Idempotency-Key': ' ' } }, { ...msg('e', null), properties: { messageId: 'm-1' } }];
    for (const m of cases) {
      const ex = extractIdempotencyKey(m);
      const missing = ex === null || classifyKey(ex.key, m, ex).verdict === 'missing';
      expect(redriveKeyOf(m, []) === null).toBe(missing);
    }
    expect(redriveKeyOf(cases[0] as QueueMessage, [])).toBe('K-1');
  });
});

describe('checkTargetKeys', () => {
  it('a target whose read fails gets a note that the check could not run, and no warning', async () => {
    const work = queue('list:work');
    const c = new TargetKeyCollector([], () => true);
    c.see(msg('1', 'K-1'), work.id);
    c.endBatch(new Set());
    const r = reader(new Map([[work.id, { q: work, messages: [msg('w1', 'K-1', work.id)] }]]), new QueuescopeError('HOST_UNREACHABLE', 'Redis went away'));
    const out = await checkTargetKeys(r, [{ queueId: work.id, queueName: 'work', count: 1 }], c, { dlq, rules: [], maxBodyBytes: 1024 });
    expect(out.warnings).toEqual([]);
    expect(out.checks[0]).toMatchObject({ checked: false, duplicates: 0 });
    expect(out.notes[0]).toContain('the check could not run: reading work failed (Redis went away)');
  });

  it('a cancelled read cancels the plan', async () => {
    const work = queue('list:work');
    const c = new TargetKeyCollector([], () => true);
    c.see(msg('1', 'K-1'), work.id);
    c.endBatch(new Set());
    const r = reader(new Map([[work.id, { q: work, messages: [] }]]), new QueuescopeError('CANCELLED', 'cancelled'));
    await expect(checkTargetKeys(r, [{ queueId: work.id, queueName: 'work', count: 1 }], c, { dlq, rules: [], maxBodyBytes: 1024 })).rejects.toMatchObject({ code: 'CANCELLED' });
  });

  it('a target with read side effects is not read; an absent one holds nothing; the DLQ itself is not compared with itself', async () => {
    const rabbit = queue('rabbitmq:%2F/work', { broker: 'rabbitmq', kind: 'rabbitmq-classic', name: 'work' }, true);
    const c = new TargetKeyCollector([], () => true);
    for (const t of [rabbit.id, 'list:absent', dlq.id]) c.see(msg(`m-${t}`, 'K-1'), t);
    c.endBatch(new Set());
    const r = reader(new Map([[rabbit.id, { q: rabbit, messages: [msg('w1', 'K-1', rabbit.id)] }], [dlq.id, { q: dlq, messages: [msg('m', 'K-1')] }]]));
    const out = await checkTargetKeys(
      r,
      [
        { queueId: rabbit.id, queueName: 'work', count: 1 },
        { queueId: 'list:absent', queueName: 'absent', count: 1 },
        { queueId: dlq.id, queueName: 'dlq', count: 1 },
      ],
      c,
      { dlq, rules: [], maxBodyBytes: 1024 },
    );
    expect(r.peeks).toBe(0);
    expect(out.warnings).toEqual([]);
    expect(out.checks.map((k) => [k.queueName, k.checked, k.read])).toEqual([
      ['work', false, 0],
      ['absent', true, 0],
      ['dlq', false, 0],
    ]);
    expect(out.checks[0]?.note).toContain('were not checked: reading work has side effects (Peeked messages are requeued with redelivered=true)');
    expect(out.checks[2]?.note).toContain('dlq is the dead-letter queue itself');
  });

  it('reads at most maxRead messages and says the check covered only those', async () => {
    const work = queue('list:work');
    const c = new TargetKeyCollector([], () => true);
    c.see(msg('1', 'K-late'), work.id);
    c.endBatch(new Set());
    const waiting = [...Array.from({ length: 30 }, (_, i) => msg(`w${String(i)}`, `F-${String(i)}`, work.id)), msg('w-late', 'K-late', work.id)];
    const out = await checkTargetKeys(reader(new Map([[work.id, { q: work, messages: waiting }]])), [{ queueId: work.id, queueName: 'work', count: 1 }], c, { dlq, rules: [], maxBodyBytes: 1024, maxRead: 30 });
    expect(out.checks[0]).toMatchObject({ checked: true, read: 30, partial: true, duplicates: 0 });
    expect(out.notes[0]).toContain('The check covered the first 30');
  });
});
