import { appendFile, copyFile, mkdtemp, readFile, readdir, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueuescopeError, type QueueMessage, type QueueSummary } from '../../../shared/domain';
import { SnapshotWriter } from '../../snapshot/writer';
import type { BrokerAdapter } from '../types';
import { createSnapshotAdapter, truncateBody } from './index';

const fixtures = fileURLToPath(new URL('../../../test/fixtures/snapshots/', import.meta.url));
const fixture = (name: string): string => join(fixtures, name);

async function codeOf(p: Promise<unknown>): Promise<QueuescopeError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(QueuescopeError);
    return e as QueuescopeError;
  }
  throw new Error('expected a QueuescopeError');
}

describe('snapshot adapter over the two-queue fixture', () => {
  const adapter = createSnapshotAdapter({ kind: 'snapshot', path: fixture('two-queues.jsonl') });

  it('lists both sections with original broker/kind, recorded counts, in-file counts and non-destructive capabilities', async () => {
    const qs = await adapter.listQueues({});
    // sorted by name the way the adapter contract checks it (localeCompare)
    expect(qs.map((q) => [q.id, q.name, q.broker, q.kind])).toEqual([
      ['stream:orders-stream', 'orders-stream', 'redis', 'redis-stream'],
      ['rabbitmq:%2F/orders.dlq', 'orders.dlq', 'rabbitmq', 'rabbitmq-classic'],
    ]);
    for (const q of qs) {
      expect(q.capabilities).toMatchObject({ canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true });
    }
    const dlq = qs[1]!;
    // the source queue is not in the file, so the link has no id to point at, but the DLQ flag stays
    expect(dlq.deadLetterSources).toEqual([]);
    expect(dlq.isDeadLetterQueue).toBe(true);
    expect(dlq.config.snapshot).toMatchObject({
      partial: true,
      partialReason: 'orders.dlq cannot be paged (rabbitmq-classic): one peek reads at most 500 messages.',
      connection: 'amqp://guest@127.0.0.1:5672/',
      exportedAt: 1764441601000,
      state: null,
      selection: 'all',
    });
    const stream = qs[0]!;
    // the header recorded depth 3, 1 in flight, 1 consumer: kept as recorded
    expect([stream.depth, stream.inFlight, stream.delayed, stream.consumers]).toEqual([3, 1, null, 1]);
    expect(stream.counts).toEqual({ 'in snapshot': 3 });
    expect(stream.config.snapshot).toMatchObject({ messages: 3, states: { pending: 1, new: 2 }, partial: false, partialReason: null });
    expect(JSON.parse(JSON.stringify(stream.config))).toEqual(stream.config); // plain JSON
    expect(stream.capabilities.peekStates).toEqual(['pending', 'new']);
    expect(await adapter.listQueues({ pattern: 'orders.*' })).toHaveLength(1);
  });

  it('peeks in order, pages with cursors, reads newest first and filters by state', async () => {
    const p1 = await adapter.peek('stream:orders-stream', { limit: 2 });
    expect(p1.messages.map((m) => m.position)).toEqual([0, 1]);
    expect(p1.total).toBe(3);
    expect(p1.sideEffects).toEqual([]);
    expect(p1.messages[0]?.headers['Idempotency-Key']).toBe('A-1001:charge');
    const p2 = await adapter.peek('stream:orders-stream', { limit: 2, cursor: p1.nextCursor });
    expect(p2.messages.map((m) => m.position)).toEqual([2]);
    expect(p2.nextCursor).toBeNull();
    expect(p2.messages[0]?.body).toEqual({ encoding: 'base64', data: Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x80]).toString('base64'), sizeBytes: 5, truncated: false });
    const newest = await adapter.peek('stream:orders-stream', { limit: 2, direction: 'newest' });
    expect(newest.messages.map((m) => m.position)).toEqual([2, 1]);
    const rest = await adapter.peek('stream:orders-stream', { limit: 2, direction: 'newest', cursor: newest.nextCursor });
    expect(rest.messages.map((m) => m.position)).toEqual([0]);
    const pending = await adapter.peek('stream:orders-stream', { limit: 10, state: 'pending' });
    expect(pending.messages.map((m) => m.meta.consumer)).toEqual(['worker-1']);
    expect(pending.total).toBe(1);
  });

  it('rejects bad cursors, unknown states and unknown queues with specific codes', async () => {
    expect((await codeOf(adapter.peek('stream:orders-stream', { limit: 2, cursor: 'garbage' }))).code).toBe('INVALID_INPUT');
    const e = await codeOf(adapter.peek('stream:orders-stream', { limit: 2, state: 'failed' }));
    expect(e.code).toBe('INVALID_INPUT');
    expect(e.message).toContain('pending, new');
    expect((await codeOf(adapter.getQueue('stream:nope'))).code).toBe('QUEUE_NOT_FOUND');
  });

  it('truncates bodies at maxBodyBytes on a character boundary and keeps sizeBytes', async () => {
    const full = await adapter.peek('rabbitmq:%2F/orders.dlq', { limit: 1 });
    const page = await adapter.peek('rabbitmq:%2F/orders.dlq', { limit: 1, maxBodyBytes: 10 });
    expect(full.messages[0]?.body.truncated).toBe(false);
    expect(page.messages[0]?.body).toMatchObject({ truncated: true, sizeBytes: full.messages[0]?.body.sizeBytes });
    expect(full.messages[0]?.body.data.startsWith(page.messages[0]!.body.data)).toBe(true);
    expect(Buffer.byteLength(page.messages[0]!.body.data)).toBeLessThanOrEqual(10);
    expect(truncateBody({ encoding: 'utf8', data: 'ab€', sizeBytes: 5, truncated: false }, 3)).toEqual({ encoding: 'utf8', data: 'ab', sizeBytes: 5, truncated: true });
  });

  it('testConnection describes the file and never throws', async () => {
    const ok = await adapter.testConnection();
    expect(ok.ok).toBe(true);
    expect(ok.server).toBe('Queuescope snapshot v1');
    expect(ok.checks.map((c) => c.ok)).toEqual([true, true]);
    const missing = await createSnapshotAdapter({ kind: 'snapshot', path: fixture('does-not-exist.jsonl') }).testConnection();
    expect(missing.ok).toBe(false);
    expect(missing.error?.code).toBe('INVALID_INPUT');
    expect(missing.error?.message).toContain('not found');
  });

  it('an aborted signal is CANCELLED', async () => {
    const ac = new AbortController();
    ac.abort();
    expect((await codeOf(adapter.listQueues({}, ac.signal))).code).toBe('CANCELLED');
  });
});

