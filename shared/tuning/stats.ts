/**
 * Processing-time statistics for visibility-timeout tuning.
 *
 * Units: every duration in this module (and in all of `shared/tuning/`) is in **milliseconds**.
 * Conversions to a broker's own unit (SQS seconds) happen only when a value is shown or applied.
 */

/** Ratio p99/p50 above which the distribution is called long-tailed. */
export const LONG_TAIL_RATIO = 5;

/** One histogram bucket: samples with `fromMs ≤ d < toMs` (the last bucket also includes `toMs`). */
export interface HistogramBucket {
  fromMs: number;
  toMs: number;
  count: number;
  /** Share of all samples at or below `toMs` (the empirical CDF at the bucket's upper edge), 0–1. */
  cumulative: number;
}

/** One point of the empirical CDF: share of samples ≤ `atMs`. */
export interface CdfPoint {
  atMs: number;
  fraction: number;
}

/** Statistics of processing-time samples (all durations in ms). */
export interface DurationStats {
  n: number;
  minMs: number;
  meanMs: number;
  p50Ms: number;
  p90Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Equal-width buckets (width 1, 2 or 5 × 10^k ms) from just below the minimum to the maximum. */
  histogram: HistogramBucket[];
  /** Empirical CDF, at most ~200 points (evenly spaced ranks), ending at (max, 1). */
  cdf: CdfPoint[];
  /** p99 ÷ p50 (null when p50 is 0). */
  tailRatio: number | null;
  /** True when p99/p50 > {@link LONG_TAIL_RATIO}: use lease extension rather than one huge timeout. */
  longTail: boolean;
}

/**
 * Percentile by the nearest-rank method on sorted samples: the smallest sample with at least
 * `p`% of the samples at or below it (`sorted[ceil(p/100 · n) − 1]`). Never interpolates, so the
 * result is always an observed duration.
 * @param sorted ascending durations (ms); must be non-empty.
 * @param p 0 < p ≤ 100.
 */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  const rank = Math.min(n, Math.max(1, Math.ceil((p / 100) * n)));
  return sorted[rank - 1] ?? Number.NaN;
}

/**
 * Computes {@link DurationStats} from durations in ms. Non-finite and negative samples are
 * dropped (a clock skew between two hosts can produce a negative `finishedOn − processedOn`).
 * @param bucketCount histogram buckets (default 20, 1–200).
 * @returns null when no valid sample remains.
 */
export function computeStats(samplesMs: readonly number[], bucketCount = 20): DurationStats | null {
  // Float64Array sorts numerically in native code: ~10× faster than Array#sort with a comparator on 1M samples.
  const valid = new Float64Array(samplesMs.length);
  let n = 0;
  for (const x of samplesMs) if (Number.isFinite(x) && x >= 0) valid[n++] = x;
  const sorted = valid.subarray(0, n).sort();
  if (n === 0) return null;
  let sum = 0;
  for (const x of sorted) sum += x;
  const minMs = sorted[0] ?? 0;
  const maxMs = sorted[n - 1] ?? 0;
  const p50Ms = percentile(sorted, 50);
  const p99Ms = percentile(sorted, 99);
  const tailRatio = p50Ms > 0 ? p99Ms / p50Ms : null;
  return {
    n,
    minMs,
    meanMs: sum / n,
    p50Ms,
    p90Ms: percentile(sorted, 90),
    p95Ms: percentile(sorted, 95),
    p99Ms,
    maxMs,
    histogram: histogram(sorted, bucketCount),
    cdf: cdf(sorted),
    tailRatio,
    longTail: tailRatio !== null && tailRatio > LONG_TAIL_RATIO,
  };
}

/** A "nice" bucket width ≥ `raw`: 1, 2 or 5 × 10^k ms. */
export function niceStep(raw: number): number {
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const exp = Math.floor(Math.log10(raw));
  const base = 10 ** exp;
  if (!(base > 0) || !Number.isFinite(base)) return raw; // denormals: no nicer step exists
  for (const m of [1, 2, 5, 10]) if (m * base >= raw) return m * base;
  return 10 * base;
}

