import { useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import { describeConnection } from '../../../shared/domain/connection';
import type { QueueSummary } from '../../../shared/domain/queue';
import { useAutoRefresh, useNow } from '../lib/hooks';
import { count, matchesFilter, relativeTime } from '../lib/format';
import { useStore } from '../store';
import { REFRESH_INTERVALS_MS } from '../store/ui';
import { rowDepth, useWatchStore } from '../store/watch';
import { Empty, ErrorState, KindBadge, Loading } from './common';
import { WatchQueueBadge } from './WatchBadge';
import { Revealed } from './TextViews';

const ROW_HEIGHT = 46;

/** What a snapshot queue's `config.snapshot` says about the file (see the snapshot adapter). */
export interface SnapshotInfo {
  /** Messages the file holds for this queue. */
  messages: number;
  /** Messages in the file per state. */
  states: Record<string, number>;
  /** Export time, ms since epoch. */
  exportedAt: number | null;
  partial: boolean;
  partialReason: string | null;
}

/** Reads `config.snapshot` of a queue from a snapshot connection; `null` for live queues or a malformed value. */
export function snapshotInfo(q: QueueSummary): SnapshotInfo | null {
  const raw = q.config.snapshot;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const o = raw as Record<string, unknown>;
  if (typeof o.messages !== 'number') return null;
  const states: Record<string, number> = {};
  if (o.states !== null && typeof o.states === 'object') {
    for (const [k, v] of Object.entries(o.states as Record<string, unknown>)) if (typeof v === 'number') states[k] = v;
  }
  return {
    messages: o.messages,
    states,
    exportedAt: typeof o.exportedAt === 'number' ? o.exportedAt : null,
    partial: o.partial === true,
    partialReason: typeof o.partialReason === 'string' ? o.partialReason : null,
  };
}

/** The queues of one connection: counts, dead-letter links, filter, refresh and auto-refresh. */
export function QueueList({ connectionId }: { connectionId: string }) {
  const profile = useStore((s) => s.connections.find((c) => c.id === connectionId));
  const list = useStore((s) => s.queueLists[connectionId]);
  const loadQueues = useStore((s) => s.loadQueues);
  const navigate = useStore((s) => s.navigate);
  const prefs = useStore((s) => s.preferences);
  const setPreference = useStore((s) => s.setPreference);
  const isDemo = useStore((s) => s.appInfo?.demoConnectionId === connectionId);
  const [filter, setFilter] = useState('');

  useEffect(() => {
    void loadQueues(connectionId);
  }, [connectionId, loadQueues]);
  useAutoRefresh(prefs.autoRefresh, prefs.refreshIntervalMs, () => void loadQueues(connectionId));

  const queues = useMemo(() => list?.queues ?? [], [list]);
  const byId = useMemo(() => new Map(queues.map((q) => [q.id, q])), [queues]);
  const shown = useMemo(() => queues.filter((q) => matchesFilter(q.name, filter)), [queues, filter]);
  const open = (queueId: string): void => navigate({ screen: 'queue', connectionId, queueId });
  const busy = list?.status === 'loading' || list?.refreshing === true;

  return (
    <section className="screen screen-queues" aria-labelledby="queues-title">
      <header className="screen-header">
        <div className="title-block">
          <h1 id="queues-title">{profile?.name ?? 'Queues'}</h1>
          {profile !== undefined && <div className="subtitle mono">{describeConnection(profile.config)}</div>}
        </div>
        <div className="toolbar">
          <input className="filter" type="search" placeholder="Filter queues (orders.* or text)" aria-label="Filter queues" value={filter} onChange={(e) => setFilter(e.target.value)} />
          <label className="check" title="Refresh the list periodically while this tab is visible">
            <input type="checkbox" checked={prefs.autoRefresh} onChange={(e) => setPreference('autoRefresh', e.target.checked)} /> Auto-refresh
          </label>
          <select aria-label="Auto-refresh interval" value={prefs.refreshIntervalMs} onChange={(e) => setPreference('refreshIntervalMs', Number(e.target.value))} disabled={!prefs.autoRefresh}>
            {REFRESH_INTERVALS_MS.map((ms) => (
              <option key={ms} value={ms}>
                every {ms / 1000} s
              </option>
            ))}
          </select>
          <button type="button" className="btn" onClick={() => void loadQueues(connectionId)} disabled={busy} aria-label="Refresh queues">
            <span className={busy ? 'refresh-icon spinning' : 'refresh-icon'} aria-hidden="true">↻</span> Refresh
          </button>
          {profile !== undefined && profile.config.kind !== 'snapshot' && (
            <button type="button" className="btn btn-ghost" onClick={() => navigate({ screen: 'connection-form', editId: connectionId })}>
              Edit connection
            </button>
          )}
        </div>
      </header>
      {isDemo && (
        <div className="banner banner-info">
          You are looking at the bundled demo snapshot (read-only). <button type="button" className="link" onClick={() => navigate({ screen: 'connection-form', editId: null })}>Add a connection</button> to inspect your own brokers.
        </div>
      )}
      {list?.status === 'error' && list.error !== null && <ErrorState error={list.error} compact={queues.length > 0} onRetry={() => void loadQueues(connectionId)} />}
      {(list === undefined || list.status === 'loading') && <Loading label="Listing queues…" />}
      {list?.status === 'ready' && queues.length === 0 && (
        <Empty title="No queues found">
          This connection has no queues Queuescope recognises (BullMQ queues, streams and lists on Redis; RabbitMQ queues in this vhost; SQS queues in this region).
        </Empty>
      )}
      {queues.length > 0 && (
        <>
          <div className="list-meta">
            {shown.length === queues.length ? `${count(queues.length)} ${queues.length === 1 ? 'queue' : 'queues'}` : `${count(shown.length)} of ${count(queues.length)} queues`}
            {list?.loadedAt != null && <UpdatedAgo ms={list.loadedAt} />}
          </div>
          {shown.length === 0 ? (
            <Empty title="No queue matches the filter" />
          ) : (
            <QueueTable connectionId={connectionId} queues={shown} byId={byId} onOpen={open} />
          )}
        </>
      )}
    </section>
  );
}

/**
 * " · updated 12 sec. ago" after the queue count: when the list was read (ms since epoch), aging on
 * the shared 1 s clock ({@link useNow}); only this label re-renders as it ticks, not the list.
 */
function UpdatedAgo({ ms }: { ms: number }) {
  // A list read between two ticks of the clock is not "in 1 sec.".
  const now = Math.max(useNow(1000), ms);
  return (
    <span className="muted">
      {' '}
      · updated {relativeTime(ms, now)}
    </span>
  );
}

function QueueTable({ connectionId, queues, byId, onOpen }: { connectionId: string; queues: QueueSummary[]; byId: Map<string, QueueSummary>; onOpen: (id: string) => void }) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const allWatched = useWatchStore((s) => s.watched);
  const watched = useMemo(() => allWatched.filter((w) => w.connectionId === connectionId), [allWatched, connectionId]);
  // eslint-disable-next-line react-hooks/incompatible-library -- TanStack Virtual returns functions React Compiler cannot memoize; this component is not compiled.
  const virtualizer = useVirtualizer({ count: queues.length, getScrollElement: () => scrollRef.current, estimateSize: () => ROW_HEIGHT, overscan: 10 });
  return (
    <div className="table queue-table" role="table" aria-label="Queues" aria-rowcount={queues.length}>
      <div className="thead" role="rowgroup">
        <div className="tr" role="row">
          <div role="columnheader">Name</div>
          <div role="columnheader">Kind</div>
          <div role="columnheader" className="num">Depth</div>
          <div role="columnheader" className="num">In flight</div>
          <div role="columnheader" className="num">Delayed</div>
          <div role="columnheader" className="num">Consumers</div>
        </div>
      </div>
      <div className="tbody scroll" ref={scrollRef} role="rowgroup">
        <div style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
          {virtualizer.getVirtualItems().map((item) => {
            const listed = queues[item.index];
            if (listed === undefined) return null;
            // A watched DLQ shows the watch's newer depth, so the row agrees with its badge and the alert banner.
            const w = watched.find((x) => x.queueId === listed.id);
            const q = w === undefined ? listed : { ...listed, depth: rowDepth(listed.depth, w) };
            return (
              <div
                key={q.id}
                className="tr clickable"
                role="row"
                aria-rowindex={item.index + 1}
                data-queue-name={q.name}
                style={{ position: 'absolute', top: 0, left: 0, right: 0, height: ROW_HEIGHT, transform: `translateY(${item.start}px)` }}
                onClick={() => onOpen(q.id)}
              >
                <div role="cell" className="cell-name">
                  <button type="button" className="queue-name link-strong" onClick={(e) => { e.stopPropagation(); onOpen(q.id); }}>
                    <Revealed text={q.name} />
                  </button>
                  <DeadLetterLine q={q} byId={byId} onOpen={onOpen} />
                </div>
                <div role="cell">
                  <KindBadge kind={q.kind} />
                  {q.isDeadLetterQueue && <span className="badge badge-dlq">DLQ</span>}
                  <WatchQueueBadge connectionId={connectionId} queue={q} />
                </div>
                <div role="cell" className={q.isDeadLetterQueue && (q.depth ?? 0) > 0 ? 'num strong danger-text' : 'num strong'}>
                  <span data-col="depth">{count(q.depth)}</span>
                  <SnapshotCountLine q={q} />
                </div>
                <div role="cell" data-col="in-flight" className="num">{count(q.inFlight)}</div>
                <div role="cell" className="num">{count(q.delayed)}</div>
                <div role="cell" className={q.consumers === 0 && (q.depth ?? 0) > 0 ? 'num warn-text' : 'num'} title={q.consumers === 0 && (q.depth ?? 0) > 0 ? 'Messages waiting and no consumer' : undefined}>
                  {count(q.consumers)}
                </div>
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}

/** Under a snapshot queue's recorded depth: "12 in snapshot" and, when the section is partial, "partial" with the reason. */
function SnapshotCountLine({ q }: { q: QueueSummary }) {
  const info = snapshotInfo(q);
  if (info === null) return null;
  return (
    <div className="muted" data-col="in-snapshot" style={{ fontWeight: 'normal', fontSize: '0.85em' }} title={info.partial ? `partial: ${info.partialReason ?? 'the snapshot does not hold the whole queue'}` : 'Depth is as recorded at export time'}>
      {count(info.messages)} in snapshot{info.partial ? ' · partial' : ''}
    </div>
  );
}

/** "DLQ ← orders, billing" for a DLQ; "→ orders-dlq" for a source; problems in red. */
export function DeadLetterLine({ q, byId, onOpen }: { q: QueueSummary; byId: Map<string, QueueSummary>; onOpen: (id: string) => void }) {
  const parts: ReactNode[] = [];
  if (q.deadLetterSources.length > 0) {
    parts.push(
      <span key="sources" className="dl-sources">
        DLQ ←{' '}
        {q.deadLetterSources.map((id, i) => (
          <span key={id}>
            {i > 0 && ', '}
            <button type="button" className="link" onClick={(e) => { e.stopPropagation(); onOpen(id); }}>
              {byId.get(id)?.name ?? id}
            </button>
          </span>
        ))}
      </span>,
    );
  }
  q.deadLetterTargets.forEach((t, i) => {
    const name = t.queueName ?? (t.queueId !== null ? (byId.get(t.queueId)?.name ?? t.queueId) : 'unresolved');
    parts.push(
      <span key={`t${i}`} className={t.problem ? 'dl-target problem' : 'dl-target'} title={`${t.via}${t.problem ? ` — ${t.problem}` : ''}`}>
        →{' '}
        {t.queueId !== null ? (
          <button type="button" className="link" onClick={(e) => { e.stopPropagation(); if (t.queueId !== null) onOpen(t.queueId); }}>
            <Revealed text={name} />
          </button>
        ) : (
          <span>
            <Revealed text={name} />
          </span>
        )}
        {t.maxReceiveCount != null && <span className="muted"> after {t.maxReceiveCount}</span>}
        {t.problem && <span className="problem-text"> ⚠ {t.problem}</span>}
      </span>,
    );
  });
  if (parts.length === 0) return null;
  return <div className="dl-line">{parts}</div>;
}
