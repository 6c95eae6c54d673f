import { useEffect, useState } from 'react';
import type { InspectReport, InspectedMessage } from '../../../shared/api/inspect';
import type { KeyVerdictKind } from '../../../shared/analysis/types';
import type { QueueMessage } from '../../../shared/domain/message';
import type { QueueSummary } from '../../../shared/domain/queue';
import { describeInspectScope } from '../../../shared/api/inspect-scope';
import { absoluteTime, count } from '../lib/format';
import { useStore } from '../store';
import { queueKey } from '../store/types';
import { ErrorState, ReadAgo } from './common';
import { KEY_VERDICT_LABEL, KEY_VERDICT_TONE } from './InspectBadges';
import { InspectRuleEditor } from './InspectRuleEditor';
import { AnalyseConfirm, comparedReadChanges, useComparedQueues } from './AnalyseConfirm';
import { snapshotInfo } from './QueueList';
import { Revealed } from './TextViews';
import './inspect.css';

/** Messages analysed by the automatic run when a queue opens; "Analyse all" reads the whole queue. */
export const AUTO_INSPECT_LIMIT = 100_000;

const KEY_ORDER: KeyVerdictKind[] = ['business-derived', 'period-key', 'opaque-random', 'time-derived', 'missing'];

/**
 * The per-queue "redelivery safety" summary: share of business-derived keys, flagged and review
 * payloads, duplicate groups (within the queue and shared with its DLQ / source), keys used for
 * different operations, the same payload under different keys; each with a drill-down to example
 * messages (opens a loaded message, else the analysed copy through `onShowAnalysed` when given, and
 * shows its verdict row). Runs `inspect.queue` over the whole queue (`state`; undefined = the
 * shared default: a snapshot's every state) and names the states read: at once where reading
 * changes nothing, after confirmation where it does — reading the queue, or reading the dead-letter
 * partners the analysis compares it with (their side effects are named in the confirmation).
 */
