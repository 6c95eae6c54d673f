import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { QueuescopeError, type PeekOptions, type PeekPage, type QueueCapabilities, type QueueMessage, type QueueSummary } from '../../shared/domain';
import type { BrokerAdapter } from '../adapters/types';
import { backoffMs, checkDlqsOnce, checkInterval, watchDlqs, watchedDepth, type DlqWatchEvent } from './dlq-watch';

/** Peek-free (SQS / RabbitMQ-like) and side-effect-free (Redis-like) capabilities. */
const DESTRUCTIVE: QueueCapabilities = {
  canPeekNonDestructively: false,
  peekSideEffects: [{ kind: 'delivery-count', description: 'Each peek counts as a receive.' }],
  peekMayDeadLetter: true,
  canPageFromCursor: false,
  maxPeekWindow: 10,
  peekStates: [],
};
const CLEAN: QueueCapabilities = { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: 1000, peekStates: [] };

interface FakeQueue {
  depth: number;
  caps: QueueCapabilities;
  /** Newest first. */
  messages: QueueMessage[];
  failedState?: boolean;
  kind?: QueueSummary['kind'];
}

/** An in-memory adapter double: depths set by the test, `down` makes every call fail like an unreachable broker. */
class FakeAdapter implements BrokerAdapter {
  readonly broker = 'redis' as const;
  queues = new Map<string, FakeQueue>();
  down = false;
  getQueueCalls = 0;
  peeks: { queueId: string; options: PeekOptions }[] = [];

