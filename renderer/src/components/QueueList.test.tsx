// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, cleanup, render, screen } from '@testing-library/react';
import type { QueueSummary } from '../../../shared/domain';
import { useStore } from '../store';
import { installFakeApi, removeFakeApi, type FakeApi } from '../test/fake-api';
import { summary } from '../test/fixtures';
import { QueueList } from './QueueList';

// The queue list's "updated … ago" was computed once at render: with auto-refresh off it said
// "updated now" for as long as the screen stayed open.

const initial = useStore.getState();
const T0 = Date.UTC(2026, 11, 2, 12, 0, 0);
let api: FakeApi;
const queues: QueueSummary[] = [summary({ kind: 'redis-list', broker: 'redis', id: 'list:orders', name: 'orders', depth: 2 })];

beforeEach(() => {
  // Only the clock and intervals are fake: the store's promises run as usual.
  vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] });
  vi.setSystemTime(T0);
  useStore.setState(initial, true);
  api = installFakeApi({ 'queues.list': () => queues });
});
afterEach(() => {
  cleanup();
  vi.useRealTimers();
  removeFakeApi();
});

/** The line above the table: "1 queue · updated 12 sec. ago". */
const meta = (): string => document.querySelector('.list-meta')?.textContent ?? '';

/** Lets `ms` pass on the (fake) clock, firing the intervals. */
const pass = (ms: number): void => {
  act(() => {
    vi.advanceTimersByTime(ms);
  });
};

describe('queue list: when it was read', () => {
  it('"updated … ago" ages as time passes without a reload (auto-refresh off)', async () => {
    render(<QueueList connectionId="c1" />);
    await screen.findByText(/updated/);
    expect(meta()).toMatch(/ · updated now$/);
    pass(12_000);
    expect(meta()).toMatch(/ · updated 12 sec\. ago$/);
    pass(3 * 60_000);
    expect(meta()).toMatch(/ · updated 3 min\. ago$/);
    // The label aged on the clock alone: the list was read once.
    expect(api.calls.filter((c) => c.method === 'queues.list')).toHaveLength(1);
  });

  it('counts one queue in the singular ("1 queue", not "1 queues")', async () => {
    render(<QueueList connectionId="c1" />);
    await screen.findByText(/updated/);
    expect(meta()).toBe('1 queue · updated now');
  });

  it('a reload resets it to "now"', async () => {
    render(<QueueList connectionId="c1" />);
    await screen.findByText(/updated/);
    pass(40_000);
    expect(meta()).toMatch(/ · updated 40 sec\. ago$/);
    await act(async () => {
      screen.getByRole('button', { name: 'Refresh queues' }).click();
      await Promise.resolve();
    });
    await vi.waitFor(() => {
      expect(meta()).toMatch(/ · updated now$/);
    });
  });
});
