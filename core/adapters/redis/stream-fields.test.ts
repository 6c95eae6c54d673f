import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { escapeFieldName, streamEntryMessage, streamFieldKeys, unrecordedFieldOrder } from './stream';

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
    const plain = streamEntryMessage('1-0', [Buffer.from('body'), Buffer.from('hi'), Buffer.from('type'), Buffer.from('x')], at);
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

  it('a plain entry whose order the body field and headers cannot tell carries properties.streamFields too', () => {
    const f = (...xs: string[]): Buffer[] => xs.map((x) => Buffer.from(x));
    // The body field not first (re-inject wrote it first).
    const late = streamEntryMessage('1-0', f('type', 'x', 'body', 'hi', 'error', 'E'), at);
    expect(late.headers).toEqual({ type: 'x', error: 'E' });
    expect(late.properties).toEqual({
      bodyField: 'body',
      streamFields: [
        { name: 'type', key: 'type' },
        { name: 'body', key: null },
        { name: 'error', key: 'error' },
      ],
    });
    // An array-index name after another: JavaScript objects list it first.
    expect(streamEntryMessage('1-1', f('body', 'hi', 'a', '1', '7', '2'), at).properties.streamFields).toEqual([
      { name: 'body', key: null },
      { name: 'a', key: 'a' },
      { name: '7', key: '7' },
    ]);
    // The redrive counter before another field (re-inject appended it last); last, it needs nothing.
    expect(streamEntryMessage('1-2', f('body', 'hi', 'x-queuescope-redrive-count', '1', 'error', 'E'), at).properties.streamFields).toHaveLength(3);
    expect(streamEntryMessage('1-3', f('body', 'hi', 'error', 'E', 'x-queuescope-redrive-count', '1'), at).properties).toEqual({ bodyField: 'body' });
    // No body field: the body is the field map as JSON, in JavaScript key order.
    expect(streamEntryMessage('1-4', f('a', '1', 'b', '2'), at).properties).toEqual({ bodyField: null });
    expect(streamEntryMessage('1-5', f('a', '1', '3', '2'), at).properties.streamFields).toEqual([
      { name: 'a', key: 'a' },
      { name: '3', key: '3' },
    ]);
  });

  it('unrecordedFieldOrder: what a file without the field-order record cannot tell about an entry', () => {
    const f = (...xs: string[]): Buffer[] => xs.map((x) => Buffer.from(x));
    /** The entry as a Queuescope before the record wrote it: no streamFields for plain names. */
    const old = (...xs: string[]) => {
      const m = streamEntryMessage('1-0', f(...xs), at);
      delete m.properties.streamFields;
      return m;
    };
    expect(unrecordedFieldOrder(old('body', 'hi'))).toBeNull();
    expect(unrecordedFieldOrder(old('type', 'x', 'body', 'hi'))).toEqual({ bodyField: true, indexNames: [] });
    // Body first reads the same: the file cannot tell it from the above.
    expect(unrecordedFieldOrder(old('body', 'hi', 'type', 'x'))).toEqual({ bodyField: true, indexNames: [] });
    expect(unrecordedFieldOrder(old('body', 'hi', 'a', '1', '7', '2'))).toEqual({ bodyField: true, indexNames: ['7'] });
    // No body field: the map keeps the order of its text names, not of index names among others.
    expect(unrecordedFieldOrder(old('a', '1', 'b', '2'))).toBeNull();
    expect(unrecordedFieldOrder(old('7', 'x'))).toBeNull();
    expect(unrecordedFieldOrder(old('a', '1', '3', '2', '07', 'z'))).toEqual({ bodyField: false, indexNames: ['3'] });
    // A current file's entry with its order recorded, or a message not from a stream, loses nothing.
    expect(unrecordedFieldOrder(streamEntryMessage('1-0', f('type', 'x', 'body', 'hi'), at))).toBeNull();
    expect(unrecordedFieldOrder({ ...old('body', 'hi', 'type', 'x'), properties: {} })).toBeNull();
  });
});
