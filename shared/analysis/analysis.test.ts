import { describe, expect, it } from 'vitest';
import type { QueueMessage } from '../domain';
import { analyzeMessage, summarizeQueue, type MessageAnalysis } from './index';
import { CORPUS, msg } from './fixtures/corpus';
import { MAX_ARRAY_ITEMS, MAX_OBJECT_MEMBERS, MAX_WALK_DEPTH, MAX_WALK_NODES } from './payload';

describe('labelled corpus: key, key verdict, message verdict and reasons', () => {
  for (const f of CORPUS) {
    it(f.label, () => {
      const a = analyzeMessage(f.message, f.options);
      const all = a.reasons.join(' | ');
      expect({ key: a.key?.key ?? null, keyVerdict: a.keyVerdict.verdict, verdict: a.verdict }).toEqual({ key: f.key, keyVerdict: f.keyVerdict, verdict: f.verdict });
      if (f.keySource !== undefined) expect(a.key?.source).toBe(f.keySource);
      if (f.label2 !== undefined) expect(a.payload.label).toBe(f.label2);
      if (f.envelope !== undefined) expect(a.payload.envelope).toBe(f.envelope);
      if (f.operation !== undefined) expect(a.operation).toBe(f.operation);
      for (const r of f.reasons) expect(all).toContain(r);
      for (const r of f.notReasons ?? []) expect(all).not.toContain(r);
      for (const r of f.keyReasons ?? []) expect(a.keyVerdict.reason).toContain(r);
      expect(a.keyVerdict.reason.startsWith(`${a.keyVerdict.verdict}:`)).toBe(true);
    });
  }
});

/** `payload.findings` and the size check of `a`, by sentence: the severity each reason stands for. */
function severities(a: MessageAnalysis): string[] {
  const by = new Map<string, string>(a.payload.findings.map((f) => [f.text, f.severity]));
  if (a.size.reason !== null) by.set(a.size.reason, a.size.verdict === 'over-limit' ? 'flag' : 'review');
  return a.reasons.map((r) => by.get(r) ?? 'unknown');
}

describe('reasons: most severe first, so the first explains the verdict (rule P9)', () => {
  const idsOnly = { orderId: 'A-1001', amountCents: 1200, currency: 'EUR', note: 'paid by card on the shop' };

  it('a large size (review) comes before an ok payload sentence', () => {
    const a = analyzeMessage(msg({ body: idsOnly }), { rules: { maxMessageBytes: 100 } });
    expect(a.size.verdict).toBe('large');
    expect(a.verdict).toBe('review');
    expect(a.reasons[0]).toMatch(/^large payload: \d+ B \(\d+% of 100 B, RabbitMQ max_message_size \(100 B\)\)/);
    expect(a.reasons[1]).toMatch(/^only identifiers and fixed values/);
    expect(severities(a)).toEqual(['review', 'ok']);
  });

  it('an over-limit size (flag) comes before a review payload sentence', () => {
    const a = analyzeMessage(msg({ queueId: 'sqs:orders', body: { orderId: 'A-1001', status: 'paid' }, sizeBytes: 3 * 1024 * 1024 }));
    expect(a.payload.verdict).toBe('review');
    expect(a.verdict).toBe('flag');
    expect(a.reasons[0]).toBe('large payload: 3 MiB is over the limit of 256 KiB (SQS default MaximumMessageSize (256 KiB; a queue can allow up to 1 MiB)): a re-send or redrive to this queue is rejected; store the data elsewhere and send a reference.');
    expect(a.reasons[1]).toMatch(/^`status` carries state that can change before a retry/);
    expect(severities(a)).toEqual(['flag', 'review']);
  });

  it('among equals the payload comes first, and less severe payload reasons come after the size', () => {
    const body = { order: { id: 'A-1', status: 'paid' }, shippingAddress: { city: 'Lisboa' }, before: { status: 'new' } };
    const large = analyzeMessage(msg({ body, sizeBytes: 180 }), { rules: { maxMessageBytes: 200 } });
    expect(large.size.verdict).toBe('large');
    expect(severities(large)).toEqual(['flag', 'review', 'review', 'ok']);
    expect(large.reasons[0]).toMatch(/^`order\.status` embeds state/);
    expect(large.reasons[1]).toMatch(/^`shippingAddress` carries state/);
    expect(large.reasons[2]).toMatch(/^large payload/);
    const over = analyzeMessage(msg({ body, sizeBytes: 300 }), { rules: { maxMessageBytes: 200 } });
    expect(severities(over)).toEqual(['flag', 'flag', 'review', 'ok']);
    expect(over.reasons[1]).toMatch(/^large payload: 300 B is over the limit of 200 B/);
  });
});

