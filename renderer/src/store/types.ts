import type { AppInfo, ApiInput } from '../../../shared/api/contract';
import type { ConnectionProfile, ErrorInfo, OperationSnapshot, PeekPage, QueueMessage, QueueSummary } from '../../../shared/domain';
import type { AuditSlice } from './audit';
import type { InspectSlice } from './inspect';
import type { TuningSlice } from './tuning';
import type { RedriveSlice } from './redrive';

/** Loading state of one piece of remote data. */
export type LoadStatus = 'idle' | 'loading' | 'ready' | 'error';

/** Which screen the main area shows. */
export type View =
  | { screen: 'welcome' }
  | { screen: 'connection-form'; editId: string | null }
  | { screen: 'queues'; connectionId: string }
  | { screen: 'queue'; connectionId: string; queueId: string }
  | { screen: 'audit'; connectionId: string };

export interface ConnectionsSlice {
  appInfo: AppInfo | null;
  connections: ConnectionProfile[];
  connectionsStatus: LoadStatus;
  connectionsError: ErrorInfo | null;
  /** app.info + connections.list; opens the demo snapshot when there is no connection of the user's. */
  init: () => Promise<void>;
  loadConnections: () => Promise<void>;
  /** Saves (creates when `input.id` is absent) and reloads the list. @throws ApiError */
  saveConnection: (input: ApiInput<'connections.save'>) => Promise<ConnectionProfile>;
  /** Removes a saved connection; navigates away when it was open. @throws ApiError */
  removeConnection: (id: string) => Promise<void>;
  /**
   * File › Open snapshot: in the desktop app shows the native open dialog, then adds and opens the
   * snapshot as a connection (errors go to the banner). Where `appInfo.pathInput`, opens the
   * in-app path prompt instead (`snapshotPromptOpen`).
   */
  openSnapshot: () => Promise<void>;
  /** True while the in-app "Open snapshot" path prompt is shown (runtimes without native dialogs). */
  snapshotPromptOpen: boolean;
  closeSnapshotPrompt: () => void;
  /** Opens the snapshot at `path` (on the machine running Queuescope) and navigates to it; closes the prompt. @throws ApiError */
  openSnapshotPath: (path: string) => Promise<void>;
}

export interface QueueListState {
  status: LoadStatus;
  error: ErrorInfo | null;
  queues: QueueSummary[];
  /** ms since epoch of the last successful load. */
  loadedAt: number | null;
  /** True while a refresh runs with the previous list still shown. */
  refreshing: boolean;
}

export interface QueueDetailState {
  status: LoadStatus;
  error: ErrorInfo | null;
  summary: QueueSummary | null;
  /** ms since epoch when `summary` (depth and counts) was read; null when not read yet. Kept through a failed refresh. */
  loadedAt: number | null;
}

export interface QueuesSlice {
  queueLists: Record<string, QueueListState | undefined>;
  queueDetails: Record<string, QueueDetailState | undefined>;
  /** queues.list for a connection. A refresh keeps the shown list until the new one arrives. */
  loadQueues: (connectionId: string) => Promise<void>;
  /** queues.get; also updates the queue's row in the list. */
  loadQueue: (connectionId: string, queueId: string) => Promise<void>;
}

export interface PeekParams {
  connectionId: string;
  queueId: string;
  state?: string | undefined;
  limit: number;
  direction: 'oldest' | 'newest';
  acceptSideEffects: boolean;
}

export interface PeekState extends PeekParams {
  status: 'loading' | 'loading-more' | 'ready' | 'error';
  messages: QueueMessage[];
  nextCursor: string | null;
  total: number | null;
  /** Side effects the peeks so far actually caused (deduplicated). */
  sideEffects: string[];
  /** ms since epoch when the first page arrived (absent while loading): the list shows the queue as of then. */
  readAt?: number;
  /**
   * "Load more" pages whose queue moved since the page before (`PeekPage.moved`: a Redis list
   * popped or pushed meanwhile), in load order: re-aligned, or entries may be skipped or shown twice.
   * Absent or empty = none.
   */
  moved?: NonNullable<PeekPage['moved']>[];
  error: ErrorInfo | null;
}

export interface MessagesSlice {
  /** The current queue view's peek; null before the first peek. */
  peek: PeekState | null;
  /** Index into `peek.messages` of the open message. */
  selectedIndex: number | null;
  /** Indices of messages ticked for "Export selection". */
  checked: Record<number, true>;
  startPeek: (params: PeekParams) => Promise<void>;
  /** Next page via `nextCursor`; no-op at the end or while loading. */
  loadMore: () => Promise<void>;
  clearPeek: () => void;
  selectMessage: (index: number | null) => void;
  toggleChecked: (index: number) => void;
  setChecked: (indices: number[]) => void;
}

export interface OperationsSlice {
  /** Operations started in this window, newest first. */
  operations: OperationSnapshot[];
  /** snapshots.export, then polls operations.get until a terminal state. Null when the save dialog was cancelled. @throws ApiError */
  startExport: (input: ApiInput<'snapshots.export'>) => Promise<OperationSnapshot | null>;
  cancelOperation: (id: string) => Promise<void>;
  dismissOperation: (id: string) => void;
}

/** Preferences persisted across sessions (versioned; see `migratePreferences`). */
export interface Preferences {
  autoRefresh: boolean;
  /** Queue list auto-refresh interval in ms. */
  refreshIntervalMs: number;
  /** Messages per peek. */
  peekLimit: number;
  peekDirection: 'oldest' | 'newest';
  bodyTab: 'pretty' | 'raw' | 'hex';
}

export interface UiSlice {
  view: View;
  navigate: (view: View) => void;
  /** Error shown in the banner (message in words, never a stack). */
  banner: ErrorInfo | null;
  showError: (e: unknown) => void;
  dismissBanner: () => void;
  preferences: Preferences;
  setPreference: <K extends keyof Preferences>(key: K, value: Preferences[K]) => void;
}

export type All = ConnectionsSlice & QueuesSlice & MessagesSlice & OperationsSlice & UiSlice & InspectSlice & RedriveSlice & TuningSlice & AuditSlice;

/** Key of a queue within the app: connection id + queue id. */
export function queueKey(connectionId: string, queueId: string): string {
  return `${connectionId}\u0000${queueId}`;
}
