import { useEffect, useMemo } from 'react';
import type { AuditFinding, AuditSeverity } from '../../../shared/audit/types';
import { useStore } from '../store';
import { AuditFixDialog } from './AuditFixDialog';
import { Empty, ErrorState, Loading, Time } from './common';
import './AuditPage.css';

const SEVERITY_LABEL: Record<AuditSeverity, string> = { error: 'Error', warning: 'Warning', info: 'Info' };
const RANK: Record<AuditSeverity, number> = { error: 0, warning: 1, info: 2 };

/** Findings grouped by queue (server-level ones first), each group sorted by severity; suppressed last. */
function groupByQueue(findings: AuditFinding[]): { target: string; server: boolean; findings: AuditFinding[] }[] {
  const groups = new Map<string, { target: string; server: boolean; findings: AuditFinding[] }>();
  for (const f of findings) {
    const key = `${f.queueId === null ? '0' : '1'}${f.target}`;
    const g = groups.get(key) ?? { target: f.target, server: f.queueId === null, findings: [] };
    g.findings.push(f);
    groups.set(key, g);
  }
  const worst = (g: { findings: AuditFinding[] }): number => Math.min(...g.findings.map((f) => (f.suppressed ? 3 : RANK[f.severity])));
  return [...groups.values()]
    .map((g) => ({ ...g, findings: [...g.findings].sort((a, b) => Number(a.suppressed !== null) - Number(b.suppressed !== null) || RANK[a.severity] - RANK[b.severity]) }))
    .sort((a, b) => Number(b.server) - Number(a.server) || worst(a) - worst(b) || a.target.localeCompare(b.target));
}

function FindingCard({ f, connectionId }: { f: AuditFinding; connectionId: string }) {
  const openFix = useStore((s) => s.openFix);
  const auto = f.autoFix;
  return (
    <li className={`audit-finding audit-${f.severity}${f.suppressed ? ' audit-suppressed' : ''}`} data-testid="audit-finding" data-rule={f.ruleId} data-target={f.target}>
      <div className="audit-finding-head">
        <span className={`audit-sev audit-sev-${f.severity}`}>{SEVERITY_LABEL[f.severity]}</span>
        {f.suppressed && <span className="audit-sev audit-sev-suppressed">Suppressed</span>}
        <span className="audit-title">{f.title}</span>
        <code className="audit-rule">{f.ruleId}</code>
      </div>
      <p className="audit-message">{f.message}</p>
      {f.suppressed && <p className="audit-suppressed-reason">Suppressed in the project file: {f.suppressed.reason}</p>}
      <p className="audit-why">
        <strong>Why:</strong> {f.why}
      </p>
      <p className="audit-fix">
        <strong>Fix:</strong> {f.fix}{' '}
        <a href={f.docUrl} target="_blank" rel="noreferrer noopener">
          Documentation
        </a>
      </p>
      {auto && !f.suppressed && (
        <div className="audit-actions">
          <button type="button" className="btn btn-small btn-primary" onClick={() => void openFix(connectionId, auto)}>
            {auto.kind === 'sqs.set-redrive-policy' ? `Set RedrivePolicy → ${auto.deadLetterQueueName}…` : `Add DLX policy → ${auto.deadLetterQueue}…`}
          </button>
        </div>
      )}
    </li>
  );
}

/** The configuration audit of one connection: findings by queue and severity, why and fix, suppressed ones marked, one-click fixes. */
export function AuditPage({ connectionId }: { connectionId: string }) {
  const state = useStore((s) => s.audits[connectionId]);
  const runAudit = useStore((s) => s.runAudit);
  const connection = useStore((s) => s.connections.find((c) => c.id === connectionId));
  const navigate = useStore((s) => s.navigate);
  const fixDialog = useStore((s) => s.fixDialog);

  useEffect(() => {
    if (state === undefined) void runAudit(connectionId);
  }, [state, runAudit, connectionId]);

  const report = state?.report ?? null;
  const groups = useMemo(() => (report ? groupByQueue(report.findings) : []), [report]);
  const notChecked = report?.checks.filter((c) => c.status === 'not-checked') ?? [];

  return (
    <section className="screen audit-page" aria-labelledby="audit-heading">
      <header className="screen-header audit-header">
        <div className="title-block">
          <button type="button" className="btn btn-ghost btn-small" onClick={() => navigate({ screen: 'queues', connectionId })}>
            ← Queues
          </button>
          <h1 id="audit-heading">Configuration audit{connection ? ` — ${connection.name}` : ''}</h1>
          <p className="muted">Dead-lettering, retention, timeouts, persistence: what loses messages or runs them twice, checked before a release.</p>
        </div>
        <div className="toolbar">
          <button type="button" className="btn" onClick={() => void runAudit(connectionId)} disabled={state?.status === 'loading'}>
            {state?.status === 'loading' ? 'Auditing…' : 'Run again'}
          </button>
        </div>
      </header>
      {state?.status === 'error' && state.error && <ErrorState error={state.error} onRetry={() => void runAudit(connectionId)} />}
      {report === null && state?.status !== 'error' && <Loading label="Reading the broker configuration…" />}
      {report && (
        <>
          <div className="audit-summary" data-testid="audit-summary">
            <span className="audit-count audit-sev-error">{report.counts.error} errors</span>
            <span className="audit-count audit-sev-warning">{report.counts.warning} warnings</span>
            <span className="audit-count audit-sev-info">{report.counts.info} info</span>
            <span className="audit-count">{report.counts.suppressed} suppressed</span>
            <span className="audit-count">{report.counts.notChecked} not checked</span>
            <span className="audit-count">{report.counts.passed} passed</span>
            <span className="muted">
              {report.queues.length} {report.queues.length === 1 ? 'queue' : 'queues'} · <Time ms={report.generatedAt} />
              {report.configPath ? ` · ${report.configPath}` : ' · no project file'}
            </span>
          </div>
          {groups.length === 0 && <Empty title="No findings">Every rule that could be checked passed.</Empty>}
          {groups.map((g) => (
            <section key={`${g.server ? 's' : 'q'}${g.target}`} className="audit-group" data-testid="audit-group" aria-label={g.target}>
              <h2 className="audit-group-title">
                {g.server ? 'Server ' : ''}
                {g.target}
              </h2>
              <ul className="audit-findings">
                {g.findings.map((f) => (
                  <FindingCard key={`${f.ruleId}\u0000${f.target}`} f={f} connectionId={connectionId} />
                ))}
              </ul>
            </section>
          ))}
          {notChecked.length > 0 && (
            <details className="audit-notchecked">
              <summary>{notChecked.length} checks not run</summary>
              <ul>
                {notChecked.map((c) => (
                  <li key={`${c.ruleId}\u0000${c.target}`}>
                    <strong>{c.target}</strong> · <code>{c.ruleId}</code>: {c.note}
                  </li>
                ))}
              </ul>
            </details>
          )}
          {report.unusedSuppressions.length > 0 && (
            <div className="audit-unused-suppressions" role="note" data-testid="audit-unused-suppressions">
              <strong>Unused suppressions</strong> (warning: they suppressed nothing in this audit)
              <ul>
                {report.unusedSuppressions.map((u) => (
                  <li key={u.index}>
                    <code>audit.suppress[{u.index}]</code> · <code>{u.rule}</code> on “{u.queue}”: {u.why}
                  </li>
                ))}
              </ul>
            </div>
          )}
          {report.notes.map((n) => (
            <p key={n} className="muted">
              {n}
            </p>
          ))}
        </>
      )}
      {fixDialog && fixDialog.connectionId === connectionId && <AuditFixDialog />}
    </section>
  );
}
