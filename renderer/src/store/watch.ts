import { create } from 'zustand';
import { ALERT_EVENT_TYPES, type WatchEventView, type WatchedDlqView } from '../../../shared/api/watch';
import type { ErrorInfo } from '../../../shared/domain/errors';
import { call, errorInfoOf } from '../api';
import { useStore } from './index';

/** How often the renderer asks for new watch events, ms. */
export const WATCH_POLL_MS = 2_000;
/** Alerts raised before the window opened are shown when at most this old, ms. */
const BACKLOG_MS = 15 * 60_000;
/** Most alerts kept for the banner. */
const MAX_ALERTS = 20;

/**
 * DLQ alerts in the renderer: what is watched (from `watch.list`), the alerts not yet dismissed
 * (from polling `watch.events`), and the actions. A small store of its own: it polls on its own
 * timer and is read by the banner, the sidebar and the queue list.
 */
export interface WatchStore {
  watched: WatchedDlqView[];
  /** Alerts (first-message, grew, error) not dismissed, oldest first. */
  alerts: WatchEventView[];
  /** Cursor of the last `watch.events` page; null before the first poll. */
  cursor: number | null;
  /** Last polling / watch.set failure, null when fine. */
  error: ErrorInfo | null;
  /** One poll: new events, then the watched list. Never throws (failures land in `error`). */
  poll: () => Promise<void>;
  /** Starts polling every {@link WATCH_POLL_MS}; returns the stop function. */
  startPolling: () => () => void;
  /** Watches or stops watching one DLQ of a connection (keeps the connection's other DLQs). */
  toggleWatch: (connectionId: string, queueId: string) => Promise<void>;
  dismissAlert: (seq: number) => void;
  dismissAll: () => void;
}

/** Key of a watched DLQ. */
export function watchKey(connectionId: string, queueId: string): string {
  return `${connectionId}\u0000${queueId}`;
}

/**
 * The depth to show in a queue-list row: for a watched DLQ whose watch has read a depth, that depth
 * (the watch reads the broker directly every few seconds, while the list can be older or come from
 * lagging broker statistics, e.g. the RabbitMQ management API), so the row agrees with the watch
 * badge and banner; otherwise the listed depth. Messages; null when unknown.
 */
export function rowDepth(listedDepth: number | null, watched: WatchedDlqView | undefined): number | null {
  return watched?.depth ?? listedDepth;
}

export const useWatchStore = create<WatchStore>()((set, get) => ({
  watched: [],
  alerts: [],
  cursor: null,
  error: null,

  poll: async () => {
    try {
      const first = get().cursor === null;
      const page = await call('watch.events', { since: get().cursor ?? 0 });
      const now = Date.now();
      const fresh = page.events.filter((e) => ALERT_EVENT_TYPES.includes(e.type) && (!first || now - e.at <= BACKLOG_MS));
      const list = await call('watch.list', {});
      set((s) => ({
        cursor: page.cursor,
        watched: list.watched,
        alerts: fresh.length === 0 ? s.alerts : [...s.alerts, ...fresh].slice(-MAX_ALERTS),
        error: null,
      }));
      // A depth change seen by the watch: refresh that connection's queue list if it is loaded, so its Depth column agrees.
      const app = useStore.getState();
      const changed = new Set(page.events.filter((e) => e.type !== 'status' && e.type !== 'error').map((e) => e.connectionId));
      for (const connectionId of changed) if (app.queueLists[connectionId] !== undefined) void app.loadQueues(connectionId);
    } catch (e) {
      set({ error: errorInfoOf(e) });
    }
  },

  startPolling: () => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const tick = async (): Promise<void> => {
      await get().poll();
      if (!stopped) timer = setTimeout(() => void tick(), WATCH_POLL_MS);
    };
    void tick();
    return () => {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
    };
  },

  toggleWatch: async (connectionId, queueId) => {
    const mine = get().watched.filter((w) => w.connectionId === connectionId);
    const on = mine.some((w) => w.queueId === queueId);
    const queueIds = on ? mine.filter((w) => w.queueId !== queueId).map((w) => w.queueId) : [...mine.map((w) => w.queueId), queueId];
    try {
      const r = await call('watch.set', { connectionId, queueIds });
      set((s) => ({ watched: [...s.watched.filter((w) => w.connectionId !== connectionId), ...r.watched], error: null }));
    } catch (e) {
      set({ error: errorInfoOf(e) });
    }
  },

  dismissAlert: (seq) => set((s) => ({ alerts: s.alerts.filter((a) => a.seq !== seq) })),
  dismissAll: () => set({ alerts: [] }),
}));
