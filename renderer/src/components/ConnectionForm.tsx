import { useId, useState, type ReactNode } from 'react';
import type { ConnectionTestResult } from '../../../shared/domain/diagnostics';
import type { ConnectionConfig } from '../../../shared/domain/connection';
import type { ErrorInfo } from '../../../shared/domain/errors';
import { call, errorInfoOf } from '../api';
import { EMPTY_FORM, buildConfig, derivedManagementUrl, formFromProfile, suggestName, vhostFromUrl, type ConnectionForm as Form } from '../lib/connection-form';
import { errorHint, errorTitle } from '../lib/errors';
import { useStore } from '../store';
import { ErrorState } from './common';

const KINDS: { kind: Form['kind']; label: string }[] = [
  { kind: 'redis', label: 'Redis' },
  { kind: 'rabbitmq', label: 'RabbitMQ' },
  { kind: 'sqs', label: 'Amazon SQS' },
];

/** "New connection" / "Edit connection": fields per broker kind, Test connection, Save, Delete. */
export function ConnectionForm({ editId }: { editId: string | null }) {
  const profile = useStore((s) => (editId === null ? undefined : s.connections.find((c) => c.id === editId)));
  const saveConnection = useStore((s) => s.saveConnection);
  const removeConnection = useStore((s) => s.removeConnection);
  const navigate = useStore((s) => s.navigate);

  const [form, setForm] = useState<Form>(() => (profile ? formFromProfile(profile) : structuredClone(EMPTY_FORM)));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [testing, setTesting] = useState(false);
  const [test, setTest] = useState<{ result: ConnectionTestResult } | { error: ErrorInfo } | null>(null);
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<ErrorInfo | null>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);

  if (editId !== null && profile === undefined) {
    return (
      <section className="screen">
        <ErrorState error={{ code: 'INVALID_INPUT', message: 'This connection no longer exists.' }} />
      </section>
    );
  }
  if (profile !== undefined && profile.config.kind === 'snapshot') {
    return (
      <section className="screen">
        <ErrorState error={{ code: 'UNSUPPORTED', message: 'Snapshots are read-only files; there is nothing to edit.' }} />
      </section>
    );
  }

  const update = <K extends 'redis' | 'rabbitmq' | 'sqs'>(kind: K, patch: Partial<Form[K]>): void => {
    setForm((f) => ({ ...f, [kind]: { ...f[kind], ...patch } }));
    setTest(null);
  };

  const validated = (): ConnectionConfig | null => {
    const built = buildConfig(form);
    if (!built.ok) {
      setErrors(built.errors);
      return null;
    }
    setErrors({});
    return built.config;
  };

  const onTest = async (): Promise<void> => {
    const config = validated();
    if (config === null) return;
    setTesting(true);
    setTest(null);
    try {
      // An existing connection whose secret was not re-entered is tested by id, so the stored secret is used.
      const useStored = profile !== undefined && profile.hasSecret && !hasSecretInput(form);
      const result = await call('connections.test', useStored && sameConfig(config, profile.config) ? { id: profile.id } : { config });
      setTest({ result });
    } catch (e) {
      setTest({ error: errorInfoOf(e) });
    } finally {
      setTesting(false);
    }
  };

  const onSave = async (e: { preventDefault: () => void }): Promise<void> => {
    e.preventDefault();
    const config = validated();
    if (config === null) return;
    const name = form.name.trim() === '' ? suggestName(config) : form.name.trim();
    setSaving(true);
    setSaveError(null);
    try {
      const saved = await saveConnection({ ...(editId !== null ? { id: editId } : {}), name, config });
      navigate({ screen: 'queues', connectionId: saved.id });
    } catch (err) {
      setSaveError(errorInfoOf(err));
    } finally {
      setSaving(false);
    }
  };

  const onDelete = async (): Promise<void> => {
    if (editId === null) return;
    try {
      await removeConnection(editId);
    } catch (err) {
      setSaveError(errorInfoOf(err));
    }
  };

  const storedSecret = profile?.hasSecret === true;

  return (
    <section className="screen screen-form" aria-labelledby="conn-form-title">
      <header className="screen-header">
        <h1 id="conn-form-title">{editId === null ? 'New connection' : `Edit ${profile?.name ?? 'connection'}`}</h1>
      </header>
      <form className="form" onSubmit={(e) => void onSave(e)} noValidate>
        <div className="segmented" role="tablist" aria-label="Broker">
          {KINDS.map((k) => (
            <button
              key={k.kind}
              type="button"
              role="tab"
              aria-selected={form.kind === k.kind}
              className={form.kind === k.kind ? 'seg active' : 'seg'}
              disabled={editId !== null && form.kind !== k.kind}
              onClick={() => {
                setForm((f) => ({ ...f, kind: k.kind }));
                setErrors({});
                setTest(null);
              }}
            >
              {k.label}
            </button>
          ))}
        </div>

        <Field label="Name" error={errors.name} hint="Shown in the sidebar. Defaults to the host.">
          {(id) => <input id={id} value={form.name} placeholder="e.g. Production payments" onChange={(e) => setForm({ ...form, name: e.target.value })} />}
        </Field>

        {form.kind === 'redis' && (
          <>
            <Field label="Redis URL" error={errors.url} hint="redis://host:6379/db, or rediss:// for TLS.">
              {(id) => <input id={id} className="mono" value={form.redis.url} onChange={(e) => update('redis', { url: e.target.value })} spellCheck={false} />}
            </Field>
            <div className="form-row">
              <Field label="Username" hint="ACL user (optional).">
                {(id) => <input id={id} value={form.redis.username} autoComplete="off" onChange={(e) => update('redis', { username: e.target.value })} />}
              </Field>
              <Field label="Password" hint={storedSecret ? 'Stored. Leave empty to keep it.' : undefined}>
                {(id) => (
                  <input id={id} type="password" value={form.redis.password} autoComplete="new-password" placeholder={storedSecret ? '••••••••' : ''} onChange={(e) => update('redis', { password: e.target.value })} />
                )}
              </Field>
              <Field label="Database" error={errors.db} hint="Overrides the URL's /db.">
                {(id) => <input id={id} className="narrow" inputMode="numeric" value={form.redis.db} placeholder="0" onChange={(e) => update('redis', { db: e.target.value })} />}
              </Field>
            </div>
            <TlsFields tls={form.redis.tls} verify={form.redis.tlsVerify} onChange={(p) => update('redis', p)} />
          </>
        )}

        {form.kind === 'rabbitmq' && (
          <>
            <Field label="AMQP URL" error={errors.url} hint="amqp://host:5672/vhost (/ is %2F), or amqps:// for TLS.">
              {(id) => <input id={id} className="mono" value={form.rabbitmq.url} onChange={(e) => update('rabbitmq', { url: e.target.value })} spellCheck={false} />}
            </Field>
            <Field
              label="Management API URL"
              error={errors.managementUrl}
              hint={`Used to list queues. Leave empty for the default${derivedManagementUrl(form.rabbitmq.url) ? `: ${derivedManagementUrl(form.rabbitmq.url) ?? ''}` : ''}.`}
            >
              {(id) => (
                <input
                  id={id}
                  className="mono"
                  value={form.rabbitmq.managementUrl}
                  placeholder={derivedManagementUrl(form.rabbitmq.url) ?? 'http://host:15672'}
                  onChange={(e) => update('rabbitmq', { managementUrl: e.target.value })}
                  spellCheck={false}
                />
              )}
            </Field>
            <div className="form-row">
              <Field label="Virtual host" hint="Overrides the URL's vhost.">
                {(id) => <input id={id} className="mono" value={form.rabbitmq.vhost} placeholder={vhostFromUrl(form.rabbitmq.url) ?? '/'} onChange={(e) => update('rabbitmq', { vhost: e.target.value })} />}
              </Field>
              <Field label="Username">
                {(id) => <input id={id} value={form.rabbitmq.username} autoComplete="off" onChange={(e) => update('rabbitmq', { username: e.target.value })} />}
              </Field>
              <Field label="Password" hint={storedSecret ? 'Stored. Leave empty to keep it.' : undefined}>
                {(id) => (
                  <input id={id} type="password" value={form.rabbitmq.password} autoComplete="new-password" placeholder={storedSecret ? '••••••••' : ''} onChange={(e) => update('rabbitmq', { password: e.target.value })} />
                )}
              </Field>
            </div>
            <TlsFields tls={form.rabbitmq.tls} verify={form.rabbitmq.tlsVerify} onChange={(p) => update('rabbitmq', p)} />
          </>
        )}

        {form.kind === 'sqs' && (
          <>
            <div className="form-row">
              <Field label="Region" error={errors.region}>
                {(id) => <input id={id} className="mono" value={form.sqs.region} onChange={(e) => update('sqs', { region: e.target.value })} spellCheck={false} />}
              </Field>
              <Field label="Endpoint" error={errors.endpoint} hint="Only for SQS-compatible servers, e.g. http://127.0.0.1:4566.">
                {(id) => <input id={id} className="mono" value={form.sqs.endpoint} placeholder="AWS default" onChange={(e) => update('sqs', { endpoint: e.target.value })} spellCheck={false} />}
              </Field>
            </div>
            <fieldset className="radio-group">
              <legend>Credentials</legend>
              {(
                [
                  ['chain', 'Default AWS credential chain (environment, ~/.aws, SSO, instance role)'],
                  ['profile', 'Named profile'],
                  ['keys', 'Access keys'],
                ] as const
              ).map(([value, label]) => (
                <label key={value} className="radio">
                  <input type="radio" name="sqs-auth" checked={form.sqs.auth === value} onChange={() => update('sqs', { auth: value })} /> {label}
                </label>
              ))}
            </fieldset>
            {form.sqs.auth === 'profile' && (
              <Field label="Profile" error={errors.profile}>
                {(id) => <input id={id} value={form.sqs.profile} onChange={(e) => update('sqs', { profile: e.target.value })} />}
              </Field>
            )}
            {form.sqs.auth === 'keys' && (
              <div className="form-row">
                <Field label="Access key id" error={errors.accessKeyId}>
                  {(id) => <input id={id} className="mono" value={form.sqs.accessKeyId} autoComplete="off" onChange={(e) => update('sqs', { accessKeyId: e.target.value })} spellCheck={false} />}
                </Field>
                <Field label="Secret access key" hint={storedSecret ? 'Stored. Leave empty to keep it.' : undefined}>
                  {(id) => (
                    <input id={id} type="password" value={form.sqs.secretAccessKey} autoComplete="new-password" placeholder={storedSecret ? '••••••••' : ''} onChange={(e) => update('sqs', { secretAccessKey: e.target.value })} />
                  )}
                </Field>
                <Field label="Session token" hint="Only for temporary credentials.">
                  {(id) => <input id={id} type="password" value={form.sqs.sessionToken} autoComplete="new-password" onChange={(e) => update('sqs', { sessionToken: e.target.value })} />}
                </Field>
              </div>
            )}
          </>
        )}

        {test !== null && <TestResult test={test} />}
        {saveError !== null && <ErrorState error={saveError} compact />}

        <div className="form-actions">
          <button type="button" className="btn" onClick={() => void onTest()} disabled={testing}>
            {testing ? 'Testing…' : 'Test connection'}
          </button>
          <button type="submit" className="btn btn-primary" disabled={saving}>
            {saving ? 'Saving…' : 'Save'}
          </button>
          <button type="button" className="btn btn-ghost" onClick={() => navigate(editId === null ? { screen: 'welcome' } : { screen: 'queues', connectionId: editId })}>
            Cancel
          </button>
          <span className="spacer" />
          {editId !== null &&
            (confirmDelete ? (
              <span className="confirm-inline">
                Delete this connection?{' '}
                <button type="button" className="btn btn-danger" onClick={() => void onDelete()}>
                  Delete
                </button>{' '}
                <button type="button" className="btn btn-ghost" onClick={() => setConfirmDelete(false)}>
                  Keep
                </button>
              </span>
            ) : (
              <button type="button" className="btn btn-danger-ghost" onClick={() => setConfirmDelete(true)}>
                Delete…
              </button>
            ))}
        </div>
      </form>
    </section>
  );
}

