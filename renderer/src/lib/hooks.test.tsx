// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, cleanup, render } from '@testing-library/react';
import { useAutoRefresh } from './hooks';

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
