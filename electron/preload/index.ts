/**
 * Preload (sandboxed): exposes exactly one object, `window.queuescope`, with one
 * function, `invoke(method, input)`. It never exposes `ipcRenderer` itself, and it
 * only forwards the API's own methods; main validates every input again.
 */
import { contextBridge, ipcRenderer } from 'electron';
import { channelFor, isApiMethod } from '../../shared/api/methods';
import type { ApiResult, QueuescopeApi } from '../../shared/api/contract';

async function invoke(method: unknown, input: unknown): Promise<ApiResult<unknown>> {
  if (!isApiMethod(method)) {
    return { ok: false, error: { code: 'INVALID_INPUT', message: `Unknown API method "${String(method).slice(0, 80)}".` } };
  }
  return (await ipcRenderer.invoke(channelFor(method), input)) as ApiResult<unknown>;
}

// The generic signature of QueuescopeApi['invoke'] is enforced on the main side; here it is one function.
const api = { invoke } as QueuescopeApi;
contextBridge.exposeInMainWorld('queuescope', api);
