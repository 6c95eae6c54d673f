import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createAdapter } from '../adapters';
import { atLeast, inspectQueue, withQueueSizeLimit } from './inspect';
import { readQueue } from './read';
import { resolveInspectSettings } from './settings';

const fixture = fileURLToPath(new URL('../../test/fixtures/snapshots/two-queues.jsonl', import.meta.url));
const adapter = createAdapter({ kind: 'snapshot', path: fixture });
afterAll(() => adapter.close());

describe('resolveInspectSettings', () => {
  const project = { queues: [{ match: 'orders*', keyRules: [{ kind: 'header' as const, name: 'X-Key' }], snapshotFields: [], queueIsSnapshot: false, note: 'from the repo' }] };
  const profile = { queues: [{ match: '*', keyRules: [], snapshotFields: ['order.*'], queueIsSnapshot: false }] };

  it('takes the first source with a matching entry, names it, and falls back to the built-in rules', () => {
    const r = resolveInspectSettings([{ label: 'queuescope.config.json', inspect: project }, { label: 'connection "Local"', inspect: profile }], { name: 'orders.work', id: 'rabbitmq:%2F/orders.work' });
    expect(r.source).toBe('"orders*" in queuescope.config.json');
    expect(r.rules.keyRules).toEqual([{ kind: 'header', name: 'X-Key' }]);
    expect(r.note).toBe('from the repo');
    expect(resolveInspectSettings([{ label: 'queuescope.config.json', inspect: project }, { label: 'connection "Local"', inspect: profile }], { name: 'emails', id: 'sqs:emails' }).source).toBe('"*" in connection "Local"');
    expect(resolveInspectSettings([{ label: 'x', inspect: null }], { name: 'emails', id: 'e' })).toMatchObject({ source: 'built-in rules', entry: null });
  });

  it('honours an entry restricted to one connection', () => {
    const only = { queues: [{ match: '*', connection: 'Prod', keyRules: [], snapshotFields: [], queueIsSnapshot: true }] };
    expect(resolveInspectSettings([{ label: 'f', inspect: only }], { name: 'q', id: 'q' }, 'Staging').source).toBe('built-in rules');
    expect(resolveInspectSettings([{ label: 'f', inspect: only }], { name: 'q', id: 'q' }, 'Prod').rules.queueIsSnapshot).toBe(true);
  });
});

describe('atLeast', () => {
  it('orders ok < review < flag', () => {
    expect(atLeast('flag', 'review')).toBe(true);
    expect(atLeast('review', 'flag')).toBe(false);
    expect(atLeast('ok', 'ok')).toBe(true);
  });
});

describe('readQueue / inspectQueue on a snapshot', () => {
  it('reads every message once, and says when a limit left some out', async () => {
    const q = await adapter.getQueue('stream:orders-stream');
    const seen: string[] = [];
    const all = await readQueue(adapter, q, { pageSize: 1 }, (ms) => seen.push(...ms.map((m) => m.id)));
    expect(all).toMatchObject({ read: 3, partial: false, sideEffects: [] });
    expect(new Set(seen).size).toBe(3);
    const limited = await readQueue(adapter, q, { limit: 2, pageSize: 1 }, () => undefined);
    expect(limited.read).toBe(2);
    expect(limited.partial).toBe(true);
    expect(limited.partialReason).toMatch(/Limited to the first 2 of 3 messages/);
    await expect(readQueue(adapter, q, { limit: 0 }, () => undefined)).rejects.toThrow(/at least 1/);
  });

  it('reports progress and one row per message, with the summary counting every message', async () => {
    const progress: number[] = [];
    let total: number | null = null;
    const r = await inspectQueue(adapter, 'stream:orders-stream', { rowLimit: 2, pageSize: 1 }, { report: (p) => progress.push(p.processed), setTotal: (t) => (total = t) });
    expect(r.analysed).toBe(3);
    expect(r.summary.total).toBe(3);
    expect(total).toBe(3);
    expect(progress.at(-1)).toBe(3);
    expect(r.messages.length).toBeGreaterThanOrEqual(2);
    expect(r.messagesTruncated).toBe(r.messages.length < 3);
    for (const m of r.messages) expect(['ok', 'review', 'flag']).toContain(m.verdict);
  });
});

describe('withQueueSizeLimit', () => {
  const q = (config: Record<string, unknown>) => ({ config }) as unknown as Parameters<typeof withQueueSizeLimit>[1];
  it("takes SQS MaximumMessageSize from the queue config unless a rule sets maxMessageBytes", () => {
    expect(withQueueSizeLimit({}, q({ maximumMessageSizeBytes: 4096 }))).toEqual({ maxMessageBytes: 4096 });
    expect(withQueueSizeLimit({ maxMessageBytes: 65_536 }, q({ maximumMessageSizeBytes: 4096 }))).toEqual({ maxMessageBytes: 65_536 });
    expect(withQueueSizeLimit({}, q({ maximumMessageSizeBytes: null }))).toEqual({});
    expect(withQueueSizeLimit({}, q({}))).toEqual({});
  });
});
