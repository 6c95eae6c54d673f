import { randomUUID } from 'node:crypto';
import { QueuescopeError, TERMINAL_STATUSES, toErrorInfo, type ErrorInfo, type OperationSnapshot, type OperationStatus } from '../../shared/domain';

/** Most errors kept per operation (newest last). */
export const MAX_OPERATION_ERRORS = 20;
/** Minimum time between two published progress snapshots, ms (≤ 4 per second). */
export const SNAPSHOT_INTERVAL_MS = 250;
/** Shortest span of samples a running operation's `rate` (and ETA) is computed over, ms. */
const MIN_RATE_SPAN_MS = 1000;
/** Window over which `rate` is measured, ms. */
const RATE_WINDOW_MS = 5000;
/** Finished operations kept for `get`/`list` (oldest finished are dropped first). */
const MAX_FINISHED_KEPT = 100;

/**
 * Allowed transitions. Terminal states (`completed`, `failed`, `cancelled`) have none, so they
 * cannot be left; anything not listed is ignored (a no-op), never an exception.
 */
const TRANSITIONS: Record<OperationStatus, readonly OperationStatus[]> = {
  pending: ['running', 'cancelled', 'failed'],
  running: ['paused', 'completed', 'failed', 'cancelled'],
  paused: ['running', 'cancelled', 'failed'],
  completed: [],
  failed: [],
  cancelled: [],
};

