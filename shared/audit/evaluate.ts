/**
 * Runs the rule catalog over collected facts and applies the project file's `audit` section:
 * queue patterns, per-rule severity (or `off`), thresholds and suppressions (pure).
 */
import { matchesQueuePattern, type AuditConfig, type ProjectConfigIssue } from '../config/project-config';
import { AUDIT_RULES, RULE_CATALOG } from './catalog';
import type { AnyRule, RuleContext } from './rule-kit';
import type { UnusedSuppression, AuditCheck, AuditFacts, AuditFinding, AuditReport, AuditSeverity, Measurements, QueueFacts, RabbitServerFacts, RedisServerFacts, RuleOutcome } from './types';

/**
 * Checks the rule ids and thresholds the project file names (the zod schema only checks shapes).
 * @returns one issue per unknown rule id, unknown threshold, non-number or out-of-range value.
 */
export function checkAuditConfig(config: AuditConfig): ProjectConfigIssue[] {
  const issues: ProjectConfigIssue[] = [];
  const known = (id: string, path: string): boolean => {
    if (RULE_CATALOG.has(id)) return true;
    issues.push({ path, message: `unknown audit rule "${id}" (see \`queuescope audit --list-rules\`)` });
    return false;
  };
  for (const id of Object.keys(config.severity)) known(id, `audit.severity.${id}`);
  for (const [id, values] of Object.entries(config.thresholds)) {
    if (!known(id, `audit.thresholds.${id}`)) continue;
    const meta = RULE_CATALOG.get(id);
    for (const [name, v] of Object.entries(values)) {
      const t = meta?.thresholds[name];
      const path = `audit.thresholds.${id}.${name}`;
      if (!t) {
        const names = Object.keys(meta?.thresholds ?? {});
        issues.push({ path, message: names.length > 0 ? `rule ${id} has no threshold "${name}" (it has: ${names.join(', ')})` : `rule ${id} has no thresholds` });
      } else if (typeof v !== 'number' || !Number.isFinite(v)) issues.push({ path, message: `must be a number (${t.description})` });
      else if ((t.min !== undefined && v < t.min) || (t.max !== undefined && v > t.max)) issues.push({ path, message: `must be between ${String(t.min ?? '-∞')} and ${String(t.max ?? '∞')} (${t.description}), got ${String(v)}` });
    }
  }
  config.suppress.forEach((s, i) => known(s.rule, `audit.suppress[${String(i)}].rule`));
  return issues;
}

/** Options of {@link evaluateAudit}. */
export interface EvaluateOptions {
  config: AuditConfig;
  measurements: Measurements;
  /** Extra queue patterns (the CLI's `--queues`), combined with the config's by AND. */
  queuePatterns?: string[];
  /** Default safety factor for timeout rules (the project file's `tune.safetyFactor`). */
  safetyFactor?: number;
  /** ms since epoch, for the report. */
  now: number;
  configPath?: string | null;
  measurementsPath?: string | null;
  /** Notes to carry into the report (e.g. measurement file problems). */
  notes?: string[];
}

function targetOf(f: QueueFacts): { id: string; name: string } {
  return { id: f.id, name: f.name };
}

function queueSelected(q: { id: string; name: string }, patterns: string[] | undefined): boolean {
  if (!patterns || patterns.length === 0) return true;
  return patterns.some((p) => matchesQueuePattern(p, q.name) || matchesQueuePattern(p, q.id));
}

/**
 * Evaluates every rule on every selected queue and server.
 * @returns the report: findings (failed checks, suppressed ones marked), passed and not-checked
 *   checks, counts. Findings are sorted by severity, then queue, then rule.
 */
