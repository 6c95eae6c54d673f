import { useId } from 'react';
import { useStore } from '../store';
import { ErrorState, Loading } from './common';

/** Human labels of the settings a fix preview reports (RabbitMQ policy fields, SQS queue attributes). */
const FIX_SETTING_LABELS: Record<string, string> = {
  policy: 'Policy',
  effectivePolicyDefinition: 'Effective policy',
  policyPattern: 'Policy pattern',
  policyPriority: 'Policy priority',
  RedrivePolicy: 'Redrive policy',
  RedriveAllowPolicy: 'Redrive allow policy',
  deadLetterTargetArn: 'Dead-letter queue ARN',
  maxReceiveCount: 'Max receive count',
};

/** The label of a setting: a known one, else the key split into words (`deadLetterQueue` → "Dead letter queue"). */
function settingLabel(key: string): string {
  const known = FIX_SETTING_LABELS[key];
  if (known !== undefined) return known;
  const words = key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/[_-]+/g, ' ').trim().toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A value as shown in the diff: "none" for null/absent/`{}`, strings as is, objects as indented JSON. */
function show(v: unknown): string {
  if (v === undefined || v === null || (typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0)) return 'none';
  return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
}

/** Rows of a before/after diff: every key of either side, marked when it changes. */
function diffRows(before: Record<string, unknown>, after: Record<string, unknown>): { key: string; before: string; after: string; changed: boolean }[] {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  return keys.map((key) => {
    const b = show(before[key]);
    const a = show(after[key]);
    return { key, before: b, after: a, changed: b !== a };
  });
}

/** Confirmation of a one-click fix: what changes (before/after, read fresh from the broker), then apply; logged to the audit log. */
export function AuditFixDialog() {
  const d = useStore((s) => s.fixDialog);
  const applyFix = useStore((s) => s.applyFix);
  const closeFix = useStore((s) => s.closeFix);
  const titleId = useId();
  if (!d) return null;
  const shown = d.result ?? d.preview;
  return (
    <div className="modal-backdrop">
      <div className="modal audit-fix-dialog" role="dialog" aria-modal="true" aria-labelledby={titleId} data-testid="audit-fix-dialog">
        <h2 id={titleId}>{d.status === 'applied' ? 'Fix applied' : 'Apply this fix?'}</h2>
        {d.status === 'previewing' && <Loading label="Reading the current settings…" />}
        {shown && (
          <>
            <p>{shown.summary}</p>
            <table className="audit-diff" data-testid="audit-diff">
              <thead>
                <tr>
                  <th>Setting</th>
                  <th>Before</th>
                  <th>{d.status === 'applied' ? 'Now (read back)' : 'After'}</th>
                </tr>
              </thead>
              <tbody>
                {diffRows(shown.before, shown.after).map((r) => (
                  <tr key={r.key} className={r.changed ? 'audit-diff-changed' : undefined}>
                    <th scope="row" title={r.key}>
                      {settingLabel(r.key)}
                    </th>
                    <td>
                      <pre className="audit-diff-before">{r.before}</pre>
                    </td>
                    <td>
                      <pre className="audit-diff-after">{r.after}</pre>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {shown.notes.length > 0 && (
              <ul className="audit-fix-notes">
                {shown.notes.map((n) => (
                  <li key={n}>{n}</li>
                ))}
              </ul>
            )}
            {d.status !== 'applied' && <p className="muted">The change is recorded in the audit log.</p>}
          </>
        )}
        {d.status === 'error' && d.error && <ErrorState error={d.error} compact />}
        <div className="modal-actions">
          <button type="button" className="btn" onClick={closeFix}>
            {d.status === 'applied' ? 'Close' : 'Cancel'}
          </button>
          {d.status !== 'applied' && (
            <button type="button" className="btn btn-primary" disabled={d.status !== 'ready'} onClick={() => void applyFix()}>
              {d.status === 'applying' ? 'Applying…' : 'Apply fix'}
            </button>
          )}
        </div>
      </div>
    </div>
  );
}