/** A body object with `n` plain members `k0`…, then `extra`'s members. */
function wide(n: number, extra: Record<string, unknown>): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) o[`k${String(i)}`] = i;
  return Object.assign(o, extra);
}
const ORDER = { order: { id: 'A-1', status: 'paid' } };

describe('analysis limits: fields the walk did not read make the payload review, not ok (rule P10)', () => {
  it('an object wider than MAX_OBJECT_MEMBERS', () => {
    expect(MAX_OBJECT_MEMBERS).toBe(1000);
    const a = analyzeMessage(msg({ body: wide(1100, ORDER) }));
    expect(a.verdict).toBe('review');
    expect(a.reasons).toEqual(['the payload has 1,101 members at `body` (the analysis reads 1,000 per object): the members beyond were not classified; look at it by hand.']);
    expect(a.payload.findings).toEqual([{ rule: 'analysis-limit', severity: 'review', text: a.reasons[0], fields: ['body'] }]);
    expect(a.payload.fieldsTruncated).toBe(true);
    // Below the bound nothing changes: the order is read and flagged.
    expect(analyzeMessage(msg({ body: wide(999, ORDER) })).payload.findings.map((f) => f.rule)).toEqual(['embedded-entity']);
  });

  it('a value nested deeper than MAX_WALK_DEPTH', () => {
    expect(MAX_WALK_DEPTH).toBe(24);
    let body: unknown = ORDER;
    for (let i = 0; i < 24; i++) body = { a: body };
    const a = analyzeMessage(msg({ body }));
    expect(a.verdict).toBe('review');
    expect(a.reasons).toEqual([`the payload nests deeper than 24 levels at \`body${'.a'.repeat(24)}.order\` (the analysis reads 24): the values below were not classified; look at it by hand.`]);
    expect(a.payload.findings[0]?.fields).toEqual([`body${'.a'.repeat(24)}.order`]);
    let shallow: unknown = ORDER;
    for (let i = 0; i < 22; i++) shallow = { a: shallow };
    expect(analyzeMessage(msg({ body: shallow })).verdict).toBe('flag');
  });

  it('more values than MAX_WALK_NODES', () => {
    expect(MAX_WALK_NODES).toBe(5000);
    const groups: Record<string, unknown> = {};
    for (let i = 0; i < 60; i++) groups[`g${String(i)}`] = Array.from({ length: 100 }, (_, j) => j);
    const a = analyzeMessage(msg({ body: { ...groups, ...ORDER } }));
    expect(a.verdict).toBe('review');
    // 1 root + 49 × (1 array + 100 numbers) + the array g49 + 49 of its numbers = 5,000 values read.
    expect(a.reasons).toEqual(['the payload has more than 5,000 values (the analysis reads 5,000): the values from `body.g49[49]` on were not classified; look at it by hand.']);
  });

  it('an array of objects longer than MAX_ARRAY_ITEMS; an array of scalars is fine as before', () => {
    expect(MAX_ARRAY_ITEMS).toBe(100);
    const rows = Array.from({ length: 150 }, (_, i) => (i === 120 ? { id: i, status: 'blocked' } : { id: i, note: 'n' }));
    const a = analyzeMessage(msg({ body: { batchId: 'B-1', rows } }));
    expect(a.verdict).toBe('review');
    expect(a.reasons).toEqual(['the payload has 150 elements at `body.rows` (the analysis reads 100 per array): the elements beyond were not classified; look at it by hand.']);
    // Objects after 100 scalars are unread too.
    const mixed = analyzeMessage(msg({ body: { batchId: 'B-1', tags: [...Array.from({ length: 100 }, (_, i) => `t${String(i)}`), { id: 1, status: 'x' }] } }));
    expect(mixed.payload.findings.map((f) => [f.rule, f.fields])).toEqual([['analysis-limit', ['body.tags']]]);
    // Scalars beyond the bound would be classified as the ones read: no finding.
    const tags = analyzeMessage(msg({ body: { orderId: 'A-1', tags: Array.from({ length: 150 }, (_, i) => `t${String(i)}`) } }));
    expect(tags.verdict).toBe('ok');
    expect(tags.payload.findings.map((f) => f.rule)).toEqual(['no-mutable-state']);
    expect(tags.payload.fieldsTruncated).toBe(true);
  });

  it('more string fields holding JSON than MAX_JSON_IN_STRING', () => {
    const body: Record<string, unknown> = {};
    for (let i = 0; i < 8; i++) body[`s${String(i)}`] = JSON.stringify({ n: i });
    body.s8 = JSON.stringify(ORDER);
    const a = analyzeMessage(msg({ body }));
    expect(a.verdict).toBe('review');
    expect(a.reasons).toEqual(['the payload has more than 8 string fields holding JSON (the analysis decodes 8): `body.s8` and the ones after it were not classified; look at it by hand.']);
  });

  it('keeps more severe findings first, and the summary counts the rule', () => {
    const a = analyzeMessage(msg({ body: { ...ORDER, rows: Array.from({ length: 101 }, (_, i) => ({ id: i })) } }));
    expect(a.payload.findings.map((f) => [f.rule, f.severity])).toEqual([
      ['embedded-entity', 'flag'],
      ['analysis-limit', 'review'],
    ]);
    const s = summarizeQueue([msg({ id: 'w', body: wide(1100, ORDER) }), msg({ id: 'ok', body: { orderId: 'A-1' } })]);
    expect(s.verdicts).toEqual({ ok: 1, review: 1, flag: 0 });
    expect(s.reasons).toEqual([{ rule: 'analysis-limit', severity: 'review', count: 1, example: analyzeMessage(msg({ body: wide(1100, ORDER) })).reasons[0], exampleIds: ['w'] }]);
  });

  it('no finding where nothing unread could change the verdict: inside a snapshot, or a snapshot queue', () => {
    const inSnapshot = analyzeMessage(msg({ body: { orderId: 'A-1', snapshot: wide(1100, ORDER) } }));
    expect(inSnapshot.verdict).toBe('ok');
    expect(inSnapshot.payload.findings.some((f) => f.rule === 'analysis-limit')).toBe(false);
    const marked = analyzeMessage(msg({ body: { orderId: 'A-1', lines: Array.from({ length: 150 }, (_, i) => ({ id: i, status: 'x' })) } }), { rules: { snapshotFields: ['lines[*]'] } });
    expect(marked.verdict).toBe('ok');
    expect(marked.payload.label).toBe('ok (intentional snapshot: lines[*])');
    expect(analyzeMessage(msg({ body: wide(1100, ORDER) }), { rules: { queueIsSnapshot: true } }).verdict).toBe('ok');
    expect(analyzeMessage(msg({ body: wide(1100, ORDER) }), { rules: { snapshotFields: ['**'] } }).verdict).toBe('ok');
  });
});

