// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { useRef, useState } from 'react';
import { useAutoRefresh, useDialogClose, useNow } from './hooks';

let hidden = false;
beforeEach(() => {
  vi.useFakeTimers();
  hidden = false;
  Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (hidden ? 'hidden' : 'visible') });
});
afterEach(() => {
  cleanup();
  vi.useRealTimers();
});

function Probe({ enabled, fn }: { enabled: boolean; fn: () => void }) {
  useAutoRefresh(enabled, 1000, fn);
  return null;
}

const setHidden = async (h: boolean): Promise<void> => {
  await act(async () => {
    hidden = h;
    document.dispatchEvent(new Event('visibilitychange'));
    await Promise.resolve();
  });
};

describe('useAutoRefresh', () => {
  it('calls on the interval while visible, pauses while hidden, refreshes at once when shown again', async () => {
    const fn = vi.fn();
    render(<Probe enabled fn={fn} />);
    await act(async () => {
      vi.advanceTimersByTime(3000);
      await Promise.resolve();
    });
    expect(fn).toHaveBeenCalledTimes(3);
    await setHidden(true);
    await act(async () => {
      vi.advanceTimersByTime(10_000);
      await Promise.resolve();
    });
    expect(fn).toHaveBeenCalledTimes(3);
    await setHidden(false);
    expect(fn).toHaveBeenCalledTimes(4);
    await act(async () => {
      vi.advanceTimersByTime(1000);
      await Promise.resolve();
    });
    expect(fn).toHaveBeenCalledTimes(5);
  });

  it('does nothing when disabled', async () => {
    const fn = vi.fn();
    render(<Probe enabled={false} fn={fn} />);
    await act(async () => {
      vi.advanceTimersByTime(5000);
      await Promise.resolve();
    });
    expect(fn).not.toHaveBeenCalled();
  });
});

function Clock({ id }: { id: string }) {
  const now = useNow(1000);
  return <span data-testid={id}>{String(now)}</span>;
}

describe('useNow', () => {
  it('is one shared timer for every reader, ticking while visible, stopped while hidden or unread', async () => {
    const T0 = Date.UTC(2026, 11, 2, 12, 0, 0);
    vi.setSystemTime(T0);
    const { getByTestId, unmount } = render(
      <>
        <Clock id="a" />
        <Clock id="b" />
        <Clock id="c" />
      </>,
    );
    const shown = (): string[] => ['a', 'b', 'c'].map((id) => getByTestId(id).textContent);
    expect(shown()).toEqual([String(T0), String(T0), String(T0)]);
    // Three readers, one timer (not a timer per row or label).
    expect(vi.getTimerCount()).toBe(1);
    await act(async () => {
      vi.advanceTimersByTime(5000);
      await Promise.resolve();
    });
    expect(shown()).toEqual(Array(3).fill(String(T0 + 5000)));
    await setHidden(true);
    expect(vi.getTimerCount()).toBe(0);
    vi.setSystemTime(T0 + 60_000);
    // Shown again: the current time at once, not the time it was hidden at.
    await setHidden(false);
    expect(shown()).toEqual(Array(3).fill(String(T0 + 60_000)));
    expect(vi.getTimerCount()).toBe(1);
    unmount();
    expect(vi.getTimerCount()).toBe(0);
  });
});

function Dialog({ onClose }: { onClose: () => void }) {
  const cancel = useRef<HTMLButtonElement>(null);
  const [ticked, setTicked] = useState(false);
  useDialogClose(onClose, cancel);
  return (
    <div role="dialog">
      <input type="checkbox" aria-label="accept" checked={ticked} onChange={() => setTicked(!ticked)} />
      <button type="button" ref={cancel}>
        Cancel
      </button>
    </div>
  );
}

describe('useDialogClose', () => {
  it('focuses Cancel once on mount (not again on a re-render) and closes on Esc', () => {
    const onClose = vi.fn();
    render(<Dialog onClose={onClose} />);
    expect(document.activeElement?.textContent).toBe('Cancel');
    const box = screen.getByLabelText('accept');
    box.focus();
    fireEvent.click(box);
    expect(document.activeElement).toBe(box);
    fireEvent.keyDown(document, { key: 'Enter' });
    expect(onClose).not.toHaveBeenCalled();
    fireEvent.keyDown(document, { key: 'Escape' });
    expect(onClose).toHaveBeenCalledTimes(1);
    cleanup();
    fireEvent.keyDown(document, { key: 'Escape' });
    expect(onClose).toHaveBeenCalledTimes(1);
  });
});
