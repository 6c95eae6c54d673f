import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, parse, resolve } from 'node:path';
import type { z } from 'zod';
import { apiInputSchemas, suggestedSnapshotName, type ApiHandlers, type ApiMethod, type ApiResult } from '../../shared/api/contract';
import {
  QueuescopeError,
  describeConnection,
  redactSecrets,
  redactValue,
  toErrorInfo,
  type ConnectionConfig,
  type ConnectionTestResult,
  type ErrorInfo,
} from '../../shared/domain';
import type { BrokerAdapter } from '../adapters/types';
import type { ConnectionManager } from './connection-manager';
import { assertPeekAllowed, exportQueue } from './export';
import type { OperationManager } from './operations';
import { createInspectHandlers } from '../inspect/api-handlers';
import { createAuditHandlers } from '../audit/api-handlers';
import { createTuningHandlers } from '../tuning/api-handlers';
import { createRedriveHandlers } from '../redrive/api-handlers';
import { DlqWatchManager, createWatchHandlers } from './dlq-watch-manager';

/** File dialogs, provided by the runtime (Electron `dialog`, or the browser bridge's own). */
export interface ApiDialogs {
  /** Asks where to save a snapshot; `suggestedName` is a file name like `payments-failed-2026-11-29.jsonl`. Null = cancelled. */
  pickSnapshotSavePath(suggestedName: string): Promise<string | null>;
  /** Asks for a snapshot file to open. Null = cancelled. */
  pickSnapshotOpenPath(): Promise<string | null>;
}

/** What the handlers need. */
export interface ApiDeps {
  connections: ConnectionManager;
  operations: OperationManager;
  dialogs: ApiDialogs;
  runtime: 'electron' | 'web';
  /** App version (package.json). */
  version: string;
  /**
   * Web runtime: the default export folder, read at each call (reported as `AppInfo.defaultExportDir`;
   * relative typed paths resolve against it). Absent: null, and relative paths resolve against the
   * process's current directory.
   */
  defaultExportDir?: () => string | null;
  /** DLQ alerts (`watch.*`); default: one kept in the profile store's folder, started on the first `watch.*` call. */
  watch?: DlqWatchManager;
}

export { suggestedSnapshotName };

/**
 * A file path in `dir` for `name` that does not exist yet: `name`, else `name-1`, `name-2`…
 * (before the extension), so an export never overwrites an earlier one.
 */
export function freshPath(dir: string, name: string): string {
  const { name: stem, ext } = parse(name);
  let candidate = join(dir, name);
  for (let i = 1; existsSync(candidate); i++) candidate = join(dir, `${stem}-${i}${ext}`);
  return candidate;
}

/** `~` / `~/x` expanded to the home folder, then resolved against `base` (or the current directory) when relative. */
function resolveTypedPath(typed: string, base: string | null): string {
  const p = typed === '~' ? homedir() : typed.startsWith('~/') ? join(homedir(), typed.slice(2)) : typed;
  return isAbsolute(p) ? resolve(p) : resolve(base ?? process.cwd(), p);
}

async function statOrNull(path: string): Promise<Awaited<ReturnType<typeof stat>> | null> {
  try {
    return await stat(path);
  } catch {
    return null;
  }
}

/**
 * The file an export typed as `typed` writes: resolved as in {@link resolveTypedPath}; an existing
 * folder gets `suggestedName`; an existing file gets a fresh `-1`, `-2`… name ({@link freshPath}).
 * @throws QueuescopeError `INVALID_INPUT` when the parent folder does not exist or is not a folder.
 */
export async function resolveExportPath(typed: string, suggestedName: string, base: string | null): Promise<string> {
  let target = resolveTypedPath(typed, base);
  if ((await statOrNull(target))?.isDirectory() === true) target = join(target, suggestedName);
  const parent = dirname(target);
  const parentStat = await statOrNull(parent);
  if (parentStat === null) throw new QueuescopeError('INVALID_INPUT', `The folder ${parent} does not exist; choose an existing folder to export to.`, { path: target });
  if (!parentStat.isDirectory()) throw new QueuescopeError('INVALID_INPUT', `${parent} is not a folder; choose an existing folder to export to.`, { path: target });
  return freshPath(parent, basename(target));
}

/**
 * The snapshot file typed as `typed`, resolved as in {@link resolveTypedPath}.
 * @throws QueuescopeError `INVALID_INPUT` when nothing is there or it is a folder.
 */
