import type { StateCreator } from 'zustand';
import { TERMINAL_STATUSES, type OperationSnapshot } from '../../../shared/domain';
import { call } from '../api';
import type { All, OperationsSlice } from './types';

/** How often a running operation's progress is polled, in ms. */
export const POLL_INTERVAL_MS = 400;

/** Long-running operations (exports) started from this window, polled until they end. */
export const createOperationsSlice: StateCreator<All, [], [], OperationsSlice> = (set, get) => {
  const put = (op: OperationSnapshot): void => {
    set((s) => {
      const i = s.operations.findIndex((o) => o.id === op.id);
      if (i < 0) return { operations: [op, ...s.operations] };
      const operations = s.operations.slice();
      // A late poll must not move a finished operation back to running.
      const prev = operations[i];
      if (prev !== undefined && TERMINAL_STATUSES.includes(prev.status) && !TERMINAL_STATUSES.includes(op.status)) return {};
      operations[i] = op;
      return { operations };
    });
  };

  const poll = async (id: string): Promise<void> => {
    let failures = 0;
    for (;;) {
      await new Promise((r) => setTimeout(r, POLL_INTERVAL_MS));
      if (!get().operations.some((o) => o.id === id)) return; // dismissed
      try {
        const op = await call('operations.get', { operationId: id });
        failures = 0;
        put(op);
        if (TERMINAL_STATUSES.includes(op.status)) return;
      } catch (e) {
        if (++failures >= 5) {
          get().showError(e);
          return;
        }
      }
    }
  };

  return {
    operations: [],

    async startExport(input) {
      const op = await call('snapshots.export', input);
      if (op === null) return null;
      put(op);
      if (!TERMINAL_STATUSES.includes(op.status)) void poll(op.id);
      return op;
    },

    async cancelOperation(id) {
      try {
        put(await call('operations.cancel', { operationId: id }));
      } catch (e) {
        get().showError(e);
      }
    },

    dismissOperation(id) {
      set((s) => ({ operations: s.operations.filter((o) => o.id !== id) }));
    },
  };
};
