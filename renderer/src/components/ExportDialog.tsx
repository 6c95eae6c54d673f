import { useId, useState } from 'react';
import { suggestedSnapshotName } from '../../../shared/api/contract';
import type { ErrorInfo } from '../../../shared/domain/errors';
import type { QueueSummary } from '../../../shared/domain/queue';
import { errorInfoOf } from '../api';
import { count } from '../lib/format';
import { useStore } from '../store';
import { ErrorState } from './common';
import { withTrailingSeparator } from './OpenSnapshotDialog';
import { useDialogClose } from '../lib/hooks';

/**
 * Export to a JSONL snapshot: the ticked messages or the whole queue/state. For queues whose
 * peek changes them, the side effects are listed and must be accepted (the export reads every message).
 */
export function ExportDialog({ summary, connectionId, state, selectedIds, onClose }: { summary: QueueSummary; connectionId: string; state: string | undefined; selectedIds: string[]; onClose: () => void }) {
  const titleId = useId();
  const pathId = useId();
  const pathHintId = useId();
  const startExport = useStore((s) => s.startExport);
  const pathInput = useStore((s) => s.appInfo?.pathInput === true);
  const exportDir = useStore((s) => s.appInfo?.defaultExportDir ?? null);
  const [path, setPath] = useState(() => (exportDir === null ? '' : withTrailingSeparator(exportDir)) + suggestedSnapshotName(summary.name, state));
  const [scope, setScope] = useState<'selection' | 'all'>(selectedIds.length > 0 ? 'selection' : 'all');
  const [accepted, setAccepted] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ErrorInfo | null>(null);
  const caps = summary.capabilities;
  const hasSideEffects = caps.peekSideEffects.length > 0;
  const needsAccept = hasSideEffects && caps.peekMayDeadLetter !== false;
  const total = state !== undefined ? summary.counts[state] : summary.depth;

  useDialogClose(onClose);

  const onExport = async (): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      await startExport({
        connectionId,
        queueId: summary.id,
        ...(state !== undefined ? { state } : {}),
        ...(scope === 'selection' ? { messageIds: selectedIds } : {}),
        ...(hasSideEffects ? { acceptSideEffects: true } : {}),
        ...(pathInput ? { path: path.trim() } : {}),
      });
      onClose();
    } catch (e) {
      setError(errorInfoOf(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="modal-backdrop">
      <div className="modal" role="dialog" aria-modal="true" aria-labelledby={titleId}>
        <h2 id={titleId}>Export to a snapshot</h2>
        <p className="muted">Writes one JSON line per message (body, headers, properties, metadata) to a .jsonl file you choose. Snapshots open read-only in Queuescope and the CLI.</p>
        {pathInput && (
          <div className="field">
            <label htmlFor={pathId}>Save to</label>
            <input id={pathId} type="text" className="mono" value={path} spellCheck={false} aria-describedby={pathHintId} onChange={(e) => setPath(e.target.value)} />
            <div className="field-hint" id={pathHintId}>
              A path on the machine running Queuescope; the folder must exist. An existing file is never overwritten: a -1, -2… suffix is added. The written path is shown when the export finishes.
            </div>
          </div>
        )}
        <fieldset className="radio-group">
          <legend>Messages</legend>
          <label className="radio">
            <input type="radio" name="export-scope" checked={scope === 'selection'} disabled={selectedIds.length === 0} onChange={() => setScope('selection')} /> Selected messages ({count(selectedIds.length)})
          </label>
          <label className="radio">
            <input type="radio" name="export-scope" checked={scope === 'all'} onChange={() => setScope('all')} />{' '}
            {state === undefined || state === 'all' ? 'All messages in the queue' : `All messages in state “${state}”`}
            {total != null ? ` (${count(total)})` : ''}
          </label>
        </fieldset>
        {hasSideEffects && (
          <div className="notice notice-warn">
            <strong>Reading this queue changes it.</strong>
            <ul className="side-effects">
              {caps.peekSideEffects.map((s, i) => (
                <li key={i}>{s.description}</li>
              ))}
            </ul>
            {needsAccept && (
              <label className="check check-danger">
                <input type="checkbox" checked={accepted} onChange={(e) => setAccepted(e.target.checked)} /> I understand the export can move messages to the dead-letter queue.
              </label>
            )}
          </div>
        )}
        {error !== null && <ErrorState error={error} compact />}
        <div className="modal-actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="btn btn-primary" disabled={busy || (needsAccept && !accepted) || (pathInput && path.trim() === '')} onClick={() => void onExport()}>
            {busy ? 'Starting…' : pathInput ? 'Export' : 'Export…'}
          </button>
        </div>
      </div>
    </div>
  );
}
