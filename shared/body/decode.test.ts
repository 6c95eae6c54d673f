import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { gzipSync, strToU8 } from 'fflate';
import type { MessageBody } from '../domain';
import { bodyPreview, decodeBody, describeLayers, hexDump, hexDumpLines, prettyJson } from './decode';

function textBody(data: string, truncated = false): MessageBody {
  return { encoding: 'utf8', data, sizeBytes: new TextEncoder().encode(data).length, truncated };
}
function bytesBody(bytes: Uint8Array, truncated = false): MessageBody {
  return { encoding: 'base64', data: toBase64(bytes), sizeBytes: bytes.length, truncated };
}
function toBase64(bytes: Uint8Array): string {
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}
const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('decodeBody examples', () => {
  it('pretty-prints JSON with 2-space indentation', () => {
    const d = decodeBody(textBody('{"orderId":"A-1001","items":[1,2],"meta":{}}'));
    expect(d.format).toBe('json');
    expect(d.layers).toEqual([]);
    expect(d.json).toEqual({ orderId: 'A-1001', items: [1, 2], meta: {} });
    expect(d.text).toBe('{\n  "orderId": "A-1001",\n  "items": [\n    1,\n    2\n  ],\n  "meta": {}\n}');
  });

  it('keeps number literals beyond 2^53 exactly as sent', () => {
    const d = decodeBody(textBody('{"id":12345678901234567890,"f":1.50}'));
    expect(d.text).toContain('12345678901234567890');
    expect(d.text).toContain('1.50');
  });

  it('keeps escaped quotes and structural characters inside strings', () => {
    const src = '{"a":"x\\"},{[:y","b":"\\\\"}';
    const d = decodeBody(textBody(src));
    expect(d.format).toBe('json');
    expect(JSON.parse(d.text)).toEqual(JSON.parse(src));
    expect(d.text).toBe('{\n  "a": "x\\"},{[:y",\n  "b": "\\\\"\n}');
  });

  it('reports malformed JSON as text with the parser error', () => {
    const d = decodeBody(textBody('{"orderId": "A-1001",'));
    expect(d.format).toBe('text');
    expect(d.text).toBe('{"orderId": "A-1001",');
    expect(d.jsonError).toBeTruthy();
  });

  it('mentions truncation in the JSON error of a cut body', () => {
    const d = decodeBody(textBody('{"a": [1, 2, 3', true));
    expect(d.format).toBe('text');
    expect(d.truncated).toBe(true);
    expect(d.jsonError).toMatch(/truncated/);
  });

  it('keeps plain words as text, not base64', () => {
    for (const word of ['test', 'hello', 'Test', 'abcd', 'password', 'deadbeef', 'Queue123', 'ping', 'QUEUE', 'done', 'retry', 'true1234', 'HelloWorld==', 'abcdefgh']) {
      const d = decodeBody(textBody(word));
      expect(d.layers, word).toEqual([]);
      expect(d.format, word).toBe('text');
      expect(d.text, word).toBe(word);
    }
  });

  it('decodes base64 of JSON', () => {
    const d = decodeBody(textBody(btoa('{"event":"charge","key":"A-1001:charge"}')));
    expect(d.layers).toEqual(['base64']);
    expect(d.format).toBe('json');
    expect(d.json).toEqual({ event: 'charge', key: 'A-1001:charge' });
    expect(describeLayers(d)).toBe('base64 → JSON');
  });

  it('decodes base64 of readable text, including MIME line breaks', () => {
    const msg = 'The quick brown fox jumps over the lazy dog. '.repeat(4);
    const b64 = btoa(msg);
    const mime = b64.match(/.{1,76}/g)!.join('\r\n');
    expect(decodeBody(textBody(b64)).text).toBe(msg);
    const d = decodeBody(textBody(mime));
    expect(d.layers).toEqual(['base64']);
    expect(d.text).toBe(msg);
  });

  it('does not treat base64 of random binary as a layer', () => {
    const b64 = toBase64(new Uint8Array([0x00, 0xff, 0x10, 0x80, 0x81, 0x02, 0x03, 0x99, 0x00]));
    const d = decodeBody(textBody(b64));
    expect(d.layers).toEqual([]);
    expect(d.format).toBe('text');
    expect(d.text).toBe(b64);
  });

  it('inflates gzip', () => {
    const d = decodeBody(bytesBody(gzipSync(utf8('{"a":1}'))));
    expect(d.layers).toEqual(['gzip']);
    expect(d.format).toBe('json');
    expect(d.json).toEqual({ a: 1 });
  });

  it('peels gzip inside base64 text', () => {
    const d = decodeBody(textBody(toBase64(gzipSync(utf8('{"nested":true}')))));
    expect(d.layers).toEqual(['base64', 'gzip']);
    expect(d.json).toEqual({ nested: true });
    expect(describeLayers(d)).toBe('base64 → gzip → JSON');
  });

  it('keeps what inflated from a truncated gzip body and says so', () => {
    const text = 'line of text that repeats\n'.repeat(2000);
    const gz = gzipSync(utf8(text));
    const d = decodeBody(bytesBody(gz.subarray(0, Math.floor(gz.length / 2)), true));
    expect(d.layers).toEqual(['gzip']);
    expect(d.truncated).toBe(true);
    expect(d.warnings.join(' ')).toMatch(/ended early/);
    expect(d.text.length).toBeGreaterThan(1000);
    expect(text.startsWith(d.text)).toBe(true);
  });

  it('treats a corrupt gzip header as binary with a warning', () => {
    const d = decodeBody(bytesBody(new Uint8Array([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0xff, 0xde, 0xad])));
    expect(d.layers).toEqual([]);
    expect(d.format).toBe('binary');
    expect(d.warnings.length).toBeGreaterThan(0);
  });

  it('classifies invalid UTF-8 as binary', () => {
    const d = decodeBody(bytesBody(new Uint8Array([0x48, 0x69, 0xc3, 0x28, 0xa0, 0xa1])));
    expect(d.format).toBe('binary');
    expect(d.text).toBe('');
    expect(Array.from(d.bytes)).toEqual([0x48, 0x69, 0xc3, 0x28, 0xa0, 0xa1]);
  });

  it('classifies NUL-containing UTF-8 (e.g. protobuf) as binary', () => {
    expect(decodeBody(bytesBody(new Uint8Array([0x0a, 0x03, 0x61, 0x62, 0x63, 0x10, 0x00]))).format).toBe('binary');
  });

  it('keeps HTML as text, unchanged', () => {
    const html = '<img src=x onerror="alert(1)"><script>alert(2)</script>';
    const d = decodeBody(textBody(html));
    expect(d.format).toBe('text');
    expect(d.text).toBe(html);
  });

  it('warns when transport base64 is invalid and shows the stored text', () => {
    const d = decodeBody({ encoding: 'base64', data: 'not base64!', sizeBytes: 11, truncated: false });
    expect(d.text).toBe('not base64!');
    expect(d.warnings[0]).toMatch(/not valid base64/);
  });

  it('handles empty bodies', () => {
    const d = decodeBody(textBody(''));
    expect(d.format).toBe('text');
    expect(d.text).toBe('');
    expect(bodyPreview(d)).toBe('');
  });

  it('previews on one line with an ellipsis', () => {
    const d = decodeBody(textBody(JSON.stringify({ text: 'x'.repeat(500) })));
    const p = bodyPreview(d, 40);
    expect(p).not.toContain('\n');
    expect(p.length).toBe(40);
    expect(p.endsWith('…')).toBe(true);
    expect(bodyPreview(decodeBody(bytesBody(new Uint8Array([0xff, 0xfe, 0x00]))))).toBe('binary, 3 bytes');
  });
});

