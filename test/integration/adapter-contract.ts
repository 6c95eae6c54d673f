import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerAdapter } from '../../core/adapters/types';
import { QueuescopeError, type PeekOptions, type QueueMessage } from '../../shared/domain';

/**
 * What a broker-specific test file provides to run the shared adapter contract.
 * The harness uses the broker's native client to create fixtures and to count
 * messages, so the suite can prove a peek consumed nothing.
 */
export interface ContractHarness {
  /** e.g. 'redis-stream' */
  name: string;
  createAdapter(): Promise<BrokerAdapter>;
  /** Creates a uniquely named queue holding exactly these bodies in this order (head first), each with `headers` when the kind supports headers. */
  createQueueWithMessages(bodies: Uint8Array[], headers?: Record<string, string>): Promise<{ queueId: string; name: string }>;
  /** Number of messages still in the queue, read with the native client. */
  countMessages(name: string): Promise<number>;
  deleteQueue(name: string): Promise<void>;
  /** Options every peek in the suite adds (e.g. `{ acceptSideEffects: true }` or `{ state: 'waiting' }`). */
  peekOptions?: Partial<PeekOptions>;
  /** Whether this kind keeps application headers. */
  supportsHeaders: boolean;
  /**
   * True when the broker's bodies can only be text (SQS: Unicode only). The harness then sends a
   * non-UTF-8 body as its base64 text, and the suite expects that text back (`encoding: 'utf8'`).
   */
  bodiesAreText?: boolean;
  /** An adapter pointed at a closed port. */
  createUnreachableAdapter(): Promise<BrokerAdapter>;
}

const enc = new TextEncoder();

function bodyBytes(m: QueueMessage): Uint8Array {
  return m.body.encoding === 'utf8' ? enc.encode(m.body.data) : Uint8Array.from(Buffer.from(m.body.data, 'base64'));
}

async function expectCode(p: Promise<unknown>, code: string): Promise<void> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(QueuescopeError);
    expect((e as QueuescopeError).code).toBe(code);
    return;
  }
  throw new Error(`expected a QueuescopeError ${code}, but the call succeeded`);
}

/** Collects a queue's messages through the adapter, following cursors when the adapter can page. */
async function peekAll(adapter: BrokerAdapter, queueId: string, base: Partial<PeekOptions>, pageSize: number): Promise<QueueMessage[]> {
  const out: QueueMessage[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 1000; pages++) {
    const page = await adapter.peek(queueId, { ...base, limit: pageSize, cursor });
    out.push(...page.messages);
    cursor = page.nextCursor;
    if (cursor === null || page.messages.length === 0) break;
  }
  return out;
}

/**
 * The adapter contract every broker adapter passes against its real broker.
 * Registers one `describe` block named after the harness.
 */
