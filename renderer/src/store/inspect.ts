import type { StateCreator } from 'zustand';
import type { InspectReport, InspectRulesState } from '../../../shared/api/inspect';
import { inspectSettingsFor, type ProjectConfig } from '../../../shared/config/project-config';
import { TERMINAL_STATUSES, type ErrorInfo, type OperationSnapshot } from '../../../shared/domain';
import { call, errorInfoOf } from '../api';
import { queueKey, type All } from './types';

/** How often a running inspection is polled, in ms. */
const POLL_MS = 250;

/** A connection's inspect rules as loaded from `inspect.rules.get`. */
export interface InspectRulesEntry {
  status: 'loading' | 'ready' | 'error';
  state: InspectRulesState | null;
  error: ErrorInfo | null;
}

/** One queue's "redelivery safety" run. */
export interface InspectRun {
  status: 'running' | 'ready' | 'error' | 'cancelled';
  /** The state inspected (BullMQ `failed`…), as asked. */
  state: string | undefined;
  operation: OperationSnapshot | null;
  report: InspectReport | null;
  error: ErrorInfo | null;
}

export interface InspectSlice {
  /** Rules per connection id. */
  inspectRules: Record<string, InspectRulesEntry | undefined>;
  /** Runs per `queueKey(connectionId, queueId)`. */
  inspectRuns: Record<string, InspectRun | undefined>;
  /** `inspect.rules.get`; errors are kept in the entry. */
  loadInspectRules: (connectionId: string) => Promise<void>;
  /** `inspect.rules.set` (replaces the connection's whole `inspect` section). @throws ApiError */
  saveInspectRules: (connectionId: string, settings: ProjectConfig['inspect']) => Promise<InspectRulesState>;
  /** Starts `inspect.queue` and polls the operation until it ends; the report lands in `inspectRuns`. */
  runInspection: (input: { connectionId: string; queueId: string; state?: string | undefined; acceptSideEffects: boolean; limit?: number | undefined; compareDeadLetter?: boolean | undefined }) => Promise<void>;
  cancelInspection: (connectionId: string, queueId: string) => Promise<void>;
}

/**
 * The analysis rules (`AnalyzeOptions.rules`) for a queue from a connection's settings: the first
 * entry whose pattern matches the queue's name or id; built-in rules when none does.
 */
export function rulesForQueue(settings: ProjectConfig['inspect'] | null | undefined, queue: { name: string; id: string }, connectionName?: string): { rules: { keyRules: ProjectConfig['inspect']['queues'][number]['keyRules']; snapshotFields: string[]; queueIsSnapshot: boolean; maxMessageBytes?: number }; match: string | null } {
  const entry = settings === null || settings === undefined ? null : inspectSettingsFor({ inspect: settings } as ProjectConfig, queue, connectionName);
  if (entry === null) return { rules: { keyRules: [], snapshotFields: [], queueIsSnapshot: false }, match: null };
  return {
    rules: { keyRules: entry.keyRules, snapshotFields: entry.snapshotFields, queueIsSnapshot: entry.queueIsSnapshot, ...(entry.maxMessageBytes !== undefined ? { maxMessageBytes: entry.maxMessageBytes } : {}) },
    match: entry.match,
  };
}

/** Inspect rules per connection and redelivery-safety runs per queue. */
export const createInspectSlice: StateCreator<All, [], [], InspectSlice> = (set, get) => {
  const putRun = (key: string, run: InspectRun): void => set((s) => ({ inspectRuns: { ...s.inspectRuns, [key]: run } }));

  return {
    inspectRules: {},
    inspectRuns: {},

    async loadInspectRules(connectionId) {
      const prev = get().inspectRules[connectionId];
      set((s) => ({ inspectRules: { ...s.inspectRules, [connectionId]: { status: 'loading', state: prev?.state ?? null, error: null } } }));
      try {
        const state = await call('inspect.rules.get', { connectionId });
        set((s) => ({ inspectRules: { ...s.inspectRules, [connectionId]: { status: 'ready', state, error: null } } }));
      } catch (e) {
        set((s) => ({ inspectRules: { ...s.inspectRules, [connectionId]: { status: 'error', state: prev?.state ?? null, error: errorInfoOf(e) } } }));
      }
    },

    async saveInspectRules(connectionId, settings) {
      const state = await call('inspect.rules.set', { connectionId, settings });
      set((s) => ({ inspectRules: { ...s.inspectRules, [connectionId]: { status: 'ready', state, error: null } } }));
      return state;
    },

    async runInspection({ connectionId, queueId, state, acceptSideEffects, limit, compareDeadLetter }) {
      const key = queueKey(connectionId, queueId);
      putRun(key, { status: 'running', state, operation: null, report: null, error: null });
      try {
        let op = await call('inspect.queue', { connectionId, queueId, ...(state !== undefined ? { state } : {}), ...(limit !== undefined ? { limit } : {}), ...(compareDeadLetter !== undefined ? { compareDeadLetter } : {}), acceptSideEffects });
        putRun(key, { status: 'running', state, operation: op, report: null, error: null });
        while (!TERMINAL_STATUSES.includes(op.status)) {
          await new Promise((r) => setTimeout(r, POLL_MS));
          if (get().inspectRuns[key]?.operation?.id !== op.id) return; // replaced by a newer run
          op = await call('operations.get', { operationId: op.id });
          putRun(key, { status: 'running', state, operation: op, report: null, error: null });
        }
        if (op.status === 'completed') {
          const report = (op.result as { report?: InspectReport } | null)?.report ?? null;
          putRun(key, { status: 'ready', state, operation: op, report, error: report === null ? { code: 'INTERNAL', message: 'The inspection returned no report.' } : null });
        } else if (op.status === 'cancelled') putRun(key, { status: 'cancelled', state, operation: op, report: null, error: null });
        else putRun(key, { status: 'error', state, operation: op, report: null, error: op.errors.at(-1) ?? { code: 'INTERNAL', message: 'The inspection failed.' } });
      } catch (e) {
        putRun(key, { status: 'error', state, operation: null, report: null, error: errorInfoOf(e) });
      }
    },

    async cancelInspection(connectionId, queueId) {
      const id = get().inspectRuns[queueKey(connectionId, queueId)]?.operation?.id;
      if (id === undefined) return;
      try {
        await call('operations.cancel', { operationId: id });
      } catch (e) {
        get().showError(e);
      }
    },
  };
};
