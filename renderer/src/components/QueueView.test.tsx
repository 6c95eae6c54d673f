// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import type { PeekPage, QueueSummary } from '../../../shared/domain';
import { useStore } from '../store';
import { installFakeApi, removeFakeApi, type FakeApi } from '../test/fake-api';
import { message, summary } from '../test/fixtures';
import { QueueView } from './QueueView';

type Call = FakeApi['calls'][number];
let calls: Call[] = [];
let queue: QueueSummary;
const initial = useStore.getState();

const page: PeekPage = { messages: [message('m-1', '{"a":1}'), message('m-2', '{"a":2}')], nextCursor: null, total: 2, sideEffects: [] };

beforeEach(() => {
  useStore.setState(initial, true);
  ({ calls } = installFakeApi({
    'queues.get': () => queue,
    'queues.list': () => [queue],
    'messages.peek': () => page,
  }));
});
afterEach(() => {
  cleanup();
  removeFakeApi();
});

const peeks = (): Call[] => calls.filter((c) => c.method === 'messages.peek');

describe('QueueView peek gate', () => {
  it('reads a non-destructive queue at once, without accepting side effects', async () => {
    queue = summary({ kind: 'redis-stream', broker: 'redis', id: 'stream:orders' });
    render(<QueueView connectionId="c1" queueId={queue.id} />);
    await screen.findByText(/2 loaded/);
    expect(peeks()).toHaveLength(1);
    expect(peeks()[0]?.input.options).not.toHaveProperty('acceptSideEffects');
    expect(screen.queryByRole('dialog')).toBeNull();
  });

  it('does not peek a queue whose peek changes it until the user confirms, then accepts the side effects', async () => {
    queue = summary({
      capabilities: {
        canPeekNonDestructively: false,
        peekMayDeadLetter: true,
        peekSideEffects: [
          { kind: 'delivery-count', description: 'Each peek adds 1 to x-delivery-count.' },
          { kind: 'may-dead-letter', description: 'At x-delivery-limit 3 the peek dead-letters the message.' },
        ],
      },
    });
    render(<QueueView connectionId="c1" queueId={queue.id} />);
    const open = await screen.findByRole('button', { name: /^Peek 50 messages…$/ });
    // Give any effect a chance to (wrongly) peek.
    await act(() => new Promise((r) => setTimeout(r, 50)));
    expect(peeks()).toHaveLength(0);

    fireEvent.click(open);
    const dialog = screen.getByRole('dialog');
    expect(dialog.textContent).toContain('Each peek adds 1 to x-delivery-count.');
    // Cancel: still nothing read.
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    expect(peeks()).toHaveLength(0);

    fireEvent.click(screen.getByRole('button', { name: /^Peek 50 messages…$/ }));
    const go = screen.getByRole<HTMLButtonElement>('button', { name: 'Peek 50 messages' });
    expect(go.disabled).toBe(true);
    fireEvent.click(screen.getByRole('checkbox'));
    fireEvent.click(go);
    await screen.findByText(/2 loaded/);
    expect(peeks()).toHaveLength(1);
    expect(peeks()[0]?.input.options).toMatchObject({ acceptSideEffects: true, limit: 50 });
  });

  it('offers the confirmation again when the broker refuses a peek', async () => {
    queue = summary({ kind: 'redis-list', broker: 'redis', id: 'list:x' });
    window.queuescope = {
      invoke: vi.fn((method: string, input: unknown) => {
        calls.push({ method, input: input as Record<string, unknown> });
        if (method === 'messages.peek') return Promise.resolve({ ok: false, error: { code: 'PEEK_REFUSED', message: 'Peeking orders can dead-letter messages; accept the side effects to continue.' } });
        return Promise.resolve({ ok: true, value: method === 'queues.get' ? queue : [queue] });
      }) as never,
    };
    render(<QueueView connectionId="c1" queueId={queue.id} />);
    expect(await screen.findByText(/accept the side effects to continue/)).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Review and peek…' })).toBeTruthy();
  });

  it('shows the queue error in words when the queue is gone', async () => {
    window.queuescope = {
      invoke: vi.fn(() => Promise.resolve({ ok: false, error: { code: 'QUEUE_NOT_FOUND', message: 'Queue "orders" does not exist (any more).' } })) as never,
    };
    render(<QueueView connectionId="c1" queueId="rabbitmq:%2F/orders" />);
    expect(await screen.findByText('Queue not found')).toBeTruthy();
    expect(screen.getByText('Queue "orders" does not exist (any more).')).toBeTruthy();
    await waitFor(() => expect(screen.getByRole('button', { name: 'Try again' })).toBeTruthy());
  });
});

