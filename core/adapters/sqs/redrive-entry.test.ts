import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { HeaderValue, QueueMessage } from '../../../shared/domain';
import { REDRIVE_COUNT_HEADER } from '../redrive-types';
import { attributeNameProblem, buildSendEntry, chunkEntries, derivedDeduplicationId, emptyHeaderNames, existingRedriveCount, type SendTarget } from './redrive-entry';

const STD: SendTarget = { name: 'orders', fifo: false, maxMessageBytes: 262_144 };
const FIFO: SendTarget = { name: 'orders.fifo', fifo: true, maxMessageBytes: 262_144 };

function msg(over: Partial<QueueMessage> = {}, headers: Record<string, HeaderValue> = {}, types: Record<string, string> = {}): QueueMessage {
  return {
    id: 'm-1',
    queueId: 'sqs:http://x/orders-dlq',
    queueName: 'orders-dlq',
    position: 0,
    body: { encoding: 'utf8', data: '{"orderId":"A-1"}', sizeBytes: 17, truncated: false },
    headers,
    properties: Object.keys(types).length > 0 ? { messageAttributeTypes: types } : {},
    meta: {},
    ...over,
  };
}

describe('buildSendEntry', () => {
  it('keeps body and attributes with their SQS types and adds the redrive counter as a Number', () => {
    const b = buildSendEntry(msg({}, { s: 'x', n: '1.50', bin: { base64: 'AP8D' }, c: 'y' }, { s: 'String', n: 'Number', bin: 'Binary', c: 'String.custom' }), STD, 'e0');
    if ('error' in b) throw new Error(b.error.message);
    expect(b.entry.MessageBody).toBe('{"orderId":"A-1"}');
    expect(b.entry.MessageAttributes).toEqual({
      s: { DataType: 'String', StringValue: 'x' },
      n: { DataType: 'Number', StringValue: '1.50' },
      bin: { DataType: 'Binary', BinaryValue: new Uint8Array([0, 255, 3]) },
      c: { DataType: 'String.custom', StringValue: 'y' },
      [REDRIVE_COUNT_HEADER]: { DataType: 'Number', StringValue: '1' },
    });
    expect(b.entry.MessageGroupId).toBeUndefined();
    expect(b.entry.MessageDeduplicationId).toBeUndefined();
  });

  it('increments an existing counter instead of adding a second one', () => {
    const b = buildSendEntry(msg({}, { [REDRIVE_COUNT_HEADER]: 4 }), STD, 'e0');
    expect('error' in b ? b.error.message : b.entry.MessageAttributes?.[REDRIVE_COUNT_HEADER]?.StringValue).toBe('5');
  });

  it('refuses a message whose 10 attributes leave no room for the counter (nothing dropped)', () => {
    const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`a${i}`, `v${i}`]));
    const b = buildSendEntry(msg({}, ten), STD, 'e0');
    expect('error' in b && b.error.message).toMatch(/already has 10 message attributes, the SQS maximum of 10/);
    // 9 attributes + the counter = 10: fine; 10 with an existing counter: fine too.
    expect('error' in buildSendEntry(msg({}, Object.fromEntries(Object.entries(ten).slice(0, 9))), STD, 'e0')).toBe(false);
    expect('error' in buildSendEntry(msg({}, { ...Object.fromEntries(Object.entries(ten).slice(0, 9)), [REDRIVE_COUNT_HEADER]: 1 }), STD, 'e0')).toBe(false);
  });

  it('leaves headers with an empty string value out of the attributes (SQS rejects them) instead of refusing the message; they do not count toward the 10', () => {
    // A RabbitMQ dead letter from the default exchange: x-first-death-exchange is "".
    const headers = { 'Idempotency-Key': 'A-1:ship', 'x-first-death-exchange': '', 'x-first-death-queue': 'orders', 'x-last-death-exchange': '' };
    const b = buildSendEntry(msg({}, headers), STD, 'e0');
    if ('error' in b) throw new Error(b.error.message);
    expect(Object.keys(b.entry.MessageAttributes ?? {})).toEqual(['Idempotency-Key', 'x-first-death-queue', REDRIVE_COUNT_HEADER]);
    expect(emptyHeaderNames(msg({}, headers))).toEqual(['x-first-death-exchange', 'x-last-death-exchange']);
    expect(emptyHeaderNames(msg({}, { [REDRIVE_COUNT_HEADER]: '', a: 'x', n: 0 }))).toEqual([]);
    const nine = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`a${i}`, `v${i}`]));
    expect('error' in buildSendEntry(msg({}, { ...nine, e1: '', e2: '' }), STD, 'e0')).toBe(false);
    // The limit still applies to what is sent: 10 non-empty + an empty one is refused, nothing dropped.
    expect(buildSendEntry(msg({}, { ...nine, a9: 'v9', e: '' }), STD, 'e0')).toMatchObject({ error: { message: expect.stringMatching(/already has 10 message attributes/) as unknown } });
  });

  it('refuses cut bodies, binary bodies, empty bodies and oversize messages', () => {
    expect(buildSendEntry(msg({ body: { encoding: 'utf8', data: 'abc', sizeBytes: 900, truncated: true } }), STD, 'e0')).toMatchObject({ error: { code: 'INVALID_INPUT' } });
    expect(buildSendEntry(msg({ body: { encoding: 'base64', data: 'AAE=', sizeBytes: 2, truncated: false } }), STD, 'e0')).toMatchObject({ error: { code: 'INVALID_INPUT' } });
    expect(buildSendEntry(msg({ body: { encoding: 'utf8', data: '', sizeBytes: 0, truncated: false } }), STD, 'e0')).toMatchObject({ error: { code: 'INVALID_INPUT' } });
    const big = 'x'.repeat(1024);
    expect(buildSendEntry(msg({ body: { encoding: 'utf8', data: big, sizeBytes: 1024, truncated: false } }), { ...STD, maxMessageBytes: 1024 }, 'e0')).toMatchObject({ error: { message: expect.stringMatching(/MaximumMessageSize of 1024 bytes/) as unknown } });
  });

  it('FIFO: keeps the group, derives the deduplication id, refuses a message without a group', () => {
    const b = buildSendEntry(msg({ meta: { messageGroupId: 'g1', messageDeduplicationId: 'd1' } }), FIFO, 'e0');
    if ('error' in b) throw new Error(b.error.message);
    expect(b.entry.MessageGroupId).toBe('g1');
    expect(b.entry.MessageDeduplicationId).toBe(derivedDeduplicationId('d1', 'm-1', 1));
    expect(b.entry.MessageDeduplicationId).not.toBe('d1');
    expect(buildSendEntry(msg(), FIFO, 'e0')).toMatchObject({ error: { message: expect.stringMatching(/no MessageGroupId/) as unknown } });
  });

  it('keeps AWSTraceHeader', () => {
    const b = buildSendEntry(msg({ properties: { AWSTraceHeader: 'Root=1-abc' } }), STD, 'e0');
    expect('error' in b ? null : b.entry.MessageSystemAttributes).toEqual({ AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-abc' } });
  });

  it('property: any message either gets an entry that round-trips body, headers and counter, or a clear INVALID_INPUT', () => {
    const value = fc.oneof(
      fc.string({ minLength: 0, maxLength: 20 }),
      fc.integer(),
      fc.boolean(),
      fc.uint8Array({ minLength: 0, maxLength: 8 }).map((u) => ({ base64: Buffer.from(u).toString('base64') })),
    );
    fc.assert(
      fc.property(fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), value, { maxKeys: 12 }), fc.string({ minLength: 0, maxLength: 50 }), fc.boolean(), (headers, body, fifo) => {
        const m = msg({ body: { encoding: 'utf8', data: body, sizeBytes: Buffer.byteLength(body), truncated: false }, meta: { messageGroupId: 'g' } }, headers);
        const b = buildSendEntry(m, fifo ? FIFO : STD, 'e0');
        if ('error' in b) {
          expect(b.error.code).toBe('INVALID_INPUT');
          expect(b.error.message.length).toBeGreaterThan(10);
          return;
        }
        expect(b.entry.MessageBody).toBe(body);
        const attrs = b.entry.MessageAttributes ?? {};
        expect(Object.keys(attrs).length).toBeLessThanOrEqual(10);
        expect(attrs[REDRIVE_COUNT_HEADER]?.StringValue).toBe(String(existingRedriveCount(headers) + 1));
        for (const [k, v] of Object.entries(headers)) {
          if (k === REDRIVE_COUNT_HEADER) continue;
          // An empty value cannot be an SQS attribute: left out whatever its name (named by emptyHeaderNames).
          if (v === '') {
            expect(attrs[k]).toBeUndefined();
            expect(emptyHeaderNames(m)).toContain(k);
            continue;
          }
          expect(attributeNameProblem(k)).toBeNull();
          const a = attrs[k];
          if (typeof v === 'object' && 'base64' in v) expect(Buffer.from(a?.BinaryValue ?? []).toString('base64')).toBe(v.base64);
          else expect(a?.StringValue).toBe(String(v));
        }
        expect(b.entry.MessageDeduplicationId !== undefined).toBe(fifo);
      }),
    );
  });
});

