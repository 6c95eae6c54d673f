import { mkdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { ApiHandlers } from '../../shared/api/contract';
import type { DlqWatchEvent, WatchEventView, WatchEventsPage, WatchListView, WatchedDlqView } from '../../shared/api/watch';
import { QueuescopeError, type ErrorInfo } from '../../shared/domain';
import type { BrokerAdapter } from '../adapters/types';
import type { ConnectionManager } from './connection-manager';
import { DEFAULT_WATCH_INTERVAL_MS, watchDlqs } from './dlq-watch';
import { writeFileAtomic } from './profile-store';

/** The watch list file in the config folder. */
export const WATCH_FILE = 'watch.json';
/** Events kept for `watch.events`; older ones are forgotten. */
export const MAX_KEPT_EVENTS = 500;

const watchFileSchema = z.object({
  version: z.literal(1),
  watches: z.array(
    z.object({
      connectionId: z.string().min(1).max(512),
      queueIds: z.array(z.string().min(1).max(2048)).max(100),
      intervalMs: z.number().int().min(1_000).max(3_600_000),
    }),
  ),
});
type WatchFile = z.infer<typeof watchFileSchema>;

interface ConnectionWatch {
  queueIds: string[];
  intervalMs: number;
  controller: AbortController;
  done: Promise<void>;
}

/** Options of {@link DlqWatchManager}. */
export interface DlqWatchManagerOptions {
  connections: ConnectionManager;
  /** Folder of `watch.json` (the profile store's folder). */
  configDir: string;
}

/**
 * The app's DLQ alerts: the DLQs chosen per connection, watched with `watchDlqs` (one watch per
 * connection), their last state, a numbered buffer of the last {@link MAX_KEPT_EVENTS} events for
 * polling (`watch.events`), and listeners (Electron main turns alerts into desktop notifications).
 *
 * The list is kept in `<configDir>/watch.json` (`{ version: 1, watches: [{ connectionId, queueIds,
 * intervalMs }] }`, written atomically); an unreadable file is moved aside as `watch.json.bad-<time>`
 * and reported in {@link problems}. Watches use the connection's current adapter at each poll (an
 * edited connection is picked up); a removed connection shows as an `error` event.
 */
export class DlqWatchManager {
  private readonly connections: ConnectionManager;
  private readonly path: string;
  private readonly watches = new Map<string, ConnectionWatch>();
  private readonly state = new Map<string, WatchedDlqView>();
  private readonly events: WatchEventView[] = [];
  private readonly listeners = new Set<(e: WatchEventView) => void>();
  private seq = 0;
  private loaded: Promise<void> | null = null;
  private stopped = false;
  /** Problems met loading the watch list, one sentence each. */
  readonly problems: string[] = [];

  constructor(options: DlqWatchManagerOptions) {
    this.connections = options.connections;
    this.path = join(options.configDir, WATCH_FILE);
  }

  /** Loads `watch.json` and starts its watches, once; later calls wait for the first. Never rejects. */
  start(): Promise<void> {
    this.loaded ??= this.load();
    return this.loaded;
  }

  private async load(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch {
      return; // no file yet: nothing watched
    }
    let file: WatchFile;
    try {
      file = watchFileSchema.parse(JSON.parse(text));
    } catch (e) {
      const aside = `${this.path}.bad-${Date.now()}`;
      await rename(this.path, aside).catch(() => undefined);
      this.problems.push(`The DLQ watch list ${this.path} could not be read (${e instanceof Error ? e.message.slice(0, 200) : 'invalid'}); it was moved to ${aside} and nothing is watched.`);
      return;
    }
    for (const w of file.watches) if (!this.stopped && w.queueIds.length > 0) this.run(w.connectionId, w.queueIds, w.intervalMs);
  }

  /**
   * Replaces the watched DLQs of a connection (an empty list stops watching it) and saves the list.
   * @throws QueuescopeError `INVALID_INPUT` for an unknown connection; `PERMISSION_DENIED` / `INTERNAL` when the file cannot be written.
   */
  async set(connectionId: string, queueIds: readonly string[], intervalMs: number = DEFAULT_WATCH_INTERVAL_MS): Promise<WatchListView> {
    await this.start();
    if (this.stopped) throw new QueuescopeError('INVALID_INPUT', 'DLQ alerts are shutting down.');
    this.connections.get(connectionId); // unknown id → INVALID_INPUT
    const ids = [...new Set(queueIds)];
    const current = this.watches.get(connectionId);
    const same = current !== undefined && current.intervalMs === intervalMs && current.queueIds.length === ids.length && current.queueIds.every((q, i) => q === ids[i]);
    if (!same) {
      await this.halt(connectionId);
      if (ids.length > 0) this.run(connectionId, ids, intervalMs);
      await this.save();
    }
    return this.list();
  }

  /** What is watched, in the order chosen, per connection. */
  list(): WatchListView {
    const watched: WatchedDlqView[] = [];
    for (const [connectionId, w] of this.watches) {
      for (const queueId of w.queueIds) {
        const s = this.state.get(key(connectionId, queueId));
        if (s !== undefined) watched.push({ ...s });
      }
    }
    return { watched };
  }

  /** Events with `seq > since`, oldest first, at most `limit`. */
  eventsSince(since = 0, limit = MAX_KEPT_EVENTS): WatchEventsPage {
    const out = this.events.filter((e) => e.seq > since).slice(0, limit);
    return { events: out, cursor: out.at(-1)?.seq ?? Math.min(since, this.seq) };
  }

  /** Calls `listener` for every event from now on. Returns the unsubscribe function. */
  subscribe(listener: (e: WatchEventView) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Stops every watch (app quit / bridge shutdown); waits for the poll loops to end. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.watches.keys()].map((id) => this.halt(id)));
  }

  private run(connectionId: string, queueIds: string[], intervalMs: number): void {
    const controller = new AbortController();
    for (const queueId of queueIds) {
      this.state.set(key(connectionId, queueId), { connectionId, queueId, queueName: queueId, intervalMs, status: 'starting', depth: null, error: null, lastEvent: null });
    }
    const done = watchDlqs(this.adapterProxy(connectionId), {
      queueIds,
      intervalMs,
      signal: controller.signal,
      onEvent: (e) => this.record(connectionId, e),
    }).catch((e: unknown) => {
      // Only invalid options reject (checked by the schema before); keep it visible anyway.
      for (const queueId of queueIds) this.record(connectionId, errorEvent(queueId, e));
    });
    this.watches.set(connectionId, { queueIds, intervalMs, controller, done });
  }

  private async halt(connectionId: string): Promise<void> {
    const w = this.watches.get(connectionId);
    if (w === undefined) return;
    this.watches.delete(connectionId);
    w.controller.abort();
    await w.done;
    for (const queueId of w.queueIds) this.state.delete(key(connectionId, queueId));
  }

  /** The connection's current adapter at each call, so an edited or re-created adapter is used. */
  private adapterProxy(connectionId: string): BrokerAdapter {
    const current = (): BrokerAdapter => this.connections.adapter(connectionId);
    return {
      get broker() {
        return current().broker;
      },
      testConnection: (signal) => current().testConnection(signal),
      listQueues: (options, signal) => current().listQueues(options, signal),
      getQueue: (queueId, signal) => Promise.resolve().then(() => current().getQueue(queueId, signal)),
      peek: (queueId, options, signal) => Promise.resolve().then(() => current().peek(queueId, options, signal)),
      close: () => Promise.resolve(), // the connection manager owns the adapter
    };
  }

  private record(connectionId: string, e: DlqWatchEvent): void {
    const view: WatchEventView = { ...e, seq: ++this.seq, connectionId };
    this.events.push(view);
    if (this.events.length > MAX_KEPT_EVENTS) this.events.splice(0, this.events.length - MAX_KEPT_EVENTS);
    const s = this.state.get(key(connectionId, e.queueId));
    if (s !== undefined) {
      s.queueName = e.queueName;
      if (e.type === 'error') {
        s.status = 'error';
        s.error = e.error;
      } else {
        s.status = 'ok';
        s.error = null;
        if (e.depth !== null) s.depth = e.depth;
      }
      if (e.type !== 'status') s.lastEvent = view;
    }
    for (const l of this.listeners) {
      try {
        l(view);
      } catch {
        /* a listener's failure must not stop the watch */
      }
    }
  }

  private async save(): Promise<void> {
    const file: WatchFile = { version: 1, watches: [...this.watches].map(([connectionId, w]) => ({ connectionId, queueIds: w.queueIds, intervalMs: w.intervalMs })) };
    await mkdir(join(this.path, '..'), { recursive: true, mode: 0o700 });
    await writeFileAtomic(this.path, `${JSON.stringify(file, null, 2)}\n`);
  }
}

