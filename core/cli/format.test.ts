import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PeekPage, QueueMessage, QueueSummary } from '../../shared/domain';
import { bodyPreview, escapeForTerminal, escapeJsonForTerminal, peekTable, queuesTable, toJson, truncate } from './format';

/** Anything a terminal could interpret: C0, DEL, C1, bidi/invisible format characters, separators, lone surrogates. */
const DANGEROUS = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const hostile = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: fc.constantFrom('\u001b', '[', '2', 'J', ']', '\u0007', '\u009b', '\u202e', '\u2066', '\r', '\n', 'a', '\ud83d', '\ude00', '\u0000', '\u2028') }),
);

function message(data: string): QueueMessage {
  return { id: data, queueId: 'q', queueName: 'q', position: 0, body: { encoding: 'utf8', data, sizeBytes: Buffer.byteLength(data), truncated: false }, headers: {}, properties: {}, meta: { state: data } };
}

describe('terminal safety', () => {
  it('escapeForTerminal leaves nothing a terminal would interpret (property)', () => {
    fc.assert(
      fc.property(hostile, (s) => {
        const out = escapeForTerminal(s);
        expect(DANGEROUS.test(out)).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps ordinary text, emoji and CJK as they are', () => {
    expect(escapeForTerminal('héllo wörld — 你好 😀')).toBe('héllo wörld — 你好 😀');
    expect(escapeForTerminal('a\u001b[2Jb\u009bc\u202ed\n')).toBe('a\\x1b[2Jb\\x9bc\\u202ed\\n');
  });

  it('escapeJsonForTerminal keeps the JSON value identical (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), hostile, (v, s) => {
        const value = { v, s };
        const json = escapeJsonForTerminal(JSON.stringify(value, null, 2));
        expect(JSON.parse(json)).toEqual(JSON.parse(JSON.stringify(value)));
        expect(DANGEROUS.test(json.replace(/\n/g, ''))).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it('a whole peek table built from hostile ids, states and bodies is safe (property)', () => {
    fc.assert(
      fc.property(fc.array(hostile, { maxLength: 5 }), (bodies) => {
        const page: PeekPage = { messages: bodies.map(message), nextCursor: bodies[0] ?? null, total: null, sideEffects: [] };
        const text = peekTable(page);
        expect(DANGEROUS.test(text.replace(/\n/g, ''))).toBe(false);
        expect(DANGEROUS.test(toJson(page).replace(/\n/g, ''))).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});

describe('previews', () => {
  it('text is one line and truncated; binary shows size and first bytes', () => {
    const p = bodyPreview({ encoding: 'utf8', data: '{\n  "a": 1,\n  "b": "' + 'x'.repeat(100) + '"\n}', sizeBytes: 120, truncated: false }, 30);
    expect(p).not.toContain('\n');
    expect(Array.from(p)).toHaveLength(30);
    expect(p.endsWith('…')).toBe(true);
    expect(bodyPreview({ encoding: 'base64', data: Buffer.from([0xff, 0, 1]).toString('base64'), sizeBytes: 3, truncated: false })).toBe('<binary 3 bytes: ff 00 01>');
    expect(bodyPreview({ encoding: 'utf8', data: 'abc', sizeBytes: 5000, truncated: true })).toBe('abc [truncated]');
    expect(truncate('😀😀😀', 2)).toBe('😀…');
  });
});

describe('queues table', () => {
  const base: QueueSummary = {
    id: 'sqs:payments.fifo', name: 'payments.fifo', broker: 'sqs', kind: 'sqs-fifo', depth: 18, inFlight: 0, delayed: 0, consumers: null, counts: {}, deadLetterTargets: [], deadLetterSources: [], isDeadLetterQueue: false,
    capabilities: { canPeekNonDestructively: false, peekSideEffects: [], peekMayDeadLetter: true, canPageFromCursor: false, maxPeekWindow: 100, peekStates: [] }, config: {},
  };

  it('shows a snapshot queue with its recorded depth, the in-file count and why it is partial', () => {
    const q: QueueSummary = { ...base, counts: { 'in snapshot': 12 }, config: { snapshot: { messages: 12, partial: true, partialReason: 'FIFO: one message per group per receive.' } } };
    const text = queuesTable([q], 140);
    const row = text.split('\n').find((l) => l.includes('payments.fifo'))!;
    expect(row.split('│').map((c) => c.trim())).toEqual(['', 'payments.fifo', 'sqs-fifo', '18', '0', '0', '-', '12 partial', '-', '']);
    expect(text).toContain('depth (recorded)');
    expect(text).toContain('partial: payments.fifo: FIFO: one message per group per receive.');
  });

  it('has no snapshot column for live queues', () => {
    const text = queuesTable([base], 140);
    expect(text).not.toContain('in snapshot');
    expect(text).not.toContain('recorded');
  });
});
