import { describe, expect, it } from 'vitest';
import { analyzeMessage, compareDuplicates, createQueueSummary, resolveInspectRules, summarizeQueue, checkSize, compileSnapshotPattern } from './index';
import { CORPUS, msg } from './fixtures/corpus';
import * as analyzeModule from './analyze';

const stream = (id: string, type: string, body: unknown) => msg({ id, queueId: 'stream:orders', headers: { type }, body });

describe('queue summary', () => {
  // The seeded stream: A-1001:charge is used by order.created and order.paid.
  const messages = [
    stream('1-0', 'order.created', { orderId: 'A-1001', operation: 'charge', amountCents: 4200, idempotencyKey: 'A-1001:charge' }),
    stream('2-0', 'order.created', { orderId: 'A-1002', operation: 'charge' }),
    stream('3-0', 'order.updated', { operation: 'charge', order: { id: 'A-1004', status: 'pending_payment', shippingAddress: { city: 'Lisboa' } } }),
    stream('4-0', 'order.paid', { orderId: 'A-1001', operation: 'charge', idempotencyKey: 'A-1001:charge' }),
    stream('5-0', 'order.created', { orderId: 'A-1005', operation: 'charge', idempotencyKey: '11111111-2222-4333-8444-555555555555' }),
    stream('6-0', 'order.created', { orderId: 'A-1005', operation: 'charge', idempotencyKey: '66666666-7777-4888-9999-000000000000' }),
  ];

  it('counts verdicts, duplicate groups, collisions and same payloads under different keys', () => {
    const s = summarizeQueue(messages);
    expect(s.total).toBe(6);
    expect(s.keyVerdicts).toEqual({ 'business-derived': 2, 'opaque-random': 2, 'time-derived': 0, 'period-key': 0, missing: 2 });
    expect(s.businessDerivedShare).toBeCloseTo(2 / 6);
    expect(s.flagged).toBe(1);
    expect(s.reasons[0]).toMatchObject({ rule: 'embedded-entity', count: 1, exampleIds: ['3-0'] });
    expect(s.duplicateGroups).toEqual([{ key: 'A-1001:charge', count: 2, exampleIds: ['1-0', '4-0'] }]);
    expect(s.duplicateMessages).toBe(1);
    expect(s.keyCollisions).toHaveLength(1);
    expect(s.keyCollisions[0]?.operations.map((o) => o.operation).sort()).toEqual(['order.created', 'order.paid']);
    expect(s.keyCollisions[0]?.reason).toContain('key `A-1001:charge` is used for `order.created` (1) and `order.paid` (1)');
    expect(s.samePayloadDifferentKeys).toHaveLength(1);
    expect(s.samePayloadDifferentKeys[0]).toMatchObject({ count: 2, distinctKeys: 2, exampleIds: ['5-0', '6-0'] });
    expect(s.samePayloadDifferentKeys[0]?.reason).toContain('2 messages carry the same payload under 2 different keys');
    expect(s.bounds.capped).toBe(false);
  });

  it('accepts analyses made earlier and gives the same result', () => {
    const acc = createQueueSummary();
    for (const m of messages) acc.add(analyzeMessage(m));
    expect(acc.result()).toEqual(summarizeQueue(messages));
  });

  it('caps tracked keys and says so', () => {
    const many = Array.from({ length: 50 }, (_, i) => msg({ id: `m${i}`, body: { orderId: `A-${i}`, idempotencyKey: `A-${i % 20}:x` } }));
    const s = summarizeQueue(many, { maxTracked: 10 });
    expect(s.total).toBe(50);
    expect(s.bounds).toMatchObject({ maxTracked: 10, trackedKeys: 10, capped: true });
    expect(s.bounds.note).toContain('lower bounds');
    expect(s.duplicateGroupCount).toBe(10);
  });
});