describe('a Redis stream pending entry whose entry was trimmed', () => {
  it('is flagged as lost (entry-deleted), not an ok empty body; an ordinary empty body stays ok', () => {
    const lost = analyzeMessage(msg({ rawBody: '', queueId: 'redis-stream:orders', properties: { entryDeleted: true } }));
    expect(lost.verdict).toBe('flag');
    expect(lost.payload.findings.map((f) => f.rule)).toEqual(['entry-deleted']);
    expect(lost.payload.reasons[0]).toMatch(/deleted \(trimmed\) while it was pending: its data is lost/);
    const empty = analyzeMessage(msg({ rawBody: '' }));
    expect(empty.verdict).toBe('ok');
    expect(empty.payload.findings.map((f) => f.rule)).toEqual(['not-json']);
    // Only a literal true counts (properties are broker data).
    expect(analyzeMessage(msg({ rawBody: '', properties: { entryDeleted: 'true' } })).verdict).toBe('ok');
  });
});

describe('several idempotency-key headers (rule K1b)', () => {
  const ambiguous = { 'Idempotency-Key': 'A-1001:charge', 'idempotency-key': 'A-1001:refund' };
  const body = { orderId: 'A-1001', operation: 'charge' };

  it('different values make the message review, with the ambiguity first among the review reasons, also in a snapshot queue', () => {
    const a = analyzeMessage(msg({ headers: ambiguous, body }));
    expect(a.verdict).toBe('review');
    expect(a.payload.label).toBe('review');
    expect(a.keyVerdict.verdict).toBe('business-derived');
    expect(a.reasons[0]).toMatch(/^ambiguous idempotency key: the headers "Idempotency-Key" \('A-1001:charge'\) and "idempotency-key" \('A-1001:refund'\)/);
    expect(severities(a)).toEqual(['review', 'ok']);
    // Marking the payload as a snapshot does not make an ambiguous key safe.
    const snap = analyzeMessage(msg({ headers: ambiguous, body }), { rules: { queueIsSnapshot: true } });
    expect(snap.verdict).toBe('review');
    // A flag stays first; the ambiguity comes before the payload's own review findings.
    const mixed = analyzeMessage(msg({ headers: ambiguous, body: { orderId: 'A-1001', status: 'paid', order: { id: 'A-1001', status: 'paid' } } }));
    expect(mixed.payload.findings.map((f) => [f.rule, f.severity])).toEqual([
      ['embedded-entity', 'flag'],
      ['key-headers', 'review'],
      ['loose-state', 'review'],
    ]);
    expect(severities(mixed)).toEqual(['flag', 'review', 'review']);
  });

  it('a text body keeps its own sentence after the ambiguity', () => {
    const a = analyzeMessage(msg({ headers: { 'Idempotency-Key': 'A-1', 'X-Idempotency-Key': 'B-2' }, rawBody: 'charge A-1' }));
    expect(a.verdict).toBe('review');
    expect(a.payload.findings.map((f) => f.rule)).toEqual(['key-headers', 'not-json']);
    expect(a.reasons[1]).toBe('the body is text, not JSON: its fields were not classified.');
  });

  it('the same value under two spellings keeps the verdict ok and adds a mention last', () => {
    const a = analyzeMessage(msg({ headers: { 'Idempotency-Key': 'A-1001:charge', 'idempotency-key': 'A-1001:charge' }, body }));
    expect(a.verdict).toBe('ok');
    expect(a.payload.findings.map((f) => [f.rule, f.severity])).toEqual([
      ['no-mutable-state', 'ok'],
      ['key-headers', 'ok'],
    ]);
    expect(a.reasons[1]).toContain('both hold the key');
  });

  it('the queue summary counts it as a review reason, the same with or without sentences', () => {
    const messages = [msg({ id: 'amb', headers: ambiguous, body }), msg({ id: 'one', headers: { 'Idempotency-Key': 'A-1002:charge' }, body: { orderId: 'A-1002', operation: 'charge' } })];
    const s = summarizeQueue(messages);
    expect(s.verdicts).toEqual({ ok: 1, review: 1, flag: 0 });
    expect(s.reasons).toEqual([{ rule: 'key-headers', severity: 'review', count: 1, example: analyzeMessage(messages[0] as QueueMessage).reasons[0], exampleIds: ['amb'] }]);
  });
});