describe('invalid snapshots name the line and field', () => {
  it.each([
    ['invalid-body-encoding.jsonl', /line 3, field "body\.encoding"/],
    ['invalid-no-header.jsonl', /line 1, field "type".*header/],
    ['invalid-json.jsonl', /line 3: not valid JSON/],
    ['invalid-version.jsonl', /line 1, field "version": snapshot version 2 is not supported/],
  ])('%s', async (name, re) => {
    const a = createSnapshotAdapter({ kind: 'snapshot', path: fixture(name) });
    const e = await codeOf(a.listQueues({}));
    expect(e.code).toBe('SNAPSHOT_INVALID');
    expect(e.message).toMatch(re);
    expect(e.message).toContain(name);
  });
});

describe('a section holding fewer messages than the queue had', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'qs-snapcounts-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps the recorded depth and counts, and reports the in-file count and the partial reason', async () => {
    const { SnapshotWriter } = await import('../../snapshot/writer');
    const path = join(dir, 'partial.jsonl');
    const w = await SnapshotWriter.create(path);
    const queue = {
      id: 'bullmq:bull:payments', name: 'payments', broker: 'redis' as const, kind: 'bullmq' as const, depth: 5, inFlight: 0, delayed: 3, consumers: null,
      counts: { waiting: 5, delayed: 3, completed: 10, failed: 14 }, deadLetterTargets: [], deadLetterSources: [], isDeadLetterQueue: false,
      capabilities: { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: 1000, peekStates: ['waiting', 'failed'] },
      config: { prefix: 'bull' },
    };
    const reason = 'Only the first 2 failed jobs were exported.';
    await w.writeHeader({ exportedAt: 1764441700000, source: { broker: 'redis', connection: 'redis://127.0.0.1:6379', queue }, partial: true, partialReason: reason });
    const states = ['waiting', 'waiting', 'failed', 'failed'];
    for (const [i, state] of states.entries()) {
      await w.writeMessage({ id: String(i), queueId: queue.id, queueName: 'payments', position: i, body: { encoding: 'utf8', data: '{}', sizeBytes: 2, truncated: false }, headers: {}, properties: {}, meta: { state } });
    }
    await w.finish();
    const [q] = await createSnapshotAdapter({ kind: 'snapshot', path }).listQueues({});
    expect(q?.depth).toBe(5);
    expect(q?.delayed).toBe(3);
    expect(q?.counts).toEqual({ waiting: 5, delayed: 3, completed: 10, failed: 14, 'in snapshot': 4 });
    expect(q?.config.snapshot).toMatchObject({ messages: 4, states: { waiting: 2, failed: 2 }, exportedAt: 1764441700000, partial: true, partialReason: reason });
    expect(q?.config.prefix).toBe('bull');
  });
});

