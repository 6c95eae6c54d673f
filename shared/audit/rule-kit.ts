import type { AuditRuleMeta, QueueFacts, QueueMeasurement, RabbitServerFacts, RedisServerFacts, RuleOutcome } from './types';

/** What a rule's check may read besides the facts. */
export interface RuleContext {
  /** The threshold `name` of this rule: the project file's value, else the catalog default. */
  threshold(name: string): number;
  /** The measured processing time of a queue (by name or id), or null. */
  measurement(queue: { name: string; id: string }): QueueMeasurement | null;
  /**
   * Whether a finding of rule `ruleId` on this queue would count: the rule is not turned off and no
   * suppression covers the queue. For rules that leave a case to a more specific rule, so a case
   * the specific rule no longer reports is not silently passed.
   */
  reports(ruleId: string, queue: { name: string; id: string }): boolean;
  /** The RabbitMQ node of the queue's connection, when read. */
  rabbitServer: RabbitServerFacts | null;
  /** The Redis server of the queue's connection, when read. */
  redisServer: RedisServerFacts | null;
}

/** A rule that looks at one queue's facts of a given kind. */
export interface QueueRule<F extends QueueFacts = QueueFacts> {
  meta: AuditRuleMeta & { scope: 'queue' };
  /** The facts kind it reads. */
  kind: F['kind'];
  check(facts: F, ctx: RuleContext): RuleOutcome;
}

/** A rule that looks at one server. */
export interface ServerRule<S extends RabbitServerFacts | RedisServerFacts = RabbitServerFacts | RedisServerFacts> {
  meta: AuditRuleMeta & { scope: 'server' };
  kind: S['kind'];
  check(facts: S, ctx: RuleContext): RuleOutcome;
}

export type AnyRule = QueueRule<never> | ServerRule<never>;

export const pass = (note?: string): RuleOutcome => (note === undefined ? { status: 'pass' } : { status: 'pass', note });
export const notChecked = (reason: string): RuleOutcome => ({ status: 'not-checked', reason });
export const notApplicable: RuleOutcome = { status: 'not-applicable' };

/** Human duration from ms: `850 ms`, `12.5 s`, `4 min`, `2.5 h`, `14 d`. */
export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  const abs = Math.abs(ms);
  const trim = (n: number): string => (Number.isInteger(n) ? String(n) : n.toFixed(1).replace(/\.0$/, ''));
  if (abs < 1000) return `${trim(ms)} ms`;
  if (abs < 120_000) return `${trim(ms / 1000)} s`;
  if (abs < 2 * 3_600_000) return `${trim(ms / 60_000)} min`;
  if (abs < 2 * 86_400_000) return `${trim(ms / 3_600_000)} h`;
  return `${trim(ms / 86_400_000)} d`;
}

/**
 * How a rule names a queue's p99 in its messages: `measured p99 1.2 s`, or — when only a mean was
 * measured — `estimated p99 23 s (4.6 × the measured mean 5 s, as if times were exponential)`.
 */
export function p99Text(m: QueueMeasurement & { p99Ms: number }): string {
  if (m.p99Basis === 'mean-exponential' && m.meanMs !== null) {
    return `estimated p99 ${fmtMs(m.p99Ms)} (${(m.p99Ms / m.meanMs).toFixed(1)} × the measured mean ${fmtMs(m.meanMs)}, as if times were exponential; measure per-message times for a real p99)`;
  }
  return `measured p99 ${fmtMs(m.p99Ms)}`;
}
