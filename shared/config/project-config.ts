import { z } from 'zod';
import { keyRuleSchema, snapshotFieldsSchema } from '../analysis/rules';

/**
 * The project file a team checks in next to its code: `queuescope.config.json` (or `.yaml` /
 * `.yml`). The CLI reads it (found upward from the current folder, or `--config FILE`); the app
 * can load it for a connection. One file, one section per feature:
 *
 * ```json
 * {
 *   "version": 1,
 *   "inspect": { "queues": [{ "match": "orders*", "keyRules": [{ "kind": "template", "template": "{body.orderId}:{body.operation}" }] }] },
 *   "audit":   { "severity": { "sqs.short-polling": "off" },
 *                "suppress": [{ "rule": "rabbitmq.no-dead-letter-exchange", "queue": "audit.log", "reason": "fire-and-forget log stream" }] },
 *   "tune":    { "safetyFactor": 3 }
 * }
 * ```
 *
 * Unknown keys are refused (a typo must not silently disable a check). Pure: parsing of the text
 * happens in `core/config/project-file.ts`; this module only validates the parsed value.
 */

/** Current version of the file format. */
export const PROJECT_CONFIG_VERSION = 1;

/** File names looked for, in this order, in each folder from the current one upward. */
export const PROJECT_CONFIG_FILE_NAMES = ['queuescope.config.json', 'queuescope.config.yaml', 'queuescope.config.yml'] as const;

/**
 * A queue-name pattern: `*` matches any run of characters, everything else is literal; matched
 * against the queue's name and its id (case-sensitive). `"*"` matches every queue.
 */
export const queuePatternSchema = z.string().trim().min(1).max(512);

/** Inspect settings for the queues whose name matches `match` (the first matching entry wins). */
export const inspectQueueConfigSchema = z
  .object({
    match: queuePatternSchema,
    /** Only for this connection (a saved connection's name, or a URL without credentials); absent = any. */
    connection: z.string().trim().min(1).max(512).optional(),
    /** Tried before the built-in key rules, in order; validated by `keyRuleSchema` (shared/analysis/rules.ts), the one definition of a valid key rule. */
    keyRules: z.array(keyRuleSchema).max(50).default([]),
    /** Body paths (`order.*`, `items[*].price`, `**.status`) that are intentional point-in-time snapshots; validated by `snapshotFieldSchema` (shared/analysis/rules.ts), the check the analysis applies (JSONPath such as `$.order` is refused). */
    snapshotFields: snapshotFieldsSchema.default([]),
    /** The whole queue carries intentional snapshots (e.g. an event log): payloads are not flagged. */
    queueIsSnapshot: z.boolean().default(false),
    /** Payload size limit in bytes, when the broker's own is not known (SQS: the queue's MaximumMessageSize). */
    maxMessageBytes: z.number().int().positive().max(2 ** 31).optional(),
    /** Why (shown beside the verdicts). */
    note: z.string().max(1000).optional(),
  })
  .strict();

export const inspectConfigSchema = z.object({ queues: z.array(inspectQueueConfigSchema).max(1000).default([]) }).strict();

/** Severities of audit findings; `off` disables a rule. */
export const auditSeveritySchema = z.enum(['error', 'warning', 'info', 'off']);

export const auditConfigSchema = z
  .object({
    /** Only audit queues matching one of these patterns (default: all). */
    queues: z.array(queuePatternSchema).max(1000).optional(),
    /** Per-rule severity override, by rule id. */
    severity: z.record(z.string().min(1).max(128), auditSeveritySchema).default({}),
    /** Per-rule thresholds, by rule id (each rule documents and validates its own). */
    thresholds: z.record(z.string().min(1).max(128), z.record(z.string().min(1).max(128), z.union([z.number(), z.string().max(256), z.boolean()]))).default({}),
    /** Findings to suppress, each with a written reason (reported as suppressed, not hidden). */
    suppress: z
      .array(
        z
          .object({
            rule: z.string().trim().min(1).max(128),
            queue: queuePatternSchema,
            reason: z.string().trim().min(3, 'a suppression needs a written reason').max(1000),
          })
          .strict(),
      )
      .max(1000)
      .default([]),
    /** A measurements file (from `queuescope tune --json`) used by rules that compare against processing time. */
    measurements: z.string().trim().min(1).max(4096).optional(),
  })
  .strict();

export const tuneConfigSchema = z
  .object({
    /** Recommended timeout = p99 × safetyFactor. */
    safetyFactor: z.number().min(1).max(100).default(3),
  })
  .strict();

export const projectConfigSchema = z
  .object({
    /** Editors' JSON schema hint; ignored. */
    $schema: z.string().max(4096).optional(),
    version: z.literal(PROJECT_CONFIG_VERSION).default(PROJECT_CONFIG_VERSION),
    inspect: inspectConfigSchema.default({ queues: [] }),
    audit: auditConfigSchema.default({ severity: {}, thresholds: {}, suppress: [] }),
    tune: tuneConfigSchema.default({ safetyFactor: 3 }),
  })
  .strict();

/** A validated project file, defaults filled in. */
export type ProjectConfig = z.output<typeof projectConfigSchema>;
export type InspectQueueConfig = z.output<typeof inspectQueueConfigSchema>;
export type AuditConfig = z.output<typeof auditConfigSchema>;

/** One problem in a project file: where (`audit.suppress[2].reason`) and what. */
export interface ProjectConfigIssue {
  path: string;
  message: string;
}

/** The defaults, as if an empty file `{}` had been read. */
export function defaultProjectConfig(): ProjectConfig {
  return projectConfigSchema.parse({});
}

/**
 * Validates a parsed project file. Never throws.
 * @returns the config with defaults, or every problem found (path + message).
 */
export function validateProjectConfig(value: unknown): { ok: true; config: ProjectConfig } | { ok: false; issues: ProjectConfigIssue[] } {
  const r = projectConfigSchema.safeParse(value);
  if (r.success) return { ok: true, config: r.data };
  return {
    ok: false,
    issues: r.error.issues.map((i) => ({
      path: i.path.map((p, n) => (typeof p === 'number' ? `[${String(p)}]` : `${n === 0 ? '' : '.'}${String(p)}`)).join('') || '(top level)',
      message: i.message,
    })),
  };
}

/** True when `name` matches the queue pattern (see {@link queuePatternSchema}). */
export function matchesQueuePattern(pattern: string, name: string): boolean {
  if (pattern === '*') return true;
  if (!pattern.includes('*')) return pattern === name;
  const parts = pattern.split('*');
  const first = parts[0] ?? '';
  const last = parts[parts.length - 1] ?? '';
  if (!name.startsWith(first) || name.length < first.length + last.length || !name.endsWith(last)) return false;
  let at = first.length;
  const end = name.length - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i] ?? '';
    const found = name.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/**
 * The inspect settings for a queue: the first `inspect.queues` entry whose `match` matches the
 * queue's name or id (and whose `connection`, when set, equals `connectionName`); null when none.
 */
export function inspectSettingsFor(config: ProjectConfig, queue: { name: string; id: string }, connectionName?: string): InspectQueueConfig | null {
  for (const entry of config.inspect.queues) {
    if (entry.connection !== undefined && entry.connection !== connectionName) continue;
    if (matchesQueuePattern(entry.match, queue.name) || matchesQueuePattern(entry.match, queue.id)) return entry;
  }
  return null;
}
