import { z } from 'zod';
import { MAX_BODY_DEPTH } from './idempotency';
import type { InspectRules, KeyRule } from './types';

/**
 * Per-queue inspect rules: defaults, validation (zod), resolution by queue pattern, and the
 * snapshot-field glob matcher. Pure. {@link keyRuleSchema} is the one definition of a valid key
 * rule and {@link snapshotFieldSchema} of a valid snapshot-field pattern: the project file and the
 * connection profiles (`shared/config/project-config.ts`, also used by `inspect.rules.set` and the
 * app's rule editor) and {@link normalizeRules} all use them.
 */

/** Rules used when none are configured: built-in key rules only, no snapshot fields, broker default size limit. */
export const DEFAULT_INSPECT_RULES: Readonly<InspectRules> = Object.freeze({ keyRules: [], snapshotFields: [], queueIsSnapshot: false });

/** Largest allowed size limit in {@link InspectRules.maxMessageBytes}: 2 GiB (anything above is not a real broker limit). */
const MAX_LIMIT_BYTES = 2 ** 31;

/**
 * A message path as `readMessagePath` (shared/analysis/idempotency.ts) reads it: `id`, or a root
 * `body` / `headers` / `properties` / `meta` followed by `.name` and `[index]` steps (a name has no
 * `.`, `[`, `]`, `{` or `}`; an index has 1–6 digits). `readMessagePath` itself is more lenient
 * (it skips empty steps such as `body..id`); the schema refuses those so a rule reads as written.
 */
const MESSAGE_PATH = /^(?:id|(?:body|headers|properties|meta)(?:\.[^.[\]{}]+|\[\d{1,6}\])*)$/;
/** One step of a {@link MESSAGE_PATH} after its root. */
const PATH_STEP = /\.[^.[\]{}]+|\[\d{1,6}\]/g;
/**
 * Most steps after the root that `readMessagePath` follows: its path parser refuses a path of more
 * than `MAX_BODY_DEPTH + 2` parts (root included), and then reads nothing.
 */
const MAX_PATH_STEPS = MAX_BODY_DEPTH + 1;
const PATH_HINT = 'a path is id or starts with body, headers, properties or meta (e.g. body.order.id, body.items[0].sku, headers.x-key); JSONPath such as $.orderId is not supported';

/** Why `path` (already trimmed) is not a path `readMessagePath` reads; null when it is one. */
function messagePathProblem(path: string): string | null {
  if (!MESSAGE_PATH.test(path)) return `is not a message path: ${PATH_HINT}`;
  const steps = path.match(PATH_STEP)?.length ?? 0;
  if (steps > MAX_PATH_STEPS) return `is too deep: a message path has at most ${String(MAX_PATH_STEPS)} steps after its root (it has ${String(steps)})`;
  return null;
}

/**
 * zod schema of one {@link KeyRule}, as written in `queuescope.config.json`, saved with a
 * connection profile or entered in the app's rule editor. Strings are trimmed; unknown members are
 * refused (a typo must not silently disable a rule); a `jsonPath` and every `{…}` placeholder of a
 * `template` must be a message path that `readMessagePath` reads (not JSONPath: `$.orderId` is
 * refused with a hint); a template needs a placeholder and matched braces. Messages name the
 * offending path so the CLI and the editor can show them as they are.
 */
export const keyRuleSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('header'), name: z.string().trim().min(1).max(256) }).strict(),
  z
    .object({
      kind: z.literal('jsonPath'),
      path: z
        .string()
        .trim()
        .min(1)
        .max(512)
        .superRefine((p, ctx) => {
          const problem = messagePathProblem(p);
          if (problem !== null) ctx.addIssue({ code: 'custom', message: `"${p.slice(0, 80)}" ${problem}` });
        }),
    })
    .strict(),
  z
    .object({
      kind: z.literal('template'),
      template: z
        .string()
        .trim()
        .min(1)
        .max(512)
        .refine((t) => /\{[^{}]+\}/.test(t), 'a template needs at least one {path} placeholder')
        .refine((t) => !/[{}]/.test(t.replace(/\{[^{}]+\}/g, '')), 'a template has an unmatched { or }')
        .superRefine((t, ctx) => {
          for (const m of t.matchAll(/\{([^{}]+)\}/g)) {
            const problem = messagePathProblem((m[1] ?? '').trim());
            if (problem === null) continue;
            ctx.addIssue({ code: 'custom', message: `placeholder ${m[0].slice(0, 80)} ${problem}` });
            return;
          }
        }),
    })
    .strict(),
]);