  testConnection(): Promise<never> {
    return Promise.reject(new Error('not used'));
  }
  listQueues(): Promise<QueueSummary[]> {
    return Promise.resolve([]);
  }
  getQueue(queueId: string): Promise<QueueSummary> {
    this.getQueueCalls++;
    if (this.down) return Promise.reject(new QueuescopeError('HOST_UNREACHABLE', 'Cannot reach 127.0.0.1:6399 (connection refused).'));
    const q = this.queues.get(queueId);
    if (q === undefined) return Promise.reject(new QueuescopeError('QUEUE_NOT_FOUND', `No queue ${queueId}.`));
    const caps = q.failedState === true ? { ...q.caps, peekStates: ['waiting', 'failed'] } : q.caps;
    const counts: Record<string, number> = q.failedState === true ? { waiting: 7, failed: q.depth } : { length: q.depth };
    return Promise.resolve<QueueSummary>({
      id: queueId,
      name: `${queueId}-name`,
      broker: 'redis',
      kind: q.kind ?? 'redis-list',
      depth: q.failedState === true ? 7 : q.depth,
      inFlight: null,
      delayed: null,
      consumers: null,
      counts,
      deadLetterTargets: [],
      deadLetterSources: ['orders'],
      isDeadLetterQueue: true,
      capabilities: caps,
      config: {},
    });
  }
  peek(queueId: string, options: PeekOptions): Promise<PeekPage> {
    this.peeks.push({ queueId, options });
    const q = this.queues.get(queueId);
    if (q === undefined) return Promise.reject(new QueuescopeError('QUEUE_NOT_FOUND', 'gone'));
    return Promise.resolve({ messages: q.messages.slice(0, options.limit), nextCursor: null, total: q.depth, sideEffects: [] });
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

function message(id: string, failedReason: string | null, headers: Record<string, string> = {}): QueueMessage {
  return {
    id,
    queueId: 'dlq',
    queueName: 'dlq',
    position: 0,
    body: { encoding: 'utf8', data: '{"orderId":"A-1"}', sizeBytes: 17, truncated: false },
    headers,
    properties: {},
    meta: failedReason === null ? {} : { failedReason },
  };
}

let adapter: FakeAdapter;
let events: DlqWatchEvent[];
let controller: AbortController;
let running: Promise<void> | null;

beforeEach(() => {
  vi.useFakeTimers({ now: 1_700_000_000_000 });
  adapter = new FakeAdapter();
  events = [];
  controller = new AbortController();
  running = null;
});

afterEach(async () => {
  controller.abort();
  await vi.runOnlyPendingTimersAsync();
  await running;
  vi.useRealTimers();
});

function start(queueIds: string[], extra: { intervalMs?: number; maxBackoffMs?: number; random?: () => number } = {}): void {
  running = watchDlqs(adapter, { queueIds, onEvent: (e) => events.push(e), signal: controller.signal, ...extra });
}
const types = (): string[] => events.map((e) => `${e.queueId}:${e.type}`);

describe('watchDlqs state machine', () => {
  it('reports the starting depth, then exactly one first-message when an empty DLQ receives its first message', async () => {
    adapter.queues.set('dlq', { depth: 0, caps: DESTRUCTIVE, messages: [] });
    start(['dlq']);
    await vi.advanceTimersByTimeAsync(0);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'status', depth: 0, previousDepth: null, delta: null, queueName: 'dlq-name', deadLetterSources: ['orders'] });

    await vi.advanceTimersByTimeAsync(5_000 * 3); // three quiet polls
    expect(events).toHaveLength(1);

    adapter.queues.set('dlq', { depth: 1, caps: DESTRUCTIVE, messages: [message('m1', 'HTTP 422 Unprocessable')] });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(types()).toEqual(['dlq:status', 'dlq:first-message']);
    expect(events[1]).toMatchObject({ depth: 1, previousDepth: 0, delta: 1, failure: null });
    // Peeking would be a delivery here: never peeked, and the event says why.
    expect(events[1]?.failureNote).toMatch(/never peeks/);
    expect(adapter.peeks).toHaveLength(0);

    await vi.advanceTimersByTimeAsync(5_000 * 4); // still 1 message: nothing more
    expect(events).toHaveLength(2);
  });

  it('reports growth by how much, ignores decreases above zero, and reports drained at zero', async () => {
    adapter.queues.set('dlq', { depth: 2, caps: DESTRUCTIVE, messages: [] });
    start(['dlq']);
    await vi.advanceTimersByTimeAsync(0);
    adapter.queues.get('dlq')!.depth = 5;
    await vi.advanceTimersByTimeAsync(5_000);
    adapter.queues.get('dlq')!.depth = 3;
    await vi.advanceTimersByTimeAsync(5_000);
    adapter.queues.get('dlq')!.depth = 4;
    await vi.advanceTimersByTimeAsync(5_000);
    adapter.queues.get('dlq')!.depth = 0;
    await vi.advanceTimersByTimeAsync(5_000);
    adapter.queues.get('dlq')!.depth = 2;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(events.map((e) => [e.type, e.depth, e.delta])).toEqual([
      ['status', 2, null],
      ['grew', 5, 3],
      ['grew', 4, 1],
      ['drained', 0, -4],
      ['first-message', 2, 2],
    ]);
  });

  it('classifies the newest message where peeking changes nothing (the failed state for BullMQ-like queues)', async () => {
    adapter.queues.set('bull', { depth: 0, caps: CLEAN, messages: [], failedState: true });
    start(['bull']);
    await vi.advanceTimersByTimeAsync(0);
    // `depth` (waiting) is 7 but the watched depth is the failed count.
    expect(events[0]).toMatchObject({ type: 'status', depth: 0 });
    adapter.queues.set('bull', { depth: 2, caps: CLEAN, failedState: true, messages: [message('j2', 'Error: connect ECONNREFUSED 10.0.0.5:443'), message('j1', 'HTTP 404 customer not found')] });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(events[1]).toMatchObject({
      type: 'first-message',
      depth: 2,
      delta: 2,
      failure: { messageId: 'j2', class: 'transient', label: 'connection refused', source: 'failedReason' },
      failureNote: null,
    });
    expect(adapter.peeks).toEqual([{ queueId: 'bull', options: { limit: 1, direction: 'newest', maxBodyBytes: 4096, state: 'failed' } }]);
  });

  it('a non-retryable header error is reported as such on growth', async () => {
    adapter.queues.set('s', { depth: 1, caps: CLEAN, messages: [] });
    start(['s']);
    await vi.advanceTimersByTimeAsync(0);
    adapter.queues.set('s', { depth: 3, caps: CLEAN, messages: [message('x', null, { 'x-last-error': 'validation failed: amount must be positive' })] });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(events[1]).toMatchObject({ type: 'grew', delta: 2, failure: { class: 'non-retryable', label: 'validation', reason: 'validation failed: amount must be positive', source: 'header x-last-error' } });
  });

  it('reports an unreachable broker once, backs off, and reports recovered — then the growth that happened meanwhile', async () => {
    adapter.queues.set('dlq', { depth: 0, caps: DESTRUCTIVE, messages: [] });
    start(['dlq'], { random: () => 0.999 });
    await vi.advanceTimersByTimeAsync(0);
    adapter.down = true;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(types()).toEqual(['dlq:status', 'dlq:error']);
    expect(events[1]).toMatchObject({ depth: null, previousDepth: 0, error: { code: 'HOST_UNREACHABLE' } });
    // Back-off doubles: ~5 s, ~10 s, ~20 s… (random 0.999 of the ceiling).
    expect(events[1]?.retryInMs).toBe(4995);
    const callsAtError = adapter.getQueueCalls;
    await vi.advanceTimersByTimeAsync(4_995); // 2nd failure → wait ~10 s
    await vi.advanceTimersByTimeAsync(9_990); // 3rd failure → wait ~20 s
    expect(adapter.getQueueCalls - callsAtError).toBe(2);
    await vi.advanceTimersByTimeAsync(19_000);
    expect(adapter.getQueueCalls - callsAtError).toBe(2); // still waiting: not polling every 5 s
    expect(types()).toEqual(['dlq:status', 'dlq:error']); // one error event, not one per failed poll

    adapter.down = false;
    adapter.queues.get('dlq')!.depth = 4;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(types()).toEqual(['dlq:status', 'dlq:error', 'dlq:recovered', 'dlq:first-message']);
    expect(events[2]).toMatchObject({ depth: 4, previousDepth: 0 });
    expect(events[3]).toMatchObject({ depth: 4, previousDepth: 0, delta: 4 });
  });

  it('a broker down at start reports error first, then recovered with the depth and no transition', async () => {
    adapter.down = true;
    adapter.queues.set('dlq', { depth: 3, caps: DESTRUCTIVE, messages: [] });
    start(['dlq'], { random: () => 0 });
    await vi.advanceTimersByTimeAsync(0);
    expect(events[0]).toMatchObject({ type: 'error', retryInMs: 1000 }); // jitter 0 → the 1 s floor
    adapter.down = false;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(events.map((e) => [e.type, e.depth, e.previousDepth])).toEqual([
      ['error', null, null],
      ['recovered', 3, null],
    ]);
  });

  it('watches several DLQs independently: a deleted one does not hold up the others', async () => {
    adapter.queues.set('a', { depth: 0, caps: DESTRUCTIVE, messages: [] });
    start(['a', 'gone', 'a']);
    await vi.advanceTimersByTimeAsync(0);
    expect(types().sort()).toEqual(['a:status', 'gone:error']);
    expect(events.find((e) => e.queueId === 'gone')?.error?.code).toBe('QUEUE_NOT_FOUND');
    adapter.queues.get('a')!.depth = 1;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(types()).toContain('a:first-message');
    expect(types().filter((t) => t === 'a:first-message')).toHaveLength(1);
  });

  it('a Redis list that vanishes with its last element is drained, not an error; a deleted RabbitMQ DLQ is an error', async () => {
    adapter.queues.set('list', { depth: 2, caps: CLEAN, messages: [] });
    adapter.queues.set('rmq', { depth: 2, caps: DESTRUCTIVE, messages: [], kind: 'rabbitmq-classic' });
    start(['list', 'rmq']);
    await vi.advanceTimersByTimeAsync(0);
    adapter.queues.delete('list');
    adapter.queues.delete('rmq');
    await vi.advanceTimersByTimeAsync(5_000);
    expect(types().slice(2).sort()).toEqual(['list:drained', 'rmq:error']);
    expect(events.find((e) => e.type === 'drained')).toMatchObject({ depth: 0, previousDepth: 2, error: null });
    // The list comes back with a message: first-message (from 0), no error/recovered in between.
    adapter.queues.set('list', { depth: 1, caps: CLEAN, messages: [message('#0', 'HTTP 503')] });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(types().filter((t) => t.startsWith('list:'))).toEqual(['list:status', 'list:drained', 'list:first-message']);
  });

  it('a queue missing at start that appears with messages raises first-message after recovered', async () => {
    start(['later'], { random: () => 0 });
    await vi.advanceTimersByTimeAsync(0);
    expect(events[0]).toMatchObject({ type: 'error', error: { code: 'QUEUE_NOT_FOUND' } });
    adapter.queues.set('later', { depth: 3, caps: DESTRUCTIVE, messages: [], kind: 'sqs-standard' });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(events.map((e) => [e.type, e.depth, e.previousDepth])).toEqual([
      ['error', null, null],
      ['recovered', 3, 0],
      ['first-message', 3, 0],
    ]);
  });

  it('honours the interval and stops when aborted', async () => {
    adapter.queues.set('dlq', { depth: 0, caps: DESTRUCTIVE, messages: [] });
    start(['dlq'], { intervalMs: 2_000 });
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(adapter.getQueueCalls).toBe(6); // t = 0, 2, 4, 6, 8, 10 s
    controller.abort();
    await running;
    const calls = adapter.getQueueCalls;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(adapter.getQueueCalls).toBe(calls);
  });

  it('a listener that throws does not stop the watch', async () => {
    adapter.queues.set('dlq', { depth: 0, caps: DESTRUCTIVE, messages: [] });
    running = watchDlqs(adapter, {
      queueIds: ['dlq'],
      signal: controller.signal,
      onEvent: (e) => {
        events.push(e);
        throw new Error('listener bug');
      },
    });
    await vi.advanceTimersByTimeAsync(0);
    adapter.queues.get('dlq')!.depth = 2;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(types()).toEqual(['dlq:status', 'dlq:first-message']);
  });

  it('refuses intervals below 1 s and an empty list', async () => {
    await expect(watchDlqs(adapter, { queueIds: ['x'], intervalMs: 500, onEvent: () => undefined })).rejects.toMatchObject({ code: 'INVALID_INPUT', message: /at least 1 s/ });
    await expect(watchDlqs(adapter, { queueIds: [], onEvent: () => undefined })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(checkInterval(undefined)).toBe(5_000);
    expect(checkInterval(1_000)).toBe(1_000);
    expect(() => checkInterval(Number.NaN)).toThrow(/at least 1 s/);
  });
});

describe('helpers', () => {
  it('backoffMs: full jitter under a doubling, capped ceiling with a 1 s floor', () => {
    expect(backoffMs(1, 5_000, 60_000, () => 0.5)).toBe(2_500);
    expect(backoffMs(2, 5_000, 60_000, () => 0.5)).toBe(5_000);
    expect(backoffMs(5, 5_000, 60_000, () => 0.5)).toBe(30_000); // 80 s capped at 60 s
    expect(backoffMs(50, 5_000, 60_000, () => 0.999999)).toBeLessThanOrEqual(60_000);
    expect(backoffMs(3, 5_000, 60_000, () => 0)).toBe(1_000);
  });

  it('watchedDepth: the failed count where failures are a state, else depth', async () => {
    adapter.queues.set('b', { depth: 9, caps: CLEAN, messages: [], failedState: true });
    adapter.queues.set('l', { depth: 4, caps: CLEAN, messages: [] });
    expect(watchedDepth(await adapter.getQueue('b'))).toBe(9);
    expect(watchedDepth(await adapter.getQueue('l'))).toBe(4);
  });

  it('checkDlqsOnce: one status per DLQ with the newest failure where readable, errors as error events', async () => {
    adapter.queues.set('l', { depth: 1, caps: CLEAN, messages: [message('m', 'timeout after 30000 ms')] });
    adapter.queues.set('r', { depth: 2, caps: DESTRUCTIVE, messages: [message('n', 'HTTP 400')] });
    const out = await checkDlqsOnce(adapter, ['l', 'r', 'missing']);
    expect(out.map((e) => [e.queueId, e.type, e.depth, e.failure?.class ?? null, e.error?.code ?? null])).toEqual([
      ['l', 'status', 1, 'transient', null],
      ['r', 'status', 2, null, null],
      ['missing', 'error', null, null, 'QUEUE_NOT_FOUND'],
    ]);
    expect(adapter.peeks.map((p) => p.queueId)).toEqual(['l']);
  });
});
