import { describe, expect, it } from 'vitest';
import { compareDuplicates, summarizeQueue } from '../../../shared/analysis';
import type { QueueMessage } from '../../../shared/domain';
import type { InspectReport } from '../../inspect/inspect';
import { formatInspectReport } from './inspect';

function report(messages: QueueMessage[]): InspectReport {
  return {
    queue: { id: 'redis:list:q', name: 'q', kind: 'redis-list', broker: 'redis', isDeadLetterQueue: false },
    state: null,
    rulesSource: 'built-in rules',
    rules: {},
    analysed: messages.length,
    total: messages.length,
    partial: false,
    partialReason: null,
    sideEffects: [],
    summary: summarizeQueue(messages),
    messages: [],
    messagesTruncated: false,
    comparisons: [],
    elapsedMs: 1,
  } as unknown as InspectReport;
}

const msg = (i: number, body: unknown): QueueMessage => {
  const data = JSON.stringify(body);
  return { id: `m${String(i)}`, queueId: 'redis:list:q', queueName: 'q', position: i, body: { encoding: 'utf8', data, sizeBytes: data.length, truncated: false }, headers: {}, properties: {}, meta: {} };
};

describe('formatInspectReport wording', () => {
  it('says an empty queue had no messages instead of 0% business-derived (0)', () => {
    const text = formatInspectReport(report([]), { rows: 10, width: 120 });
    expect(text).toContain('no messages were analysed');
    expect(text).not.toContain('0% business-derived');
  });

  it('one period key is singular; identical payloads without a key are listed under their heading', () => {
    const text = formatInspectReport(report([msg(0, { week: '2026-W36', idempotencyKey: '2026-W36' }), msg(1, { orderId: 'A-1' }), msg(2, { orderId: 'A-1' })]), { rows: 0, width: 120 });
    expect(text).toContain(', 1 period key,');
    expect(text).toContain('Same payload under different keys or without a key: 1 group');
  });

  it('says on the heading line that a comparison read only part of the other queue', () => {
    const a = [msg(0, { orderId: 'A-1', idempotencyKey: 'A-1:charge' })];
    const b = [msg(1, { orderId: 'A-2', idempotencyKey: 'A-2:charge' })];
    const result = compareDuplicates({ label: 'q', messages: a }, { label: 'q.dlq', messages: b });
    const r = report(a);
    r.comparisons = [{ relation: 'dead-letter-target', label: 'q.dlq', queueId: 'redis:list:q.dlq', result, read: 500, partial: true, note: 'q.dlq: one peek reads at most 500 of 600 messages.' }];
    const text = formatInspectReport(r, { rows: 0, width: 120 });
    expect(text).toContain('Compared with dead-letter queue q.dlq (500 messages, PARTIAL: see the note): 0 shared keys, 0 payloads under different keys in the messages read');
    expect(text).toContain('note: q.dlq: one peek reads at most 500 of 600 messages.');
    r.comparisons = [{ ...r.comparisons[0]!, partial: false, note: null }];
    expect(formatInspectReport(r, { rows: 0, width: 120 })).toContain('Compared with dead-letter queue q.dlq (500 messages): 0 shared keys, 0 payloads under different keys\n');
  });
});
