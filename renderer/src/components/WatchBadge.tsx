import { useMemo } from 'react';
import type { WatchedDlqView } from '../../../shared/api/watch';
import type { BrokerKind } from '../../../shared/domain/connection';
import type { QueueSummary } from '../../../shared/domain/queue';
import { useStore } from '../store';
import { useWatchStore, watchKey } from '../store/watch';
import './Watch.css';

/** The alert state of one watched DLQ: `alert` while an alert for it is not dismissed, `error` while it cannot be read. */
function useAlerting(): Set<string> {
  const alerts = useWatchStore((s) => s.alerts);
  return useMemo(() => new Set(alerts.filter((a) => a.type !== 'error').map((a) => watchKey(a.connectionId, a.queueId))), [alerts]);
}

function stateOf(w: WatchedDlqView, alerting: Set<string>): 'error' | 'alert' | 'quiet' {
  if (w.status === 'error') return 'error';
  return alerting.has(watchKey(w.connectionId, w.queueId)) ? 'alert' : 'quiet';
}

/**
 * Whether a queue can be watched for DLQ alerts: a DLQ, or a queue whose dead letters are its failed
 * state (BullMQ); never on a snapshot connection (a static file: nothing arrives, and its queues carry
 * the recorded broker, so the connection kind decides, not the queue). `connectionKind` undefined
 * (profile not loaded yet) = not watchable.
 */
export function isWatchable(q: QueueSummary, connectionKind: BrokerKind | undefined): boolean {
  if (connectionKind === undefined || connectionKind === 'snapshot' || q.broker === 'snapshot') return false;
  return q.isDeadLetterQueue || q.capabilities.peekStates.includes('failed');
}

/** In a queue-list row: the watch toggle for a DLQ and, while watched, a badge with its depth (orange while an alert is open, red while it cannot be read). */
export function WatchQueueBadge({ connectionId, queue }: { connectionId: string; queue: QueueSummary }) {
  const w = useWatchStore((s) => s.watched.find((x) => x.connectionId === connectionId && x.queueId === queue.id));
  const toggleWatch = useWatchStore((s) => s.toggleWatch);
  const connectionKind = useStore((s) => s.connections.find((c) => c.id === connectionId)?.config.kind);
  const alerting = useAlerting();
  if (!isWatchable(queue, connectionKind)) return null;
  const state = w === undefined ? null : stateOf(w, alerting);
  return (
    <>
      <button
        type="button"
        className="watch-toggle"
        aria-pressed={w !== undefined}
        data-testid="watch-toggle"
        title={w !== undefined ? 'Stop the DLQ alert for this queue' : 'Alert me when this DLQ receives messages (desktop notification and banner)'}
        onClick={(e) => {
          e.stopPropagation();
          void toggleWatch(connectionId, queue.id);
        }}
      >
        {w !== undefined ? 'Watching' : 'Watch'}
      </button>
      {w !== undefined && state !== null && (
        <span className={`watch-badge ${state}`} data-testid="watch-badge" data-state={state} title={state === 'error' ? `Cannot read: ${w.error?.message ?? 'unknown error'}` : `Watched DLQ: ${w.depth ?? '?'} messages`}>
          <span aria-hidden="true">●</span>
          {w.depth ?? '–'}
        </span>
      )}
    </>
  );
}

/** In the sidebar: how many DLQs of the connection are watched; orange while one has an open alert, red while one cannot be read. */
export function WatchConnectionBadge({ connectionId }: { connectionId: string }) {
  const all = useWatchStore((s) => s.watched);
  const connectionKind = useStore((s) => s.connections.find((c) => c.id === connectionId)?.config.kind);
  const alerting = useAlerting();
  const mine = all.filter((w) => w.connectionId === connectionId);
  // A snapshot is a static file: no watch badge even if a watch was set on it before.
  if (mine.length === 0 || connectionKind === 'snapshot') return null;
  const states = mine.map((w) => stateOf(w, alerting));
  const state = states.includes('error') ? 'error' : states.includes('alert') ? 'alert' : 'quiet';
  const withMessages = mine.filter((w) => (w.depth ?? 0) > 0).length;
  return (
    <span
      className={`watch-badge ${state}`}
      data-testid="watch-connection-badge"
      data-state={state}
      title={`${mine.length} watched DLQ${mine.length === 1 ? '' : 's'}, ${withMessages} holding messages`}
    >
      <span aria-hidden="true">●</span>
      {withMessages}/{mine.length}
    </span>
  );
}
