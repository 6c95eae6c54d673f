// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { summarizeQueue } from '../../../shared/analysis/summary';
import type { InspectReport } from '../../../shared/api/inspect';
import type { OperationSnapshot, PeekPage, QueueSummary } from '../../../shared/domain';
import { useStore } from '../store';
import { installFakeApi, removeFakeApi, type FakeApi } from '../test/fake-api';
import { message, operationSnapshot, summary } from '../test/fixtures';
import { QueueView } from './QueueView';

// ui-pass: the depth cards and the redelivery-safety summary did not say when they were read,
// while the message list did (and warns when the queue changed since: "Read again").

type Call = FakeApi['calls'][number];
let calls: Call[] = [];
let queue: QueueSummary;
const initial = useStore.getState();
const T0 = Date.UTC(2026, 11, 2, 12, 0, 0);
const msgs = [message('m-1', '{"orderId":"A-1"}'), message('m-2', '{"orderId":"A-2"}')];
const page: PeekPage = { messages: msgs, nextCursor: null, total: 2, sideEffects: [] };

function reportOf(): InspectReport {
  return {
    queue: { id: queue.id, name: queue.name, kind: queue.kind, broker: queue.broker, isDeadLetterQueue: false },
    state: null,
    rulesSource: 'built-in',
    rules: { keyRules: [], snapshotFields: [], queueIsSnapshot: false },
    analysed: 2,
    total: 2,
    partial: false,
    partialReason: null,
    sideEffects: [],
    summary: summarizeQueue(msgs),
    messages: [],
    messagesTruncated: false,
    comparisons: [],
    elapsedMs: 12,
  };
}

/** The inspection as the app's operation reports it: read between T0 − 3 s and T0. */
const operation = (): OperationSnapshot => operationSnapshot({ total: 2, processed: 2, startedAt: T0 - 3000, finishedAt: T0, result: { report: reportOf() } });

beforeEach(() => {
  // Only the clock and intervals are fake: the store's polls (setTimeout) and promises run as usual.
  vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] });
  vi.setSystemTime(T0);
  useStore.setState(initial, true);
  queue = summary({ kind: 'redis-list', broker: 'redis', id: 'list:orders', name: 'orders', depth: 2 });
  ({ calls } = installFakeApi({
    'queues.get': () => queue,
    'queues.list': () => [queue],
    'messages.peek': () => page,
    'inspect.rules.get': () => ({ connectionId: 'c1', settings: { queues: [] }, persisted: true, note: null, problem: null, brokerVersion: null }),
    'inspect.queue': () => operation(),
  }));
});
afterEach(() => {
  cleanup();
  vi.useRealTimers();
  removeFakeApi();
});

/** Lets `ms` pass on the (fake) clock, firing the intervals that update "read … ago". */
const pass = (ms: number): void => {
  act(() => {
    vi.advanceTimersByTime(ms);
  });
};

describe('read times in the queue view', () => {
  it('says when the depth cards were read ("read 12 s ago", the time in the tooltip) and ages as time passes', async () => {
    render(<QueueView connectionId="c1" queueId={queue.id} />);
    const at = await screen.findByTestId('counts-read-at');
    expect(at.textContent).toBe('read just now');
    expect(at.getAttribute('title')).toBe('Read at 2026-12-02 12:00:00.000 UTC');
    pass(12_000);
    expect(screen.getByTestId('counts-read-at').textContent).toBe('read 12 s ago');
    pass(3 * 60_000);
    expect(screen.getByTestId('counts-read-at').textContent).toBe('read 3 min ago');
    // A refresh reads again: the age starts over, with the new time in the tooltip.
    fireEvent.click(screen.getByRole('button', { name: 'Refresh queue' }));
    await vi.waitFor(() => expect(screen.getByTestId('counts-read-at').textContent).toBe('read just now'));
    // (vi.waitFor moves the fake clock on by its polling interval)
    expect(screen.getByTestId('counts-read-at').getAttribute('title')).toMatch(/^Read at 2026-12-02 12:03:12\.\d{3} UTC$/);
  });

  it('says when the safety summary was read (the read window in the tooltip), ages, and warns with "Analyse again" when the queue changed since', async () => {
    render(<QueueView connectionId="c1" queueId={queue.id} />);
    const at = await screen.findByTestId('summary-read-at', {}, { timeout: 3000 });
    expect(at.textContent).toBe('read just now');
    expect(at.getAttribute('title')).toBe('Read between 2026-12-02 11:59:57.000 UTC and 2026-12-02 12:00:00.000 UTC');
    pass(45_000);
    expect(screen.getByTestId('summary-read-at').textContent).toBe('read 45 s ago');
    expect(screen.queryByTestId('summary-older-than-queue')).toBeNull();

    queue = { ...queue, depth: 5 };
    fireEvent.click(screen.getByRole('button', { name: 'Refresh queue' }));
    const notice = await screen.findByTestId('summary-older-than-queue');
    expect(notice.textContent).toMatch(/read at 2026-12-02 12:00:00\.000 UTC, when the queue held 2; it now holds 5/);
    const before = calls.filter((c) => c.method === 'inspect.queue').length;
    fireEvent.click(within(notice).getByRole('button', { name: 'Analyse again' }));
    await vi.waitFor(() => expect(calls.filter((c) => c.method === 'inspect.queue')).toHaveLength(before + 1));
  });
});
