import type { ApiHandlers } from '../../shared/api/contract';
import type { BrokerAdapter } from '../adapters/types';
import type { InspectRulesState } from '../../shared/api/inspect';
import type { ProjectConfig } from '../../shared/config/project-config';
import type { ConnectionManager } from '../services/connection-manager';
import type { OperationManager } from '../services/operations';
import { assertPeekAllowed } from '../services/export';
import { defaultInspectState } from '../../shared/api/inspect-scope';
import { inspectQueue, readBrokerVersion } from './inspect';
import { resolveInspectSettings } from './settings';

type InspectSettings = ProjectConfig['inspect'];

/** What the inspect handlers need (a subset of `ApiDeps`). */
export interface InspectHandlerDeps {
  connections: ConnectionManager;
  operations: OperationManager;
}

/**
 * Handlers of the `inspect.*` API methods, spread into `createApiHandlers`:
 * - `inspect.rules.get` / `inspect.rules.set`: a connection's per-queue inspect settings. Saved
 *   connections keep them in profiles.json (`ProfileStore.saveInspectSettings`); the built-in
 *   demo and opened snapshot files are not saved connections, so their settings live for this
 *   session only (`persisted: false` says so). Both also return the broker version the
 *   connection's adapter reports (`brokerVersion`, read once per adapter; null when none), which
 *   the renderer passes to its own analyses for the size limit.
 * - `inspect.queue`: starts an `inspect` operation (progress: messages analysed) that reads the
 *   queue in `state`, or without one in `defaultInspectState` (every state of a snapshot, `waiting`
 *   of a live BullMQ queue; the report's `state`/`states` name it), with the same side-effect
 *   gate as peek/export (`PEEK_REFUSED` before anything is read unless `acceptSideEffects`), with the connection's rules for that queue, and (unless
 *   `compareDeadLetter` is false) its dead-letter partners for the duplicate comparison, with
 *   their own side effects, also under `acceptSideEffects`; the finished operation's
 *   `result.report` is an `InspectReport`.
 */
export function createInspectHandlers(deps: InspectHandlerDeps): Pick<ApiHandlers, 'inspect.rules.get' | 'inspect.rules.set' | 'inspect.queue'> {
  const { connections, operations } = deps;
  const session = new Map<string, InspectSettings>();
  const store = connections.profileStore;

  // Versions read per adapter object (a changed profile gets a new adapter); unknown ones are asked again next time.
  const versions = new WeakMap<BrokerAdapter, string>();
  const versionOf = async (connectionId: string): Promise<string | null> => {
    let adapter: BrokerAdapter;
    try {
      adapter = connections.adapter(connectionId);
    } catch {
      return null; // e.g. a saved config that no longer validates: the rules stay readable and editable
    }
    const known = versions.get(adapter);
    if (known !== undefined) return known;
    const v = await readBrokerVersion(adapter);
    if (v !== null) versions.set(adapter, v);
    return v;
  };

  const stateOf = async (connectionId: string): Promise<InspectRulesState> => {
    const profile = connections.get(connectionId); // throws INVALID_INPUT for unknown ids
    const saved = store.get(connectionId) !== undefined;
    const brokerVersion = await versionOf(connectionId);
    if (!saved) {
      return {
        connectionId,
        settings: session.get(connectionId) ?? { queues: [] },
        persisted: false,
        note: `${profile.builtIn ? 'The demo snapshot' : 'This snapshot file'} is not a saved connection: rules are kept for this session only.`,
        problem: null,
        brokerVersion,
      };
    }
    const r = store.inspectSettings(connectionId);
    return { connectionId, settings: r.settings ?? { queues: [] }, persisted: true, note: null, problem: r.problem, brokerVersion };
  };

  return {
    'inspect.rules.get': (input) => stateOf(input.connectionId),
    'inspect.rules.set': async (input) => {
      connections.get(input.connectionId);
      if (store.get(input.connectionId) !== undefined) await store.saveInspectSettings(input.connectionId, input.settings);
      else session.set(input.connectionId, input.settings);
      return stateOf(input.connectionId);
    },
    'inspect.queue': async (input) => {
      const adapter = connections.adapter(input.connectionId);
      const queue = await adapter.getQueue(input.queueId);
      assertPeekAllowed(queue, input.acceptSideEffects); // refuse before starting, like export
      const profile = connections.get(input.connectionId);
      const rulesState = await stateOf(input.connectionId);
      const settings = resolveInspectSettings([{ label: `connection "${profile.name}"`, inspect: rulesState.settings }], queue, profile.name);
      // No state given: the one default the CLI applies too (a snapshot: every state in the file;
      // a live BullMQ queue: waiting), so the same input gives the same report in both.
      const state = input.state ?? defaultInspectState(queue);
      const label = `Inspect ${state !== undefined ? `${state} messages of ` : ''}${queue.name}`;
      return operations.start('inspect', label, async (ctx) => {
        const report = await inspectQueue(
          adapter,
          queue.id,
          {
            rules: settings.rules,
            rulesSource: settings.source,
            brokerVersion: rulesState.brokerVersion,
            ...(state !== undefined ? { state } : {}),
            ...(input.limit !== undefined ? { limit: input.limit } : {}),
            ...(input.acceptSideEffects !== undefined ? { acceptSideEffects: input.acceptSideEffects } : {}),
            ...(input.rowLimit !== undefined ? { rowLimit: input.rowLimit } : {}),
            ...(input.compareDeadLetter !== undefined ? { compareDeadLetter: input.compareDeadLetter } : {}),
          },
          ctx,
        );
        return { report };
      });
    },
  };
}