export async function resolveOpenPath(typed: string, base: string | null): Promise<string> {
  const target = resolveTypedPath(typed, base);
  const st = await statOrNull(target);
  if (st === null) throw new QueuescopeError('INVALID_INPUT', `There is no file at ${target}; enter the full path of a .jsonl snapshot on the machine running Queuescope.`, { path: target });
  if (st.isDirectory()) throw new QueuescopeError('INVALID_INPUT', `${target} is a folder; enter the path of a .jsonl snapshot file in it.`, { path: target });
  return target;
}

const DESKTOP_PATH_REFUSED = 'A file path cannot be passed to the desktop app: paths come from the file dialog in the desktop app.';

/**
 * The handlers for every method of `shared/api/contract.ts`, shared by Electron main and the
 * browser bridge. Inputs arrive already validated by {@link dispatchApi}.
 *
 * Notable behaviour:
 * - `connections.test` never throws for broker failures: they are in the result (an invalid
 *   config is a failed result too). Testing `{ id }` uses a fresh adapter, so a stale cached
 *   connection does not hide a problem.
 * - `snapshots.export` checks `PEEK_REFUSED` before showing the save dialog, then starts an
 *   `export` operation and returns its first snapshot (null when the dialog was cancelled).
 * - A `path` in `snapshots.export` / `snapshots.open` is refused (`INVALID_INPUT`) in the
 *   `electron` runtime (paths come from its native dialogs); in `web` it replaces the dialog
 *   ({@link resolveExportPath}: parent must exist, never overwrites; {@link resolveOpenPath}: must exist).
 * - `snapshots.open` adds the file as a session connection and indexes it once, so a bad file
 *   is reported (`SNAPSHOT_INVALID` with line and field) at open and not kept.
 */
export function createApiHandlers(deps: ApiDeps): ApiHandlers {
  const { connections, operations, dialogs } = deps;
  const testConfig = async (config: ConnectionConfig): Promise<ConnectionTestResult> => {
    let adapter: BrokerAdapter | null = null;
    try {
      adapter = connections.createTransientAdapter(config);
      return await adapter.testConnection();
    } catch (e) {
      return { ok: false, server: null, checks: [], error: toErrorInfo(e) };
    } finally {
      await adapter?.close().catch(() => undefined);
    }
  };

  return {
    'app.info': () =>
      Promise.resolve({
        version: deps.version,
        runtime: deps.runtime,
        demoConnectionId: connections.demoConnectionId(),
        warnings: connections.problems.map((p) => p.message),
        pathInput: deps.runtime === 'web',
        defaultExportDir: deps.runtime === 'web' ? (deps.defaultExportDir?.() ?? null) : null,
      }),
    'connections.list': () => Promise.resolve(connections.list()),
    'connections.save': (input) => connections.save(input.id === undefined ? { name: input.name, config: input.config } : { id: input.id, name: input.name, config: input.config }),
    'connections.remove': async (input) => ({ removed: await connections.remove(input.id) }),
    'connections.test': (input) => {
      if ('id' in input) {
        let config: ConnectionConfig;
        try {
          config = connections.config(input.id);
        } catch (e) {
          return Promise.reject(e instanceof Error ? e : new Error(String(e)));
        }
        return testConfig(config);
      }
      return testConfig(input.config);
    },
    'queues.list': (input) => connections.adapter(input.connectionId).listQueues(input.pattern === undefined ? {} : { pattern: input.pattern }),
    'queues.get': (input) => connections.adapter(input.connectionId).getQueue(input.queueId),
    'messages.peek': (input) => {
      const { cursor, ...rest } = input.options;
      return connections.adapter(input.connectionId).peek(input.queueId, cursor === undefined ? rest : { ...rest, cursor });
    },
    'snapshots.export': async (input) => {
      if (input.path !== undefined && deps.runtime === 'electron') throw new QueuescopeError('INVALID_INPUT', DESKTOP_PATH_REFUSED);
      const adapter = connections.adapter(input.connectionId);
      const queue = await adapter.getQueue(input.queueId);
      assertPeekAllowed(queue, input.acceptSideEffects);
      const suggested = suggestedSnapshotName(queue.name, input.state);
      const typed = input.path !== undefined;
      const path = input.path !== undefined ? await resolveExportPath(input.path, suggested, deps.defaultExportDir?.() ?? null) : await dialogs.pickSnapshotSavePath(suggested);
      if (path === null) return null;
      const connection = describeConnection(connections.get(input.connectionId).config);
      const what = input.messageIds !== undefined ? `${input.messageIds.length} message${input.messageIds.length === 1 ? '' : 's'}` : input.state !== undefined ? `${input.state} messages` : 'messages';
      const label = `Export ${what} of ${queue.name} to ${path}`;
      return operations.start('export', label, async (ctx) => {
        const result = await exportQueue(
          adapter,
          queue.id,
          {
            path,
            connection,
            overwrite: !typed, // the save dialog already asked; a typed path never overwrites
            ...(input.state !== undefined ? { state: input.state } : {}),
            ...(input.messageIds !== undefined ? { messageIds: input.messageIds } : {}),
            ...(input.acceptSideEffects !== undefined ? { acceptSideEffects: input.acceptSideEffects } : {}),
          },
          ctx,
        );
        return { ...result };
      });
    },
    'snapshots.open': async (input) => {
      if (input.path !== undefined && deps.runtime === 'electron') throw new QueuescopeError('INVALID_INPUT', DESKTOP_PATH_REFUSED);
      const path = input.path !== undefined ? await resolveOpenPath(input.path, deps.defaultExportDir?.() ?? null) : await dialogs.pickSnapshotOpenPath();
      if (path === null) return null;
      const profile = connections.openSnapshot(path);
      try {
        const test = await connections.adapter(profile.id).testConnection();
        if (!test.ok) {
          const err = test.error ?? { code: 'SNAPSHOT_INVALID' as const, message: `${path} is not a Queuescope snapshot.` };
          throw new QueuescopeError(err.code, err.message, err.details);
        }
        await connections.adapter(profile.id).listQueues({}); // full validation pass, result cached
      } catch (e) {
        await connections.closeSession(profile.id);
        throw e;
      }
      return profile;
    },
    'operations.get': (input) => Promise.resolve(operations.get(input.operationId)),
    'operations.cancel': (input) => Promise.resolve(operations.cancel(input.operationId)),
    ...createInspectHandlers({ connections, operations }),
    ...createAuditHandlers({ connections }),
    ...createTuningHandlers({ connections, operations }),
    ...createRedriveHandlers({ connections, operations }),
    ...createWatchHandlers(deps.watch ?? new DlqWatchManager({ connections, configDir: connections.profileStore.configDir })),
  };
}

