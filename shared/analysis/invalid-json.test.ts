import { describe, expect, it } from 'vitest';
import { analyzeMessage, summarizeQueue } from './index';
import { msg } from './fixtures/corpus';

/**
 * Rule P1b (`invalid-json`, review): a text body that should be JSON — declared so by its content
 * type, or opening like a JSON object/array — but does not parse (cut by a producer, corrupted) is a
 * poison message: every redelivery fails the same way. It is not a plain `ok` "text" body.
 */
describe('invalid JSON bodies (rule P1b)', () => {
  it('a body declared application/json that does not parse: review, naming the declaration and the parser error', () => {
    const a = analyzeMessage(msg({ rawBody: '{"orderId":"A-1001","operation":"charge","amountCe', properties: { contentType: 'application/json', messageId: 'A-1001:charge' } }));
    expect(a.verdict).toBe('review');
    expect(a.payload.findings.map((f) => [f.rule, f.severity])).toEqual([['invalid-json', 'review']]);
    expect(a.reasons[0]).toMatch(/^the body is declared application\/json but is not valid JSON \(.+\): a consumer that parses it fails on every redelivery/);
    expect(a.payload.format).toBe('text');
  });

  it('a body that opens like a JSON object or array without a content type: review', () => {
    for (const rawBody of ['{"orderId":"A-1","op":"charge"', "{orderId: 'A-1'}", '  [{"orderId":"A-1"}', '["a", ]', '\uFEFF{"a":1,}']) {
      const a = analyzeMessage(msg({ rawBody }));
      expect({ rawBody, verdict: a.verdict, rule: a.payload.findings[0]?.rule }).toEqual({ rawBody, verdict: 'review', rule: 'invalid-json' });
      expect(a.reasons[0]).toMatch(/^the body looks like JSON but is not valid JSON/);
    }
  });

  it('plain text, log-like lines, valid JSON and binary keep their verdicts', () => {
    for (const rawBody of ['hello world', '[INFO] order A-1 charged', '[1] first', 'orderId=A-1']) {
      const a = analyzeMessage(msg({ rawBody }));
      expect({ rawBody, verdict: a.verdict, rule: a.payload.findings[0]?.rule }).toEqual({ rawBody, verdict: 'ok', rule: 'not-json' });
    }
    expect(analyzeMessage(msg({ rawBody: '{"orderId":"A-1"}', properties: { contentType: 'application/json' } })).payload.format).toBe('json');
    // A body that opens like a JSON object is held to JSON whatever its content type says.
    expect(analyzeMessage(msg({ rawBody: '{not json', properties: { contentType: 'text/plain' } })).payload.findings[0]?.rule).toBe('invalid-json');
    expect(analyzeMessage(msg({ rawBody: 'a=1', headers: { 'Content-Type': 'application/cloudevents+json; charset=utf-8' } })).payload.findings[0]?.rule).toBe('invalid-json');
  });

  it('the queue summary counts them as to review', () => {
    const s = summarizeQueue([msg({ id: 'a', rawBody: '{"orderId":"A-1"' }), msg({ id: 'b', rawBody: '{"orderId":"A-2"}' }), msg({ id: 'c', rawBody: 'plain' })]);
    expect(s.verdicts).toEqual({ ok: 2, review: 1, flag: 0 });
    expect(s.reasons.find((r) => r.rule === 'invalid-json')).toMatchObject({ severity: 'review', count: 1, exampleIds: ['a'] });
  });
});
