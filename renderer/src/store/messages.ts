import type { StateCreator } from 'zustand';
import { call, errorInfoOf } from '../api';
import type { All, MessagesSlice, PeekParams } from './types';

/** The open queue's peeked messages, the open message, and the export selection. */
export const createMessagesSlice: StateCreator<All, [], [], MessagesSlice> = (set, get) => {
  // Each peek gets a number; results of a superseded peek are dropped.
  let seq = 0;

  const request = (p: PeekParams, cursor: string | null) =>
    call('messages.peek', {
      connectionId: p.connectionId,
      queueId: p.queueId,
      options: {
        limit: p.limit,
        direction: p.direction,
        cursor,
        ...(p.state !== undefined ? { state: p.state } : {}),
        ...(p.acceptSideEffects ? { acceptSideEffects: true } : {}),
      },
    });

  return {
    peek: null,
    selectedIndex: null,
    checked: {},

    async startPeek(params) {
      const my = ++seq;
      set({
        peek: { ...params, status: 'loading', messages: [], nextCursor: null, total: null, sideEffects: [], error: null },
        selectedIndex: null,
        checked: {},
      });
      try {
        const page = await request(params, null);
        if (my !== seq) return;
        set({ peek: { ...params, status: 'ready', messages: page.messages, nextCursor: page.nextCursor, total: page.total, sideEffects: page.sideEffects, error: null, readAt: Date.now() } });
      } catch (e) {
        if (my !== seq) return;
        set((s) => (s.peek === null ? {} : { peek: { ...s.peek, status: 'error', error: errorInfoOf(e) } }));
      }
    },

    async loadMore() {
      const p = get().peek;
      if (p === null || p.nextCursor === null || p.status !== 'ready') return;
      const my = ++seq;
      set({ peek: { ...p, status: 'loading-more' } });
      try {
        const page = await request(p, p.nextCursor);
        if (my !== seq) return;
        set((s) => {
          if (s.peek === null) return {};
          const sideEffects = [...new Set([...s.peek.sideEffects, ...page.sideEffects])];
          const moved = page.moved !== undefined ? [...(s.peek.moved ?? []), page.moved] : s.peek.moved;
          return {
            peek: {
              ...s.peek,
              status: 'ready',
              messages: [...s.peek.messages, ...page.messages],
              nextCursor: page.nextCursor,
              total: page.total ?? s.peek.total,
              sideEffects,
              ...(moved !== undefined ? { moved } : {}),
            },
          };
        });
      } catch (e) {
        if (my !== seq) return;
        // Keep what was loaded; report the failed page in the banner.
        set((s) => (s.peek === null ? {} : { peek: { ...s.peek, status: 'ready' } }));
        get().showError(e);
      }
    },

    clearPeek() {
      seq++;
      set({ peek: null, selectedIndex: null, checked: {} });
    },

    selectMessage(index) {
      set({ selectedIndex: index });
    },

    toggleChecked(index) {
      set((s) => {
        const { [index]: was, ...rest } = s.checked;
        return { checked: was ? rest : { ...rest, [index]: true as const } };
      });
    },

    setChecked(indices) {
      const checked: Record<number, true> = {};
      for (const i of indices) checked[i] = true;
      set({ checked });
    },
  };
};
