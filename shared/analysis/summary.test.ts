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

  it('a user jsonPath key on the order id keeps the order id in the payload: different orders are not "the same payload"', () => {
    const orders = ['A-1101', 'A-1102', 'A-1103'].map((orderId, i) => stream(`${String(i + 10)}-0`, 'order.created', { orderId, operation: 'charge', amountCents: 1200, currency: 'EUR' }));
    const s = summarizeQueue(orders, { rules: { keyRules: [{ kind: 'jsonPath', path: 'body.orderId' }] } });
    expect(s.keyVerdicts['business-derived']).toBe(3);
    expect(s.samePayloadDifferentKeys).toEqual([]);
    expect(s.duplicateGroups).toEqual([]);
  });

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

describe('key collisions: spellings of one operation are one operation', () => {
  /** A RabbitMQ message with key `key` (AMQP message_id), an optional AMQP `type`, and a body. */
  const amqp = (id: string, key: string, body: unknown, type?: string) => msg({ id, properties: type === undefined ? { messageId: key } : { messageId: key, type }, body });
  const charge = { orderId: 'C-1', operation: 'charge' };

  it('does not report `order.charge` (AMQP type) and `charge` (body) under one key as different operations', () => {
    const s = summarizeQueue([amqp('a', 'C-1:charge', charge, 'order.charge'), amqp('b', 'C-1:charge', charge)]);
    expect(analyzeMessage(amqp('a', 'C-1:charge', charge, 'order.charge')).operation).toBe('order.charge');
    expect(s.keyCollisionCount).toBe(0);
    expect(s.keyCollisions).toEqual([]);
    // Still one duplicate group: the same operation twice under one key.
    expect(s.duplicateGroups).toEqual([{ key: 'C-1:charge', count: 2, exampleIds: ['a', 'b'] }]);
  });

  it('treats names equal but for case, separators or camelCase as one operation', () => {
    for (const [x, y] of [
      ['Charge', 'charge'],
      ['OrderCharge', 'order_charge'],
      ['order/charge', 'order-charge'],
      ['order:charge', 'order charge'],
      ['charge', 'payments.order.Charge'],
    ] as const) {
      const s = summarizeQueue([amqp('a', 'K-1', { orderId: 'K' }, x), amqp('b', 'K-1', { orderId: 'K' }, y)]);
      expect({ x, y, collisions: s.keyCollisionCount }).toEqual({ x, y, collisions: 0 });
    }
  });

  it('still reports different operations, named by the first spelling seen', () => {
    const s = summarizeQueue([amqp('a', 'C-1', charge, 'order.charge'), amqp('b', 'C-1', charge, 'charge'), amqp('c', 'C-1', charge, 'order.refund'), amqp('d', 'C-1', charge, 'Order.Refund')]);
    expect(s.keyCollisionCount).toBe(1);
    expect(s.keyCollisions[0]?.operations).toEqual([
      { operation: 'order.charge', count: 2, exampleIds: ['a', 'b'] },
      { operation: 'order.refund', count: 2, exampleIds: ['c', 'd'] },
    ]);
    expect(s.keyCollisions[0]?.reason).toContain('key `C-1` is used for `order.charge` (2) and `order.refund` (2)');
  });

  it('a name joins a group only when it is the same operation as every spelling in it', () => {
    // `refund.charge` contains `charge` but not `order.charge`'s words: a different operation from that group.
    const s = summarizeQueue([amqp('a', 'C-1', charge, 'charge'), amqp('b', 'C-1', charge, 'order.charge'), amqp('c', 'C-1', charge, 'refund.charge')]);
    expect(s.keyCollisions[0]?.operations.map((o) => [o.operation, o.count])).toEqual([
      ['charge', 2],
      ['refund.charge', 1],
    ]);
  });

  it('gives the same result for analyses made earlier', () => {
    const ms = [amqp('a', 'C-1', charge, 'order.charge'), amqp('b', 'C-1', charge), amqp('c', 'C-2', charge, 'Charge'), amqp('d', 'C-2', charge, 'refund')];
    const acc = createQueueSummary();
    for (const m of ms) acc.add(analyzeMessage(m, { detail: 'verdict' }));
    const s = acc.result();
    expect(s).toEqual(summarizeQueue(ms));
    expect(s.keyCollisions.map((c) => c.key)).toEqual(['C-2']);
  });
});

