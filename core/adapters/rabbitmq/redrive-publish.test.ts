import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Message } from 'amqplib';
import { QueuescopeError, type HeaderValue, type QueueMessage } from '../../../shared/domain';
import { REDRIVE_COUNT_HEADER } from '../redrive-types';
import { copyFingerprint, copyKey, publishOptionsFromJson, redriveCountOf, republishOptions } from './redrive-publish';

function delivered(headers: Record<string, unknown> | undefined, props: Record<string, unknown> = {}, body = 'x'): Message {
  return {
    content: Buffer.from(body),
    fields: { deliveryTag: 1, redelivered: false, exchange: '', routingKey: 'dlq', consumerTag: 'c' },
    properties: { headers, ...props } as unknown as Message['properties'],
  };
}

function jsonMessage(headers: Record<string, HeaderValue>, properties: Record<string, HeaderValue> = {}): QueueMessage {
  return { id: 'm-1', queueId: 'rabbitmq:%2F/dlq', queueName: 'dlq', position: 0, body: { encoding: 'utf8', data: '{"a":1}', sizeBytes: 7, truncated: false }, headers, properties, meta: {} };
}

describe('redriveCountOf', () => {
  it('reads numbers, numeric strings and bigints; anything else is 0', () => {
    expect(redriveCountOf({ [REDRIVE_COUNT_HEADER]: 2 })).toBe(2);
    expect(redriveCountOf({ [REDRIVE_COUNT_HEADER]: '3' })).toBe(3);
    expect(redriveCountOf({ [REDRIVE_COUNT_HEADER]: BigInt(4) })).toBe(4);
    expect(redriveCountOf({ [REDRIVE_COUNT_HEADER]: -1 })).toBe(0);
    expect(redriveCountOf({ [REDRIVE_COUNT_HEADER]: 'lots' })).toBe(0);
    expect(redriveCountOf(undefined)).toBe(0);
  });
});

describe('republishOptions', () => {
  const xDeath = [{ count: 1, reason: 'rejected', queue: 'work', time: { '!': 'timestamp', value: 1_700_000_000 }, exchange: '', 'routing-keys': ['work'] }];
  const m = delivered(
    { 'x-death': xDeath, 'x-first-death-queue': 'work', 'x-delivery-count': 3, CC: ['other'], BCC: ['hidden'], seq: 7, [REDRIVE_COUNT_HEADER]: 1 },
    { contentType: 'application/json', deliveryMode: 2, priority: 3, messageId: 'm-7', correlationId: 'c', timestamp: 1_700_000_001, type: 't', appId: 'a', expiration: '60000', replyTo: 'r', userId: 'guest' },
  );

  it('keeps properties and headers, drops x-delivery-count, CC and BCC, counts the redrive, sets mandatory', () => {
    const o = republishOptions(m, true);
    expect(o).toMatchObject({ mandatory: true, contentType: 'application/json', deliveryMode: 2, priority: 3, messageId: 'm-7', correlationId: 'c', timestamp: 1_700_000_001, type: 't', appId: 'a', expiration: '60000', replyTo: 'r', userId: 'guest' });
    expect(o.headers).toEqual({ 'x-death': xDeath, 'x-first-death-queue': 'work', seq: 7, [REDRIVE_COUNT_HEADER]: 2 });
  });

  it('does not count a copy kept in the DLQ', () => {
    expect((republishOptions(m, false).headers as Record<string, unknown>)[REDRIVE_COUNT_HEADER]).toBe(1);
    expect(republishOptions(delivered(undefined), true).headers).toEqual({ [REDRIVE_COUNT_HEADER]: 1 });
  });

  it('gives a copy the fingerprint of the message it copies, and ignores the headers that are not copied', () => {
    const copy = delivered(republishOptions(m, false).headers as Record<string, unknown>, m.properties as unknown as Record<string, unknown>);
    expect(copyFingerprint(copy)).toBe(copyFingerprint(m));
    expect(copyFingerprint(delivered({ seq: 8 }))).not.toBe(copyFingerprint(delivered({ seq: 7 })));
  });
});