export function InspectSummary({
  connectionId,
  summary,
  state,
  messages,
  onOpenMessage,
  onShowAnalysed,
}: {
  connectionId: string;
  summary: QueueSummary;
  state: string | undefined;
  messages: QueueMessage[];
  onOpenMessage: (index: number) => void;
  /** Opens a message's analysed copy (the report's row) where no peeked message has that id. */
  onShowAnalysed?: ((id: string) => void) | undefined;
}) {
  const key = queueKey(connectionId, summary.id);
  const run = useStore((s) => s.inspectRuns[key]);
  const runInspection = useStore((s) => s.runInspection);
  const cancelInspection = useStore((s) => s.cancelInspection);
  const rulesEntry = useStore((s) => s.inspectRules[connectionId]);
  const [confirming, setConfirming] = useState(false);
  const [editing, setEditing] = useState(false);
  const [picked, setPicked] = useState<string | null>(null);
  const caps = summary.capabilities;
  const compared = useComparedQueues(connectionId, summary);
  // The analysis reads the queue and its dead-letter partners: any of those reads that changes a
  // queue (or partners not looked up yet) waits for the user's consent.
  const hasSideEffects = caps.peekSideEffects.length > 0 || compared.status === 'loading' || compared.queues.some(comparedReadChanges);
  const settings = rulesEntry?.state?.settings;
  // The states analysed: the state asked for, or a snapshot's every state (what `inspect.queue` reads without one).
  const snapStates = snapshotInfo(summary)?.states;
  const headerScope = state ?? (snapStates !== undefined && Object.keys(snapStates).length > 0 ? 'all states' : null);
  const stale = run !== undefined && run.state !== state;

  // Non-destructive queues are inspected at once (and again when the rules or the state change).
  useEffect(() => {
    if (hasSideEffects || settings === undefined) return;
    void runInspection({ connectionId, queueId: summary.id, state, acceptSideEffects: false, limit: AUTO_INSPECT_LIMIT });
  }, [hasSideEffects, settings, connectionId, summary.id, state, runInspection]);

  const start = (accept: boolean, compareDeadLetter?: boolean): void => {
    setConfirming(false);
    void runInspection({ connectionId, queueId: summary.id, state, acceptSideEffects: accept, ...(compareDeadLetter === false ? { compareDeadLetter } : {}) });
  };
  const report = run?.report ?? null;
  // When the report read the queue, and the queue's count (of the analysed state) then, from the
  // header's source: a later refresh that reports another count says the summary is older than the
  // queue, as the message list does.
  const readWindow = run?.status === 'ready' && report !== null ? { startedAt: run.operation?.startedAt ?? null, finishedAt: run.operation?.finishedAt ?? null } : null;
  const readAt = readWindow?.finishedAt ?? readWindow?.startedAt ?? null;
  const detailReady = useStore((s) => s.queueDetails[key]?.status === 'ready');
  const headerCount = snapshotInfo(summary) !== null ? null : state !== undefined ? (summary.counts[state] ?? null) : summary.depth;
  const [countAtRead, setCountAtRead] = useState<{ readAt: number; count: number } | null>(null);
  // Adjusted while rendering (React's "storing information from previous renders"), once per report.
  if (readAt !== null && headerCount !== null && detailReady && !stale && countAtRead?.readAt !== readAt) setCountAtRead({ readAt, count: headerCount });
  const changedSinceRead = readAt !== null && !stale && countAtRead?.readAt === readAt && headerCount !== null && headerCount !== countAtRead.count ? { then: countAtRead.count, now: headerCount, readAt } : null;
  const rowsById = new Map((report?.messages ?? []).map((m) => [m.id, m]));
  const openOrShow = (id: string): void => {
    const i = messages.findIndex((m) => m.id === id);
    if (i >= 0) onOpenMessage(i);
    else onShowAnalysed?.(id);
    setPicked(id);
  };
  const pickedRow = picked === null ? undefined : rowsById.get(picked);

  return (
    <section className="panel inspect-summary" aria-label="Redelivery safety" data-testid="inspect-summary">
      <h3>
        Redelivery safety{headerScope !== null ? <span className="muted"> · {headerScope}</span> : null}
        <span className="spacer" />
        <button type="button" className="btn btn-small" onClick={() => setEditing(true)} data-testid="edit-inspect-rules">
          Rules…
        </button>{' '}
        <button type="button" className={hasSideEffects ? 'btn btn-small btn-warning' : 'btn btn-small'} onClick={() => (hasSideEffects ? setConfirming(true) : start(false))} disabled={run?.status === 'running'}>
          {run === undefined ? (hasSideEffects ? 'Analyse…' : 'Analyse') : 'Analyse all'}
        </button>
      </h3>
      {run === undefined && hasSideEffects && compared.status === 'ready' && (
        <div className="muted">
          {caps.peekSideEffects.length > 0
            ? 'Reading this queue changes it (see above): the analysis reads every message it can, so it waits for you.'
            : 'The analysis also reads the queues it compares duplicate keys with, and reading them changes them, so it waits for you.'}
        </div>
      )}
      {run?.status === 'running' && (
        <div className="progress" role="status">
          Analysing… {count(run.operation?.processed ?? 0)}
          {run.operation?.total != null ? ` of ${count(run.operation.total)}` : ''} message{(run.operation?.total ?? run.operation?.processed ?? 0) === 1 ? '' : 's'}{' '}
          <button type="button" className="btn btn-small" onClick={() => void cancelInspection(connectionId, summary.id)}>
            Cancel
          </button>
        </div>
      )}
      {run?.status === 'cancelled' && <div className="muted">Cancelled.</div>}
      {run?.status === 'error' && run.error !== null && (
        <ErrorState error={run.error} compact onRetry={() => (run.error?.code === 'PEEK_REFUSED' ? setConfirming(true) : start(false))} />
      )}
      {changedSinceRead !== null && (
        <div className="notice notice-warn" role="status" data-testid="summary-older-than-queue">
          This summary was read at {absoluteTime(changedSinceRead.readAt)}, when the queue held {count(changedSinceRead.then)}; it now holds {count(changedSinceRead.now)}. It shows the queue as it
          was.{' '}
          <button type="button" className="btn btn-small" onClick={() => (hasSideEffects ? setConfirming(true) : start(false))} disabled={run?.status === 'running'}>
            {hasSideEffects ? 'Analyse again…' : 'Analyse again'}
          </button>
        </div>
      )}
      {report !== null && <ReportView report={report} stale={stale} readWindow={readWindow} onPick={openOrShow} />}
      {report !== null && report.sideEffects.length > 0 && (
        // What the reads did to the broker: this queue's, and its DLQ's or source's read for the comparison.
        <details className="muted" data-testid="inspect-side-effects">
          <summary>Side effects of reading ({report.sideEffects.length})</summary>
          <ul>
            {report.sideEffects.map((s, i) => (
              <li key={i}>{s}</li>
            ))}
          </ul>
        </details>
      )}
      {pickedRow !== undefined && <PickedRow row={pickedRow} onClose={() => setPicked(null)} />}
      {picked !== null && pickedRow === undefined && (
        <div className="muted">
          Message {picked} is not among the rows kept in the report; peek further to open it.{' '}
          <button type="button" className="link" onClick={() => setPicked(null)}>
            close
          </button>
        </div>
      )}
      {confirming && compared.status === 'ready' && <AnalyseConfirm queue={summary} compared={compared.queues} onConfirm={(compare) => start(true, compare)} onCancel={() => setConfirming(false)} />}
      {editing && <InspectRuleEditor connectionId={connectionId} queue={summary} onClose={() => setEditing(false)} />}
    </section>
  );
}

