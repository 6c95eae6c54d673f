import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import type { InspectReport, InspectedMessage } from '../../../shared/api/inspect';
import { absoluteTime, bytes as formatBytes, count, shortReason } from '../lib/format';
import { useEscapeKey } from '../lib/hooks';
import { Time } from './common';
import { bringIntoView } from './MessageList';
import { KEY_VERDICT_LABEL, KEY_VERDICT_TONE, keyReasonText } from './InspectBadges';
import { Revealed } from './TextViews';
import './inspect.css';

const ROW_HEIGHT = 32;

/** When the analysed copies were read: the inspection's start and end (epoch ms; null when unknown). */
export interface ReadWindow {
  startedAt: number | null;
  finishedAt: number | null;
}

/** "read at 03:01:05 (2 min ago)" / "read between … and …", for the analysed-copies banner and view. */
function ReadAt({ when }: { when: ReadWindow }) {
  const end = when.finishedAt ?? when.startedAt;
  if (end === null) return <>read by the analysis (time unknown)</>;
  return (
    <>
      read by “Analyse all messages”
      {when.startedAt !== null && when.finishedAt !== null && when.finishedAt - when.startedAt >= 1000 ? ` between ${absoluteTime(when.startedAt)} and ${absoluteTime(when.finishedAt)}` : ` at ${absoluteTime(end)}`} (<Time ms={end} />)
    </>
  );
}

/**
 * The per-message rows an inspection kept (`InspectReport.messages`), shown in place of the
 * message list where reading the queue changes it: seeing them costs no further delivery. They are
 * the analysed copies (verdicts, key, size; the report keeps no bodies or headers), labelled with
 * when they were read. Virtualized; ↑/↓ (or k/j) move, Enter opens, like the message list.
 */
export function AnalysedMessages({
  report,
  when,
  selectedId,
  onOpen,
  reveal,
}: {
  report: InspectReport;
  when: ReadWindow;
  selectedId: string | null;
  onOpen: (id: string) => void;
  /** Bumped when the selected row was opened from outside the list (a drill-down): the list brings itself into view too. */
  reveal?: number | undefined;
}) {
  const rows = report.messages;
  const scrollRef = useRef<HTMLDivElement>(null);
  const [active, setActive] = useState(0);
  // eslint-disable-next-line react-hooks/incompatible-library -- TanStack Virtual returns functions React Compiler cannot memoize; this component is not compiled.
  const virtualizer = useVirtualizer({ count: rows.length, getScrollElement: () => scrollRef.current, estimateSize: () => ROW_HEIGHT, overscan: 12 });
  // The open row is scrolled into the (virtualized) list, also when opened from a drill-down id.
  const revealed = useRef(reveal);
  useEffect(() => {
    if (selectedId === null) return;
    const i = rows.findIndex((r) => r.id === selectedId);
    if (i < 0) return;
    setActive(i);
    virtualizer.scrollToIndex(i, { align: 'auto' });
    if (reveal !== revealed.current) {
      revealed.current = reveal;
      bringIntoView(scrollRef.current);
    }
  }, [selectedId, reveal, rows, virtualizer]);
  const activeIndex = Math.min(active, Math.max(0, rows.length - 1));
  const move = (to: number): void => {
    const i = Math.max(0, Math.min(rows.length - 1, to));
    setActive(i);
    virtualizer.scrollToIndex(i, { align: 'auto' });
  };
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>): void => {
    if (rows.length === 0 || e.altKey || e.ctrlKey || e.metaKey) return;
    const keys: Record<string, () => void> = {
      ArrowDown: () => move(activeIndex + 1),
      j: () => move(activeIndex + 1),
      ArrowUp: () => move(activeIndex - 1),
      k: () => move(activeIndex - 1),
      Home: () => move(0),
      End: () => move(rows.length - 1),
      Enter: () => {
        const r = rows[activeIndex];
        if (r !== undefined) onOpen(r.id);
      },
    };
    const fn = keys[e.key];
    if (fn) {
      e.preventDefault();
      fn();
    }
  };
  const kept = rows.length;
  return (
    <div className="analysed" data-testid="analysed-messages">
      <div className="notice notice-info" role="note" data-testid="analysed-notice">
        <strong>
          Analysed copies of {count(kept)} message{kept === 1 ? '' : 's'}
        </strong>
        {report.messagesTruncated || kept !== report.analysed ? ` (the report keeps ${count(kept)} of the ${count(report.analysed)} analysed)` : ''}, <ReadAt when={when} />. These rows are what the analysis saw; the queue may have changed since. Bodies and headers
        were not kept: peeking reads the queue again, which is another delivery.
      </div>
      <div className="table message-table analysed-table" role="grid" aria-label="Analysed messages" aria-rowcount={kept}>
        <div className="thead" role="rowgroup">
          <div className="tr" role="row">
            <div role="columnheader">Id</div>
            <div role="columnheader">Key</div>
            <div role="columnheader" title="Idempotency key verdict and payload verdict">
              Safety
            </div>
            <div role="columnheader" className="num">
              Size
            </div>
            <div role="columnheader">Reason</div>
          </div>
        </div>
        <div className="tbody scroll" ref={scrollRef} role="rowgroup" tabIndex={0} aria-activedescendant={kept > 0 ? `analysed-row-${activeIndex}` : undefined} onKeyDown={onKeyDown} data-testid="analysed-list">
          <div style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
            {virtualizer.getVirtualItems().map((item) => {
              const r = rows[item.index];
              if (r === undefined) return null;
              const i = item.index;
              const cls = ['tr', 'clickable', r.id === selectedId ? 'selected' : '', i === activeIndex ? 'active' : ''].filter(Boolean).join(' ');
              return (
                <div
                  key={item.key}
                  id={`analysed-row-${i}`}
                  className={cls}
                  role="row"
                  aria-rowindex={i + 1}
                  aria-selected={r.id === selectedId}
                  data-message-id={r.id}
                  style={{ position: 'absolute', top: 0, left: 0, right: 0, height: ROW_HEIGHT, transform: `translateY(${item.start}px)` }}
                  onClick={() => {
                    setActive(i);
                    onOpen(r.id);
                  }}
                >
                  <div role="gridcell" className="mono ellipsis" title={r.id}>
                    {r.id}
                  </div>
                  <div role="gridcell" className="mono ellipsis" title={r.key ?? undefined}>
                    {r.key ?? <span className="muted">—</span>}
                  </div>
                  <div role="gridcell" className="inspect-cell">
                    <RowBadges row={r} />
                  </div>
                  <div role="gridcell" className="num">
                    {formatBytes(r.bytes)}
                  </div>
                  <div role="gridcell" className="ellipsis" title={r.topReason ?? undefined}>
                    {r.topReason !== null ? shortReason(r.topReason, 90) : ''}
                  </div>
                </div>
              );
            })}
          </div>
        </div>
      </div>
    </div>
  );
}

