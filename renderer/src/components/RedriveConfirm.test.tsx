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

describe('RedriveConfirm: idempotency keys already waiting in the target', () => {
  it("shows the dry run's warning and the note of a target it could not check", () => {
    const warning = "12 of the 17 messages this run would move to orders carry an idempotency key already waiting in orders (e.g. A-1001:charge: DLQ #3~ab12cd34, waiting as #0~9f00aa11): moving them runs each operation twice unless orders's consumer deduplicates on the key. --dedupe-by-key keeps one per key within the DLQ only.";
    const note = 'Idempotency keys already waiting in audit were not checked: reading audit has side effects (requeued with redelivered=true).';
    const plan = planWith({
      warnings: [warning],
      keysInTarget: [
        { queueId: 'redis:list:orders', queueName: 'orders', checked: true, read: 40, partial: false, moving: 17, withoutKey: 0, duplicates: 12, examples: [{ key: 'A-1001:charge', dlqId: '#3~ab12cd34', targetId: '#0~9f00aa11' }], note: null },
        { queueId: 'rabbitmq:%2F/audit', queueName: 'audit', checked: false, read: 0, partial: false, moving: 3, withoutKey: 0, duplicates: 0, examples: [], note },
      ],
    });
    render(<RedriveConfirm plan={plan} dlqName="orders.dlq" rate={null} loopConfirmed={false} onConfirm={vi.fn()} onCancel={vi.fn()} />);
    const dialog = screen.getByRole('dialog');
    expect(within(dialog).getByTestId('redrive-confirm-warning').textContent).toBe(warning);
    expect(within(dialog).getByTestId('redrive-target-keys').textContent).toBe(note);
  });

  it('shows neither when the plan has no warning and every target was checked', () => {
    render(<RedriveConfirm plan={planWith({ keysInTarget: [] })} dlqName="orders.dlq" rate={null} loopConfirmed={false} onConfirm={vi.fn()} onCancel={vi.fn()} />);
    expect(screen.queryByTestId('redrive-confirm-warning')).toBeNull();
    expect(screen.queryByTestId('redrive-target-keys')).toBeNull();
  });
});