export function runAdapterContract(h: ContractHarness): void {
  describe(`adapter contract: ${h.name}`, () => {
    let adapter: BrokerAdapter;
    const created: string[] = [];
    const text = 'héllo wörld — 你好';
    const json = JSON.stringify({ orderId: 'A-1001', operation: 'charge', idempotencyKey: 'A-1001:charge' });
    const binary = Uint8Array.from([0xff, 0xfe, 0x00, 0x01, 0x80, 0xc3, 0x28]);
    const big = enc.encode('x'.repeat(1024 * 1024 - 64) + '"end"');
    let main: { queueId: string; name: string };

    beforeAll(async () => {
      adapter = await h.createAdapter();
      main = await h.createQueueWithMessages([enc.encode(text), enc.encode(json), binary, big], { 'Idempotency-Key': 'A-1001:charge' });
      created.push(main.name);
    });

    afterAll(async () => {
      for (const n of created) await h.deleteQueue(n).catch(() => undefined);
      await adapter.close();
      await adapter.close(); // idempotent
    });

    it('testConnection succeeds and names the server', async () => {
      const r = await adapter.testConnection();
      expect(r.error).toBeNull();
      expect(r.ok).toBe(true);
      expect(r.server).toBeTruthy();
      expect(r.checks.length).toBeGreaterThan(0);
      expect(r.checks.every((c) => c.ok)).toBe(true);
    });

    it('listQueues includes the queue with its depth', async () => {
      const qs = await adapter.listQueues({});
      const q = qs.find((x) => x.id === main.queueId);
      expect(q, `queue ${main.queueId} missing from ${qs.map((x) => x.id).join(', ')}`).toBeDefined();
      expect(q?.name).toBe(main.name);
      const names = qs.map((x) => x.name);
      expect([...names].sort((a, b) => a.localeCompare(b))).toEqual(names);
    });

    it('getQueue returns a fresh summary with capabilities', async () => {
      const q = await adapter.getQueue(main.queueId);
      expect(q.id).toBe(main.queueId);
      const total = (q.depth ?? 0) + (q.inFlight ?? 0) + (q.delayed ?? 0);
      // Management / attribute stats may lag on some brokers; when known they must not exceed what we put in.
      expect(total).toBeLessThanOrEqual(4);
      expect(q.capabilities.maxPeekWindow).toBeGreaterThanOrEqual(4);
      if (q.capabilities.canPeekNonDestructively) expect(q.capabilities.peekSideEffects).toEqual([]);
      else expect(q.capabilities.peekSideEffects.length).toBeGreaterThan(0);
    });

    it('an unknown queue is QUEUE_NOT_FOUND', async () => {
      const other = await h.createQueueWithMessages([enc.encode('tmp')]);
      await h.deleteQueue(other.name);
      await expectCode(adapter.getQueue(other.queueId), 'QUEUE_NOT_FOUND');
      await expectCode(adapter.peek(other.queueId, { ...h.peekOptions, limit: 5 }), 'QUEUE_NOT_FOUND');
    });

    it('peek returns every body byte-exact, in order, and consumes nothing', async () => {
      const before = await h.countMessages(main.name);
      expect(before).toBe(4);
      const page = await adapter.peek(main.queueId, { ...h.peekOptions, limit: 10 });
      expect(page.messages).toHaveLength(4);
      const [m0, m1, m2, m3] = page.messages as [QueueMessage, QueueMessage, QueueMessage, QueueMessage];
      expect(m0.body).toMatchObject({ encoding: 'utf8', data: text, truncated: false, sizeBytes: enc.encode(text).length });
      expect(JSON.parse(m1.body.data)).toEqual(JSON.parse(json));
      if (h.bodiesAreText === true) {
        expect(m2.body).toMatchObject({ encoding: 'utf8', data: Buffer.from(binary).toString('base64') });
      } else {
        expect(m2.body.encoding).toBe('base64');
        expect(Array.from(bodyBytes(m2))).toEqual(Array.from(binary));
      }
      expect(m3.body.sizeBytes).toBe(big.length);
      expect(m3.body.truncated).toBe(false);
      expect(bodyBytes(m3).length).toBe(big.length);
      for (const m of page.messages) {
        expect(m.queueId).toBe(main.queueId);
        expect(m.id).toBeTruthy();
      }
      if (h.supportsHeaders) expect(m0.headers['Idempotency-Key']).toBe('A-1001:charge');
      expect(await h.countMessages(main.name)).toBe(4);
    });

    it('truncates bodies at maxBodyBytes but reports the full size', async () => {
      const page = await adapter.peek(main.queueId, { ...h.peekOptions, limit: 10, maxBodyBytes: 1000 });
      const bigMsg = page.messages.find((m) => m.body.sizeBytes === big.length);
      expect(bigMsg?.body.truncated).toBe(true);
      expect(bodyBytes(bigMsg!).length).toBeLessThanOrEqual(1000);
    });

    it('pages with a cursor visit each message exactly once', async () => {
      const q = await adapter.getQueue(main.queueId);
      if (!q.capabilities.canPageFromCursor) {
        const page = await adapter.peek(main.queueId, { ...h.peekOptions, limit: 2 });
        expect(page.messages.length).toBeLessThanOrEqual(2);
        return;
      }
      const all = await peekAll(adapter, main.queueId, h.peekOptions ?? {}, 1);
      expect(all.map((m) => m.id)).toHaveLength(4);
      expect(new Set(all.map((m) => m.id)).size).toBe(4);
      expect(all[0]?.body.data).toBe(text);
    });

    it('a malformed cursor is INVALID_INPUT', async () => {
      const q = await adapter.getQueue(main.queueId);
      if (!q.capabilities.canPageFromCursor) return;
      await expectCode(adapter.peek(main.queueId, { ...h.peekOptions, limit: 5, cursor: '%%not-a-cursor%%' }), 'INVALID_INPUT');
    });

    it('an aborted signal is CANCELLED', async () => {
      const ac = new AbortController();
      ac.abort();
      await expectCode(adapter.listQueues({}, ac.signal), 'CANCELLED');
      await expectCode(adapter.peek(main.queueId, { ...h.peekOptions, limit: 5 }, ac.signal), 'CANCELLED');
      expect(await h.countMessages(main.name)).toBe(4);
    });

    it('an unreachable broker is HOST_UNREACHABLE, as a result and as an error', async () => {
      const bad = await h.createUnreachableAdapter();
      try {
        const r = await bad.testConnection();
        expect(r.ok).toBe(false);
        expect(r.error?.code).toBe('HOST_UNREACHABLE');
        await expectCode(bad.listQueues({}), 'HOST_UNREACHABLE');
      } finally {
        await bad.close();
      }
    });
  });
}
