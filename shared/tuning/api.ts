import { z } from 'zod';
import { TUNING_SOURCES, type CurrentSettings, type SourceOption } from './types';

/**
 * API schemas of visibility-timeout tuning (issue 5), registered in shared/api/contract.ts.
 * Units: ms everywhere.
 */

const id = z.string().min(1).max(512);
const queueId = z.string().min(1).max(2048);
const ms = z.number().min(0).max(10 * 365 * 86_400_000);

export const retryPolicySchema = z
  .object({
    attempts: z.number().int().min(1).max(50),
    type: z.enum(['fixed', 'exponential', 'visibility-timeout']),
    delayMs: ms,
    jitter: z.number().min(0).max(1),
    capMs: z.number().positive().nullable(),
  })
  .strict();

/** Durations pasted or loaded in the app (the renderer sends the text, never a path). At most 16 MiB of text. */
export const durationsTextSchema = z
  .object({
    text: z.string().max(16 * 1024 * 1024),
    format: z.enum(['csv', 'jsonl', 'log']),
    unit: z.enum(['ms', 's']).optional(),
    field: z.string().max(200).optional(),
    regex: z.string().max(1000).optional(),
    /** Shown in the report, e.g. the file name. */
    label: z.string().max(300).optional(),
  })
  .strict();

export const tuningSourcesInputSchema = z.object({ connectionId: id, queueId }).strict();

export const tuningMeasureInputSchema = z
  .object({
    connectionId: id,
    queueId,
    source: z.enum(TUNING_SOURCES),
    windowMs: z.number().int().min(1000).max(3_600_000).optional(),
    intervalMs: z.number().int().min(10).max(60_000).optional(),
    group: z.string().max(512).optional(),
    factor: z.number().min(1).max(100).optional(),
    currentTimeoutMs: ms.optional(),
    consumerOverrideMs: ms.optional(),
    acceptSideEffects: z.boolean().optional(),
    retryPolicy: retryPolicySchema.optional(),
    /** Required for `source: 'file'`. */
    durations: durationsTextSchema.optional(),
  })
  .strict();

export const tuningApplyInputSchema = z
  .object({
    connectionId: id,
    queueId,
    /** Whole seconds for SQS VisibilityTimeout (0 – 43,200,000 ms). */
    timeoutMs: z.number().int().min(0).max(43_200_000),
  })
  .strict();

/** Output of `tuning.sources`. */
export interface TuningSourcesResult {
  sources: SourceOption[];
  settings: CurrentSettings;
  /** True when `tuning.apply` can change the timeout on this broker (SQS). */
  canApply: boolean;
}

/** Output of `tuning.apply`. */
export interface TuningApplyResult {
  setting: string;
  before: Record<string, string>;
  after: Record<string, string>;
  /** Path of the audit log the change was recorded in. */
  auditLog: string;
}
