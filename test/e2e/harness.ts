/**
 * Shared by the e2e tests and the screenshot script: starts the browser bridge in-process with
 * the real services (temporary config, export and open folders), and Debian Chromium driven by
 * playwright-core.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createWebServices, type WebServices } from '../../core/web/main';
import { startWebServer, type WebServer } from '../../core/web/server';
import ensureServices from '../integration/global-setup';

export const PROJECT_ROOT = resolve(__dirname, '../..');
export const RENDERER_DIR = process.env.QUEUESCOPE_RENDERER_DIR ?? join(PROJECT_ROOT, 'out', 'renderer');
/** Debian's Chromium (`apt-get install -y chromium`); the /usr/bin wrapper prints a shell warning, so call the binary. */
export const CHROMIUM_PATH = process.env.QUEUESCOPE_CHROMIUM ?? '/usr/lib/chromium/chromium';
export const CHROMIUM_FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/** Throws a clear message when the renderer has not been built or Chromium is missing. */
export function assertPrerequisites(): void {
  if (!existsSync(join(RENDERER_DIR, 'index.html'))) {
    throw new Error(`The built renderer is missing (${join(RENDERER_DIR, 'index.html')}): run \`npm run build\` (or \`npx tsx test/e2e/build-renderer.ts\`) before the e2e tests.`);
  }
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`Chromium is missing at ${CHROMIUM_PATH}: install it with \`apt-get install -y chromium\` (or set QUEUESCOPE_CHROMIUM).`);
  }
}

export interface Harness {
  server: WebServer;
  services: WebServices;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Temporary folders: saved connections, exports. */
  configDir: string;
  exportDir: string;
  /** What File › Open snapshot opens next (null = the dialog is cancelled). */
  setOpenPath(path: string | null): void;
  /** Opens the app page (with the token) and waits for the sidebar. */
  openApp(): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  /** Bundled demo snapshot to offer; null = none. Default: resources/demo-snapshot.jsonl when present. */
  demoSnapshotPath?: string | null;
  viewport?: { width: number; height: number };
  colorScheme?: 'light' | 'dark';
}

/** Starts services + bridge + Chromium. Call `close()` in afterAll. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  assertPrerequisites();
  await ensureServices(); // starts the SQS emulators (scripts/services.sh) when they are down
  const configDir = mkdtempSync(join(tmpdir(), 'qs-e2e-config-'));
  const exportDir = mkdtempSync(join(tmpdir(), 'qs-e2e-export-'));
  let openPath: string | null = null;
  const services = await createWebServices({
    configDir,
    demoSnapshotPath: options.demoSnapshotPath === undefined ? join(PROJECT_ROOT, 'resources', 'demo-snapshot.jsonl') : options.demoSnapshotPath,
    exportDir: () => exportDir,
    openPath: () => openPath,
  });
  const server = await startWebServer({ rendererDir: RENDERER_DIR, handlers: services.handlers });
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_FLAGS });
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1440, height: 900 }, colorScheme: options.colorScheme ?? 'light', deviceScaleFactor: 1 });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.origin });
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(m.text());
  });
  return {
    server,
    services,
    browser,
    context,
    page,
    configDir,
    exportDir,
    setOpenPath(p) {
      openPath = p;
    },
    async openApp() {
      await page.goto(server.url);
      await page.getByRole('navigation', { name: 'Connections' }).waitFor();
    },
    async close() {
      await browser.close().catch(() => undefined);
      await server.close();
      await services.close();
      rmSync(configDir, { recursive: true, force: true });
      rmSync(exportDir, { recursive: true, force: true });
      if (pageErrors.length > 0 && process.env.QUEUESCOPE_E2E_VERBOSE) console.error('page errors:', pageErrors);
    },
  };
}