function Ids({ ids, total, onPick }: { ids: string[]; total: number; onPick: (id: string) => void }) {
  return (
    <span className="mono">
      {ids.map((id, i) => (
        <span key={id}>
          {i > 0 ? ', ' : ''}
          <button type="button" className="link" onClick={() => onPick(id)} data-testid="drill-id">
            {id}
          </button>
        </span>
      ))}
      {total > ids.length ? ', …' : ''}
    </span>
  );
}

/** "Read between A and B" for a read of a second or more, else "Read at B" (UTC). */
function readTitle(w: { startedAt: number | null; finishedAt: number | null }): string | undefined {
  if (w.startedAt !== null && w.finishedAt !== null && w.finishedAt - w.startedAt >= 1000) return `Read between ${absoluteTime(w.startedAt)} and ${absoluteTime(w.finishedAt)}`;
  return undefined;
}

function ReportView({ report, stale, readWindow, onPick }: { report: InspectReport; stale: boolean; readWindow: { startedAt: number | null; finishedAt: number | null } | null; onPick: (id: string) => void }) {
  // Which states were read, as the CLI's header says it ("state waiting", "all states in the snapshot: …").
  const scope = describeInspectScope(report);
  return (
    <div data-testid="inspect-report">
      <div className="muted">
        {count(report.analysed)} message{report.analysed === 1 ? '' : 's'} analysed{report.total !== null && report.total !== report.analysed ? ` of ${count(report.total)}` : ''} in {count(report.elapsedMs)} ms
        {readWindow !== null && (readWindow.finishedAt ?? readWindow.startedAt) !== null && (
          <>
            {' · '}
            <ReadAgo ms={readWindow.finishedAt ?? readWindow.startedAt} absoluteTitle={readTitle(readWindow)} testId="summary-read-at" />
          </>
        )}{' '}
        {scope !== null && <span data-testid="inspect-scope"> · {scope}</span>} · rules: {report.rulesSource}
        {stale ? ' · for another state: re-analyse' : ''}
      </div>
      {report.partial && <div className="notice notice-warn">Partial: {report.partialReason}</div>}
      {/* How the queue moved while it was read (a Redis list re-aligned between pages); a move that made it partial is said above. */}
      {(report.notes ?? [])
        .filter((n) => report.partialReason === null || !report.partialReason.includes(n))
        .map((n, i) => (
          <div key={i} className="notice notice-info" data-testid="inspect-read-note">
            {n}
          </div>
        ))}
      {report.analysed === 0 ? (
        <div className="muted" data-testid="inspect-empty">
          No messages were analysed{report.total === 0 ? (report.state !== null ? `: there were no ${report.state} messages` : ': the queue was empty') : ''}.
        </div>
      ) : (
        <ReportDetails report={report} onPick={onPick} />
      )}
    </div>
  );
}