function key(connectionId: string, queueId: string): string {
  return `${connectionId}\u0000${queueId}`;
}

function errorEvent(queueId: string, e: unknown): DlqWatchEvent {
  const error: ErrorInfo = e instanceof QueuescopeError ? e.toInfo() : { code: 'INTERNAL', message: e instanceof Error ? e.message : String(e) };
  return { type: 'error', at: Date.now(), queueId, queueName: queueId, depth: null, previousDepth: null, delta: null, deadLetterSources: [], failure: null, failureNote: null, error, retryInMs: null };
}

/** Handlers of `watch.set`, `watch.list`, `watch.events`, spread into `createApiHandlers`. Each waits for the saved list to be loaded first. */
export function createWatchHandlers(manager: DlqWatchManager): Pick<ApiHandlers, 'watch.set' | 'watch.list' | 'watch.events'> {
  return {
    'watch.set': (input) => manager.set(input.connectionId, input.queueIds, input.intervalMs ?? DEFAULT_WATCH_INTERVAL_MS),
    'watch.list': async () => {
      await manager.start();
      return manager.list();
    },
    'watch.events': async (input) => {
      await manager.start();
      return manager.eventsSince(input.since ?? 0, input.limit ?? MAX_KEPT_EVENTS);
    },
  };
}
