import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { HeaderValue } from '../domain';
import { analyzeMessage, compareDuplicates, summarizeQueue, type InspectRules } from './index';
import { msg } from './fixtures/corpus';

const VERDICTS = ['ok', 'review', 'flag'];
const CLASSES = ['identifier', 'mutable-state', 'immutable-snapshot', 'unknown'];

/** JSON values with the member names the rules look at, plus prototype-sensitive names. */
const name = fc.oneof(
  fc.constantFrom('id', 'orderId', 'status', 'order', 'items', 'shippingAddress', 'email', 'data', 'payload', 'detail', 'Message', 'args', 'kwargs', 'specversion', 'type', 'occurredAt', 'snapshot', 'newAddress', 'command', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'detail-type', 'source', 'object', 'class', 'task', 'idempotencyKey', 'dedup_key'),
  fc.string({ maxLength: 12 }),
);
const json: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, fc.string({ maxLength: 20 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null), tie('object'), tie('array'), tie('jsonString')),
  object: fc.dictionary(name, tie('value'), { maxKeys: 6 }),
  array: fc.array(tie('value'), { maxLength: 5 }),
  jsonString: tie('object').map((o) => JSON.stringify(o)),
})).value;

const rules: fc.Arbitrary<Partial<InspectRules>> = fc.record(
  {
    snapshotFields: fc.array(fc.oneof(fc.constantFrom('order.*', '**', '**.status', 'items[*]', '__proto__', 'a.**.b.**.c'), fc.string({ maxLength: 10 })), { maxLength: 3 }),
    queueIsSnapshot: fc.boolean(),
    maxMessageBytes: fc.oneof(fc.integer({ min: -5, max: 2 ** 32 }), fc.constant(Number.NaN)),
    keyRules: fc.array(fc.oneof(fc.record({ kind: fc.constant('jsonPath' as const), path: fc.constantFrom('body.id', 'body.__proto__', 'body.a[0]') }), fc.record({ kind: fc.constant('template' as const), template: fc.constantFrom('{body.orderId}:{body.type}', '{}') })), { maxLength: 2 }),
  },
  { requiredKeys: [] },
);

const RANK: Record<string, number> = { flag: 2, review: 1, ok: 0 };

function checkAnalysis(a: ReturnType<typeof analyzeMessage>): void {
  expect(VERDICTS).toContain(a.verdict);
  expect(VERDICTS).toContain(a.payload.verdict);
  expect(a.reasons.length).toBeGreaterThan(0);
  for (const r of a.reasons) expect(typeof r).toBe('string');
  // Reasons are most severe first, so the first explains the verdict (rule P9), size reason included.
  const severityOf = new Map<string, string>(a.payload.findings.map((f) => [f.text, f.severity]));
  if (a.size.reason !== null) severityOf.set(a.size.reason, a.size.verdict === 'over-limit' ? 'flag' : 'review');
  const ranks = a.reasons.map((r) => RANK[severityOf.get(r) ?? ''] ?? -1);
  expect(ranks[0]).toBe(RANK[a.verdict]);
  for (let i = 1; i < ranks.length; i++) expect(ranks[i]).toBeLessThanOrEqual(ranks[i - 1] ?? 0);
  for (const f of a.payload.fields) {
    expect(CLASSES).toContain(f.class);
    expect(f.path.startsWith('body')).toBe(true);
  }
  expect(a.payload.fields.length).toBeLessThanOrEqual(500);
  // Nothing leaked onto shared prototypes.
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect(Object.prototype.hasOwnProperty.call(Object.prototype, 'status')).toBe(false);
  // Results are plain JSON.
  expect(JSON.parse(JSON.stringify(a))).toEqual(a);
}