/** The counts, verdict badges and drill-downs of a report with at least one analysed message. */
function ReportDetails({ report, onPick }: { report: InspectReport; onPick: (id: string) => void }) {
  const s = report.summary;
  const share = Math.round(s.businessDerivedShare * 100);
  const flagged = report.messages.filter((m) => m.verdict === 'flag');
  return (
    <>
      <div className="inspect-stats">
        <span className="inspect-stat" data-testid="business-share">
          <span className="share-bar" aria-hidden="true">
            <span style={{ width: `${String(share)}%` }} />
          </span>
          <strong>{share}%</strong> business-derived keys
        </span>
        <span className="inspect-stat" data-testid="flagged-count">
          <strong className={s.flagged > 0 ? 'danger-text' : ''}>{count(s.flagged)}</strong> flagged
        </span>
        <span className="inspect-stat">
          <strong>{count(s.review)}</strong> to review
        </span>
        <span className="inspect-stat" data-testid="duplicate-groups">
          <strong>{count(s.duplicateGroupCount)}</strong> duplicate key group{s.duplicateGroupCount === 1 ? '' : 's'}
        </span>
        {s.largePayloads > 0 && (
          <span className="inspect-stat">
            <strong>{count(s.largePayloads)}</strong> large payload{s.largePayloads === 1 ? '' : 's'}
          </span>
        )}
      </div>
      <div className="inspect-stats">
        {KEY_ORDER.map((k) => (
          <span key={k} className={`inspect-badge tone-${KEY_VERDICT_TONE[k]}`}>
            {KEY_VERDICT_LABEL[k]} {count(s.keyVerdicts[k])}
          </span>
        ))}
      </div>
      {s.reasons.length > 0 && (
        <details className="drill">
          <summary>Reasons ({s.reasons.length})</summary>
          <table className="kv-table">
            <tbody>
              {s.reasons.map((r) => (
                <tr key={r.rule}>
                  <td>
                    <span className={`inspect-badge tone-${r.severity}`}>{r.severity}</span> ×{count(r.count)}
                  </td>
                  <td>
                    {r.example}
                    {r.count > 1 && r.exampleIds[0] !== undefined ? <span className="muted"> (worded for {r.exampleIds[0]})</span> : null} <span className="muted">e.g.</span> <Ids ids={r.exampleIds.slice(0, 5)} total={r.count} onPick={onPick} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
      {flagged.length > 0 && (
        <details className="drill">
          <summary>Flagged messages ({count(s.flagged)})</summary>
          <table className="kv-table">
            <tbody>
              {flagged.slice(0, 100).map((m) => (
                <tr key={m.id}>
                  <td>
                    <Ids ids={[m.id]} total={1} onPick={onPick} />
                  </td>
                  <td>{m.topReason}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
      <details className="drill" data-testid="duplicate-drill">
        <summary>
          Duplicate keys in this queue ({count(s.duplicateGroupCount)} group{s.duplicateGroupCount === 1 ? '' : 's'}, {count(s.duplicateMessages)} redundant cop{s.duplicateMessages === 1 ? 'y' : 'ies'})
        </summary>
        {s.duplicateGroups.length === 0 ? (
          <div className="muted">No key is carried by more than one message.</div>
        ) : (
          <table className="kv-table">
            <tbody>
              {s.duplicateGroups.map((g) => (
                <tr key={g.key}>
                  <th className="mono">
                    <Revealed text={g.key} />
                  </th>
                  <td>
                    ×{count(g.count)}: <Ids ids={g.exampleIds} total={g.count} onPick={onPick} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </details>
      {s.keyCollisionCount > 0 && (
        <details className="drill">
          <summary>Keys used for different operations ({count(s.keyCollisionCount)})</summary>
          <ul>
            {s.keyCollisions.map((c) => (
              <li key={c.key}>
                <Revealed text={c.reason} />
              </li>
            ))}
          </ul>
        </details>
      )}
      {s.samePayloadDifferentKeysCount > 0 && (
        <details className="drill">
          <summary>Same payload under different keys or without a key ({count(s.samePayloadDifferentKeysCount)})</summary>
          <ul>
            {s.samePayloadDifferentKeys.map((g) => (
              <li key={g.hash}>
                {g.reason} <Ids ids={g.exampleIds} total={g.count} onPick={onPick} />
              </li>
            ))}
          </ul>
        </details>
      )}
      {report.comparisons.map((c) => (
        <details className="drill" key={`${c.relation}:${c.label}`} open={(c.result?.sharedKeyCount ?? 0) > 0} data-testid="dlq-comparison">
          <summary>
            {c.relation === 'dead-letter-source' ? 'Shared with source queue' : c.relation === 'dead-letter-target' ? 'Shared with dead-letter queue' : 'Shared with snapshot'} {c.label}:{' '}
            {c.result === null ? 'not compared' : `${count(c.result.sharedKeyCount)} duplicate key${c.result.sharedKeyCount === 1 ? '' : 's'}${c.partial ? ` in the ${count(c.read)} messages read (partial)` : ''}`}
          </summary>
          {c.note !== null && <div className="muted">{c.note}</div>}
          {c.result !== null && (
            <>
              {c.result.reasons.map((r, i) => (
                <div key={i}>{r}</div>
              ))}
              <table className="kv-table">
                <tbody>
                  {c.result.sharedKeys.map((g) => (
                    <tr key={g.key}>
                      <th className="mono">
                        <Revealed text={g.key} />
                      </th>
                      <td>
                        here ×{g.countA}: <Ids ids={g.exampleIdsA} total={g.countA} onPick={onPick} /> · {c.label} ×{g.countB}: <span className="mono">{g.exampleIdsB.join(', ')}</span>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
        </details>
      ))}
      {s.bounds.note !== null && <div className="muted">{s.bounds.note}</div>}
    </>
  );
}

function PickedRow({ row, onClose }: { row: InspectedMessage; onClose: () => void }) {
  return (
    <div className="notice notice-info" data-testid="drill-row">
      <strong className="mono">{row.id}</strong>: key <span className="mono">{row.key ?? '—'}</span> ({row.keySource ?? 'none'}) · {KEY_VERDICT_LABEL[row.keyVerdict]} · payload {row.payloadLabel}
      {row.topReason !== null && <div>{row.topReason}</div>}
      <button type="button" className="link" onClick={onClose}>
        close
      </button>
    </div>
  );
}
