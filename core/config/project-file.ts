import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { QueuescopeError } from '../../shared/domain';
import { PROJECT_CONFIG_FILE_NAMES, defaultProjectConfig, validateProjectConfig, type ProjectConfig } from '../../shared/config/project-config';

/** Largest project file read (bytes); a bigger one is refused rather than parsed. */
export const MAX_PROJECT_FILE_BYTES = 1024 * 1024;

/** A loaded project file: the validated config and where it came from (null path = defaults, no file found). */
export interface LoadedProjectConfig {
  config: ProjectConfig;
  path: string | null;
}

/**
 * Finds the project file: each of {@link PROJECT_CONFIG_FILE_NAMES} in `startDir`, then in each
 * parent folder up to the file system root. Returns the first path found, or null.
 */
export function findProjectConfig(startDir: string): string | null {
  let dir = resolve(startDir);
  for (;;) {
    for (const name of PROJECT_CONFIG_FILE_NAMES) {
      const candidate = join(dir, name);
      if (existsSync(candidate)) return candidate;
    }
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/**
 * Parses and validates project-file text. JSON for `.json` names, YAML (1.2, via the `yaml`
 * package; JSON is valid YAML) otherwise.
 * @throws QueuescopeError `INVALID_INPUT` naming the file, the line for syntax errors, and every
 *   invalid setting by its path (e.g. `audit.suppress[0].reason: a suppression needs a written reason`).
 */
export function parseProjectConfig(text: string, path: string): ProjectConfig {
  let value: unknown;
  if (path.toLowerCase().endsWith('.json')) {
    try {
      value = JSON.parse(text) as unknown;
    } catch (e) {
      throw new QueuescopeError('INVALID_INPUT', `${path} is not valid JSON: ${e instanceof Error ? e.message : String(e)}.`, { path });
    }
  } else {
    const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
    const first = doc.errors[0];
    if (first !== undefined) {
      const line = first.linePos?.[0].line;
      throw new QueuescopeError('INVALID_INPUT', `${path} is not valid YAML${line !== undefined ? ` (line ${String(line)})` : ''}: ${(first.message.split('\n')[0] ?? first.message).replace(/:$/, '')}.`, { path });
    }
    try {
      value = doc.toJS({ maxAliasCount: 100 }) as unknown;
    } catch (e) {
      // e.g. "Excessive alias count indicates a resource exhaustion attack" (nested aliases, a "YAML bomb").
      throw new QueuescopeError('INVALID_INPUT', `${path} cannot be used as YAML: ${e instanceof Error ? e.message : String(e)} (at most 100 alias expansions).`, { path });
    }
  }
  if (value === null || value === undefined) value = {};
  const r = validateProjectConfig(value);
  if (!r.ok) {
    const list = r.issues.slice(0, 10).map((i) => `${i.path}: ${i.message}`);
    const more = r.issues.length > 10 ? ` (and ${String(r.issues.length - 10)} more)` : '';
    throw new QueuescopeError('INVALID_INPUT', `${path} has invalid settings: ${list.join('; ')}${more}.`, { path, issues: r.issues });
  }
  return r.config;
}

/**
 * Loads the project file: `explicitPath` (relative to `cwd`) when given — it must exist — else
 * the first one found upward from `cwd`, else the defaults.
 * @throws QueuescopeError `INVALID_INPUT` for a missing explicit file, an unreadable or too large
 *   file, or invalid contents (see {@link parseProjectConfig}).
 */
export async function loadProjectConfig(options: { cwd: string; explicitPath?: string }): Promise<LoadedProjectConfig> {
  const path = options.explicitPath !== undefined ? resolve(options.cwd, options.explicitPath) : findProjectConfig(options.cwd);
  if (path === null) return { config: defaultProjectConfig(), path: null };
  let text: string;
  try {
    const buf = await readFile(path);
    if (buf.byteLength > MAX_PROJECT_FILE_BYTES) throw new QueuescopeError('INVALID_INPUT', `${path} is larger than ${String(MAX_PROJECT_FILE_BYTES)} bytes; is it the right file?`, { path });
    text = buf.toString('utf8');
  } catch (e) {
    if (e instanceof QueuescopeError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    throw new QueuescopeError('INVALID_INPUT', code === 'ENOENT' ? `The config file ${path} does not exist.` : `Cannot read the config file ${path}: ${e instanceof Error ? e.message : String(e)}.`, { path });
  }
  return { config: parseProjectConfig(text, path), path };
}
