import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { HeaderValue, MessageMeta, QueueMessage } from '../domain';
import { MAX_KEY_HEADERS, classifyKey, extractIdempotencyKey, keyBodyFinding, keyHeadersFinding, readMessagePath, type KeyRule, type KeyVerdictKind } from './idempotency';
import { analyzeMessage } from './index';

interface MsgInit {
  id?: string;
  queueId?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, HeaderValue>;
  properties?: Record<string, HeaderValue>;
  meta?: MessageMeta;
}

function msg(init: MsgInit): QueueMessage {
  const data = init.rawBody ?? (init.body === undefined ? '' : JSON.stringify(init.body));
  return {
    id: init.id ?? 'm-1',
    queueId: init.queueId ?? 'rabbitmq:%2F/orders',
    queueName: 'orders',
    position: 0,
    body: { encoding: 'utf8', data, sizeBytes: new TextEncoder().encode(data).length, truncated: false },
    headers: init.headers ?? {},
    properties: init.properties ?? {},
    meta: init.meta ?? {},
  };
}

interface Fixture {
  label: string;
  message: QueueMessage;
  rules?: KeyRule[];
  key: string | null;
  source: string | null;
  verdict: KeyVerdictKind;
  /** Substrings the reason must contain (field paths and values). */
  cites: string[];
}

const FIXTURES: Fixture[] = [
  {
    label: 'BullMQ job with a custom job id built from the order',
    message: msg({ id: 'charge:A-1001', queueId: 'bullmq:payments', body: { orderId: 'A-1001', amountCents: 4200 }, headers: { attempts: 5 }, meta: { jobName: 'charge', state: 'waiting' } }),
    key: 'charge:A-1001',
    source: 'BullMQ custom job id',
    verdict: 'business-derived',
    cites: ['body.orderId (A-1001)', "'charge'"],
  },
  {
    label: 'BullMQ job with an auto-increment id and the key inside its data envelope',
    message: msg({ id: '17', queueId: 'bullmq:emails', body: { data: { userId: 'u-77', template: 'welcome', idempotencyKey: 'u-77:welcome' } }, meta: { jobName: 'send' } }),
    key: 'u-77:welcome',
    source: 'body.data.idempotencyKey',
    verdict: 'business-derived',
    cites: ['body.data.userId (u-77)', 'body.data.template (welcome)'],
  },
  {
    label: 'BullMQ auto-increment id only: no key',
    message: msg({ id: '42', queueId: 'bullmq:emails', body: { userId: 'u-77' }, meta: { jobName: 'send' } }),
    key: null,
    source: null,
    verdict: 'missing',
    cites: ['missing:'],
  },
  {
    label: 'webhook-style event with an Idempotency-Key header derived from the event',
    message: msg({ headers: { 'Idempotency-Key': 'evt_pay_9931:refund' }, body: { type: 'payment.refunded', payment: { id: 'evt_pay_9931', amount: 1200 }, action: 'refund' } }),
    key: 'evt_pay_9931:refund',
    source: 'header Idempotency-Key',
    verdict: 'business-derived',
    cites: ['body.payment.id (evt_pay_9931)', 'body.action (refund)'],
  },
  {
    label: 'CloudEvents structured mode with a random id',
    message: msg({ body: { specversion: '1.0', type: 'com.shop.order.created', source: '/shop/orders', id: '3f0c2a4e-8d1b-4c6f-9a2e-5b7d9e1f0a33', data: { orderId: 'A-1002' } } }),
    key: '/shop/orders:3f0c2a4e-8d1b-4c6f-9a2e-5b7d9e1f0a33',
    source: 'CloudEvents source+id',
    verdict: 'opaque-random',
    cites: ['a UUID', '3f0c2a4e-8d1b-4c6f-9a2e-5b7d9e1f0a33'.slice(0, 20)],
  },
  {
    label: 'SQS FIFO with a dedup id from the order and operation',
    message: msg({ queueId: 'sqs:http://127.0.0.1:4566/000000000000/orders.fifo', body: { orderId: 'A-1003', op: 'ship' }, meta: { messageGroupId: 'A-1003', messageDeduplicationId: 'A-1003-ship' } }),
    key: 'A-1003-ship',
    source: 'SQS MessageDeduplicationId',
    verdict: 'business-derived',
    cites: ['body.orderId (A-1003)', 'body.op (ship)'],
  },
  {
    label: 'AMQP message_id with the operation and order id',
    message: msg({ properties: { messageId: 'cancel/A-1004', contentType: 'application/json' }, body: { orderId: 'A-1004', command: 'cancel' } }),
    key: 'cancel/A-1004',
    source: 'AMQP message_id',
    verdict: 'business-derived',
    cites: ['body.orderId (A-1004)', 'body.command (cancel)'],
  },
  {
    label: 'ID-only message with a user template rule producing A-1001:charge',
    message: msg({ body: { orderId: 'A-1001', operation: 'charge' } }),
    rules: [{ kind: 'template', template: '{body.orderId}:{body.operation}' }],
    key: 'A-1001:charge',
    source: 'template {body.orderId}:{body.operation}',
    verdict: 'business-derived',
    cites: ['body.orderId (A-1001)', 'body.operation (charge)'],
  },
  {
    label: 'random UUIDv4 in X-Idempotency-Key',
    message: msg({ headers: { 'X-Idempotency-Key': '9b2f6c1e-2d4a-4f7b-8c3e-1a5d7f9b3c2e' }, body: { orderId: 'A-1005' } }),
    key: '9b2f6c1e-2d4a-4f7b-8c3e-1a5d7f9b3c2e',
    source: 'header X-Idempotency-Key',
    verdict: 'opaque-random',
    cites: ['a UUID', 'retries are not deduplicated'],
  },
  {
    label: 'ULID in the body dedup_key',
    message: msg({ body: { dedup_key: '01JDQ3X7KZ8M4N6P2R5T9V0WXY', sku: 'SKU-1' } }),
    key: '01JDQ3X7KZ8M4N6P2R5T9V0WXY',
    source: 'body.dedup_key',
    verdict: 'opaque-random',
    cites: ['a ULID', 'body.dedup_key'],
  },
  {
    label: 'epoch-ms key',
    message: msg({ body: { idempotency_key: 'sync-1764450000123', account: 'acct-9' } }),
    key: 'sync-1764450000123',
    source: 'body.idempotency_key',
    verdict: 'time-derived',
    cites: ['epoch time in ms', '1764450000123'],
  },
  {
    label: 'weekly report with an ISO-week period key',
    message: msg({ headers: { 'idempotency-key': 'weekly-report:acct-9:2026-W36' }, body: { account: 'acct-9' } }),
    key: 'weekly-report:acct-9:2026-W36',
    source: 'header idempotency-key',
    verdict: 'period-key',
    cites: ['an ISO week (2026-W36)'],
  },
  {
    label: 'daily job with a date from the payload',
    message: msg({ body: { payload: { dedupKey: 'rollup:2026-11-29', day: '2026-11-29' } } }),
    key: 'rollup:2026-11-29',
    source: 'body.payload.dedupKey',
    verdict: 'period-key',
    cites: ['body.payload.day (2026-11-29)'],
  },
  {
    label: 'missing key',
    message: msg({ body: { orderId: 'A-1006', status: 'paid' } }),
    key: null,
    source: null,
    verdict: 'missing',
    cites: ['missing:'],
  },
  {
    label: 'header in odd case (SQS attribute)',
    message: msg({ queueId: 'sqs:http://127.0.0.1:4566/000000000000/orders', headers: { 'iDeMpOtEnCy-KeY': 'A-1007:capture' }, body: { order: { id: 'A-1007' }, action: 'capture' } }),
    key: 'A-1007:capture',
    // The name as the message spells it: SQS attribute names are case-sensitive.
    source: 'header iDeMpOtEnCy-KeY',
    verdict: 'business-derived',
    cites: ['body.order.id (A-1007)', 'body.action (capture)'],
  },
  {
    label: 'user jsonPath rule wins over a built-in header',
    message: msg({ headers: { 'Idempotency-Key': 'ffffffffffffffffffff0123' }, body: { order: { id: 'A-1008' } } }),
    rules: [{ kind: 'jsonPath', path: 'body.order.id' }],
    key: 'A-1008',
    source: 'body.order.id',
    // The order's own id, read by the user's rule: a business identifier is its own evidence.
    verdict: 'business-derived',
    cites: ['body.order.id (A-1008)'],
  },
];

