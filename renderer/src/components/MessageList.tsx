import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import { bodyPreview } from '../../../shared/body/decode';
import type { QueueMessage } from '../../../shared/domain/message';
import { decodedOf } from '../lib/decoded-cache';
import { count, shortReason } from '../lib/format';
import { Time } from './common';
import { InspectCell, type QueueRules } from './InspectBadges';
import { Revealed } from './TextViews';

const ROW_HEIGHT = 32;

/** Scrolls the page (not the list) so that `el` is visible; no-op where layout is unavailable. */
export function bringIntoView(el: HTMLElement | null): void {
  if (el !== null && 'scrollIntoView' in el) el.scrollIntoView({ block: 'nearest' });
}

/**
 * Peeked messages, virtualized. Keyboard: ↑/↓ or k/j move, Enter opens, Home/End jump,
 * Space ticks the message for "Export selection".
 */
export function MessageList({
  messages,
  selectedIndex,
  reveal,
  checked,
  onOpen,
  onToggle,
  onToggleAll,
  inspectRules,
}: {
  messages: QueueMessage[];
  selectedIndex: number | null;
  /**
   * Bumped when the selected message was opened from outside the list (the safety summary's
   * drill-down): the list then also brings itself into view. The selected row is always scrolled to.
   */
  reveal?: number | undefined;
  checked: Record<number, true>;
  onOpen: (index: number) => void;
  onToggle: (index: number) => void;
  onToggleAll: (all: boolean) => void;
  /** When given, a "Safety" column shows each message's key and verdict badges (redelivery safety, issue 3). */
  inspectRules?: QueueRules | undefined;
}) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const [active, setActive] = useState(selectedIndex ?? 0);
  // eslint-disable-next-line react-hooks/incompatible-library -- TanStack Virtual returns functions React Compiler cannot memoize; this component is not compiled.
  const virtualizer = useVirtualizer({ count: messages.length, getScrollElement: () => scrollRef.current, estimateSize: () => ROW_HEIGHT, overscan: 12 });
  const activeIndex = Math.min(active, Math.max(0, messages.length - 1));
  const checkedCount = Object.keys(checked).length;

  // The open message's row is scrolled into the (virtualized) list, also when it was opened from
  // elsewhere (a drill-down id far below the rendered rows).
  const revealed = useRef(reveal);
  useEffect(() => {
    if (selectedIndex === null) return;
    setActive(selectedIndex);
    virtualizer.scrollToIndex(selectedIndex, { align: 'auto' });
    if (reveal !== revealed.current) {
      revealed.current = reveal;
      bringIntoView(scrollRef.current);
    }
  }, [selectedIndex, reveal, virtualizer]);

  const move = (to: number): void => {
    const i = Math.max(0, Math.min(messages.length - 1, to));
    setActive(i);
    virtualizer.scrollToIndex(i, { align: 'auto' });
  };

  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>): void => {
    if (messages.length === 0 || e.altKey || e.ctrlKey || e.metaKey) return;
    const page = Math.max(1, Math.floor((scrollRef.current?.clientHeight ?? 320) / ROW_HEIGHT) - 1);
    const keys: Record<string, () => void> = {
      ArrowDown: () => move(activeIndex + 1),
      j: () => move(activeIndex + 1),
      ArrowUp: () => move(activeIndex - 1),
      k: () => move(activeIndex - 1),
      PageDown: () => move(activeIndex + page),
      PageUp: () => move(activeIndex - page),
      Home: () => move(0),
      End: () => move(messages.length - 1),
      Enter: () => onOpen(activeIndex),
      ' ': () => onToggle(activeIndex),
    };
    const fn = keys[e.key];
    if (fn) {
      e.preventDefault();
      fn();
    }
  };

  return (
    <div className={inspectRules !== undefined ? 'table message-table inspect-on' : 'table message-table'} role="grid" aria-label="Messages" aria-rowcount={messages.length}>
      <div className="thead" role="rowgroup">
        <div className="tr" role="row">
          <div role="columnheader" className="cell-check">
            <input
              type="checkbox"
              aria-label="Select all loaded messages"
              checked={messages.length > 0 && checkedCount === messages.length}
              ref={(el) => {
                if (el) el.indeterminate = checkedCount > 0 && checkedCount < messages.length;
              }}
              onChange={(e) => onToggleAll(e.target.checked)}
            />
          </div>
          <div role="columnheader">Id</div>
          <div role="columnheader">Enqueued</div>
          <div role="columnheader" className="num" title="Receive count / attempts made">Recv</div>
          <div role="columnheader">State</div>
          {inspectRules !== undefined && <div role="columnheader" title="Idempotency key verdict and payload verdict">Safety</div>}
          <div role="columnheader">Body</div>
        </div>
      </div>
      <div
        className="tbody scroll"
        ref={scrollRef}
        role="rowgroup"
        tabIndex={0}
        aria-activedescendant={messages.length > 0 ? `msg-row-${activeIndex}` : undefined}
        onKeyDown={onKeyDown}
        data-testid="message-list"
      >
        <div style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
          {virtualizer.getVirtualItems().map((item) => {
            const m = messages[item.index];
            if (m === undefined) return null;
            const i = item.index;
            const cls = ['tr', 'clickable', i === selectedIndex ? 'selected' : '', i === activeIndex ? 'active' : ''].filter(Boolean).join(' ');
            const recv = m.meta.receiveCount ?? m.meta.attemptsMade ?? null;
            const reason = shortReason(m.meta.failedReason ?? m.meta.firstDeathReason ?? null, 60);
            return (
              <div
                key={item.key}
                id={`msg-row-${i}`}
                className={cls}
                role="row"
                aria-rowindex={i + 1}
                aria-selected={i === selectedIndex}
                data-message-id={m.id}
                style={{ position: 'absolute', top: 0, left: 0, right: 0, height: ROW_HEIGHT, transform: `translateY(${item.start}px)` }}
                onClick={() => {
                  setActive(i);
                  onOpen(i);
                }}
              >
                <div role="gridcell" className="cell-check" onClick={(e) => e.stopPropagation()}>
                  <input type="checkbox" aria-label={`Select message ${m.id}`} checked={checked[i] === true} onChange={() => onToggle(i)} tabIndex={-1} />
                </div>
                <div role="gridcell" className="mono ellipsis" title={m.id}>
                  {m.id}
                </div>
                <div role="gridcell" className="ellipsis">
                  <Time ms={m.meta.enqueuedAt} />
                </div>
                <div role="gridcell" className={recv !== null && recv > 1 ? 'num warn-text' : 'num'}>
                  {recv === null ? '—' : count(recv)}
                </div>
                <div role="gridcell" className="ellipsis">
                  {m.meta.state !== undefined && <span className={`msg-state msg-state-${m.meta.state}`}>{m.meta.state}</span>}
                </div>
                {inspectRules !== undefined && (
                  <div role="gridcell" className="inspect-cell">
                    <InspectCell message={m} rules={inspectRules} />
                  </div>
                )}
                <div role="gridcell" className="ellipsis preview">
                  {reason !== '' && <span className="reason" title={m.meta.failedReason ?? m.meta.firstDeathReason ?? undefined}>{reason}</span>}
                  <span className="mono"><Revealed text={bodyPreview(decodedOf(m), 200)} /></span>
                </div>
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}