function histogram(sorted: Float64Array, bucketCount: number): HistogramBucket[] {
  const n = sorted.length;
  const buckets = Math.min(200, Math.max(1, Math.floor(bucketCount)));
  const min = sorted[0] ?? 0;
  const max = sorted[n - 1] ?? 0;
  // Buckets cover [min, max] (not [0, max]): a narrow distribution far from 0 still gets detail.
  let width = niceStep((max - min) / buckets || max / buckets || 1);
  if (!(width > 0) || (max - min) / width > 1000) width = (max - min) / buckets || 1;
  const start = Math.floor(min / width) * width;
  const count = Math.min(1000, Math.max(1, Math.ceil((max - start) / width + (max === start ? 1 : 0))));
  const out: HistogramBucket[] = [];
  for (let i = 0; i < count; i++) out.push({ fromMs: start + i * width, toMs: start + (i + 1) * width, count: 0, cumulative: 0 });
  for (const x of sorted) {
    const i = Math.min(count - 1, Math.floor((x - start) / width));
    const b = out[i];
    if (b) b.count++;
  }
  let acc = 0;
  for (const b of out) {
    acc += b.count;
    b.cumulative = acc / n;
  }
  return out;
}

function cdf(sorted: Float64Array): CdfPoint[] {
  const n = sorted.length;
  const points = Math.min(n, 200);
  const out: CdfPoint[] = [];
  for (let k = 1; k <= points; k++) {
    const rank = Math.ceil((k / points) * n);
    out.push({ atMs: sorted[rank - 1] ?? 0, fraction: rank / n });
  }
  return out;
}

/** Share (0–1) of samples strictly above `thresholdMs`. 0 for no samples. */
export function shareAbove(samplesMs: readonly number[], thresholdMs: number): number {
  let valid = 0;
  let above = 0;
  for (const x of samplesMs) {
    if (!Number.isFinite(x) || x < 0) continue;
    valid++;
    if (x > thresholdMs) above++;
  }
  return valid === 0 ? 0 : above / valid;
}

/** Fewer samples than this make a p99 a rough estimate (the 1 % tail then holds less than one sample). */
export const SMALL_SAMPLE_N = 100;

/**
 * The warning for a p99 from few samples: `"p99 from 5 samples is a rough estimate …"` when
 * `n < SMALL_SAMPLE_N`, else null. Shown by the CLI report and the app.
 */
export function smallSampleWarning(n: number): string | null {
  if (!(n < SMALL_SAMPLE_N)) return null;
  return `p99 from ${n.toLocaleString('en-US')} sample${n === 1 ? '' : 's'} is a rough estimate (fewer than ${SMALL_SAMPLE_N}: it is close to the maximum seen); measure longer for a reliable tail.`;
}

/**
 * Formats a duration in ms for people: `850 ms`, `12.5 s`, `4 min 10 s`, `2 h 5 min`.
 */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  const neg = ms < 0 ? '-' : '';
  const a = Math.abs(ms);
  if (a < 1000) return `${neg}${round(a, a < 10 ? 2 : a < 100 ? 1 : 0)} ms`;
  if (a < 60_000) return `${neg}${round(a / 1000, a < 10_000 ? 2 : 1)} s`;
  if (a < 3_600_000) {
    const m = Math.floor(a / 60_000);
    const s = Math.round((a - m * 60_000) / 1000);
    return `${neg}${m} min${s > 0 ? ` ${s} s` : ''}`;
  }
  const h = Math.floor(a / 3_600_000);
  const m = Math.round((a - h * 3_600_000) / 60_000);
  return `${neg}${h} h${m > 0 ? ` ${m} min` : ''}`;
}

function round(x: number, digits: number): string {
  return String(Number(x.toFixed(digits)));
}
