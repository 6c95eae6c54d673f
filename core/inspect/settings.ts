import { inspectSettingsFor, type InspectQueueConfig, type ProjectConfig } from '../../shared/config/project-config';

/** Where inspect settings can come from, in the order they are consulted. */
export interface InspectSettingsSource {
  /** Shown in reports, e.g. `queuescope.config.json (/repo/queuescope.config.json)` or `connection "Local"`. */
  label: string;
  /** The `inspect` section (project file or connection profile); null when the source has none. */
  inspect: ProjectConfig['inspect'] | null;
}

/** The analysis rules for one queue, and where they came from. */
export interface ResolvedInspectRules {
  /** Rules in the shape `analyzeMessage`/`createQueueSummary` take (`options.rules`). */
  rules: {
    keyRules: InspectQueueConfig['keyRules'];
    snapshotFields: string[];
    queueIsSnapshot: boolean;
    maxMessageBytes?: number;
  };
  /** The matching entry's pattern and source, e.g. `orders* in queuescope.config.json`; `built-in rules` when nothing matched. */
  source: string;
  /** The entry's note, when it has one. */
  note: string | null;
  /** The matching entry as written (null when none matched). */
  entry: InspectQueueConfig | null;
}

/**
 * Picks a queue's inspect settings: the first source (in the order given) with an entry matching
 * the queue's name or id (see `inspectSettingsFor`; an entry with `connection` applies only to that
 * connection). The CLI passes the project file first and the saved connection second; the app
 * passes the connection's saved settings first and the project file second.
 * With no match: the built-in key rules only, no snapshot fields, the broker's default size limit.
 */
export function resolveInspectSettings(sources: readonly InspectSettingsSource[], queue: { name: string; id: string }, connectionName?: string): ResolvedInspectRules {
  for (const s of sources) {
    if (s.inspect === null) continue;
    const entry = inspectSettingsFor({ inspect: s.inspect } as ProjectConfig, queue, connectionName);
    if (entry === null) continue;
    return {
      rules: {
        keyRules: entry.keyRules,
        snapshotFields: entry.snapshotFields,
        queueIsSnapshot: entry.queueIsSnapshot,
        ...(entry.maxMessageBytes !== undefined ? { maxMessageBytes: entry.maxMessageBytes } : {}),
      },
      source: `"${entry.match}" in ${s.label}`,
      note: entry.note ?? null,
      entry,
    };
  }
  return { rules: { keyRules: [], snapshotFields: [], queueIsSnapshot: false }, source: 'built-in rules', note: null, entry: null };
}
