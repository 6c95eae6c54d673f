import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import { formatMs, type DurationStats, type RetrySchedule } from '../../../shared/tuning';

/** A vertical marker on the histogram: the current and the recommended timeout (ms). */
export interface ChartMark {
  label: string;
  ms: number;
  color: string;
}

/** Colours read from the CSS variables, so charts follow the light/dark theme. */
function cssVar(name: string, fallback: string): string {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v === '' ? fallback : v;
}

/** Mounts a uPlot chart in a div and recreates it when `deps` change (uPlot draws on canvas: no inline script, no eval — fine under the CSP). */
function useUplot(build: (el: HTMLDivElement) => uPlot | null, deps: readonly unknown[]): React.RefObject<HTMLDivElement | null> {
  const ref = useRef<HTMLDivElement | null>(null);
  useEffect(() => {
    const el = ref.current;
    if (el === null) return;
    const chart = build(el);
    const resize = new ResizeObserver(() => {
      if (chart !== null && el.clientWidth > 0) chart.setSize({ width: el.clientWidth, height: chart.height });
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      chart?.destroy();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the caller lists what the chart depends on
  }, deps);
  return ref;
}

/** Draws labelled vertical lines at x values (ms) over the plot area. Marks beyond the x range are drawn at the edge with an arrow. */
function markerPlugin(marks: ChartMark[]): uPlot.Plugin {
  return {
    hooks: {
      draw: [
        (u: uPlot) => {
          const ctx = u.ctx;
          const { left, top, width, height } = u.bbox;
          const max = u.scales.x?.max ?? 0;
          ctx.save();
          ctx.font = `${Math.round(11 * devicePixelRatio)}px system-ui, sans-serif`;
          marks.forEach((m, i) => {
            const beyond = m.ms > max;
            const x = beyond ? left + width - 1 : u.valToPos(m.ms, 'x', true);
            ctx.strokeStyle = m.color;
            ctx.fillStyle = m.color;
            ctx.lineWidth = 2 * devicePixelRatio;
            ctx.setLineDash(beyond ? [4 * devicePixelRatio, 4 * devicePixelRatio] : []);
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + height);
            ctx.stroke();
            const text = `${m.label} ${formatMs(m.ms)}${beyond ? ' →' : ''}`;
            const tw = ctx.measureText(text).width;
            ctx.fillText(text, Math.max(left + 2, Math.min(x + 4 * devicePixelRatio, left + width - tw - 2)), top + (14 + i * 14) * devicePixelRatio);
          });
          ctx.restore();
        },
      ],
    },
  };
}

/**
 * Histogram of processing times (bars, left axis = samples) with the empirical CDF (line, right
 * axis = % of samples ≤ x) and vertical lines for the current and recommended timeouts. x in ms.
 * The x range extends to the recommended timeout; a current timeout far beyond it is drawn at the
 * right edge with an arrow.
 */
export function TuningHistogramChart({ stats, marks, height = 220 }: { stats: DurationStats; marks: ChartMark[]; height?: number }) {
  const ref = useUplot(
    (el) => {
      const b = stats.histogram;
      const xs = b.map((x) => (x.fromMs + x.toMs) / 2);
      const counts = b.map((x) => x.count);
      const cdf = b.map((x) => x.cumulative * 100);
      const width = (b[0]?.toMs ?? 1) - (b[0]?.fromMs ?? 0);
      const lastEdge = b[b.length - 1]?.toMs ?? stats.maxMs;
      const inRange = marks.filter((m) => m.ms <= Math.max(lastEdge * 4, lastEdge + width));
      const xMax = Math.max(lastEdge, ...inRange.map((m) => m.ms * 1.05));
      const xMin = b[0]?.fromMs ?? 0;
      const fg = cssVar('--fg-muted', '#667085');
      const grid = cssVar('--border', '#dde1e7');
      const opts: uPlot.Options = {
        width: Math.max(300, el.clientWidth),
        height,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: false, range: () => [xMin, xMax] }, n: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] }, pct: { range: () => [0, 100] } },
        axes: [
          { stroke: fg, grid: { stroke: grid }, values: (_u, vals) => vals.map((v) => formatMs(v)) },
          { scale: 'n', stroke: fg, grid: { stroke: grid }, label: 'samples' },
          // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-assignment -- uPlot's Axis.Side is an ambient const enum (not usable with isolatedModules); 1 = right
          { scale: 'pct', side: 1, stroke: fg, grid: { show: false }, values: (_u, vals) => vals.map((v) => `${v}%`) },
        ],
        series: [
          {},
          { label: 'samples', scale: 'n', stroke: cssVar('--accent', '#2f6fec'), fill: cssVar('--accent-soft', '#e6efff'), paths: uPlot.paths.bars?.({ size: [0.95, Infinity] }), points: { show: false } },
          { label: 'CDF', scale: 'pct', stroke: cssVar('--ok', '#1f8a4c'), width: 2, points: { show: false } },
        ],
        plugins: [markerPlugin(marks)],
      };
      return new uPlot(opts, [xs, counts, cdf], el);
    },
    [stats, marks.map((m) => `${m.label}:${m.ms}`).join(','), height],
  );
  return <div ref={ref} className="tuning-chart" data-testid="tuning-histogram" role="img" aria-label={`Histogram and CDF of ${stats.n} processing times; ${marks.map((m) => `${m.label} ${formatMs(m.ms)}`).join(', ')}`} />;
}

