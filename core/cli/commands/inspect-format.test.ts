import { describe, expect, it } from 'vitest';
import { summarizeQueue } from '../../../shared/analysis';
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
});
