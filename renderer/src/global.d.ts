import type { QueuescopeApi } from '../../shared/api/contract';

declare global {
  interface Window {
    /** Exposed by the Electron preload (electron/preload) or the browser bridge (core/web, /bridge.js). Absent elsewhere. */
    queuescope?: QueuescopeApi;
  }
}

export {};