describe('QueueView load more on a list that moved', () => {
  it('says when the list moved between pages and entries may be missing or shown twice', async () => {
    queue = summary({ kind: 'redis-list', broker: 'redis', id: 'list:jobs' });
    const note = 'The list jobs changed between two pages (length 300 → 100): an unknown number of entries may have been skipped or read twice.';
    const first: PeekPage = { ...page, nextCursor: 'c2', total: 300 };
    const second: PeekPage = { messages: [message('m-3', '{"a":3}')], nextCursor: null, total: 100, sideEffects: [], moved: { realigned: false, uncertain: null, note } };
    window.queuescope = {
      invoke: vi.fn((method: string, input: unknown) => {
        calls.push({ method, input: input as Record<string, unknown> });
        const cursor = (input as { options?: { cursor?: string | null } }).options?.cursor ?? null;
        if (method === 'queues.get') return Promise.resolve({ ok: true, value: queue });
        if (method === 'queues.list') return Promise.resolve({ ok: true, value: [queue] });
        if (method === 'messages.peek') return Promise.resolve({ ok: true, value: cursor === null ? first : second });
        return Promise.resolve({ ok: false, error: { code: 'INTERNAL', message: `unexpected ${method}` } });
      }) as never,
    };
    render(<QueueView connectionId="c1" queueId={queue.id} />);
    await screen.findByText(/2 loaded/);
    expect(screen.queryByTestId('peek-moved-notice')).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Load more' }));
    const notice = await screen.findByTestId('peek-moved-notice');
    expect(notice.textContent).toMatch(/some may be missing or shown twice/);
    expect(notice.textContent).toContain(note);
  });

  it('says the list is older than the queue when a refresh reports another count', async () => {
    // ui-pass: after ↻ the header said depth 3 while the list (and its safety badges) still showed
    // the 2 messages read before, one of them already consumed, with nothing saying so.
    queue = summary({ kind: 'redis-list', broker: 'redis', id: 'list:orders', depth: 2 });
    render(<QueueView connectionId="c1" queueId={queue.id} />);
    await screen.findByText(/2 loaded/);
    await act(() => new Promise((r) => setTimeout(r, 20)));
    expect(screen.queryByTestId('list-older-than-queue')).toBeNull();

    queue = { ...queue, depth: 3 };
    fireEvent.click(screen.getByRole('button', { name: 'Refresh queue' }));
    const notice = await screen.findByTestId('list-older-than-queue');
    expect(notice.textContent).toMatch(/when the queue held 2; it now holds 3/);
    const before = peeks().length;
    fireEvent.click(within(notice).getByRole('button', { name: 'Read again' }));
    await waitFor(() => expect(peeks()).toHaveLength(before + 1));
    // The new read is of the queue as it is now: the notice goes.
    await waitFor(() => expect(screen.queryByTestId('list-older-than-queue')).toBeNull());
  });

  it('shows a bidi override in the queue name as an escape in the heading and breadcrumb', async () => {
    // 'orders-\u202eqld-sredro' displays as 'orders-orders-dlq' when rendered raw (ui-pass).
    queue = summary({ kind: 'redis-list', broker: 'redis', id: 'list:spoof', name: 'orders-\u202eqld-sredro' });
    render(<QueueView connectionId="c1" queueId={queue.id} />);
    const heading = await screen.findByRole('heading', { level: 1 });
    expect(heading.textContent).toContain('orders-\\u202eqld-sredro');
    expect(screen.getByRole('navigation', { name: 'Breadcrumb' }).textContent).toContain('orders-\\u202eqld-sredro');
    expect(document.body.textContent).not.toMatch(/\u202e/);
  });
});