describe('identical payloads without an idempotency key', () => {
  const order = { orderId: 'N-1', amountCents: 500, currency: 'EUR' };

  it('reports two messages with the same payload and no key', () => {
    const ms = [msg({ id: 'n1', body: order }), msg({ id: 'n2', body: { currency: 'EUR', amountCents: 500, orderId: 'N-1' } }), msg({ id: 'n3', body: { ...order, amountCents: 600 } })];
    expect(ms.map((m) => analyzeMessage(m).key)).toEqual([null, null, null]);
    const s = summarizeQueue(ms);
    expect(s.samePayloadDifferentKeysCount).toBe(1);
    expect(s.samePayloadDifferentKeys[0]).toMatchObject({ count: 2, keys: [], distinctKeys: 0, withoutKey: 2, exampleIds: ['n1', 'n2'] });
    expect(s.samePayloadDifferentKeys[0]?.reason).toBe(
      '2 messages carry the same payload without an idempotency key: a consumer cannot tell a redelivered or re-sent copy from a new operation; send a key derived from the business data.',
    );
  });

  it('reports a copy without a key of a message with one', () => {
    const s = summarizeQueue([msg({ id: 'k1', properties: { messageId: 'N-1:charge' }, body: order }), msg({ id: 'n1', body: order }), msg({ id: 'n2', body: order })]);
    expect(s.samePayloadDifferentKeys).toHaveLength(1);
    expect(s.samePayloadDifferentKeys[0]).toMatchObject({ count: 3, keys: ['N-1:charge'], distinctKeys: 1, withoutKey: 2, exampleIds: ['k1', 'n1', 'n2'] });
    expect(s.samePayloadDifferentKeys[0]?.reason).toContain('3 messages carry the same payload, 2 without an idempotency key and 1 under one key');
  });

  it('names both problems when copies without a key and under different keys meet', () => {
    const s = summarizeQueue([msg({ id: 'n1', body: order }), msg({ id: 'k1', properties: { messageId: 'N-1:a' }, body: order }), msg({ id: 'k2', properties: { messageId: 'N-1:b' }, body: order })]);
    expect(s.samePayloadDifferentKeys[0]).toMatchObject({ count: 3, keys: ['N-1:a', 'N-1:b'], distinctKeys: 2, withoutKey: 1, exampleIds: ['n1', 'k1', 'k2'] });
    expect(s.samePayloadDifferentKeys[0]?.reason).toBe(
      '3 messages carry the same payload, 1 without an idempotency key and 2 under 2 different keys: the copy without a key is not recognised as a duplicate, nor are those under different keys.',
    );
  });

  it('leaves out single messages without a key and copies under one key (those are duplicate groups)', () => {
    const s = summarizeQueue([msg({ id: 'n1', body: order }), msg({ id: 'k1', properties: { messageId: 'K' }, body: { orderId: 'X' } }), msg({ id: 'k2', properties: { messageId: 'K' }, body: { orderId: 'X' } })]);
    expect(s.samePayloadDifferentKeysCount).toBe(0);
    expect(s.duplicateGroupCount).toBe(1);
  });

  it('keeps the payloads without a key within maxTracked', () => {
    const ms = Array.from({ length: 12 }, (_, i) => msg({ id: `n${i}`, body: { orderId: `N-${i % 8}` } }));
    const s = summarizeQueue(ms, { maxTracked: 5 });
    expect(s.bounds).toMatchObject({ trackedKeys: 0, trackedPayloads: 5, capped: true });
    // N-0…N-3 repeat (n8…n11), N-4 is tracked once; N-5…N-7 are beyond the cap.
    expect(s.samePayloadDifferentKeysCount).toBe(4);
    expect(s.bounds.note).toContain('3 messages with new payloads');
    expect(s.bounds.note).not.toContain('0 messages');
  });
});

