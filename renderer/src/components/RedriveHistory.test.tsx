// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import type { AuditEntryView, AuditLogPageView } from '../../../shared/api/redrive';
import { useStore } from '../store';
import { operationSnapshot, summary } from '../test/fixtures';
import { installFakeApi, removeFakeApi } from '../test/fake-api';
import { RedriveHistory } from './RedriveHistory';

// fresh-user pass: "Put back…" on a run killed mid-run (only its "started" entry, no counts) said
// "Put the backup of 0 messages", though the backup holds every message the run read.

const initial = useStore.getState();
const entry = (status: string, counts: Record<string, number>): AuditEntryView => ({
  version: 1, id: 'a1', time: 1, actor: 'cli', action: 'redrive', connection: 'c1', source: 'orders.dlq', target: 'orders.work', filter: null, status, counts, operationId: null, backupPath: '/tmp/backups/redrive-orders.dlq.jsonl', details: {},
});
const page = (e: AuditEntryView): AuditLogPageView => ({ entries: [e], total: 1, skippedLines: 0, nextBefore: null, path: '/tmp/audit-log.jsonl' });
const queues = [summary({ id: 'list:orders.dlq', name: 'orders.dlq' })];

beforeEach(() => {
  useStore.setState(initial, true);
});
afterEach(() => {
  cleanup();
  removeFakeApi();
});

async function openPutBack(e: AuditEntryView): Promise<HTMLElement> {
  installFakeApi({ 'redrive.history': () => page(e) });
  render(<RedriveHistory connectionId="c1" queues={queues} />);
  fireEvent.click(await screen.findByRole('button', { name: 'Put back…' }));
  return screen.getByTestId('redrive-putback');
}

describe('Put back… in the redrive history', () => {
  it('a run with no end recorded: the count is unknown, and the backup may hold messages already in the target', async () => {
    const box = await openPutBack(entry('started', {}));
    expect(box.textContent).not.toContain('0 messages');
    expect(box.textContent).toContain('Put the backup back into');
    expect(screen.getByTestId('redrive-putback-unknown').textContent).toMatch(/How many messages this backup holds is not known: the run did not record its end.*may hold messages that did reach the target.*duplicates/);
  });

  it('an ended run: the backup of its moved count', async () => {
    const box = await openPutBack(entry('completed', { examined: 3, moved: 3 }));
    expect(box.textContent).toContain('Put the backup of 3 messages back into');
    expect(screen.queryByTestId('redrive-putback-unknown')).toBeNull();
  });

  it('a finished re-inject shows what it could not restore (an older backup without the stream field order)', async () => {
    const box = await openPutBack(entry('completed', { examined: 3, moved: 3 }));
    const note = '/tmp/backups/redrive-orders.dlq.jsonl was written by an older Queuescope (or by hand: its header has no "written" record) that did not record the field order of stream entries, so the original order of 2 of its 3 entries cannot be restored';
    act(() => {
      useStore.setState((st) => ({
        redriveHistory: { ...st.redriveHistory, reinject: { entryId: 'a1', operation: operationSnapshot({ type: 'reinject', total: 3, processed: 3, moved: 3, result: { read: 3, published: 3, failed: 0, notes: [note] } }), error: null } },
      }));
    });
    expect(box.textContent).toContain('completed: 3 of 3 published');
    expect(screen.getByTestId('redrive-putback-note').textContent).toBe(note);
  });
});