describe('compareDuplicates', () => {
  it('finds DLQ messages whose key is still in the source queue, and re-sent payloads under new keys', () => {
    const source = [msg({ id: 's1', properties: { messageId: 'A-1:charge' }, body: { orderId: 'A-1', op: 'charge' } }), msg({ id: 's2', properties: { messageId: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee' }, body: { orderId: 'A-2', op: 'charge' } })];
    const dlq = [
      msg({ id: 'd1', queueId: 'rabbitmq:%2F/orders.dlq', properties: { messageId: 'A-1:charge' }, body: { orderId: 'A-1', op: 'charge' } }),
      msg({ id: 'd2', queueId: 'rabbitmq:%2F/orders.dlq', properties: { messageId: 'ffffffff-bbbb-4ccc-8ddd-eeeeeeeeeeee' }, body: { orderId: 'A-2', op: 'charge' } }),
      msg({ id: 'd3', queueId: 'rabbitmq:%2F/orders.dlq', properties: { messageId: 'A-3:charge' }, body: { orderId: 'A-3', op: 'charge' } }),
    ];
    const c = compareDuplicates({ label: 'orders.work', messages: source }, { label: 'orders.dlq', messages: dlq });
    expect(c.a).toEqual({ label: 'orders.work', total: 2, withKey: 2 });
    expect(c.sharedKeys).toEqual([{ key: 'A-1:charge', countA: 1, countB: 1, exampleIdsA: ['s1'], exampleIdsB: ['d1'] }]);
    expect(c.messagesBWithKeyInA).toBe(1);
    expect(c.samePayloadDifferentKeys).toHaveLength(1);
    expect(c.samePayloadDifferentKeys[0]).toMatchObject({ exampleIdsA: ['s2'], exampleIdsB: ['d2'] });
    expect(c.reasons[0]).toContain('1 message in `orders.dlq` shares a key with `orders.work`');
    expect(c.reasons[1]).toContain('same payload');
  });
});

describe('rules', () => {
  it('resolves per-queue entries by glob, in order, skipping invalid ones', () => {
    const entries = [
      { queue: 'orders.*', rules: { snapshotFields: ['order.*'], keyRules: [{ kind: 'template', template: '{body.orderId}:{body.op}' }] } },
      { queue: 'orders.audit', rules: { queueIsSnapshot: true, maxMessageBytes: 65536 } },
      { queue: 'orders.audit', rules: { keyRules: [{ kind: 'bogus' }] } },
      'not an entry',
    ];
    expect(resolveInspectRules(entries, 'orders.audit')).toEqual({ keyRules: [{ kind: 'template', template: '{body.orderId}:{body.op}' }], snapshotFields: ['order.*'], queueIsSnapshot: true, maxMessageBytes: 65536 });
    expect(resolveInspectRules(entries, 'payments')).toEqual({ keyRules: [], snapshotFields: [], queueIsSnapshot: false });
  });

  it('compiles snapshot globs and refuses pathological ones', () => {
    expect(compileSnapshotPattern('body.order.items[*].sku')?.segs).toEqual(['order', 'items', '[]', 'sku']);
    expect(compileSnapshotPattern('**.**.**.a')?.segs).toEqual(['**', 'a']);
    expect(compileSnapshotPattern('a.**.b.**.c.**.d.**.e.**.f')).toBeNull();
    const a = analyzeMessage(msg({ body: { data: { order: { id: 'A', status: 'x', items: [{ sku: 'S', quantity: 1 }] } } } }), { rules: { snapshotFields: ['**.items[*]', 'order.status'] } });
    expect(a.verdict).toBe('ok');
    expect(a.payload.intentionalSnapshot.sort()).toEqual(['**.items[*]', 'order.status']);
  });
});

describe('size check', () => {
  it('uses the documented default limits per broker and version', () => {
    const big = msg({ queueId: 'rabbitmq:%2F/files', rawBody: 'x', sizeBytes: 20 * 1024 * 1024 });
    expect(checkSize(big, 'rabbitmq', undefined, '4.1.0')).toMatchObject({ limitBytes: 16 * 1024 * 1024, verdict: 'over-limit' });
    expect(checkSize(big, 'rabbitmq', undefined, '3.13.7')).toMatchObject({ limitBytes: 128 * 1024 * 1024, verdict: 'large' });
    expect(checkSize(msg({ queueId: 'sqs:x', rawBody: 'x', sizeBytes: 100 }), 'sqs')).toMatchObject({ limitBytes: 262_144, verdict: 'ok', reason: null });
    const redis = checkSize(msg({ queueId: 'bullmq:q', rawBody: 'x', sizeBytes: 300 * 1024 }), 'redis');
    expect(redis.limitBytes).toBeNull();
    expect(redis.reason).toContain('large payload: 300 KiB');
  });
});

describe('field annotations', () => {
  it('annotates each body field with its class and why', () => {
    const a = analyzeMessage(msg({ body: { orderId: 'A-1', amountCents: 100, order: { id: 'A-1', status: 'paid' }, createdAt: '2026-01-01T00:00:00Z', note: 'hi' } }));
    const byPath = Object.fromEntries(a.payload.fields.map((f) => [f.path, f.class]));
    expect(byPath).toMatchObject({
      'body.orderId': 'identifier',
      'body.amountCents': 'immutable-snapshot',
      'body.order': 'mutable-state',
      'body.order.id': 'identifier',
      'body.order.status': 'mutable-state',
      'body.createdAt': 'immutable-snapshot',
      'body.note': 'unknown',
    });
    expect(a.payload.fields.every((f) => f.why.length > 0)).toBe(true);
  });

  it('marks fields inside JSON carried in a string', () => {
    const a = analyzeMessage(msg({ body: { Type: 'Notification', MessageId: 'x', TopicArn: 'arn', Message: JSON.stringify({ customerId: 'C-1' }) } }));
    expect(a.payload.fields.find((f) => f.path === 'body.Message.customerId')).toMatchObject({ class: 'identifier', jsonIn: 'body.Message' });
  });

  it('verdict detail skips the annotations but keeps verdict and reasons', () => {
    const m = msg({ body: { order: { id: 'A-1', status: 'paid' } } });
    const full = analyzeMessage(m);
    const lean = analyzeMessage(m, { detail: 'verdict' });
    expect(lean.payload.fields).toEqual([]);
    expect(lean.reasons).toEqual(full.reasons);
    expect(lean.businessHash).toBe(full.businessHash);
  });
});

describe('analyzeForSummary (the summary path without sentences)', () => {
  const { analyzeForSummary } = analyzeModule;
  /** What the summary and compareDuplicates read of an analysis. */
  const readBySummary = (a: ReturnType<typeof analyzeMessage>) => ({
    messageId: a.messageId,
    key: a.key,
    keyVerdict: a.keyVerdict.verdict,
    verdict: a.verdict,
    payloadVerdict: a.payload.verdict,
    findings: a.payload.findings.map((f) => ({ rule: f.rule, severity: f.severity, text: f.severity === 'ok' ? null : f.text, fields: f.severity === 'ok' ? null : f.fields })),
    size: a.size,
    operation: a.operation,
    businessHash: a.businessHash,
  });

  it('gives what analyzeMessage gives for everything the summary reads (corpus, both detail levels, with and without rules)', () => {
    const rules = { keyRules: [{ kind: 'template' as const, template: '{body.orderId}:{body.operation}' }], snapshotFields: ['order.*'], queueIsSnapshot: false };
    let compared = 0;
    for (const f of CORPUS) {
      for (const options of [f.options ?? {}, { ...(f.options ?? {}), detail: 'verdict' as const }, { ...(f.options ?? {}), rules, detail: 'verdict' as const }]) {
        const full = analyzeMessage(f.message, options);
        const lean = analyzeForSummary(f.message, options);
        expect(readBySummary(lean)).toEqual(readBySummary(full));
        // Sentences built from the message are skipped; fixed ones (no key, analysis failed) cost nothing and stay.
        expect([full.keyVerdict.reason, '']).toContain(lean.keyVerdict.reason);
        expect(lean.reasons).toEqual([]);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(30);
  });

  it('is not what createQueueSummary().add() returns (callers show that analysis)', () => {
    const acc = createQueueSummary();
    for (const f of CORPUS) expect(acc.add(f.message)).toEqual(analyzeMessage(f.message, { detail: 'verdict' }));
  });

  it('leaves the summaries unchanged (duplicate groups, collisions, example reasons)', () => {
    const all = CORPUS.map((f) => f.message);
    const viaAnalyses = createQueueSummary();
    for (const m of [...all, ...all]) viaAnalyses.add(analyzeMessage(m, { detail: 'verdict' }));
    expect(summarizeQueue([...all, ...all])).toEqual(viaAnalyses.result());
  });
});
