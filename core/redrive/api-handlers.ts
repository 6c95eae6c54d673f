import type { ApiHandlers, ApiParsedInput } from '../../shared/api/contract';
import { describeConnection } from '../../shared/domain';
import type { ConnectionManager } from '../services/connection-manager';
import { QueuescopeError } from '../../shared/domain';
import { AuditLog, findAuditEntry } from '../services/audit-log';
import { pathExists } from './backup';
import { isTerminal, type OperationManager } from '../services/operations';
import { resolveInspectSettings } from '../inspect/settings';
import { planRedrive, resolveReinjectTarget, startRedrive, startReinject, type RedriveEnv, type RedriveRequest } from './engine';

/** What the redrive handlers need (a subset of `ApiDeps`). */
export interface RedriveHandlerDeps {
  connections: ConnectionManager;
  operations: OperationManager;
  /** Config folder (audit log, default backups); default: the profile store's folder. */
  configDir?: string;
}

type PlanInput = ApiParsedInput<'redrive.plan'>;

function requestOf(input: PlanInput & { ratePerSecond?: number | null | undefined; batchSize?: number | undefined }): RedriveRequest {
  return {
    dlqId: input.dlqId,
    ...(input.state !== undefined ? { state: input.state } : {}),
    selection: input.selection.kind === 'filter' ? { kind: 'filter', filter: { ...input.selection.filter } } : input.selection,
    includeNonRetryable: input.includeNonRetryable === true,
    dedupeByKey: input.dedupeByKey === true,
    ...(input.includePending === true ? { includePending: true } : {}),
    ...(input.pendingMinIdleMs !== undefined ? { pendingMinIdleMs: input.pendingMinIdleMs } : {}),
    targetQueueId: input.targetQueueId ?? null,
    confirmLoop: input.confirmLoop === true,
    ...(input.acceptSideEffects === true ? { acceptSideEffects: true } : {}),
    limit: input.limit ?? null,
    native: input.native ?? 'auto',
    ratePerSecond: input.ratePerSecond ?? null,
    ...(input.batchSize !== undefined ? { batchSize: input.batchSize } : {}),
    ...('samples' in input && input.samples !== undefined ? { samples: input.samples } : {}),
    ...(input.maxBodyBytes !== undefined ? { maxBodyBytes: input.maxBodyBytes } : {}),
  };
}

/**
 * Handlers of `redrive.plan`, `redrive.analyse` (the same dry run as an operation with progress and
 * cancel; `result.plan`), `redrive.start`, `redrive.history`, `redrive.reinject` (a backup
 * named by its audit-log entry; refused with `INVALID_INPUT` while the redrive that writes that
 * backup is still pending, running or paused in this process), `operations.pause` and `operations.resume`, spread into
 * `createApiHandlers`. Runs are logged with actor `app` in
 * `<config dir>/audit-log.jsonl`; backups go to `<config dir>/backups/`.
 */
export function createRedriveHandlers(deps: RedriveHandlerDeps): Pick<ApiHandlers, 'redrive.plan' | 'redrive.analyse' | 'redrive.start' | 'redrive.history' | 'redrive.reinject' | 'operations.pause' | 'operations.resume'> {
  const { connections, operations } = deps;
  const configDir = (): string => deps.configDir ?? connections.profileStore.configDir;
  const auditLog = (): AuditLog => new AuditLog({ configDir: configDir() });
  const envFor = (connectionId: string): RedriveEnv => ({
    adapter: connections.adapter(connectionId),
    connectionLabel: describeConnection(connections.get(connectionId).config),
    actor: 'app',
    auditLog: auditLog(),
    configDir: configDir(),
  });
  /** The connection's saved idempotency-key rules for the DLQ (built-in rules when none match or none are saved). */
  const keyRulesFor = (connectionId: string, dlq: { name: string; id: string }): RedriveRequest['keyRules'] => {
    try {
      const profile = connections.get(connectionId);
      const saved = connections.profileStore.get(connectionId) !== undefined ? connections.profileStore.inspectSettings(connectionId).settings : null;
      return resolveInspectSettings([{ label: `connection "${profile.name}"`, inspect: saved }], dlq, profile.name).rules.keyRules;
    } catch {
      return [];
    }
  };
  return {
    'redrive.plan': async (input) => {
      const env = envFor(input.connectionId);
      const dlq = await env.adapter.getQueue(input.dlqId);
      return planRedrive(env, { ...requestOf(input), keyRules: keyRulesFor(input.connectionId, dlq) });
    },
    'redrive.analyse': async (input) => {
      const env = envFor(input.connectionId);
      const dlq = await env.adapter.getQueue(input.dlqId);
      const request = { ...requestOf(input), keyRules: keyRulesFor(input.connectionId, dlq) };
      return operations.start('redrive-analysis', `Analyse ${dlq.name} for redrive (dry run)`, async (ctx) => {
        const plan = await planRedrive(env, request, ctx.signal, (p) => {
          ctx.setTotal(p.expected);
          ctx.report({ processed: p.examined });
        });
        return { plan };
      });
    },
    'redrive.start': async (input) => {
      const env = envFor(input.connectionId);
      const dlq = await env.adapter.getQueue(input.dlqId);
      return startRedrive(operations, env, { ...requestOf(input), keyRules: keyRulesFor(input.connectionId, dlq) }, `Redrive ${dlq.name}`);
    },
    'redrive.history': async (input) => {
      const log = auditLog();
      const page = await log.read({
        ...(input.limit !== undefined ? { limit: input.limit } : {}),
        ...(input.before !== undefined ? { before: input.before } : {}),
        ...(input.action !== undefined ? { action: input.action } : {}),
      });
      return { ...page, path: log.path };
    },
    'redrive.reinject': async (input) => {
      const entry = await findAuditEntry(auditLog(), input.auditEntryId);
      if (entry === null) throw new QueuescopeError('INVALID_INPUT', `No audit-log entry with id "${input.auditEntryId.slice(0, 80)}".`);
      if (entry.backupPath === null) throw new QueuescopeError('INVALID_INPUT', `The ${entry.action} of ${entry.source ?? 'that queue'} has no backup to re-inject.`);
      if (!(await pathExists(entry.backupPath))) throw new QueuescopeError('INVALID_INPUT', `The backup ${entry.backupPath} no longer exists.`, { path: entry.backupPath });
      // A backup is written under its final name while its redrive runs: its name does not mean it is finished.
      const writer = entry.action === 'redrive' && entry.operationId !== null ? operations.list().find((o) => o.id === entry.operationId && !isTerminal(o.status)) : undefined;
      if (writer !== undefined) {
        throw new QueuescopeError(
          'INVALID_INPUT',
          `The redrive that writes the backup ${entry.backupPath} is still ${writer.status}: the backup is not finished, and the messages it holds are being moved now, so putting them back would publish them twice. Wait for the redrive to end (or cancel it), then put the backup back.`,
          { path: entry.backupPath, operationId: writer.id },
        );
      }
      const env = envFor(input.connectionId);
      await resolveReinjectTarget(env, entry.backupPath, input.queueId); // QUEUE_NOT_FOUND before starting
      return startReinject(operations, env, { path: entry.backupPath, targetQueueId: input.queueId, ratePerSecond: input.ratePerSecond ?? null, ...(input.includeNotMoved === true ? { includeNotMoved: true } : {}) });
    },
    'operations.pause': (input) => Promise.resolve(operations.pause(input.operationId)),
    'operations.resume': (input) => Promise.resolve(operations.resume(input.operationId)),
  };
}
