import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { QueuescopeError, type ConnectionConfig, type ConnectionProfile, type ErrorInfo } from '../../shared/domain';
import { createAdapter as defaultCreateAdapter } from '../adapters';
import type { BrokerAdapter } from '../adapters/types';
import type { ProfileStore } from './profile-store';

/** Id of the bundled demo snapshot connection. */
export const DEMO_CONNECTION_ID = 'demo';

/** Options of {@link ConnectionManager}. */
export interface ConnectionManagerOptions {
  store: ProfileStore;
  /** Path of the bundled demo snapshot (`resources/demo-snapshot.jsonl`); listed only while the file exists. */
  demoSnapshotPath?: string | null;
  /** Adapter factory (default: `createAdapter` from core/adapters). */
  createAdapter?: (config: ConnectionConfig) => BrokerAdapter;
}

/**
 * The connections the app knows — the built-in demo snapshot, snapshots opened this session
 * (File › Open; never saved), and saved profiles — and one lazily created adapter per connection id.
 *
 * Adapters are created on first use, closed when their profile is updated or removed, and all
 * closed by {@link closeAll} (app quit / bridge shutdown).
 */
export class ConnectionManager {
  private readonly store: ProfileStore;
  private readonly demoPath: string | null;
  private readonly factory: (config: ConnectionConfig) => BrokerAdapter;
  private readonly adapters = new Map<string, BrokerAdapter>();
  /** Session-only snapshot connections by id. */
  private readonly sessions = new Map<string, ConnectionProfile>();

  constructor(options: ConnectionManagerOptions) {
    this.store = options.store;
    this.demoPath = options.demoSnapshotPath == null ? null : resolve(options.demoSnapshotPath);
    this.factory = options.createAdapter ?? defaultCreateAdapter;
  }

  /** The saved-connection store, for settings kept with a profile (e.g. inspect rules). */
  get profileStore(): ProfileStore {
    return this.store;
  }

  /** Problems found loading the profile files (see `ProfileStore.problems`). */
  get problems(): ErrorInfo[] {
    return [...this.store.problems];
  }

  /** The demo connection id when the demo file exists, else null. */
  demoConnectionId(): string | null {
    return this.demoProfile() === null ? null : DEMO_CONNECTION_ID;
  }

  private demoProfile(): ConnectionProfile | null {
    if (this.demoPath === null || !isFile(this.demoPath)) return null;
    return { id: DEMO_CONNECTION_ID, name: 'Demo snapshot', config: { kind: 'snapshot', path: this.demoPath }, hasSecret: false, builtIn: true };
  }

  /** Demo (when present), then session snapshots (opening order), then saved profiles (file order). */
  list(): ConnectionProfile[] {
    const demo = this.demoProfile();
    return [...(demo === null ? [] : [demo]), ...this.sessions.values(), ...this.store.list()];
  }

  /**
   * One connection by id.
   * @throws QueuescopeError `INVALID_INPUT` for an unknown id.
   */
  get(id: string): ConnectionProfile {
    if (id === DEMO_CONNECTION_ID) {
      const demo = this.demoProfile();
      if (demo !== null) return demo;
    }
    const found = this.sessions.get(id) ?? this.store.get(id);
    if (found === undefined) throw unknownConnection(id);
    return found;
  }

  /** The config of a connection with its secrets, for an adapter. @throws like {@link get}. */
  config(id: string): ConnectionConfig {
    const p = this.get(id);
    if (p.builtIn || this.sessions.has(id)) return p.config;
    return this.store.resolve(id);
  }

  /**
   * The (cached) adapter of a connection, created on first use.
   * @throws QueuescopeError `INVALID_INPUT` for an unknown id or an invalid stored config.
   */
  adapter(id: string): BrokerAdapter {
    const cached = this.adapters.get(id);
    if (cached !== undefined) return cached;
    const adapter = this.factory(this.config(id));
    this.adapters.set(id, adapter);
    return adapter;
  }

  /**
   * A new, uncached adapter for a config (e.g. to test settings before saving). The caller closes it.
   * @throws QueuescopeError `INVALID_INPUT` for an invalid config.
   */
  createTransientAdapter(config: ConnectionConfig): BrokerAdapter {
    return this.factory(config);
  }

  /**
   * Creates or updates a saved profile (secrets split out by the store) and closes the old adapter.
   * Saving a session snapshot makes it a saved profile (with a new id; the session entry goes away).
   * @throws QueuescopeError `INVALID_INPUT` for the built-in demo, unknown ids or a read-only store.
   */
  async save(input: { id?: string; name: string; config: ConnectionConfig }): Promise<ConnectionProfile> {
    const { id } = input;
    if (id === DEMO_CONNECTION_ID) throw new QueuescopeError('INVALID_INPUT', 'The demo snapshot is built in and cannot be changed; save a new connection instead.');
    if (id !== undefined && this.sessions.has(id)) {
      const saved = await this.store.save({ name: input.name, config: input.config });
      this.sessions.delete(id);
      await this.closeAdapter(id);
      return saved;
    }
    const saved = await this.store.save(input);
    if (id !== undefined) await this.closeAdapter(id);
    return saved;
  }

  /**
   * Removes a saved profile or closes a session snapshot; closes its adapter.
   * @returns false when no such connection existed.
   * @throws QueuescopeError `INVALID_INPUT` for the built-in demo.
   */
  async remove(id: string): Promise<boolean> {
    if (id === DEMO_CONNECTION_ID && this.demoProfile() !== null) throw new QueuescopeError('INVALID_INPUT', 'The demo snapshot is built in and cannot be removed.');
    let removed: boolean;
    if (this.sessions.has(id)) {
      this.sessions.delete(id);
      removed = true;
    } else removed = await this.store.remove(id);
    await this.closeAdapter(id);
    return removed;
  }

  /**
   * Adds a snapshot file as a session-only, read-only connection (File › Open). Opening the same
   * path again returns the same connection. The file is not read here: test it with the adapter.
   */
  openSnapshot(path: string): ConnectionProfile {
    const abs = resolve(path);
    const id = `file-${createHash('sha256').update(abs).digest('hex').slice(0, 16)}`;
    const existing = this.sessions.get(id);
    if (existing !== undefined) return existing;
    const profile: ConnectionProfile = { id, name: basename(abs), config: { kind: 'snapshot', path: abs }, hasSecret: false, builtIn: false };
    this.sessions.set(id, profile);
    return profile;
  }

  /** Forgets a session snapshot (e.g. when opening it failed). */
  async closeSession(id: string): Promise<void> {
    this.sessions.delete(id);
    await this.closeAdapter(id);
  }

  private async closeAdapter(id: string): Promise<void> {
    const a = this.adapters.get(id);
    this.adapters.delete(id);
    await a?.close().catch(() => undefined);
  }

  /** Closes every adapter (idempotent). */
  async closeAll(): Promise<void> {
    const all = [...this.adapters.values()];
    this.adapters.clear();
    await Promise.all(all.map((a) => a.close().catch(() => undefined)));
  }
}

function isFile(path: string): boolean {
  try {
    return existsSync(path) && statSync(path).isFile();
  } catch {
    return false;
  }
}

function unknownConnection(id: string): QueuescopeError {
  return new QueuescopeError('INVALID_INPUT', `No connection with id "${id.slice(0, 80)}"; it may have been removed.`, { connectionId: id });
}