describe('hexDump', () => {
  it('uses the hexdump -C layout', () => {
    const bytes = utf8('{"id": 1, "name": "A"}\n');
    expect(hexDump(bytes)).toBe(
      '00000000  7b 22 69 64 22 3a 20 31  2c 20 22 6e 61 6d 65 22  |{"id": 1, "name"|\n' +
        '00000010  3a 20 22 41 22 7d 0a                              |: "A"}.|',
    );
  });

  it('dumps a window with absolute offsets', () => {
    const bytes = new Uint8Array(64).map((_, i) => i);
    const lines = hexDumpLines(bytes, { offset: 32, length: 20 });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^00000020 {2}20 21 22/);
    expect(lines[1]).toMatch(/^00000030 {2}30 31 32 33 {2}/);
  });

  it('clamps offsets outside the data', () => {
    expect(hexDump(new Uint8Array(4), { offset: 100 })).toBe('');
    expect(hexDump(new Uint8Array(4), { offset: -5, length: 2 })).toMatch(/^00000000 {2}00 00 /);
    expect(hexDump(new Uint8Array(0))).toBe('');
  });
});

describe('decodeBody properties', () => {
  it('never throws on arbitrary bytes, and binary/text/json are consistent', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), fc.boolean(), (bytes, truncated) => {
        const d = decodeBody(bytesBody(bytes, truncated));
        expect(['json', 'text', 'binary']).toContain(d.format);
        if (d.format === 'binary') expect(d.text).toBe('');
        if (d.format === 'json') expect(() => JSON.parse(d.text) as unknown).not.toThrow();
        expect(d.sizeBytes).toBe(bytes.length);
      }),
      { numRuns: 500 },
    );
  });

  it('never throws on arbitrary strings, in either encoding field', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 512 }), fc.constantFrom<'utf8' | 'base64'>('utf8', 'base64'), (data, encoding) => {
        const d = decodeBody({ encoding, data, sizeBytes: data.length, truncated: false });
        expect(typeof d.text).toBe('string');
      }),
      { numRuns: 500 },
    );
  });

  it('never throws on gzip magic followed by garbage', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (tail) => {
        const bytes = new Uint8Array([0x1f, 0x8b, 0x08, ...tail]);
        expect(() => decodeBody(bytesBody(bytes))).not.toThrow();
      }),
      { numRuns: 300 },
    );
  });

  it('round-trips JSON through base64', () => {
    fc.assert(
      fc.property(fc.oneof(fc.array(fc.jsonValue()), fc.dictionary(fc.string(), fc.jsonValue())), (value) => {
        const json = JSON.stringify(value);
        const d = decodeBody(textBody(toBase64(utf8(json))));
        expect(d.layers).toEqual(['base64']);
        expect(d.format).toBe('json');
        expect(d.json).toEqual(JSON.parse(json));
      }),
      { numRuns: 300 },
    );
  });

  it('round-trips bytes through gzip (and gzip inside base64)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 400 }), fc.boolean(), (s, wrap) => {
        const gz = gzipSync(strToU8(s));
        const d = wrap ? decodeBody(textBody(toBase64(gz))) : decodeBody(bytesBody(gz));
        expect(d.layers.slice(0, wrap ? 2 : 1)).toEqual(wrap ? ['base64', 'gzip'] : ['gzip']);
        const afterGzip = wrap ? 2 : 1;
        if (d.layers.length === afterGzip) {
          expect(new TextDecoder().decode(d.bytes)).toBe(s);
          if (d.format === 'text') expect(d.text).toBe(s);
          if (d.format === 'json') expect(d.json).toEqual(JSON.parse(s));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('pretty JSON parses to the same value as the original', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const src = JSON.stringify(value);
        expect(JSON.parse(prettyJson(src))).toEqual(JSON.parse(src));
      }),
      { numRuns: 500 },
    );
  });
});
