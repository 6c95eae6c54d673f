import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { toHeaderValue, toMessageBody } from './body';

const decode = (b: { encoding: 'utf8' | 'base64'; data: string }): Buffer => Buffer.from(b.data, b.encoding === 'utf8' ? 'utf8' : 'base64');

describe('toMessageBody', () => {
  it('keeps valid UTF-8 as text and anything else as base64, byte for byte', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const buf = Buffer.from(bytes);
        const body = toMessageBody(buf, 1000);
        expect(body.truncated).toBe(false);
        expect(body.sizeBytes).toBe(buf.length);
        expect(decode(body).equals(buf)).toBe(true);
      }),
    );
    expect(toMessageBody(Buffer.from('héllo'), 100)).toEqual({ encoding: 'utf8', data: 'héllo', sizeBytes: 6, truncated: false });
    expect(toMessageBody(Buffer.from([0xff, 0x00]), 100).encoding).toBe('base64');
  });

  it('cuts text at a character boundary and keeps the full size', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 80 }), fc.integer({ min: 0, max: 100 }), (s, max) => {
        const buf = Buffer.from(s, 'utf8');
        const body = toMessageBody(buf, max);
        expect(body.sizeBytes).toBe(buf.length);
        expect(body.truncated).toBe(buf.length > max);
        const out = decode(body);
        expect(out.length).toBeLessThanOrEqual(Math.max(max, 0));
        if (body.encoding === 'utf8') expect(buf.subarray(0, out.length).equals(out)).toBe(true);
      }),
    );
    const cut = toMessageBody(Buffer.from('aé'), 2); // 'é' is 2 bytes: only 'a' fits
    expect(cut).toEqual({ encoding: 'utf8', data: 'a', sizeBytes: 3, truncated: true });
  });

  it('an empty body is empty text', () => {
    expect(toMessageBody(Buffer.alloc(0), 10)).toEqual({ encoding: 'utf8', data: '', sizeBytes: 0, truncated: false });
  });
});

describe('toHeaderValue', () => {
  it('is the text when UTF-8, else tagged base64', () => {
    expect(toHeaderValue(Buffer.from('t-1'))).toBe('t-1');
    expect(toHeaderValue(Buffer.from([0xff]))).toEqual({ base64: '/w==' });
  });
});
