import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { QueueMessage } from '../domain';
import { classifyFailure } from './failure-class';
import { deadLetteredAt, formatDuration, formatFilter, isEmptyFilter, matchFilter, parseDuration, parseFilter, redriveFilterSchema, type RedriveFilter } from './filter';

function msg(over: Partial<QueueMessage> = {}): QueueMessage {
  return {
    id: '1',
    queueId: 'q',
    queueName: 'q',
    position: 0,
    body: { encoding: 'utf8', data: '{"orderId":"A-1001"}', sizeBytes: 20, truncated: false },
    headers: {},
    properties: {},
    meta: {},
    ...over,
  };
}

describe('parseDuration / formatDuration', () => {
  it('reads units and round-trips', () => {
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('2d')).toBe(172_800_000);
    expect(() => parseDuration('10')).toThrow(/not a duration/);
    expect(() => parseDuration('1w')).toThrow(/not a duration/);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 ** 12 }), (ms) => {
        expect(parseDuration(formatDuration(ms))).toBe(ms);
      }),
    );
  });
});

describe('parseFilter', () => {
  it('parses every term; several expressions are ANDed', () => {
    expect(parseFilter(['class:transient,unknown', 'age>1h age<2d', 'key:business-derived text:A-1001', 'label:"HTTP 503",timeout reason:"Service Unavailable"'])).toEqual({
      classes: ['transient', 'unknown'],
      minAgeMs: 3_600_000,
      maxAgeMs: 172_800_000,
      keyVerdicts: ['business-derived'],
      text: ['A-1001'],
      labels: ['HTTP 503', 'timeout'],
      reasonContains: ['Service Unavailable'],
    });
    expect(parseFilter([])).toEqual({});
  });

  it('names what is wrong', () => {
    expect(() => parseFilter(['colour:red'])).toThrow(/Unknown filter term "colour:red"/);
    expect(() => parseFilter(['class:fatal'])).toThrow(/Unknown failure class "fatal"/);
    expect(() => parseFilter(['key:uuid'])).toThrow(/idempotency-key verdict "uuid"/);
    expect(() => parseFilter(['reason:"open'])).toThrow(/unclosed double quote/);
    expect(() => parseFilter(['age>2d age<1h'])).toThrow(/selects nothing/);
    expect(() => parseFilter(['class:'])).toThrow(/no value/);
  });

  it('never throws anything but INVALID_INPUT on arbitrary text', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 60 }), { maxLength: 4 }), (exprs) => {
        try {
          parseFilter(exprs);
        } catch (e) {
          expect((e as { code?: string }).code).toBe('INVALID_INPUT');
        }
      }),
    );
  });

  it('formatFilter output parses back to the same filter, and passes the API schema', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'B', '1', ' ', ',', ':', '"', '-', 'é'), minLength: 1, maxLength: 12 }).filter((s) => s.trim() === s && s !== '');
    const filter = fc.record(
      {
        classes: fc.uniqueArray(fc.constantFrom('non-retryable' as const, 'transient' as const, 'unknown' as const), { minLength: 1 }),
        labels: fc.uniqueArray(text, { minLength: 1, maxLength: 3 }),
        reasonContains: fc.uniqueArray(text, { minLength: 1, maxLength: 2 }),
        keyVerdicts: fc.uniqueArray(fc.constantFrom('business-derived' as const, 'missing' as const, 'opaque-random' as const), { minLength: 1 }),
        text: fc.uniqueArray(text, { minLength: 1, maxLength: 2 }),
        minAgeMs: fc.integer({ min: 0, max: 10 ** 6 }),
        maxAgeMs: fc.integer({ min: 10 ** 6, max: 10 ** 9 }),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(filter, (f: RedriveFilter) => {
        expect(parseFilter([formatFilter(f)])).toEqual(f);
        expect(redriveFilterSchema.safeParse(f).success).toBe(true);
      }),
    );
    expect(formatFilter({})).toBe('all');
    expect(isEmptyFilter({ classes: [] })).toBe(true);
  });
});

describe('matchFilter', () => {
  const now = 10_000_000;
  const facts = (m: QueueMessage, keyVerdict: 'business-derived' | 'missing' | null = null) => ({ failure: classifyFailure(m), keyVerdict, now });

  it('matches class, label, reason, key, text and age, naming the first term that fails', () => {
    const m = msg({ headers: { 'x-last-error': 'HTTP 503 Service Unavailable', 'x-request-id': 'req-9' }, meta: { finishedOn: now - 2 * 3_600_000 } });
    expect(matchFilter(m, parseFilter(['class:transient label:"http 503" reason:unavailable key:business-derived text:a-1001 age>1h']), facts(m, 'business-derived'))).toBeNull();
    expect(matchFilter(m, parseFilter(['class:non-retryable']), facts(m))).toBe('class:non-retryable');
    expect(matchFilter(m, parseFilter(['key:business-derived']), facts(m, 'missing'))).toBe('key:business-derived');
    expect(matchFilter(m, parseFilter(['text:req-9']), facts(m))).toBeNull();
    expect(matchFilter(m, parseFilter(['text:zzz']), facts(m))).toBe('text:zzz');
    expect(matchFilter(m, parseFilter(['age<1h']), facts(m))).toBe('age<=1h');
    expect(matchFilter(msg(), parseFilter(['age>1h']), facts(msg()))).toBe('age (unknown)');
    const f = classifyFailure(m);
    expect(matchFilter(m, { groupKeys: [f.groupKey] }, facts(m))).toBeNull();
  });

  it('an empty filter matches everything', () => {
    fc.assert(
      fc.property(fc.string(), (body) => {
        const m = msg({ body: { encoding: 'utf8', data: body, sizeBytes: body.length, truncated: false } });
        expect(matchFilter(m, {}, facts(m))).toBeNull();
      }),
    );
  });

  it('deadLetteredAt prefers finishedOn, then x-death time, then enqueuedAt', () => {
    expect(deadLetteredAt(msg({ meta: { finishedOn: 5, enqueuedAt: 1 } }))).toBe(5);
    expect(deadLetteredAt(msg({ meta: { xDeath: [{ count: 1, reason: 'rejected', queue: 'a', exchange: '', routingKeys: [], time: 7 }], enqueuedAt: 1 } }))).toBe(7);
    expect(deadLetteredAt(msg({ meta: { enqueuedAt: 1 } }))).toBe(1);
    expect(deadLetteredAt(msg())).toBeNull();
  });
});
