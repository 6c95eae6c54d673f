import type { StateCreator } from 'zustand';
import type { ApiInput } from '../../../shared/api/contract';
import type { AuditLogPageView } from '../../../shared/api/redrive';
import { TERMINAL_STATUSES, type ErrorInfo, type OperationSnapshot } from '../../../shared/domain';
import type { RedrivePlan } from '../../../shared/redrive/types';
import { call, errorInfoOf } from '../api';
import { queueKey, type All } from './types';

/** How often a running redrive is polled, in ms. */
const POLL_MS = 300;

/** One DLQ's redrive panel: the analysis (whole-DLQ dry run), the preview of the chosen selection, the run. */
export interface RedriveState {
  /** Dry run of the whole DLQ: failure groups and counts. */
  analysis: RedrivePlan | null;
  analysing: boolean;
  /** The running analysis (a dry-run operation): progress and cancel. */
  analysisOp: OperationSnapshot | null;
  /** Dry run of the chosen selection and options. */
  preview: RedrivePlan | null;
  previewing: boolean;
  /** The running / finished redrive operation. */
  operation: OperationSnapshot | null;
  error: ErrorInfo | null;
}

export interface RedriveHistoryState {
  status: 'idle' | 'loading' | 'ready' | 'error';
  page: AuditLogPageView | null;
  error: ErrorInfo | null;
  /** The last re-inject started from the history (`redrive.reinject`), polled until it ends. */
  reinject: { entryId: string; operation: OperationSnapshot | null; error: ErrorInfo | null } | null;
}

export interface RedriveSlice {
  /** Per `queueKey(connectionId, dlqId)`. */
  redrive: Record<string, RedriveState | undefined>;
  redriveHistory: RedriveHistoryState;
  /** Dry run of the whole DLQ (groups by failure class and reason), as an operation with progress. */
  analyseDlq: (input: ApiInput<'redrive.analyse'>) => Promise<void>;
  cancelAnalysis: (connectionId: string, dlqId: string) => Promise<void>;
  /** Dry run of a selection; the result lands in `preview`. */
  previewRedrive: (input: ApiInput<'redrive.plan'>) => Promise<void>;
  clearPreview: (connectionId: string, dlqId: string) => void;
  /** Starts `redrive.start` and polls the operation until it ends. */
  startRedrive: (input: ApiInput<'redrive.start'>) => Promise<void>;
  pauseRedrive: (connectionId: string, dlqId: string) => Promise<void>;
  resumeRedrive: (connectionId: string, dlqId: string) => Promise<void>;
  cancelRedrive: (connectionId: string, dlqId: string) => Promise<void>;
  /** Forgets the finished run (back to the analysis). */
  dismissRedrive: (connectionId: string, dlqId: string) => void;
  loadRedriveHistory: (input?: ApiInput<'redrive.history'>) => Promise<void>;
  /** Re-injects the backup of an audit-log entry into a queue; progress lands in `redriveHistory.reinject`. */
  reinjectBackup: (input: ApiInput<'redrive.reinject'>) => Promise<void>;
}

const EMPTY: RedriveState = { analysis: null, analysing: false, analysisOp: null, preview: null, previewing: false, operation: null, error: null };

