/**
 * Little's law from per-period metrics (CloudWatch-style one-minute aggregates): mean time in
 * flight W = L / λ, L = average in flight, λ = completions per second. Units: ms for times.
 */

/** One metric value for the period starting at `t` (ms since epoch). */
export interface PeriodValue {
  t: number;
  value: number;
}

/** Result of {@link littlesLawFromPeriods}. */
export interface LittlesLawEstimate {
  /** Mean time in flight, ms. */
  meanMs: number;
  /** Average number in flight over the periods used. */
  inFlight: number;
  /** Completions per second over the periods used. */
  perSecond: number;
  /** Periods used (those with both values and at least one completion). */
  periods: number;
}

/**
 * Estimates the mean time in flight from average in-flight counts (e.g. SQS
 * `ApproximateNumberOfMessagesNotVisible`, Average) and completion sums (e.g.
 * `NumberOfMessagesDeleted`, Sum) per period of `periodMs`. Periods without completions are left
 * out (an idle queue says nothing about processing time).
 * @returns null when no period has both values and a completion, or `periodMs` is not positive.
 */
export function littlesLawFromPeriods(inFlight: readonly PeriodValue[], completed: readonly PeriodValue[], periodMs: number): LittlesLawEstimate | null {
  if (!(periodMs > 0)) return null;
  const L = new Map(inFlight.filter((p) => Number.isFinite(p.value) && p.value >= 0).map((p) => [p.t, p.value]));
  const used = completed.filter((p) => Number.isFinite(p.value) && p.value > 0 && L.has(p.t));
  if (used.length === 0) return null;
  const meanL = used.reduce((x, p) => x + (L.get(p.t) ?? 0), 0) / used.length;
  const lambda = used.reduce((x, p) => x + p.value, 0) / ((used.length * periodMs) / 1000);
  return { meanMs: (meanL / lambda) * 1000, inFlight: meanL, perSecond: lambda, periods: used.length };
}
