// @vitest-environment jsdom
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, render, screen } from '@testing-library/react';
import type { OperationSnapshot } from '../../../shared/domain';
import { useStore } from '../store';
import { OperationsDock } from './OperationsDock';

const initial = useStore.getState();
afterEach(() => {
  cleanup();
  useStore.setState(initial, true);
});

const op = (result: Record<string, unknown>): OperationSnapshot => ({
  id: 'op-1', type: 'export', label: 'Export jobs to /tmp/jobs.jsonl', status: 'completed', total: 4000, processed: 1256, moved: 0, skipped: 0, failed: 0,
  errors: [], rate: null, etaMs: null, startedAt: 1, finishedAt: 2, result,
});

describe('OperationsDock', () => {
  it('says when a finished export is partial, and how the queue moved while it was read', () => {
    const reason = 'The list jobs changed between two pages, so an unknown number of entries may have been skipped or read twice: …';
    const realigned = 'jobs moved 3 times while it was read (entries pushed or popped at the end read from); each time reading re-aligned on the last entry read, so none was skipped or read twice there.';
    useStore.setState({ operations: [op({ path: '/tmp/jobs.jsonl', partial: true, reason, notes: [realigned, reason] })] });
    render(<OperationsDock />);
    expect(screen.getByTestId('operation-partial').textContent).toBe(`Partial: ${reason}`);
    // The reason is not repeated as a note.
    expect(screen.getAllByTestId('operation-note').map((e) => e.textContent)).toEqual([realigned]);
  });

  it('shows no warning for a complete export', () => {
    useStore.setState({ operations: [op({ path: '/tmp/jobs.jsonl', partial: false })] });
    render(<OperationsDock />);
    expect(screen.queryByTestId('operation-partial')).toBeNull();
    expect(screen.queryByTestId('operation-note')).toBeNull();
  });
});
