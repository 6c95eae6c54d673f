import { z } from 'zod';
import {
  connectionConfigSchema,
  type ConnectionProfile,
  type ConnectionTestResult,
  type ErrorInfo,
  type OperationSnapshot,
  type PeekPage,
  type QueueSummary,
} from '../domain';
import { API_METHOD_NAMES, type ApiMethodName } from './methods';
import { auditFixInputSchema, auditRunInputSchema } from '../audit/api';
import type { AuditReport, FixPreview } from '../audit/types';
import { inspectQueueInputSchema, inspectRulesSetInputSchema, type InspectRulesState } from './inspect';
import { tuningApplyInputSchema, tuningMeasureInputSchema, tuningSourcesInputSchema, type TuningApplyResult, type TuningSourcesResult } from '../tuning/api';
import { redriveHistoryInputSchema, redrivePlanInputSchema, redriveReinjectInputSchema, redriveStartInputSchema, type AuditLogPageView } from './redrive';
import type { RedrivePlan } from '../redrive/types';
import { watchEventsInputSchema, watchListInputSchema, watchSetInputSchema, type WatchEventsPage, type WatchListView } from './watch';

/**
 * The one API between the renderer and the main process (and, in the browser
 * harness, between the page and the Node bridge). Every method has a zod input
 * schema — main validates every call with it — and an output type.
 *
 * The preload builds `window.queuescope` from {@link API_METHODS}; main registers
 * one handler per method; the renderer imports only the types.
 */

const id = z.string().min(1).max(512);
const queueId = z.string().min(1).max(2048);

export const peekOptionsSchema = z
  .object({
    cursor: z.string().max(4096).nullable().optional(),
    limit: z.number().int().min(1).max(1000),
    direction: z.enum(['oldest', 'newest']).optional(),
    state: z.string().max(64).optional(),
    acceptSideEffects: z.boolean().optional(),
    maxBodyBytes: z.number().int().min(1).max(8 * 1024 * 1024).optional(),
  })
  .strict();

export const apiInputSchemas = {
  'app.info': z.object({}).strict(),
  'connections.list': z.object({}).strict(),
  'connections.save': z
    .object({
      /** Absent = create. */
      id: id.optional(),
      name: z.string().trim().min(1).max(200),
      /** May include secrets; they are split out and stored encrypted. Omitted secrets keep the stored ones. */
      config: connectionConfigSchema,
    })
    .strict(),
  'connections.remove': z.object({ id }).strict(),
  'connections.test': z.union([z.object({ id }).strict(), z.object({ config: connectionConfigSchema }).strict()]),
  'queues.list': z.object({ connectionId: id, pattern: z.string().max(512).optional() }).strict(),
  'queues.get': z.object({ connectionId: id, queueId }).strict(),
  'messages.peek': z.object({ connectionId: id, queueId, options: peekOptionsSchema }).strict(),
  'snapshots.export': z
    .object({
      connectionId: id,
      queueId,
      /** Peek state to export (e.g. BullMQ `failed`). */
      state: z.string().max(64).optional(),
      /** Export only these message ids (from the current list); absent = the whole queue/state. */
      messageIds: z.array(z.string().max(1024)).max(100_000).optional(),
      /** Needed for brokers whose peek has side effects (see capabilities). */
      acceptSideEffects: z.boolean().optional(),
      /**
       * Where to write, typed by the user — only where the runtime has no save dialog
       * (`AppInfo.pathInput`; the desktop app refuses it). Absolute, or relative to
       * `AppInfo.defaultExportDir`; an existing folder gets the suggested file name; an existing
       * file is never overwritten (a `-1`, `-2`… suffix is added; the written path is `result.path`).
       */
      path: z.string().trim().min(1).max(4096).optional(),
    })
    .strict(),
  'snapshots.open': z
    .object({
      /** The snapshot file on the machine running Queuescope — only where `AppInfo.pathInput` (the desktop app shows its open dialog and refuses this). */
      path: z.string().trim().min(1).max(4096).optional(),
    })
    .strict(),
  'operations.get': z.object({ operationId: id }).strict(),
  'operations.cancel': z.object({ operationId: id }).strict(),
  /** Pauses a running operation at its next batch boundary (a native redrive is cancelled on the broker and restarted on resume). */
  'operations.pause': z.object({ operationId: id }).strict(),
  'operations.resume': z.object({ operationId: id }).strict(),
  /** Redelivery safety of a queue (issue 3): starts an `inspect` operation; see shared/api/inspect.ts. */
  'inspect.queue': inspectQueueInputSchema,
  'inspect.rules.get': z.object({ connectionId: id }).strict(),
  'inspect.rules.set': inspectRulesSetInputSchema,
  /** Visibility-timeout tuning (issue 5); see shared/tuning/api.ts. */
  'tuning.sources': tuningSourcesInputSchema,
  'tuning.measure': tuningMeasureInputSchema,
  'tuning.apply': tuningApplyInputSchema,
  /** DLQ redrive (issue 4), see shared/api/redrive.ts: dry run, start (an operation), audit log. */
  'redrive.plan': redrivePlanInputSchema,
  /** The same dry run as an operation (progress, cancel); when completed, `result.plan` is the `RedrivePlan`. */
  'redrive.analyse': redrivePlanInputSchema,
  'redrive.start': redriveStartInputSchema,
  'redrive.history': redriveHistoryInputSchema,
  'redrive.reinject': redriveReinjectInputSchema,
  /** Configuration audit (issue 6), see shared/audit/api.ts: run, one-click fix preview and apply (logged). */
  'audit.run': auditRunInputSchema,
  'audit.fix.preview': auditFixInputSchema,
  'audit.fix.apply': auditFixInputSchema,
  /** DLQ alerts (issue 4), see shared/api/watch.ts: choose the DLQs to watch, list them, poll their events. */
  'watch.set': watchSetInputSchema,
  'watch.list': watchListInputSchema,
  'watch.events': watchEventsInputSchema,
} as const;

