// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { summarizeQueue } from '../../../shared/analysis/summary';
import type { InspectReport, InspectedMessage } from '../../../shared/api/inspect';
import type { OperationSnapshot, QueueMessage, QueueSummary } from '../../../shared/domain';
import { absoluteTime } from '../lib/format';
import { useStore } from '../store';
import { installFakeApi, removeFakeApi, type FakeApi } from '../test/fake-api';
import { message, operationSnapshot, summary } from '../test/fixtures';
import { InspectSummary } from './InspectSummary';
import { QueueView } from './QueueView';

type Call = FakeApi['calls'][number];
let calls: Call[] = [];
let queue: QueueSummary;
let report: InspectReport;
const initial = useStore.getState();
const READ_AT = Date.UTC(2026, 11, 2, 3, 1, 5);

/** A RabbitMQ classic queue: a peek requeues, so messages come back redelivered (side effect, no dead-lettering). */
const rabbitQueue = (): QueueSummary =>
  summary({
    kind: 'rabbitmq-classic',
    config: {},
    capabilities: {
      canPeekNonDestructively: false,
      peekMayDeadLetter: false,
      peekSideEffects: [{ kind: 'redelivered-flag', description: 'Peeked messages are requeued and come back with redelivered = true.' }],
    },
  });

const row = (id: string, over: Partial<InspectedMessage> = {}): InspectedMessage => ({
  id,
  position: null,
  state: null,
  key: `${id}:charge`,
  keySource: 'header Idempotency-Key',
  keyOrigin: 'builtin',
  keyVerdict: 'business-derived',
  keyReason: `business-derived: built from body.orderId (${id}).`,
  verdict: 'ok',
  payloadLabel: 'ok',
  topReason: null,
  reasons: [],
  operation: 'charge',
  bytes: 42,
  ...over,
});

/** A report as `inspect.queue` returns it, its summary computed by the real analysis over `messages`. */
function reportOf(messages: QueueMessage[], rows: InspectedMessage[]): InspectReport {
  return {
    queue: { id: queue.id, name: queue.name, kind: queue.kind, broker: queue.broker, isDeadLetterQueue: false },
    state: null,
    rulesSource: 'built-in',
    rules: { keyRules: [], snapshotFields: [], queueIsSnapshot: false },
    analysed: messages.length,
    total: messages.length,
    partial: false,
    partialReason: null,
    sideEffects: ['redelivered-flag'],
    summary: summarizeQueue(messages),
    messages: rows,
    messagesTruncated: false,
    comparisons: [],
    elapsedMs: 12,
  };
}

const operation = (r: InspectReport): OperationSnapshot => operationSnapshot({ total: r.analysed, processed: r.analysed, startedAt: READ_AT - 300, finishedAt: READ_AT, result: { report: r } });

beforeEach(() => {
  // jsdom lays nothing out: give elements a height so the virtualized list renders its rows.
  vi.spyOn(HTMLElement.prototype, 'clientHeight', 'get').mockReturnValue(600);
  vi.spyOn(HTMLElement.prototype, 'clientWidth', 'get').mockReturnValue(800);
  useStore.setState(initial, true);
  queue = rabbitQueue();
  ({ calls } = installFakeApi({
    'queues.get': () => queue,
    'queues.list': () => [queue],
    'inspect.rules.get': () => ({ connectionId: 'c1', settings: { queues: [] }, persisted: true, note: null, problem: null, brokerVersion: null }),
    'inspect.queue': () => operation(report),
  }));
});
afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
  removeFakeApi();
});

const reads = (): Call[] => calls.filter((c) => c.method === 'messages.peek' || c.method === 'messages.get');

/** Opens the queue, runs "Analyse…" and confirms the side effects, as a user does. */
async function analyse(): Promise<void> {
  render(<QueueView connectionId="c1" queueId={queue.id} />);
  fireEvent.click(await screen.findByRole('button', { name: 'Analyse…' }));
  const dialog = screen.getByRole('dialog');
  fireEvent.click(within(dialog).getByRole('button', { name: 'Analyse all messages' }));
  await screen.findByTestId('inspect-report');
}