/** DLQ redrive: analysis, preview, run with pause/resume/cancel, and the audit log. */
export const createRedriveSlice: StateCreator<All, [], [], RedriveSlice> = (set, get) => {
  const patch = (key: string, p: Partial<RedriveState>): void => set((s) => ({ redrive: { ...s.redrive, [key]: { ...(s.redrive[key] ?? EMPTY), ...p } } }));

  /** Which queues each redrive touches: connection, DLQ and target (null = the messages' sources), by `queueKey` of the DLQ. */
  const touched = new Map<string, { connectionId: string; dlqId: string; targetQueueId: string | null }>();

  const putOp = (key: string, op: OperationSnapshot): void => {
    const prev = get().redrive[key]?.operation;
    // A late poll must not move a finished operation back.
    if (prev != null && prev.id === op.id && TERMINAL_STATUSES.includes(prev.status) && !TERMINAL_STATUSES.includes(op.status)) return;
    patch(key, { operation: op });
    const ended = TERMINAL_STATUSES.includes(op.status) && !(prev != null && prev.id === op.id && TERMINAL_STATUSES.includes(prev.status));
    const t = touched.get(key);
    if (ended && t !== undefined) refreshAfterMove(get(), t.connectionId, [t.dlqId, ...(t.targetQueueId !== null ? [t.targetQueueId] : [])]);
    // A history shown beside the run listed it as `started` (no end recorded): read it again, so it
    // says how the run ended (completed, cancelled…) next to the result.
    if (ended && get().redriveHistory.status !== 'idle') void get().loadRedriveHistory({ limit: 20 });
  };

  const poll = async (key: string, id: string): Promise<void> => {
    let failures = 0;
    for (;;) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      if (get().redrive[key]?.operation?.id !== id) return; // dismissed
      try {
        const op = await call('operations.get', { operationId: id });
        failures = 0;
        putOp(key, op);
        if (TERMINAL_STATUSES.includes(op.status)) return;
      } catch (e) {
        if (++failures >= 5) {
          patch(key, { error: errorInfoOf(e) });
          return;
        }
      }
    }
  };

  const opControl = async (connectionId: string, dlqId: string, method: 'operations.pause' | 'operations.resume' | 'operations.cancel'): Promise<void> => {
    const key = queueKey(connectionId, dlqId);
    const op = get().redrive[key]?.operation;
    if (op == null) return;
    try {
      putOp(key, await call(method, { operationId: op.id }));
    } catch (e) {
      patch(key, { error: errorInfoOf(e) });
    }
  };

  return {
    redrive: {},
    redriveHistory: { status: 'idle', page: null, error: null, reinject: null },

    async analyseDlq(input) {
      const key = queueKey(input.connectionId, input.dlqId);
      patch(key, { analysing: true, analysisOp: null, error: null });
      try {
        let op = await call('redrive.analyse', input);
        patch(key, { analysisOp: op });
        while (!TERMINAL_STATUSES.includes(op.status)) {
          await new Promise((r) => setTimeout(r, POLL_MS));
          op = await call('operations.get', { operationId: op.id });
          patch(key, { analysisOp: op });
        }
        const plan = op.status === 'completed' ? ((op.result?.plan as RedrivePlan | undefined) ?? null) : null;
        const failure = op.status === 'failed' ? (op.errors.at(-1) ?? null) : null;
        patch(key, { analysis: plan, analysing: false, analysisOp: null, error: failure });
      } catch (e) {
        patch(key, { analysing: false, analysisOp: null, error: errorInfoOf(e) });
      }
    },

    async cancelAnalysis(connectionId, dlqId) {
      const op = get().redrive[queueKey(connectionId, dlqId)]?.analysisOp;
      if (op == null) return;
      try {
        await call('operations.cancel', { operationId: op.id });
      } catch (e) {
        patch(queueKey(connectionId, dlqId), { error: errorInfoOf(e) });
      }
    },

    async previewRedrive(input) {
      const key = queueKey(input.connectionId, input.dlqId);
      patch(key, { previewing: true, error: null });
      try {
        const preview = await call('redrive.plan', input);
        patch(key, { preview, previewing: false });
      } catch (e) {
        patch(key, { previewing: false, preview: null, error: errorInfoOf(e) });
      }
    },

    clearPreview(connectionId, dlqId) {
      patch(queueKey(connectionId, dlqId), { preview: null });
    },

    async startRedrive(input) {
      const key = queueKey(input.connectionId, input.dlqId);
      patch(key, { error: null });
      try {
        touched.set(key, { connectionId: input.connectionId, dlqId: input.dlqId, targetQueueId: input.targetQueueId ?? null });
        const op = await call('redrive.start', input);
        patch(key, { preview: null });
        putOp(key, op);
        if (!TERMINAL_STATUSES.includes(op.status)) void poll(key, op.id);
      } catch (e) {
        patch(key, { error: errorInfoOf(e) });
      }
    },

    pauseRedrive: (c, d) => opControl(c, d, 'operations.pause'),
    resumeRedrive: (c, d) => opControl(c, d, 'operations.resume'),
    cancelRedrive: (c, d) => opControl(c, d, 'operations.cancel'),

    dismissRedrive(connectionId, dlqId) {
      patch(queueKey(connectionId, dlqId), { operation: null, analysis: null, preview: null });
    },

    async loadRedriveHistory(input = {}) {
      set((s) => ({ redriveHistory: { ...s.redriveHistory, status: 'loading', error: null } }));
      try {
        const page = await call('redrive.history', input);
        set((s) => ({ redriveHistory: { ...s.redriveHistory, status: 'ready', page, error: null } }));
      } catch (e) {
        set((s) => ({ redriveHistory: { ...s.redriveHistory, status: 'error', error: errorInfoOf(e) } }));
      }
    },

    async reinjectBackup(input) {
      const putR = (r: NonNullable<RedriveHistoryState['reinject']>): void => set((s) => ({ redriveHistory: { ...s.redriveHistory, reinject: r } }));
      putR({ entryId: input.auditEntryId, operation: null, error: null });
      try {
        let op = await call('redrive.reinject', input);
        putR({ entryId: input.auditEntryId, operation: op, error: null });
        while (!TERMINAL_STATUSES.includes(op.status)) {
          await new Promise((r) => setTimeout(r, POLL_MS));
          op = await call('operations.get', { operationId: op.id });
          putR({ entryId: input.auditEntryId, operation: op, error: null });
        }
        refreshAfterMove(get(), input.connectionId, [input.queueId]);
        await get().loadRedriveHistory({ limit: 20 });
      } catch (e) {
        putR({ entryId: input.auditEntryId, operation: get().redriveHistory.reinject?.operation ?? null, error: errorInfoOf(e) });
      }
    },
  };
};

/**
 * After a redrive / re-inject reaches a terminal state: reloads the summaries of `queueIds` (the DLQ
 * and the target) and of every other queue of the connection whose view is loaded (a redrive to
 * "each message's source" moves into queues not named in the input), and the connection's queue list
 * when loaded, so headers and rows show the depths after the move. Fire-and-forget; failures land
 * in the queues' own error state.
 */
export function refreshAfterMove(s: All, connectionId: string, queueIds: string[]): void {
  const ids = new Set(queueIds);
  const prefix = queueKey(connectionId, '');
  for (const k of Object.keys(s.queueDetails)) if (k.startsWith(prefix) && s.queueDetails[k] !== undefined) ids.add(k.slice(prefix.length));
  for (const id of ids) void s.loadQueue(connectionId, id);
  if (s.queueLists[connectionId] !== undefined) void s.loadQueues(connectionId);
}
