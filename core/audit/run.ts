/**
 * Runs an audit: loads the project file's `audit` section and the measurements file, collects
 * facts through each adapter's `audit` collector, and evaluates the rule catalog (shared/audit).
 * Used by the CLI (`queuescope audit`) and the app (API `audit.run`).
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { QueuescopeError } from '../../shared/domain';
import { matchesQueuePattern, type ProjectConfig } from '../../shared/config/project-config';
import { checkAuditConfig, evaluateAudit, parseMeasurements, similarNames, type AuditFacts, type AuditReport, type Measurements } from '../../shared/audit';
import type { BrokerAdapter } from '../adapters/types';
import { loadProjectConfig } from '../config/project-file';

/** Largest measurements file read, bytes. */
export const MAX_MEASUREMENTS_BYTES = 16 * 1024 * 1024;

/**
 * Reads a measurements file (JSON; see `shared/audit/measurements.ts` for the accepted shapes).
 * @throws QueuescopeError `INVALID_INPUT` for a missing, unreadable, too large or non-JSON file, or one
 *   with no usable entry.
 */
export async function loadMeasurements(path: string): Promise<{ measurements: Measurements; problems: string[] }> {
  let text: string;
  try {
    const buf = await readFile(path);
    if (buf.byteLength > MAX_MEASUREMENTS_BYTES) throw new QueuescopeError('INVALID_INPUT', `The measurements file ${path} is larger than ${String(MAX_MEASUREMENTS_BYTES)} bytes.`, { path });
    text = buf.toString('utf8');
  } catch (e) {
    if (e instanceof QueuescopeError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    throw new QueuescopeError('INVALID_INPUT', code === 'ENOENT' ? `The measurements file ${path} does not exist.` : `Cannot read the measurements file ${path}: ${e instanceof Error ? e.message : String(e)}.`, { path });
  }
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (e) {
    throw new QueuescopeError('INVALID_INPUT', `The measurements file ${path} is not valid JSON: ${e instanceof Error ? e.message : String(e)}.`, { path });
  }
  const r = parseMeasurements(value);
  if (r.measurements.size === 0) throw new QueuescopeError('INVALID_INPUT', `The measurements file ${path} has no usable measurement: ${r.problems.slice(0, 5).join('; ') || 'it is empty'}.`, { path, problems: r.problems });
  return r;
}

/** Options of {@link runAudit}. */
export interface RunAuditOptions {
  /** Folder the project file is searched from (upward) and relative paths resolve against. */
  cwd: string;
  /** An explicit project file (`--config`). */
  configPath?: string;
  /** An already loaded project config (skips loading). */
  config?: { config: ProjectConfig; path: string | null };
  /** `--queues PATTERN`: only queues matching (also passed to the collectors). */
  queuePattern?: string;
  /** A measurements file, overriding the project file's `audit.measurements`. */
  measurementsPath?: string;
  /** SQS: messages received per queue for the payload/deduplication rules (0 = off). */
  sampleMessages?: number;
  now?: number;
}

/**
 * Audits the connections of `adapters`.
 * @throws QueuescopeError `INVALID_INPUT` for a bad project file (every problem by path) or
 *   measurements file, `QUEUE_NOT_FOUND` when `--queues` / `audit.queues` select no queue (with
 *   similar names; a pattern of `audit.queues` that matches nothing while others do is a note), `UNSUPPORTED` for a connection without an audit collector (snapshots), and
 *   the collectors' connection errors.
 */
export async function runAudit(adapters: BrokerAdapter[], options: RunAuditOptions, signal?: AbortSignal): Promise<AuditReport> {
  const loaded = options.config ?? (await loadProjectConfig({ cwd: options.cwd, ...(options.configPath !== undefined ? { explicitPath: options.configPath } : {}) }));
  const issues = checkAuditConfig(loaded.config.audit);
  if (issues.length > 0) {
    throw new QueuescopeError('INVALID_INPUT', `${loaded.path ?? 'The project config'} has invalid audit settings: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}.`, { path: loaded.path, issues });
  }
  const mPath = options.measurementsPath ?? loaded.config.audit.measurements;
  // A measurements path from the project file is relative to the file's folder.
  const base = options.measurementsPath === undefined && loaded.path !== null ? resolve(loaded.path, '..') : options.cwd;
  const absM = mPath === undefined ? null : resolve(base, mPath);
  const m = absM === null ? { measurements: new Map() as Measurements, problems: [] as string[] } : await loadMeasurements(absM);
  const facts: AuditFacts[] = [];
  for (const a of adapters) {
    if (!a.audit) throw new QueuescopeError('UNSUPPORTED', `A ${a.broker} connection cannot be audited: the audit reads live broker configuration (snapshots do not hold it).`);
    facts.push(await a.audit.collect({ ...(options.queuePattern !== undefined ? { pattern: options.queuePattern } : {}), ...(options.sampleMessages !== undefined ? { sampleMessages: options.sampleMessages } : {}) }, signal));
  }
  const report = evaluateAudit(facts, {
    config: loaded.config.audit,
    measurements: m.measurements,
    ...(options.queuePattern !== undefined ? { queuePatterns: [options.queuePattern] } : {}),
    safetyFactor: loaded.config.tune.safetyFactor,
    now: options.now ?? Date.now(),
    configPath: loaded.path,
    measurementsPath: absM,
    notes: m.problems.map((p) => `measurements: ${p}`),
  });
  if (report.queues.length === 0) await throwNoQueueMatched(adapters, facts, options.queuePattern, loaded.config.audit.queues, loaded.path, signal);
  // A config pattern that matched nothing while others did: a warning (a typo, or a queue on another connection).
  const unmatched = (loaded.config.audit.queues ?? []).filter((p) => !facts.some((f) => f.queues.some((q) => matchesQueuePattern(p, q.name) || matchesQueuePattern(p, q.id))));
  if (unmatched.length > 0) report.notes.push(`audit.queues patterns that match no queue on ${facts.map((f) => f.label).join(', ')}: ${unmatched.slice(0, 20).map((p) => `"${p}"`).join(', ')}${unmatched.length > 20 ? ` and ${String(unmatched.length - 20)} more` : ''} (a typo, or queues of another connection)`);
  return report;
}

/**
 * The selection (`--queues` AND the project file's `audit.queues`) matched no queue, or — with
 * no pattern — the connections hold no queue to audit (an empty vhost or Redis, only Redis lists): a
 * typo'd pattern or a wrong vhost must not pass a release gate on the server-level rules alone.
 * @throws QueuescopeError `QUEUE_NOT_FOUND` naming the pattern(s) and up to 5 similar queue names.
 */
async function throwNoQueueMatched(adapters: BrokerAdapter[], facts: AuditFacts[], cliPattern: string | undefined, configPatterns: string[] | undefined, configPath: string | null, signal?: AbortSignal): Promise<never> {
  // The collectors already applied --queues: list every queue for the suggestions.
  let names = facts.flatMap((f) => f.queues.map((q) => q.name));
  /** Queues --queues matches that the collectors have nothing to audit on (Redis lists: no configuration). */
  const unauditable: string[] = [];
  if (cliPattern !== undefined) {
    names = [];
    for (const a of adapters) {
      for (const q of await a.listQueues({}, signal).catch(() => [])) {
        names.push(q.name);
        if (matchesQueuePattern(cliPattern, q.name) || matchesQueuePattern(cliPattern, q.id)) unauditable.push(`${q.name} (${q.kind})`);
      }
    }
  }
  const labels = facts.map((f) => f.label).join(', ');
  if (unauditable.length > 0 && !facts.some((f) => f.queues.length > 0)) {
    throw new QueuescopeError(
      'QUEUE_NOT_FOUND',
      `--queues "${cliPattern ?? ''}" matches only queues with no configuration to audit on ${labels}: ${unauditable.slice(0, 5).join(', ')}${unauditable.length > 5 ? ` and ${String(unauditable.length - 5)} more` : ''} (a Redis list has no settings; its dead-lettering is the worker's code). Nothing was audited.`,
      { pattern: cliPattern, unauditable },
    );
  }
  if (cliPattern === undefined && (configPatterns === undefined || configPatterns.length === 0)) {
    // No pattern selected anything away: the connections hold nothing the audit can check (an empty vhost or Redis, only Redis lists).
    const held: string[] = [];
    for (const a of adapters) for (const q of await a.listQueues({}, signal).catch(() => [])) held.push(`${q.name} (${q.kind})`);
    const why =
      held.length === 0
        ? `${facts.length === 1 ? 'it has' : 'they have'} no queues`
        : `${facts.length === 1 ? 'it holds' : 'they hold'} only queues with no configuration to audit: ${held.slice(0, 5).join(', ')}${held.length > 5 ? ` and ${String(held.length - 5)} more` : ''} (a Redis list has no settings; its dead-lettering is the worker's code)`;
    throw new QueuescopeError('QUEUE_NOT_FOUND', `No queue to audit on ${labels}: ${why}. Nothing was audited (server-level checks alone are not a pass).`, { unauditable: held });
  }
  // Blame only what emptied the selection: --queues alone when it matched nothing (the collectors applied it), else the config's patterns too.
  const cliMatchedSome = cliPattern !== undefined && facts.some((f) => f.queues.length > 0);
  const blameConfig = configPatterns !== undefined && configPatterns.length > 0 && (cliPattern === undefined || cliMatchedSome);
  const what: string[] = [];
  if (cliPattern !== undefined) what.push(`--queues "${cliPattern}"`);
  if (blameConfig) what.push(`audit.queues ${configPatterns.slice(0, 10).map((p) => `"${p}"`).join(', ')}${configPatterns.length > 10 ? ` and ${String(configPatterns.length - 10)} more` : ''}${configPath !== null ? ` (${configPath})` : ''}`);
  const similar = [...new Set([...(cliPattern !== undefined ? [cliPattern] : []), ...(blameConfig ? configPatterns : [])].flatMap((p) => similarNames(p, names)))].slice(0, 5);
  const hint = names.length === 0 ? ' (it has no queues)' : similar.length > 0 ? `; similar: ${similar.join(', ')}` : `; it has ${String(names.length)} queue${names.length === 1 ? '' : 's'}, e.g. ${names.slice(0, 3).join(', ')}`;
  throw new QueuescopeError('QUEUE_NOT_FOUND', `No queue matches ${what.join(' and ')} on ${labels}${hint}. Nothing was audited (server-level checks alone are not a pass).`, {
    ...(cliPattern !== undefined ? { pattern: cliPattern } : {}),
    ...(configPatterns !== undefined ? { configPatterns } : {}),
    similar,
  });
}
