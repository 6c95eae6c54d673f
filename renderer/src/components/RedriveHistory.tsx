import { useEffect, useState } from 'react';
import type { AuditEntryView } from '../../../shared/api/redrive';
import type { OperationSnapshot, QueueSummary } from '../../../shared/domain';
import { describeNotMovedKinds, notMovedRecordOf } from '../../../shared/redrive/not-moved';
import { count, absoluteTime } from '../lib/format';
import { useStore } from '../store';
import { Empty, ErrorState, Loading } from './common';

/**
 * The audit log (`<config dir>/audit-log.jsonl`): redrives, re-injects and other changes made by
 * the app and the CLI, newest first, with paging. A redrive's backup, and the remainder file of a
 * re-inject that left messages unpublished, can be put back into a queue of this connection
 * (`redrive.reinject`; the file is named by its entry, never by path). Text only.
 */
export function RedriveHistory({ connectionId, queues }: { connectionId: string; queues: readonly QueueSummary[] }) {
  const [putBack, setPutBack] = useState<string | null>(null);
  const h = useStore((s) => s.redriveHistory);
  const load = useStore((s) => s.loadRedriveHistory);
  useEffect(() => {
    void load({ limit: 20 });
  }, [load]);
  if (h.status === 'loading' && h.page === null) return <Loading label="Reading the audit log…" />;
  if (h.status === 'error' && h.error !== null) return <ErrorState error={h.error} compact onRetry={() => void load({ limit: 20 })} />;
  const page = h.page;
  if (page === null) return null;
  return (
    <div className="redrive-history" data-testid="redrive-history">
      {page.entries.length === 0 ? (
        <Empty title="No changes recorded yet">Redrives and re-injects from the app and the CLI are listed here.</Empty>
      ) : (
        <table className="redrive-groups" aria-label="Audit log">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">By</th>
              <th scope="col">Action</th>
              <th scope="col">Status</th>
              <th scope="col">From → to</th>
              <th scope="col">Counts</th>
              <th scope="col">Backup</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {page.entries.map((e) => (
              <tr key={e.id} data-testid="audit-entry">
                <td>{absoluteTime(e.time)}</td>
                <td>{e.actor}</td>
                <td>{e.action}</td>
                <td>{e.status ?? ''}</td>
                <td className="mono" title={`${e.connection ?? ''}${e.filter !== null ? ` · ${e.filter}` : ''}`}>
                  {e.source ?? ''} → {e.target ?? ''}
                </td>
                <td>{countsText(e.counts)}</td>
                <td className="mono reason" title={e.backupPath ?? ''}>
                  {e.backupPath ?? ''}
                  {entryRemainder(e) !== null && (
                    <div data-testid="audit-remainder" title={entryRemainder(e)?.path}>
                      remainder ({count(entryRemainder(e)?.messages)} not published): {entryRemainder(e)?.path}
                    </div>
                  )}
                </td>
                <td>
                  {putBackFileOf(e) !== null && (
                    <button
                      type="button"
                      className="btn btn-small"
                      onClick={() => setPutBack(putBack === e.id ? null : e.id)}
                      aria-expanded={putBack === e.id}
                      title={putBackFileOf(e) === 'remainder' ? 'Put back the messages this re-inject did not publish (its remainder file)' : 'Put back the backup this redrive wrote'}
                    >
                      Put back…
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {putBack !== null && page.entries.some((e) => e.id === putBack) && (
        <PutBack key={putBack} entry={page.entries.find((e) => e.id === putBack) as AuditEntryView} entries={page.entries} connectionId={connectionId} queues={queues} />
      )}
      <div className="list-footer">
        <span className="muted">
          {count(page.total)} entr{page.total === 1 ? 'y' : 'ies'} in <span className="mono">{page.path}</span>
          {page.skippedLines > 0 && ` · ${count(page.skippedLines)} unreadable line${page.skippedLines === 1 ? '' : 's'} skipped`}
        </span>
        <span className="spacer" />
        {page.nextBefore !== null && (
          <button type="button" className="btn btn-small" onClick={() => void load({ limit: 20, before: page.nextBefore ?? 0 })}>
            Older
          </button>
        )}
        <button type="button" className="btn btn-small btn-ghost" onClick={() => void load({ limit: 20 })}>
          Newest
        </button>
      </div>
    </div>
  );
}

/**
 * Which file Put back… publishes for an audit entry: a redrive's backup (`backup`), a re-inject's
 * remainder file (`remainder`, `details.remainder`), or null when the entry has none to put back.
 */
function putBackFileOf(e: AuditEntryView): 'backup' | 'remainder' | null {
  if (e.action === 'redrive' && e.backupPath !== null) return 'backup';
  if (e.action === 'reinject' && entryRemainder(e) !== null) return 'remainder';
  return null;
}

/** The remainder file a re-inject's audit entry records (`details.remainder` `{ path, messages }`), or null. */
function entryRemainder(e: AuditEntryView): { path: string; messages: number } | null {
  return e.action === 'reinject' ? remainderIn(e.details.remainder) : null;
}

/**
 * Re-inject a redrive's backup — or a re-inject's remainder file — into a queue of this connection,
 * with its progress and outcome. `entries` (the page shown) tells whether a remainder was put back already.
 */
function PutBack({ entry, entries, connectionId, queues }: { entry: AuditEntryView; entries: readonly AuditEntryView[]; connectionId: string; queues: readonly QueueSummary[] }) {
  const reinject = useStore((s) => s.reinjectBackup);
  const state = useStore((s) => s.redriveHistory.reinject);
  const file = putBackFileOf(entry) ?? 'backup';
  const remainder = file === 'remainder' ? entryRemainder(entry) : null;
  // A backup goes back to the queue it came from (the redrive's source); a remainder to the queue its re-inject published to.
  const initial = (remainder !== null ? queues.find((q) => q.id === entry.details.targetQueueId || q.name === entry.target)?.id : queues.find((q) => q.name === entry.source)?.id) ?? queues[0]?.id ?? '';
  const [target, setTarget] = useState(initial);
  const mine = state !== null && state.entryId === entry.id ? state : null;
  const op = mine?.operation ?? null;
  const rest = remainderOf(op);
  // A run with no end recorded (killed, crashed, or still running) has only its "started" entry: no counts.
  const moved = remainder !== null ? remainder.messages : entry.counts.moved;
  // Messages the redrive backed up and then did not move: left out unless the user ticks the box.
  const notMoved = remainder === null ? notMovedRecordOf(entry.details) : null;
  const [includeNotMoved, setIncludeNotMoved] = useState(false);
  const unrecorded = remainder === null && notMoved === null && entry.status !== 'started' ? (entry.counts.failed ?? 0) : 0;
  const putting = moved === undefined ? undefined : moved + (includeNotMoved && notMoved !== null ? notMoved.count : 0);
  const named = notMoved === null ? '' : `${notMoved.sample.map((x) => x.id).join(', ')}${notMoved.count > notMoved.sample.length ? `, and ${count(notMoved.count - notMoved.sample.length)} more` : ''}`;
  // Re-injects of this remainder file already in the log (the page shown): putting it back again repeats what they published.
  const earlier = remainder === null ? [] : entries.filter((x) => x.action === 'reinject' && x.backupPath === remainder.path);
  const runNotes = remainder === null || !Array.isArray(entry.details.notes) ? [] : entry.details.notes.filter((n): n is string => typeof n === 'string');
  return (
    <div className="redrive-putback" data-testid="redrive-putback">
      {remainder !== null && (
        <p data-testid="redrive-putback-remainder-of">
          The remainder file <span className="mono">{remainder.path}</span> holds the {count(remainder.messages)} message{remainder.messages === 1 ? '' : 's'} that the re-inject of{' '}
          <span className="mono">{entry.source ?? '?'}</span> into <span className="mono">{entry.target ?? '?'}</span> ({absoluteTime(entry.time)}, by {entry.actor}, {entry.status ?? 'no end recorded'}:{' '}
          {countsText(entry.counts)}) did not publish, in their order in that file. Putting it back publishes only {remainder.messages === 1 ? 'it' : 'them'}: if the target refused {remainder.messages === 1 ? 'it' : 'them'}, fix that first.
        </p>
      )}
      {runNotes.length > 0 && (
        <details data-testid="redrive-putback-run-notes">
          <summary>What that re-inject reported ({count(runNotes.length)})</summary>
          {runNotes.map((n, i) => (
            <p key={i} className="muted">
              {n}
            </p>
          ))}
        </details>
      )}
      {earlier.length > 0 && (
        <p className="notice notice-warn" role="note" data-testid="redrive-putback-remainder-used">
          This remainder was put back already:{' '}
          {earlier.map((x) => `${absoluteTime(x.time)} by ${x.actor}, ${count(x.counts.published ?? 0)} published into ${x.target ?? '?'} (${x.status ?? 'no end recorded'})`).join('; ')}. Putting it
          back again publishes those a second time; what that run did not publish is in its own remainder file, on its entry.
        </p>
      )}
      {remainder === null && moved === undefined && (
        <p className="muted" data-testid="redrive-putback-unknown">
          How many messages this backup holds is not known: the run did not record its end (killed, crashed, or still running). The backup may hold messages that did reach the target
          already; putting them back makes duplicates unless the consumer deduplicates. Compare the backup with the target and the DLQ first.
        </p>
      )}
      {notMoved !== null && notMoved.count > 0 && (
        <div className="notice notice-warn" role="note" data-testid="redrive-putback-not-moved">
          <p>
            {count(notMoved.count)} message{notMoved.count === 1 ? '' : 's'} in this backup {notMoved.count === 1 ? 'was' : 'were'} not moved by this redrive: {describeNotMovedKinds(notMoved)}.{' '}
            {includeNotMoved
              ? 'They are published too: duplicates of what is still in the DLQ or what the other client took.'
              : 'They are left out; only what the redrive moved is put back.'}
            {!notMoved.complete && ' The audit log lists only some of them: the others cannot be told apart and are published.'}
          </p>
          <p className="mono reason">Not moved: {named}</p>
          <label>
            <input type="checkbox" checked={includeNotMoved} onChange={(ev) => setIncludeNotMoved(ev.target.checked)} /> Also publish the messages it did not move ({count(notMoved.count)})
          </label>
        </div>
      )}
      {unrecorded > 0 && (
        <p className="notice notice-warn" role="note" data-testid="redrive-putback-not-moved-unrecorded">
          This redrive reported {count(unrecorded)} message{unrecorded === 1 ? '' : 's'} not moved but did not record which (a native move that ended partly, or a run logged before
          Queuescope recorded them): the whole backup is put back, so up to {count(unrecorded)} of its messages may be duplicates of what is still in the DLQ. Compare the backup with the DLQ first.
        </p>
      )}
      <label>
        {putting === undefined ? `Put the ${file}` : `Put the ${file} of ${count(putting)} message${putting === 1 ? '' : 's'}`} back into{' '}
        <select value={target} onChange={(ev) => setTarget(ev.target.value)} aria-label="Re-inject into queue">
          {queues.map((q) => (
            <option key={q.id} value={q.id}>
              {q.name}
            </option>
          ))}
        </select>
      </label>{' '}
      <button type="button" className="btn btn-small btn-primary" disabled={target === '' || (op !== null && op.status === 'running')} onClick={() => void reinject({ connectionId, queueId: target, auditEntryId: entry.id, ...(file === 'remainder' ? { file } : {}), ...(includeNotMoved ? { includeNotMoved: true } : {}) })}>
        Re-inject
      </button>
      {op !== null && (
        <span className="muted" data-testid="redrive-putback-status" data-status={op.status}>
          {' '}
          {op.status}: {count(op.moved)} of {count(op.total)} published{op.failed > 0 ? `, ${count(op.failed)} failed` : ''}
        </span>
      )}
      {rest !== null && (
        <p className="notice notice-warn" role="note" data-testid="redrive-putback-remainder">
          {count(rest.messages)} message{rest.messages === 1 ? ' was' : 's were'} not published. {rest.messages === 1 ? 'It is' : 'They are'} in the remainder file <span className="mono">{rest.path}</span>, in
          order: publish only {rest.messages === 1 ? 'it' : 'them'} with Put back… on this run&apos;s re-inject entry in the history, or with{' '}
          <span className="mono">queuescope reinject &lt;connection&gt; &lt;queue&gt; --from {rest.path}</span>. Putting this {file} back again publishes the others a second time.
        </p>
      )}
      {notesOf(op).map((n, i) => (
        <p key={i} className="notice notice-warn" role="note" data-testid="redrive-putback-note">
          {n}
        </p>
      ))}
      {mine?.error != null && <ErrorState error={mine.error} compact />}
    </div>
  );
}

type OpView = Pick<OperationSnapshot, 'result' | 'errors'>;

/**
 * The `ReinjectResult` of a re-inject operation: its `result` when it completed; when it was
 * cancelled or failed, the result its last error carries (`details.result`), else null.
 */
function resultOf(op: OpView | null): Record<string, unknown> | null {
  if (op === null) return null;
  if (op.result !== null) return op.result;
  const carried = op.errors.at(-1)?.details?.result;
  return carried !== null && typeof carried === 'object' && !Array.isArray(carried) ? (carried as Record<string, unknown>) : null;
}

/** What a finished re-inject could not restore or left out (`ReinjectResult.notes`, e.g. the field order an older backup did not record, the remainder file). */
function notesOf(op: OpView | null): string[] {
  const notes = resultOf(op)?.notes;
  return Array.isArray(notes) ? notes.filter((n): n is string => typeof n === 'string') : [];
}

/** The remainder file of a re-inject (`ReinjectResult.remainder`: the messages it did not publish), or null. */
function remainderOf(op: OpView | null): { path: string; messages: number } | null {
  return remainderIn(resultOf(op)?.remainder);
}

/** A `{ path, messages }` remainder record (a result's `remainder`, an audit entry's `details.remainder`), or null. */
function remainderIn(v: unknown): { path: string; messages: number } | null {
  const r = v as { path?: unknown; messages?: unknown } | null | undefined;
  return r != null && typeof r.path === 'string' && typeof r.messages === 'number' ? { path: r.path, messages: r.messages } : null;
}

/** An entry's non-zero counts, `published 3, failed 2`. */
function countsText(counts: Record<string, number>): string {
  return Object.entries(counts)
    .filter(([, v]) => v !== 0)
    .map(([k, v]) => `${k} ${count(v)}`)
    .join(', ');
}
