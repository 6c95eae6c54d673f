// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { act, cleanup, fireEvent, render, screen, within } from '@testing-library/react';
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
      `2 messages were not published. They are in the remainder file ${rest}, in order: publish only them with Put back… on this run's re-inject entry in the history, or with queuescope reinject <connection> <queue> --from ${rest}. Putting this backup back again publishes the others a second time.`,
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

  // A re-inject that left messages unpublished wrote a remainder file; the app named it but could put
  // back only a redrive's backup, so the rest could be published only with the CLI.
  describe('the remainder file of a re-inject', () => {
    const backup = '/tmp/backups/redrive-orders.dlq.jsonl';
    const rest = '/tmp/backups/redrive-orders.dlq.remainder-2026-12-03T10-00-00-000Z.jsonl';
    const reinjectEntry = (id: string, over: Partial<AuditEntryView> = {}): AuditEntryView => ({
      version: 1, id, time: Date.UTC(2026, 11, 3, 10, 0, 0), actor: 'app', action: 'reinject', connection: 'c1', source: backup, target: 'orders.work', filter: null, status: 'failed',
      counts: { read: 5, published: 2, failed: 3 }, operationId: 'op-1', backupPath: backup,
      details: { targetQueueId: 'list:orders.work', remainder: { path: rest, messages: 3 }, notes: ['the 3 messages not published — 3 failed — are in the remainder file …'] }, ...over,
    });
    const bigQueues = [summary({ id: 'list:orders.dlq', name: 'orders.dlq' }), summary({ id: 'list:orders.work', name: 'orders.work' })];
    async function showHistory(entries: AuditEntryView[]): Promise<void> {
      api = installFakeApi({
        'redrive.history': () => ({ entries, total: entries.length, skippedLines: 0, nextBefore: null, path: '/tmp/audit-log.jsonl' }),
        'redrive.reinject': () => operationSnapshot({ type: 'reinject', status: 'completed' }),
        'queues.list': () => [],
      });
      render(<RedriveHistory connectionId="c1" queues={bigQueues} />);
      await screen.findAllByTestId('audit-entry');
    }

    it('Put back… is offered on a re-inject with a remainder (not on one without): it names the file, its count and the run, targets that run\'s queue and re-injects the entry\'s remainder', async () => {
      const without = reinjectEntry('r0', { counts: { read: 4, published: 4 }, details: { targetQueueId: 'list:orders.work' } });
      await showHistory([reinjectEntry('r1'), without]);
      const rows = screen.getAllByTestId('audit-entry');
      expect(within(rows[1]!).queryByRole('button', { name: 'Put back…' })).toBeNull();
      expect(within(rows[1]!).queryByTestId('audit-remainder')).toBeNull();
      expect(within(rows[0]!).getByTestId('audit-remainder').textContent).toBe(`remainder (3 not published): ${rest}`);
      fireEvent.click(within(rows[0]!).getByRole('button', { name: 'Put back…' }));
      const box = screen.getByTestId('redrive-putback');
      expect(screen.getByTestId('redrive-putback-remainder-of').textContent).toMatch(
        new RegExp(`^The remainder file ${rest.replace(/\./g, '\\.')} holds the 3 messages that the re-inject of ${backup.replace(/\./g, '\\.')} into orders\\.work \\(.+, by app, failed: read 5, published 2, failed 3\\) did not publish`),
      );
      expect(box.textContent).toContain('Put the remainder of 3 messages back into');
      // Nothing of a redrive's backup: no "not moved" or "count unknown" warnings.
      expect(screen.queryByTestId('redrive-putback-unknown')).toBeNull();
      expect(screen.queryByTestId('redrive-putback-not-moved-unrecorded')).toBeNull();
      expect(screen.getByTestId('redrive-putback-run-notes').textContent).toContain('the 3 messages not published');
      expect(screen.getByRole<HTMLSelectElement>('combobox', { name: 'Re-inject into queue' }).value).toBe('list:orders.work');
      fireEvent.click(screen.getByRole('button', { name: 'Re-inject' }));
      await screen.findByTestId('redrive-putback-status');
      expect(api.calls.find((c) => c.method === 'redrive.reinject')?.input).toEqual({ connectionId: 'c1', queueId: 'list:orders.work', auditEntryId: 'r1', file: 'remainder' });
    });

    it('a remainder already put back says when, by whom and how many were published; a further remainder is named as this remainder\'s', async () => {
      const later = reinjectEntry('r2', { time: Date.UTC(2026, 11, 3, 10, 5, 0), actor: 'cli', source: rest, backupPath: rest, status: 'completed', counts: { read: 3, published: 3 }, details: { targetQueueId: 'list:orders.work' } });
      await showHistory([later, reinjectEntry('r1')]);
      expect(within(screen.getAllByTestId('audit-entry')[0]!).queryByRole('button', { name: 'Put back…' })).toBeNull();
      fireEvent.click(within(screen.getAllByTestId('audit-entry')[1]!).getByRole('button', { name: 'Put back…' }));
      expect(screen.getByTestId('redrive-putback-remainder-used').textContent).toMatch(/^This remainder was put back already: .+ by cli, 3 published into orders\.work \(completed\)\. Putting it back again publishes those a second time/);
      const further = `${rest}.remainder-2.jsonl`;
      act(() => {
        useStore.setState((st) => ({
          redriveHistory: { ...st.redriveHistory, reinject: { entryId: 'r1', operation: operationSnapshot({ type: 'reinject', status: 'completed', total: 3, processed: 3, moved: 2, failed: 1, result: { read: 3, published: 2, failed: 1, remainder: { path: further, messages: 1 }, notes: [] } }), error: null } },
        }));
      });
      expect(screen.getByTestId('redrive-putback').textContent).toContain('completed: 2 of 3 published, 1 failed');
      expect(screen.getByTestId('redrive-putback-remainder').textContent).toBe(
        `1 message was not published. It is in the remainder file ${further}, in order: publish only it with Put back… on this run's re-inject entry in the history, or with queuescope reinject <connection> <queue> --from ${further}. Putting this remainder back again publishes the others a second time.`,
      );
    });
  });

  it('a run that reported failures without recording which (a native move that ended partly): says the whole backup goes back and how many may be duplicates', async () => {
    await openPutBack({ ...entry('completed', { examined: 5, moved: 3, failed: 2 }), details: { mode: 'native' } });
    expect(screen.getByTestId('redrive-putback-not-moved-unrecorded').textContent).toMatch(/reported 2 messages not moved but did not record which.*the whole backup is put back, so up to 2/);
    expect(screen.queryByTestId('redrive-putback-not-moved')).toBeNull();
  });
});
