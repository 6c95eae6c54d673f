import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { ApiHandlers } from '../../shared/api/contract';
import { createApiHandlers, freshPath, type ApiDialogs } from '../services/api';
import { ConnectionManager } from '../services/connection-manager';
import { DlqWatchManager } from '../services/dlq-watch-manager';
import { OperationManager } from '../services/operations';
import { ProfileStore, defaultConfigDir } from '../services/profile-store';
import { startWebServer, type WebServer } from './server';

/** Options of {@link createWebServices}; every path may be given explicitly (tests) or defaults as documented. */
export interface WebServicesOptions {
  /** Folder of profiles.json (default: `defaultConfigDir()`, i.e. `$QUEUESCOPE_HOME` or the app's userData folder). */
  configDir?: string;
  /** The bundled demo snapshot; null = none. Default: `<project>/resources/demo-snapshot.jsonl`. */
  demoSnapshotPath?: string | null;
  /** Where exports go when the UI gives no path, and what it prefills. Default: {@link defaultExportDir}. */
  exportDir?: () => string;
  /** What File › Open snapshot opens (the bridge has no open dialog). Default: `$QUEUESCOPE_OPEN_PATH`, read at each call; unset = cancelled. */
  openPath?: () => string | null;
  /** Reported by `app.info`. Default: package.json's version. */
  version?: string;
}

/** The real services behind the bridge. */
export interface WebServices {
  handlers: ApiHandlers;
  connections: ConnectionManager;
  operations: OperationManager;
  /** Cancels running operations and closes every broker connection. */
  close(): Promise<void>;
}

/** The project root (the folder with Queuescope's package.json), searched upward from `from`. */
export function findProjectRoot(from: string = __dirname): string {
  let dir = resolve(from);
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name === 'queuescope') return dir;
      } catch {
        /* keep looking */
      }
    }
    const up = dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
}

export { freshPath };

/**
 * The bridge's default export folder, read at each call: `$QUEUESCOPE_EXPORT_DIR` (resolved against
 * the current directory), else `~/Downloads` when that folder exists, else the current directory.
 */
export function defaultExportDir(env: NodeJS.ProcessEnv = process.env, home: string = homedir(), cwd: string = process.cwd()): string {
  const configured = env.QUEUESCOPE_EXPORT_DIR;
  if (configured !== undefined && configured.trim() !== '') return resolve(cwd, configured);
  const downloads = join(home, 'Downloads');
  try {
    if (statSync(downloads).isDirectory()) return downloads;
  } catch {
    /* no Downloads folder */
  }
  return cwd;
}

/**
 * Builds the services the desktop app uses, for the bridge: the profile store (no secret cipher:
 * secrets entered in the browser live in memory for the life of the process), the connection and
 * operation managers, and dialogs that write exports into a folder and open a configured path.
 */
export async function createWebServices(options: WebServicesOptions = {}): Promise<WebServices> {
  const root = findProjectRoot();
  const store = await ProfileStore.open({ configDir: options.configDir ?? defaultConfigDir() });
  const demo = options.demoSnapshotPath === undefined ? join(root, 'resources', 'demo-snapshot.jsonl') : options.demoSnapshotPath;
  const connections = new ConnectionManager({ store, demoSnapshotPath: demo });
  const operations = new OperationManager();
  const exportDir = options.exportDir ?? (() => defaultExportDir());
  const openPath = options.openPath ?? (() => process.env.QUEUESCOPE_OPEN_PATH ?? null);
  const dialogs: ApiDialogs = {
    pickSnapshotSavePath: (suggestedName) => Promise.resolve(freshPath(exportDir(), suggestedName)),
    pickSnapshotOpenPath: () => Promise.resolve(openPath()),
  };
  const version = options.version ?? readVersion(root);
  const watch = new DlqWatchManager({ connections, configDir: store.configDir }); // DLQ alerts: the saved watch list starts now
  void watch.start();
  const handlers = createApiHandlers({ connections, operations, dialogs, runtime: 'web', version, defaultExportDir: exportDir, watch });
  return {
    handlers,
    connections,
    operations,
    async close() {
      for (const op of operations.list()) {
        try {
          operations.cancel(op.id);
        } catch {
          /* already finished */
        }
      }
      await watch.stop();
      await connections.closeAll();
    },
  };
}

function readVersion(root: string): string {
  try {
    const v = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version?: unknown }).version;
    return typeof v === 'string' ? v : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

const HELP = `Usage: node out/main/web-server.js [--port N] [--renderer DIR]

Serves the Queuescope UI on http://127.0.0.1 with the real services (the browser bridge).
Open the printed URL: it carries the session token.

Options:
  --port N        port to listen on (default 5199; 0 = any free port)
  --renderer DIR  built renderer folder (default out/renderer)
  -h, --help      this help

Environment:
  QUEUESCOPE_HOME        folder of saved connections (default: the desktop app's)
  QUEUESCOPE_EXPORT_DIR  the default export folder (default: ~/Downloads if it exists, else the
                         current directory); the Export dialog lets you type any path
  QUEUESCOPE_OPEN_PATH   the snapshot File › Open snapshot opens when the UI sends no path

Exit codes: 0 stopped by a signal, 1 could not start (no build, port taken, bad option).`;

/** CLI entry: parses flags, starts the bridge, prints the URL, stops cleanly on SIGINT/SIGTERM. */
export async function runFromCommandLine(argv: string[]): Promise<void> {
  let values: { port?: string; renderer?: string; help?: boolean };
  try {
    ({ values } = parseArgs({ args: argv, options: { port: { type: 'string' }, renderer: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, strict: true }));
  } catch (e) {
    console.error(`${e instanceof Error ? e.message : String(e)}\n\n${HELP}`);
    process.exit(1);
  }
  if (values.help === true) {
    console.log(HELP);
    return;
  }
  const port = values.port === undefined ? 5199 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`--port must be a whole number from 0 to 65535, got "${values.port ?? ''}".`);
    process.exit(1);
  }
  const root = findProjectRoot();
  const rendererDir = resolve(values.renderer ?? join(root, 'out', 'renderer'));
  let services: WebServices | null = null;
  let server: WebServer;
  try {
    services = await createWebServices();
    server = await startWebServer({ port, rendererDir, handlers: services.handlers });
  } catch (e) {
    await services?.close();
    const code = (e as { code?: unknown }).code;
    console.error(code === 'EADDRINUSE' ? `Port ${port} is already in use: pass another with --port.` : e instanceof Error ? e.message : String(e));
    process.exit(1);
  }
  for (const p of services.connections.problems) console.error(`Warning: ${p.message}`);
  console.log(`\nQueuescope is running. Open this address in your browser:\n\n    ${server.url}\n`);
  console.log(`Exports go to ${defaultExportDir()} unless you type another path. Press Ctrl+C to stop.`);
  const running = services;
  const stop = (): void => {
    void Promise.all([server.close(), running.close()]).finally(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
