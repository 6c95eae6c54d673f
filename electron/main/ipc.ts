import { pathToFileURL } from 'node:url';
import { API_METHOD_NAMES, channelFor } from '../../shared/api/methods';
import type { ApiResult } from '../../shared/api/contract';

/** The part of Electron's `ipcMain` used here (so this file is unit-testable without Electron). */
export interface IpcMainLike {
  handle(channel: string, listener: (event: IpcEventLike, ...args: unknown[]) => Promise<unknown>): void;
  removeHandler(channel: string): void;
}

/** The part of `IpcMainInvokeEvent` used here. */
export interface IpcEventLike {
  senderFrame: { url: string } | null;
}

/**
 * Registers one `ipcMain.handle` per API method. Each call is refused unless it comes
 * from a trusted frame (our renderer's URL), then goes through `dispatch`, which
 * validates the input with the contract's zod schema (VS Code `validatedIpcMain`,
 * Signal `parseUnknown`). Returns a function that removes the handlers.
 *
 * @param dispatch usually `(m, input) => dispatchApi(handlers, m, input)` from core/services/api.ts
 * @param isTrustedUrl decides whether a sender frame URL is ours
 */
export function registerIpc(
  ipcMain: IpcMainLike,
  dispatch: (method: string, input: unknown) => Promise<ApiResult<unknown>>,
  isTrustedUrl: (url: string) => boolean,
): () => void {
  for (const method of API_METHOD_NAMES) {
    ipcMain.handle(channelFor(method), async (event, input) => {
      const url = event.senderFrame?.url ?? '';
      if (!isTrustedUrl(url)) {
        return { ok: false, error: { code: 'PERMISSION_DENIED', message: 'This window is not allowed to use the Queuescope API.' } } satisfies ApiResult<never>;
      }
      return dispatch(method, input);
    });
  }
  return () => {
    for (const method of API_METHOD_NAMES) ipcMain.removeHandler(channelFor(method));
  };
}

/**
 * Builds the trust check for sender frames: the packaged renderer's `file://` URL
 * (exact path), or the dev server's origin when running `electron-vite dev`.
 */
export function trustedUrlChecker(opts: { rendererFile: string | null; devServerUrl: string | null }): (url: string) => boolean {
  const fileHref = opts.rendererFile === null ? null : pathToFileURL(opts.rendererFile).href;
  const devOrigin = opts.devServerUrl === null ? null : new URL(opts.devServerUrl).origin;
  return (raw: string) => {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      return false;
    }
    if (u.protocol === 'file:') return fileHref !== null && `file://${u.pathname}` === fileHref;
    return devOrigin !== null && u.origin === devOrigin;
  };
}