describe('idempotency fixture corpus', () => {
  for (const f of FIXTURES) {
    it(f.label, () => {
      const ex = extractIdempotencyKey(f.message, f.rules);
      expect(ex?.key ?? null).toBe(f.key);
      expect(ex?.source ?? null).toBe(f.source);
      const v = classifyKey(ex?.key ?? '', f.message, ex ?? undefined);
      expect(v.verdict).toBe(f.verdict);
      expect(v.reason.startsWith(`${f.verdict}:`)).toBe(true);
      for (const c of f.cites) expect(v.reason).toContain(c);
    });
  }

  it('says a key header is present but unusable instead of "no key was found in the headers"', () => {
    const cases: [Record<string, HeaderValue>, string][] = [
      [{ 'Idempotency-Key': '' }, 'the header "Idempotency-Key" is present but empty'],
      [{ 'idempotency-key': '   ' }, 'the header "idempotency-key" is present but empty'],
      [{ 'X-Idempotency-Key': ['A-1:charge', 'A-2:charge'] }, 'the header "X-Idempotency-Key" is present but a list of 2 values, not one key'],
      [{ 'Idempotency-Key': { base64: '//79' } }, 'is present but binary that is not printable UTF-8 text'],
      [{ 'Idempotency-Key': true }, 'is present but not text (true)'],
    ];
    for (const [headers, text] of cases) {
      const m = msg({ headers, body: { orderId: 'A-1' } });
      const ex = extractIdempotencyKey(m);
      const v = classifyKey(ex?.key ?? '', m, ex ?? undefined);
      expect(v.verdict).toBe('missing');
      expect(v.reason).toContain(text);
      expect(v.reason).not.toContain('no idempotency key was found in the headers');
    }
    expect(classifyKey('', msg({ headers: { other: '' }, body: {} })).reason).toContain('no idempotency key was found in the headers');
  });

  it('a user jsonPath on a business identifier gives the verdict of the template reading the same field', () => {
    const m = msg({ body: { orderId: 'A-1101', operation: 'charge', amountCents: 1200 } });
    const byPath = extractIdempotencyKey(m, [{ kind: 'jsonPath', path: 'body.orderId' }]);
    const byTemplate = extractIdempotencyKey(m, [{ kind: 'template', template: '{body.orderId}' }]);
    expect(byPath?.key).toBe('A-1101');
    expect(byTemplate?.key).toBe('A-1101');
    const a = classifyKey('A-1101', m, byPath ?? undefined);
    const b = classifyKey('A-1101', m, byTemplate ?? undefined);
    expect(a.verdict).toBe('business-derived');
    expect(b.verdict).toBe('business-derived');
    expect(a.reason).toContain('body.orderId (A-1101)');
  });

  it('a user jsonPath on a random value, a key holder or per-send metadata is still not evidence for itself', () => {
    const uuid = '0f8e2f4a-9b7c-4d3e-8a1b-2c3d4e5f6a7b';
    const cases: [Record<string, unknown>, string][] = [
      [{ orderId: uuid, operation: 'charge' }, 'body.orderId'], // an id member holding a random value
      [{ id: 'evt_1NxYz2LkdIwHu7ix0abcdEFG', type: 'charge.refunded' }, 'body.id'], // a random token
      [{ requestId: 'A-1101', operation: 'charge' }, 'body.requestId'], // a send's own id
      [{ note: 'A-1101', operation: 'charge' }, 'body.note'], // not an identifier member
    ];
    for (const [body, path] of cases) {
      const m = msg({ body });
      const ex = extractIdempotencyKey(m, [{ kind: 'jsonPath', path }]);
      expect(ex?.composed, path).toBeUndefined();
      expect(classifyKey(ex?.key ?? '', m, ex ?? undefined).verdict, path).toBe('opaque-random');
    }
  });

  it('a value read from a user jsonPath is not evidence for itself, but counts without the extraction', () => {
    const m = msg({ body: { order: { id: 'A-1008' }, requestRef: 'R-77' } });
    const ex = extractIdempotencyKey(m, [{ kind: 'jsonPath', path: 'body.requestRef' }]);
    expect(classifyKey('R-77', m, ex ?? undefined).verdict).toBe('business-derived'); // a reference member
    expect(classifyKey('A-1008', m).verdict).toBe('business-derived');
    expect(classifyKey('A-1008', m).reason).toContain('body.order.id (A-1008)');
  });

  it('keeps integer keys beyond 2^53 exactly as written (no false duplicates from JSON.parse rounding)', () => {
    const a = msg({ rawBody: '{"orderId":"A-1","idempotencyKey":12345678901234567890}' });
    const b = msg({ rawBody: '{"orderId":"A-2","idempotencyKey":12345678901234567891}' });
    expect(extractIdempotencyKey(a)?.key).toBe('12345678901234567890');
    expect(extractIdempotencyKey(b)?.key).toBe('12345678901234567891');
    const rule: KeyRule = { kind: 'template', template: '{body.orderId}:{body.snowflake}' };
    const c = msg({ rawBody: '{"orderId":"A-3","snowflake":1234567890123456789123}' });
    expect(extractIdempotencyKey(c, [rule])?.key).toBe('A-3:1234567890123456789123');
    // the verdict finds the exact literal in the payload, so the key counts as built from it
    const ex = extractIdempotencyKey(c, [rule]);
    expect(classifyKey(ex?.key ?? '', c, ex ?? undefined).verdict).toBe('business-derived');
    // Two literals that round to the same double: the member name decides which one, also when the
    // placeholder or path has spaces around it (the path is read trimmed, so is the member name).
    const d = msg({ rawBody: '{"a":12345678901234567890,"b":12345678901234567891}' });
    expect(extractIdempotencyKey(d, [{ kind: 'template', template: '{ body.b }:x' }])?.key).toBe('12345678901234567891:x');
    expect(extractIdempotencyKey(d, [{ kind: 'jsonPath', path: ' body.b ' }])?.key).toBe('12345678901234567891');
  });

  it('a missing key in a body cut at the read limit says the body was not read whole', () => {
    const m = msg({ rawBody: '{"orderId":"H-1","idempotencyKey":"H-1:ch' });
    m.body.truncated = true;
    m.body.sizeBytes = 2 * 1024 * 1024;
    expect(extractIdempotencyKey(m)).toBeNull();
    expect(classifyKey('', m).reason).toMatch(/the body \(2097152 bytes\) was cut at the read limit, so a key in the body could not be read/);
  });

  it('matches ids containing separators only on separator boundaries', () => {
    const m = msg({ body: { qty: 100, orderId: 'A-1001' } });
    expect(classifyKey('9b2f6c1e-2d4a-4f7b-8c3e-1a5d7f9b3100', m).verdict).toBe('opaque-random');
    expect(classifyKey('A-1001:100', m).reason).toContain('body.qty (100)');
  });

  it('recognises BullMQ deduplication ids and headers.jobId', () => {
    const a = msg({ id: '5', queueId: 'bullmq:q', properties: { deduplicationId: 'order-A-1' }, headers: { jobId: 'x' }, meta: { jobName: 'j' } });
    expect(extractIdempotencyKey(a)?.source).toBe('BullMQ deduplication id');
    const b = msg({ id: '5', queueId: 'bullmq:q', headers: { jobId: 'job-A-1' }, meta: { jobName: 'j' } });
    expect(extractIdempotencyKey(b)).toMatchObject({ key: 'job-A-1', source: 'BullMQ custom job id' });
    const notBull = msg({ id: 'abc', queueId: 'stream:orders' });
    expect(extractIdempotencyKey(notBull)).toBeNull();
  });

  it('reads JSON behind base64 transport encoding', () => {
    const data = btoa('{"orderId":"A-1009","idempotencyKey":"A-1009:void"}');
    const b64: QueueMessage = { ...msg({}), body: { encoding: 'base64', data, sizeBytes: 48, truncated: false } };
    const ex = extractIdempotencyKey(b64);
    expect(ex).toMatchObject({ key: 'A-1009:void', source: 'body.idempotencyKey' });
    expect(classifyKey(ex?.key ?? '', b64, ex ?? undefined).verdict).toBe('business-derived');
  });

  it('CloudEvents binary mode via ce- headers', () => {
    const m = msg({ headers: { 'ce-source': '/billing', 'ce-id': 'inv-2026-0042' }, body: { invoice: 'inv-2026-0042' } });
    const ex = extractIdempotencyKey(m);
    expect(ex).toMatchObject({ key: '/billing:inv-2026-0042', source: 'CloudEvents source+id' });
  });

  it('ISO timestamps and epoch seconds are time-derived', () => {
    const m = msg({ body: {} });
    expect(classifyKey('import:2026-11-29T22:15:00Z', m).verdict).toBe('time-derived');
    expect(classifyKey('tick-1764450000', m).verdict).toBe('time-derived');
    expect(classifyKey('report-2026-11', m).verdict).toBe('period-key');
    expect(classifyKey('   ', m).verdict).toBe('missing');
  });

  it('readMessagePath reads own properties only', () => {
    const m = msg({ body: { a: [{ b: 'x' }] }, headers: { 'X-Key': 'k' } });
    expect(readMessagePath(m, 'body.a[0].b')).toBe('x');
    expect(readMessagePath(m, 'headers.x-key')).toBe('k');
    expect(readMessagePath(m, 'body.constructor')).toBeUndefined();
    expect(readMessagePath(m, 'body.__proto__')).toBeUndefined();
    expect(readMessagePath(m, 'body..[')).toBeUndefined();
  });
});