function hasSecretInput(f: Form): boolean {
  return (f.kind === 'redis' && f.redis.password !== '') || (f.kind === 'rabbitmq' && f.rabbitmq.password !== '') || (f.kind === 'sqs' && (f.sqs.secretAccessKey !== '' || f.sqs.sessionToken !== ''));
}

function sameConfig(a: ConnectionConfig, b: ConnectionConfig): boolean {
  const norm = (c: ConnectionConfig): string => JSON.stringify(Object.entries(c).sort(([x], [y]) => x.localeCompare(y)));
  return norm(a) === norm(b);
}

function Field({ label, hint, error, children }: { label: string; hint?: string | undefined; error?: string | undefined; children: (id: string) => ReactNode }) {
  const id = useId();
  return (
    <div className={error ? 'field has-error' : 'field'}>
      <label htmlFor={id}>{label}</label>
      {children(id)}
      {error ? <div className="field-error">{error}</div> : hint ? <div className="field-hint">{hint}</div> : null}
    </div>
  );
}

function TlsFields({ tls, verify, onChange }: { tls: boolean; verify: boolean; onChange: (p: { tls?: boolean; tlsVerify?: boolean }) => void }) {
  return (
    <div className="checks">
      <label className="check">
        <input type="checkbox" checked={tls} onChange={(e) => onChange({ tls: e.target.checked })} /> Use TLS
      </label>
      {tls && (
        <label className="check">
          <input type="checkbox" checked={verify} onChange={(e) => onChange({ tlsVerify: e.target.checked })} /> Verify the server certificate
          {!verify && <span className="warn-text"> — only for self-signed test brokers</span>}
        </label>
      )}
    </div>
  );
}

