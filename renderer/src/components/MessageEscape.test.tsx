// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import type { PeekPage, QueueSummary } from '../../../shared/domain';
import { useStore } from '../store';
import { installFakeApi, removeFakeApi } from '../test/fake-api';
import { message, summary } from '../test/fixtures';
import { QueueView } from './QueueView';

// ui-pass: Esc did not close an open message. (test/e2e/message-nav.test.ts checks the same in Chromium.)

let queue: QueueSummary;
const initial = useStore.getState();
const page: PeekPage = { messages: [message('m-1', '{"a":1}'), message('m-2', '{"a":2}')], nextCursor: null, total: 2, sideEffects: [] };

beforeEach(() => {
  vi.spyOn(HTMLElement.prototype, 'clientHeight', 'get').mockReturnValue(600);
  vi.spyOn(HTMLElement.prototype, 'clientWidth', 'get').mockReturnValue(800);
  useStore.setState(initial, true);
  queue = summary({ kind: 'redis-stream', broker: 'redis', id: 'stream:orders' });
  installFakeApi({
    'queues.get': () => queue,
    'queues.list': () => [queue],
    'messages.peek': () => page,
  });
});
afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
  removeFakeApi();
});

async function openMessage(id: string): Promise<HTMLElement> {
  render(<QueueView connectionId="c1" queueId={queue.id} />);
  await screen.findByText(/2 loaded/);
  fireEvent.click(screen.getByTestId('message-list').querySelector(`[data-message-id="${id}"]`) as Element);
  return screen.getByTestId('message-view');
}

describe('Esc and the open message', () => {
  it('Esc closes the open message; focus that was inside it goes to the list', async () => {
    const view = await openMessage('m-2');
    screen.getByRole('button', { name: 'Close message' }).focus();
    expect(view.contains(document.activeElement)).toBe(true);
    fireEvent.keyDown(document.activeElement ?? document.body, { key: 'Escape' });
    expect(screen.queryByTestId('message-view')).toBeNull();
    expect(document.activeElement).toBe(screen.getByTestId('message-list'));
    expect(useStore.getState().selectedIndex).toBeNull();
  });

  it('with a dialog open on top, Esc closes only the dialog', async () => {
    await openMessage('m-1');
    fireEvent.click(screen.getByRole('button', { name: 'Export…' }));
    expect(screen.getByRole('dialog')).toBeTruthy();
    fireEvent.keyDown(document.activeElement ?? document.body, { key: 'Escape' });
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(screen.getByTestId('message-view')).toBeTruthy();
    fireEvent.keyDown(document.body, { key: 'Escape' });
    expect(screen.queryByTestId('message-view')).toBeNull();
  });
});
