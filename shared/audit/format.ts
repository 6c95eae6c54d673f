/**
 * Renders an {@link AuditReport} as text, JSON, JUnit XML, SARIF 2.1.0 or Markdown (pure).
 * Queue names and broker values are untrusted: XML output escapes them (and drops characters XML
 * 1.0 forbids), Markdown escapes table/HTML syntax, and the text formatter passes every line
 * through the caller's `escape` (the CLI's terminal escaping).
 */
import { AUDIT_RULES } from './catalog';
import type { AuditFinding, AuditReport, AuditSeverity, UnusedSuppression } from './types';

export const AUDIT_FORMATS = ['text', 'json', 'junit', 'sarif', 'markdown'] as const;
export type AuditFormat = (typeof AUDIT_FORMATS)[number];

/** Options of {@link formatAuditReport}. */
export interface FormatOptions {
  /** Findings at or above this severity are failures (JUnit `<failure>`); default `error`. */
  failOn?: 'error' | 'warning';
  /** Escapes one line of text output (default: unchanged). */
  escape?: (line: string) => string;
  /** Tool version for SARIF. */
  toolVersion?: string;
}

const RANK: Record<AuditSeverity, number> = { error: 0, warning: 1, info: 2 };

/** True when an unsuppressed finding counts as a failure under `failOn`. */
export function isFailure(f: AuditFinding, failOn: 'error' | 'warning'): boolean {
  return f.suppressed === null && RANK[f.severity] <= RANK[failOn];
}

function plural(n: number, word: string): string {
  return `${String(n)} ${word}${n === 1 ? '' : 's'}`;
}

/** One-line summary: `2 errors, 1 warning, 0 info (1 suppressed, 4 not checked) in 9 queues`. */
export function summaryLine(r: AuditReport): string {
  return `${plural(r.counts.error, 'error')}, ${plural(r.counts.warning, 'warning')}, ${String(r.counts.info)} info (${String(r.counts.suppressed)} suppressed, ${String(r.counts.notChecked)} not checked, ${String(r.counts.passed)} passed) in ${plural(r.queues.length, 'queue')}`;
}

function formatText(r: AuditReport, o: FormatOptions): string {
  const lines: string[] = [];
  lines.push(`Queuescope audit of ${r.connections.map((c) => c.label).join(', ') || '(no connection)'}`);
  if (r.configPath) lines.push(`config: ${r.configPath}`);
  if (r.measurementsPath) lines.push(`measurements: ${r.measurementsPath}`);
  lines.push(summaryLine(r), '');
  const label: Record<AuditSeverity, string> = { error: 'ERROR  ', warning: 'WARNING', info: 'INFO   ' };
  for (const f of r.findings) {
    lines.push(`${f.suppressed ? 'SUPPRESSED' : label[f.severity]}  ${f.target}  ${f.ruleId}`);
    lines.push(`    ${f.message}`);
    if (f.suppressed) lines.push(`    suppressed: ${f.suppressed.reason}`);
    lines.push(`    why: ${f.why}`, `    fix: ${f.fix}`, `    docs: ${f.docUrl}`, '');
  }
  const nc = r.checks.filter((c) => c.status === 'not-checked');
  if (nc.length > 0) {
    lines.push('Not checked:');
    for (const c of nc) lines.push(`    ${c.target}  ${c.ruleId}: ${c.note ?? 'not checked'}`);
    lines.push('');
  }
  if (r.disabledRules.length > 0) lines.push(`Rules turned off in the config: ${r.disabledRules.join(', ')}`, '');
  for (const n of r.notes) lines.push(`note: ${n}`);
  for (const u of r.unusedSuppressions) lines.push(`warning: ${unusedSuppressionText(u)}`);
  const esc = o.escape ?? ((s: string) => s);
  return `${lines.map(esc).join('\n').replace(/\n+$/, '')}\n`;
}

/** `unused suppression audit.suppress[0] (sqs.no-redrive-policy on "x"): why` — one line, for every format. */
export function unusedSuppressionText(u: UnusedSuppression): string {
  return `unused suppression audit.suppress[${String(u.index)}] (${u.rule} on "${u.queue}"): ${u.why}`;
}

// ------------------------------------------------------------------ XML

/** {@link xmlEscape} for attribute values: also keeps tabs and line breaks (as character references), which XML parsers would otherwise normalise to spaces. */
export function xmlAttr(s: string): string {
  return xmlEscape(s).replace(/[\t\n\r]/g, (c) => `&#${String(c.charCodeAt(0))};`);
}

/** {@link xmlEscape} for element text: also keeps carriage returns (as `&#13;`), which XML parsers would otherwise turn into line feeds. */
export function xmlText(s: string): string {
  return xmlEscape(s).replace(/\r/g, '&#13;');
}

/** Removes characters XML 1.0 does not allow and escapes markup. */
export function xmlEscape(s: string): string {
  return s.replace(/[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '\uFFFD').replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c] ?? c);
}

