import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { QueuescopeError, type PeekOptions, type QueueMessage, type QueueSummary } from '../../shared/domain';
import { createAdapter } from '../adapters';
import { truncateBody } from '../adapters/body';
import type { BrokerAdapter } from '../adapters/types';
import { analyzeMessage, compareDuplicates, createQueueSummary } from './analysis';
import { atLeast, forComparison, inspectQueue, readBrokerVersion, toInspectedMessage, withQueueSizeLimit } from './inspect';
import { INSPECT_MAX_BODY_BYTES, INSPECT_PAGE_BYTES, INSPECT_SNAPSHOT_MAX_BODY_BYTES, MAX_INSPECT_BODY_BYTES, readQueue } from './read';
import { resolveInspectSettings } from './settings';
import { SnapshotWriter } from '../snapshot/writer';

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

/** An in-memory, pageable adapter over `messages` (cursor = index), with optional capabilities. */
function memoryAdapter(queue: Partial<QueueSummary> & { id: string; broker: QueueSummary['broker'] }, messages: QueueMessage[], extra: Partial<BrokerAdapter> = {}): BrokerAdapter & { limits: number[] } {
  const summary: QueueSummary = {
    name: queue.id,
    kind: 'snapshot',
    depth: messages.length,
    inFlight: 0,
    delayed: 0,
    consumers: 0,
    counts: {},
    deadLetterTargets: [],
    deadLetterSources: [],
    isDeadLetterQueue: false,
    capabilities: { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: 1000, peekStates: [] },
    config: {},
    ...queue,
  };
  const limits: number[] = [];
  return {
    broker: 'snapshot',
    limits,
    testConnection: () => Promise.resolve({ ok: true, server: null, checks: [], error: null }),
    listQueues: () => Promise.resolve([summary]),
    getQueue: () => Promise.resolve(summary),
    peek: (_id: string, o: PeekOptions) => {
      limits.push(o.limit);
      const from = o.cursor === undefined || o.cursor === null ? 0 : Number(o.cursor);
      const page = messages.slice(from, from + o.limit);
      const next = from + page.length;
      return Promise.resolve({ messages: page, nextCursor: next < messages.length ? String(next) : null, total: messages.length, sideEffects: [] });
    },
    close: () => Promise.resolve(),
    ...extra,
  };
}

function rabbitMessage(id: string, sizeBytes: number): QueueMessage {
  const data = JSON.stringify({ orderId: id });
  return { id, queueId: 'rabbitmq:%2F/big', queueName: 'big', position: 0, body: { encoding: 'utf8', data, sizeBytes, truncated: false }, headers: {}, properties: { messageId: `${id}:charge` }, meta: {} };
}

describe('broker version through the adapter capability', () => {
  // 20 MiB: over RabbitMQ 4.x's default max_message_size (16 MiB), under 3.8–3.13's (128 MiB).
  const big = [rabbitMessage('A-1', 20 * 1024 * 1024)];

  it("uses the version any adapter reports, whatever the queue's broker name", async () => {
    // A snapshot-like adapter (queue broker 'snapshot', no tuning) that still reports a RabbitMQ 3.13 version.
    let asked = 0;
    const adapter = memoryAdapter({ id: 'rabbitmq:%2F/big', broker: 'snapshot' }, big, {
      brokerVersion: () => {
        asked++;
        return Promise.resolve('3.13.7');
      },
    });
    const r = await inspectQueue(adapter, 'rabbitmq:%2F/big', { compareDeadLetter: false });
    expect(asked).toBe(1);
    expect(r.messages[0]?.verdict).toBe('review');
    expect(r.messages[0]?.reasons.join(' ')).toContain('RabbitMQ 3.13.7 default max_message_size (128 MiB)');
    expect(r.summary.flagged).toBe(0);
  });

  it('does not ask an adapter without the capability (and does not fall back to tuning settings)', async () => {
    let tuningAsked = 0;
    const tuning = {
      sources: () => Promise.resolve([]),
      readSettings: () => {
        tuningAsked++;
        return Promise.reject(new Error('not used'));
      },
      measure: () => Promise.reject(new Error('not used')),
    };
    const adapter = memoryAdapter({ id: 'rabbitmq:%2F/big', broker: 'rabbitmq' }, big, { tuning });
    const r = await inspectQueue(adapter, 'rabbitmq:%2F/big', { compareDeadLetter: false });
    expect(tuningAsked).toBe(0);
    expect(r.messages[0]?.verdict).toBe('flag');
    expect(r.messages[0]?.reasons.join(' ')).toContain('RabbitMQ 4.x default max_message_size (16 MiB; 128 MiB on 3.8–3.13)');
  });

  it('treats an unreadable version as unknown, and passes cancellation on', async () => {
    const failing = memoryAdapter({ id: 'q', broker: 'rabbitmq' }, [], { brokerVersion: () => Promise.reject(new QueuescopeError('MANAGEMENT_UNAVAILABLE', 'down')) });
    await expect(readBrokerVersion(failing)).resolves.toBeNull();
    const empty = memoryAdapter({ id: 'q', broker: 'rabbitmq' }, [], { brokerVersion: () => Promise.resolve('') });
    await expect(readBrokerVersion(empty)).resolves.toBeNull();
    const cancelled = memoryAdapter({ id: 'q', broker: 'rabbitmq' }, [], { brokerVersion: () => Promise.reject(new QueuescopeError('CANCELLED', 'cancelled')) });
    await expect(readBrokerVersion(cancelled)).rejects.toMatchObject({ code: 'CANCELLED' });
  });
});

