import { z } from 'zod';
import { inspectConfigSchema, type ProjectConfig } from '../config/project-config';
import type { AnalyzeOptions, DuplicateComparison, KeyVerdictKind, PayloadVerdictKind, RedeliverySummary } from '../analysis/types';
import type { QueueSummary } from '../domain';

/**
 * API shapes of the redelivery-safety inspection (issue 3): what `inspect.queue` reports (also
 * printed by `queuescope inspect --json`) and the per-connection rule settings of
 * `inspect.rules.get/set`. Pure types and zod schemas.
 */

const id = z.string().min(1).max(512);

/** Input of `inspect.queue`. */
export const inspectQueueInputSchema = z
  .object({
    connectionId: id,
    queueId: z.string().min(1).max(2048),
    /**
     * Peek state (e.g. BullMQ `failed`); absent = `defaultInspectState` (shared/api/inspect-scope.ts):
     * `waiting` for a live BullMQ queue, every state a snapshot file holds, else the adapter's only state.
     */
    state: z.string().max(64).optional(),
    /** Most messages to analyse; absent = the whole queue (state) where it can be paged. */
    limit: z.number().int().min(1).max(10_000_000).optional(),
    /** Needed where a peek may dead-letter messages (see capabilities); refused with PEEK_REFUSED otherwise. */
    acceptSideEffects: z.boolean().optional(),
    /** Per-message rows in the report (default 1000). */
    rowLimit: z.number().int().min(0).max(100_000).optional(),
    /**
     * Also read the queue's dead-letter partners (its DLQ, or the queues that dead-letter into it;
     * `deadLetterTargets` / `deadLetterSources`) to compare duplicate keys (default true). Those
     * reads have the partners' own peek side effects, which `acceptSideEffects` also accepts;
     * false reads only the inspected queue (the CLI's `--no-dead-letter`).
     */
    compareDeadLetter: z.boolean().optional(),
  })
  .strict();

/** Input of `inspect.rules.set`: the whole `inspect` section for the connection (replaces what was saved). */
export const inspectRulesSetInputSchema = z.object({ connectionId: id, settings: inspectConfigSchema }).strict();

/** A connection's inspect settings as `inspect.rules.get/set` return them. */
export interface InspectRulesState {
  connectionId: string;
  /** The `inspect` section (same shape as the project file's): per-queue-pattern key rules, snapshot fields… */
  settings: ProjectConfig['inspect'];
  /** True when saved with the connection profile; false for the demo and opened snapshot files (session only). */
  persisted: boolean;
  /** Why not persisted, in words; null when persisted. */
  note: string | null;
  /** A stored value that did not validate (it is ignored and kept in the file); null when fine. */
  problem: string | null;
  /**
   * The broker version the connection reports (e.g. RabbitMQ `3.13.7`, from the adapter's
   * `brokerVersion` capability), for the analysis' default size limit (`AnalyzeOptions.brokerVersion`);
   * null when the adapter reports none (snapshots, Redis, SQS) or it could not be read.
   */
  brokerVersion: string | null;
}

/** One message's verdicts, as the CLI table and the app's drill-down show them. */
export interface InspectedMessage {
  id: string;
  position: number | null;
  /** Broker state (BullMQ `failed`, `ready`…), when the broker has one. */
  state: string | null;
  /** The idempotency key, null when none was found. */
  key: string | null;
  /** Where the key was found, in words ("AMQP message_id", "rule {body.orderId}:{body.operation}"); null when missing. */
  keySource: string | null;
  /** `user` when one of the queue's rules found the key. */
  keyOrigin: 'user' | 'builtin' | null;
  keyVerdict: KeyVerdictKind;
  /** One sentence citing the fields. */
  keyReason: string;
  /** Overall verdict: payload and size. */
  verdict: PayloadVerdictKind;
  /** The payload verdict as shown (`flag`, `review`, `ok`, `ok (intentional snapshot: order.*)`). */
  payloadLabel: string;
  /** The first (most severe) reason, null for `ok` without remarks. */
  topReason: string | null;
  reasons: string[];
  operation: string | null;
  /** Body size in bytes as the broker reported it. */
  bytes: number;
}

/** A duplicate comparison between the inspected queue and a related one. */
export interface InspectComparison {
  /** `dead-letter-source`: the inspected queue is a DLQ and this is a queue that dead-letters into it; `dead-letter-target`: the reverse; `snapshot`: the same queue in another snapshot. */
  relation: 'dead-letter-source' | 'dead-letter-target' | 'snapshot';
  /** The other queue (or snapshot), as shown. */
  label: string;
  queueId: string | null;
  /** The comparison (side `a` = the inspected queue, `b` = the other); null when it could not be made. */
  result: DuplicateComparison | null;
  /** Messages read from the other side and whether that was all of it. */
  read: number;
  partial: boolean;
  /** Why the comparison is missing or partial, in words (e.g. the other queue's peek could dead-letter messages). */
  note: string | null;
}

/** What an inspection reports. JSON-safe (crosses IPC, printed by `inspect --json`). */
export interface InspectReport {
  queue: { id: string; name: string; kind: QueueSummary['kind']; broker: QueueSummary['broker']; isDeadLetterQueue: boolean };
  /** The state asked for (given, or the default of `defaultInspectState`, e.g. `waiting` for a live BullMQ queue); null = no state filter. */
  state: string | null;
  /**
   * The states read (`inspectedStates`): `[state]`, or for a snapshot read without a state every
   * state its messages carry (e.g. `waiting`, `delayed`, `failed`). Absent for a live queue read
   * without a state (it has one, unnamed). `describeInspectScope` puts it in words.
   */
  states?: string[];
  /** Where the rules came from (see `resolveInspectSettings`). */
  rulesSource: string;
  rules: NonNullable<AnalyzeOptions['rules']>;
  /** Messages analysed. */
  analysed: number;
  /** The queue's (state's) message count when known. */
  total: number | null;
  partial: boolean;
  partialReason: string | null;
  /**
   * How the read went when the queue moved while it was read (a Redis list pushed or popped
   * between pages): re-aligned, or — also in `partialReason` — entries may have been skipped or
   * read twice; and, for a snapshot file, what its completeness check could not say (an older file
   * without the export's message count: a cut cannot be checked; queue sections missing after this
   * one). Absent = nothing to note.
   */
  notes?: string[];
  /**
   * Side effects the reads caused on the broker (empty for Redis and snapshots): the inspected
   * queue's, then those of each compared queue read (its DLQ or source), prefixed
   * `<label> (read for the duplicate comparison): `.
   */
  sideEffects: string[];
  summary: RedeliverySummary;
  /** Per-message verdicts, in queue order: the first `rowLimit`, plus every message a summary group names as an example. */
  messages: InspectedMessage[];
  /** True when `messages` leaves out some of the analysed messages. */
  messagesTruncated: boolean;
  comparisons: InspectComparison[];
  /** Wall time of the whole inspection, ms. */
  elapsedMs: number;
}

