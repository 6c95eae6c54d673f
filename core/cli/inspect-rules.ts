import { existsSync } from 'node:fs';
import { describeConnection } from '../../shared/domain';
import { loadProjectConfig, type LoadedProjectConfig } from '../config/project-file';
import { resolveInspectSettings, type InspectSettingsSource, type ResolvedInspectRules } from '../inspect/settings';
import { ProfileStore, defaultConfigDir } from '../services/profile-store';
import type { CliContext } from './context';
import { escapeForTerminal } from './format';
import { projectFileNote, type ResolvedConnection } from './resolve-config';

/**
 * The project file of a command that uses inspect rules (`inspect`, `redrive`): `configPath`
 * (`--config`, relative to the working folder; it must exist) when given, else the first
 * queuescope.config.json/.yaml found upward from `ctx.cwd`, else none (`path: null`, defaults).
 * When the file was found upward and other project files in its folder are ignored, a note
 * naming them goes to stderr.
 * @throws QueuescopeError `INVALID_INPUT` as {@link loadProjectConfig} (missing explicit file,
 *   unreadable or too large file, invalid contents).
 */
export async function loadCliProjectConfig(ctx: CliContext, configPath?: string): Promise<LoadedProjectConfig> {
  const project = await loadProjectConfig({ cwd: ctx.cwd, ...(configPath !== undefined ? { explicitPath: configPath } : {}) });
  const fileNote = configPath === undefined ? projectFileNote(project.path, existsSync) : null;
  if (fileNote !== null) ctx.err(`${escapeForTerminal(fileNote)}\n`);
  return project;
}

/**
 * The inspect rules (idempotency-key rules, snapshot fields, size limit) the CLI applies to queue
 * `q`, and where they came from: the first entry matching the queue in the project file
 * (`project`, from {@link loadCliProjectConfig}), else in the inspect settings saved with the
 * connection when it is a saved profile (`--profile`; invalid saved settings are ignored with a
 * warning on stderr), else the built-in rules (`source` "built-in rules"). See
 * {@link resolveInspectSettings}. The app resolves the same settings in the other order (the
 * connection's first).
 * @throws QueuescopeError when the profile store cannot be read (as `ProfileStore.open`).
 */
export async function resolveCliInspectSettings(ctx: CliContext, project: LoadedProjectConfig, resolved: ResolvedConnection, q: { name: string; id: string }): Promise<ResolvedInspectRules> {
  const sources: InspectSettingsSource[] = [{ label: project.path ?? 'project file', inspect: project.path === null ? null : project.config.inspect }];
  if (resolved.profile !== undefined) {
    const store = await ProfileStore.open({ configDir: defaultConfigDir(ctx.io.env), readOnly: true });
    const saved = store.inspectSettings(resolved.profile.id);
    if (saved.problem !== null) ctx.err(`warning: ${escapeForTerminal(saved.problem)}\n`);
    sources.push({ label: `connection "${resolved.profile.name}"`, inspect: saved.settings });
  }
  const connectionName = resolved.profile?.name ?? describeConnection(resolved.config);
  return resolveInspectSettings(sources, q, connectionName);
}
