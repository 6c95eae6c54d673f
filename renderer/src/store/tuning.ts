import type { StateCreator } from 'zustand';
import type { ApiInput } from '../../../shared/api/contract';
import { TERMINAL_STATUSES, type ErrorInfo, type OperationSnapshot } from '../../../shared/domain';
import type { TuningApplyResult, TuningReport, TuningSourcesResult } from '../../../shared/tuning';
import { call, errorInfoOf } from '../api';
import { queueKey, type All } from './types';

/** How often a running measurement is polled, ms. */
const POLL_MS = 250;

/** One queue's tuning state (visibility timeout; units ms). */
export interface TuningEntry {
  sourcesStatus: 'loading' | 'ready' | 'error';
  sources: TuningSourcesResult | null;
  sourcesError: ErrorInfo | null;
  runStatus: 'idle' | 'measuring' | 'ready' | 'error' | 'cancelled';
  operation: OperationSnapshot | null;
  report: TuningReport | null;
  runError: ErrorInfo | null;
  applied: TuningApplyResult | null;
}

export interface TuningSlice {
  /** Per `queueKey(connectionId, queueId)`. */
  tuning: Record<string, TuningEntry | undefined>;
  /** `tuning.sources`: the queue's sources (with confidence) and current settings. */
  loadTuningSources: (connectionId: string, queueId: string) => Promise<void>;
  /** Starts `tuning.measure` and polls the operation; the report lands in `tuning[key].report`. */
  runTuning: (input: ApiInput<'tuning.measure'>) => Promise<void>;
  cancelTuning: (connectionId: string, queueId: string) => Promise<void>;
  /** `tuning.apply` (SQS VisibilityTimeout), after the UI's confirmation; reloads the settings. @throws ApiError */
  applyTuning: (connectionId: string, queueId: string, timeoutMs: number) => Promise<TuningApplyResult>;
}

const EMPTY: TuningEntry = { sourcesStatus: 'loading', sources: null, sourcesError: null, runStatus: 'idle', operation: null, report: null, runError: null, applied: null };

/** Tuning state per queue: sources, the running measurement, the report, the last applied change. */
export const createTuningSlice: StateCreator<All, [], [], TuningSlice> = (set, get) => {
  const patch = (key: string, p: Partial<TuningEntry>): void => set((s) => ({ tuning: { ...s.tuning, [key]: { ...(s.tuning[key] ?? EMPTY), ...p } } }));

  return {
    tuning: {},

    async loadTuningSources(connectionId, queueId) {
      const key = queueKey(connectionId, queueId);
      patch(key, { sourcesStatus: 'loading', sourcesError: null });
      try {
        const sources = await call('tuning.sources', { connectionId, queueId });
        patch(key, { sourcesStatus: 'ready', sources });
      } catch (e) {
        patch(key, { sourcesStatus: 'error', sourcesError: errorInfoOf(e) });
      }
    },

    async runTuning(input) {
      const key = queueKey(input.connectionId, input.queueId);
      patch(key, { runStatus: 'measuring', operation: null, report: null, runError: null, applied: null });
      try {
        let op = await call('tuning.measure', input);
        patch(key, { operation: op });
        while (!TERMINAL_STATUSES.includes(op.status)) {
          await new Promise((r) => setTimeout(r, POLL_MS));
          if (get().tuning[key]?.operation?.id !== op.id) return; // replaced by a newer run
          op = await call('operations.get', { operationId: op.id });
          patch(key, { operation: op });
        }
        if (op.status === 'completed') {
          const report = (op.result as { report?: TuningReport } | null)?.report ?? null;
          patch(key, { runStatus: report ? 'ready' : 'error', report, runError: report ? null : { code: 'INTERNAL', message: 'The measurement returned no report.' } });
        } else if (op.status === 'cancelled') patch(key, { runStatus: 'cancelled' });
        else patch(key, { runStatus: 'error', runError: op.errors.at(-1) ?? { code: 'INTERNAL', message: 'The measurement failed.' } });
      } catch (e) {
        patch(key, { runStatus: 'error', runError: errorInfoOf(e) });
      }
    },

    async cancelTuning(connectionId, queueId) {
      const id = get().tuning[queueKey(connectionId, queueId)]?.operation?.id;
      if (id === undefined) return;
      try {
        await call('operations.cancel', { operationId: id });
      } catch (e) {
        get().showError(e);
      }
    },

    async applyTuning(connectionId, queueId, timeoutMs) {
      const key = queueKey(connectionId, queueId);
      const applied = await call('tuning.apply', { connectionId, queueId, timeoutMs });
      patch(key, { applied });
      await get().loadTuningSources(connectionId, queueId);
      return applied;
    },
  };
};