export function evaluateAudit(facts: AuditFacts[], options: EvaluateOptions): AuditReport {
  const { config, measurements } = options;
  const findings: AuditFinding[] = [];
  const checks: AuditCheck[] = [];
  const disabled = Object.entries(config.severity)
    .filter(([, s]) => s === 'off')
    .map(([id]) => id);
  const queues: AuditReport['queues'] = [];
  const usedSuppressions = new Set<number>();
  /** Every target (queue name and id, server label) the rules ran on, for the unused-suppression check. */
  const targets: string[] = [];

  const severityOf = (rule: AnyRule): AuditSeverity => {
    const s = config.severity[rule.meta.id];
    return s === undefined || s === 'off' ? rule.meta.severity : s;
  };
  const contextFor = (rule: AnyRule, rabbitServer: RabbitServerFacts | null, redisServer: RedisServerFacts | null): RuleContext => ({
    threshold: (name) => {
      const v = config.thresholds[rule.meta.id]?.[name];
      if (typeof v === 'number') return v;
      if (name === 'safetyFactor' && options.safetyFactor !== undefined && rule.meta.id === 'sqs.visibility-timeout-below-processing-time') return options.safetyFactor;
      return rule.meta.thresholds[name]?.default ?? Number.NaN;
    },
    measurement: (q) => measurements.get(q.name) ?? measurements.get(q.id) ?? null,
    reports: (ruleId, q) => !disabled.includes(ruleId) && !config.suppress.some((s) => s.rule === ruleId && (matchesQueuePattern(s.queue, q.name) || matchesQueuePattern(s.queue, q.id))),
    rabbitServer,
    redisServer,
  });
  const record = (rule: AnyRule, outcome: RuleOutcome, target: string, queueId: string | null): void => {
    if (outcome.status === 'not-applicable') return;
    if (outcome.status === 'pass') {
      checks.push({ ruleId: rule.meta.id, target, queueId, status: 'pass', note: outcome.note ?? null });
      return;
    }
    if (outcome.status === 'not-checked') {
      checks.push({ ruleId: rule.meta.id, target, queueId, status: 'not-checked', note: `not checked: ${outcome.reason}` });
      return;
    }
    const supIndex = config.suppress.findIndex((s) => s.rule === rule.meta.id && (matchesQueuePattern(s.queue, target) || (queueId !== null && matchesQueuePattern(s.queue, queueId))));
    const sup = supIndex >= 0 ? config.suppress[supIndex] : undefined;
    if (supIndex >= 0) usedSuppressions.add(supIndex);
    findings.push({
      ruleId: rule.meta.id,
      broker: rule.meta.broker,
      severity: severityOf(rule),
      title: rule.meta.title,
      queueId,
      target,
      message: outcome.message,
      why: rule.meta.why,
      fix: rule.meta.fix,
      docUrl: rule.meta.docUrl,
      evidence: outcome.evidence,
      suppressed: sup ? { reason: sup.reason } : null,
      autoFix: outcome.fix ?? null,
    });
  };

  for (const f of facts) {
    const rabbitServer = f.servers.find((s): s is RabbitServerFacts => s.kind === 'rabbitmq-server') ?? null;
    const redisServer = f.servers.find((s): s is RedisServerFacts => s.kind === 'redis-server') ?? null;
    for (const rule of AUDIT_RULES) {
      if (disabled.includes(rule.meta.id) || rule.meta.scope !== 'server') continue;
      for (const s of f.servers) {
        if (s.kind !== rule.kind) continue;
        const outcome = (rule.check as (x: typeof s, c: RuleContext) => RuleOutcome)(s, contextFor(rule, rabbitServer, redisServer));
        record(rule, outcome, s.label, null);
      }
    }
    targets.push(...f.servers.map((s) => s.label));
    for (const q of f.queues) {
      const t = targetOf(q);
      if (!queueSelected(t, config.queues) || !queueSelected(t, options.queuePatterns)) continue;
      queues.push({ id: t.id, name: t.name, broker: f.broker });
      targets.push(t.name, t.id);
      for (const rule of AUDIT_RULES) {
        if (disabled.includes(rule.meta.id) || rule.meta.scope !== 'queue' || rule.kind !== q.kind) continue;
        const outcome = (rule.check as (x: QueueFacts, c: RuleContext) => RuleOutcome)(q, contextFor(rule, rabbitServer, redisServer));
        record(rule, outcome, t.name, t.id);
      }
    }
  }

  const rank: Record<AuditSeverity, number> = { error: 0, warning: 1, info: 2 };
  findings.sort((a, b) => Number(a.suppressed !== null) - Number(b.suppressed !== null) || rank[a.severity] - rank[b.severity] || a.target.localeCompare(b.target) || a.ruleId.localeCompare(b.ruleId));
  const active = findings.filter((x) => x.suppressed === null);
  return {
    version: 1,
    generatedAt: options.now,
    connections: facts.map((f) => ({ broker: f.broker, label: f.label })),
    queues,
    findings,
    checks,
    disabledRules: disabled,
    notes: [...(options.notes ?? []), ...facts.flatMap((f) => f.notes)],
    unusedSuppressions: unusedSuppressions(config, usedSuppressions, new Set(facts.map((f) => f.broker)), disabled, targets, queues.map((q) => q.name)),
    counts: {
      error: active.filter((x) => x.severity === 'error').length,
      warning: active.filter((x) => x.severity === 'warning').length,
      info: active.filter((x) => x.severity === 'info').length,
      suppressed: findings.length - active.length,
      notChecked: checks.filter((c) => c.status === 'not-checked').length,
      passed: checks.filter((c) => c.status === 'pass').length,
    },
    configPath: options.configPath ?? null,
    measurementsPath: options.measurementsPath ?? null,
  };
}

