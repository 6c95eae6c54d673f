import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { normaliseXDeath, toHeaders, toHeaderValue, toProperties } from './headers';
import { toMessageBody } from './body';

describe('toHeaderValue', () => {
  it('converts AMQP field values as amqplib decodes them', () => {
    expect(toHeaderValue(Buffer.from('text'))).toBe('text');
    expect(toHeaderValue(Buffer.from([0xff, 0x00]))).toEqual({ base64: '/wA=' });
    expect(toHeaderValue({ '!': 'timestamp', value: 1_700_000_000 })).toBe(1_700_000_000_000);
    expect(toHeaderValue({ '!': 'decimal', value: { places: 3, digits: 1234 } })).toBeCloseTo(1.234);
    expect(toHeaderValue(2n ** 70n)).toBe((2n ** 70n).toString());
    expect(toHeaderValue(5n)).toBe(5);
    expect(toHeaderValue(Infinity)).toBe('Infinity');
    expect(toHeaderValue(undefined)).toBeNull();
    expect(toHeaderValue([1, [2, { a: Buffer.from('b') }]])).toEqual([1, [2, { a: 'b' }]]);
  });

  it('never throws and always returns JSON-safe data', () => {
    fc.assert(
      fc.property(fc.anything({ withBigInt: true, withTypedArray: true, withMap: true, withSet: true, withDate: true, withNullPrototype: true, withSparseArray: true }), (v) => {
        const out = toHeaderValue(v);
        expect(() => JSON.stringify(out)).not.toThrow();
      }),
    );
  });

  it('caps absurd nesting', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 200; i++) deep = { d: deep };
    expect(JSON.stringify(toHeaders({ deep }))).toContain('[nested too deep]');
  });
});

describe('normaliseXDeath', () => {
  it('reads RabbitMQ x-death entries with times in ms', () => {
    const x = normaliseXDeath([
      { count: 2, reason: 'rejected', queue: 'orders.work', exchange: '', 'routing-keys': ['orders.work'], time: { '!': 'timestamp', value: 1_700_000_000 } },
      'garbage',
      { reason: Buffer.from('expired') },
    ]);
    expect(x).toEqual([
      { count: 2, reason: 'rejected', queue: 'orders.work', exchange: '', routingKeys: ['orders.work'], time: 1_700_000_000_000 },
      { count: 0, reason: 'expired', queue: '', exchange: '', routingKeys: [], time: null },
    ]);
    expect(normaliseXDeath('nope')).toEqual([]);
  });
});

describe('toProperties', () => {
  it('keeps present properties and converts the timestamp to ms', () => {
    expect(toProperties({ messageId: 'A-1001:charge', timestamp: 1_700_000_000, deliveryMode: 2, headers: { a: 1 } } as never)).toEqual({ messageId: 'A-1001:charge', timestamp: 1_700_000_000_000, deliveryMode: 2 });
  });
});

describe('toMessageBody', () => {
  it('keeps UTF-8 as text and anything else as base64, exact bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const b = toMessageBody(bytes, 1_000_000);
        const back = b.encoding === 'utf8' ? Buffer.from(b.data, 'utf8') : Buffer.from(b.data, 'base64');
        expect(Buffer.compare(back, Buffer.from(bytes))).toBe(0);
        expect(b.sizeBytes).toBe(bytes.length);
      }),
    );
  });
  it('truncates at a character boundary', () => {
    const b = toMessageBody(Buffer.from('aé€😀'), 4);
    expect(b).toMatchObject({ encoding: 'utf8', data: 'aé', truncated: true, sizeBytes: 10 });
  });
});
