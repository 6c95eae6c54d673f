// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { WatchedDlqView } from '../../../shared/api/watch';
import type { OperationSnapshot, QueueSummary } from '../../../shared/domain';
import { summary } from '../test/fixtures';
import { installFakeApi, removeFakeApi, type FakeApi, type FakeHandler } from '../test/fake-api';
import { useStore } from '.';
import { queueKey } from './types';
import { rowDepth } from './watch';

const initial = useStore.getState();
let handlers: Record<string, FakeHandler>;
let calls: FakeApi['calls'];

beforeEach(() => {
  useStore.setState(initial, true);
  ({ handlers, calls } = installFakeApi());
});
afterEach(() => {
  removeFakeApi();
});

const op = (status: OperationSnapshot['status']): OperationSnapshot => ({
  id: 'r1', type: 'redrive', label: 'Redrive orders.dlq', status, total: 13, processed: status === 'completed' ? 13 : 0, moved: status === 'completed' ? 13 : 0, skipped: 0, failed: 0, errors: [], rate: null, etaMs: null, startedAt: 1, finishedAt: null, result: null,
});

describe('queue depths after a redrive', () => {
  it('reloads the DLQ header, the target and the queue list when the redrive completes', async () => {
    // Broker state: 13 in the DLQ before, 0 after; the target gets them.
    let dlqDepth = 13;
    const dlq = (): QueueSummary => summary({ id: 'orders.dlq', name: 'orders.dlq', depth: dlqDepth, isDeadLetterQueue: true });
    const work = (): QueueSummary => summary({ id: 'orders.work', name: 'orders.work', depth: 29 + (13 - dlqDepth) });
    handlers['queues.get'] = (i) => (i.queueId === 'orders.dlq' ? dlq() : work());
    handlers['queues.list'] = () => [dlq(), work()];
    let polls = 0;
    handlers['redrive.start'] = () => op('running');
    handlers['operations.get'] = () => {
      polls++;
      if (polls < 2) return op('running');
      dlqDepth = 0;
      return op('completed');
    };
    await useStore.getState().loadQueues('c1');
    await useStore.getState().loadQueue('c1', 'orders.dlq');
    expect(useStore.getState().queueDetails[queueKey('c1', 'orders.dlq')]?.summary?.depth).toBe(13);

    await useStore.getState().startRedrive({ connectionId: 'c1', dlqId: 'orders.dlq', selection: { kind: 'all' }, targetQueueId: 'orders.work' } as never);
    await vi.waitFor(() => expect(useStore.getState().redrive[queueKey('c1', 'orders.dlq')]?.operation?.status).toBe('completed'), { timeout: 3000 });
    await vi.waitFor(() => expect(useStore.getState().queueDetails[queueKey('c1', 'orders.dlq')]?.summary?.depth).toBe(0));
    await vi.waitFor(() => expect(useStore.getState().queueDetails[queueKey('c1', 'orders.work')]?.summary?.depth).toBe(42));
    const listed = useStore.getState().queueLists.c1?.queues.find((q) => q.id === 'orders.dlq');
    expect(listed?.depth).toBe(0);
  });

  it('does not reload while the redrive is still running', async () => {
    handlers['queues.get'] = () => summary({ id: 'orders.dlq', depth: 13 });
    handlers['redrive.start'] = () => op('running');
    handlers['operations.get'] = () => op('running');
    await useStore.getState().startRedrive({ connectionId: 'c1', dlqId: 'orders.dlq', selection: { kind: 'all' } } as never);
    await new Promise((r) => setTimeout(r, 700));
    expect(calls.filter((c) => c.method === 'queues.get')).toHaveLength(0);
    useStore.getState().dismissRedrive('c1', 'orders.dlq');
  });

  it('reloads the target queue after a re-inject ends', async () => {
    handlers['queues.get'] = () => summary({ id: 'orders.work', depth: 40 });
    handlers['redrive.reinject'] = () => ({ ...op('completed'), type: 'reinject' });
    handlers['redrive.history'] = () => ({ entries: [], nextCursor: null });
    await useStore.getState().reinjectBackup({ connectionId: 'c1', queueId: 'orders.work', auditEntryId: 'a1' });
    await vi.waitFor(() => expect(useStore.getState().queueDetails[queueKey('c1', 'orders.work')]?.summary?.depth).toBe(40));
  });
});

describe('rowDepth (queue-list row of a watched DLQ)', () => {
  const w = (depth: number | null): WatchedDlqView => ({ connectionId: 'c1', queueId: 'q', queueName: 'q', intervalMs: 5000, status: 'ok', depth, error: null, lastEvent: null });
  it('shows the depth the watch read, so the row agrees with the badge', () => {
    expect(rowDepth(0, w(1))).toBe(1);
    expect(rowDepth(5, w(0))).toBe(0);
  });
  it('falls back to the listed depth when not watched or the watch has not read one yet', () => {
    expect(rowDepth(7, undefined)).toBe(7);
    expect(rowDepth(7, w(null))).toBe(7);
    expect(rowDepth(null, undefined)).toBeNull();
  });
});
