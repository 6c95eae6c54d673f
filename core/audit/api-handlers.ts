import type { ApiHandlers } from '../../shared/api/contract';
import { describeConnection, QueuescopeError } from '../../shared/domain';
import type { ConnectionManager } from '../services/connection-manager';
import { AuditLog } from '../services/audit-log';
import { runAudit } from './run';

/** What the audit handlers need (a subset of `ApiDeps`). */
export interface AuditHandlerDeps {
  connections: ConnectionManager;
  /** Where applied fixes are logged (default: the audit log in the connections' config folder). */
  auditLog?: AuditLog;
  /** Folder the project file is searched from, upward (default: the process's working folder). */
  projectDir?: string;
}

/**
 * Handlers of the `audit.*` API methods, spread into `createApiHandlers`:
 * - `audit.run`: audits one connection (project file `queuescope.config.json/.yaml` found upward
 *   from `projectDir`, with its thresholds, severities and suppressions) and returns the report.
 * - `audit.fix.preview`: the before/after of a one-click fix, read fresh from the broker; changes nothing.
 * - `audit.fix.apply`: applies it and appends an `audit-fix` entry (connection label, queue, before/after)
 *   to the audit log; a failed apply is logged too, with its error.
 */
export function createAuditHandlers(deps: AuditHandlerDeps): Pick<ApiHandlers, 'audit.run' | 'audit.fix.preview' | 'audit.fix.apply'> {
  const { connections } = deps;
  let log: AuditLog | null = deps.auditLog ?? null;
  const auditor = (connectionId: string) => {
    const adapter = connections.adapter(connectionId);
    if (!adapter.audit) throw new QueuescopeError('UNSUPPORTED', 'This connection cannot be audited: the audit reads live broker configuration, which a snapshot does not hold.');
    return adapter.audit;
  };
  return {
    'audit.run': (input) => runAudit([connections.adapter(input.connectionId)], { cwd: deps.projectDir ?? process.cwd(), ...(input.pattern !== undefined ? { queuePattern: input.pattern } : {}) }),
    'audit.fix.preview': (input) => auditor(input.connectionId).previewFix(input.fix),
    'audit.fix.apply': async (input) => {
      const a = auditor(input.connectionId);
      const connection = describeConnection(connections.get(input.connectionId).config);
      log ??= new AuditLog({ configDir: connections.profileStore.configDir });
      try {
        const result = await a.applyFix(input.fix);
        await log.append({ actor: 'app', action: 'audit-fix', connection, target: input.fix.queueName, status: 'completed', details: { fix: input.fix.kind, summary: result.summary, before: result.before, after: result.after } });
        return result;
      } catch (e) {
        await log.append({ actor: 'app', action: 'audit-fix', connection, target: input.fix.queueName, status: 'failed', details: { fix: input.fix.kind, error: e instanceof Error ? e.message : String(e) } }).catch(() => undefined);
        throw e;
      }
    },
  };
}