describe('report rows', () => {
  /** Keys repeat 40 messages later; bodies: JSON, base64, over 16k characters, ill-formed UTF-16 (a lone surrogate), non-ASCII. */
  const messages: QueueMessage[] = Array.from({ length: 300 }, (_, i): QueueMessage => {
    const n = i >= 200 ? i - 40 : i;
    const orderId = `A-${String(1000 + n)}`;
    let data: string;
    let encoding: 'utf8' | 'base64' = 'utf8';
    switch (n % 6) {
      case 0:
        data = JSON.stringify({ orderId, operation: 'charge', idempotencyKey: `${orderId}:charge`, note: 'é€😀' });
        break;
      case 1:
        data = Buffer.from(JSON.stringify({ orderId, idempotencyKey: `${orderId}:refund` })).toString('base64');
        encoding = 'base64';
        break;
      case 2:
        data = JSON.stringify({ orderId, idempotencyKey: `${orderId}:ship`, pad: 'x'.repeat(20_000) });
        break;
      case 3:
        // A lone surrogate (ill-formed UTF-16): kept as the row, not re-encoded.
        data = `{"orderId":"${orderId}","idempotencyKey":"${orderId}:note","note":"${String.fromCharCode(0xd800)}"}`;
        break;
      case 4:
        data = JSON.stringify({ type: 'order.updated', order: { id: orderId, status: 'paid', customer: { email: 'a@b.c' } } });
        break;
      default:
        data = `plain text ${orderId}`;
    }
    return { id: `m${String(i)}`, queueId: 'rabbitmq:%2F/rows', queueName: 'rows', position: i, body: { encoding, data, sizeBytes: data.length, truncated: false }, headers: {}, properties: i % 2 === 0 ? { messageId: `${orderId}:p` } : {}, meta: { state: 'ready' } };
  });

  it('are the rows of a direct analysis, for the first rows and for examples named later', async () => {
    const adapter = memoryAdapter({ id: 'rabbitmq:%2F/rows', broker: 'rabbitmq' }, messages);
    const r = await inspectQueue(adapter, 'rabbitmq:%2F/rows', { rowLimit: 50, pageSize: 37 });
    const options = { rules: r.rules, detail: 'verdict' as const };
    const byId = new Map(messages.map((m) => [m.id, m]));
    const expected = r.messages.map((row) => {
      const m = byId.get(row.id);
      if (m === undefined) throw new Error(`no message ${row.id}`);
      return toInspectedMessage(m, analyzeMessage(m, options));
    });
    expect(r.messages).toEqual(expected);
    expect(r.messages.slice(0, 50).map((x) => x.id)).toEqual(messages.slice(0, 50).map((m) => m.id));
    // Examples beyond the first 50 rows (re-sent keys) are there too, in position order.
    const late = r.messages.slice(50);
    expect(late.length).toBeGreaterThan(0);
    expect(late.some((x) => byId.get(x.id)?.body.data.includes(String.fromCharCode(0xd800)) === true)).toBe(true);
    expect(late.some((x) => (byId.get(x.id)?.body.data.length ?? 0) > 16 * 1024)).toBe(true);
    expect(late.some((x) => byId.get(x.id)?.body.encoding === 'base64')).toBe(true);
    expect(r.messages.map((x) => x.position)).toEqual([...r.messages.map((x) => x.position ?? 0)].sort((a, b) => a - b));
    expect(r.messagesTruncated).toBe(true);
  });
});

