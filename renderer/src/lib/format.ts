/** Display formatting for the renderer. Pure functions; `now` is injectable for tests. */

const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'auto', style: 'short' });
const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 24 * 3600 * 1000],
  ['month', 30 * 24 * 3600 * 1000],
  ['day', 24 * 3600 * 1000],
  ['hour', 3600 * 1000],
  ['minute', 60 * 1000],
  ['second', 1000],
];

/** "3 min. ago", "in 5 sec.", "now" for a time in ms since epoch; "—" when null/undefined/invalid. */
export function relativeTime(ms: number | null | undefined, now: number = Date.now()): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  const diff = ms - now;
  const abs = Math.abs(diff);
  if (abs < 1000) return 'now';
  for (const [unit, size] of UNITS) {
    if (abs >= size) return rtf.format(Math.round(diff / size), unit);
  }
  return 'now';
}

/**
 * How long ago a read happened, compact: "just now" (under 2 s, or a time ahead of `now` from clock
 * skew), "12 s ago", "3 min ago", "2 h ago", "4 d ago" (whole units, rounded down); "—" when
 * null/undefined/invalid. `ms` and `now` are ms since epoch.
 */
export function ago(ms: number | null | undefined, now: number = Date.now()): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  const s = Math.floor((now - ms) / 1000);
  if (s < 2) return 'just now';
  if (s < 60) return `${String(s)} s ago`;
  if (s < 3600) return `${String(Math.floor(s / 60))} min ago`;
  if (s < 86_400) return `${String(Math.floor(s / 3600))} h ago`;
  return `${String(Math.floor(s / 86_400))} d ago`;
}

/** ISO 8601 in UTC with milliseconds, for tooltips and detail panels; "—" when absent. */
export function absoluteTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? '—' : d.toISOString().replace('T', ' ').replace('Z', ' UTC');
}

/** A duration in ms as "850 ms", "12.3 s", "4 min 5 s", "2 h 3 min", "3 d 4 h". */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  const a = Math.abs(ms);
  if (a < 1000) return `${Math.round(a)} ms`;
  if (a < 60_000) return `${(a / 1000).toFixed(a < 10_000 ? 1 : 0)} s`;
  if (a < 3_600_000) return `${Math.floor(a / 60_000)} min ${Math.floor((a % 60_000) / 1000)} s`;
  if (a < 86_400_000) return `${Math.floor(a / 3_600_000)} h ${Math.floor((a % 3_600_000) / 60_000)} min`;
  return `${Math.floor(a / 86_400_000)} d ${Math.floor((a % 86_400_000) / 3_600_000)} h`;
}

/** Bytes as "512 B", "1.5 KiB", "1.0 MiB". */
export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(2)} GiB`;
}

const nf = new Intl.NumberFormat('en');
/** A count with thousands separators; "—" for null (unknown), distinct from 0. */
export function count(n: number | null | undefined): string {
  return n === null || n === undefined || !Number.isFinite(n) ? '—' : nf.format(n);
}

/** First line of a failure reason, cut to `max` characters. */
export function shortReason(reason: string | null | undefined, max = 80): string {
  if (reason === null || reason === undefined) return '';
  const first = reason.split('\n', 1)[0]?.trim() ?? '';
  return first.length > max ? `${first.slice(0, max - 1)}…` : first;
}

/** Header/attribute values as one line of text: strings as is, everything else as JSON. */
export function headerValueText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined) return '';
  try {
    // JSON.stringify returns undefined for functions and symbols, whatever its type says.
    const json = JSON.stringify(v) as string | undefined;
    return json ?? '';
  } catch {
    return '(not representable)';
  }
}

/**
 * Case-insensitive filter on queue names. A pattern with `*` is a glob (`orders.*`), anything
 * else a substring. Empty matches everything.
 */
export function matchesFilter(name: string, filter: string): boolean {
  const f = filter.trim().toLowerCase();
  if (f === '') return true;
  const n = name.toLowerCase();
  if (!f.includes('*')) return n.includes(f);
  const re = new RegExp(`^${f.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  return re.test(n);
}
