import { BrowserWindow, app, session, shell, type WebContents } from 'electron';
import { join } from 'node:path';
import { RENDERER_CSP } from '../../shared/security/csp';


/**
 * Creates the main window, hardened per the Electron security checklist
 * (https://www.electronjs.org/docs/latest/tutorial/security): context isolation,
 * sandbox, no Node integration, CSP, no navigation, no new windows, no permissions.
 */
export function createMainWindow(opts: { preloadPath: string; rendererFile: string; devServerUrl: string | null }): BrowserWindow {
  const win = new BrowserWindow({
    width: 1280,
    height: 820,
    minWidth: 900,
    minHeight: 560,
    show: false,
    title: 'Queuescope',
    autoHideMenuBar: true,
    webPreferences: {
      preload: opts.preloadPath,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      spellcheck: false,
    },
  });
  win.once('ready-to-show', () => win.show());
  if (opts.devServerUrl !== null) void win.loadURL(opts.devServerUrl);
  else void win.loadFile(opts.rendererFile);
  return win;
}

/** App-wide hardening that applies to every web contents, present and future. Call once, before any window. */
export function hardenApp(): void {
  session.defaultSession.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));
  session.defaultSession.setPermissionCheckHandler(() => false);
  session.defaultSession.webRequest.onHeadersReceived((details, callback) => {
    callback({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': [RENDERER_CSP] } });
  });
  app.on('web-contents-created', (_event, contents: WebContents) => {
    contents.setWindowOpenHandler(({ url }) => {
      // Only documentation links (https) go to the system browser; nothing opens inside the app.
      if (url.startsWith('https://')) void shell.openExternal(url);
      return { action: 'deny' };
    });
    contents.on('will-navigate', (event) => event.preventDefault());
    contents.on('will-redirect', (event) => event.preventDefault());
    contents.on('will-attach-webview', (event) => event.preventDefault());
  });
}

/** Paths of the built preload and renderer relative to the built main bundle (out/main). */
export function builtPaths(mainDir: string): { preloadPath: string; rendererFile: string } {
  return { preloadPath: join(mainDir, '../preload/index.js'), rendererFile: join(mainDir, '../renderer/index.html') };
}