/** Key and payload verdict badges of one analysed row (the same look as the message list's). */
function RowBadges({ row }: { row: InspectedMessage }) {
  return (
    <>
      <span className={`inspect-badge tone-${KEY_VERDICT_TONE[row.keyVerdict]}`} title={row.keyReason} data-testid="key-badge" data-verdict={row.keyVerdict}>
        {KEY_VERDICT_LABEL[row.keyVerdict]}
      </span>
      <span className={`inspect-badge tone-${row.verdict}`} title={row.reasons.length > 0 ? row.reasons.join('\n') : row.payloadLabel} data-testid="verdict-badge" data-verdict={row.verdict}>
        {row.verdict}
      </span>
    </>
  );
}

/**
 * One analysed copy in the detail pane: what the inspection recorded for it (key, where it was
 * found, verdicts with their reasons, operation, size), marked as an analysed copy with the read
 * time. No body: the report does not keep it, and showing it would mean reading the queue again.
 * Esc closes it (not while a dialog is open).
 */
export function AnalysedMessageView({ row, when, onClose }: { row: InspectedMessage; when: ReadWindow; onClose: () => void }) {
  useEscapeKey(onClose);
  return (
    <article className="message-view" aria-label={`Analysed copy of message ${row.id}`} data-testid="analysed-message-view">
      <header className="message-header">
        <div className="title-block">
          <h2 className="mono ellipsis" title={row.id}>
            {row.id}
          </h2>
          <div className="subtitle">
            {row.state !== null && <span className={`msg-state msg-state-${row.state}`}>{row.state}</span>}
            {row.position !== null && <span className="muted">position {count(row.position)}</span>}
            <span className="muted">
              analysed copy, <ReadAt when={when} />
            </span>
          </div>
        </div>
        <button type="button" className="btn btn-ghost btn-icon" aria-label="Close message" onClick={onClose}>
          ×
        </button>
      </header>
      <section className="panel inspect-panel" aria-label="Redelivery safety">
        <h3>
          Redelivery safety <RowBadges row={row} />
        </h3>
        <div className="inspect-reason">
          <strong>Idempotency key:</strong>{' '}
          {row.key !== null ? (
            <>
              <mark className="inspect-key" data-testid="highlighted-key">
                <Revealed text={row.key} />
              </mark>{' '}
              <span className="muted">
                from <span data-testid="key-source">{row.keySource}</span>
                {row.keyOrigin === 'user' ? ' (your rule)' : row.keyOrigin === 'builtin' ? ' (built-in rule)' : ''}
              </span>
            </>
          ) : (
            <span className="muted">none found</span>
          )}
        </div>
        <div className="inspect-reason">
          <strong>{KEY_VERDICT_LABEL[row.keyVerdict]}:</strong> <span data-testid="key-reason">{keyReasonText(row.keyVerdict, row.keyReason)}</span>
        </div>
        <div className="inspect-reason">
          <strong>Payload: {row.payloadLabel}</strong>
          <span className="muted">
            {' '}
            · {formatBytes(row.bytes)}
            {row.operation !== null ? ` · operation ${row.operation}` : ''}
          </span>
        </div>
        {row.reasons.length > 0 && (
          <ul className="inspect-reasons" data-testid="inspect-reasons">
            {row.reasons.map((r, i) => (
              <li key={i}>{r}</li>
            ))}
          </ul>
        )}
      </section>
      <div className="muted">The analysis keeps no body or headers. Peek to read them: on this queue that is another delivery.</div>
    </article>
  );
}