describe('summary sentences', () => {
  it('agree in number', () => {
    const c = compareDuplicates(
      { label: 'orders', messages: [msg({ id: 's1', properties: { messageId: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee' }, body: { orderId: 'A-2' } })] },
      { label: 'orders.dlq', messages: [msg({ id: 'd1', properties: { messageId: 'ffffffff-bbbb-4ccc-8ddd-eeeeeeeeeeee' }, body: { orderId: 'A-2' } })] },
    );
    expect(c.reasons).toEqual([
      '1 message in `orders.dlq` carries the same payload as a message in `orders` under a different key: the keys are not derived from the business data, so this copy is not recognised as a duplicate.',
    ]);
  });

  it('say when a side has no messages', () => {
    const one = [msg({ id: 's1', body: { orderId: 'A-2' } })];
    expect(compareDuplicates({ label: 'orders', messages: one }, { label: 'orders.dlq', messages: [] }).reasons).toEqual(['`orders.dlq` has no messages to compare with `orders`.']);
    expect(compareDuplicates({ label: 'orders', messages: [] }, { label: 'orders.dlq', messages: one }).reasons).toEqual(['`orders` has no messages: nothing in `orders.dlq` can repeat one of its keys or payloads.']);
  });
});

describe('createQueueSummary({ sentences: false })', () => {
  const { analyzeForSummary } = analyzeModule;
  const stream = (id: string, type: string, body: unknown) => msg({ id, queueId: 'stream:orders', headers: { type }, body });
  const mixed = [
    ...CORPUS.map((f) => f.message),
    stream('1-0', 'order.created', { orderId: 'A-1001', operation: 'charge', idempotencyKey: 'A-1001:charge' }),
    stream('2-0', 'order.paid', { orderId: 'A-1001', operation: 'charge', idempotencyKey: 'A-1001:charge' }),
    stream('3-0', 'order.updated', { order: { id: 'A-1004', status: 'pending_payment' } }),
    stream('4-0', 'order.updated', { order: { id: 'A-1004', status: 'pending_payment' } }),
    msg({ id: 'big', queueId: 'sqs:orders', rawBody: JSON.stringify({ orderId: 'A-9', blob: 'x'.repeat(300 * 1024) }) }),
  ];

  it('gives the same summary as with sentences', () => {
    const withSentences = createQueueSummary();
    const without = createQueueSummary({ sentences: false });
    for (const m of [...mixed, ...mixed]) {
      withSentences.add(m);
      without.add(m);
    }
    const s = without.result();
    expect(s).toEqual(withSentences.result());
    expect(s).toEqual(summarizeQueue([...mixed, ...mixed]));
    expect(s.verdicts.flag).toBeGreaterThan(0);
    expect(s.largePayloads).toBeGreaterThanOrEqual(2);
    expect(s.keyCollisionCount).toBeGreaterThanOrEqual(1);
    expect(s.samePayloadDifferentKeysCount).toBeGreaterThanOrEqual(1);
  });

  it('returns analyses with the verdicts, keys, hashes and flag/review findings of analyzeMessage, without the other sentences', () => {
    const rules = { keyRules: [{ kind: 'template' as const, template: '{body.orderId}:{body.operation}' }], snapshotFields: ['order.*'], queueIsSnapshot: false };
    let jsonSeen = 0;
    let otherSeen = 0;
    for (const options of [{}, { detail: 'full' as const }, { rules }]) {
      const acc = createQueueSummary({ ...options, sentences: false });
      for (const m of mixed) {
        const lean = acc.add(m);
        const full = analyzeMessage(m, { detail: 'verdict', ...options });
        expect(lean).toEqual(analyzeForSummary(m, { detail: 'verdict', ...options }));
        expect({ key: lean.key, keyVerdict: lean.keyVerdict.verdict, verdict: lean.verdict, payload: lean.payload.verdict, label: lean.payload.label, size: lean.size, operation: lean.operation, businessHash: lean.businessHash }).toEqual({
          key: full.key,
          keyVerdict: full.keyVerdict.verdict,
          verdict: full.verdict,
          payload: full.payload.verdict,
          label: full.payload.label,
          size: full.size,
          operation: full.operation,
          businessHash: full.businessHash,
        });
        expect(lean.payload.fields).toEqual(full.payload.fields);
        expect(lean.payload.findings.filter((f) => f.severity !== 'ok')).toEqual(full.payload.findings.filter((f) => f.severity !== 'ok'));
        expect(lean.payload.findings.map((f) => [f.rule, f.severity])).toEqual(full.payload.findings.map((f) => [f.rule, f.severity]));
        // What it lacks (SummaryOptions.sentences): sentences built from the message.
        expect([full.keyVerdict.reason, '']).toContain(lean.keyVerdict.reason);
        expect(lean.reasons).toEqual([]);
        const json = lean.payload.format === 'json';
        expect(lean.payload.reasons).toEqual(json ? [] : full.payload.reasons);
        expect(lean.payload.findings.filter((f) => f.severity === 'ok').map((f) => f.text)).toEqual(full.payload.findings.filter((f) => f.severity === 'ok').map((f) => (json ? '' : f.text)));
        if (json) jsonSeen++;
        else otherSeen++;
      }
    }
    expect(jsonSeen).toBeGreaterThan(30);
    expect(otherSeen).toBeGreaterThan(0);
  });

  it('builds no sentences the summary drops, and uses analyses passed in as they are', () => {
    const acc = createQueueSummary({ sentences: false });
    const m = msg({ id: 'k', properties: { messageId: 'A-1:charge' }, body: { orderId: 'A-1', operation: 'charge' } });
    expect(acc.add(m).keyVerdict).toEqual({ verdict: analyzeMessage(m).keyVerdict.verdict, reason: '' });
    const made = analyzeMessage(m);
    expect(acc.add(made)).toBe(made);
    expect(createQueueSummary().add(m).keyVerdict.reason.length).toBeGreaterThan(0);
  });
});