/**
 * Suppressions that suppressed nothing, each with why: the rule is turned off, the queue pattern
 * matches no audited queue (with similar names), or the rule found nothing on the matching queues.
 * Suppressions of rules whose broker was not audited are left out (one project file can serve
 * several connections).
 */
function unusedSuppressions(config: AuditConfig, used: Set<number>, brokers: Set<string>, disabled: string[], targets: string[], queueNames: string[]): UnusedSuppression[] {
  const out: UnusedSuppression[] = [];
  config.suppress.forEach((s, index) => {
    if (used.has(index)) return;
    const broker = RULE_CATALOG.get(s.rule)?.broker;
    if (broker !== undefined && !brokers.has(broker)) return;
    let why: string;
    if (disabled.includes(s.rule)) why = `rule ${s.rule} is turned off in audit.severity`;
    else if (!targets.some((t) => matchesQueuePattern(s.queue, t))) {
      const similar = similarNames(s.queue, queueNames);
      why = `queue pattern "${s.queue}" matches no audited queue${similar.length > 0 ? `; similar: ${similar.join(', ')}` : ''}`;
    } else why = `rule ${s.rule} found nothing to suppress on the queues "${s.queue}" matches (fixed? then remove the suppression)`;
    out.push({ index, rule: s.rule, queue: s.queue, why });
  });
  return out;
}

/** Levenshtein distance (case-insensitive), capped work: both strings cut to 200 characters. */
function editDistance(a: string, b: string): number {
  const x = a.slice(0, 200).toLowerCase();
  const y = b.slice(0, 200).toLowerCase();
  let prev = Array.from({ length: y.length + 1 }, (_v, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const cur = [i];
    for (let j = 1; j <= y.length; j++) cur.push(Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + (x[i - 1] === y[j - 1] ? 0 : 1)));
    prev = cur;
  }
  return prev[y.length] ?? 0;
}

/**
 * Up to `limit` names most like a queue `pattern` (`*` wildcards): names containing one of the
 * pattern's literal parts (3+ characters) first, then by edit distance between the literal text and the name (or,
 * for a prefix pattern, the name's prefix of the same length). Names further away than a third of the
 * literal's length (at least 1 edit) are left out.
 */
export function similarNames(pattern: string, names: readonly string[], limit = 5): string[] {
  const literal = pattern.replace(/\*/g, '');
  const parts = pattern.split('*').filter((p) => p.length >= 3).map((p) => p.toLowerCase());
  const prefixOnly = pattern.endsWith('*') && !pattern.slice(0, -1).includes('*');
  const scored: { name: string; score: number }[] = [];
  for (const name of new Set(names)) {
    const lower = name.toLowerCase();
    if (parts.some((p) => lower.includes(p))) {
      scored.push({ name, score: -1 });
      continue;
    }
    if (literal.length === 0) continue;
    const d = Math.min(editDistance(literal, name), prefixOnly ? editDistance(literal, name.slice(0, literal.length)) : Number.POSITIVE_INFINITY);
    if (d <= Math.max(1, Math.ceil(literal.length / 3))) scored.push({ name, score: d });
  }
  return scored
    .sort((a, b) => a.score - b.score || a.name.length - b.name.length || a.name.localeCompare(b.name))
    .slice(0, limit)
    .map((s) => s.name);
}

/**
 * True when the report has an unsuppressed finding at or above `threshold`
 * (`warning` also counts errors). Info findings never fail a run.
 */
export function failsThreshold(report: AuditReport, threshold: 'error' | 'warning'): boolean {
  return report.counts.error > 0 || (threshold === 'warning' && report.counts.warning > 0);
}