/** Longest {@link InspectRules.snapshotFields} pattern, characters (after trimming). */
export const MAX_SNAPSHOT_FIELD_CHARS = 256;
/** Most {@link InspectRules.snapshotFields} patterns per rule set; {@link normalizeRules} keeps the first this many valid ones. */
export const MAX_SNAPSHOT_FIELDS = 100;

/**
 * zod schema of one {@link InspectRules.snapshotFields} pattern, the one check for the project
 * file, the connection profiles (shared/config/project-config.ts, also used by `inspect.rules.set`
 * and the app's rule editor), {@link inspectRulesSchema} and {@link normalizeRules}: trimmed, at
 * most {@link MAX_SNAPSHOT_FIELD_CHARS} characters, and a pattern {@link compileSnapshotPattern}
 * reads as written (see {@link snapshotFieldProblem}); the message names the pattern and the
 * supported forms.
 */
export const snapshotFieldSchema = z
  .string()
  .trim()
  .min(1)
  .max(MAX_SNAPSHOT_FIELD_CHARS)
  .superRefine((p, ctx) => {
    const problem = snapshotFieldProblem(p);
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
  });

/** zod schema of a list of {@link snapshotFieldSchema} patterns (at most {@link MAX_SNAPSHOT_FIELDS}). */
export const snapshotFieldsSchema = z.array(snapshotFieldSchema).max(MAX_SNAPSHOT_FIELDS);

/**
 * zod schema of (partial) {@link InspectRules}, the per-queue entries {@link resolveInspectRules}
 * reads. The project file and connection profiles store the same rules in another shape
 * (`inspectQueueConfigSchema` in shared/config/project-config.ts: `match`, `note`…) with the same
 * {@link keyRuleSchema} and {@link snapshotFieldSchema}.
 */
export const inspectRulesSchema = z.object({
  keyRules: z.array(keyRuleSchema).max(50).optional(),
  snapshotFields: snapshotFieldsSchema.optional(),
  queueIsSnapshot: z.boolean().optional(),
  maxMessageBytes: z.number().int().min(1).max(MAX_LIMIT_BYTES).optional(),
});

/** One stored entry: rules for the queues whose name matches `queue` (a glob: `*` any characters, `?` one). */
export const queueRulesEntrySchema = z.object({ queue: z.string().min(1).max(512), rules: inspectRulesSchema });

export type QueueRulesEntry = z.infer<typeof queueRulesEntrySchema>;

/**
 * Fills in and sanitises rules that may come from untrusted JSON: unknown members of the rules are
 * dropped, key rules that {@link keyRuleSchema} refuses (including ones with unknown members) and
 * snapshot-field patterns that {@link snapshotFieldSchema} refuses are skipped (never thrown),
 * defaults fill the rest. Key rules and patterns come back trimmed; the first
 * {@link MAX_SNAPSHOT_FIELDS} valid patterns are kept.
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
  const snapshotFields: string[] = [];
  if (Array.isArray(rules.snapshotFields)) {
    for (const p of rules.snapshotFields as unknown[]) {
      if (snapshotFields.length >= MAX_SNAPSHOT_FIELDS) break;
      if (typeof p !== 'string') continue;
      const t = p.trim();
      if (t.length > 0 && t.length <= MAX_SNAPSHOT_FIELD_CHARS && parsePattern(t).problem === null) snapshotFields.push(t);
    }
  }
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

/** Most segments of a compiled pattern (after `**` runs collapse), and most `**` in one: bounds the matcher's work. */
const MAX_PATTERN_SEGS = 32;
const MAX_PATTERN_GLOBSTARS = 4;
const SNAPSHOT_HINT = 'a pattern names body fields by member names and indexes: order.status, order.* (every field of order), items[*].price (any element), ** (any depth, e.g. **.status), with or without a leading body.; JSONPath such as $.order is not supported';
/** One dot-separated step: a name (or nothing) followed by `[…]` indexes. */
const PATTERN_STEP = /^([^[\]]*)((?:\[[^\]]*\])*)$/;
/** An index a path can hold: `[*]` / `[]` (any) or `[n]` as the walk writes it (no leading zeros). */
const PATTERN_INDEX = /^\[(?:\*|0|[1-9]\d{0,5})?\]$/;

