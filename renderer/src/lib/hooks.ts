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
