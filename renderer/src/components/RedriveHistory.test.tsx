// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import type { AuditEntryView, AuditLogPageView } from '../../../shared/api/redrive';
import { useStore } from '../store';
import { operationSnapshot, summary } from '../test/fixtures';
import { installFakeApi, removeFakeApi, type FakeApi } from '../test/fake-api';
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

let api: FakeApi;
async function openPutBack(e: AuditEntryView): Promise<HTMLElement> {
  api = installFakeApi({ 'redrive.history': () => page(e), 'redrive.reinject': () => operationSnapshot({ type: 'reinject', status: 'completed' }), 'queues.list': () => [] });
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

  // A re-inject that left messages unpublished wrote them to a remainder file: Put back… names it
  // (with the command that publishes only them), also when the run was cancelled (its result then
  // comes with the last error).
  it('a re-inject that left messages unpublished names its remainder file, completed or cancelled', async () => {
    const box = await openPutBack(entry('completed', { examined: 5, moved: 5 }));
    const rest = '/tmp/backups/redrive-orders.dlq.remainder-2026-12-03T10-00-00-000Z.jsonl';
    const note = `the 2 messages not published — 2 failed — are in the remainder file ${rest}, in their order in /tmp/backups/redrive-orders.dlq.jsonl: re-inject that file`;
    act(() => {
      useStore.setState((st) => ({
        redriveHistory: { ...st.redriveHistory, reinject: { entryId: 'a1', operation: operationSnapshot({ type: 'reinject', total: 5, processed: 5, moved: 3, failed: 2, result: { read: 5, published: 3, failed: 2, remainder: { path: rest, messages: 2 }, notes: [note] } }), error: null } },
      }));
    });
    expect(box.textContent).toContain('completed: 3 of 5 published, 2 failed');
    expect(screen.getByTestId('redrive-putback-remainder').textContent).toBe(
      `2 messages were not published. They are in the remainder file ${rest}, in order: publish only them with queuescope reinject <connection> <queue> --from ${rest}. Putting this backup back again publishes the others a second time.`,
    );
    expect(screen.getByTestId('redrive-putback-note').textContent).toBe(note);
    act(() => {
      useStore.setState((st) => ({
        redriveHistory: {
          ...st.redriveHistory,
          reinject: { entryId: 'a1', operation: operationSnapshot({ type: 'reinject', status: 'cancelled', total: 5, processed: 1, moved: 1, result: null, errors: [{ code: 'CANCELLED', message: 'Cancelled after 1 of 1 published.', details: { result: { read: 1, published: 1, failed: 0, remainder: { path: rest, messages: 4 }, notes: [] } } }] }), error: null },
        },
      }));
    });
    expect(screen.getByTestId('redrive-putback-remainder').textContent).toContain(`4 messages were not published. They are in the remainder file ${rest}`);
  });

  // A Redis list redrive while another client popped the DLQ: the backup also holds entries that client
  // took (and one whose move failed). Put back… published them all — duplicates of what the other client has.
  it('a run that backed up messages it did not move: names them, leaves them out, and publishes them only when ticked', async () => {
    const e = {
      ...entry('completed', { examined: 5, moved: 3, failed: 2 }),
      details: { notMoved: { count: 2, stayed: 1, taken: 1, unknown: 0, ranges: [[1, 1, 'taken'], [4, 4, 'stayed']], complete: true, sample: [{ n: 1, id: '#0~c60eb7b8', why: 'taken' }, { n: 4, id: '#3~0badf00d', why: 'stayed' }] } },
    };
    const box = await openPutBack(e);
    const warn = screen.getByTestId('redrive-putback-not-moved').textContent;
    expect(warn).toMatch(/^2 messages in this backup were not moved by this redrive: 1 taken by another client \(.*not in the DLQ, that client has it\), 1 stayed in the DLQ .*They are left out/);
    expect(warn).toContain('Not moved: #0~c60eb7b8, #3~0badf00d');
    expect(box.textContent).toContain('Put the backup of 3 messages back into');
    fireEvent.click(screen.getByRole('button', { name: 'Re-inject' }));
    await screen.findByTestId('redrive-putback-status');
    expect(api.calls.find((c) => c.method === 'redrive.reinject')?.input).toEqual({ connectionId: 'c1', queueId: 'list:orders.dlq', auditEntryId: 'a1' });
    fireEvent.click(screen.getByRole('checkbox', { name: /Also publish the messages it did not move \(2\)/ }));
    expect(box.textContent).toContain('Put the backup of 5 messages back into');
    expect(screen.getByTestId('redrive-putback-not-moved').textContent).toContain('They are published too: duplicates');
    fireEvent.click(screen.getByRole('button', { name: 'Re-inject' }));
    await act(async () => {
      await Promise.resolve();
    });
    expect(api.calls.filter((c) => c.method === 'redrive.reinject').at(-1)?.input).toEqual({ connectionId: 'c1', queueId: 'list:orders.dlq', auditEntryId: 'a1', includeNotMoved: true });
  });

  it('a run that reported failures without recording which (a native move that ended partly): says the whole backup goes back and how many may be duplicates', async () => {
    await openPutBack({ ...entry('completed', { examined: 5, moved: 3, failed: 2 }), details: { mode: 'native' } });
    expect(screen.getByTestId('redrive-putback-not-moved-unrecorded').textContent).toMatch(/reported 2 messages not moved but did not record which.*the whole backup is put back, so up to 2/);
    expect(screen.queryByTestId('redrive-putback-not-moved')).toBeNull();
  });
});