describe('analysed copies in place of the message list (queues whose read changes them)', () => {
  it('shows the rows "Analyse all messages" read, labelled as analysed copies with the read time, without reading the queue again', async () => {
    const msgs = ['A-1', 'A-2', 'A-3'].map((id) => message(id, JSON.stringify({ orderId: id }), { headers: { 'Idempotency-Key': `${id}:charge` } }));
    report = reportOf(msgs, [row('A-1'), row('A-2', { verdict: 'flag', payloadLabel: 'flag', topReason: 'embeds order.status', reasons: ['embeds order.status'] }), row('A-3')]);
    await analyse();
    expect(calls.filter((c) => c.method === 'inspect.queue')[0]?.input).toMatchObject({ acceptSideEffects: true });

    expect(screen.queryByText('Messages are not read until you ask')).toBeNull();
    const notice = screen.getByTestId('analysed-notice').textContent;
    expect(notice).toMatch(/^Analysed copies of 3 messages, read by “Analyse all messages” at /);
    expect(notice).toContain(` at ${absoluteTime(READ_AT)} (`);
    expect(notice).toMatch(/peeking reads the queue again/);
    const list = screen.getByTestId('analysed-list');
    const ids = [...list.querySelectorAll('[role="row"]')].map((r) => r.getAttribute('data-message-id'));
    expect(ids).toEqual(['A-1', 'A-2', 'A-3']);
    expect(list.querySelector('[data-message-id="A-2"] [data-testid="verdict-badge"]')?.getAttribute('data-verdict')).toBe('flag');

    // Opening one shows its recorded verdicts, still without a read.
    fireEvent.click(list.querySelector('[data-message-id="A-2"]') as Element);
    const view = screen.getByTestId('analysed-message-view');
    expect(within(view).getByTestId('highlighted-key').textContent).toBe('A-2:charge');
    expect(within(view).getByTestId('key-reason').textContent).toBe('built from body.orderId (A-2).');
    expect(view.textContent).toMatch(/analysed copy, read by “Analyse all messages”/);
    // A drill-down id in the summary opens the analysed copy too.
    fireEvent.click(within(view).getByRole('button', { name: 'Close message' }));
    expect(screen.queryByTestId('analysed-message-view')).toBeNull();
    fireEvent.click(within(screen.getByTestId('inspect-report')).getByRole('button', { name: 'A-2' }));
    expect(within(screen.getByTestId('analysed-message-view')).getByRole('heading', { level: 2 }).textContent).toBe('A-2');
    await act(() => new Promise((r) => setTimeout(r, 50)));
    expect(reads()).toHaveLength(0);
  });

  it('Esc closes the open analysed copy, and a focus inside it goes back to the analysed list', async () => {
    const msgs = ['A-1', 'A-2'].map((id) => message(id, JSON.stringify({ orderId: id })));
    report = reportOf(msgs, [row('A-1'), row('A-2')]);
    await analyse();
    fireEvent.click(screen.getByTestId('analysed-list').querySelector('[data-message-id="A-2"]') as Element);
    const view = screen.getByTestId('analysed-message-view');
    within(view).getByRole('button', { name: 'Close message' }).focus();
    fireEvent.keyDown(document.activeElement ?? document.body, { key: 'Escape' });
    expect(screen.queryByTestId('analysed-message-view')).toBeNull();
    expect(document.activeElement).toBe(screen.getByTestId('analysed-list'));
  });

  it('says the queue was empty rather than offering to read it', async () => {
    report = reportOf([], []);
    await analyse();
    expect(screen.queryByText('Messages are not read until you ask')).toBeNull();
    expect(screen.getByText('The analysis read this queue and found no messages.')).toBeTruthy();
    expect(screen.getByTestId('inspect-empty').textContent).toBe('No messages were analysed: the queue was empty.');
    expect(screen.queryByTestId('business-share')).toBeNull();
    expect(reads()).toHaveLength(0);
  });
});

describe('InspectSummary wording', () => {
  it('counts a one-message queue in the singular while analysing', () => {
    report = reportOf([], []);
    const op = { ...operation(report), status: 'running' as const, total: 1, processed: 0, finishedAt: null, result: null };
    useStore.setState({ inspectRuns: { [`c1\u0000${queue.id}`]: { status: 'running', state: undefined, operation: op, report: null, error: null } } });
    render(<InspectSummary connectionId="c1" summary={queue} state={undefined} messages={[]} onOpenMessage={() => undefined} />);
    expect(screen.getByRole('status').textContent).toBe('Analysing… 0 of 1 message Cancel');
  });

  it('uses the singular for one large payload, one duplicate group and one redundant copy', async () => {
    const big = (id: string): QueueMessage => {
      const m = message(id, JSON.stringify({ orderId: 'A-1' }), { properties: { messageId: 'A-1:charge' } });
      return { ...m, body: { ...m.body, sizeBytes: 300 * 1024 } };
    };
    const msgs = [big('m-1'), message('m-2', JSON.stringify({ orderId: 'A-1' }), { properties: { messageId: 'A-1:charge' } })];
    report = reportOf(msgs, [row('m-1'), row('m-2')]);
    useStore.setState({ inspectRuns: { [`c1\u0000${queue.id}`]: { status: 'ready', state: undefined, operation: operation(report), report, error: null } } });
    const { container } = render(<InspectSummary connectionId="c1" summary={queue} state={undefined} messages={[]} onOpenMessage={() => undefined} />);
    await screen.findByTestId('inspect-report');
    expect(report.summary.largePayloads).toBe(1);
    expect(container.textContent).toContain('1 large payload');
    expect(container.textContent).not.toMatch(/1 large payloads/);
    expect(screen.getByTestId('duplicate-drill').querySelector('summary')?.textContent).toBe('Duplicate keys in this queue (1 group, 1 redundant copy)');
  });

  it('shows how the queue moved while it was read: a re-aligned note, and a move that made the read partial only once', async () => {
    const realigned = 'orders moved 2 times while it was read (entries pushed or popped at the end read from); each time reading re-aligned on the last entry read, so none was skipped or read twice there.';
    const lost = 'The list orders changed between two pages, so an unknown number of entries may have been skipped or read twice: …';
    const msgs = [message('m-1', JSON.stringify({ orderId: 'A-1' }))];
    report = { ...reportOf(msgs, [row('m-1')]), partial: true, partialReason: lost, notes: [realigned, lost] };
    useStore.setState({ inspectRuns: { [`c1\u0000${queue.id}`]: { status: 'ready', state: undefined, operation: operation(report), report, error: null } } });
    const { container } = render(<InspectSummary connectionId="c1" summary={queue} state={undefined} messages={[]} onOpenMessage={() => undefined} />);
    await screen.findByTestId('inspect-report');
    expect(screen.getAllByTestId('inspect-read-note').map((e) => e.textContent)).toEqual([realigned]);
    expect(container.textContent).toContain(`Partial: ${lost}`);
  });
});
