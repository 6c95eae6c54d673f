import type { StateCreator } from 'zustand';
import { errorInfoOf } from '../api';
import type { All, Preferences, UiSlice } from './types';

export const DEFAULT_PREFERENCES: Preferences = {
  autoRefresh: false,
  refreshIntervalMs: 10_000,
  peekLimit: 50,
  peekDirection: 'oldest',
  bodyTab: 'pretty',
};

/** Auto-refresh intervals offered in the queue list, in ms. */
export const REFRESH_INTERVALS_MS = [5_000, 10_000, 30_000, 60_000] as const;
/** Peek sizes offered (capped by the queue's `maxPeekWindow`). */
export const PEEK_LIMITS = [10, 20, 50, 100, 200, 500, 1000] as const;

/** Version of the persisted preferences shape; bump and extend {@link migratePreferences} on change. */
export const PREFERENCES_VERSION = 2;

/**
 * Upgrades persisted preferences of any earlier version (or garbage) to the current shape.
 * - v0/v1 stored `{ preferences: { autoRefresh, refreshSeconds, peekLimit } }` (interval in seconds).
 * - v2 stores the interval in ms (`refreshIntervalMs`) and adds `peekDirection`, `bodyTab`.
 * Unknown or out-of-range values fall back to defaults, so a bad file never breaks the app.
 */
export function migratePreferences(persisted: unknown, version: number): { preferences: Preferences } {
  const raw: Record<string, unknown> = isRecord(persisted) && isRecord(persisted.preferences) ? persisted.preferences : {};
  const p: Preferences = { ...DEFAULT_PREFERENCES };
  if (typeof raw.autoRefresh === 'boolean') p.autoRefresh = raw.autoRefresh;
  const interval = version < 2 ? (typeof raw.refreshSeconds === 'number' ? raw.refreshSeconds * 1000 : undefined) : raw.refreshIntervalMs;
  if (typeof interval === 'number' && (REFRESH_INTERVALS_MS as readonly number[]).includes(interval)) p.refreshIntervalMs = interval;
  if (typeof raw.peekLimit === 'number' && (PEEK_LIMITS as readonly number[]).includes(raw.peekLimit)) p.peekLimit = raw.peekLimit;
  if (raw.peekDirection === 'oldest' || raw.peekDirection === 'newest') p.peekDirection = raw.peekDirection;
  if (raw.bodyTab === 'pretty' || raw.bodyTab === 'raw' || raw.bodyTab === 'hex') p.bodyTab = raw.bodyTab;
  return { preferences: p };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Navigation, the error banner and persisted preferences. */
export const createUiSlice: StateCreator<All, [], [], UiSlice> = (set, get) => ({
  view: { screen: 'welcome' },
  navigate(view) {
    const prev = get().view;
    const sameQueue = prev.screen === 'queue' && view.screen === 'queue' && prev.connectionId === view.connectionId && prev.queueId === view.queueId;
    if (!sameQueue) get().clearPeek();
    set({ view });
  },

  banner: null,
  showError(e) {
    set({ banner: errorInfoOf(e) });
  },
  dismissBanner() {
    set({ banner: null });
  },

  preferences: DEFAULT_PREFERENCES,
  setPreference(key, value) {
    set((s) => ({ preferences: { ...s.preferences, [key]: value } }));
  },
});