describe('a file that changes', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'qs-snapadapter-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is re-indexed when it grows; duplicate queue ids get #2', async () => {
    const path = join(dir, 'grow.jsonl');
    await copyFile(fixture('two-queues.jsonl'), path);
    const a = createSnapshotAdapter({ kind: 'snapshot', path });
    expect(await a.listQueues({})).toHaveLength(2);
    const firstSection = (await import('node:fs/promises')).readFile(fixture('two-queues.jsonl'), 'utf8');
    const lines = (await firstSection).split('\n').slice(0, 4);
    await new Promise((r) => setTimeout(r, 20)); // distinct mtime
    await appendFile(path, `${lines.join('\n')}\n`);
    const qs = await a.listQueues({});
    expect(qs.map((q) => q.id).sort()).toEqual(['rabbitmq:%2F/orders.dlq', 'stream:orders-stream', 'stream:orders-stream#2']);
    const dup = await a.peek('stream:orders-stream#2', { limit: 10 });
    expect(dup.messages).toHaveLength(3);
    expect(dup.messages.every((m) => m.queueId === 'stream:orders-stream#2')).toBe(true);
  });
});

describe('paging resumes where the last page stopped', () => {
  const N = 1500;
  const queue = (name: string): QueueSummary => ({
    id: `bullmq:${name}`, name, broker: 'redis', kind: 'bullmq', depth: N, inFlight: 0, delayed: 0, consumers: null, counts: {}, deadLetterTargets: [], deadLetterSources: [], isDeadLetterQueue: false,
    capabilities: { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: 1000, peekStates: ['waiting', 'failed'] }, config: {},
  });
  const message = (q: QueueSummary, i: number): QueueMessage => {
    const data = JSON.stringify({ orderId: `A-${String(i)}`, idempotencyKey: `A-${String(i)}:charge`, pad: 'p'.repeat(200 + (i % 50)) });
    return { id: `${q.name}-${String(i)}`, queueId: q.id, queueName: q.name, position: i, body: { encoding: 'utf8', data, sizeBytes: data.length, truncated: false }, headers: {}, properties: {}, meta: { state: i % 3 === 0 ? 'waiting' : 'failed' } };
  };
  let dir: string;
  const write = async (path: string, sizes: [number, number]): Promise<void> => {
    const w = await SnapshotWriter.create(path, { overwrite: true });
    for (const [k, name] of ['a', 'b'].entries()) {
      const q = queue(name);
      await w.writeHeader({ exportedAt: 1764441600000, source: { broker: 'redis', connection: 'test', queue: q }, selection: 'all' });
      for (let i = 0; i < (sizes[k] as number); i++) await w.writeMessage(message(q, i));
    }
    await w.finish();
  };
  /** Every message id of a selection, page by page. */
  const walk = async (adapter: BrokerAdapter, queueId: string, opts: { limit: number; state?: string; direction?: 'oldest' | 'newest' }): Promise<string[]> => {
    const ids: string[] = [];
    let cursor: string | null = null;
    for (;;) {
      const p = await adapter.peek(queueId, { ...opts, cursor });
      ids.push(...p.messages.map((m) => m.id));
      if (p.nextCursor === null) return ids;
      cursor = p.nextCursor;
    }
  };
  const expected = (name: string, count: number, state?: string): string[] =>
    Array.from({ length: count }, (_, i) => i)
      .filter((i) => state === undefined || (i % 3 === 0 ? 'waiting' : 'failed') === state)
      .map((i) => `${name}-${String(i)}`);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'qs-resume-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it.each([['plain', 'p.jsonl'], ['gzip', 'p.jsonl.gz']])('reads every message once, in order, in pages of any size (%s)', async (_kind, file) => {
    const path = join(dir, file);
    await write(path, [N, 700]);
    const adapter = createSnapshotAdapter({ kind: 'snapshot', path });
    try {
      for (const limit of [7, 37, 256, 1000]) {
        expect(await walk(adapter, 'bullmq:a', { limit })).toEqual(expected('a', N));
        expect(await walk(adapter, 'bullmq:a', { limit, state: 'waiting' })).toEqual(expected('a', N, 'waiting'));
      }
      // Newest first reads backwards: every page starts again at a checkpoint (gzip: from the start).
      expect(await walk(adapter, 'bullmq:a', { limit: 300, direction: 'newest' })).toEqual(expected('a', N).reverse());
      // The direction travels with the cursor: following it without `direction` keeps going back.
      const newest = await adapter.peek('bullmq:a', { limit: 3, direction: 'newest' });
      expect(newest.nextCursor).toBe(`n:${String(N - 4)}`);
      const after = await adapter.peek('bullmq:a', { limit: 3, cursor: newest.nextCursor });
      expect(after.messages.map((m) => m.id)).toEqual(expected('a', N).reverse().slice(3, 6));
      expect(after.nextCursor).toBe(`n:${String(N - 7)}`);
      // The second section starts after the first one's last page: the reader stops at its header.
      expect(await walk(adapter, 'bullmq:b', { limit: 256 })).toEqual(expected('b', 700));
      // Two selections paged in turn, and a page asked for again: each page is still right.
      const all: string[] = [];
      const failed: string[] = [];
      let ca: string | null = null;
      let cf: string | null = null;
      do {
        const pa = await adapter.peek('bullmq:a', { limit: 100, cursor: ca });
        const again = await adapter.peek('bullmq:a', { limit: 100, cursor: ca });
        expect(again.messages.map((m) => m.id)).toEqual(pa.messages.map((m) => m.id));
        all.push(...pa.messages.map((m) => m.id));
        ca = pa.nextCursor;
        if (cf !== null || failed.length === 0) {
          const pf = await adapter.peek('bullmq:a', { limit: 64, cursor: cf, state: 'failed' });
          failed.push(...pf.messages.map((m) => m.id));
          cf = pf.nextCursor;
        }
      } while (ca !== null);
      expect(all).toEqual(expected('a', N));
      expect(failed.length).toBeGreaterThan(64);
      expect(failed).toEqual(expected('a', N, 'failed').slice(0, failed.length));
    } finally {
      await adapter.close();
    }
  }, 30_000);

  it('does not resume into a file that changed between pages, and closes the file when the adapter closes', async () => {
    const path = join(dir, 'changing.jsonl');
    await write(path, [N, 10]);
    const adapter = createSnapshotAdapter({ kind: 'snapshot', path });
    try {
      const first = await adapter.peek('bullmq:a', { limit: 300 });
      expect(first.messages.at(-1)?.id).toBe('a-299');
      const openFiles = async (): Promise<number> => {
        let n = 0;
        for (const fd of await readdir('/proc/self/fd')) if ((await readlink(`/proc/self/fd/${fd}`).catch(() => '')) === path) n++;
        return n;
      };
      if (process.platform === 'linux') expect(await openFiles()).toBe(1); // kept open for the next page
      await new Promise((r) => setTimeout(r, 20)); // a different mtime
      await write(path, [N + 1, 10]); // rewritten: the same name, new contents
      const second = await adapter.peek('bullmq:a', { limit: 300, cursor: first.nextCursor });
      expect(second.total).toBe(N + 1);
      expect(second.messages.map((m) => m.id)).toEqual(expected('a', N + 1).slice(300, 600));
      await adapter.close();
      if (process.platform === 'linux') expect(await openFiles()).toBe(0);
    } finally {
      await adapter.close();
    }
  });
});

