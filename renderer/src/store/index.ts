import { create } from 'zustand';
import { createJSONStorage, persist } from 'zustand/middleware';
import { createAuditSlice } from './audit';
import { createConnectionsSlice } from './connections';
import { createInspectSlice } from './inspect';
import { createMessagesSlice } from './messages';
import { createOperationsSlice } from './operations';
import { createQueuesSlice } from './queues';
import { createRedriveSlice } from './redrive';
import { createTuningSlice } from './tuning';
import type { All } from './types';
import { PREFERENCES_VERSION, createUiSlice, migratePreferences } from './ui';

export type { All } from './types';

/**
 * The one store, combined from slices; middleware (persist) only here. Only preferences are
 * persisted (localStorage `queuescope.preferences`), versioned, with `migratePreferences`.
 */
export const useStore = create<All>()(
  persist(
    (...a) => ({
      ...createConnectionsSlice(...a),
      ...createQueuesSlice(...a),
      ...createMessagesSlice(...a),
      ...createOperationsSlice(...a),
      ...createUiSlice(...a),
      ...createInspectSlice(...a),
      ...createAuditSlice(...a),
      ...createTuningSlice(...a),
      ...createRedriveSlice(...a),
    }),
    {
      name: 'queuescope.preferences',
      version: PREFERENCES_VERSION,
      storage: createJSONStorage(() => localStorage),
      partialize: (s) => ({ preferences: s.preferences }),
      migrate: (persisted, version) => migratePreferences(persisted, version),
      // Re-validate on every load too, so a hand-edited or damaged entry falls back to defaults.
      merge: (persisted, current) => ({ ...current, ...migratePreferences(persisted, PREFERENCES_VERSION) }),
    },
  ),
);
