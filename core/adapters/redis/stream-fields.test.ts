import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { escapeFieldName, streamEntryMessage, streamFieldKeys } from './stream';

const at = { queueId: 'stream:s', queueName: 's', position: 0, maxBodyBytes: 1 << 20 };

describe('stream field names', () => {
  it('escapes only names that are not valid UTF-8, and different binary names read differently', () => {
    expect(escapeFieldName(Buffer.from('héllo\\'))).toBe('héllo\\');
    expect(escapeFieldName(Buffer.from([0xff, 0x61]))).toBe('\\xffa');
    expect(escapeFieldName(Buffer.from([0xfe, 0x61]))).toBe('\\xfea');
    expect(escapeFieldName(Buffer.concat([Buffer.from('é\\'), Buffer.from([0xc3])]))).toBe('é\\\\\\xc3');
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 8 }), fc.uint8Array({ maxLength: 8 }), (x, y) => {
        const a = Buffer.from(x);
        const b = Buffer.from(y);
        const binary = (n: Buffer): boolean => !Buffer.from(n.toString('utf8'), 'utf8').equals(n);
        // Two different names that are both not valid UTF-8 never share an escape.
        if (!a.equals(b) && binary(a) && binary(b)) expect(escapeFieldName(a)).not.toBe(escapeFieldName(b));
      }),
      { numRuns: 2000 },
    );
  });

  it('gives every field of an entry a distinct key; text names keep their own', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.uint8Array({ maxLength: 4 }), fc.constantFrom('a', 'body', '\\xff', '__proto__', 'a #2').map((s) => Buffer.from(s))), { maxLength: 10 }), (raw) => {
        const names = raw.map((b) => Buffer.from(b));
        const { keys, exact } = streamFieldKeys(names);
        expect(new Set(keys).size).toBe(names.length);
        const seen = new Set<string>();
        let allPlain = true;
        names.forEach((n, i) => {
          const s = n.toString('utf8');
          const plain = Buffer.from(s, 'utf8').equals(n) && s !== '__proto__' && !seen.has(s);
          if (plain) {
            seen.add(s);
            expect(keys[i]).toBe(s);
          } else allPlain = false;
        });
        expect(exact).toBe(allPlain);
      }),
    );
  });

  it('an entry with such names carries properties.streamFields; a plain one does not', () => {
    const plain = streamEntryMessage('1-0', [Buffer.from('type'), Buffer.from('x'), Buffer.from('body'), Buffer.from('hi')], at);
    expect(plain.properties).toEqual({ bodyField: 'body' });
    expect(plain.headers).toEqual({ type: 'x' });
    const odd = streamEntryMessage('1-1', [Buffer.from([0xff]), Buffer.from('1'), Buffer.from([0xfe]), Buffer.from([0x80]), Buffer.from('body'), Buffer.from('hi')], at);
    expect(odd.headers).toEqual({ '\\xff': '1', '\\xfe': { base64: 'gA==' } });
    expect(odd.properties).toEqual({
      bodyField: 'body',
      streamFields: [
        { name: { base64: '/w==' }, key: '\\xff' },
        { name: { base64: '/g==' }, key: '\\xfe' },
        { name: 'body', key: null },
      ],
    });
  });
});
