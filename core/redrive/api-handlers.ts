import type { ApiHandlers, ApiParsedInput } from '../../shared/api/contract';
import { describeConnection } from '../../shared/domain';
import type { ConnectionManager } from '../services/connection-manager';
import { QueuescopeError } from '../../shared/domain';
import { AuditLog, findAuditEntry, type AuditEntry } from '../services/audit-log';
import { pathExists } from './backup';
import { isTerminal, type OperationManager } from '../services/operations';
import { resolveInspectSettings } from '../inspect/settings';
import { planRedrive, remainderOf, resolveReinjectTarget, startRedrive, startReinject, type RedriveEnv, type RedriveRequest } from './engine';

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
 * The remainder file of the re-inject logged as `entry` (`details.remainder.path`), checked as a
 * backup is before it is put back: the path comes from the audit log, never from the renderer, and
 * must still exist. (A backup is also refused while the redrive writing it runs; a re-inject's
 * entry is appended only after its remainder file was written whole and fsynced, so a remainder an
 * entry names is always finished.)
 * @throws QueuescopeError `INVALID_INPUT` when the entry is not a re-inject, wrote no remainder (it
 *   published everything, or could not write one: `details.remainderError`), `includeNotMoved` is
 *   asked for (a remainder has no redrive record: every message of it is published anyway), or the
 *   file no longer exists.
 */
async function remainderToPutBack(entry: AuditEntry, includeNotMoved: boolean): Promise<string> {
  const what = `The ${entry.action} of ${entry.source ?? 'that file'}${entry.target !== null ? ` into ${entry.target}` : ''}`;
  if (entry.action !== 'reinject') throw new QueuescopeError('INVALID_INPUT', `${what} is not a re-inject: only a re-inject leaves a remainder file to put back.`);
  const rest = remainderOf(entry.details);
  if (rest === null) {
    const why = typeof entry.details.remainderError === 'string' ? entry.details.remainderError : null;
    throw new QueuescopeError(
      'INVALID_INPUT',
      why !== null
        ? `${what} could not write its remainder file (${why.slice(0, 300)}): ${entry.source ?? 'the file it re-injected'} still holds every message, with those it published.`
        : `${what} left no remainder file: it left no message unpublished.`,
    );
  }
  if (includeNotMoved) throw new QueuescopeError('INVALID_INPUT', `"Also publish the messages it did not move" applies to a redrive's backup; the remainder file ${rest.path} holds only messages that re-inject did not publish, and all of them are published.`, { path: rest.path });
  if (!(await pathExists(rest.path))) throw new QueuescopeError('INVALID_INPUT', `The remainder file ${rest.path} no longer exists.`, { path: rest.path });
  return rest.path;
}

/**
 * Handlers of `redrive.plan`, `redrive.analyse` (the same dry run as an operation with progress and
 * cancel; `result.plan`), `redrive.start`, `redrive.history`, `redrive.reinject` (a backup
 * named by its audit-log entry; refused with `INVALID_INPUT` while the redrive that writes that
 * backup is still pending, running or paused in this process; with `file: "remainder"`, the
 * remainder file of a re-inject entry, see {@link remainderToPutBack}; refused with `INVALID_INPUT`,
 * `details.reason: 'source-locked'`, before any operation starts while another re-inject of the same
 * file runs in this app or another process: `startReinject`'s lock), `operations.pause` and `operations.resume`, spread into
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
      if (input.file === 'remainder') {
        const path = await remainderToPutBack(entry, input.includeNotMoved === true);
        const env = envFor(input.connectionId);
        await resolveReinjectTarget(env, path, input.queueId); // QUEUE_NOT_FOUND before starting
        return startReinject(operations, env, { path, targetQueueId: input.queueId, ratePerSecond: input.ratePerSecond ?? null });
      }
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