/** True when `from → to` is a legal transition. */
export function canTransition(from: OperationStatus, to: OperationStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

/** True for `completed`, `failed` and `cancelled`. */
export function isTerminal(status: OperationStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/** Absolute counters an operation reports (each optional; omitted ones keep their value). */
export interface OperationProgress {
  processed?: number;
  moved?: number;
  skipped?: number;
  failed?: number;
  /** Redrive: moved but possibly still in the source too. */
  possibleDuplicates?: number;
}

/** What an operation's `run` function receives. */
export interface OperationContext {
  /** Aborted when the operation is cancelled (or the window closes). Pass it to every adapter call. */
  readonly signal: AbortSignal;
  /** Sets counters (absolute values). Cheap: publication is throttled to ≤ 4 snapshots/s. */
  report(progress: OperationProgress): void;
  /** Records a non-fatal error (kept: the last 20). */
  addError(error: unknown): void;
  /** Sets the number of messages expected (null = unknown). Used for ETA. */
  setTotal(total: number | null): void;
  /**
   * Call between batches: resolves at once while running, waits while paused, and throws
   * `QueuescopeError('CANCELLED')` once cancelled.
   */
  checkpoint(): Promise<void>;
}

/** The work of an operation. Its resolved value becomes `snapshot.result`. */
export type OperationRun = (ctx: OperationContext) => Promise<Record<string, unknown>>;

interface Op {
  snap: OperationSnapshot;
  /** Live values; `snap` is the published (throttled) copy. */
  live: OperationSnapshot;
  controller: AbortController;
  samples: { t: number; processed: number }[];
  lastPublish: number;
  timer: ReturnType<typeof setTimeout> | null;
  resume: (() => void) | null;
  done: Promise<void>;
}

/** Options for tests: a clock. */
export interface OperationManagerOptions {
  now?: () => number;
}

/**
 * Runs long operations (export; later redrive, measurement) with a state machine
 * `pending → running → (paused ↔ running) → completed | failed | cancelled` whose terminal states
 * cannot be left (RedisInsight bulk-actions), throttled progress snapshots (≤ 4/s) with rate
 * (messages/s over the last 5 s) and ETA (ms), the last 20 errors, and cancellation by
 * `AbortSignal`. Pausing takes effect at the run's next `checkpoint()` (between batches).
 *
 * Status after the run settles: resolved → `completed` (even if a cancel arrived too late to stop
 * it: the work is done, and the snapshot says so truthfully); rejected after cancel or with
 * `CANCELLED` → `cancelled`; otherwise `failed` with the error as the last entry of `errors`.
 */
export class OperationManager {
  private readonly ops = new Map<string, Op>();
  private readonly listeners = new Set<(s: OperationSnapshot) => void>();
  private readonly now: () => number;

  constructor(options: OperationManagerOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Starts an operation. The run begins on the next tick; the returned snapshot is `pending`.
   * @param type e.g. `export`
   * @param label shown to people, e.g. "Export failed jobs of payments to payments.jsonl"
   */
  start(type: string, label: string, run: OperationRun): OperationSnapshot {
    const id = randomUUID();
    const snap: OperationSnapshot = {
      id,
      type,
      label,
      status: 'pending',
      total: null,
      processed: 0,
      moved: 0,
      skipped: 0,
      failed: 0,
      errors: [],
      rate: null,
      etaMs: null,
      startedAt: null,
      finishedAt: null,
      result: null,
    };
    const op: Op = {
      snap: { ...snap },
      live: snap,
      controller: new AbortController(),
      samples: [],
      lastPublish: 0,
      timer: null,
      resume: null,
      done: Promise.resolve(),
    };
    this.ops.set(id, op);
    op.done = new Promise<void>((resolveDone) => {
      setImmediate(() => {
        void this.execute(op, run).finally(resolveDone);
      });
    });
    return { ...op.snap };
  }

  private async execute(op: Op, run: OperationRun): Promise<void> {
    if (!canTransition(op.live.status, 'running')) return; // cancelled while pending
    op.live.startedAt = this.now();
    op.samples.push({ t: op.live.startedAt, processed: 0 });
    this.transition(op, 'running');
    const ctx: OperationContext = {
      signal: op.controller.signal,
      report: (p) => {
        if (isTerminal(op.live.status)) return;
        if (p.processed !== undefined) op.live.processed = p.processed;
        if (p.moved !== undefined) op.live.moved = p.moved;
        if (p.skipped !== undefined) op.live.skipped = p.skipped;
        if (p.failed !== undefined) op.live.failed = p.failed;
        if (p.possibleDuplicates !== undefined) op.live.possibleDuplicates = p.possibleDuplicates;
        this.schedulePublish(op);
      },
      addError: (e) => {
        if (isTerminal(op.live.status)) return;
        pushError(op.live, toErrorInfo(e));
        this.schedulePublish(op);
      },
      setTotal: (n) => {
        if (isTerminal(op.live.status)) return;
        op.live.total = n;
        this.schedulePublish(op);
      },
      checkpoint: async () => {
        throwIfCancelled(op.controller.signal);
        while (op.live.status === 'paused') {
          await new Promise<void>((res) => {
            op.resume = res;
          });
          throwIfCancelled(op.controller.signal);
        }
      },
    };
    try {
      const result = await run(ctx);
      op.live.result = result;
      this.finish(op, 'completed');
    } catch (e) {
      const info = toErrorInfo(e);
      if (op.controller.signal.aborted || info.code === 'CANCELLED') this.finish(op, 'cancelled');
      else {
        pushError(op.live, info);
        this.finish(op, 'failed');
      }
    }
  }

  private finish(op: Op, status: OperationStatus): void {
    op.live.finishedAt = this.now();
    if (status === 'completed' && op.live.total === null) op.live.total = op.live.processed;
    this.transition(op, status);
    this.prune();
  }

  /** Applies a transition if legal; publishes at once. Returns whether it happened. */
  private transition(op: Op, to: OperationStatus): boolean {
    if (!canTransition(op.live.status, to)) return false;
    op.live.status = to;
    if (isTerminal(to)) {
      op.live.finishedAt ??= this.now();
      op.live.etaMs = to === 'completed' ? 0 : null;
      op.live.rate = this.rate(op);
    }
    if (to === 'paused') {
      op.live.rate = null;
      op.live.etaMs = null;
    }
    if (to !== 'paused' && op.resume !== null) {
      const r = op.resume;
      op.resume = null;
      r();
    }
    this.publish(op);
    return true;
  }

  private schedulePublish(op: Op): void {
    const wait = op.lastPublish + SNAPSHOT_INTERVAL_MS - this.now();
    if (wait <= 0) {
      this.publish(op);
      return;
    }
    op.timer ??= setTimeout(() => {
      op.timer = null;
      this.publish(op);
    }, wait);
  }

  private publish(op: Op): void {
    if (op.timer !== null) {
      clearTimeout(op.timer);
      op.timer = null;
    }
    const t = this.now();
    if (op.live.status === 'running') {
      op.samples.push({ t, processed: op.live.processed });
      while (op.samples.length > 2 && (op.samples[0]?.t ?? t) < t - RATE_WINDOW_MS) op.samples.shift();
      op.live.rate = this.rate(op);
      const remaining = op.live.total === null ? null : Math.max(0, op.live.total - op.live.processed);
      op.live.etaMs = remaining === null || op.live.rate === null || op.live.rate <= 0 ? null : Math.round((remaining / op.live.rate) * 1000);
    }
    op.lastPublish = t;
    op.snap = { ...op.live, errors: [...op.live.errors], result: op.live.result === null ? null : { ...op.live.result } };
    const copy = op.snap;
    for (const l of this.listeners) {
      try {
        l({ ...copy });
      } catch {
        /* a listener's failure must not break the operation */
      }
    }
  }

  /** Messages per second over the sample window (the whole run for finished operations). */
  private rate(op: Op): number | null {
    const live = op.live;
    if (isTerminal(live.status) && live.startedAt !== null && live.finishedAt !== null) {
      const secs = (live.finishedAt - live.startedAt) / 1000;
      return secs > 0 ? live.processed / secs : null;
    }
    const first = op.samples[0];
    const last = op.samples[op.samples.length - 1];
    // At least 1 s of samples: over the first few hundred ms a rate limiter's initial burst (a full
    // token bucket) showed 6× the configured rate and an ETA far too short.
    if (first === undefined || last === undefined || last.t - first.t < MIN_RATE_SPAN_MS) return null;
    return (last.processed - first.processed) / ((last.t - first.t) / 1000);
  }

  private prune(): void {
    const finished = [...this.ops.values()].filter((o) => isTerminal(o.live.status));
    for (const o of finished.slice(0, Math.max(0, finished.length - MAX_FINISHED_KEPT))) this.ops.delete(o.live.id);
  }

  /**
   * The latest published snapshot (updated at most 4×/s while running; at once on status changes).
   * @throws QueuescopeError `INVALID_INPUT` for an unknown id.
   */
  get(id: string): OperationSnapshot {
    return { ...this.op(id).snap };
  }

  /** All known operations, oldest first. */
  list(): OperationSnapshot[] {
    return [...this.ops.values()].map((o) => ({ ...o.snap }));
  }

  /**
   * Requests cancellation: aborts the operation's signal. A pending or paused operation becomes
   * `cancelled` at once; a running one when its run notices (next adapter call / checkpoint).
   * Cancelling a finished operation is a no-op. Returns the current snapshot.
   * @throws QueuescopeError `INVALID_INPUT` for an unknown id.
   */
  cancel(id: string): OperationSnapshot {
    const op = this.op(id);
    if (isTerminal(op.live.status)) return { ...op.snap };
    op.controller.abort(new QueuescopeError('CANCELLED', 'The operation was cancelled.'));
    if (op.live.status === 'pending') {
      op.live.finishedAt = this.now();
      this.transition(op, 'cancelled');
    } else if (op.live.status === 'paused') {
      // Wake the run so its checkpoint throws CANCELLED; the run settles as cancelled.
      const r = op.resume;
      op.resume = null;
      r?.();
    }
    return { ...op.snap };
  }

  /** Cancels every unfinished operation (e.g. when the window closes). */
  cancelAll(): void {
    for (const op of this.ops.values()) if (!isTerminal(op.live.status)) this.cancel(op.live.id);
  }

  /**
   * Pauses a running operation; it stops at its next checkpoint. No-op unless running.
   * @throws QueuescopeError `INVALID_INPUT` for an unknown id.
   */
  pause(id: string): OperationSnapshot {
    const op = this.op(id);
    this.transition(op, 'paused');
    return { ...op.snap };
  }

  /** Resumes a paused operation. No-op unless paused. @throws `INVALID_INPUT` for an unknown id. */
  resume(id: string): OperationSnapshot {
    const op = this.op(id);
    this.transition(op, 'running');
    return { ...op.snap };
  }

  /** Resolves when the operation has settled (any terminal state); returns its final snapshot. */
  async wait(id: string): Promise<OperationSnapshot> {
    const op = this.op(id);
    await op.done;
    return { ...op.snap };
  }

  /** Subscribes to published snapshots (throttled as above). Returns an unsubscribe function. */
  subscribe(listener: (s: OperationSnapshot) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private op(id: string): Op {
    const op = this.ops.get(id);
    if (op === undefined) throw new QueuescopeError('INVALID_INPUT', `No operation with id "${id.slice(0, 80)}" (it may have finished long ago).`, { operationId: id });
    return op;
  }
}

function pushError(s: OperationSnapshot, e: ErrorInfo): void {
  s.errors.push(e);
  if (s.errors.length > MAX_OPERATION_ERRORS) s.errors.splice(0, s.errors.length - MAX_OPERATION_ERRORS);
}

function throwIfCancelled(signal: AbortSignal): void {
  if (signal.aborted) throw new QueuescopeError('CANCELLED', 'The operation was cancelled.');
}
