import { useId, useState } from 'react';
import { inspectQueueConfigSchema, inspectSettingsFor, type InspectQueueConfig, type ProjectConfig } from '../../../shared/config/project-config';
import type { QueueSummary } from '../../../shared/domain/queue';
import { errorInfoOf } from '../api';
import { useStore } from '../store';
import './inspect.css';

type KeyRuleDraft = { kind: 'header' | 'jsonPath' | 'template'; value: string };

const KIND_HELP: Record<KeyRuleDraft['kind'], string> = {
  header: 'header / attribute name, e.g. X-Request-Key',
  jsonPath: 'path, e.g. body.order.id or properties.correlationId',
  template: 'template, e.g. {body.orderId}:{body.operation}',
};

function toDraft(entry: InspectQueueConfig | null): KeyRuleDraft[] {
  return (entry?.keyRules ?? []).map((r) => (r.kind === 'header' ? { kind: 'header', value: r.name } : r.kind === 'jsonPath' ? { kind: 'jsonPath', value: r.path } : { kind: 'template', value: r.template }));
}

/**
 * Edits the inspect rules that apply to one queue, saved with the connection (`inspect.rules.set`):
 * the queue pattern, idempotency-key rules tried before the built-in ones (header, JSON path,
 * template), body fields that are intentional snapshots, "the whole queue is a snapshot", a size
 * limit and a note. Validated with the project file's schema before saving; entries for other
 * queues are kept as they are.
 */
export function InspectRuleEditor({ connectionId, queue, onClose }: { connectionId: string; queue: QueueSummary; onClose: () => void }) {
  const entry = useStore((s) => s.inspectRules[connectionId]);
  const save = useStore((s) => s.saveInspectRules);
  const settings: ProjectConfig['inspect'] = entry?.state?.settings ?? { queues: [] };
  const existing = inspectSettingsFor({ inspect: settings } as ProjectConfig, queue);
  const [match, setMatch] = useState(existing?.match ?? queue.name);
  const [rules, setRules] = useState<KeyRuleDraft[]>(toDraft(existing));
  const [snapshotFields, setSnapshotFields] = useState((existing?.snapshotFields ?? []).join('\n'));
  const [queueIsSnapshot, setQueueIsSnapshot] = useState(existing?.queueIsSnapshot ?? false);
  const [maxBytes, setMaxBytes] = useState(existing?.maxMessageBytes !== undefined ? String(existing.maxMessageBytes) : '');
  const [note, setNote] = useState(existing?.note ?? '');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const titleId = useId();

  const onSave = async (): Promise<void> => {
    setError(null);
    const candidate = {
      match,
      keyRules: rules.filter((r) => r.value.trim() !== '').map((r) => (r.kind === 'header' ? { kind: 'header', name: r.value } : r.kind === 'jsonPath' ? { kind: 'jsonPath', path: r.value } : { kind: 'template', template: r.value })),
      snapshotFields: snapshotFields.split(/[\n,]/).map((s) => s.trim()).filter((s) => s !== ''),
      queueIsSnapshot,
      ...(maxBytes.trim() !== '' ? { maxMessageBytes: Number(maxBytes) } : {}),
      ...(note.trim() !== '' ? { note: note.trim() } : {}),
    };
    const parsed = inspectQueueConfigSchema.safeParse(candidate);
    if (!parsed.success) {
      setError(parsed.error.issues.map((i) => `${i.path.join('.') || 'rule'}: ${i.message}`).join('; '));
      return;
    }
    const others = settings.queues.filter((q) => q !== existing);
    const at = existing === null ? 0 : settings.queues.indexOf(existing);
    const queues = [...others.slice(0, at), parsed.data, ...others.slice(at)];
    setBusy(true);
    try {
      await save(connectionId, { queues });
      onClose();
    } catch (e) {
      setError(errorInfoOf(e).message);
    } finally {
      setBusy(false);
    }
  };

  const onRemove = async (): Promise<void> => {
    if (existing === null) return onClose();
    setBusy(true);
    try {
      await save(connectionId, { queues: settings.queues.filter((q) => q !== existing) });
      onClose();
    } catch (e) {
      setError(errorInfoOf(e).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="modal-backdrop">
      <div className="modal rule-editor" role="dialog" aria-modal="true" aria-labelledby={titleId} data-testid="rule-editor">
        <h2 id={titleId}>Inspect rules for {queue.name}</h2>
        <p className="muted">
          {entry?.state?.persisted === false ? entry.state.note : 'Saved with this connection. The CLI reads the same settings from queuescope.config.json (section "inspect").'}
        </p>
        <div className="field">
          <label>
            Queues (pattern, <code>*</code> = any characters){' '}
            <input type="text" className="mono" value={match} onChange={(e) => setMatch(e.target.value)} aria-label="Queue pattern" />
          </label>
        </div>
        <fieldset>
          <legend>Idempotency-key rules (tried first, in order; then the built-in ones)</legend>
          {rules.map((r, i) => (
            <div className="rule-row" key={i}>
              <select value={r.kind} aria-label={`Rule ${String(i + 1)} kind`} onChange={(e) => setRules(rules.map((x, j) => (j === i ? { ...x, kind: e.target.value as KeyRuleDraft['kind'] } : x)))}>
                <option value="header">header</option>
                <option value="jsonPath">JSON path</option>
                <option value="template">template</option>
              </select>
              <input type="text" value={r.value} placeholder={KIND_HELP[r.kind]} aria-label={`Rule ${String(i + 1)}`} onChange={(e) => setRules(rules.map((x, j) => (j === i ? { ...x, value: e.target.value } : x)))} />
              <button type="button" className="btn btn-small" aria-label={`Remove rule ${String(i + 1)}`} onClick={() => setRules(rules.filter((_, j) => j !== i))}>
                ×
              </button>
            </div>
          ))}
          <button type="button" className="btn btn-small" onClick={() => setRules([...rules, { kind: 'template', value: '' }])}>
            Add key rule
          </button>
        </fieldset>
        <div className="field">
          <label>
            Intentional snapshot fields (one per line, e.g. <code>order.*</code>, <code>items[*].price</code>)
            <textarea rows={3} className="mono" value={snapshotFields} onChange={(e) => setSnapshotFields(e.target.value)} aria-label="Snapshot fields" />
          </label>
        </div>
        <label className="check">
          <input type="checkbox" checked={queueIsSnapshot} onChange={(e) => setQueueIsSnapshot(e.target.checked)} /> The whole queue carries intentional point-in-time snapshots (e.g. an event log)
        </label>
        <div className="field">
          <label>
            Message size limit in bytes (blank = the broker's)
            <input type="text" inputMode="numeric" value={maxBytes} onChange={(e) => setMaxBytes(e.target.value)} aria-label="Size limit" />
          </label>
        </div>
        <div className="field">
          <label>
            Note (why)
            <input type="text" value={note} onChange={(e) => setNote(e.target.value)} aria-label="Note" />
          </label>
        </div>
        {error !== null && (
          <div className="rule-error" role="alert">
            {error}
          </div>
        )}
        <div className="modal-actions">
          {existing !== null && (
            <button type="button" className="btn" onClick={() => void onRemove()} disabled={busy}>
              Remove these rules
            </button>
          )}
          <span className="spacer" />
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="btn btn-primary" onClick={() => void onSave()} disabled={busy} data-testid="save-inspect-rules">
            Save
          </button>
        </div>
      </div>
    </div>
  );
}