describe('readQueue page sizes', () => {
  it('asks for smaller pages after a page of large bodies, and for full pages again after small ones', async () => {
    const msgs = [...Array.from({ length: 20 }, (_, i) => rabbitMessage(`L${String(i)}`, 1024 * 1024)), ...Array.from({ length: 100 }, (_, i) => rabbitMessage(`S${String(i)}`, 100))];
    const adapter = memoryAdapter({ id: 'q', broker: 'snapshot' }, msgs);
    const seen: string[] = [];
    const r = await readQueue(adapter, await adapter.getQueue('q'), { pageSize: 20, maxBodyBytes: INSPECT_MAX_BODY_BYTES }, (ms) => seen.push(...ms.map((m) => m.id)));
    expect(r).toMatchObject({ read: 120, partial: false });
    expect(new Set(seen).size).toBe(120);
    // 20 bodies of 1 MiB, then 16 (16 MiB per page), then 100-byte bodies: back to the asked 20.
    const perPage = Math.floor(INSPECT_PAGE_BYTES / (1024 * 1024));
    expect(perPage).toBeLessThan(20);
    expect(adapter.limits.slice(0, 3)).toEqual([20, perPage, 20]);
  });
});

describe('forComparison', () => {
  const msg = (id: string, body: unknown, properties: QueueMessage['properties'] = {}, queueId = 'rabbitmq:%2F/orders'): QueueMessage => {
    const data = JSON.stringify(body);
    return { id, queueId, queueName: 'orders', position: 0, body: { encoding: 'utf8', data, sizeBytes: data.length, truncated: false }, headers: {}, properties, meta: {} };
  };
  // Shared keys, the same payload under different keys, keyless messages, full entities, text bodies.
  const side = (prefix: string, n: number, queueId: string): QueueMessage[] =>
    Array.from({ length: n }, (_, i) => {
      const orderId = `A-${String(1000 + (i % 37))}`;
      switch (i % 5) {
        case 0:
          return msg(`${prefix}${String(i)}`, { orderId, operation: 'charge', idempotencyKey: `${orderId}:charge` }, {}, queueId);
        case 1:
          return msg(`${prefix}${String(i)}`, { orderId, amountCents: 500 }, { messageId: `${prefix}-uuid-${String(i)}` }, queueId);
        case 2:
          return msg(`${prefix}${String(i)}`, { type: 'order.updated', order: { id: orderId, status: 'paid', items: [{ sku: 'S', qty: i }] } }, {}, queueId);
        case 3:
          return { ...msg(`${prefix}${String(i)}`, null, { messageId: `${orderId}:note` }, queueId), body: { encoding: 'utf8' as const, data: `plain text ${String(i)}`, sizeBytes: 14, truncated: false } };
        default:
          return msg(`${prefix}${String(i)}`, { orderId, operation: i % 2 === 0 ? 'capture' : 'refund', idempotencyKey: `${orderId}:x` }, {}, queueId);
      }
    });

  it('gives compareDuplicates the same result as the full analyses, with far less kept per message', () => {
    const acc = createQueueSummary({ detail: 'verdict' });
    const full = side('a', 400, 'rabbitmq:%2F/orders').map((m) => acc.add(m));
    const other = side('b', 300, 'rabbitmq:%2F/orders.dlq');
    const expected = compareDuplicates({ label: 'orders', messages: full }, { label: 'orders.dlq', messages: other });
    expect(expected.sharedKeyCount).toBeGreaterThan(0);
    expect(expected.samePayloadDifferentKeysCount).toBeGreaterThan(0);
    const slim = full.map(forComparison);
    expect(compareDuplicates({ label: 'orders', messages: slim }, { label: 'orders.dlq', messages: other })).toEqual(expected);
    expect(JSON.stringify(slim).length).toBeLessThan(JSON.stringify(full).length / 2);
  });
});

