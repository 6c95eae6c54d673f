// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AuditEntryView, AuditLogPageView } from '../../../shared/api/redrive';
import type { OperationSnapshot } from '../../../shared/domain';
import { installFakeApi, removeFakeApi, type FakeApi, type FakeHandler } from '../test/fake-api';
import { useStore } from '.';
import { queueKey } from './types';

// ui-pass: with Redrive › History open, a cancelled run's result showed "Cancelled" while the
// history beside it still listed the run as started, with no end recorded (the log read before).

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
  id: 'r1', type: 'redrive', label: 'Redrive orders.dlq', status, total: 13, processed: 3, moved: 3, skipped: 0, failed: 0, errors: [], rate: null, etaMs: null, startedAt: 1, finishedAt: null, result: null,
});
const entry = (status: string): AuditEntryView => ({
  version: 1, id: 'a1', time: 1, actor: 'app', action: 'redrive', connection: 'c1', source: 'orders.dlq', target: 'orders.work', filter: null, status, counts: {}, operationId: 'r1', backupPath: null, details: {},
});
const page = (status: string): AuditLogPageView => ({ entries: [entry(status)], total: 1, skippedLines: 0, nextBefore: null, path: '/tmp/audit-log.jsonl' });

describe('redrive history beside a run', () => {
  it('is read again when the run ends, so it says how the run ended', async () => {
    let logged = 'started';
    let polls = 0;
    handlers['redrive.history'] = () => page(logged);
    handlers['redrive.start'] = () => op('running');
    handlers['operations.get'] = () => {
      if (++polls < 2) return op('running');
      logged = 'cancelled'; // the engine writes the end entry before the operation ends
      return op('cancelled');
    };
    await useStore.getState().loadRedriveHistory({ limit: 20 });
    expect(useStore.getState().redriveHistory.page?.entries[0]?.status).toBe('started');

    await useStore.getState().startRedrive({ connectionId: 'c1', dlqId: 'orders.dlq', selection: { kind: 'all' } } as never);
    await vi.waitFor(() => expect(useStore.getState().redrive[queueKey('c1', 'orders.dlq')]?.operation?.status).toBe('cancelled'), { timeout: 3000 });
    await vi.waitFor(() => expect(useStore.getState().redriveHistory.page?.entries[0]?.status).toBe('cancelled'));
  });

  it('is not read when it was never shown', async () => {
    handlers['redrive.start'] = () => op('running');
    handlers['operations.get'] = () => op('cancelled');
    await useStore.getState().startRedrive({ connectionId: 'c1', dlqId: 'orders.dlq', selection: { kind: 'all' } } as never);
    await vi.waitFor(() => expect(useStore.getState().redrive[queueKey('c1', 'orders.dlq')]?.operation?.status).toBe('cancelled'), { timeout: 3000 });
    await new Promise((r) => setTimeout(r, 50));
    expect(calls.filter((c) => c.method === 'redrive.history')).toHaveLength(0);
  });
});