describe('chunkEntries', () => {
  it('property: order kept, ≤ 10 per chunk, ≤ max bytes unless a single entry is bigger', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 300_000 }), { maxLength: 60 }), (sizes) => {
        const entries = sizes.map((bytes, i) => ({ bytes, i }));
        const chunks = chunkEntries(entries);
        expect(chunks.flat().map((e) => e.i)).toEqual(entries.map((e) => e.i));
        for (const c of chunks) {
          expect(c.length).toBeGreaterThan(0);
          expect(c.length).toBeLessThanOrEqual(10);
          if (c.length > 1) expect(c.reduce((s, e) => s + e.bytes, 0)).toBeLessThanOrEqual(262_144);
        }
      }),
    );
  });
});

describe('derivedDeduplicationId', () => {
  it('is stable for a retry of the same redrive and differs per redrive count and message', () => {
    expect(derivedDeduplicationId('d1', 'm', 1)).toBe(derivedDeduplicationId('d1', 'm', 1));
    expect(derivedDeduplicationId('d1', 'm', 1)).not.toBe(derivedDeduplicationId('d1', 'm', 2));
    expect(derivedDeduplicationId(null, 'm1', 1)).not.toBe(derivedDeduplicationId(null, 'm2', 1));
    // Two dead letters with the same deduplication id (sent > 5 min apart, or per-group scope) get different ids.
    expect(derivedDeduplicationId('d1', 'm1', 1)).not.toBe(derivedDeduplicationId('d1', 'm2', 1));
    expect(derivedDeduplicationId('d1', 'm', 1)).toMatch(/^[0-9a-f]{64}$/);
    // A re-inject (publish salt) never reuses the redrive's id.
    expect(derivedDeduplicationId('d1', 'm', 1, 'salt')).not.toBe(derivedDeduplicationId('d1', 'm', 1));
    expect(derivedDeduplicationId('d1', 'm', 1, 'salt')).toBe(derivedDeduplicationId('d1', 'm', 1, 'salt'));
  });
});
