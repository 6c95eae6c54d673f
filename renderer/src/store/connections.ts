import type { StateCreator } from 'zustand';
import type { ConnectionProfile } from '../../../shared/domain';
import { call, errorInfoOf } from '../api';
import type { All, ConnectionsSlice } from './types';

/** Connections: saved profiles, the demo snapshot and snapshots opened this session. */
export const createConnectionsSlice: StateCreator<All, [], [], ConnectionsSlice> = (set, get) => ({
  appInfo: null,
  connections: [],
  connectionsStatus: 'idle',
  connectionsError: null,

  async init() {
    try {
      const info = await call('app.info', {});
      set({ appInfo: info });
      // Start-up problems (e.g. a corrupt profiles file moved aside) must be seen, not logged.
      if (info.warnings.length > 0) set({ banner: { code: 'INVALID_INPUT', message: info.warnings.join(' ') } });
    } catch (e) {
      get().showError(e);
    }
    await get().loadConnections();
    const { connections, appInfo, view } = get();
    if (view.screen !== 'welcome') return;
    const own = connections.filter((c) => !c.builtIn);
    if (own.length === 0 && appInfo?.demoConnectionId) {
      get().navigate({ screen: 'queues', connectionId: appInfo.demoConnectionId });
    } else if (own.length === 1 && own[0]) {
      get().navigate({ screen: 'queues', connectionId: own[0].id });
    }
  },

  async loadConnections() {
    set({ connectionsStatus: 'loading', connectionsError: null });
    try {
      const listed = await call('connections.list', {});
      set((s) => ({ connections: withSessionOnly(listed, s.connections, s.appInfo?.demoConnectionId ?? null), connectionsStatus: 'ready' }));
    } catch (e) {
      set({ connectionsStatus: 'error', connectionsError: errorInfoOf(e) });
    }
  },

  async saveConnection(input) {
    const saved = await call('connections.save', input);
    set((s) => ({ connections: upsert(s.connections, saved) }));
    await get().loadConnections();
    return saved;
  },

  async removeConnection(id) {
    await call('connections.remove', { id });
    set((s) => {
      const { [id]: _removed, ...queueLists } = s.queueLists;
      return { connections: s.connections.filter((c) => c.id !== id), queueLists };
    });
    const v = get().view;
    if ((v.screen === 'queues' || v.screen === 'queue') && v.connectionId === id) get().navigate({ screen: 'welcome' });
    if (v.screen === 'connection-form' && v.editId === id) get().navigate({ screen: 'welcome' });
    await get().loadConnections();
  },

  snapshotPromptOpen: false,
  closeSnapshotPrompt() {
    set({ snapshotPromptOpen: false });
  },
  async openSnapshotPath(path) {
    const profile = await call('snapshots.open', { path });
    if (profile === null) return;
    set((s) => ({ connections: upsert(s.connections, profile), snapshotPromptOpen: false }));
    get().navigate({ screen: 'queues', connectionId: profile.id });
  },

  async openSnapshot() {
    if (get().appInfo?.pathInput === true) {
      set({ snapshotPromptOpen: true });
      return;
    }
    try {
      const profile = await call('snapshots.open', {});
      if (profile === null) return;
      set((s) => ({ connections: upsert(s.connections, profile) }));
      get().navigate({ screen: 'queues', connectionId: profile.id });
    } catch (e) {
      get().showError(e);
    }
  },
});

function upsert(list: ConnectionProfile[], p: ConnectionProfile): ConnectionProfile[] {
  const i = list.findIndex((c) => c.id === p.id);
  if (i < 0) return [...list, p];
  const copy = list.slice();
  copy[i] = p;
  return copy;
}

/**
 * The listed profiles plus snapshots opened this session that the list does not contain
 * (session-only connections), plus a stand-in for the demo snapshot when it is not listed.
 */
function withSessionOnly(listed: ConnectionProfile[], previous: ConnectionProfile[], demoId: string | null): ConnectionProfile[] {
  const ids = new Set(listed.map((c) => c.id));
  const kept = previous.filter((c) => !ids.has(c.id) && c.config.kind === 'snapshot');
  const out = [...listed, ...kept];
  if (demoId !== null && !out.some((c) => c.id === demoId)) {
    out.push({ id: demoId, name: 'Demo snapshot', config: { kind: 'snapshot', path: 'demo-snapshot.jsonl' }, hasSecret: false, builtIn: true });
  }
  return out;
}
