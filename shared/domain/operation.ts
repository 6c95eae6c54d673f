import type { ErrorInfo } from './errors';

/**
 * Long-running work (export, later redrive and measurement) is an operation with a
 * state machine whose terminal states cannot be left:
 * `pending → running → (paused ↔ running) → completed | failed | cancelled`.
 */
export type OperationStatus = 'pending' | 'running' | 'paused' | 'completed' | 'failed' | 'cancelled';

export const TERMINAL_STATUSES: readonly OperationStatus[] = ['completed', 'failed', 'cancelled'];

/** Throttled progress snapshot (not an event per message). Counts are messages; `rate` is messages/s; `etaMs` in ms. */
export interface OperationSnapshot {
  id: string;
  /** e.g. `export` */
  type: string;
  /** Human label, e.g. "Export failed jobs of payments to payments-2026-11-29.jsonl". */
  label: string;
  status: OperationStatus;
  /** Messages expected in total, null while unknown. */
  total: number | null;
  processed: number;
  moved: number;
  skipped: number;
  failed: number;
  /** Moved but possibly still in the source too (a redrive whose removal could not be confirmed); absent for operations that cannot duplicate. */
  possibleDuplicates?: number;
  /** Last errors, at most 20, newest last. */
  errors: ErrorInfo[];
  rate: number | null;
  etaMs: number | null;
  startedAt: number | null;
  finishedAt: number | null;
  /** Operation-specific result, e.g. `{ path: '/tmp/x.jsonl', bytes: 1234 }`. */
  result: Record<string, unknown> | null;
}
