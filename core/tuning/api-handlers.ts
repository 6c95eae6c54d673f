import type { ApiHandlers } from '../../shared/api/contract';
import { describeConnection } from '../../shared/domain';
import type { TuningApplyResult, TuningSourcesResult } from '../../shared/tuning';
import { AuditLog } from '../services/audit-log';
import type { ConnectionManager } from '../services/connection-manager';
import type { OperationManager } from '../services/operations';
import { applyTimeout, listSources, startTuneOperation, tuningOf, type TuneOptions } from './run';

/** What the tuning handlers need (a subset of `ApiDeps`). */
export interface TuningHandlerDeps {
  connections: ConnectionManager;
  operations: OperationManager;
  /** The audit log (default: `<config dir>/audit-log.jsonl` of the profile store). */
  auditLog?: AuditLog;
}

/**
 * Handlers of the `tuning.*` API methods, spread into `createApiHandlers`:
 * - `tuning.sources`: the measurement sources of a queue (with confidence) and its current settings.
 * - `tuning.measure`: starts a `tune` operation (progress = share of the window); the finished
 *   operation's `result.report` is a `TuningReport` (shared/tuning). The renderer recomputes the
 *   recommendation for another factor locally with `buildReport`.
 * - `tuning.apply`: SQS SetQueueAttributes VisibilityTimeout, logged in the audit log; the UI
 *   shows the before/after diff and asks for confirmation first.
 */
export function createTuningHandlers(deps: TuningHandlerDeps): Pick<ApiHandlers, 'tuning.sources' | 'tuning.measure' | 'tuning.apply'> {
  const { connections, operations } = deps;
  const audit = (): AuditLog => deps.auditLog ?? new AuditLog({ configDir: connections.profileStore.configDir });
  return {
    'tuning.sources': async (input): Promise<TuningSourcesResult> => {
      const adapter = connections.adapter(input.connectionId);
      const tuning = tuningOf(adapter);
      const [sources, settings] = await Promise.all([listSources(adapter, input.queueId), tuning.readSettings(input.queueId)]);
      return { sources, settings, canApply: tuning.applyTimeout !== undefined };
    },
    'tuning.measure': (input) => {
      const adapter = connections.adapter(input.connectionId);
      tuningOf(adapter); // UNSUPPORTED at once for snapshots
      const options: TuneOptions = {
        source: input.source,
        ...(input.windowMs !== undefined ? { windowMs: input.windowMs } : {}),
        ...(input.intervalMs !== undefined ? { intervalMs: input.intervalMs } : {}),
        ...(input.group !== undefined ? { group: input.group } : {}),
        ...(input.factor !== undefined ? { factor: input.factor } : {}),
        ...(input.currentTimeoutMs !== undefined ? { currentTimeoutMs: input.currentTimeoutMs } : {}),
        ...(input.consumerOverrideMs !== undefined ? { consumerOverrideMs: input.consumerOverrideMs } : {}),
        ...(input.acceptSideEffects !== undefined ? { acceptSideEffects: input.acceptSideEffects } : {}),
        ...(input.retryPolicy !== undefined ? { retryPolicy: input.retryPolicy } : {}),
        ...(input.durations !== undefined
          ? {
              durations: {
                text: input.durations.text,
                format: input.durations.format,
                ...(input.durations.unit !== undefined ? { unit: input.durations.unit } : {}),
                ...(input.durations.field !== undefined ? { field: input.durations.field } : {}),
                ...(input.durations.regex !== undefined ? { regex: input.durations.regex } : {}),
                ...(input.durations.label !== undefined ? { label: input.durations.label } : {}),
              },
            }
          : {}),
      };
      return Promise.resolve(startTuneOperation(operations, `Measure processing time of ${input.queueId} (${input.source})`, adapter, input.queueId, options));
    },
    'tuning.apply': async (input): Promise<TuningApplyResult> => {
      const adapter = connections.adapter(input.connectionId);
      const log = audit();
      const change = await applyTimeout(adapter, input.queueId, input.timeoutMs, log, { actor: 'app', connection: describeConnection(connections.config(input.connectionId)), reason: 'tuning panel' });
      return { ...change, auditLog: log.path };
    },
  };
}