describe('publishOptionsFromJson (re-inject)', () => {
  it('restores AMQP types: timestamps ms → s, base64 → bytes, x-death times', () => {
    const o = publishOptionsFromJson(
      jsonMessage({ 'x-death': [{ count: 2, queue: 'work', time: 1_700_000_000_000 }], bin: { base64: 'AAEC' }, 'x-delivery-count': 2, [REDRIVE_COUNT_HEADER]: 4 }, { timestamp: 1_700_000_005_000, deliveryMode: 2, messageId: 'm', expiration: 5000 }),
    );
    const h = o.headers as Record<string, unknown>;
    expect(h['x-death']).toEqual([{ count: 2, queue: 'work', time: { '!': 'timestamp', value: 1_700_000_000 } }]);
    expect(h.bin).toEqual(Buffer.from([0, 1, 2]));
    expect(h['x-delivery-count']).toBeUndefined();
    expect(h[REDRIVE_COUNT_HEADER]).toBe(5);
    expect(o).toMatchObject({ timestamp: 1_700_000_005, deliveryMode: 2, messageId: 'm', expiration: '5000', mandatory: true });
  });

  it('never throws anything but INVALID_INPUT for arbitrary JSON properties and headers', () => {
    const json: fc.Arbitrary<HeaderValue> = fc.letrec<{ v: HeaderValue }>((tie) => ({
      v: fc.oneof({ depthSize: 'small' }, fc.string(), fc.double(), fc.boolean(), fc.constant(null), fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 5 }), tie('v'), { maxKeys: 3 })),
    })).v;
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 12 }), json, { maxKeys: 5 }), fc.dictionary(fc.constantFrom('contentType', 'deliveryMode', 'timestamp', 'expiration', 'priority', 'other'), json, { maxKeys: 4 }), (headers, props) => {
        try {
          publishOptionsFromJson(jsonMessage(headers, props));
        } catch (e) {
          expect(e).toBeInstanceOf(QueuescopeError);
          expect((e as QueuescopeError).code).toBe('INVALID_INPUT');
        }
      }),
    );
  });
});

describe('copyKey', () => {
  it('is equal for a message and its copy (what republishOptions keeps), and differs with body length, message id or timestamp', () => {
    const orig = delivered({ seq: 1, 'x-delivery-count': 2 }, { messageId: 'm-1', timestamp: 1_700_000_001, deliveryMode: 2 }, 'abc');
    const o = republishOptions(orig, false);
    const copy = delivered(o.headers as Record<string, unknown>, { messageId: o.messageId, timestamp: o.timestamp, deliveryMode: o.deliveryMode }, 'abc');
    expect(copyKey(copy)).toBe(copyKey(orig));
    expect(copyFingerprint(copy)).toBe(copyFingerprint(orig));
    expect(copyKey(delivered({}, { messageId: 'm-1', timestamp: 1_700_000_001 }, 'abcd'))).not.toBe(copyKey(orig));
    expect(copyKey(delivered({}, { messageId: 'm-2', timestamp: 1_700_000_001 }, 'abc'))).not.toBe(copyKey(orig));
    expect(copyKey(delivered({}, { messageId: 'm-1', timestamp: 1_700_000_002 }, 'abc'))).not.toBe(copyKey(orig));
  });

  it('is a 32-bit unsigned integer for any properties', () => {
    fc.assert(
      fc.property(fc.string(), fc.option(fc.integer({ min: 0, max: 2 ** 40 })), fc.string(), (id, ts, body) => {
        const k = copyKey(delivered({}, { messageId: id, ...(ts === null ? {} : { timestamp: ts }) }, body));
        return Number.isInteger(k) && k >= 0 && k < 2 ** 32;
      }),
    );
  });
});
