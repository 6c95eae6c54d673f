import type { StateCreator } from 'zustand';
import type { QueueSummary } from '../../../shared/domain';
import { call, errorInfoOf } from '../api';
import { queueKey, type All, type QueuesSlice } from './types';

/** Queue lists per connection and single-queue summaries for the queue view. */
export const createQueuesSlice: StateCreator<All, [], [], QueuesSlice> = (set) => {
  // Newest request per connection wins: a slow earlier refresh must not overwrite a later one.
  const listSeq = new Map<string, number>();

  return {
    queueLists: {},
    queueDetails: {},

    async loadQueues(connectionId) {
      const seq = (listSeq.get(connectionId) ?? 0) + 1;
      listSeq.set(connectionId, seq);
      set((s) => {
        const prev = s.queueLists[connectionId];
        const hasData = prev?.status === 'ready';
        return {
          queueLists: {
            ...s.queueLists,
            [connectionId]: hasData
              ? { ...prev, refreshing: true }
              : { status: 'loading', error: null, queues: [], loadedAt: null, refreshing: false },
          },
        };
      });
      try {
        const queues = await call('queues.list', { connectionId });
        if (listSeq.get(connectionId) !== seq) return;
        set((s) => ({ queueLists: { ...s.queueLists, [connectionId]: { status: 'ready', error: null, queues, loadedAt: Date.now(), refreshing: false } } }));
      } catch (e) {
        if (listSeq.get(connectionId) !== seq) return;
        const error = errorInfoOf(e);
        set((s) => {
          const prev = s.queueLists[connectionId];
          // A failed refresh keeps the last good list visible, with the error above it.
          return {
            queueLists: {
              ...s.queueLists,
              [connectionId]: { status: 'error', error, queues: prev?.queues ?? [], loadedAt: prev?.loadedAt ?? null, refreshing: false },
            },
          };
        });
      }
    },

    async loadQueue(connectionId, queueId) {
      const key = queueKey(connectionId, queueId);
      set((s) => {
        const prev = s.queueDetails[key];
        // Until the first read of its own, the view shows the list's row: as old as the list.
        const summary = prev?.summary ?? findInList(s, connectionId, queueId);
        const loadedAt = prev?.summary != null ? prev.loadedAt : summary !== null ? (s.queueLists[connectionId]?.loadedAt ?? null) : null;
        return { queueDetails: { ...s.queueDetails, [key]: { status: 'loading', error: null, summary, loadedAt } } };
      });
      try {
        const summary = await call('queues.get', { connectionId, queueId });
        set((s) => {
          const list = s.queueLists[connectionId];
          const queueLists =
            list === undefined ? s.queueLists : { ...s.queueLists, [connectionId]: { ...list, queues: list.queues.map((q) => (q.id === queueId ? summary : q)) } };
          return { queueDetails: { ...s.queueDetails, [key]: { status: 'ready', error: null, summary, loadedAt: Date.now() } }, queueLists };
        });
      } catch (e) {
        set((s) => ({ queueDetails: { ...s.queueDetails, [key]: { status: 'error', error: errorInfoOf(e), summary: s.queueDetails[key]?.summary ?? null, loadedAt: s.queueDetails[key]?.loadedAt ?? null } } }));
      }
    },
  };
};

function findInList(s: All, connectionId: string, queueId: string): QueueSummary | null {
  return s.queueLists[connectionId]?.queues.find((q) => q.id === queueId) ?? null;
}