/** Each check of "Test connection" with its outcome, and the cause in words when it failed. */
function TestResult({ test }: { test: { result: ConnectionTestResult } | { error: ErrorInfo } }) {
  if ('error' in test) return <ErrorState error={test.error} compact />;
  const r = test.result;
  return (
    <div className={r.ok ? 'test-result ok' : 'test-result failed'} role="status" data-testid="test-result">
      <div className="test-summary">
        {r.ok ? (
          <>
            <span className="icon-ok" aria-hidden="true">✓</span> Connection works{r.server !== null ? ` — ${r.server}` : ''}
          </>
        ) : (
          <>
            <span className="icon-fail" aria-hidden="true">✗</span> {r.error !== null ? errorTitle(r.error) : 'Connection failed'}
          </>
        )}
      </div>
      {!r.ok && r.error !== null && (
        <div className="test-cause">
          {r.error.message}
          {errorHint(r.error) !== '' && <div className="error-hint">{errorHint(r.error)}</div>}
        </div>
      )}
      <ol className="checks-list">
        {r.checks.map((c, i) => (
          <li key={i} className={c.ok ? 'check-ok' : 'check-fail'}>
            <span className="check-icon" aria-label={c.ok ? 'passed' : 'failed'}>
              {c.ok ? '✓' : '✗'}
            </span>
            <span className="check-name">{c.name}</span>
            <span className="check-detail">{c.detail}</span>
            <span className="check-ms">{Math.round(c.ms)} ms</span>
          </li>
        ))}
      </ol>
    </div>
  );
}