describe('snapshot completeness (header written record)', () => {
  const q = (name: string): QueueSummary => ({
    id: `list:${name}`, name, broker: 'redis', kind: 'redis-list', depth: 3, inFlight: null, delayed: null, consumers: null, counts: {}, deadLetterTargets: [], deadLetterSources: [], isDeadLetterQueue: false,
    capabilities: { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: 1000, peekStates: [] }, config: {},
  });
  const msg = (queue: QueueSummary, i: number): QueueMessage => ({ id: `${queue.name}-${String(i)}`, queueId: queue.id, queueName: queue.name, position: i, body: { encoding: 'utf8', data: `m${String(i)}`, sizeBytes: 2, truncated: false }, headers: {}, properties: {}, meta: {} });
  let dir: string;
  let lines: string[];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'qs-complete-'));
    const w = await SnapshotWriter.create(join(dir, 'three.jsonl'));
    for (const name of ['a', 'b', 'c']) {
      await w.writeHeader({ exportedAt: 1, source: { broker: 'redis', connection: 'test', queue: q(name) } });
      for (let i = 0; i < 3; i++) await w.writeMessage(msg(q(name), i));
    }
    await w.finish();
    lines = (await readFile(join(dir, 'three.jsonl'), 'utf8')).split('\n').slice(0, -1);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));
  const open = async (name: string, content: string[]): Promise<BrokerAdapter> => {
    await writeFile(join(dir, name), `${content.join('\n')}\n`);
    return createSnapshotAdapter({ kind: 'snapshot', path: join(dir, name) });
  };
  const info = async (a: BrokerAdapter, id: string): Promise<Record<string, unknown>> => (await a.getQueue(id)).config.snapshot as Record<string, unknown>;

  it('a whole file is complete; cut inside a section, that section is partial (cut)', async () => {
    const whole = await open('whole.jsonl', lines);
    expect(await info(whole, 'list:a')).toMatchObject({ completeness: 'complete', completenessNote: null, partial: false, writtenMessages: 3 });
    const cut = await open('cut.jsonl', lines.slice(0, 7)); // a ×3, header b, b-0, b-1
    expect(await info(cut, 'list:a')).toMatchObject({ completeness: 'complete', partial: false });
    expect(await info(cut, 'list:b')).toMatchObject({ completeness: 'cut', partial: true, messages: 2, writtenMessages: 3 });
    expect((await info(cut, 'list:b')).partialReason).toContain('holds 2 of the 3 messages');
    expect((await info(cut, 'list:b')).completenessNote).toContain('lacks 1 queue section written after b');
  });

  it('a cut between sections: the sections before are complete, with a note; the missing queue is not found, and says why', async () => {
    const cut = await open('between.jsonl', lines.slice(0, 4)); // section a only
    expect(await info(cut, 'list:a')).toMatchObject({ completeness: 'complete', partial: false });
    expect((await info(cut, 'list:a')).completenessNote).toContain('lacks 2 queue sections written after a by the same export');
    await expect(cut.getQueue('list:c')).rejects.toMatchObject({ code: 'QUEUE_NOT_FOUND', message: expect.stringContaining('the file was cut there') });
    // Two whole files joined: each part checks out.
    const joined = await open('joined.jsonl', [...lines, ...lines]);
    for (const s of await joined.listQueues({})) expect(s.config.snapshot).toMatchObject({ completeness: 'complete', completenessNote: null });
  });

  it('written null (never finished) and more messages than written are cut; no record is unchecked', async () => {
    const header = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    const unfinished = await open('unfinished.jsonl', [JSON.stringify({ ...header, written: null }), ...lines.slice(1, 4)]);
    expect(await info(unfinished, 'list:a')).toMatchObject({ completeness: 'cut', partial: true });
    const extra = await open('extra.jsonl', [...lines.slice(0, 4), lines[3] ?? '']);
    expect((await info(extra, 'list:a')).partialReason).toContain('holds 4 messages where the export wrote 3');
    const { written: _w, ...old } = header;
    const unchecked = await open('old.jsonl', [JSON.stringify(old), ...lines.slice(1, 3)]);
    expect(await info(unchecked, 'list:a')).toMatchObject({ completeness: 'unchecked', partial: false, writtenMessages: null });
    expect((await info(unchecked, 'list:a')).completenessNote).toContain('cannot be checked');
  });
});