/** Options of {@link dispatchApi}. */
export interface DispatchOptions {
  /** Called with errors that are not a `QueuescopeError` (bugs), e.g. to log their stack. */
  onUnexpectedError?: (error: unknown, method: string) => void;
}

/**
 * The one entry point for IPC and the browser bridge: rejects unknown methods, validates `rawInput`
 * with `apiInputSchemas[method]` (`undefined` counts as `{}`), runs the handler, and turns any
 * throw into `{ ok: false, error }` (credentials stripped). Never throws.
 *
 * - unknown method → `INVALID_INPUT` "Unknown API method …"
 * - schema failure → `INVALID_INPUT` listing each issue as `path: message` (`details.issues`)
 * - handler errors → their `ErrorInfo` (`toErrorInfo`), non-Queuescope errors as `INTERNAL`
 */
export async function dispatchApi(handlers: ApiHandlers, method: string, rawInput: unknown, options: DispatchOptions = {}): Promise<ApiResult<unknown>> {
  if (typeof method !== 'string' || !Object.hasOwn(apiInputSchemas, method)) {
    return fail({ code: 'INVALID_INPUT', message: `Unknown API method "${redactSecrets(method).replace(/[\u0000-\u001f\u007f-\u009f]/g, '?').slice(0, 80)}".` });
  }
  const m = method as ApiMethod;
  const schema: z.ZodType = apiInputSchemas[m];
  const parsed = schema.safeParse(rawInput === undefined ? {} : rawInput);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
    const text = issues.map((i) => `${i.path === '' ? '(input)' : i.path}: ${i.message}`).join('; ');
    return fail({ code: 'INVALID_INPUT', message: `Invalid input for ${m}: ${text}`, details: { method: m, issues } });
  }
  try {
    const handler = handlers[m] as (input: unknown) => Promise<unknown>;
    const value = await handler(parsed.data);
    return { ok: true, value };
  } catch (e) {
    if (!(e instanceof QueuescopeError)) options.onUnexpectedError?.(e, m);
    return fail(toErrorInfo(e));
  }
}

function fail(error: ErrorInfo): ApiResult<never> {
  return { ok: false, error: redactValue(error) as ErrorInfo };
}