/**
 * When 100 messages that failed together retry: retries per time bin, as configured and with full
 * jitter (two step lines). x = ms after the common failure.
 */
export function RetryHerdChart({ schedule, height = 180 }: { schedule: RetrySchedule; height?: number }) {
  const ref = useUplot(
    (el) => {
      const all = [...schedule.asConfigured.retries.flat(), ...schedule.fullJitter.retries.flat()];
      const span = Math.max(1, ...all);
      const bins = 100;
      const binMs = span / bins;
      const hist = (retries: number[][]): number[] => {
        const out = new Array<number>(bins + 1).fill(0);
        for (const r of retries) for (const t of r) out[Math.min(bins, Math.floor(t / binMs))] = (out[Math.min(bins, Math.floor(t / binMs))] ?? 0) + 1;
        return out;
      };
      const xs = Array.from({ length: bins + 1 }, (_, i) => i * binMs);
      const fg = cssVar('--fg-muted', '#667085');
      const grid = cssVar('--border', '#dde1e7');
      const opts: uPlot.Options = {
        width: Math.max(300, el.clientWidth),
        height,
        legend: { show: true },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] } },
        axes: [
          { stroke: fg, grid: { stroke: grid }, values: (_u, vals) => vals.map((v) => formatMs(v)) },
          { stroke: fg, grid: { stroke: grid }, label: `retries per ${formatMs(binMs)}` },
        ],
        series: [
          { label: 'after the failure', value: (_u, v: number | null) => (v === null ? '–' : formatMs(v)) },
          { label: schedule.policy.jitter > 0 ? `as configured (jitter ${schedule.policy.jitter})` : 'as configured (no jitter)', stroke: cssVar('--danger', '#c92a2a'), width: 2, paths: uPlot.paths.stepped?.({ align: 1 }), points: { show: false } },
          { label: 'full jitter', stroke: cssVar('--ok', '#1f8a4c'), width: 2, paths: uPlot.paths.stepped?.({ align: 1 }), points: { show: false } },
        ],
      };
      return new uPlot(opts, [xs, hist(schedule.asConfigured.retries), hist(schedule.fullJitter.retries)], el);
    },
    [schedule, height],
  );
  return <div ref={ref} className="tuning-chart" data-testid="retry-chart" role="img" aria-label="Retries over time of 100 messages that failed together, as configured and with full jitter" />;
}
