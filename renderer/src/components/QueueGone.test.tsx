// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import type { QueueSummary } from '../../../shared/domain';
import { useStore } from '../store';
import { FakeApiError, installFakeApi, removeFakeApi } from '../test/fake-api';
import { queueKey } from '../store/types';
import { summary } from '../test/fixtures';
import { QueueView } from './QueueView';
import { isWatchable } from './WatchBadge';

const initial = useStore.getState();
let gone = false;
let queue: QueueSummary;

beforeEach(() => {
  gone = false;
  useStore.setState(initial, true);
  installFakeApi({
    'queues.get': () => {
      if (gone) throw new FakeApiError('QUEUE_NOT_FOUND', 'Queue list:q15 was not found');
      return queue;
    },
    'queues.list': () => (gone ? [] : [queue]),
    'messages.peek': () => ({ messages: [], nextCursor: null, total: 0, sideEffects: [] }),
  });
});
afterEach(() => {
  cleanup();
  removeFakeApi();
});

describe('QueueView when the queue disappears', () => {
  it('shows only the not-found state (no stale depth, no redrive) and leads back to the list', async () => {
    queue = summary({ id: 'list:q15', name: 'q15:dlq', broker: 'redis', kind: 'redis-list', depth: 3, isDeadLetterQueue: true });
    useStore.setState({ view: { screen: 'queue', connectionId: 'c1', queueId: queue.id } });
    render(<QueueView connectionId="c1" queueId={queue.id} />);
    await screen.findByRole('heading', { name: /q15:dlq/ });
    gone = true;
    await useStore.getState().loadQueue('c1', queue.id);
    expect(useStore.getState().queueDetails[queueKey('c1', queue.id)]?.summary?.depth).toBe(3); // kept in the store…
    await screen.findByTestId('queue-not-found');
    // …but not shown
    expect(screen.queryByText('Depth')).toBeNull();
    expect(screen.queryByRole('button', { name: /Analyse for redrive/ })).toBeNull();
    expect(screen.queryByRole('heading', { name: /q15:dlq/ })).toBeNull();
    expect(screen.getByRole('alert').textContent).toContain('was not found');
    fireEvent.click(screen.getByRole('button', { name: 'Back to the queue list' }));
    expect(useStore.getState().view).toEqual({ screen: 'queues', connectionId: 'c1' });
  });
});

describe('isWatchable', () => {
  const dlq = summary({ broker: 'rabbitmq', isDeadLetterQueue: true });
  it('offers watch on a live DLQ', () => {
    expect(isWatchable(dlq, 'rabbitmq')).toBe(true);
  });
  it('never on a snapshot connection, whatever broker its queues recorded', () => {
    expect(isWatchable(dlq, 'snapshot')).toBe(false);
    expect(isWatchable(dlq, undefined)).toBe(false);
  });
  it('not on a plain queue', () => {
    expect(isWatchable(summary({ broker: 'rabbitmq', isDeadLetterQueue: false, capabilities: { peekStates: [] } }), 'rabbitmq')).toBe(false);
  });
});
