// @vitest-environment jsdom
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, render, screen, within } from '@testing-library/react';
import type { RedrivePlan } from '../../../shared/redrive/types';
import { RedriveConfirm } from './RedrivePanel';

afterEach(cleanup);

function planWith(over: Partial<RedrivePlan>): RedrivePlan {
  return {
    dlq: { id: 'rabbitmq:%2F/orders.dlq', name: 'orders.dlq', depth: 30 },
    examined: 30,
    toMove: 17,
    toSkip: 12,
    skipped: [{ reason: 'non-retryable: HTTP 422', category: 'non-retryable', count: 12 }],
    failed: 0,
    cannotMove: [],
    maxBodyBytes: 1049600,
    notFoundIds: [],
    notFoundCount: 0,
    targets: [{ queueId: 'rabbitmq:%2F/orders', queueName: 'orders', via: "x-death queue 'orders'", exists: true, loop: null, warnings: [], count: 17 }],
    loops: [],
    warnings: [],
    groups: [],
    wastedRetries: 0,
    samples: [],
    native: { support: null, wouldUse: false, why: 'some messages stay in the DLQ' },
    filter: 'all; excluding non-retryable',
    stoppedBecause: 'exhausted',
    notes: [],
    ...over,
  };
}

describe('RedriveConfirm: messages that cannot move', () => {
  it('warns with the count, ids and reason of messages over the body read limit', () => {
    const plan = planWith({
      failed: 1,
      cannotMove: [{ id: 'msg-big-<b>1</b>', reason: 'The body (3145728 bytes) is larger than the 1049600-byte read limit: it is not moved.' }],
    });
    render(<RedriveConfirm plan={plan} dlqName="orders.dlq" rate={null} loopConfirmed={false} onConfirm={vi.fn()} onCancel={vi.fn()} />);
    const notice = screen.getByTestId('redrive-cannot-move');
    expect(notice.textContent).toContain('1 message cannot be moved');
    // The id is untrusted: shown as text, not markup.
    expect(within(notice).getByText('msg-big-<b>1</b>')).toBeTruthy();
    expect(notice.textContent).toContain('3145728 bytes');
    expect(notice.textContent).toContain('--max-body-bytes');
    expect(screen.getByRole('heading').textContent).toContain('Redrive 17 messages');
  });

  it('shows no warning when every selected message can move', () => {
    render(<RedriveConfirm plan={planWith({})} dlqName="orders.dlq" rate={null} loopConfirmed={false} onConfirm={vi.fn()} onCancel={vi.fn()} />);
    expect(screen.queryByTestId('redrive-cannot-move')).toBeNull();
  });
});
