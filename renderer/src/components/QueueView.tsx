import { useEffect, useMemo, useRef, useState } from 'react';
import type { PeekSideEffect, QueueSummary } from '../../../shared/domain/queue';
import { defaultViewState } from '../../../shared/api/inspect-scope';
import { count, absoluteTime } from '../lib/format';
import { useStore } from '../store';
import { queueKey } from '../store/types';
import { PEEK_LIMITS } from '../store/ui';
import { AnalysedMessageView, AnalysedMessages } from './AnalysedMessages';
import { Empty, ErrorState, KindBadge, Loading, ReadAgo } from './common';
import { ExportDialog } from './ExportDialog';
import { InspectSummary } from './InspectSummary';
import { useQueueRules } from './InspectBadges';
import { MessageList } from './MessageList';
import { MessageView } from './MessageView';
import { PeekConfirm } from './PeekConfirm';
import { TuningPanel } from './TuningPanel';
import { DeadLetterLine, snapshotInfo } from './QueueList';
import { RedrivePanel, isRedriveSource } from './RedrivePanel';
import { Revealed } from './TextViews';

/** Short phrases for the side-effect kinds, for one-line summaries. */
const SIDE_EFFECT_SHORT: Record<PeekSideEffect['kind'], string> = {
  'redelivered-flag': 'messages come back marked redelivered',
  'delivery-count': 'each peek counts as a delivery',
  'may-dead-letter': 'a peek can dead-letter messages',
  'temporarily-invisible': 'messages are held briefly while read',
  reorders: 'order may change',
};

/** A side effect reported by a peek, in words: a known kind is replaced by the queue's own description of it. */
export function describeSideEffect(reported: string, declared: PeekSideEffect[]): string {
  const match = declared.find((d) => d.kind === reported);
  if (match !== undefined) return match.description;
  return reported in SIDE_EFFECT_SHORT ? SIDE_EFFECT_SHORT[reported as PeekSideEffect['kind']] : reported;
}

/**
 * The state the view peeks and analyses before the user picks one (`defaultViewState`, shared with
 * the CLI's default): a snapshot's every state (undefined), as `queuescope inspect` reads the file;
 * a live queue's first state with messages, else its first state; undefined when it has one state.
 */
export function defaultPeekState(q: QueueSummary | null | undefined): string | undefined {
  return q === null || q === undefined ? undefined : defaultViewState(q);
}

/** The state menu's "all states" choice (a snapshot's: every state its file holds). */
const ALL_STATES = '';

/** True when the last load of a queue said it does not exist (any more): the view then shows only that. */
export function isQueueGone(detail: { status: string; error: { code: string } | null } | undefined): boolean {
  return detail !== undefined && detail.status === 'error' && detail.error?.code === 'QUEUE_NOT_FOUND';
}

