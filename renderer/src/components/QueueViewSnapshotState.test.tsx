// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import type { InspectReport } from '../../../shared/api/inspect';
import type { PeekPage, QueueSummary } from '../../../shared/domain';
import { useStore } from '../store';
import { installFakeApi, removeFakeApi, type FakeApi } from '../test/fake-api';
import { emptyInspectReport, message, operationSnapshot, summary } from '../test/fixtures';
import { QueueView } from './QueueView';

// A BullMQ snapshot section holding waiting, delayed and failed jobs: `queuescope inspect <file>`
// reads all of them, but the app opened it in its first state with jobs (waiting), so its
// "Redelivery safety" analysed only the waiting jobs of the same file. The view now opens a
// snapshot in every state its file holds (the CLI's default), and the report says which states it read.

const initial = useStore.getState();
let api: FakeApi;

const snapshotQueue: QueueSummary = summary({
  id: 'bullmq:bull:payments',
  name: 'payments',
  broker: 'redis',
  kind: 'bullmq',
  counts: { waiting: 2, delayed: 1, failed: 3, 'in snapshot': 6 },
  config: { prefix: 'bull', snapshot: { messages: 6, states: { waiting: 2, delayed: 1, failed: 3 }, exportedAt: 1, partial: false, partialReason: null } },
  capabilities: { peekStates: ['waiting', 'delayed', 'failed'] },
});

function reportOf(state: string | undefined): InspectReport {
  return emptyInspectReport(snapshotQueue, { state: state ?? null, states: state !== undefined ? [state] : ['waiting', 'delayed', 'failed'] });
}

const page: PeekPage = { messages: [message('1', '{"a":1}')], nextCursor: null, total: 6, sideEffects: [] };

beforeEach(() => {
  vi.spyOn(HTMLElement.prototype, 'clientHeight', 'get').mockReturnValue(600);
  vi.spyOn(HTMLElement.prototype, 'clientWidth', 'get').mockReturnValue(800);
  useStore.setState(initial, true);
  api = installFakeApi({
    'queues.get': () => snapshotQueue,
    'queues.list': () => [snapshotQueue],
    'messages.peek': () => page,
    'inspect.rules.get': () => ({ connectionId: 'c1', settings: { queues: [] }, persisted: false, note: null, problem: null, brokerVersion: null }),
    'inspect.queue': (input) => operationSnapshot({ result: { report: reportOf((input as { state?: string }).state) } }),
  });
});
afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
  removeFakeApi();
});

const inputs = (method: string): Record<string, unknown>[] => api.calls.filter((c) => c.method === method).map((c) => c.input);

describe('QueueView on a BullMQ snapshot: the states read', () => {
  it('peeks and analyses every state the file holds by default, as `queuescope inspect` does, and names them', async () => {
    render(<QueueView connectionId="c1" queueId={snapshotQueue.id} />);
    await waitFor(() => expect(inputs('inspect.queue')).toHaveLength(1));
    // No state: the API applies the shared default (every state of a snapshot), as the CLI does.
    expect(inputs('inspect.queue')[0]).not.toHaveProperty('state');
    expect(inputs('messages.peek')[0]?.options).toMatchObject({ direction: 'oldest' });
    expect(inputs('messages.peek')[0]?.options).not.toHaveProperty('state');
    const menu = screen.getByRole<HTMLSelectElement>('combobox', { name: 'State' });
    expect(menu.selectedOptions[0]?.textContent).toBe('all states (6 in snapshot)');
    expect(await screen.findByTestId('inspect-scope')).toHaveProperty('textContent', ' · all states in the snapshot: waiting, delayed, failed');

    // Picking one state reads that state only, and says so.
    fireEvent.change(menu, { target: { value: 'failed' } });
    await waitFor(() => expect(inputs('inspect.queue')).toHaveLength(2));
    expect(inputs('inspect.queue')[1]).toMatchObject({ state: 'failed' });
    await waitFor(() => expect(screen.getByTestId('inspect-scope').textContent).toBe(' · state failed'));
    // And back to all states.
    fireEvent.change(menu, { target: { value: '' } });
    await waitFor(() => expect(inputs('inspect.queue')).toHaveLength(3));
    expect(inputs('inspect.queue')[2]).not.toHaveProperty('state');
  });
});
