// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { OperationSnapshot, PeekPage } from '../../../shared/domain';
import { message, summary } from '../test/fixtures';
import { installFakeApi, removeFakeApi, type FakeApi, type FakeHandler, FakeApiError } from '../test/fake-api';
import { useStore } from '.';

const initial = useStore.getState();
let handlers: Record<string, FakeHandler>;
let calls: FakeApi['calls'];

beforeEach(() => {
  useStore.setState(initial, true);
  ({ handlers, calls } = installFakeApi());
});
afterEach(() => {
  removeFakeApi();
  vi.useRealTimers();
});

const page = (ids: string[], nextCursor: string | null, sideEffects: string[] = []): PeekPage => ({ messages: ids.map((id) => message(id, `{"id":"${id}"}`)), nextCursor, total: 5, sideEffects });
const params = { connectionId: 'c1', queueId: 'q1', limit: 2, direction: 'oldest' as const, acceptSideEffects: true };

describe('messages slice', () => {
  it('pages with nextCursor and appends, keeping the same options', async () => {
    handlers['messages.peek'] = (input) => {
      const cursor = (input.options as { cursor: string | null }).cursor;
      return cursor === null ? page(['a', 'b'], 'c2', ['delivery-count']) : page(['c'], null, ['delivery-count', 'redelivered-flag']);
    };
    await useStore.getState().startPeek(params);
    expect(useStore.getState().peek?.nextCursor).toBe('c2');
    await useStore.getState().loadMore();
    const p = useStore.getState().peek;
    expect(p?.messages.map((m) => m.id)).toEqual(['a', 'b', 'c']);
    expect(p?.nextCursor).toBeNull();
    expect(p?.sideEffects).toEqual(['delivery-count', 'redelivered-flag']);
    expect(calls.map((c) => c.input.options)).toEqual([
      { limit: 2, direction: 'oldest', cursor: null, acceptSideEffects: true },
      { limit: 2, direction: 'oldest', cursor: 'c2', acceptSideEffects: true },
    ]);
    await useStore.getState().loadMore(); // at the end: no call
    expect(calls).toHaveLength(2);
  });

  it('keeps what Load more pages say about a list that moved between pages', async () => {
    const moved = { realigned: false, uncertain: null, note: 'The list jobs changed between two pages: entries may have been skipped or read twice.' };
    handlers['messages.peek'] = (input) => ((input.options as { cursor: string | null }).cursor === null ? page(['a', 'b'], 'c2') : { ...page(['c'], null), moved });
    await useStore.getState().startPeek(params);
    expect(useStore.getState().peek?.moved).toBeUndefined();
    await useStore.getState().loadMore();
    expect(useStore.getState().peek?.moved).toEqual([moved]);
  });

  it('drops the result of a peek that a newer peek replaced', async () => {
    let release: (v: PeekPage) => void = () => undefined;
    handlers['messages.peek'] = (input) => ((input.options as { state?: string }).state === 'slow' ? new Promise<PeekPage>((r) => (release = r)) : page(['new'], null));
    const slow = useStore.getState().startPeek({ ...params, state: 'slow' });
    await useStore.getState().startPeek({ ...params, state: 'fast' });
    release(page(['old'], null));
    await slow;
    expect(useStore.getState().peek?.state).toBe('fast');
    expect(useStore.getState().peek?.messages.map((m) => m.id)).toEqual(['new']);
  });

  it('keeps loaded messages when a later page fails, and shows the error in the banner', async () => {
    handlers['messages.peek'] = (input) => {
      if ((input.options as { cursor: string | null }).cursor === null) return page(['a'], 'c2');
      throw new FakeApiError('TIMEOUT', 'The broker did not answer in 30 s.');
    };
    await useStore.getState().startPeek(params);
    await useStore.getState().loadMore();
    expect(useStore.getState().peek?.messages.map((m) => m.id)).toEqual(['a']);
    expect(useStore.getState().peek?.status).toBe('ready');
    expect(useStore.getState().banner).toEqual({ code: 'TIMEOUT', message: 'The broker did not answer in 30 s.' });
  });

  it('toggles the export selection', () => {
    useStore.getState().toggleChecked(1);
    useStore.getState().toggleChecked(3);
    useStore.getState().toggleChecked(1);
    expect(useStore.getState().checked).toEqual({ 3: true });
  });
});