describe('idempotency properties', () => {
  const headerValue: fc.Arbitrary<HeaderValue> = fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.dictionary(fc.string(), fc.string()));
  const headerName = fc.oneof(fc.constantFrom('Idempotency-Key', 'idempotency-key', 'IDEMPOTENCY-KEY', 'x-idempotency-key', 'X-Idempotency-Key', 'jobId', 'ce-id', 'ce-source', '__proto__', 'constructor'), fc.string());

  it('never throws on arbitrary bodies, headers and rules, and returns bounded keys', () => {
    const rule: fc.Arbitrary<KeyRule> = fc.oneof(
      fc.record({ kind: fc.constant('header' as const), name: fc.string() }),
      fc.record({ kind: fc.constant('jsonPath' as const), path: fc.oneof(fc.string(), fc.constantFrom('body.__proto__', 'body.a[0]', 'body', 'id')) }),
      fc.record({ kind: fc.constant('template' as const), template: fc.oneof(fc.string(), fc.constant('{body.a}:{body.b}')) }),
    );
    const body = fc.oneof(
      fc.json({ depthSize: 'large' }),
      fc.string({ unit: 'binary' }),
      fc.jsonValue().map((v) => JSON.stringify({ data: v, payload: v, specversion: '1.0', source: 's', id: v })),
    );
    fc.assert(
      fc.property(body, fc.dictionary(headerName, headerValue), fc.dictionary(fc.string(), headerValue), fc.array(rule, { maxLength: 3 }), fc.string(), fc.string(), (b, headers, properties, rules, id, key) => {
        const m = msg({ rawBody: b, headers, properties, id, queueId: id.length % 2 ? 'bullmq:q' : 'sqs:q' });
        const ex = extractIdempotencyKey(m, rules);
        const v = classifyKey(ex?.key ?? key, m, ex ?? undefined);
        expect(typeof v.reason).toBe('string');
        expect(v.reason.startsWith(`${v.verdict}:`)).toBe(true);
        const f = keyHeadersFinding(ex, true);
        if (ex?.headers !== undefined) {
          expect(ex.headers.length).toBeGreaterThanOrEqual(2);
          expect(ex.headers[0]?.value?.startsWith(ex.key)).toBe(true);
          expect(f?.severity).toBe(ex.headers.every((h) => h.value === ex.headers?.[0]?.value) ? 'ok' : 'review');
        } else expect(f).toBeNull();
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it('two spellings of a key header: review exactly when their values differ, naming both headers', () => {
    const spelling = fc.array(fc.boolean(), { minLength: 15, maxLength: 15 }).map((up) => Array.from('idempotency-key', (c, i) => (up[i] === true ? c.toUpperCase() : c)).join(''));
    const value = fc.oneof(fc.constantFrom('A-1001:charge', 'A-1001:refund', ''), fc.string({ maxLength: 80 }));
    fc.assert(
      fc.property(spelling, spelling, value, value, fc.boolean(), (a, b, va, vb, x) => {
        const nb = x ? `X-${b}` : b;
        fc.pre(a !== nb);
        const ex = extractIdempotencyKey(msg({ headers: { [a]: va, [nb]: vb }, body: {} }));
        const usable = [va, vb].filter((v) => v.length > 0);
        if (usable.length === 0) {
          expect(ex).toBeNull();
          return;
        }
        // Idempotency-Key (any case) before X-Idempotency-Key; of two spellings, the first.
        expect(ex?.key).toBe(va.length > 0 ? va : vb);
        const f = keyHeadersFinding(ex, true);
        expect(f?.severity).toBe(va === vb ? 'ok' : 'review');
        expect(f?.text).toContain(JSON.stringify(a));
        expect(f?.text).toContain(JSON.stringify(nb));
        if (f?.severity === 'review') expect(f.text).toMatch(/^ambiguous idempotency key: the headers /);
      }),
      { numRuns: 300 },
    );
  });

  it('stays fast on deep nesting and huge arrays', () => {
    const deep = `${'{"x":'.repeat(5000)}"A-1"${'}'.repeat(5000)}`;
    const huge = { items: Array.from({ length: 200_000 }, (_, i) => ({ sku: `S-${i}`, qty: i })) };
    const started = Date.now();
    for (const b of [deep, JSON.stringify(huge)]) {
      const m = msg({ rawBody: b });
      expect(() => classifyKey('A-1:x', m)).not.toThrow();
      expect(() => extractIdempotencyKey(m)).not.toThrow();
    }
    expect(classifyKey('x'.repeat(100_000), msg({ body: { a: 'x' } })).verdict).toBe('opaque-random');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('a key built from body values is business-derived and cites them', () => {
    const orderId = fc.integer({ min: 1, max: 999_999 }).map((n) => `A-${n}`);
    const operation = fc.stringMatching(/^[a-z]{3,12}$/);
    const sep = fc.constantFrom(':', '/', '|', '.');
    fc.assert(
      fc.property(orderId, operation, sep, fc.boolean(), fc.jsonValue({ maxDepth: 2 }), (oid, op, s, nested, noise) => {
        const body = nested ? { data: { order: { id: oid }, operation: op }, noise } : { orderId: oid, operation: op, noise };
        const m = msg({ body });
        const v = classifyKey(`${oid}${s}${op}`, m);
        expect(v.verdict).toBe('business-derived');
        expect(v.reason).toContain(`(${oid})`);
      }),
      { numRuns: 300 },
    );
  });
});

/** The key verdict both ways: classifyKey walking the body itself, and analyzeMessage with the payload walk's evidence. */
function bothWays(m: QueueMessage): { verdict: KeyVerdictKind; reason: string } {
  const ex = extractIdempotencyKey(m);
  const direct = classifyKey(ex?.key ?? '', m, ex ?? undefined);
  const viaAnalysis = analyzeMessage(m).keyVerdict;
  expect(viaAnalysis).toEqual(direct);
  return direct;
}

describe('key verdict: member names decide what a matched value is', () => {
  it('a 10- or 13-digit business id is not a timestamp (orderId 1234567890 is an order number, not 2009-02-13)', () => {
    const a = bothWays(msg({ body: { orderId: 1234567890, operation: 'charge', idempotencyKey: '1234567890:charge' } }));
    expect(a.verdict).toBe('business-derived');
    expect(a.reason).toContain('built from body.orderId (1234567890) and body.operation (charge)');
    const b = bothWays(msg({ body: { orderId: 1500000001, operation: 'charge', idempotencyKey: '1500000001' } }));
    expect(b).toMatchObject({ verdict: 'business-derived' });
    expect(b.reason).toContain('body.orderId (1500000001)');
    for (const body of [{ order_id: 1764450000123 }, { id: '1764450000123' }, { sku: 1500000001 }, { reference: 1500000001 }, { invoiceNumber: '1764450000' }]) {
      const [name, value] = Object.entries(body)[0] as [string, unknown];
      const v = bothWays(msg({ body: { ...body, idempotencyKey: `${String(value)}:charge` } }));
      expect(v.verdict, name).toBe('business-derived');
      expect(v.reason).toContain(`body.${name} (${String(value)})`);
    }
  });

  it('epoch digits are still time from a member named as a time, or as unmatched text beside a matched id', () => {
    const field = bothWays(msg({ body: { orderId: 'A-1001', createdAt: 1764450000, idempotencyKey: 'A-1001:1764450000' } }));
    expect(field.verdict).toBe('time-derived');
    expect(field.reason).toContain('uses the timestamp body.createdAt (1764450000)');
    for (const name of ['sent_at', 'timestamp', 'ts', 'eventTimeMs', 'createdAtMs', 'created_at_millis', 'epoch']) {
      const ms = name === 'sent_at' || name === 'timestamp' || name === 'ts' || name === 'epoch' ? 1764450000 : 1764450000123;
      expect(bothWays(msg({ body: { orderId: 'A-1001', [name]: ms, idempotencyKey: `A-1001:${String(ms)}` } })).verdict, name).toBe('time-derived');
    }
    const residual = bothWays(msg({ body: { orderId: 'A-1001', idempotencyKey: 'A-1001:1764450000' } }));
    expect(residual.verdict).toBe('time-derived');
    expect(residual.reason).toContain('contains an epoch time in seconds (1764450000)');
    // A numeric order id matched, an unmatched epoch beside it: still time-derived.
    expect(bothWays(msg({ body: { orderId: 1500000001, idempotencyKey: '1500000001:1764450000123' } })).reason).toContain('an epoch time in ms (1764450000123)');
    // ISO timestamps are times whatever the member is called (but not an identifier's value).
    expect(bothWays(msg({ body: { orderId: 'A-1', window: '2026-11-29T22:15:00Z', idempotencyKey: 'A-1:2026-11-29T22:15:00Z' } })).verdict).toBe('time-derived');
    expect(bothWays(msg({ body: { runId: '2026-11-29T22:15:00Z', idempotencyKey: 'run:2026-11-29T22:15:00Z' } })).verdict).toBe('business-derived');
  });

  it('epoch digits in a member whose name does not say time are no evidence of a time (documented change)', () => {
    const v = bothWays(msg({ body: { account: 1764450000, idempotencyKey: 'close:1764450000' } }));
    expect(v.verdict).toBe('business-derived');
    expect(v.reason).toContain('body.account (1764450000)');
  });

  it('a part from a per-send member (retry counter, nonce) makes the key opaque-random, naming the member', () => {
    const a = bothWays(msg({ body: { orderId: 'A-1001', attempt: 3, idempotencyKey: 'A-1001:charge:3' } }));
    expect(a.verdict).toBe('opaque-random');
    expect(a.reason).toBe(
      "opaque-random: the key 'A-1001:charge:3' (from body.idempotencyKey) includes body.attempt (3), which changes on every send (a retry counter), so a retry gets a new key and is not deduplicated; build it from the business values alone (body.orderId (A-1001)).",
    );
    for (const name of ['retryCount', 'retry_count', 'deliveryCount', 'attempts', 'receiveCount', 'attemptNumber']) {
      const v = bothWays(msg({ body: { orderId: 'A-1001', operation: 'charge', [name]: 2, idempotencyKey: 'A-1001:charge:2' } }));
      expect(v.verdict, name).toBe('opaque-random');
      expect(v.reason).toContain(`includes body.${name} (2), which changes on every send (a retry counter)`);
    }
    const n = bothWays(msg({ body: { orderId: 'A-1001', nonce: 'k3j4h5g6f7d8s9a0', idempotencyKey: 'A-1001:k3j4h5g6f7d8s9a0' } }));
    expect(n.verdict).toBe('opaque-random');
    expect(n.reason).toContain('includes body.nonce (k3j4h5g6f7d8s9a0), which changes on every send (a one-time nonce)');
    // In a header key too, and inside an envelope.
    const h = bothWays(msg({ headers: { 'Idempotency-Key': 'A-7:4' }, body: { data: { orderId: 'A-7', meta: { attempt: 4 } } } }));
    expect(h.reason).toContain('includes body.data.meta.attempt (4)');
  });

  it('time precedence over per-send, and a value another stable member also has is not called per-send', () => {
    expect(bothWays(msg({ body: { orderId: 'A-1', sentAt: 1764450000, idempotencyKey: 'A-1:1764450000' } })).verdict).toBe('time-derived');
    const v = bothWays(msg({ body: { orderId: 'A-1001', lineNo: 3, attempt: 3, idempotencyKey: 'A-1001:3' } }));
    expect(v.verdict).toBe('business-derived');
  });

  it('a key made only of values unrelated messages share (currency, amount, status, operation) is opaque-random and says they collide', () => {
    const eur = bothWays(msg({ body: { orderId: 'A-1001', currency: 'EUR', idempotencyKey: 'EUR' } }));
    expect(eur.verdict).toBe('opaque-random');
    expect(eur.reason).toContain("the key 'EUR' (from body.idempotencyKey) is built only from body.currency (EUR), a value many unrelated messages share");
    expect(eur.reason).toContain('different operations get the same key');
    const amount = bothWays(msg({ body: { orderId: 'A-1001', amountCents: 2599, idempotencyKey: '2599' } }));
    expect(amount.verdict).toBe('opaque-random');
    expect(amount.reason).toContain('built only from body.amountCents (2599)');
    // Six digits in an amount are still an amount.
    expect(bothWays(msg({ body: { totalCents: 259900, idempotencyKey: '259900' } })).verdict).toBe('opaque-random');
    const two = bothWays(msg({ body: { orderId: 'A-1001', operation: 'charge', status: 'paid', idempotencyKey: 'charge:paid' } }));
    expect(two.verdict).toBe('opaque-random');
    expect(two.reason).toContain('body.operation (charge) and body.status (paid), values many unrelated messages share');
  });

  it('stays business-derived with an identifier beside the shared values, or a value or literal that looks like one', () => {
    const withId = bothWays(msg({ body: { orderId: 'A-1001', currency: 'EUR', idempotencyKey: 'A-1001:EUR' } }));
    expect(withId.verdict).toBe('business-derived');
    expect(withId.reason).toContain('body.orderId (A-1001) and body.currency (EUR)');
    expect(bothWays(msg({ body: { currency: 'EUR', idempotencyKey: 'ORD-77:EUR' } })).verdict).toBe('business-derived');
    expect(bothWays(msg({ body: { type: 'INV-2026-0042', idempotencyKey: 'INV-2026-0042' } })).verdict).toBe('business-derived');
    expect(bothWays(msg({ body: { state: 1234567, idempotencyKey: '1234567' } })).verdict).toBe('business-derived');
    // Unknown member names are not called shared: `tenant` may well identify the operation's scope.
    expect(bothWays(msg({ body: { tenant: 'acme', idempotencyKey: 'acme:sync' } })).verdict).toBe('business-derived');
    // Nor `seq`/`sequence` (a producer may number its messages uniquely).
    expect(bothWays(msg({ body: { sequence: 42, idempotencyKey: 'ledger:42' } })).verdict).toBe('business-derived');
  });
});

describe('key verdict: a body cut at the read limit', () => {
  const cut = (init: Parameters<typeof msg>[0]): QueueMessage => {
    const m = msg(init);
    m.body.truncated = true;
    m.body.sizeBytes = 2 * 1024 * 1024;
    return m;
  };

  it('does not claim a header key matches no payload value: the body was never examined', () => {
    const m = cut({ headers: { 'Idempotency-Key': 'R-9:charge' }, rawBody: `{"orderId":"R-9","operation":"charge","note":"${'x'.repeat(500)}` });
    const v = bothWays(m);
    expect(v.verdict).toBe('opaque-random');
    expect(v.reason).toBe(
      "opaque-random: the key 'R-9:charge' (from header Idempotency-Key) could not be shown to be business-derived: the body (2097152 bytes) was cut at the read limit, so the key could not be checked against the payload; raise the read limit (queuescope inspect --max-body-bytes) to check it.",
    );
    expect(v.reason).not.toContain('matches no payload value');
  });

  it('a random-looking key keeps its verdict but does not say it is in no payload value', () => {
    const v = bothWays(cut({ headers: { 'Idempotency-Key': '9b2f6c1e-2d4a-4f7b-8c3e-1a5d7f9b3c2e' }, rawBody: '{"orderId":"R-9","note":"xx' }));
    expect(v.verdict).toBe('opaque-random');
    expect(v.reason).toContain('contains a UUID (9b2f6c1e-2d4a-4f7b-8c3e-1a5d7f9b3c2e), but the body (2097152 bytes) was cut at the read limit');
    expect(v.reason).not.toContain('found in no payload value');
    // What the key itself shows still decides: a time in it is a time.
    expect(bothWays(cut({ headers: { 'Idempotency-Key': 'R-9:1764450000' }, rawBody: '{"orderId":"R-9' })).verdict).toBe('time-derived');
  });

  it('an uncut body that does not have the value still says so', () => {
    const v = bothWays(msg({ headers: { 'Idempotency-Key': 'R-9:charge' }, body: { orderId: 'R-8' } }));
    expect(v.reason).toContain('matches no payload value');
  });
});

describe('key verdict properties (member names)', () => {
  it('a numeric identifier in the epoch range is never time-derived, a retry counter beside it always opaque-random', () => {
    const epochish = fc.oneof(fc.integer({ min: 978_307_200, max: 4_102_444_799 }), fc.integer({ min: 978_307_200_000, max: 4_102_444_799_999 }));
    const idName = fc.constantFrom('orderId', 'order_id', 'id', 'paymentId', 'sku', 'reference', 'invoiceNumber');
    const counter = fc.constantFrom('attempt', 'attempts', 'retryCount', 'retries', 'deliveryAttempt', 'receiveCount', 'deliveryCount');
    fc.assert(
      fc.property(epochish, idName, counter, fc.integer({ min: 1, max: 99 }), fc.boolean(), (id, name, c, n, withCounter) => {
        const key = withCounter ? `${String(id)}:charge:${String(n)}` : `${String(id)}:charge`;
        const v = bothWays(msg({ body: { [name]: id, [c]: n, idempotencyKey: key } }));
        expect(v.verdict).toBe(withCounter ? 'opaque-random' : 'business-derived');
        expect(v.reason).toContain(withCounter ? `body.${c} (${String(n)})` : `body.${name} (${String(id)})`);
      }),
      { numRuns: 200 },
    );
  });
});

describe('key verdict: SQS content-based deduplication ids (rule K3, meta.deduplicationIdSource)', () => {
  // SHA-256 of the body as SQS makes it; the analysis trusts the adapter's check (core/adapters/sqs/message.ts).
  const ID = 'ad3eb910f6d1e641dc53311fa11cffe6bb8eee7d26903aa30a09e5e4cc54cfdf';
  const FIFO = 'sqs:http://127.0.0.1:4566/000000000000/orders.fifo';
  const content = (body: unknown, extra: Partial<MsgInit> = {}): QueueMessage =>
    msg({ queueId: FIFO, body, ...extra, meta: { messageGroupId: 'g', messageDeduplicationId: ID, deduplicationIdSource: 'content', ...extra.meta } });

  it('names the source and is business-derived when the body carries no per-send or time member', () => {
    const m = content({ orderId: 'A-1', op: 'charge', items: [{ sku: 'SKU-1', qty: 2 }] });
    expect(extractIdempotencyKey(m)).toEqual({ key: ID, source: 'SQS content-based deduplication id (SHA-256 of the body)', origin: 'builtin', fields: ['meta.messageDeduplicationId'] });
    const v = bothWays(m);
    expect(v.verdict).toBe('business-derived');
    expect(v.reason).toContain('(from SQS content-based deduplication id (SHA-256 of the body))');
    expect(v.reason).toContain('identical sends share it');
    expect(v.reason).toContain('5-minute deduplication interval');
    expect(v.reason).not.toContain('random hex');
  });

  it('the same id without the content mark is still judged by its text (random hex)', () => {
    const v = bothWays(msg({ queueId: FIFO, body: { orderId: 'A-1', op: 'charge' }, meta: { messageGroupId: 'g', messageDeduplicationId: ID } }));
    expect(v.verdict).toBe('opaque-random');
    expect(v.reason).toContain('random hex');
    expect(extractIdempotencyKey(msg({ meta: { messageDeduplicationId: ID } }))?.source).toBe('SQS MessageDeduplicationId');
  });

  it('a time member in the body makes it time-derived, naming the member and the fix', () => {
    const v = bothWays(content({ orderId: 'A-1', op: 'charge', requestedAt: '2026-12-02T03:04:05.123Z' }));
    expect(v.verdict).toBe('time-derived');
    expect(v.reason).toContain('body.requestedAt (2026-12-02T03:04:05.123Z), a time');
    expect(v.reason).toContain('a retry that builds the body again later gets a new id and is not deduplicated');
    expect(v.reason).toContain('send an explicit MessageDeduplicationId built from business values');
    // Epoch digits from a time-named member, nested; a per-send time says "the send time".
    expect(bothWays(content({ order: { id: 'A-1', createdAtMs: 1796182330132 } })).reason).toContain('body.order.createdAtMs (1796182330132), a time');
    expect(bothWays(content({ orderId: 'A-1', meta: { sentAt: 1796182330 } })).reason).toContain('body.meta.sentAt (1796182330), the send time');
    // An ISO timestamp counts from a member whose name does not say time, too.
    expect(bothWays(content({ orderId: 'A-1', when: '2026-12-02 03:04' })).verdict).toBe('time-derived');
  });

  it('a per-send member makes it opaque-random, naming the member and what it is', () => {
    const v = bothWays(content({ orderId: 'A-1', op: 'charge', attempt: 2 }));
    expect(v.verdict).toBe('opaque-random');
    expect(v.reason).toContain('body.attempt (2), a value that changes on every send (a retry counter)');
    expect(v.reason).toContain('or leave body.attempt out of the body');
    const r = bothWays(content({ orderId: 'A-1', requestId: 'req-77' }));
    expect(r.verdict).toBe('opaque-random');
    expect(r.reason).toContain('body.requestId (req-77)');
    // A time member wins over a per-send one (as for other keys).
    expect(bothWays(content({ attempt: 1, requestedAt: '2026-12-02T03:04:05Z' })).verdict).toBe('time-derived');
  });

  it('identifiers and dates are not times: an epoch-sized order number or a delivery date stays business-derived', () => {
    expect(bothWays(content({ orderId: 1796182330, deliveryDate: '2026-12-05', invoiceNumber: 1796182330132 })).verdict).toBe('business-derived');
  });

  it('a text body: an ISO timestamp in it is a time; without one, identical sends share the id', () => {
    const t = bothWays(content(undefined, { rawBody: 'charge A-1 at 2026-12-02T03:04:05Z' }));
    expect(t.verdict).toBe('time-derived');
    expect(t.reason).toContain('the body text (2026-12-02T03:04:05Z)');
    const b = bothWays(content(undefined, { rawBody: 'charge A-1' }));
    expect(b.verdict).toBe('business-derived');
    expect(b.reason).toContain('which is not JSON and holds no timestamp');
  });

  it('a body cut at the read limit could not be checked: opaque-random, saying so', () => {
    const m = content(undefined, { rawBody: '{"orderId":"A-1","op":"cha' });
    m.body = { ...m.body, sizeBytes: 300_000, truncated: true };
    const v = bothWays(m);
    expect(v.verdict).toBe('opaque-random');
    expect(v.reason).toContain('the body (300000 bytes) was cut at the read limit, so it could not be checked for per-send or time members');
  });

  it('an explicit key still wins, and a user rule on meta.messageDeduplicationId gets the content verdict', () => {
    const m = content({ orderId: 'A-1', idempotencyKey: 'A-1:charge' });
    expect(extractIdempotencyKey(m)?.key).toBe('A-1:charge');
    expect(bothWays(m).verdict).toBe('business-derived');
    const rule: KeyRule[] = [{ kind: 'jsonPath', path: 'meta.messageDeduplicationId' }];
    const r = content({ orderId: 'A-1', attempt: 3 });
    const ex = extractIdempotencyKey(r, rule);
    expect(ex?.key).toBe(ID);
    expect(classifyKey(ex?.key ?? '', r, ex ?? undefined)).toMatchObject({ verdict: 'opaque-random' });
    // A template composing the id with other text is judged by its text, as before.
    const tpl = extractIdempotencyKey(r, [{ kind: 'template', template: '{meta.messageDeduplicationId}:x' }]);
    expect(classifyKey(tpl?.key ?? '', r, tpl ?? undefined).reason).toContain('random hex');
  });

  it('the summary verdict matches the sentence verdict', () => {
    for (const body of [{ orderId: 'A-1' }, { orderId: 'A-1', attempt: 1 }, { orderId: 'A-1', ts: 1796182330 }]) {
      const m = content(body);
      const ex = extractIdempotencyKey(m);
      expect(analyzeMessage(m, { detail: 'verdict' }).keyVerdict.verdict).toBe(classifyKey(ex?.key ?? '', m, ex ?? undefined).verdict);
    }
  });
});

describe('key extraction: binary Idempotency-Key attributes (SQS Binary, { base64 })', () => {
  const b64 = (s: string): string => btoa(String.fromCharCode(...new TextEncoder().encode(s)));

  it('reads a binary Idempotency-Key / X-Idempotency-Key as UTF-8 text and classifies it like a string', () => {
    const m = msg({ headers: { 'Idempotency-Key': { base64: b64('A-1001:charge') } }, body: { orderId: 'A-1001', operation: 'charge' } });
    expect(extractIdempotencyKey(m)).toEqual({ key: 'A-1001:charge', source: 'header Idempotency-Key (binary, read as UTF-8)', origin: 'builtin', fields: ['headers.Idempotency-Key'] });
    expect(bothWays(m).verdict).toBe('business-derived');
    const x = msg({ headers: { 'x-idempotency-key': { base64: b64('Bestellung-Ä7') } } });
    expect(extractIdempotencyKey(x)?.key).toBe('Bestellung-Ä7');
    expect(readMessagePath(x, 'headers.X-Idempotency-Key')).toBe('Bestellung-Ä7');
    expect(extractIdempotencyKey(x, [{ kind: 'header', name: 'x-idempotency-key' }])?.source).toBe('header x-idempotency-key (binary, read as UTF-8)');
  });

  it('ignores binary values that are not valid printable UTF-8, empty, or not exactly { base64 }', () => {
    const bad: HeaderValue[] = [
      { base64: 'AQL/' }, // 01 02 FF: control characters and invalid UTF-8
      { base64: '/w==' }, // FF
      { base64: b64('a\u0000b') },
      { base64: b64('   ') },
      { base64: '' },
      { base64: 'not base64!' },
      { base64: b64('A-1'), extra: 'x' },
    ];
    for (const value of bad) expect(extractIdempotencyKey(msg({ headers: { 'Idempotency-Key': value }, meta: { messageDeduplicationId: 'fallback' } }))?.key).toBe('fallback');
  });

  it('any bytes: the key is exactly their UTF-8 text without control characters, or the header is skipped', () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }), fc.string({ unit: 'binary', maxLength: 32 }).map((t) => new TextEncoder().encode(t)), fc.constant(Uint8Array.from([0xef, 0xbb, 0xbf, 0x41]))), (bytes) => {
        const ex = extractIdempotencyKey(msg({ headers: { 'Idempotency-Key': { base64: btoa(String.fromCharCode(...bytes)) } } }));
        if (ex === null) return;
        expect(ex.source).toBe('header Idempotency-Key (binary, read as UTF-8)');
        expect(Array.from(new TextEncoder().encode(ex.key))).toEqual(Array.from(bytes));
        expect(/[\u0000-\u001f\u007f-\u009f]/.test(ex.key)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});

describe('key extraction: several key headers (rule K1b)', () => {
  const body = { orderId: 'A-1001', operation: 'charge' };

  it('two spellings of Idempotency-Key with different values: the first is used, both are listed, and the finding names both with their values', () => {
    const m = msg({ headers: { 'Idempotency-Key': 'A-1001:charge', 'idempotency-key': 'A-1001:refund' }, body });
    const ex = extractIdempotencyKey(m);
    expect(ex).toEqual({
      key: 'A-1001:charge',
      source: 'header Idempotency-Key',
      origin: 'builtin',
      fields: ['headers.Idempotency-Key'],
      headers: [
        { name: 'Idempotency-Key', value: 'A-1001:charge' },
        { name: 'idempotency-key', value: 'A-1001:refund' },
      ],
      headerCount: 2,
    });
    expect(keyHeadersFinding(ex, true)).toEqual({
      rule: 'key-headers',
      severity: 'review',
      text: `ambiguous idempotency key: the headers "Idempotency-Key" ('A-1001:charge') and "idempotency-key" ('A-1001:refund') differ only in case but hold different values; this analysis uses "Idempotency-Key" (the first usable spelling in the message), but a consumer that reads "idempotency-key" deduplicates on 'A-1001:refund' instead; send only one of them.`,
      fields: ['headers.Idempotency-Key', 'headers.idempotency-key'],
    });
    // The summary's analyses keep the text of a review finding.
    expect(keyHeadersFinding(ex, false)?.text).toBe(keyHeadersFinding(ex, true)?.text);
  });

  it('Idempotency-Key and X-Idempotency-Key with different values: Idempotency-Key is used, whatever the order, and the reason says why', () => {
    for (const headers of [
      { 'X-Idempotency-Key': 'A-1001:refund', 'Idempotency-Key': 'A-1001:charge' } as Record<string, string>,
      { 'Idempotency-Key': 'A-1001:charge', 'x-idempotency-key': 'A-1001:refund' },
    ]) {
      const ex = extractIdempotencyKey(msg({ headers, body }));
      expect(ex?.key).toBe('A-1001:charge');
      expect(ex?.source).toBe('header Idempotency-Key');
      const f = keyHeadersFinding(ex, true);
      expect(f?.severity).toBe('review');
      expect(f?.text).toContain(`hold different values; this analysis uses "Idempotency-Key" (Idempotency-Key is read before X-Idempotency-Key), but a consumer that reads "${Object.keys(headers).find((k) => k.toLowerCase().startsWith('x-')) ?? ''}" deduplicates on 'A-1001:refund' instead`);
      expect(f?.text).not.toContain('differ only in case');
    }
  });

  it('an unusable Idempotency-Key beside a usable X-Idempotency-Key: X- is used, and a consumer reading the other finds no key', () => {
    const ex = extractIdempotencyKey(msg({ headers: { 'Idempotency-Key': '', 'X-Idempotency-Key': 'A-1001:charge' }, body }));
    expect(ex?.key).toBe('A-1001:charge');
    expect(ex?.source).toBe('header X-Idempotency-Key');
    expect(ex?.headers).toEqual([
      { name: 'X-Idempotency-Key', value: 'A-1001:charge' },
      { name: 'Idempotency-Key', value: null, why: 'empty' },
    ]);
    expect(keyHeadersFinding(ex, true)?.text).toBe(
      `ambiguous idempotency key: the headers "X-Idempotency-Key" ('A-1001:charge') and "Idempotency-Key" (empty) hold different values; this analysis uses "X-Idempotency-Key" (no Idempotency-Key header holds a usable key), but a consumer that reads "Idempotency-Key" finds no usable key; send only one of them.`,
    );
    // An unusable first spelling: the next one is used, and the reason does not call it the first.
    const late = extractIdempotencyKey(msg({ headers: { 'idempotency-key': ['A-1', 'A-2'], 'Idempotency-Key': 'A-1001:charge' }, body }));
    expect(late?.key).toBe('A-1001:charge');
    expect(keyHeadersFinding(late, true)?.text).toBe(
      `ambiguous idempotency key: the headers "Idempotency-Key" ('A-1001:charge') and "idempotency-key" (a list of 2 values, not one key) differ only in case but hold different values; this analysis uses "Idempotency-Key" (the first usable spelling in the message), but a consumer that reads "idempotency-key" finds no usable key; send only one of them.`,
    );
  });

  it('the same value under two spellings (one binary) is an ok mention, not an alarm', () => {
    const ex = extractIdempotencyKey(msg({ headers: { 'idempotency-key': 'A-1001:charge', 'IDEMPOTENCY-KEY': { base64: btoa('A-1001:charge') } }, body }));
    expect(ex?.source).toBe('header idempotency-key');
    expect(keyHeadersFinding(ex, true)).toEqual({
      rule: 'key-headers',
      severity: 'ok',
      text: `the headers "idempotency-key" and "IDEMPOTENCY-KEY", whose names differ only in case, both hold the key 'A-1001:charge', so a consumer gets the same key whichever it reads.`,
      fields: ['headers.idempotency-key', 'headers.IDEMPOTENCY-KEY'],
    });
    expect(keyHeadersFinding(ex, false)).toEqual({ rule: 'key-headers', severity: 'ok', text: '', fields: [] });
  });

  it('the source names the header used as the message spells it, not another spelling beside it', () => {
    // An empty "Idempotency-Key" and a usable "idempotency-key": the source used to say "header
    // Idempotency-Key", the name of the empty attribute.
    const ex = extractIdempotencyKey(msg({ headers: { 'Idempotency-Key': '', 'idempotency-key': 'A-1001:charge' }, body }));
    expect(ex).toMatchObject({ key: 'A-1001:charge', source: 'header idempotency-key', fields: ['headers.idempotency-key'] });
    expect(keyHeadersFinding(ex, true)?.text).toContain('this analysis uses "idempotency-key"');
    expect(extractIdempotencyKey(msg({ headers: { 'X-IDEMPOTENCY-KEY': 'A-1' } }))?.source).toBe('header X-IDEMPOTENCY-KEY');
  });

  it('one key header: nothing listed, no finding', () => {
    const cases: Record<string, string>[] = [{ 'Idempotency-Key': 'A-1' }, { 'iDeMpOtEnCy-KeY': 'A-1', 'Idempotency-Keys': 'B-2', 'x-idempotency-key2': 'C' }];
    for (const headers of cases) {
      const ex = extractIdempotencyKey(msg({ headers }));
      expect(ex).toEqual({ key: 'A-1', source: `header ${Object.keys(headers)[0] ?? ''}`, origin: 'builtin', fields: [`headers.${Object.keys(headers)[0] ?? ''}`] });
      expect(keyHeadersFinding(ex, true)).toBeNull();
    }
  });

  it('a user header rule checks the spellings of its name the same way', () => {
    const m = msg({ headers: { 'X-Order-Key': 'A-1001', 'x-order-key': 'A-1002', 'Idempotency-Key': 'Z-1' }, body });
    const ex = extractIdempotencyKey(m, [{ kind: 'header', name: 'x-order-key' }]);
    expect(ex).toMatchObject({ key: 'A-1001', source: 'header X-Order-Key', origin: 'user', headerCount: 2 });
    expect(keyHeadersFinding(ex, true)?.text).toContain(`the headers "X-Order-Key" ('A-1001') and "x-order-key" ('A-1002') differ only in case but hold different values; this analysis uses "X-Order-Key"`);
  });

  it('many spellings: at most MAX_KEY_HEADERS are kept, the rest counted, and the reason says so', () => {
    const headers: Record<string, HeaderValue> = {};
    const name = 'idempotency-key';
    for (let i = 0; i < 12; i++) headers[Array.from(name, (c, j) => ((i >> j) & 1 ? c.toUpperCase() : c)).join('')] = `K-${String(i)}`;
    const ex = extractIdempotencyKey(msg({ headers }));
    expect(ex?.key).toBe('K-0');
    expect(ex?.headers).toHaveLength(MAX_KEY_HEADERS);
    expect(ex?.headerCount).toBe(12);
    const text = keyHeadersFinding(ex, true)?.text ?? '';
    expect(text).toContain("('K-7') and 4 more differ only in case");
    expect(text).toContain('a consumer that reads another of them deduplicates on a different key or finds none');
  });
});

describe('key extraction: a header key beside a body key field (rule K1c)', () => {
  it('Idempotency-Key and a different body.idempotencyKey: the header is used, the body field is kept, and the finding names both values', () => {
    const m = msg({ headers: { 'Idempotency-Key': 'X-3:charge' }, body: { orderId: 'X-3', operation: 'charge', idempotencyKey: 'X-3:refund' } });
    const ex = extractIdempotencyKey(m);
    expect(ex).toEqual({
      key: 'X-3:charge',
      source: 'header Idempotency-Key',
      origin: 'builtin',
      fields: ['headers.Idempotency-Key'],
      bodyKey: { path: 'body.idempotencyKey', value: 'X-3:refund' },
    });
    expect(keyBodyFinding(ex, true)).toEqual({
      rule: 'key-header-body',
      severity: 'review',
      text: `ambiguous idempotency key: the header "Idempotency-Key" holds 'X-3:charge' but body.idempotencyKey holds 'X-3:refund'; this analysis uses the header (an Idempotency-Key header is read before the body's key fields), but a consumer that reads body.idempotencyKey deduplicates on 'X-3:refund' instead; send one key, or the same value in both.`,
      fields: ['headers.Idempotency-Key', 'body.idempotencyKey'],
    });
    // The summary's analyses keep the text of a review finding.
    expect(keyBodyFinding(ex, false)).toEqual(keyBodyFinding(ex, true));
    // The key verdict is unchanged: the header key, judged against the payload.
    expect(classifyKey(ex?.key ?? '', m, ex ?? undefined).verdict).toBe('business-derived');
    expect(keyHeadersFinding(ex, true)).toBeNull();
  });

  it('every body key field of rule K5, at the top level and one level inside an envelope, the field K5 would pick', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ idempotency_key: 'B-2' }, 'body.idempotency_key'],
      [{ dedupKey: 'B-2' }, 'body.dedupKey'],
      [{ dedup_key: 'B-2' }, 'body.dedup_key'],
      [{ data: { idempotencyKey: 'B-2' } }, 'body.data.idempotencyKey'],
      [{ payload: { dedupKey: 'B-2' } }, 'body.payload.dedupKey'],
      [{ args: [{ idempotency_key: 'B-2' }] }, 'body.args[0].idempotency_key'],
      // K5's order: the top level before an envelope, idempotencyKey before dedupKey.
      [{ data: { idempotencyKey: 'C-3' }, dedupKey: 'B-2' }, 'body.dedupKey'],
      [{ dedupKey: 'C-3', idempotencyKey: 'B-2' }, 'body.idempotencyKey'],
    ];
    for (const [body, path] of cases) {
      const ex = extractIdempotencyKey(msg({ headers: { 'Idempotency-Key': 'A-1' }, body }));
      expect(ex?.key).toBe('A-1');
      expect(ex?.bodyKey).toEqual({ path, value: 'B-2' });
      const f = keyBodyFinding(ex, true);
      expect(f?.severity).toBe('review');
      expect(f?.text).toContain(`but ${path} holds 'B-2'`);
      expect(f?.fields).toEqual(['headers.Idempotency-Key', path]);
    }
  });

  it('an X-Idempotency-Key header, spelled lower case: the sentence names it as spelled and says why the header is used', () => {
    const ex = extractIdempotencyKey(msg({ headers: { 'x-idempotency-key': 'A-1' }, body: { dedup_key: 'A-2' } }));
    expect(ex?.source).toBe('header x-idempotency-key');
    expect(keyBodyFinding(ex, true)?.text).toBe(
      `ambiguous idempotency key: the header "x-idempotency-key" holds 'A-1' but body.dedup_key holds 'A-2'; this analysis uses the header (an X-Idempotency-Key header is read before the body's key fields), but a consumer that reads body.dedup_key deduplicates on 'A-2' instead; send one key, or the same value in both.`,
    );
  });

  it('the same value in both is an ok mention, not an alarm (a number and a binary header compare as their text)', () => {
    const ex = extractIdempotencyKey(msg({ headers: { 'Idempotency-Key': 'X-4:charge' }, body: { idempotencyKey: 'X-4:charge' } }));
    expect(keyBodyFinding(ex, true)).toEqual({
      rule: 'key-header-body',
      severity: 'ok',
      text: `the header "Idempotency-Key" and body.idempotencyKey both hold the key 'X-4:charge', so a consumer gets the same key whichever it reads.`,
      fields: ['headers.Idempotency-Key', 'body.idempotencyKey'],
    });
    expect(keyBodyFinding(ex, false)).toEqual({ rule: 'key-header-body', severity: 'ok', text: '', fields: [] });
    expect(keyBodyFinding(extractIdempotencyKey(msg({ headers: { 'Idempotency-Key': '1001' }, body: { dedupKey: 1001 } })), true)?.severity).toBe('ok');
    // An integer beyond 2^53 compares as written, not as JSON.parse rounds it.
    const big = msg({ headers: { 'Idempotency-Key': '12345678901234567891' }, rawBody: '{"idempotencyKey":12345678901234567891}' });
    expect(keyBodyFinding(extractIdempotencyKey(big), true)?.severity).toBe('ok');
    const bigOther = msg({ headers: { 'Idempotency-Key': '12345678901234567890' }, rawBody: '{"idempotencyKey":12345678901234567891}' });
    expect(keyBodyFinding(extractIdempotencyKey(bigOther), true)?.severity).toBe('review');
    const bin = msg({ headers: { 'Idempotency-Key': { base64: btoa('A-1') } }, body: { idempotencyKey: 'A-1' } });
    expect(keyBodyFinding(extractIdempotencyKey(bin), true)?.severity).toBe('ok');
  });

  it('finds the body field however the body spells it: a \\u escape in the member name, a base64 body', () => {
    const escaped = msg({ headers: { 'Idempotency-Key': 'A-1' }, rawBody: '{"\\u0064edupKey":"B-2"}' });
    expect(extractIdempotencyKey(escaped)?.bodyKey).toEqual({ path: 'body.dedupKey', value: 'B-2' });
    const b64: QueueMessage = { ...msg({ headers: { 'Idempotency-Key': 'A-1' } }), body: { encoding: 'base64', data: btoa('{"idempotencyKey":"B-2"}'), sizeBytes: 24, truncated: false } };
    expect(extractIdempotencyKey(b64)?.bodyKey).toEqual({ path: 'body.idempotencyKey', value: 'B-2' });
  });

  it('no body key field, an unusable one, a text body, no header key, or a user header rule: nothing kept, no finding', () => {
    const header = { 'Idempotency-Key': 'A-1' };
    const none: QueueMessage[] = [
      msg({ headers: header, body: { orderId: 'A-1' } }),
      msg({ headers: header, body: { idempotencyKey: '' } }),
      msg({ headers: header, body: { idempotencyKey: null, dedupKey: { id: 'B-2' } } }),
      msg({ headers: header, body: { order: { idempotencyKey: 'B-2' } } }), // two levels down: not a K5 field
      msg({ headers: header, rawBody: 'idempotencyKey=B-2' }),
      msg({ headers: header, body: [{ idempotencyKey: 'B-2' }] }),
    ];
    for (const m of none) {
      const ex = extractIdempotencyKey(m);
      expect(ex?.key).toBe('A-1');
      expect(ex?.bodyKey).toBeUndefined();
      expect(keyBodyFinding(ex, true)).toBeNull();
    }
    // Without a header key, the body field is the key (K5), and there is nothing to compare.
    const bodyOnly = extractIdempotencyKey(msg({ body: { idempotencyKey: 'B-2' } }));
    expect(bodyOnly).toEqual({ key: 'B-2', source: 'body.idempotencyKey', origin: 'builtin', fields: ['body.idempotencyKey'] });
    expect(keyBodyFinding(bodyOnly, true)).toBeNull();
    // A user header rule says where the consumer reads the key.
    const user = extractIdempotencyKey(msg({ headers: { 'X-Order-Key': 'A-1' }, body: { idempotencyKey: 'B-2' } }), [{ kind: 'header', name: 'X-Order-Key' }]);
    expect(user).toEqual({ key: 'A-1', source: 'header X-Order-Key', origin: 'user', fields: ['headers.X-Order-Key'] });
    expect(keyBodyFinding(user, true)).toBeNull();
    expect(keyBodyFinding(null, true)).toBeNull();
  });

  it('several key headers and a body field: both findings, each about its own pair', () => {
    const ex = extractIdempotencyKey(msg({ headers: { 'Idempotency-Key': 'A-1', 'idempotency-key': 'A-2' }, body: { idempotencyKey: 'A-3' } }));
    expect(ex?.headerCount).toBe(2);
    expect(ex?.bodyKey).toEqual({ path: 'body.idempotencyKey', value: 'A-3' });
    expect(keyHeadersFinding(ex, true)?.text).toContain(`"idempotency-key" ('A-2')`);
    expect(keyBodyFinding(ex, true)?.text).toContain(`the header "Idempotency-Key" holds 'A-1' but body.idempotencyKey holds 'A-3'`);
  });

  it('any header value and body value: review exactly when their texts differ, naming both', () => {
    const value = fc.oneof(fc.constantFrom('A-1001:charge', 'A-1001:refund', ' A-1001:charge'), fc.string({ minLength: 1, maxLength: 80 }), fc.integer().map(String));
    const field = fc.constantFrom('idempotencyKey', 'idempotency_key', 'dedupKey', 'dedup_key');
    fc.assert(
      fc.property(value, value, field, fc.boolean(), (hv, bv, f, asNumber) => {
        const bodyValue: unknown = asNumber && /^-?\d{1,15}$/.test(bv) ? Number(bv) : bv;
        const ex = extractIdempotencyKey(msg({ headers: { 'Idempotency-Key': hv }, body: { [f]: bodyValue, orderId: 'A-1001' } }));
        expect(ex?.key).toBe(hv);
        const finding = keyBodyFinding(ex, true);
        const bodyText = String(bodyValue);
        expect(finding?.severity).toBe(bodyText === hv ? 'ok' : 'review');
        if (bodyText !== hv) expect(finding?.fields).toEqual(['headers.Idempotency-Key', `body.${f}`]);
      }),
      { numRuns: 300 },
    );
  });
});