/** One queue: header with counts and configuration, peek controls (with the side-effect gate), messages and the open message. */
export function QueueView({ connectionId, queueId }: { connectionId: string; queueId: string }) {
  const key = queueKey(connectionId, queueId);
  const detail = useStore((s) => s.queueDetails[key]);
  const listed = useStore((s) => s.queueLists[connectionId]?.queues);
  const connectionName = useStore((s) => s.connections.find((c) => c.id === connectionId)?.name ?? 'Connection');
  const loadQueue = useStore((s) => s.loadQueue);
  const loadQueues = useStore((s) => s.loadQueues);
  const navigate = useStore((s) => s.navigate);
  const peek = useStore((s) => s.peek);
  const startPeek = useStore((s) => s.startPeek);
  const loadMore = useStore((s) => s.loadMore);
  const selectedIndex = useStore((s) => s.selectedIndex);
  const selectMessage = useStore((s) => s.selectMessage);
  const checked = useStore((s) => s.checked);
  const toggleChecked = useStore((s) => s.toggleChecked);
  const setChecked = useStore((s) => s.setChecked);
  const prefs = useStore((s) => s.preferences);
  const setPreference = useStore((s) => s.setPreference);
  const inspectRun = useStore((s) => s.inspectRuns[key]);

  const inspect = useQueueRules(connectionId, detail?.summary ?? null);
  const [chosenState, setChosenState] = useState<string | undefined>(undefined);
  const [confirming, setConfirming] = useState(false);
  const [exporting, setExporting] = useState(false);
  /** The analysed copy open in the detail pane (an id of the inspection report's rows). */
  const [analysedId, setAnalysedId] = useState<string | null>(null);
  /** Bumped by each drill-down open from the safety summary: the list scrolls to the row even when it is already the selected one. */
  const [reveal, setReveal] = useState(0);
  const listPaneRef = useRef<HTMLDivElement>(null);
  const detailPaneRef = useRef<HTMLDivElement>(null);

  useEffect(() => {
    void loadQueue(connectionId, queueId);
  }, [connectionId, queueId, loadQueue]);
  // The list gives names for dead-letter links; load it when opening a queue directly.
  useEffect(() => {
    if (listed === undefined) void loadQueues(connectionId);
  }, [connectionId, listed, loadQueues]);

  const summary = detail?.summary ?? null;
  const caps = summary?.capabilities;
  const state = chosenState === ALL_STATES ? undefined : (chosenState ?? defaultPeekState(summary));
  const limit = Math.min(prefs.peekLimit, caps?.maxPeekWindow ?? prefs.peekLimit);
  const direction = prefs.peekDirection;
  const hasSideEffects = (caps?.peekSideEffects.length ?? 0) > 0;
  const summaryId = summary?.id;
  const byId = useMemo(() => new Map((listed ?? []).map((q) => [q.id, q])), [listed]);
  const ours = peek !== null && peek.connectionId === connectionId && peek.queueId === queueId;
  const current = ours && peek.state === state && peek.limit === limit && peek.direction === direction;

  // Non-destructive queues are read at once; queues whose peek changes them wait for a confirmed click.
  useEffect(() => {
    if (summaryId === undefined || hasSideEffects || current) return;
    void startPeek({ connectionId, queueId, state, limit, direction, acceptSideEffects: false });
  }, [summaryId, hasSideEffects, current, connectionId, queueId, state, limit, direction, startPeek]);

  // The queue's count (of the peeked state) when the shown messages were read, from the header's own
  // source, so a later refresh that reports another count can say the list is older than the queue.
  const headerCount = summary === null || snapshotInfo(summary) !== null ? null : state !== undefined ? (summary.counts[state] ?? null) : summary.depth;
  const readAt = ours && peek.status === 'ready' ? (peek.readAt ?? null) : null;
  const [countAtRead, setCountAtRead] = useState<{ readAt: number; count: number } | null>(null);
  // Adjusted while rendering (React's "storing information from previous renders"), once per read.
  if (readAt !== null && headerCount !== null && detail?.status === 'ready' && countAtRead?.readAt !== readAt) setCountAtRead({ readAt, count: headerCount });
  const changedSinceRead = readAt !== null && countAtRead?.readAt === readAt && headerCount !== null && headerCount !== countAtRead.count ? { then: countAtRead.count, now: headerCount, readAt } : null;

  /**
   * Closes the open message (× or Esc). Focus inside the closing view (or nowhere) goes to the list,
   * whose active row is the message just closed; focus elsewhere (a drill-down link) stays put.
   */
  const closeDetail = (close: () => void): void => {
    const focused = document.activeElement;
    const lost = focused === null || focused === document.body || detailPaneRef.current?.contains(focused) === true;
    close();
    if (lost) listPaneRef.current?.querySelector<HTMLElement>('[data-testid="message-list"], [data-testid="analysed-list"]')?.focus();
  };

  const runPeek = (accept: boolean): void => {
    setConfirming(false);
    void startPeek({ connectionId, queueId, state, limit, direction, acceptSideEffects: accept });
  };
  const onPeekClick = (): void => {
    if (hasSideEffects) setConfirming(true);
    else runPeek(false);
  };

  if (detail === undefined || (detail.status === 'loading' && summary === null)) {
    return (
      <section className="screen">
        <Loading label="Loading queue…" />
      </section>
    );
  }
  // The queue is gone: show that alone (no stale depth, messages or redrive), with the way back to the list.
  if (isQueueGone(detail)) {
    const back = (): void => {
      void loadQueues(connectionId);
      navigate({ screen: 'queues', connectionId });
    };
    return (
      <section className="screen" data-testid="queue-not-found">
        <Breadcrumb connectionName={connectionName} onBack={back} name={summary?.name ?? queueId} />
        {detail.error !== null && <ErrorState error={detail.error} onRetry={() => void loadQueue(connectionId, queueId)} />}
        <button type="button" className="btn btn-primary" onClick={back}>
          Back to the queue list
        </button>
      </section>
    );
  }
  if (summary === null || caps === undefined) {
    return (
      <section className="screen">
        <Breadcrumb connectionName={connectionName} onBack={() => navigate({ screen: 'queues', connectionId })} name={queueId} />
        {detail.error !== null && <ErrorState error={detail.error} onRetry={() => void loadQueue(connectionId, queueId)} />}
      </section>
    );
  }

  const messages = ours ? peek.messages : [];
  const selected = ours && selectedIndex !== null ? messages[selectedIndex] : undefined;
  const checkedIds = Object.keys(checked)
    .map((i) => messages[Number(i)]?.id)
    .filter((x): x is string => x !== undefined);
  const refused = ours && peek.status === 'error' && peek.error?.code === 'PEEK_REFUSED';
  const snap = snapshotInfo(summary);
  const stateCounts = snap?.states ?? summary.counts;
  const stateCount = state !== undefined ? stateCounts[state] : undefined;
  // Where reading changes the queue and nothing was peeked, the rows "Analyse all messages" kept stand
  // in for the list: seeing what the analysis read must not cost another delivery.
  const analysed = hasSideEffects && !ours && inspectRun?.status === 'ready' && inspectRun.report !== null && inspectRun.state === state ? inspectRun.report : null;
  const readWindow = { startedAt: inspectRun?.operation?.startedAt ?? null, finishedAt: inspectRun?.operation?.finishedAt ?? null };
  const analysedRow = analysed !== null && analysedId !== null ? analysed.messages.find((m) => m.id === analysedId) : undefined;

  return (
    <section className="screen screen-queue" aria-labelledby="queue-title">
      <Breadcrumb connectionName={connectionName} onBack={() => navigate({ screen: 'queues', connectionId })} name={summary.name} />
      <header className="queue-header">
        <div className="title-block">
          <h1 id="queue-title" className="mono">
            <Revealed text={summary.name} /> <KindBadge kind={summary.kind} />
            {summary.isDeadLetterQueue && <span className="badge badge-dlq">DLQ</span>}
          </h1>
          <DeadLetterLine q={summary} byId={byId} onOpen={(id) => navigate({ screen: 'queue', connectionId, queueId: id })} />
        </div>
        <div className="stats">
          <Stat label="Depth" value={summary.depth} strong />
          <Stat label="In flight" value={summary.inFlight} />
          <Stat label="Delayed" value={summary.delayed} />
          <Stat label="Consumers" value={summary.consumers} />
          {snap !== null && <Stat label="In snapshot" value={snap.messages} />}
          <button type="button" className="btn btn-small" onClick={() => void loadQueue(connectionId, queueId)} disabled={detail.status === 'loading'} aria-label="Refresh queue">
            ↻
          </button>
          {/* A snapshot's counts are as recorded at its export (the notice below says when). */}
          {snap === null && (
            <div className="stats-read">
              <ReadAgo ms={detail.loadedAt} testId="counts-read-at" />
            </div>
          )}
        </div>
      </header>
      {detail.status === 'error' && detail.error !== null && <ErrorState error={detail.error} compact onRetry={() => void loadQueue(connectionId, queueId)} />}
      {snap !== null && (
        <div className={snap.partial ? 'notice notice-warn' : 'notice notice-info'} role="note" data-testid="snapshot-notice">
          Snapshot{snap.exportedAt !== null ? ` exported ${absoluteTime(snap.exportedAt)}` : ''}: depth and counts are as recorded then; the file holds {count(snap.messages)} message{snap.messages === 1 ? '' : 's'} of this queue.
          {snap.partial && <> <strong>Partial:</strong> {snap.partialReason ?? 'the snapshot does not hold the whole queue.'}</>}
        </div>
      )}
      <div className="queue-extra">
        {Object.keys(summary.counts).length > 0 && (
          <div className="count-chips" aria-label="Counts">
            {Object.entries(summary.counts).map(([k, v]) => (
              <span key={k} className={k === 'failed' && v > 0 ? 'chip chip-danger' : 'chip'}>
                {k} <strong>{count(v)}</strong>
              </span>
            ))}
          </div>
        )}
        <details className="config">
          <summary>Configuration</summary>
          <pre className="body-pre">{JSON.stringify(summary.config, null, 2)}</pre>
        </details>
      </div>

      <InspectSummary
        connectionId={connectionId}
        summary={summary}
        state={state}
        messages={messages}
        onOpenMessage={(i) => {
          selectMessage(i);
          setReveal((n) => n + 1);
        }}
        onShowAnalysed={(id) => {
          setAnalysedId(id);
          setReveal((n) => n + 1);
        }}
      />
      {snap === null && <TuningPanel connectionId={connectionId} summary={summary} />}
      {snap === null && isRedriveSource(summary) && <RedrivePanel connectionId={connectionId} summary={summary} queues={listed ?? []} checkedIds={checkedIds} />}

      <div className="split">
        <div className="pane pane-list" ref={listPaneRef}>
          <div className="peek-controls">
            {caps.peekStates.length > 0 && (
              <label>
                State{' '}
                <select value={state ?? ALL_STATES} onChange={(e) => setChosenState(e.target.value)} aria-label="State">
                  {snap !== null && <option value={ALL_STATES}>all states ({count(snap.messages)} in snapshot)</option>}
                  {caps.peekStates.map((s) => (
                    <option key={s} value={s}>
                      {s}
                      {stateCounts[s] !== undefined ? ` (${count(stateCounts[s])}${snap !== null ? ' in snapshot' : ''})` : ''}
                    </option>
                  ))}
                </select>
              </label>
            )}
            <label>
              Show{' '}
              <select value={limit} onChange={(e) => setPreference('peekLimit', Number(e.target.value))} aria-label="Messages per peek">
                {PEEK_LIMITS.filter((n) => n <= caps.maxPeekWindow).map((n) => (
                  <option key={n} value={n}>
                    {n}
                  </option>
                ))}
                {!PEEK_LIMITS.some((n) => n === limit) && <option value={limit}>{limit}</option>}
              </select>
            </label>
            <select value={direction} onChange={(e) => setPreference('peekDirection', e.target.value === 'newest' ? 'newest' : 'oldest')} aria-label="Order">
              <option value="oldest">oldest</option>
              <option value="newest">newest</option>
            </select>
            <button type="button" className={hasSideEffects ? 'btn btn-warning' : 'btn'} onClick={onPeekClick} disabled={ours && (peek.status === 'loading' || peek.status === 'loading-more')}>
              {hasSideEffects ? 'Peek…' : ours ? 'Reload' : 'Peek'}
            </button>
            <span className="spacer" />
            <button type="button" className="btn" onClick={() => setExporting(true)} title="Export messages to a JSONL snapshot">
              Export…
            </button>
          </div>
          {hasSideEffects && (
            <details className="notice notice-warn" data-testid="side-effects-notice">
              <summary>
                <strong>Peeking changes this queue:</strong> {[...new Set(caps.peekSideEffects.map((s) => SIDE_EFFECT_SHORT[s.kind]))].join(' · ')}
              </summary>
              <ul className="side-effects">
                {caps.peekSideEffects.map((s, i) => (
                  <li key={i}>{s.description}</li>
                ))}
              </ul>
            </details>
          )}
          {ours && peek.sideEffects.length > 0 && (
            <details className="notice notice-info" role="status">
              <summary>This peek changed the queue{caps.peekSideEffects.length > 0 ? ' as described above' : ''}.</summary>
              <ul className="side-effects">
                {peek.sideEffects.map((s, i) => (
                  <li key={i}>{describeSideEffect(s, caps.peekSideEffects)}</li>
                ))}
              </ul>
            </details>
          )}

          {changedSinceRead !== null && (
            <div className="notice notice-warn" role="status" data-testid="list-older-than-queue">
              These messages were read at {absoluteTime(changedSinceRead.readAt)}, when the queue held {count(changedSinceRead.then)}; it now holds {count(changedSinceRead.now)}. The list and its
              safety badges show the queue as it was.{' '}
              <button type="button" className="btn btn-small" onClick={onPeekClick}>
                {hasSideEffects ? 'Peek again…' : 'Read again'}
              </button>
            </div>
          )}

          {ours && (peek.moved?.length ?? 0) > 0 && (
            <details className={`notice ${peek.moved?.some((m) => !m.realigned) === true ? 'notice-warn' : 'notice-info'}`} role="status" data-testid="peek-moved-notice">
              <summary>
                {peek.moved?.some((m) => !m.realigned) === true
                  ? 'The queue changed while more messages were loaded: some may be missing or shown twice.'
                  : 'The queue changed while more messages were loaded; the pages were re-aligned, so none is missing or shown twice.'}
              </summary>
              <ul className="side-effects">
                {peek.moved?.map((m, i) => (
                  <li key={i}>{m.note}</li>
                ))}
              </ul>
            </details>
          )}

          {analysed !== null && analysed.messages.length > 0 && <AnalysedMessages report={analysed} when={readWindow} selectedId={analysedId} onOpen={setAnalysedId} reveal={reveal} />}
          {analysed !== null && analysed.messages.length === 0 && (
            <Empty title={analysed.analysed === 0 ? (state !== undefined ? `No ${state} messages` : 'No messages') : 'No analysed rows kept'}>
              {analysed.analysed === 0 ? 'The analysis read this queue and found no messages.' : `The analysis read ${count(analysed.analysed)} message${analysed.analysed === 1 ? '' : 's'} but its report keeps no per-message rows.`}
            </Empty>
          )}
          {!ours && hasSideEffects && analysed === null && (
            <Empty title="Messages are not read until you ask">
              Reading this queue changes it (see above).{' '}
              <button type="button" className="btn btn-warning" onClick={() => setConfirming(true)}>
                Peek {limit} messages…
              </button>
            </Empty>
          )}
          {ours && peek.status === 'loading' && <Loading label="Reading messages…" />}
          {refused && (
            <div className="notice notice-warn">
              {peek.error?.message}{' '}
              <button type="button" className="btn btn-warning btn-small" onClick={() => setConfirming(true)}>
                Review and peek…
              </button>
            </div>
          )}
          {ours && peek.status === 'error' && !refused && peek.error !== null && <ErrorState error={peek.error} onRetry={onPeekClick} />}
          {ours && (peek.status === 'ready' || peek.status === 'loading-more') && messages.length === 0 && (
            <Empty title={state !== undefined ? `No ${state} messages` : 'No messages'}>{snap !== null ? (snap.messages === 0 ? 'The snapshot holds no messages of this queue.' : 'Nothing to show at this position.') : summary.depth === 0 ? 'The queue is empty.' : 'Nothing to show at this position.'}</Empty>
          )}
          {messages.length > 0 && (
            <>
              <MessageList
                messages={messages}
                selectedIndex={selectedIndex}
                reveal={reveal}
                checked={checked}
                onOpen={(i) => selectMessage(i)}
                onToggle={toggleChecked}
                onToggleAll={(all) => setChecked(all ? messages.map((_, i) => i) : [])}
                inspectRules={inspect.rules}
              />
              <div className="list-footer">
                <span>
                  {count(messages.length)} loaded
                  {peek?.total != null ? ` of ${count(peek.total)}` : stateCount !== undefined ? ` of ${count(stateCount)}` : ''}
                  {checkedIds.length > 0 && ` · ${count(checkedIds.length)} selected`}
                </span>
                <span className="spacer" />
                {peek?.nextCursor != null && (
                  <button type="button" className="btn btn-small" onClick={() => void loadMore()} disabled={peek.status === 'loading-more'}>
                    {peek.status === 'loading-more' ? 'Loading…' : 'Load more'}
                  </button>
                )}
              </div>
            </>
          )}
        </div>
        <div className="pane pane-detail" ref={detailPaneRef}>
          {selected !== undefined ? (
            <MessageView message={selected} onClose={() => closeDetail(() => selectMessage(null))} />
          ) : analysedRow !== undefined ? (
            <AnalysedMessageView row={analysedRow} when={readWindow} onClose={() => closeDetail(() => setAnalysedId(null))} />
          ) : (
            <Empty title="No message open">{messages.length > 0 || (analysed?.messages.length ?? 0) > 0 ? 'Click a message, or use ↑/↓ and Enter in the list.' : ''}</Empty>
          )}
        </div>
      </div>

      {confirming && (
        <PeekConfirm queueName={summary.name} capabilities={caps} action={`Peek ${limit} messages`} onConfirm={() => runPeek(true)} onCancel={() => setConfirming(false)} />
      )}
      {exporting && <ExportDialog summary={summary} connectionId={connectionId} state={state} selectedIds={checkedIds} onClose={() => setExporting(false)} />}
    </section>
  );
}

function Stat({ label, value, strong = false }: { label: string; value: number | null; strong?: boolean }) {
  return (
    <div className="stat" data-stat={label}>
      <div className="stat-label">{label}</div>
      <div className={strong ? 'stat-value strong' : 'stat-value'}>{count(value)}</div>
    </div>
  );
}

function Breadcrumb({ connectionName, name, onBack }: { connectionName: string; name: string; onBack: () => void }) {
  return (
    <nav className="breadcrumb" aria-label="Breadcrumb">
      <button type="button" className="link" onClick={onBack}>
        ← {connectionName}
      </button>
      <span className="muted"> / </span>
      <span className="mono">
        <Revealed text={name} />
      </span>
    </nav>
  );
}