describe('a header key beside a different body key field (rule K1c)', () => {
  const body = { orderId: 'X-3', operation: 'charge', idempotencyKey: 'X-3:refund' };
  const headers = { 'Idempotency-Key': 'X-3:charge' };

  it('makes the message review with the ambiguity first, the header key still used, also in a snapshot queue', () => {
    const a = analyzeMessage(msg({ headers, body }));
    expect(a.verdict).toBe('review');
    expect(a.payload.label).toBe('review');
    expect(a.key).toMatchObject({ key: 'X-3:charge', source: 'header Idempotency-Key' });
    expect(a.keyVerdict.verdict).toBe('business-derived');
    expect(a.reasons[0]).toMatch(/^ambiguous idempotency key: the header "Idempotency-Key" holds 'X-3:charge' but body\.idempotencyKey holds 'X-3:refund'; this analysis uses the header/);
    expect(severities(a)).toEqual(['review', 'ok']);
    expect(analyzeMessage(msg({ headers, body }), { rules: { queueIsSnapshot: true } }).verdict).toBe('review');
    expect(analyzeMessage(msg({ headers, body }), { detail: 'verdict' }).verdict).toBe('review');
  });

  it('after the flags, after a key-headers finding, before the payload review findings', () => {
    const a = analyzeMessage(msg({ headers: { 'Idempotency-Key': 'X-3:charge', 'idempotency-key': 'X-3:void' }, body: { ...body, status: 'paid', order: { id: 'X-3', status: 'paid' } } }));
    expect(a.payload.findings.map((f) => [f.rule, f.severity])).toEqual([
      ['embedded-entity', 'flag'],
      ['key-headers', 'review'],
      ['key-header-body', 'review'],
      ['loose-state', 'review'],
    ]);
  });

  it('the same value keeps the verdict ok and adds a mention last', () => {
    const a = analyzeMessage(msg({ headers, body: { ...body, idempotencyKey: 'X-3:charge' } }));
    expect(a.verdict).toBe('ok');
    expect(a.payload.findings.map((f) => [f.rule, f.severity])).toEqual([
      ['no-mutable-state', 'ok'],
      ['key-header-body', 'ok'],
    ]);
    expect(a.reasons[1]).toBe(`the header "Idempotency-Key" and body.idempotencyKey both hold the key 'X-3:charge', so a consumer gets the same key whichever it reads.`);
  });

  it('the queue summary counts it as a review reason', () => {
    const messages = [msg({ id: 'amb', headers, body }), msg({ id: 'same', headers: { 'Idempotency-Key': 'X-4:charge' }, body: { orderId: 'X-4', operation: 'charge', idempotencyKey: 'X-4:charge' } })];
    const s = summarizeQueue(messages);
    expect(s.verdicts).toEqual({ ok: 1, review: 1, flag: 0 });
    expect(s.reasons).toEqual([{ rule: 'key-header-body', severity: 'review', count: 1, example: analyzeMessage(messages[0] as QueueMessage).reasons[0], exampleIds: ['amb'] }]);
  });
});