/**
 * Parses a trimmed snapshot-field pattern into matcher segments (a leading `body` dropped, `**`
 * runs collapsed), or says why the matcher cannot read it as written: JSONPath (`$.order`,
 * `a..b`), an empty step (`order.`, `.order`), `*` inside a name (`order*`), an index other than
 * `[*]`, `[]` or `[n]` (`['x']`, `[?(@.a)]`, `[01]`), an unmatched bracket, the bare `body`, or more
 * than {@link MAX_PATTERN_SEGS} steps / {@link MAX_PATTERN_GLOBSTARS} `**`.
 */
function parsePattern(p: string): { segs: string[]; problem: null } | { segs: null; problem: string } {
  const bad = (why: string): { segs: null; problem: string } => ({ segs: null, problem: `"${p.slice(0, 80)}" is not a snapshot field pattern (${why}): ${SNAPSHOT_HINT}` });
  if (p.length === 0) return bad('it is empty');
  if (/^\$(?:[.[]|$)/.test(p)) return bad('it starts with $, as JSONPath does');
  const segs: string[] = [];
  for (const part of p.split('.')) {
    if (part.length === 0) return bad(p.includes('..') ? 'it has an empty step: .. is JSONPath; ** matches any depth' : 'it has an empty step: a leading or trailing .');
    const m = PATTERN_STEP.exec(part);
    if (m === null) return bad(`the step "${part.slice(0, 40)}" has an unmatched [ or ]`);
    const name = m[1] ?? '';
    if (name.includes('*') && name !== '*' && name !== '**') return bad(`the step "${part.slice(0, 40)}" has * inside a name: * (one step) and ** (any depth) stand alone`);
    if (name.length > 0) segs.push(name);
    for (const idx of (m[2] ?? '').match(/\[[^\]]*\]/g) ?? []) {
      if (!PATTERN_INDEX.test(idx)) return bad(`the index ${idx.slice(0, 40)} is not [*], [] or a number [n]`);
      segs.push(idx === '[*]' || idx === '[]' ? '[]' : idx);
    }
  }
  if (segs[0] === 'body') segs.shift();
  const collapsed = segs.filter((s, i) => !(s === '**' && segs[i - 1] === '**'));
  if (collapsed.length === 0) return bad('it names the whole body: ** marks every field');
  if (collapsed.length > MAX_PATTERN_SEGS) return bad(`it has more than ${String(MAX_PATTERN_SEGS)} steps`);
  if (collapsed.filter((s) => s === '**').length > MAX_PATTERN_GLOBSTARS) return bad(`it has more than ${String(MAX_PATTERN_GLOBSTARS)} **`);
  return { segs: collapsed, problem: null };
}

/**
 * Why a snapshot-field pattern cannot match anything as {@link compileSnapshotPattern} reads it
 * (the message names the pattern and the supported forms: `order.*`, `items[*].price`, `**`);
 * null when it is a valid pattern. Never throws.
 *
 * @param pattern the pattern; surrounding whitespace is ignored.
 */
export function snapshotFieldProblem(pattern: string): string | null {
  if (typeof pattern !== 'string') return 'a snapshot field pattern is a string';
  return parsePattern(pattern.trim()).problem;
}

/**
 * Splits `order.items[*].sku` / `body.order.*` into matcher segments; drops a leading `body`.
 * Null when {@link snapshotFieldProblem} refuses the pattern (JSONPath, empty steps, `*` inside a
 * name, other indexes, the bare `body`, too many steps). Never throws.
 */
export function compileSnapshotPattern(source: string): SnapshotPattern | null {
  if (typeof source !== 'string') return null;
  const trimmed = source.trim();
  const r = parsePattern(trimmed);
  return r.segs === null ? null : { source: trimmed, segs: r.segs };
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
