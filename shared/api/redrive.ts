import { z } from 'zod';
import { redriveFilterSchema } from '../redrive/filter';
import { MAX_PENDING_MIN_IDLE_MS } from '../redrive/types';

/**
 * API shapes of DLQ redrive (issue 4): `redrive.plan` (dry run), `redrive.start` (an operation
 * whose `result` is a `RedriveResult`), `redrive.history` (the audit log), and pause/resume of
 * operations. Pure zod schemas; output types are in `shared/redrive/types.ts` and
 * `AuditLogPageView` below.
 */

const id = z.string().min(1).max(512);

/** Which messages: all, a filter, or picked ids. */
export const redriveSelectionSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('all') }).strict(),
  z.object({ kind: z.literal('filter'), filter: redriveFilterSchema }).strict(),
  z.object({ kind: z.literal('ids'), ids: z.array(z.string().min(1).max(2048)).min(1).max(100_000) }).strict(),
]);

const common = {
  connectionId: id,
  /** The DLQ's queue id. */
  dlqId: z.string().min(1).max(2048),
  /** Peek state where the broker has states (BullMQ `failed`). */
  state: z.string().max(64).optional(),
  selection: redriveSelectionSchema,
  /** Move non-retryable failures too (default false). */
  includeNonRetryable: z.boolean().optional(),
  /** One message per idempotency key. */
  dedupeByKey: z.boolean().optional(),
  /** Also move Redis stream entries a consumer of a group read less than 60 s ago and has not acknowledged (default false: they stay, with a warning). */
  includePending: z.boolean().optional(),
  /** Idle threshold of those pending entries, ms, 1 ms – 7 days (default 60,000): entries delivered less than this long ago stay unless `includePending`. */
  pendingMinIdleMs: z.number().int().min(1).max(MAX_PENDING_MIN_IDLE_MS).optional(),
  /** Target queue id; absent/null = each message's original source. */
  targetQueueId: z.string().min(1).max(2048).nullable().optional(),
  /** Allow a target that loops back into the DLQ. */
  confirmLoop: z.boolean().optional(),
  /** Read the DLQ even where reading it can make the broker move messages on to another queue (an SQS DLQ with its own RedrivePolicy); refused with PEEK_REFUSED otherwise. */
  acceptSideEffects: z.boolean().optional(),
  /** Examine at most this many messages. */
  limit: z.number().int().min(1).max(100_000_000).nullable().optional(),
  /** `auto` (default), `never`, `require`. */
  native: z.enum(['auto', 'never', 'require']).optional(),
  /** Body bytes read per message, 1 B – 128 MiB (default 1 MiB + 1 KiB); larger bodies cannot be moved. Memory grows with it. */
  maxBodyBytes: z.number().int().min(1).max(128 * 1024 * 1024).optional(),
};

/** Input of `redrive.plan` (dry run). */
export const redrivePlanInputSchema = z.object({ ...common, samples: z.number().int().min(0).max(100).optional() }).strict();

/** Input of `redrive.start`. The backup goes to `<config dir>/backups/` (paths are not taken from the renderer). */
export const redriveStartInputSchema = z
  .object({
    ...common,
    /** Messages per second, null = unlimited. */
    ratePerSecond: z.number().positive().max(1_000_000).nullable().optional(),
    /** Messages per batch, 1–1000. */
    batchSize: z.number().int().min(1).max(1000).optional(),
  })
  .strict();

/**
 * Input of `redrive.reinject`: publishes a file named by an audit-log entry into a queue of the
 * connection — a redrive's backup (`file` absent or `"backup"`: the entry's `backupPath`) or a
 * re-inject's remainder file (`file: "remainder"`: the entry's `details.remainder.path`, the
 * messages that re-inject did not publish). The path comes from the audit log on the machine
 * running Queuescope, never from the renderer.
 */
export const redriveReinjectInputSchema = z
  .object({
    connectionId: id,
    /** Target queue id. */
    queueId: z.string().min(1).max(2048),
    /** The audit-log entry whose `backupPath` (or, with `file: "remainder"`, whose remainder file) is re-injected. */
    auditEntryId: z.string().min(1).max(128),
    /**
     * Which file of the entry: `"backup"` (default) its `backupPath`; `"remainder"` the remainder
     * file of a re-inject entry (`details.remainder`, see core/redrive/remainder.ts) — refused with
     * `INVALID_INPUT` for any other entry, one without a remainder, or with `includeNotMoved`.
     */
    file: z.enum(['backup', 'remainder']).optional(),
    ratePerSecond: z.number().positive().max(1_000_000).nullable().optional(),
    /**
     * Also publish the backup's messages that its redrive did not move (its audit entry's
     * `details.notMoved`, see shared/redrive/not-moved.ts). Default false: they are left out.
     */
    includeNotMoved: z.boolean().optional(),
  })
  .strict();

/** Input of `redrive.history`. */
export const redriveHistoryInputSchema = z
  .object({
    limit: z.number().int().min(1).max(1000).optional(),
    /** Page: entries with index < before (from `nextBefore`). */
    before: z.number().int().min(0).optional(),
    action: z.string().max(64).optional(),
  })
  .strict();

/** One audit-log entry as the app shows it (same fields as core/services/audit-log.ts `AuditEntry`). */
export interface AuditEntryView {
  version: 1;
  id: string;
  /** ms since epoch. */
  time: number;
  actor: 'app' | 'cli';
  action: string;
  connection: string | null;
  source: string | null;
  target: string | null;
  filter: string | null;
  status: string | null;
  counts: Record<string, number>;
  operationId: string | null;
  backupPath: string | null;
  details: Record<string, unknown>;
}

/** Output of `redrive.history`: newest first. */
export interface AuditLogPageView {
  entries: AuditEntryView[];
  total: number;
  /** Lines of the file that could not be read (skipped). */
  skippedLines: number;
  nextBefore: number | null;
  /** The log file. */
  path: string;
}