/**
 * JUnit XML valid against Jenkins' JUnit schema (dtkit junit-4.xsd, vendored in
 * test/fixtures/audit/): one `<testsuite>` per rule, one `<testcase>` per checked queue; failures
 * (at or above `failOn`, not suppressed) are `<failure>`, lower findings pass with the finding in
 * `<system-out>`, suppressed and not-checked ones are `<skipped>` with the reason as its text (the
 * schema types `<skipped>` as a plain string: no `message` attribute). Skipped counts are per
 * `<testsuite>` (the schema has no `skipped` attribute on `<testsuites>`). Unused suppressions
 * (a warning) are passing cases of a `queuescope.unused-suppressions` suite, the warning in their
 * `<system-err>`. The classname is the rule id (`rabbitmq.no-dead-letter-exchange`: package = broker).
 */
function formatJunit(r: AuditReport, o: FormatOptions): string {
  const failOn = o.failOn ?? 'error';
  const ts = new Date(r.generatedAt).toISOString().replace(/\.\d{3}Z$/, '');
  interface Case {
    name: string;
    classname: string;
    body: string;
    failed: boolean;
    skipped: boolean;
  }
  const byRule = new Map<string, Case[]>();
  const add = (rule: string, c: Case): void => {
    const l = byRule.get(rule);
    if (l) l.push(c);
    else byRule.set(rule, [c]);
  };
  for (const f of r.findings) {
    const failed = isFailure(f, failOn);
    const detail = `${f.message}\nwhy: ${f.why}\nfix: ${f.fix}\ndocs: ${f.docUrl}`;
    let body: string;
    if (f.suppressed) body = `<skipped>${xmlText(`suppressed: ${f.suppressed.reason}`)}</skipped><system-out>${xmlText(detail)}</system-out>`;
    else if (failed) body = `<failure message="${xmlAttr(f.message)}" type="${f.severity}">${xmlText(detail)}</failure>`;
    else body = `<system-out>${xmlText(`${f.severity}: ${detail}`)}</system-out>`;
    add(f.ruleId, { name: f.target, classname: f.ruleId, body, failed, skipped: f.suppressed !== null });
  }
  for (const c of r.checks) {
    add(c.ruleId, { name: c.target, classname: c.ruleId, body: c.status === 'not-checked' ? `<skipped>${xmlText(c.note ?? 'not checked')}</skipped>` : '', failed: false, skipped: c.status === 'not-checked' });
  }
  const order = AUDIT_RULES.map((x) => x.meta.id);
  const suites = [...byRule.entries()].sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0]));
  // Unused suppressions: a warning, not a failure — passing cases of their own suite, the warning in <system-err>.
  if (r.unusedSuppressions.length > 0) {
    suites.push([
      'queuescope.unused-suppressions',
      r.unusedSuppressions.map((u) => ({ name: `audit.suppress[${String(u.index)}]`, classname: 'queuescope.unused-suppression', body: `<system-err>${xmlText(`warning: ${unusedSuppressionText(u)}`)}</system-err>`, failed: false, skipped: false })),
    ]);
  }
  const total = suites.reduce((n, [, cs]) => n + cs.length, 0);
  const failures = suites.reduce((n, [, cs]) => n + cs.filter((c) => c.failed).length, 0);
  const out: string[] = ['<?xml version="1.0" encoding="UTF-8"?>'];
  out.push(`<testsuites name="queuescope audit" tests="${String(total)}" failures="${String(failures)}" errors="0" time="0">`);
  suites.forEach(([rule, cs], i) => {
    const f = cs.filter((c) => c.failed).length;
    const s = cs.filter((c) => c.skipped).length;
    out.push(`  <testsuite name="${xmlAttr(rule)}" id="${String(i)}" package="queuescope.audit" hostname="queuescope" tests="${String(cs.length)}" failures="${String(f)}" errors="0" skipped="${String(s)}" time="0" timestamp="${ts}">`);
    for (const c of cs) {
      out.push(c.body === '' ? `    <testcase name="${xmlAttr(c.name)}" classname="${xmlAttr(c.classname)}" time="0"/>` : `    <testcase name="${xmlAttr(c.name)}" classname="${xmlAttr(c.classname)}" time="0">${c.body}</testcase>`);
    }
    out.push('    <system-out/>', '    <system-err/>', '  </testsuite>');
  });
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}

// ------------------------------------------------------------------ SARIF

const SARIF_LEVEL: Record<AuditSeverity, 'error' | 'warning' | 'note'> = { error: 'error', warning: 'warning', info: 'note' };