export type ApiMethod = keyof typeof apiInputSchemas;
export { channelFor, isApiMethod } from './methods';
export const API_METHODS: readonly ApiMethod[] = API_METHOD_NAMES;

// Compile-time check that methods.ts and the schemas list the same methods.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
export const API_METHODS_MATCH: Same<ApiMethod, ApiMethodName> = true;

export interface AppInfo {
  version: string;
  /** `electron` in the desktop app, `web` in the browser bridge. */
  runtime: 'electron' | 'web';
  /** Connection id of the bundled demo snapshot, when present. */
  demoConnectionId: string | null;
  /** Problems found at start-up that the user should see, one sentence each (e.g. a corrupt profiles file that was moved aside). */
  warnings: string[];
  /**
   * The runtime has no native file dialogs: the UI asks for a path on the machine running
   * Queuescope (`snapshots.open` / `snapshots.export` `path`). True in the browser bridge.
   */
  pathInput: boolean;
  /** Where exports go by default and relative export paths are resolved (browser bridge); null in the desktop app (its save dialog chooses). */
  defaultExportDir: string | null;
}

/**
 * A file name for an export: `<queue>[-<state>]-<YYYY-MM-DD>.jsonl` (UTC date), with characters
 * other than `A-Z a-z 0-9 . _ -` replaced by `_`, leading dots/underscores dropped, at most 120
 * characters before the date; `queue` when nothing is left.
 */
export function suggestedSnapshotName(queueName: string, state: string | undefined, now = new Date()): string {
  const day = now.toISOString().slice(0, 10);
  const base = [queueName, state].filter((x): x is string => x !== undefined && x !== '').join('-');
  const safe = base.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '').slice(0, 120) || 'queue';
  return `${safe}-${day}.jsonl`;
}

export interface ApiOutputs {
  'app.info': AppInfo;
  'connections.list': ConnectionProfile[];
  'connections.save': ConnectionProfile;
  'connections.remove': { removed: boolean };
  'connections.test': ConnectionTestResult;
  'queues.list': QueueSummary[];
  'queues.get': QueueSummary;
  'messages.peek': PeekPage;
  /** Null when the user cancelled the save dialog. */
  'snapshots.export': OperationSnapshot | null;
  /** The snapshot opened as a (read-only, session-only) connection; null when the dialog was cancelled. */
  'snapshots.open': ConnectionProfile | null;
  'operations.get': OperationSnapshot;
  'operations.cancel': OperationSnapshot;
  'operations.pause': OperationSnapshot;
  'operations.resume': OperationSnapshot;
  /** The `inspect` operation; when completed, `result.report` is an `InspectReport` (shared/api/inspect.ts). */
  'inspect.queue': OperationSnapshot;
  'inspect.rules.get': InspectRulesState;
  'inspect.rules.set': InspectRulesState;
  'tuning.sources': TuningSourcesResult;
  /** The `tune` operation; when completed, `result.report` is a `TuningReport` (shared/tuning). */
  'tuning.measure': OperationSnapshot;
  'tuning.apply': TuningApplyResult;
  'redrive.plan': RedrivePlan;
  'redrive.analyse': OperationSnapshot;
  /** The `redrive` operation; when completed, `result` is a `RedriveResult` (shared/redrive/types.ts). */
  'redrive.start': OperationSnapshot;
  'redrive.history': AuditLogPageView;
  /** The `reinject` operation; when completed, `result` is `{ path, targetQueueId, targetName, read, published, failed, leftOut, heldBack, remainder, remainderError, auditId, notes }` (leftOut: backup messages its redrive did not move, left out unless `includeNotMoved`; heldBack: of `failed`, messages not sent because an earlier message of their SQS FIFO group was not published in the run; remainder: `{ path, messages }` of the file written with the messages not published, in order — re-inject it to publish only them — or null; remainderError: why it could not be written, or null; a cancelled or failed run carries this result in its last error's `details.result`; notes: what it could not restore, e.g. the field order an older backup did not record, and what it left out). */
  'redrive.reinject': OperationSnapshot;
  'audit.run': AuditReport;
  'audit.fix.preview': FixPreview;
  /** The settings read back after the change; an `audit-fix` entry is appended to the audit log. */
  'audit.fix.apply': FixPreview;
  'watch.set': WatchListView;
  'watch.list': WatchListView;
  /** Events with `seq > since` (polling; the cursor of the last page). */
  'watch.events': WatchEventsPage;
}

export type ApiInput<M extends ApiMethod> = z.input<(typeof apiInputSchemas)[M]>;
export type ApiParsedInput<M extends ApiMethod> = z.output<(typeof apiInputSchemas)[M]>;
export type ApiOutput<M extends ApiMethod> = ApiOutputs[M];

/** What crosses the boundary: errors travel as data so their code survives IPC. */
export type ApiResult<T> = { ok: true; value: T } | { ok: false; error: ErrorInfo };

/** The object the renderer calls: `window.queuescope.invoke('queues.list', { connectionId })`. */
export interface QueuescopeApi {
  invoke<M extends ApiMethod>(method: M, input: ApiInput<M>): Promise<ApiResult<ApiOutput<M>>>;
}


/** Server-side handler map: main and the browser bridge implement exactly this. */
export type ApiHandlers = { [M in ApiMethod]: (input: ApiParsedInput<M>) => Promise<ApiOutput<M>> };