describe('queues slice', () => {
  it('keeps the last good list visible when a refresh fails', async () => {
    const q = summary();
    handlers['queues.list'] = () => [q];
    await useStore.getState().loadQueues('c1');
    handlers['queues.list'] = () => {
      throw new FakeApiError('HOST_UNREACHABLE', 'RabbitMQ at 127.0.0.1:5672 refused the connection.');
    };
    await useStore.getState().loadQueues('c1');
    const list = useStore.getState().queueLists.c1;
    expect(list?.status).toBe('error');
    expect(list?.error?.code).toBe('HOST_UNREACHABLE');
    expect(list?.queues).toEqual([q]);
  });
});

describe('operations slice', () => {
  const op = (status: OperationSnapshot['status'], processed: number): OperationSnapshot => ({
    id: 'op1', type: 'export', label: 'Export orders', status, total: 10, processed, moved: 0, skipped: 0, failed: 0, errors: [], rate: null, etaMs: null, startedAt: 1, finishedAt: null, result: status === 'completed' ? { path: '/tmp/orders.jsonl' } : null,
  });

  it('polls an export until it finishes', async () => {
    vi.useFakeTimers();
    const states = [op('running', 4), op('running', 8), op('completed', 10)];
    handlers['snapshots.export'] = () => op('pending', 0);
    handlers['operations.get'] = () => states.shift() ?? op('completed', 10);
    await useStore.getState().startExport({ connectionId: 'c1', queueId: 'q1' });
    expect(useStore.getState().operations[0]?.status).toBe('pending');
    await vi.advanceTimersByTimeAsync(400);
    expect(useStore.getState().operations[0]?.processed).toBe(4);
    await vi.advanceTimersByTimeAsync(2000);
    expect(useStore.getState().operations[0]?.status).toBe('completed');
    const polls = calls.filter((c) => c.method === 'operations.get').length;
    await vi.advanceTimersByTimeAsync(2000);
    expect(calls.filter((c) => c.method === 'operations.get').length).toBe(polls);
  });

  it('returns null and starts nothing when the save dialog is cancelled', async () => {
    handlers['snapshots.export'] = () => null;
    await expect(useStore.getState().startExport({ connectionId: 'c1', queueId: 'q1' })).resolves.toBeNull();
    expect(useStore.getState().operations).toEqual([]);
  });

  it('cancels through the API and never moves a finished operation back', async () => {
    handlers['snapshots.export'] = () => op('completed', 10);
    await useStore.getState().startExport({ connectionId: 'c1', queueId: 'q1' });
    handlers['operations.cancel'] = () => op('running', 3);
    await useStore.getState().cancelOperation('op1');
    expect(useStore.getState().operations[0]?.status).toBe('completed');
  });
});

describe('connections slice', () => {
  it('opens the demo snapshot at start when the user has no connection', async () => {
    handlers['app.info'] = () => ({ version: '1.0.0', runtime: 'web', demoConnectionId: 'demo', warnings: [], pathInput: true, defaultExportDir: '/home/u/Downloads' });
    handlers['connections.list'] = () => [{ id: 'demo', name: 'Demo snapshot', config: { kind: 'snapshot', path: '/x.jsonl' }, hasSecret: false, builtIn: true }];
    await useStore.getState().init();
    expect(useStore.getState().view).toEqual({ screen: 'queues', connectionId: 'demo' });
  });

  it('stays on the welcome screen with several connections, and reports a failed list in words', async () => {
    handlers['app.info'] = () => ({ version: '1.0.0', runtime: 'web', demoConnectionId: null, warnings: [], pathInput: true, defaultExportDir: '/home/u/Downloads' });
    handlers['connections.list'] = () => {
      throw new FakeApiError('INTERNAL', 'profiles.json could not be read.');
    };
    await useStore.getState().init();
    expect(useStore.getState().view).toEqual({ screen: 'welcome' });
    expect(useStore.getState().connectionsStatus).toBe('error');
    expect(useStore.getState().connectionsError?.message).toBe('profiles.json could not be read.');
  });
});