describe('body read limit (maxBodyBytes)', () => {
  // A 3 MB JSON document: whole, it is an ID-only payload that is merely large.
  const data = JSON.stringify({ documentId: 'D-1', content: 'x'.repeat(3 * 1000 * 1000) });
  const doc: QueueMessage = { id: 'D-1:store', queueId: 'q', queueName: 'docs', position: 0, body: { encoding: 'utf8', data, sizeBytes: data.length, truncated: false }, headers: {}, properties: { messageId: 'D-1:store' }, meta: {} };
  /** A broker-like adapter whose peek cuts bodies at the limit asked for, as the real ones do. */
  const broker = (messages: QueueMessage[]) => {
    const asked: (number | undefined)[] = [];
    const a = memoryAdapter({ id: 'q', broker: 'rabbitmq' }, messages, { broker: 'rabbitmq' });
    const peek = a.peek.bind(a);
    a.peek = async (id, o, signal) => {
      asked.push(o.maxBodyBytes);
      const page = await peek(id, o, signal);
      return { ...page, messages: page.messages.map((m) => ({ ...m, body: truncateBody(m.body, o.maxBodyBytes ?? 0) })) };
    };
    return { adapter: a, asked };
  };
  const cut = /the body was cut at the read limit/;

  it('analyses a 3 MB body as cut by default, and whole with a limit above its size', async () => {
    const def = broker([doc]);
    const r = await inspectQueue(def.adapter, 'q', { compareDeadLetter: false });
    expect(def.asked).toEqual([INSPECT_MAX_BODY_BYTES]);
    expect(r.messages[0]?.payloadLabel).toBe('review');
    expect(r.messages[0]?.reasons.join(' | ')).toMatch(cut);
    const raised = broker([doc]);
    const whole = await inspectQueue(raised.adapter, 'q', { compareDeadLetter: false, maxBodyBytes: 4_000_000 });
    expect(raised.asked).toEqual([4_000_000]);
    expect(whole.messages[0]?.payloadLabel).toBe('ok');
    expect(whole.messages[0]?.reasons.join(' | ')).not.toMatch(cut);
    expect(whole.messages[0]?.bytes).toBe(data.length);
  });

  it('refuses a limit that is not a whole number from 1 to 256 MiB, reading nothing', async () => {
    for (const bad of [0, -1, 1.5, MAX_INSPECT_BODY_BYTES + 1, Number.NaN]) {
      const b = broker([doc]);
      await expect(inspectQueue(b.adapter, 'q', { compareDeadLetter: false, maxBodyBytes: bad })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect(b.asked).toEqual([]);
    }
  });

  it('with a raised limit, starts with a small page and grows it once the bodies turn out small', async () => {
    const small = Array.from({ length: 600 }, (_, i) => rabbitMessage(`S${String(i)}`, 100));
    const a = memoryAdapter({ id: 'q', broker: 'redis' }, small);
    const r = await readQueue(a, await a.getQueue('q'), { maxBodyBytes: 64 * 1024 * 1024 }, () => undefined);
    expect(r.read).toBe(600);
    expect(a.limits.slice(0, 2)).toEqual([10, 256]);
  });

  it('reads a snapshot line whole by default: a 3 MB body exported with truncated:false is not analysed as cut', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'qs-inspect-body-'));
    try {
      const lines = (await readFile(fixture, 'utf8')).split('\n').filter((l) => l.trim() !== '');
      const header = JSON.parse(lines[0] ?? '{}') as { source: { queue: { id: string; name: string } } };
      const line = { type: 'message', id: 'D-1:store', queueId: header.source.queue.id, queueName: header.source.queue.name, position: 0, body: doc.body, headers: {}, properties: { messageId: 'D-1:store' }, meta: {} };
      const file = join(dir, 'big.jsonl');
      await writeFile(file, `${lines[0] ?? ''}\n${JSON.stringify(line)}\n`);
      const snap = createAdapter({ kind: 'snapshot', path: file });
      try {
        const q = await snap.getQueue(header.source.queue.id);
        const r = await inspectQueue(snap, q.id, { compareDeadLetter: false });
        expect(INSPECT_SNAPSHOT_MAX_BODY_BYTES).toBeGreaterThan(data.length);
        expect(r.messages[0]?.bytes).toBe(data.length);
        expect(r.messages[0]?.reasons.join(' | ')).not.toMatch(cut);
        expect(r.messages[0]?.payloadLabel).toBe('ok');
        // A limit the caller gives still applies to a snapshot.
        const limited = await inspectQueue(snap, q.id, { compareDeadLetter: false, maxBodyBytes: INSPECT_MAX_BODY_BYTES });
        expect(limited.messages[0]?.reasons.join(' | ')).toMatch(cut);
      } finally {
        await snap.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('dead-letter partners missing from the source', () => {
  const demo = createAdapter({ kind: 'snapshot', path: fileURLToPath(new URL('../../resources/demo-snapshot.jsonl', import.meta.url)) });
  afterAll(() => demo.close());

  it("says the queue's DLQ was not compared when the snapshot does not hold it (invoices.work → invoices.dlq)", async () => {
    const r = await inspectQueue(demo, 'rabbitmq:%2F/invoices.work');
    expect(r.comparisons).toHaveLength(1);
    const c = r.comparisons[0];
    expect(c).toMatchObject({ relation: 'dead-letter-target', label: 'invoices.dlq', queueId: null, result: null, read: 0 });
    expect(c?.note).toMatch(/^invoices\.dlq \(the dead-letter queue of invoices\.work\) is not in this snapshot \(.*demo-snapshot\.jsonl\): export it into the same file/);
    // A DLQ the snapshot holds is still compared, with no extra entry.
    const orders = await inspectQueue(demo, 'rabbitmq:%2F/orders.work');
    expect(orders.comparisons.map((x) => [x.label, x.result === null])).toEqual([['orders.dlq', false]]);
  });

  it('says a DLQ exported without its source queue was not compared with it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'qs-inspect-dlq-'));
    try {
      const lines = (await readFile(fileURLToPath(new URL('../../resources/demo-snapshot.jsonl', import.meta.url)), 'utf8')).split('\n');
      const start = lines.findIndex((l) => l.includes('"type":"queue"') && l.includes('"name":"orders.dlq"'));
      const end = lines.findIndex((l, i) => i > start && l.includes('"type":"queue"'));
      const file = join(dir, 'dlq-only.jsonl');
      await writeFile(file, `${lines.slice(start, end).join('\n')}\n`);
      const only = createAdapter({ kind: 'snapshot', path: file });
      try {
        const r = await inspectQueue(only, 'rabbitmq:%2F/orders.dlq');
        expect(r.comparisons).toHaveLength(1);
        expect(r.comparisons[0]).toMatchObject({ relation: 'dead-letter-source', queueId: null, result: null });
        expect(r.comparisons[0]?.note).toMatch(/orders\.dlq is a dead-letter queue, but no queue that dead-letters into it is in this snapshot/);
        expect((await inspectQueue(only, 'rabbitmq:%2F/orders.dlq', { compareDeadLetter: false })).comparisons).toEqual([]);
      } finally {
        await only.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a snapshot of messages picked by id', () => {
  it('is a partial read of its queue (a --fail-on gate must not pass on it)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'qs-ids-'));
    try {
      const path = join(dir, 'picked.jsonl');
      const queue: QueueSummary = {
        id: 'list:jobs', name: 'jobs', broker: 'redis', kind: 'redis-list', depth: 3000, inFlight: 0, delayed: 0, consumers: null, counts: {}, deadLetterTargets: [], deadLetterSources: [], isDeadLetterQueue: false,
        capabilities: { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: 1000, peekStates: [] }, config: {},
      };
      const w = await SnapshotWriter.create(path);
      await w.writeHeader({ exportedAt: 1764441600000, source: { broker: 'redis', connection: 'test', queue }, selection: 'ids' });
      for (const i of [1, 2, 3]) {
        const data = JSON.stringify({ orderId: `A-${String(i)}` });
        await w.writeMessage({ id: String(i), queueId: queue.id, queueName: 'jobs', position: i, body: { encoding: 'utf8', data, sizeBytes: data.length, truncated: false }, headers: {}, properties: {}, meta: {} });
      }
      await w.finish();
      const snap = createAdapter({ kind: 'snapshot', path });
      try {
        const r = await inspectQueue(snap, 'list:jobs');
        expect(r.analysed).toBe(3);
        expect(r.partial).toBe(true);
        expect(r.partialReason).toBe('The snapshot holds only the 3 messages picked by id from jobs (export --ids), not the whole queue.');
      } finally {
        await snap.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('example rows past the first rowLimit', () => {
  it('every message the summary names as an example has its row, also keyless ok ones past the first 1000 (same payload without a key)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'qs-late-'));
    try {
      const path = join(dir, 'late.jsonl');
      const queue: QueueSummary = {
        id: 'list:late', name: 'late', broker: 'redis', kind: 'redis-list', depth: 1200, inFlight: 0, delayed: 0, consumers: null, counts: {}, deadLetterTargets: [], deadLetterSources: [], isDeadLetterQueue: false,
        capabilities: { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: 1000, peekStates: [] }, config: {},
      };
      const msg = (i: number, order: number, keyed: boolean): QueueMessage => {
        const data = JSON.stringify({ orderId: `A-${String(order)}`, operation: 'charge' });
        return { id: `m-${String(i)}`, queueId: queue.id, queueName: 'late', position: i, body: { encoding: 'utf8', data, sizeBytes: data.length, truncated: false }, headers: keyed ? { 'Idempotency-Key': `A-${String(order)}:charge` } : {}, properties: {}, meta: {} };
      };
      const w = await SnapshotWriter.create(path);
      await w.writeHeader({ exportedAt: 1764441600000, source: { broker: 'redis', connection: 'test', queue } });
      for (let i = 0; i < 1200; i++) {
        // m-1050: order 3's payload again, without a key; m-1100 and m-1150: one keyless payload twice, both past 1000.
        if (i === 1050) await w.writeMessage(msg(i, 3, false));
        else if (i === 1100 || i === 1150) await w.writeMessage(msg(i, 99_999, false));
        else await w.writeMessage(msg(i, i, true));
      }
      await w.finish();
      const snap = createAdapter({ kind: 'snapshot', path });
      try {
        const r = await inspectQueue(snap, 'list:late');
        expect(r.analysed).toBe(1200);
        const named = r.summary.samePayloadDifferentKeys.flatMap((g) => g.exampleIds);
        expect(named).toEqual(expect.arrayContaining(['m-3', 'm-1050', 'm-1100', 'm-1150']));
        const rows = new Map(r.messages.map((m) => [m.id, m]));
        for (const id of ['m-1050', 'm-1100', 'm-1150']) {
          expect(rows.get(id), id).toMatchObject({ id, key: null, keyVerdict: 'missing', verdict: 'ok' });
        }
        // Every example id of every group opens.
        const all = [...r.summary.duplicateGroups.flatMap((g) => g.exampleIds), ...named, ...r.summary.reasons.flatMap((x) => x.exampleIds)];
        expect(all.filter((id) => !rows.has(id))).toEqual([]);
        expect(r.messages.map((m) => m.position)).toEqual([...r.messages.map((m) => m.position)].sort((a, b) => (a ?? 0) - (b ?? 0)));
        expect(r.notes).toBeUndefined();
      } finally {
        await snap.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('examples past the rows kept while reading (rowLimit 0, more than 50,000 later messages) are found by reading the queue again', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'qs-late2-'));
    try {
      const path = join(dir, 'late2.jsonl');
      const n = 50_300;
      const queue: QueueSummary = {
        id: 'list:late2', name: 'late2', broker: 'redis', kind: 'redis-list', depth: n, inFlight: 0, delayed: 0, consumers: null, counts: {}, deadLetterTargets: [], deadLetterSources: [], isDeadLetterQueue: false,
        capabilities: { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: 1000, peekStates: [] }, config: {},
      };
      const w = await SnapshotWriter.create(path);
      await w.writeHeader({ exportedAt: 1764441600000, source: { broker: 'redis', connection: 'test', queue } });
      for (let i = 0; i < n; i++) {
        // m-50100: order 3's payload without a key; m-50200: order 7's key again (a duplicate key group).
        const order = i === 50_100 ? 3 : i === 50_200 ? 7 : i;
        const data = JSON.stringify({ orderId: `A-${String(order)}`, operation: 'charge' });
        const headers: Record<string, string> = i === 50_100 ? {} : { 'Idempotency-Key': `A-${String(order)}:charge` };
        await w.writeMessage({ id: `m-${String(i)}`, queueId: queue.id, queueName: 'late2', position: i, body: { encoding: 'utf8', data, sizeBytes: data.length, truncated: false }, headers, properties: {}, meta: {} });
      }
      await w.finish();
      const snap = createAdapter({ kind: 'snapshot', path });
      try {
        const r = await inspectQueue(snap, 'list:late2', { rowLimit: 0 });
        expect(r.analysed).toBe(n);
        expect(r.summary.samePayloadDifferentKeys.flatMap((g) => g.exampleIds)).toContain('m-50100');
        expect(r.summary.duplicateGroups.flatMap((g) => g.exampleIds)).toEqual(expect.arrayContaining(['m-7', 'm-50200']));
        const rows = new Map(r.messages.map((m) => [m.id, m]));
        expect(rows.get('m-50100')).toMatchObject({ key: null, keyVerdict: 'missing', verdict: 'ok' });
        expect(rows.get('m-50200')).toMatchObject({ key: 'A-7:charge' });
        expect(rows.get('m-7')).toMatchObject({ key: 'A-7:charge' });
        expect(r.notes).toBeUndefined();
      } finally {
        await snap.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
