/**
 * Preload (sandboxed): exposes exactly one object, `window.queuescope`, with one
 * function, `invoke(method, input)`. It never exposes `ipcRenderer` itself, and it
 * only forwards the API's own methods; main validates every input again.
 */
import { contextBridge, ipcRenderer } from 'electron';
import { channelFor, isApiMethod } from '../../shared/api/methods';
import type { QueuescopeApi } from '../../shared/api/contract';

const api: QueuescopeApi = {
  invoke(method, input) {
    if (!isApiMethod(method)) {
      return Promise.resolve({ ok: false, error: { code: 'INVALID_INPUT', message: `Unknown API method "${String(method)}".` } });
    }
    return ipcRenderer.invoke(channelFor(method), input) as ReturnType<QueuescopeApi['invoke']>;
  },
};

contextBridge.exposeInMainWorld('queuescope', api);