describe('analysis properties', () => {
  it('arbitrary JSON bodies, headers and rules never throw and give well-formed, JSON-safe results', () => {
    const headerValue: fc.Arbitrary<HeaderValue> = fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null));
    fc.assert(
      fc.property(json, fc.dictionary(fc.constantFrom('type', 'X-GitHub-Event', 'Idempotency-Key', 'idempotency-key', 'X-Idempotency-Key', 'task', '__proto__', 'ce-type'), headerValue), rules, fc.constantFrom('sqs:q', 'rabbitmq:%2F/q', 'bullmq:q', 'stream:s', 'x'), (body, headers, r, queueId) => {
        const m = msg({ body, headers, queueId, meta: queueId === 'bullmq:q' ? { jobName: 'update-order' } : {} });
        checkAnalysis(analyzeMessage(m, { rules: r }));
        checkAnalysis(analyzeMessage(m, { rules: r, detail: 'verdict' }));
      }),
      { numRuns: 400 },
    );
  });

  it('invalid UTF-8, binary and non-JSON text bodies are ok-with-a-reason, never a crash', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 200 }), (bytes, text) => {
        let bin = '';
        for (const b of bytes) bin += String.fromCharCode(b);
        checkAnalysis(analyzeMessage(msg({ encoding: 'base64', rawBody: btoa(bin), sizeBytes: bytes.length })));
        checkAnalysis(analyzeMessage(msg({ rawBody: text })));
        checkAnalysis(analyzeMessage(msg({ encoding: 'base64', rawBody: '%%% not base64', sizeBytes: 3 })));
      }),
      { numRuns: 200 },
    );
  });

  it('prototype-named members are plain data: a __proto__ order is still classified, and nothing is polluted', () => {
    const raw = '{"__proto__":{"id":"A-1","status":"paid","polluted":true},"constructor":{"prototype":{"polluted":true}}}';
    const a = analyzeMessage(msg({ rawBody: raw }));
    expect(a.verdict).toBe('flag');
    expect(a.reasons[0]).toContain('`__proto__.status`');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const s = summarizeQueue([msg({ rawBody: raw, properties: { messageId: '__proto__' } }), msg({ rawBody: raw, properties: { messageId: '__proto__' } })]);
    expect(s.duplicateGroups[0]).toMatchObject({ key: '__proto__', count: 2 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('deep nesting, huge arrays and wide objects stay bounded in time', () => {
    const deep = `${'{"a":'.repeat(20_000)}{"id":"x","status":"s"}${'}'.repeat(20_000)}`;
    const deepArr = `${'['.repeat(50_000)}${']'.repeat(50_000)}`;
    const huge = JSON.stringify({ order: { id: 'A', status: 'x', items: Array.from({ length: 200_000 }, (_, i) => ({ sku: `S-${i}`, quantity: i })) } });
    const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, i])));
    const strings = JSON.stringify({ a: Array.from({ length: 50 }, () => JSON.stringify({ b: JSON.stringify({ c: 'x'.repeat(1000) }) })) });
    for (const raw of [deep, deepArr, huge, wide, strings]) {
      const started = Date.now();
      const a = analyzeMessage(msg({ rawBody: raw }));
      const ms = Date.now() - started;
      checkAnalysis(a);
      expect(ms).toBeLessThan(3000);
    }
    expect(analyzeMessage(msg({ rawBody: huge })).payload.fieldsTruncated).toBe(true);
    expect(analyzeMessage(msg({ rawBody: huge })).verdict).toBe('flag');
  });

  it('a payload read only in part is never a plain ok: beyond the member or depth bound anything gives review or flag', () => {
    const filler: Record<string, unknown> = {};
    for (let i = 0; i < 1000; i++) filler[`k${String(i)}`] = i;
    fc.assert(
      fc.property(json, fc.nat({ max: 3 }), (tail, pad) => {
        const wideBody: Record<string, unknown> = { ...filler };
        for (let i = 0; i < pad; i++) wideBody[`p${String(i)}`] = i;
        wideBody.tail = tail;
        let deepBody: unknown = tail;
        for (let i = 0; i < 25 + pad; i++) deepBody = { a: deepBody };
        for (const body of [wideBody, deepBody]) {
          for (const detail of ['full', 'verdict'] as const) {
            const a = analyzeMessage(msg({ body }), { detail });
            checkAnalysis(a);
            expect(a.verdict).not.toBe('ok');
            expect(a.payload.findings.filter((f) => f.rule === 'analysis-limit')).toHaveLength(1);
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it('arrays of scalars longer than the array bound are read as before: no analysis-limit finding', () => {
    const scalar = fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.string({ maxLength: 12 }).filter((t) => !/^\s*[[{]/.test(t)));
    fc.assert(
      fc.property(fc.array(scalar, { minLength: 101, maxLength: 400 }), fc.constantFrom('tags', 'status', 'ids', 'values', 'emails'), (arr, key) => {
        const a = analyzeMessage(msg({ body: { orderId: 'A-1', [key]: arr } }));
        checkAnalysis(a);
        expect(a.payload.findings.map((f) => f.rule)).not.toContain('analysis-limit');
      }),
      { numRuns: 100 },
    );
  });

  it('the business hash ignores object member order and the key field, and sees every value', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.oneof(fc.string({ maxLength: 8 }), fc.integer()), { minKeys: 1, maxKeys: 8 }), fc.uuid(), fc.uuid(), (o, k1, k2) => {
        const reversed = Object.fromEntries(Object.entries(o).reverse());
        const a = analyzeMessage(msg({ body: { ...o, idempotencyKey: k1 } }));
        const b = analyzeMessage(msg({ body: { idempotencyKey: k2, ...reversed } }));
        if (!('idempotencyKey' in o)) expect(a.businessHash).toBe(b.businessHash);
        const firstKey = Object.keys(o)[0] as string;
        const changed = analyzeMessage(msg({ body: { ...o, [firstKey]: `${String(o[firstKey])}!`, idempotencyKey: k1 } }));
        if (firstKey !== 'idempotencyKey') expect(changed.businessHash).not.toBe(a.businessHash);
      }),
      { numRuns: 300 },
    );
  });

  it('summaries and comparisons never throw on arbitrary messages', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(json, fc.oneof(fc.constant(undefined), fc.string({ maxLength: 8 }))), { maxLength: 20 }), (items) => {
        const ms = items.map(([body, key], i) => msg({ id: `m${i}`, body, properties: key === undefined ? {} : { messageId: key } }));
        const s = summarizeQueue(ms, { maxTracked: 5 });
        expect(s.total).toBe(ms.length);
        expect(s.verdicts.ok + s.verdicts.review + s.verdicts.flag).toBe(ms.length);
        const c = compareDuplicates({ label: 'a', messages: ms }, { label: 'b', messages: ms.slice().reverse() }, { maxTracked: 5 });
        expect(c.b.total).toBe(ms.length);
        expect(c.reasons.length).toBeGreaterThan(0);
      }),
      { numRuns: 100 },
    );
  });
});
