/**
 * Reads a measurements file for the rules that compare timeouts with processing time. Accepted
 * shapes (JSON, parsed by the caller):
 *
 * 1. What `queuescope tune --json` prints: one tuning report
 *    `{ queueId, queueName, stats: { p99Ms, meanMs, … } | null, measurement: { meanMs, source }, units: "ms" }`,
 *    an array of them, or `{ reports: [...] }`.
 * 2. A simple file: `{ "queues": { "<queue name or id>": { "p99Ms": 1200, "meanMs": 300 } } }`.
 *
 * All durations are ms. A mean without a p99 (Little's law, or a simple file with only `meanMs`)
 * gives an estimated p99 of mean × ln 100 (≈ 4.6 × mean, as if times were exponential) — what
 * `queuescope tune` recommends from — never the mean itself: a mean is not a tail, and a check
 * passed on it would pass timeouts that tune calls a risk. Pure; never throws: problems come
 * back as messages.
 */
import { EXPONENTIAL_P99_PER_MEAN } from '../tuning/recommend';
import type { Measurements, QueueMeasurement } from './types';

function rec(v: unknown): Record<string, unknown> | null {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}
function ms(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null;
}

/** The measurement from a measured p99 and/or a mean (p99 estimated from the mean when missing). */
function measurementOf(p99: number | null, mean: number | null, source: string): QueueMeasurement {
  if (p99 !== null) return { p99Ms: p99, p99Basis: 'measured', meanMs: mean, source };
  return { p99Ms: mean === null ? null : mean * EXPONENTIAL_P99_PER_MEAN, p99Basis: 'mean-exponential', meanMs: mean, source };
}

function fromReport(r: Record<string, unknown>): { names: string[]; m: QueueMeasurement } | null {
  const names = [r.queueName, r.queueId].filter((x): x is string => typeof x === 'string' && x !== '');
  if (names.length === 0) return null;
  const stats = rec(r.stats);
  const measurement = rec(r.measurement);
  const p99 = ms(stats?.p99Ms);
  const mean = ms(stats?.meanMs) ?? ms(measurement?.meanMs);
  if (p99 === null && mean === null) return null;
  // Mean-only sources (Little's law) give no tail: p99 is estimated from the mean, as tune does.
  return { names, m: measurementOf(p99, mean, typeof measurement?.source === 'string' ? `tune (${measurement.source})` : 'tune') };
}

/**
 * Parses a measurements value.
 * @returns the measurements by queue name/id, and problems (entries skipped, unknown shape).
 */
export function parseMeasurements(value: unknown): { measurements: Measurements; problems: string[] } {
  const out: Measurements = new Map();
  const problems: string[] = [];
  const o = rec(value);
  const simple = rec(o?.queues);
  if (simple) {
    for (const [name, v] of Object.entries(simple)) {
      const e = rec(v);
      const p99 = ms(e?.p99Ms);
      const mean = ms(e?.meanMs);
      if (p99 === null && mean === null) {
        problems.push(`queues["${name.slice(0, 100)}"] has neither p99Ms nor meanMs (numbers of ms ≥ 0)`);
        continue;
      }
      out.set(name, measurementOf(p99, mean, 'file'));
    }
    return { measurements: out, problems };
  }
  const list: unknown[] = Array.isArray(value) ? value : Array.isArray(o?.reports) ? (o.reports as unknown[]) : o ? [o] : [];
  if (list.length === 0) problems.push('expected { "queues": { "<name>": { "p99Ms": …, "meanMs": … } } } or the output of `queuescope tune --json`');
  list.forEach((item, i) => {
    const r = rec(item);
    const got = r ? fromReport(r) : null;
    if (!got) {
      problems.push(`entry ${String(i)} has no queueName with stats.p99Ms or measurement.meanMs`);
      return;
    }
    for (const n of got.names) out.set(n, got.m);
  });
  return { measurements: out, problems };
}
