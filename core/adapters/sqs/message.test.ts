import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { attributeToHeader, isContentDeduplicationId, sqsBody, toQueueMessage } from './message';

describe('sqsBody', () => {
  it('keeps text whole under the limit and reports UTF-8 size', () => {
    expect(sqsBody('héllo', 100)).toEqual({ encoding: 'utf8', data: 'héllo', sizeBytes: 6, truncated: false });
    expect(sqsBody(undefined, 100)).toEqual({ encoding: 'utf8', data: '', sizeBytes: 0, truncated: false });
  });

  it('cuts at a character boundary, never above the limit', () => {
    expect(sqsBody('aé', 2)).toEqual({ encoding: 'utf8', data: 'a', sizeBytes: 3, truncated: true });
    expect(sqsBody('😀x', 3)).toMatchObject({ data: '', truncated: true, sizeBytes: 5 });
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.nat(64), (s, max) => {
        const b = sqsBody(s, max);
        const bytes = Buffer.byteLength(b.data);
        expect(bytes).toBeLessThanOrEqual(Math.max(max, Buffer.byteLength(s) <= max ? bytes : 0));
        expect(b.sizeBytes).toBe(Buffer.byteLength(s));
        expect(s.startsWith(b.data)).toBe(true);
        expect(b.truncated).toBe(Buffer.byteLength(s) > max);
        if (b.truncated) expect(bytes).toBeGreaterThan(max - 4);
      }),
    );
  });
});

describe('attributes and messages', () => {
  it('maps String / Number / Binary attributes, keeping numbers that do not round-trip as text', () => {
    expect(attributeToHeader({ DataType: 'String', StringValue: 'A-1001:charge' })).toBe('A-1001:charge');
    expect(attributeToHeader({ DataType: 'Number', StringValue: '42' })).toBe(42);
    expect(attributeToHeader({ DataType: 'Number.float', StringValue: '-0.5' })).toBe(-0.5);
    expect(attributeToHeader({ DataType: 'Number', StringValue: '1.50' })).toBe('1.50');
    expect(attributeToHeader({ DataType: 'Number', StringValue: '99999999999999999999' })).toBe('99999999999999999999');
    expect(attributeToHeader({ DataType: 'Binary', BinaryValue: Uint8Array.from([1, 2, 255]) })).toEqual({ base64: 'AQL/' });
    expect(attributeToHeader({ DataType: 'Binary.gzip' })).toEqual({ base64: '' });
  });

  it('maps a received message: ids, meta including our own receive, properties without the receipt handle', () => {
    const m = toQueueMessage(
      {
        MessageId: 'm-1',
        ReceiptHandle: 'secret-ish-handle',
        MD5OfBody: 'abc',
        Body: '{"orderId":"A-1001"}',
        Attributes: { SentTimestamp: '1795983903281', ApproximateReceiveCount: '2', ApproximateFirstReceiveTimestamp: '1795983903292', MessageGroupId: 'g', MessageDeduplicationId: 'A-1001:charge', SequenceNumber: '0001' },
        MessageAttributes: { 'x-request-id': { DataType: 'String', StringValue: 'r1' } },
      },
      { queueId: 'sqs:http://x/0/q.fifo', queueName: 'q.fifo', position: 0, maxBodyBytes: 1000 },
    );
    expect(m).toMatchObject({
      id: 'm-1',
      position: 0,
      headers: { 'x-request-id': 'r1' },
      meta: { state: 'visible', enqueuedAt: 1795983903281, firstReceivedAt: 1795983903292, receiveCount: 2, messageGroupId: 'g', messageDeduplicationId: 'A-1001:charge', sequenceNumber: '0001' },
    });
    expect(m.properties).toEqual({
      SentTimestamp: '1795983903281',
      ApproximateReceiveCount: '2',
      ApproximateFirstReceiveTimestamp: '1795983903292',
      MessageGroupId: 'g',
      MessageDeduplicationId: 'A-1001:charge',
      SequenceNumber: '0001',
      MD5OfBody: 'abc',
      messageAttributeTypes: { 'x-request-id': 'String' },
    });
  });
});

describe('content-based deduplication ids', () => {
  const sha = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');
  const ctx = { queueId: 'sqs:http://x/0/q.fifo', queueName: 'q.fifo', position: 0, maxBodyBytes: 1000 };
  const receive = (body: string, dedup: string | undefined) =>
    toQueueMessage({ MessageId: 'm-1', Body: body, Attributes: { MessageGroupId: 'g', ...(dedup !== undefined ? { MessageDeduplicationId: dedup } : {}) } }, ctx);

  it('marks an id that is the SHA-256 (hex) of the UTF-8 body, as SQS makes it (value from fauxqs)', () => {
    const body = '{"orderId":"A-1","op":"charge"}';
    // The id fauxqs returned for this body on a ContentBasedDeduplication queue.
    expect(sha(body)).toBe('ad3eb910f6d1e641dc53311fa11cffe6bb8eee7d26903aa30a09e5e4cc54cfdf');
    expect(receive(body, sha(body)).meta).toMatchObject({ messageDeduplicationId: sha(body), deduplicationIdSource: 'content' });
    expect(receive('Grüße ✓', sha('Grüße ✓')).meta.deduplicationIdSource).toBe('content');
    expect(isContentDeduplicationId(sha(body).toUpperCase(), body)).toBe(true);
  });

  it('leaves other ids unmarked: a sender id, another body\'s hash, a redrive id, none', () => {
    const body = '{"orderId":"A-1"}';
    for (const id of ['A-1:charge', sha(`${body} `), sha(body).slice(0, 63), `${sha(body)}0`, undefined]) {
      const m = receive(body, id);
      expect(m.meta.deduplicationIdSource).toBeUndefined();
      expect('deduplicationIdSource' in m.meta).toBe(false);
    }
  });

  it('hashes the whole body even when the mapped body is cut at the read limit', () => {
    const body = JSON.stringify({ orderId: 'A-1', pad: 'x'.repeat(5000) });
    const m = receive(body, sha(body));
    expect(m.body.truncated).toBe(true);
    expect(m.meta.deduplicationIdSource).toBe('content');
  });
});
