import { useEffect, useRef, useState } from 'react';

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

/**
 * The current time (ms since epoch), updated every `intervalMs` while the page is visible (and at
 * once when it shows again), for texts such as "read 12 s ago" that must age as time passes.
 */
export function useNow(intervalMs = 1000): number {
  const visible = usePageVisible();
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!visible) return;
    const tick = (): void => setNow(Date.now());
    // At once (next tick) when the page shows again, then every interval.
    const first = setTimeout(tick, 0);
    const t = setInterval(tick, intervalMs);
    return () => {
      clearTimeout(first);
      clearInterval(t);
    };
  }, [visible, intervalMs]);
  return now;
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
