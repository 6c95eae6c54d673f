import { useCallback, useEffect, useRef, useState, useSyncExternalStore, type RefObject } from 'react';

/** True while the page is visible (Page Visibility API). */
export function usePageVisible(): boolean {
  const [visible, setVisible] = useState(() => document.visibilityState !== 'hidden');
  useEffect(() => {
    const on = (): void => setVisible(document.visibilityState !== 'hidden');
    document.addEventListener('visibilitychange', on);
    return () => document.removeEventListener('visibilitychange', on);
  }, []);
  return visible;
}

/**
 * Calls `fn` every `intervalMs` while `enabled` and the page is visible; paused while the tab is
 * hidden and resumed (with an immediate call) when it shows again. The latest `fn` is used.
 */
export function useAutoRefresh(enabled: boolean, intervalMs: number, fn: () => void): void {
  const visible = usePageVisible();
  const latest = useRef(fn);
  useEffect(() => {
    latest.current = fn;
  });
  const wasHidden = useRef(false);
  useEffect(() => {
    if (!enabled) return;
    if (!visible) {
      wasHidden.current = true;
      return;
    }
    if (wasHidden.current) {
      wasHidden.current = false;
      latest.current();
    }
    const t = setInterval(() => latest.current(), intervalMs);
    return () => clearInterval(t);
  }, [enabled, visible, intervalMs]);
}

/** One clock per interval: its time, the components reading it, and its single timer (null while nobody reads it). */
interface SharedClock {
  now: number;
  listeners: Set<() => void>;
  timer: ReturnType<typeof setInterval> | null;
}
const clocks = new Map<number, SharedClock>();

function clockOf(intervalMs: number): SharedClock {
  let c = clocks.get(intervalMs);
  if (c === undefined) {
    c = { now: Date.now(), listeners: new Set(), timer: null };
    clocks.set(intervalMs, c);
  }
  return c;
}

/**
 * Adds a reader to the clock of `intervalMs`; the first one starts its one timer (and moves the
 * time to now, so a reader that mounts or shows again is not shown a stale time), the last one to
 * leave stops it. Returns the unsubscribe function.
 */
function subscribeClock(intervalMs: number, listener: () => void): () => void {
  const c = clockOf(intervalMs);
  c.listeners.add(listener);
  if (c.timer === null) {
    const tick = (): void => {
      c.now = Date.now();
      for (const l of [...c.listeners]) l();
    };
    c.timer = setInterval(tick, intervalMs);
    tick();
  }
  return () => {
    c.listeners.delete(listener);
    if (c.listeners.size === 0 && c.timer !== null) {
      clearInterval(c.timer);
      c.timer = null;
    }
  };
}

/**
 * The current time (ms since epoch), updated every `intervalMs` while the page is visible (and at
 * once when it shows again), for texts such as "read 12 s ago" or "updated 5 sec. ago" that must
 * age as time passes. Every component reading the same interval shares one timer (a shared clock,
 * not a timer per row or label); the timer runs only while some visible component reads it.
 */
export function useNow(intervalMs = 1000): number {
  const visible = usePageVisible();
  const subscribe = useCallback((onChange: () => void) => (visible ? subscribeClock(intervalMs, onChange) : () => undefined), [visible, intervalMs]);
  const read = useCallback(() => {
    const c = clockOf(intervalMs);
    // Nobody reads it (the first render of its first reader, or a hidden page): its timer is stopped,
    // so bring a stale time forward rather than show a time in the past.
    if (c.timer === null && Date.now() - c.now >= intervalMs) c.now = Date.now();
    return c.now;
  }, [intervalMs]);
  return useSyncExternalStore(subscribe, read);
}

/**
 * Calls `onEscape` when Esc is pressed anywhere in the page, except while a dialog is open
 * (`[role="dialog"]`, e.g. a confirm on top of an open message): the dialog handles its own Esc and
 * closes first, alone. Listens on `window` in the capture phase, so it sees the key before a
 * dialog's own handler has closed (and removed) the dialog. The latest `onEscape` is used.
 */
export function useEscapeKey(onEscape: () => void): void {
  const latest = useRef(onEscape);
  useEffect(() => {
    latest.current = onEscape;
  });
  useEffect(() => {
    const onKey = (e: KeyboardEvent): void => {
      if (e.key !== 'Escape' || e.defaultPrevented || e.isComposing) return;
      if (document.querySelector('[role="dialog"]') !== null) return;
      latest.current();
    };
    window.addEventListener('keydown', onKey, true);
    return () => window.removeEventListener('keydown', onKey, true);
  }, []);
}

/**
 * A dialog's own Esc: calls `onClose` when Esc is pressed while the dialog is mounted (a `document`
 * listener in the bubbling phase, so {@link useEscapeKey}'s capture-phase check, which defers to an
 * open dialog, has already run). When `focus` is given, focuses it once on mount (the Cancel
 * button: the safe default for a confirmation).
 */
export function useDialogClose(onClose: () => void, focus?: RefObject<HTMLElement | null>): void {
  useEffect(() => {
    focus?.current?.focus();
    // Mount only: a re-render must not pull the focus back to Cancel.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  useEffect(() => {
    const onKey = (e: KeyboardEvent): void => {
      if (e.key === 'Escape') onClose();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [onClose]);
}
