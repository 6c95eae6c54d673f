import { useEffect, useState } from 'react';
import { TERMINAL_STATUSES } from '../../../shared/domain/operation';
import { count, duration } from '../lib/format';
import { useStore } from '../store';

/** Progress of running and finished operations (exports), with Cancel and Dismiss. */
export function OperationsDock() {
  const operations = useStore((s) => s.operations);
  const cancel = useStore((s) => s.cancelOperation);
  const dismiss = useStore((s) => s.dismissOperation);
  if (operations.length === 0) return null;
  return (
    <aside className="ops-dock" aria-label="Operations">
      {operations.map((op) => {
        const done = TERMINAL_STATUSES.includes(op.status);
        const pct = op.total !== null && op.total > 0 ? Math.min(100, (op.processed / op.total) * 100) : null;
        const path = typeof op.result?.path === 'string' ? op.result.path : null;
        const lastError = op.errors.at(-1);
        // An export that could not read every message (ExportResult.partial/reason), and how the queue moved meanwhile (notes).
        const partialReason = op.result?.partial === true ? (typeof op.result.reason === 'string' ? op.result.reason : 'not every message was exported') : null;
        const notes = Array.isArray(op.result?.notes) ? op.result.notes.filter((n): n is string => typeof n === 'string') : [];
        return (
          <div key={op.id} className={`op op-${op.status}`} data-testid="operation" data-status={op.status}>
            <div className="op-head">
              <span className="op-label" title={op.label}>
                {op.label}
              </span>
              <span className={`op-status op-status-${op.status}`}>{op.status}</span>
            </div>
            <div className="progress" role="progressbar" aria-valuemin={0} aria-valuemax={op.total ?? undefined} aria-valuenow={op.processed}>
              <div className={pct === null && !done ? 'progress-bar indeterminate' : 'progress-bar'} style={{ width: `${done && op.status === 'completed' ? 100 : (pct ?? 0)}%` }} />
            </div>
            <div className="op-meta">
              {count(op.processed)}
              {op.total !== null ? ` of ${count(op.total)}` : ''} messages
              {op.skipped > 0 && ` · ${count(op.skipped)} skipped`}
              {op.failed > 0 && <span className="danger-text"> · {count(op.failed)} failed</span>}
              {!done && op.rate !== null && ` · ${Math.round(op.rate)}/s`}
              {!done && op.etaMs !== null && ` · ${duration(op.etaMs)} left`}
            </div>
            {path !== null && (
              <div className="op-path-row">
                <span className="op-path mono" title={path} data-testid="operation-path">
                  {path}
                </span>
                <CopyButton text={path} label="Copy path" />
              </div>
            )}
            {partialReason !== null && (
              <div className="op-error danger-text" data-testid="operation-partial">
                Partial: {partialReason}
              </div>
            )}
            {notes
              .filter((n) => partialReason === null || !partialReason.includes(n))
              .map((n, i) => (
                <div key={i} className="op-meta" data-testid="operation-note">
                  {n}
                </div>
              ))}
            {lastError !== undefined && <div className="op-error danger-text">{lastError.message}</div>}
            <div className="op-actions">
              {done ? (
                <button type="button" className="btn btn-small btn-ghost" onClick={() => dismiss(op.id)}>
                  Dismiss
                </button>
              ) : (
                <button type="button" className="btn btn-small" onClick={() => void cancel(op.id)}>
                  Cancel
                </button>
              )}
            </div>
          </div>
        );
      })}
    </aside>
  );
}

/** A small button copying `text` to the clipboard; says "Copied" (or that copying failed) for a moment. */
function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  useEffect(() => {
    if (state === 'idle') return;
    const t = setTimeout(() => setState('idle'), 2000);
    return () => clearTimeout(t);
  }, [state]);
  const onCopy = async (): Promise<void> => {
    try {
      await navigator.clipboard.writeText(text);
      setState('copied');
    } catch {
      setState('failed');
    }
  };
  return (
    <button type="button" className="btn btn-small btn-ghost" aria-label={label} onClick={() => void onCopy()}>
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed: select the path' : 'Copy'}
    </button>
  );
}
