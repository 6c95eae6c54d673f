import type { QueueSummary } from '../domain';

/**
 * Which states of a queue an inspection reads when none is named, and how a report says what it
 * read. One default for `queuescope inspect`, the `inspect.queue` API (desktop app and web runtime)
 * and the app's queue view, so the same queue or snapshot gives the same answer in each.
 */

/**
 * The message count per state (`meta.state`) that the snapshot section `queue` holds, in file
 * order, from `config.snapshot.states` (set by the snapshot adapter; messages without a state are
 * not counted); null when `queue` was not read from a snapshot file.
 */
export function snapshotStateCounts(queue: QueueSummary): Record<string, number> | null {
  const raw = queue.config.snapshot;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const o = raw as Record<string, unknown>;
  if (typeof o.messages !== 'number') return null;
  const out: Record<string, number> = {};
  if (o.states !== null && typeof o.states === 'object') {
    for (const [k, v] of Object.entries(o.states as Record<string, unknown>)) if (typeof v === 'number') out[k] = v;
  }
  return out;
}

/**
 * The state to inspect `queue` in when the user names none (undefined = no state filter):
 * - a queue read from a snapshot file: undefined — every state the file holds. A snapshot is a
 *   frozen copy of what its writer read (one export per state, or a section holding several, like
 *   the demo's BullMQ waiting, delayed, failed and completed jobs); reading one state of it would
 *   leave out jobs the file recorded, and nothing in it will change before a second read.
 * - a live BullMQ queue: `waiting`, the adapter's default; its other states (delayed,
 *   prioritized, failed…) are read by naming them.
 * - any other queue: undefined (its adapter has one state).
 */
export function defaultInspectState(queue: QueueSummary): string | undefined {
  if (snapshotStateCounts(queue) !== null) return undefined;
  return queue.kind === 'bullmq' ? 'waiting' : undefined;
}

/**
 * The state the app's queue view reads (peeks and analyses) when it opens, before the user picks
 * one: for a snapshot, {@link defaultInspectState} (every state in the file, the CLI's default
 * too); for a live queue with states, the first of `capabilities.peekStates` holding messages
 * (`counts`), else the first; undefined for a queue without states.
 */
export function defaultViewState(queue: QueueSummary): string | undefined {
  if (snapshotStateCounts(queue) !== null) return defaultInspectState(queue);
  const states = queue.capabilities.peekStates;
  if (states.length === 0) return undefined;
  return states.find((s) => (queue.counts[s] ?? 0) > 0) ?? states[0];
}

/**
 * The states an inspection of `queue` reads, for `InspectReport.states`: `[state]` when a state
 * was asked for; without one, for a snapshot section, every state its messages carry, in file
 * order (empty when none carries one); undefined for a live queue read without a state (it has
 * one, unnamed).
 */
export function inspectedStates(queue: QueueSummary, state: string | undefined): string[] | undefined {
  if (state !== undefined) return [state];
  const counts = snapshotStateCounts(queue);
  return counts === null ? undefined : Object.keys(counts);
}

/**
 * The scope of a report in words, for its header: `state failed` for one asked state, `all states
 * in the snapshot: waiting, delayed, failed` for a snapshot read without a state (its `states`),
 * null when the read had no states to name.
 */
export function describeInspectScope(report: { state: string | null; states?: string[] | undefined }): string | null {
  if (report.state !== null) return `state ${report.state}`;
  const states = report.states ?? [];
  if (states.length === 0) return null;
  return `all states in the snapshot: ${states.join(', ')}`;
}
