import { useEffect } from 'react';
import { count, absoluteTime } from '../lib/format';
import { useStore } from '../store';
import { Empty, ErrorState, Loading } from './common';

/**
 * The audit log (`<config dir>/audit-log.jsonl`): redrives, re-injects and other changes made by
 * the app and the CLI, newest first, with paging. Text only.
 */
export function RedriveHistory() {
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
                <td>
                  {Object.entries(e.counts)
                    .filter(([, v]) => v !== 0)
                    .map(([k, v]) => `${k} ${count(v)}`)
                    .join(', ')}
                </td>
                <td className="mono reason" title={e.backupPath ?? ''}>
                  {e.backupPath ?? ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
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
