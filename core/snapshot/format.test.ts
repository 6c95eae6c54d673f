import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { QueuescopeError, type QueueMessage } from '../../shared/domain';
import { formatHeaderLine, formatMessageLine, parseSnapshotLine, toQueueMessage } from './format';

const loc = { file: 'x.jsonl', line: 7 };

const headerValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.string(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.string(), tie('v'), { maxKeys: 3 }),
  ),
})).v;

const messageArb: fc.Arbitrary<QueueMessage> = fc.record({
  id: fc.string(),
  queueId: fc.string(),
  queueName: fc.string(),
  position: fc.option(fc.nat(), { nil: null }),
  body: fc.oneof(
    fc.string({ unit: 'grapheme' }).map((s) => ({ encoding: 'utf8' as const, data: s, sizeBytes: Buffer.byteLength(s), truncated: false })),
    fc.uint8Array().map((b) => ({ encoding: 'base64' as const, data: Buffer.from(b).toString('base64'), sizeBytes: b.length, truncated: false })),
  ),
  headers: fc.dictionary(fc.string(), headerValue, { maxKeys: 4 }),
  properties: fc.dictionary(fc.string(), headerValue, { maxKeys: 4 }),
  meta: fc.record(
    { state: fc.string(), enqueuedAt: fc.option(fc.nat(), { nil: null }), receiveCount: fc.option(fc.nat(), { nil: null }), failedReason: fc.option(fc.string(), { nil: null }) },
    { requiredKeys: [] },
  ),
}) as fc.Arbitrary<QueueMessage>;

describe('snapshot lines', () => {
  it('a message survives format → parse unchanged (property)', () => {
    fc.assert(
      fc.property(messageArb, (m) => {
        const line = formatMessageLine(m);
        expect(line.endsWith('\n')).toBe(true);
        expect(line.slice(0, -1)).not.toContain('\n'); // one line, whatever the body holds
        const parsed = parseSnapshotLine(line.slice(0, -1), loc);
        expect(parsed.type).toBe('message');
        expect(toQueueMessage(parsed as never)).toEqual(JSON.parse(JSON.stringify(m)));
      }),
      { numRuns: 300 },
    );
  });

  it('any other text is rejected only with SNAPSHOT_INVALID naming the line (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (text) => {
        try {
          parseSnapshotLine(text, loc);
        } catch (e) {
          expect(e).toBeInstanceOf(QueuescopeError);
          expect((e as QueuescopeError).code).toBe('SNAPSHOT_INVALID');
          expect((e as QueuescopeError).message).toContain('line 7');
        }
      }),
      { numRuns: 500 },
    );
  });

  it('names the field that is wrong', () => {
    const m = JSON.parse(formatMessageLine({ id: '1', queueId: 'q', queueName: 'q', position: 0, body: { encoding: 'utf8', data: 'x', sizeBytes: 1, truncated: false }, headers: {}, properties: {}, meta: {} }));
    m.body.sizeBytes = -1;
    expect(() => parseSnapshotLine(JSON.stringify(m), loc)).toThrow(/line 7, field "body\.sizeBytes"/);
    m.body.sizeBytes = 1;
    m.body.encoding = 'base64';
    m.body.data = 'not base64!';
    expect(() => parseSnapshotLine(JSON.stringify(m), loc)).toThrow(/field "body\.data".*base64/);
    expect(() => parseSnapshotLine('{"type":"banana"}', loc)).toThrow(/field "type"/);
    expect(() => parseSnapshotLine('[1,2]', loc)).toThrow(/expected a JSON object/);
    expect(() => parseSnapshotLine('{"type":"queue","version":3}', loc)).toThrow(/version 3 is not supported/);
  });

  it('a header puts type and version first and keeps no stray type', () => {
    const text = formatHeaderLine({
      exportedAt: 5,
      source: {
        broker: 'redis',
        connection: 'redis://127.0.0.1:6379',
        queue: {
          id: 'list:a', name: 'a', broker: 'redis', kind: 'redis-list', depth: 0, inFlight: null, delayed: null, consumers: null, counts: {}, deadLetterTargets: [], deadLetterSources: [], isDeadLetterQueue: false,
          capabilities: { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: 1000, peekStates: [] }, config: {},
        },
      },
    });
    expect(text.startsWith('{"type":"queue","version":1,')).toBe(true);
    expect(parseSnapshotLine(text.trim(), loc)).toMatchObject({ type: 'queue', exportedAt: 5 });
  });
});
