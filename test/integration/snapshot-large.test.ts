import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSnapshotAdapter } from '../../core/adapters/snapshot';
import { SnapshotWriter } from '../../core/snapshot/writer';
import type { QueueMessage, QueueSummary } from '../../shared/domain';

/**
 * A 100k-message snapshot (~55 MB) opens in one streaming pass without keeping bodies, and peeks
 * anywhere in it seek instead of scanning. Timings are printed, not asserted (machines differ);
 * memory and correctness are asserted.
 */
const N = 100_000;
const queue: QueueSummary = {
  id: 'bullmq:payments', name: 'payments', broker: 'redis', kind: 'bullmq', depth: N + 5, inFlight: 0, delayed: 0, consumers: null, counts: { failed: N + 5 }, deadLetterTargets: [], deadLetterSources: [], isDeadLetterQueue: false,
  capabilities: { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: 1000, peekStates: ['waiting', 'failed'] }, config: {},
};
const msg = (i: number): QueueMessage => {
  const data = JSON.stringify({ orderId: `A-${i}`, operation: 'charge', idempotencyKey: `A-${i}:charge`, pad: 'p'.repeat(300) });
  return {
    id: String(i + 1), queueId: queue.id, queueName: queue.name, position: i, body: { encoding: 'utf8', data, sizeBytes: data.length, truncated: false }, headers: {}, properties: {},
    meta: { state: i % 7 === 0 ? 'waiting' : 'failed', attemptsMade: 3, attemptsLimit: 3, failedReason: 'HTTP 503', enqueuedAt: 1764441600000 + i },
  };
};

let dir: string;
let path: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-large-'));
  path = join(dir, 'large.jsonl');
  const t = Date.now();
  const w = await SnapshotWriter.create(path);
  await w.writeHeader({ exportedAt: Date.now(), source: { broker: 'redis', connection: 'redis://127.0.0.1:6379', queue } });
  for (let i = 0; i < N; i++) await w.writeMessage(msg(i));
  const r = await w.finish();
  console.log(`wrote ${N} messages, ${(r.bytes / 1e6).toFixed(1)} MB in ${Date.now() - t} ms`);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe(`snapshot adapter over ${N} messages`, () => {
  const adapter = () => createSnapshotAdapter({ kind: 'snapshot', path });

  it('indexes in one pass with bounded memory and reports exact counts', async () => {
    const size = (await stat(path)).size;
    global.gc?.();
    const before = process.memoryUsage().heapUsed;
    const a = adapter();
    const t = Date.now();
    const [q] = await a.listQueues({});
    const ms = Date.now() - t;
    const grown = process.memoryUsage().heapUsed - before;
    console.log(`indexed ${(size / 1e6).toFixed(1)} MB in ${ms} ms; heap +${(grown / 1e6).toFixed(1)} MB`);
    // the header recorded depth N + 5 (the queue had more than the file holds): kept as recorded
    expect(q?.depth).toBe(N + 5);
    expect(q?.counts).toEqual({ failed: N + 5, 'in snapshot': N });
    const waiting = Math.ceil(N / 7);
    expect(q?.config.snapshot).toMatchObject({ messages: N, states: { waiting, failed: N - waiting }, partial: false });
    // Bodies alone are ~33 MB; the whole file is larger. Keeping them would blow far past this.
    expect(grown).toBeLessThan(size / 3);
  });

  it('peeks anywhere (oldest, newest, by state, by cursor) returning the right messages quickly', async () => {
    const a = adapter();
    await a.listQueues({});
    let t = Date.now();
    const mid = await a.peek('bullmq:payments', { limit: 50, cursor: 'p:77777' });
    const midMs = Date.now() - t;
    expect(mid.messages.map((m) => m.position)).toEqual(Array.from({ length: 50 }, (_, i) => 77777 + i));
    expect(mid.nextCursor).toBe('p:77827');

    const newest = await a.peek('bullmq:payments', { limit: 3, direction: 'newest' });
    expect(newest.messages.map((m) => m.position)).toEqual([N - 1, N - 2, N - 3]);

    t = Date.now();
    const waiting = await a.peek('bullmq:payments', { limit: 5, state: 'waiting', cursor: 'p:10000' });
    const stateMs = Date.now() - t;
    expect(waiting.messages.map((m) => m.position)).toEqual([70000, 70007, 70014, 70021, 70028]);
    expect(waiting.messages.every((m) => m.meta.state === 'waiting')).toBe(true);

    const last = await a.peek('bullmq:payments', { limit: 1000, cursor: `p:${N - 10}` });
    expect(last.messages).toHaveLength(10);
    expect(last.nextCursor).toBeNull();
    console.log(`peek 50 at 77,777: ${midMs} ms; peek 5 waiting from #10,000 of that state: ${stateMs} ms`);
    expect(JSON.parse(mid.messages[0]!.body.data)).toMatchObject({ orderId: 'A-77777' });
  });

  it('pages through the whole file exactly once with 1000-message pages', async () => {
    const a = adapter();
    let cursor: string | null = null;
    let outOfOrder = 0;
    let seen = 0;
    const t = Date.now();
    for (;;) {
      const page = await a.peek('bullmq:payments', { limit: 1000, cursor });
      for (const m of page.messages) if (m.position !== seen++) outOfOrder++;
      cursor = page.nextCursor;
      if (cursor === null) break;
    }
    console.log(`paged ${seen} messages in ${Date.now() - t} ms`);
    expect(seen).toBe(N);
    expect(outOfOrder).toBe(0);
  });
});
