// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { summarizeQueue } from '../../../shared/analysis/summary';
import type { InspectReport } from '../../../shared/api/inspect';
import type { QueueSummary } from '../../../shared/domain';
import { useStore } from '../store';
import { installFakeApi, removeFakeApi } from '../test/fake-api';
import { message, operationSnapshot, summary } from '../test/fixtures';
import { QueueView } from './QueueView';

// "Analyse…" on a RabbitMQ queue also reads its DLQ to compare keys (a delivery there too); the
// report's sideEffects say what the reads did, and the app showed none of them.

const initial = useStore.getState();
let queue: QueueSummary;
let report: InspectReport;

beforeEach(() => {
  vi.spyOn(HTMLElement.prototype, 'clientHeight', 'get').mockReturnValue(600);
  vi.spyOn(HTMLElement.prototype, 'clientWidth', 'get').mockReturnValue(800);
  useStore.setState(initial, true);
  queue = summary({
    kind: 'rabbitmq-classic',
    config: {},
    capabilities: { canPeekNonDestructively: false, peekMayDeadLetter: false, peekSideEffects: [{ kind: 'redelivered-flag', description: 'Peeked messages are requeued and come back with redelivered = true.' }] },
  });
  const msgs = [message('A-1', JSON.stringify({ orderId: 'A-1' }), { headers: { 'Idempotency-Key': 'A-1:charge' } })];
  report = {
    queue: { id: queue.id, name: queue.name, kind: queue.kind, broker: queue.broker, isDeadLetterQueue: false },
    state: null,
    rulesSource: 'built-in',
    rules: { keyRules: [], snapshotFields: [], queueIsSnapshot: false },
    analysed: 1,
    total: 1,
    partial: false,
    partialReason: null,
    sideEffects: ['Held 1 message unacknowledged while reading, then requeued it.', 'orders.dlq (read for the duplicate comparison): Held 2 messages unacknowledged while reading, then requeued them.'],
    summary: summarizeQueue(msgs),
    messages: [],
    messagesTruncated: false,
    comparisons: [],
    elapsedMs: 3,
  };
  installFakeApi({
    'queues.get': () => queue,
    'queues.list': () => [queue],
    'inspect.rules.get': () => ({ connectionId: 'c1', settings: { queues: [] }, persisted: true, note: null, problem: null, brokerVersion: null }),
    'inspect.queue': () => operationSnapshot({ total: 1, processed: 1, result: { report } }),
  });
});
afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
  removeFakeApi();
});

describe('Redelivery safety: side effects of the analysis', () => {
  it("lists what the reads did, the compared DLQ's read included", async () => {
    render(<QueueView connectionId="c1" queueId={queue.id} />);
    fireEvent.click(await screen.findByRole('button', { name: 'Analyse…' }));
    fireEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Analyse all messages' }));
    const box = await screen.findByTestId('inspect-side-effects');
    expect(box.querySelector('summary')?.textContent).toBe('Side effects of reading (2)');
    expect([...box.querySelectorAll('li')].map((li) => li.textContent)).toEqual(report.sideEffects);
  });

  it('shows nothing when the reads changed nothing', async () => {
    report.sideEffects = [];
    render(<QueueView connectionId="c1" queueId={queue.id} />);
    fireEvent.click(await screen.findByRole('button', { name: 'Analyse…' }));
    fireEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Analyse all messages' }));
    await screen.findByTestId('inspect-report');
    expect(screen.queryByTestId('inspect-side-effects')).toBeNull();
  });
});
