import { z } from 'zod';
import type { InspectRules, KeyRule } from './types';

/**
 * Per-queue inspect rules: defaults, validation (zod, for `queuescope.config.json` and connection
 * profiles), resolution by queue pattern, and the snapshot-field glob matcher. Pure.
 */

/** Rules used when none are configured: built-in key rules only, no snapshot fields, broker default size limit. */
export const DEFAULT_INSPECT_RULES: Readonly<InspectRules> = Object.freeze({ keyRules: [], snapshotFields: [], queueIsSnapshot: false });

/** Largest allowed size limit in {@link InspectRules.maxMessageBytes}: 2 GiB (anything above is not a real broker limit). */
const MAX_LIMIT_BYTES = 2 ** 31;

/** zod schema of one {@link KeyRule}. */
export const keyRuleSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('header'), name: z.string().min(1).max(256) }),
  z.object({ kind: z.literal('jsonPath'), path: z.string().min(1).max(512) }),
  z.object({ kind: z.literal('template'), template: z.string().min(1).max(512).regex(/\{[^{}]+\}/, 'a template needs at least one {path} placeholder') }),
]);

/** zod schema of (partial) {@link InspectRules} as stored in `queuescope.config.json` / a connection profile. */
export const inspectRulesSchema = z.object({
  keyRules: z.array(keyRuleSchema).max(50).optional(),
  snapshotFields: z.array(z.string().min(1).max(256)).max(100).optional(),
  queueIsSnapshot: z.boolean().optional(),
  maxMessageBytes: z.number().int().min(1).max(MAX_LIMIT_BYTES).optional(),
});

/** One stored entry: rules for the queues whose name matches `queue` (a glob: `*` any characters, `?` one). */
export const queueRulesEntrySchema = z.object({ queue: z.string().min(1).max(512), rules: inspectRulesSchema });

export type QueueRulesEntry = z.infer<typeof queueRulesEntrySchema>;

/**
 * Fills in and sanitises rules that may come from untrusted JSON: unknown members are dropped,
 * invalid key rules and patterns are skipped (never thrown), defaults fill the rest.
 */
export function normalizeRules(rules: Partial<InspectRules> | null | undefined): InspectRules {
  if (rules === null || typeof rules !== 'object') return { ...DEFAULT_INSPECT_RULES, keyRules: [], snapshotFields: [] };
  const keyRules: KeyRule[] = [];
  if (Array.isArray(rules.keyRules)) {
    for (const r of rules.keyRules.slice(0, 50)) {
      const ok = keyRuleSchema.safeParse(r);
      if (ok.success) keyRules.push(ok.data);
    }
  }
  const snapshotFields = Array.isArray(rules.snapshotFields) ? rules.snapshotFields.filter((p): p is string => typeof p === 'string' && p.trim().length > 0 && p.length <= 256).slice(0, 100) : [];
  const out: InspectRules = { keyRules, snapshotFields, queueIsSnapshot: rules.queueIsSnapshot === true };
  const max = rules.maxMessageBytes;
  if (typeof max === 'number' && Number.isFinite(max) && max >= 1 && max <= MAX_LIMIT_BYTES) out.maxMessageBytes = Math.floor(max);
  return out;
}

/**
 * The rules for one queue: every entry whose `queue` glob matches the queue name (or its full id)
 * applies, in order; later entries add key rules and snapshot fields after earlier ones, and
 * override `queueIsSnapshot` / `maxMessageBytes` when they set them.
 *
 * @param entries stored entries (validated or not: invalid ones are skipped).
 * @param queue the queue's name (and optionally id), e.g. `orders.work` or `rabbitmq:%2F/orders.work`.
 */
export function resolveInspectRules(entries: readonly unknown[] | null | undefined, queue: string | { name: string; id?: string }): InspectRules {
  const names = typeof queue === 'string' ? [queue] : [queue.name, ...(queue.id !== undefined ? [queue.id] : [])];
  const out = normalizeRules(undefined);
  for (const raw of entries ?? []) {
    const parsed = queueRulesEntrySchema.safeParse(raw);
    if (!parsed.success) continue;
    const re = globToRegExp(parsed.data.queue);
    if (!names.some((n) => re.test(n))) continue;
    const r = normalizeRules(parsed.data.rules);
    out.keyRules.push(...r.keyRules);
    out.snapshotFields.push(...r.snapshotFields);
    if (parsed.data.rules.queueIsSnapshot !== undefined) out.queueIsSnapshot = r.queueIsSnapshot;
    if (r.maxMessageBytes !== undefined) out.maxMessageBytes = r.maxMessageBytes;
  }
  return out;
}

function globToRegExp(glob: string): RegExp {
  const src = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${src}$`, 's');
}

// ---------------------------------------------------------------------------------------------
// Snapshot-field patterns

/** A compiled {@link InspectRules.snapshotFields} pattern. */
export interface SnapshotPattern {
  /** The pattern as the user wrote it (shown in verdicts). */
  source: string;
  /** Segments: a key, `*` (one key or index), `**` (any number of segments), `[]` (any index), or `[n]`. */
  segs: string[];
}

/** Splits `order.items[*].sku` / `body.order.*` into segments; drops a leading `body`. Null when empty. */
export function compileSnapshotPattern(source: string): SnapshotPattern | null {
  const segs: string[] = [];
  for (const part of source.trim().split('.')) {
    if (part.length === 0) continue;
    const m = /^([^[\]]*)((?:\[[^\]]*\])*)$/.exec(part);
    if (m === null) {
      segs.push(part);
      continue;
    }
    if ((m[1] ?? '').length > 0) segs.push(m[1] ?? '');
    for (const idx of (m[2] ?? '').match(/\[[^\]]*\]/g) ?? []) segs.push(idx === '[*]' || idx === '[]' ? '[]' : idx);
  }
  if (segs[0] === 'body') segs.shift();
  // Bound the matcher's work: consecutive `**` collapse; more than 4 `**` or 32 segments is refused.
  const collapsed = segs.filter((s, i) => !(s === '**' && segs[i - 1] === '**'));
  if (collapsed.length === 0 || collapsed.length > 32 || collapsed.filter((s) => s === '**').length > 4) return null;
  return { source: source.trim(), segs: collapsed };
}

/**
 * True when the pattern matches a prefix of `path` (so it covers the subtree below); a trailing
 * `*` or `[*]` may also match nothing (`order.*` covers `order` itself, `items[*]` the array). `path` holds key segments and index
 * segments written `[n]`.
 */
export function matchesPrefix(pattern: readonly string[], path: readonly string[], from = 0): boolean {
  return matchAt(pattern, 0, path, from);
}

function matchAt(p: readonly string[], i: number, path: readonly string[], j: number): boolean {
  if (i === p.length) return true; // prefix matched
  const seg = p[i];
  if (seg === '**') {
    for (let k = j; k <= path.length; k++) if (matchAt(p, i + 1, path, k)) return true;
    return false;
  }
  // `order.*` also covers `order` itself: a trailing `*` may match nothing.
  if (j >= path.length) return (seg === '*' || seg === '[]') && i === p.length - 1;
  const actual = path[j] ?? '';
  const isIndex = actual.startsWith('[');
  let ok: boolean;
  if (seg === '*') ok = true;
  else if (seg === '[]') ok = isIndex;
  else ok = seg === actual;
  return ok && matchAt(p, i + 1, path, j + 1);
}