/** SARIF 2.1.0 (https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-v2.1.0.html) as a plain object. */
export function toSarif(r: AuditReport, o: FormatOptions = {}): Record<string, unknown> {
  const rules = AUDIT_RULES.map((x) => x.meta);
  const index = new Map(rules.map((m, i) => [m.id, i]));
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: 'queuescope',
            informationUri: 'https://github.com/queuescope/queuescope',
            ...(o.toolVersion !== undefined ? { version: o.toolVersion } : {}),
            rules: rules.map((m) => ({
              id: m.id,
              name: m.id.replace(/^[a-z]+\./, '').replace(/(^|-)([a-z])/g, (_s, _d: string, c: string) => c.toUpperCase()),
              shortDescription: { text: m.title },
              fullDescription: { text: m.why },
              help: { text: `${m.fix} See ${m.docUrl}`, markdown: `${m.fix}\n\n[Documentation](${m.docUrl})` },
              helpUri: m.docUrl,
              defaultConfiguration: { level: SARIF_LEVEL[m.severity] },
              properties: { broker: m.broker, scope: m.scope },
            })),
          },
        },
        invocations: [
          {
            executionSuccessful: true,
            toolExecutionNotifications: [
              ...r.checks.filter((c) => c.status === 'not-checked').map((c) => ({ level: 'note', message: { text: `${c.ruleId} on ${c.target}: ${c.note ?? 'not checked'}` }, descriptor: { id: c.ruleId } })),
              ...r.notes.map((n) => ({ level: 'warning', message: { text: n } })),
              ...r.unusedSuppressions.map((u) => ({ level: 'warning', message: { text: unusedSuppressionText(u) }, descriptor: { id: 'queuescope.unused-suppression' } })),
            ],
          },
        ],
        results: r.findings.map((f) => ({
          ruleId: f.ruleId,
          ruleIndex: index.get(f.ruleId) ?? -1,
          level: SARIF_LEVEL[f.severity],
          message: { text: f.message },
          locations: [{ logicalLocations: [{ name: f.target, fullyQualifiedName: f.queueId ?? f.target, kind: 'resource' }] }],
          partialFingerprints: { 'queuescope/v1': `${f.ruleId}:${f.queueId ?? f.target}` },
          properties: { broker: f.broker, evidence: f.evidence },
          ...(f.suppressed ? { suppressions: [{ kind: 'external', status: 'accepted', justification: f.suppressed.reason }] } : {}),
        })),
      },
    ],
  };
}

// ------------------------------------------------------------------ Markdown

/** Escapes text for a Markdown table cell / paragraph (no HTML, no table breaks, no links). */
export function mdEscape(s: string): string {
  return s.replace(/\r?\n/g, ' ').replace(/[\\`*_{}[\]()#+!|<>~]/g, (c) => `\\${c}`);
}

function formatMarkdown(r: AuditReport): string {
  const out: string[] = [];
  out.push('# Queuescope audit', '', `${mdEscape(r.connections.map((c) => c.label).join(', '))}: **${mdEscape(summaryLine(r))}**`, '');
  const active = r.findings.filter((f) => !f.suppressed);
  if (active.length > 0) {
    out.push('| Severity | Queue | Rule | Finding |', '|---|---|---|---|');
    for (const f of active) out.push(`| ${f.severity} | ${mdEscape(f.target)} | [${f.ruleId}](${f.docUrl}) | ${mdEscape(f.message)} |`);
    out.push('');
    out.push('## How to fix', '');
    for (const id of [...new Set(active.map((f) => f.ruleId))]) {
      const f = active.find((x) => x.ruleId === id);
      if (f) out.push(`- **${id}** — ${mdEscape(f.why)} *Fix:* ${mdEscape(f.fix)}`);
    }
    out.push('');
  } else out.push('No findings.', '');
  const sup = r.findings.filter((f) => f.suppressed);
  if (sup.length > 0) {
    out.push('## Suppressed', '', '| Queue | Rule | Reason |', '|---|---|---|');
    for (const f of sup) out.push(`| ${mdEscape(f.target)} | ${f.ruleId} | ${mdEscape(f.suppressed?.reason ?? '')} |`);
    out.push('');
  }
  if (r.unusedSuppressions.length > 0) {
    out.push('## Unused suppressions', '', 'Warning: these suppressions in the project file suppressed nothing (a typo, or a queue or finding that is gone).', '');
    for (const u of r.unusedSuppressions) out.push(`- audit.suppress\\[${String(u.index)}\\] · ${mdEscape(u.rule)} on ${mdEscape(u.queue)}: ${mdEscape(u.why)}`);
    out.push('');
  }
  const nc = r.checks.filter((c) => c.status === 'not-checked');
  if (nc.length > 0) {
    out.push('## Not checked', '');
    for (const c of nc) out.push(`- ${mdEscape(c.target)} · ${c.ruleId}: ${mdEscape(c.note ?? 'not checked')}`);
    out.push('');
  }
  return `${out.join('\n').replace(/\n+$/, '')}\n`;
}

/** Renders a report in one of {@link AUDIT_FORMATS}. */
export function formatAuditReport(r: AuditReport, format: AuditFormat, o: FormatOptions = {}): string {
  switch (format) {
    case 'text':
      return formatText(r, o);
    case 'json':
      return `${JSON.stringify(r, null, 2)}\n`;
    case 'junit':
      return formatJunit(r, o);
    case 'sarif':
      return `${JSON.stringify(toSarif(r, o), null, 2)}\n`;
    case 'markdown':
      return formatMarkdown(r);
  }
}
