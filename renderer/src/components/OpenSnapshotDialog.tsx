import { useId, useState } from 'react';
import type { ErrorInfo } from '../../../shared/domain/errors';
import { errorInfoOf } from '../api';
import { useStore } from '../store';
import { ErrorState } from './common';
import { useDialogClose } from '../lib/hooks';

/**
 * File › Open snapshot where the runtime has no native file dialog (the browser bridge): a text
 * field for the path of a .jsonl snapshot on the machine running Queuescope. Errors (no such
 * file, not a snapshot) are shown in the dialog, which stays open so the path can be corrected.
 */
export function OpenSnapshotDialog() {
  const titleId = useId();
  const fieldId = useId();
  const hintId = useId();
  const exportDir = useStore((s) => s.appInfo?.defaultExportDir ?? null);
  const close = useStore((s) => s.closeSnapshotPrompt);
  const openSnapshotPath = useStore((s) => s.openSnapshotPath);
  const [path, setPath] = useState(exportDir === null ? '' : withTrailingSeparator(exportDir));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ErrorInfo | null>(null);

  useDialogClose(close);

  const onOpen = async (): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      await openSnapshotPath(path.trim());
    } catch (e) {
      setError(errorInfoOf(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="modal-backdrop">
      <form
        className="modal"
        role="dialog"
        aria-modal="true"
        aria-labelledby={titleId}
        onSubmit={(e) => {
          e.preventDefault();
          if (path.trim() !== '' && !busy) void onOpen();
        }}
      >
        <h2 id={titleId}>Open snapshot</h2>
        <p className="muted">Opens a .jsonl snapshot read-only. Queuescope is running in your browser, so there is no file picker: type the path of the file on the machine running Queuescope.</p>
        <div className="field">
          <label htmlFor={fieldId}>Snapshot file</label>
          <input id={fieldId} type="text" className="mono" value={path} autoFocus spellCheck={false} aria-describedby={hintId} onChange={(e) => setPath(e.target.value)} />
          <div className="field-hint" id={hintId}>
            {exportDir === null ? 'An absolute path, or relative to the folder Queuescope was started in.' : `Exports go to ${exportDir} by default; relative paths are looked up there.`}
          </div>
        </div>
        {error !== null && <ErrorState error={error} compact />}
        <div className="modal-actions">
          <button type="button" className="btn" onClick={close}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={busy || path.trim() === ''}>
            {busy ? 'Opening…' : 'Open'}
          </button>
        </div>
      </form>
    </div>
  );
}

/** `dir` ending in its path separator (`/`, or `\` for Windows-style paths). */
export function withTrailingSeparator(dir: string): string {
  const sep = dir.includes('\\') && !dir.includes('/') ? '\\' : '/';
  return dir.endsWith(sep) ? dir : dir + sep;
}
