/**
 * Electron main process: thin. It creates the hardened window, builds the core services
 * (the same ones the CLI and the browser bridge use), gives them Electron's dialogs and
 * `safeStorage`, and registers the validated IPC handlers. Everything else lives in core/.
 */
import { app, BrowserWindow, dialog, ipcMain, Notification, safeStorage } from 'electron';
import { join } from 'node:path';
import { ConnectionManager } from '../../core/services/connection-manager';
import { DlqWatchManager } from '../../core/services/dlq-watch-manager';
import { watchAlertText } from '../../shared/api/watch';
import { OperationManager } from '../../core/services/operations';
import { ProfileStore, defaultConfigDir, type SecretCipher } from '../../core/services/profile-store';
import { createApiHandlers, dispatchApi } from '../../core/services/api';
import { registerIpc, trustedUrlChecker } from './ipc';
import { builtPaths, createMainWindow, hardenApp } from './window';

/**
 * `safeStorage`'s asynchronous API (Electron ≥ 45; the sync calls are deprecated) as the profile
 * store's cipher (OS keychain / DPAPI / libsecret). Used only after `app.whenReady()`.
 */
const safeStorageCipher: SecretCipher = {
  isAvailable: () => safeStorage.isAsyncEncryptionAvailable(),
  encrypt: (plain) => safeStorage.encryptStringAsync(plain),
  decrypt: async (data) => {
    const r = await safeStorage.decryptStringAsync(data);
    return { plain: r.result, shouldReEncrypt: r.shouldReEncrypt };
  },
};

function demoSnapshotPath(): string {
  return app.isPackaged ? join(process.resourcesPath, 'demo-snapshot.jsonl') : join(app.getAppPath(), 'resources', 'demo-snapshot.jsonl');
}

async function start(): Promise<void> {
  await app.whenReady();
  hardenApp();

  const store = await ProfileStore.open({ configDir: process.env.QUEUESCOPE_HOME ? defaultConfigDir() : app.getPath('userData'), cipher: safeStorageCipher });
  const connections = new ConnectionManager({ store, demoSnapshotPath: demoSnapshotPath() });
  const operations = new OperationManager();
  let win: BrowserWindow | null = null;
  // DLQ alerts: the saved watch list starts now; alerts become desktop notifications (text only).
  const watch = new DlqWatchManager({ connections, configDir: store.configDir });
  void watch.start();
  watch.subscribe((e) => {
    const n = watchAlertText(e);
    if (n !== null && Notification.isSupported()) new Notification({ title: n.title, body: n.body, silent: false }).show();
  });

  const handlers = createApiHandlers({
    connections,
    operations,
    runtime: 'electron',
    version: app.getVersion(),
    watch,
    dialogs: {
      async pickSnapshotSavePath(suggestedName) {
        const options = { defaultPath: join(app.getPath('downloads'), suggestedName), filters: [{ name: 'Queuescope snapshot', extensions: ['jsonl'] }] };
        const r = win ? await dialog.showSaveDialog(win, options) : await dialog.showSaveDialog(options);
        return r.canceled || r.filePath === '' ? null : r.filePath;
      },
      async pickSnapshotOpenPath() {
        const options = { properties: ['openFile' as const], filters: [{ name: 'Queuescope snapshot', extensions: ['jsonl', 'gz'] }] };
        const r = win ? await dialog.showOpenDialog(win, options) : await dialog.showOpenDialog(options);
        return r.canceled ? null : (r.filePaths[0] ?? null);
      },
    },
  });

  const { preloadPath, rendererFile } = builtPaths(__dirname);
  const devServerUrl = !app.isPackaged && process.env.ELECTRON_RENDERER_URL ? process.env.ELECTRON_RENDERER_URL : null;
  registerIpc(
    ipcMain,
    (method, input) =>
      dispatchApi(handlers, method, input, {
        onUnexpectedError: (e, m) => console.error(`[queuescope] unexpected error in ${m}:`, e),
      }),
    trustedUrlChecker({ rendererFile, devServerUrl }),
  );

  const openWindow = (): void => {
    win = createMainWindow({ preloadPath, rendererFile, devServerUrl });
    // Closing the window aborts its operations (exports now, redrives later).
    win.on('closed', () => {
      operations.cancelAll();
      win = null;
    });
  };
  openWindow();

  app.on('activate', () => {
    if (BrowserWindow.getAllWindows().length === 0) openWindow();
  });
  app.on('window-all-closed', () => {
    if (process.platform !== 'darwin') app.quit();
  });
  let closing = false;
  app.on('before-quit', (event) => {
    if (closing) return;
    closing = true;
    event.preventDefault();
    operations.cancelAll();
    void watch
      .stop()
      .then(() => connections.closeAll())
      .finally(() => app.quit());
  });
}

// One instance: a second launch focuses the first window.
if (!app.requestSingleInstanceLock()) {
  app.quit();
} else {
  app.on('second-instance', () => {
    const [w] = BrowserWindow.getAllWindows();
    if (w) {
      if (w.isMinimized()) w.restore();
      w.focus();
    }
  });
  start().catch((e: unknown) => {
    dialog.showErrorBox('Queuescope could not start', e instanceof Error ? e.message : String(e));
    app.exit(1);
  });
}
