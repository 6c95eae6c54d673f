import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, posix, win32 } from 'node:path';
import { z } from 'zod';
import {
  QueuescopeError,
  SECRET_FIELDS,
  connectionConfigSchema,
  mergeSecrets,
  splitSecrets,
  toErrorInfo,
  type ConnectionConfig,
  type ConnectionProfile,
  type ConnectionSecrets,
  type ErrorInfo,
} from '../../shared/domain';
import { inspectConfigSchema, type ProjectConfig } from '../../shared/config/project-config';

/**
 * Encrypts connection secrets at rest. Electron passes its asynchronous `safeStorage` API
 * (Electron ≥ 45, https://electronjs.org/docs/api/safe-storage): `isAsyncEncryptionAvailable` →
 * `isAvailable`, `encryptStringAsync` → `encrypt`, `decryptStringAsync` → `decrypt` (its `result`
 * renamed `plain`). The CLI and the browser bridge have none: see {@link ProfileStore} for what
 * that means.
 *
 * {@link ProfileStore.open} calls `isAvailable` once (a throw or rejection counts as unavailable)
 * and decrypts every stored blob then, so lookups stay synchronous.
 */
export interface SecretCipher {
  /** Resolves true when `encrypt`/`decrypt` work on this system (OS keychain / DPAPI / libsecret). */
  isAvailable(): Promise<boolean>;
  /** Encrypts a UTF-8 string; rejects when encryption fails. */
  encrypt(plain: string): Promise<Buffer>;
  /**
   * Decrypts a buffer produced by `encrypt` (or by the deprecated sync `safeStorage.encryptString`);
   * rejects when it cannot (other key, corrupt data).
   * `shouldReEncrypt`: the key was rotated; the store re-encrypts and saves.
   */
  decrypt(data: Buffer): Promise<{ plain: string; shouldReEncrypt: boolean }>;
}

/** Current version of `profiles.json` and `secrets.json`. */
export const PROFILES_FILE_VERSION = 1;

/**
 * The folder holding `profiles.json` and `secrets.json`: `$QUEUESCOPE_HOME` when set, else the
 * folder Electron's `app.getPath('userData')` uses for productName "Queuescope":
 * Linux `$XDG_CONFIG_HOME/Queuescope` (default `~/.config/Queuescope`), macOS
 * `~/Library/Application Support/Queuescope`, Windows `%APPDATA%\Queuescope`.
 * Pure: pass `env`, `platform` and `home` to compute it for another system.
 */
export function defaultConfigDir(
  env: Record<string, string | undefined> = process.env,
  platform: NodeJS.Platform = process.platform,
  home: string = homedir(),
): string {
  const override = env.QUEUESCOPE_HOME;
  if (override !== undefined && override.trim() !== '') return override;
  if (platform === 'win32') return win32.join(env.APPDATA ?? win32.join(home, 'AppData', 'Roaming'), 'Queuescope');
  if (platform === 'darwin') return posix.join(home, 'Library', 'Application Support', 'Queuescope');
  const xdg = env.XDG_CONFIG_HOME;
  return posix.join(xdg !== undefined && xdg.startsWith('/') ? xdg : posix.join(home, '.config'), 'Queuescope');
}

const storedProfileSchema = z.object({
  id: z.string().min(1).max(128),
  name: z.string().min(1).max(200),
  config: connectionConfigSchema,
  /**
   * Per-queue inspect settings (idempotency-key rules, snapshot fields; same shape as the project
   * file's `inspect` section). Optional: files without it are valid. Kept as stored and validated
   * when read ({@link ProfileStore.inspectSettings}), so a bad value never hides the connection.
   */
  inspect: z.unknown().optional(),
});
type StoredProfile = z.infer<typeof storedProfileSchema>;

const profilesFileV1 = z.object({ version: z.literal(1), profiles: z.array(z.unknown()) });
const secretsFileV1 = z.object({ version: z.literal(1), secrets: z.record(z.string(), z.string()) });

/**
 * Brings an older `profiles.json` shape up to the current version.
 * - v0 (before versioning): a bare array of profiles.
 * @returns the v1 object, or null when the shape is not recognised (corrupt).
 * @throws QueuescopeError `INVALID_INPUT` for a version newer than this build knows.
 */
export function migrateProfilesFile(raw: unknown): { version: 1; profiles: unknown[] } | null {
  if (Array.isArray(raw)) return { version: 1, profiles: raw as unknown[] };
  const v = fileVersion(raw);
  if (v !== undefined) {
    if (v > PROFILES_FILE_VERSION) {
      throw new QueuescopeError('INVALID_INPUT', `was written by a newer Queuescope (file version ${v}, this one reads ${PROFILES_FILE_VERSION})`, { version: v });
    }
  }
  const r = profilesFileV1.safeParse(raw);
  return r.success ? r.data : null;
}

/** Options of {@link ProfileStore.open}. */
export interface ProfileStoreOptions {
  /** Folder for the files (see {@link defaultConfigDir}). Created (mode 0700) on first write. */
  configDir: string;
  /** Encryption for secrets; absent or unavailable → secrets are kept in memory only. */
  cipher?: SecretCipher | null;
  /** Clock for `.corrupt-<ts>` names (tests). */
  now?: () => number;
  /**
   * Never write: bad files are reported but not moved aside, plain-text secrets not migrated, and
   * `save`/`remove` refuse. For readers such as the CLI, which must not change the app's files.
   */
  readOnly?: boolean;
}

/**
 * Saved connection profiles in `<configDir>/profiles.json` (`{ version: 1, profiles: [{ id, name,
 * config }] }`, configs **without** secrets) and their secrets in `<configDir>/secrets.json`
 * (`{ version: 1, secrets: { <profile id>: <base64 of cipher.encrypt(JSON of the secrets)> } }`).
 *
 * - Secrets (`password`, `secretAccessKey`, `sessionToken`, and a password inside a URL) are split
 *   out before anything is written. With an available {@link SecretCipher} (Electron
 *   `safeStorage`) they are stored encrypted. **Without one (CLI, browser bridge) secrets are kept in
 *   memory for the life of the process only**: `hasSecret` is true until the process exits, and
 *   after a restart the profile says `hasSecret: false` and the password must be entered again.
 *   Blobs encrypted by the desktop app are left untouched (the CLI cannot decrypt them).
 * - Every stored blob is decrypted once, in {@link ProfileStore.open}, so {@link list},
 *   {@link get} and {@link resolve} are synchronous. A blob that cannot be decrypted is kept in
 *   the file unchanged and {@link resolve} throws for that profile until a new password is saved.
 *   Blobs the cipher flags `shouldReEncrypt` (rotated key) are re-encrypted and saved after
 *   loading, unless the store must not write.
 * - Writes are atomic (temp file in the same folder, fsync, rename) with mode 0600.
 * - A file that cannot be read (bad JSON, unknown shape) is moved aside to
 *   `<file>.corrupt-<ms timestamp>` — never deleted — and the store starts empty; the problem is
 *   listed in {@link problems} (naming both files). A file from a newer version is left alone and
 *   the store becomes read-only. Single invalid entries are skipped, reported, and written back
 *   unchanged on the next save, so nothing is lost.
 * - Not safe against two processes writing at once (last write wins); the app is the only writer.
 */
export class ProfileStore {
  private profiles: StoredProfile[] = [];
  /** Entries of profiles.json that did not validate; written back verbatim. */
  private invalidEntries: unknown[] = [];
  /** Encrypted secrets as stored (base64), by profile id. */
  private encrypted = new Map<string, string>();
  /** Secrets known in this process (decrypted at open, entered, or legacy plain text), by profile id (used first). */
  private memory = new Map<string, ConnectionSecrets>();
  /** Stored blobs that failed to decrypt at open, with the error, by profile id. */
  private undecryptable = new Map<string, unknown>();
  /** Result of `cipher.isAvailable()` at open; false without a cipher. */
  private cipherAvailable = false;
  private readOnlyReason: string | null = null;
  private noWrites = false;
  private secretsReadOnly = false;
  private writeChain: Promise<unknown> = Promise.resolve();
  /** Problems found while loading, one sentence each, naming the file. Empty when all is well. */
  readonly problems: ErrorInfo[] = [];

  private constructor(
    readonly configDir: string,
    private readonly cipher: SecretCipher | null,
    private readonly now: () => number,
  ) {}

  /** Path of `profiles.json`. */
  get profilesPath(): string {
    return join(this.configDir, 'profiles.json');
  }

  /** Path of `secrets.json`. */
  get secretsPath(): string {
    return join(this.configDir, 'secrets.json');
  }

  /**
   * Loads both files: asks the cipher once whether it is available (a throw or rejection counts
   * as unavailable), decrypts every stored secret into memory, moves plain-text secrets found in
   * profiles.json into the encrypted store, and re-encrypts blobs whose key was rotated.
   * Never throws for bad file contents or secrets that cannot be decrypted (see {@link problems}
   * and {@link resolve}); throws only for unexpected I/O failures (e.g. EACCES on the folder), as
   * `PERMISSION_DENIED`/`INTERNAL`.
   */
  static async open(options: ProfileStoreOptions): Promise<ProfileStore> {
    const store = new ProfileStore(options.configDir, options.cipher ?? null, options.now ?? Date.now);
    if (options.readOnly === true) store.noWrites = true;
    store.cipherAvailable = await store.checkCipher();
    await store.load();
    if (store.noWrites) store.readOnlyReason ??= 'this program only reads saved connections (they are managed in the Queuescope app).';
    return store;
  }

  private async checkCipher(): Promise<boolean> {
    if (this.cipher === null) return false;
    try {
      return await this.cipher.isAvailable();
    } catch {
      return false;
    }
  }

  /** True when secrets may be (re)written to secrets.json now. */
  private canWriteSecrets(): boolean {
    return this.cipherAvailable && this.readOnlyReason === null && !this.secretsReadOnly && !this.noWrites;
  }

  private async load(): Promise<void> {
    const rawProfiles = await this.readJson(this.profilesPath);
    if (rawProfiles !== undefined) {
      let migrated: { version: 1; profiles: unknown[] } | null = null;
      try {
        migrated = migrateProfilesFile(rawProfiles);
      } catch (e) {
        this.readOnlyReason = `${this.profilesPath} ${toErrorInfo(e).message}; it is left unchanged and saved connections cannot be edited.`;
        this.problems.push({ code: 'INVALID_INPUT', message: this.readOnlyReason, details: { file: this.profilesPath } });
      }
      if (migrated === null && this.readOnlyReason === null) await this.quarantine(this.profilesPath, 'it is not a profiles file');
      if (migrated !== null) this.acceptProfiles(migrated.profiles);
    }
    const rawSecrets = await this.readJson(this.secretsPath);
    if (rawSecrets !== undefined) {
      const r = secretsFileV1.safeParse(rawSecrets);
      if (r.success) this.encrypted = new Map(Object.entries(r.data.secrets));
      else if ((fileVersion(rawSecrets) ?? 0) > PROFILES_FILE_VERSION) {
        this.secretsReadOnly = true;
        this.problems.push({ code: 'INVALID_INPUT', message: `${this.secretsPath} was written by a newer Queuescope; stored passwords are not used and the file is left unchanged.`, details: { file: this.secretsPath } });
      } else await this.quarantine(this.secretsPath, 'it is not a secrets file');
    }
    const rotated = await this.decryptAll();
    const legacy = await this.moveLegacyPlaintextSecrets();
    for (const id of legacy) rotated.delete(id); // replaced by the plain text found in profiles.json
    await this.reEncrypt(rotated);
  }

  /**
   * Decrypts every stored blob into {@link memory}; failures go to {@link undecryptable} and the
   * blob stays as it is.
   * @returns the decrypted plain text of blobs the cipher flagged `shouldReEncrypt`, by id.
   */
  private async decryptAll(): Promise<Map<string, string>> {
    const rotated = new Map<string, string>();
    const cipher = this.cipher;
    if (cipher === null || !this.cipherAvailable) return rotated;
    await Promise.all(
      [...this.encrypted].map(async ([id, blob]) => {
        try {
          const { plain, shouldReEncrypt } = await cipher.decrypt(Buffer.from(blob, 'base64'));
          this.memory.set(id, parseSecrets(plain));
          if (shouldReEncrypt) rotated.set(id, plain);
        } catch (e) {
          this.undecryptable.set(id, e);
        }
      }),
    );
    return rotated;
  }

  /**
   * Re-encrypts blobs whose key was rotated (the decrypted text, verbatim) and saves them. Skipped
   * when the store must not write; a failure keeps the old blobs (they still decrypt) and is
   * recorded in {@link problems}.
   */
  private async reEncrypt(rotated: Map<string, string>): Promise<void> {
    if (rotated.size === 0 || !this.canWriteSecrets() || this.cipher === null) return;
    const old = this.encrypted;
    try {
      const next = new Map(this.encrypted);
      for (const [id, plain] of rotated) next.set(id, (await this.cipher.encrypt(plain)).toString('base64'));
      this.encrypted = next;
      await this.persist();
    } catch (e) {
      this.encrypted = old;
      this.problems.push({
        code: 'INVALID_INPUT',
        message: `The stored passwords in ${this.secretsPath} could not be re-encrypted with the new system key (${toErrorInfo(e).message}); they still work and are left unchanged.`,
        details: { file: this.secretsPath },
      });
    }
  }

  private acceptProfiles(entries: unknown[]): void {
    const seen = new Set<string>();
    entries.forEach((entry, i) => {
      const r = storedProfileSchema.safeParse(entry);
      if (!r.success || seen.has(r.data.id)) {
        this.invalidEntries.push(entry);
        const why = r.success ? `duplicate id "${r.data.id}"` : r.error.issues.map((iss) => `${iss.path.join('.') || '(entry)'}: ${iss.message}`).join('; ');
        this.problems.push({
          code: 'INVALID_INPUT',
          message: `${this.profilesPath}: saved connection #${i + 1} is invalid (${why}); it is skipped but kept in the file.`,
          details: { file: this.profilesPath, index: i },
        });
        return;
      }
      seen.add(r.data.id);
      this.profiles.push(r.data);
    });
  }

  /**
   * Plain-text secrets found in profiles.json (hand edits, old files) move to the secret store.
   * @returns the ids of the profiles that had some.
   */
  private async moveLegacyPlaintextSecrets(): Promise<string[]> {
    const found: string[] = [];
    this.profiles = this.profiles.map((p) => {
      const { config, secrets } = splitSecrets(p.config);
      if (Object.keys(secrets).length === 0) return p;
      found.push(p.id);
      this.memory.set(p.id, secrets);
      return { ...p, config };
    });
    if (found.length === 0) return found;
    for (const id of found) this.undecryptable.delete(id); // the plain-text secret replaces the blob
    let sealed: Map<string, string> | null = null;
    if (this.canWriteSecrets()) {
      try {
        sealed = new Map(this.encrypted);
        for (const id of found) sealed.set(id, await this.encryptSecrets(this.memory.get(id) ?? {}));
      } catch {
        sealed = null; // encryption failed: treated like no secure storage
      }
    }
    if (sealed !== null) {
      this.encrypted = sealed;
      await this.persist();
    } else {
      this.problems.push({
        code: 'INVALID_INPUT',
        message: `${this.profilesPath} holds passwords in plain text; they are used but not rewritten here (no secure storage). Open and save the connections in the desktop app to encrypt them.`,
        details: { file: this.profilesPath },
      });
    }
    return found;
  }

  /** Reads a JSON file; `undefined` when absent; quarantines unparsable JSON. */
  private async readJson(path: string): Promise<unknown> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return undefined;
      if (code === 'EACCES' || code === 'EPERM') throw new QueuescopeError('PERMISSION_DENIED', `No permission to read ${path}.`, { file: path }, { cause: e });
      throw new QueuescopeError('INTERNAL', `Cannot read ${path}: ${(e as Error).message}`, { file: path }, { cause: e });
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (e) {
      await this.quarantine(path, `it is not valid JSON (${(e as Error).message})`);
      return undefined;
    }
  }

  /** Moves a bad file aside (never deletes it) and records the problem. */
  private async quarantine(path: string, why: string): Promise<void> {
    if (this.noWrites) {
      this.problems.push({ code: 'INVALID_INPUT', message: `${path} could not be read because ${why}; it is left unchanged.`, details: { file: path } });
      return;
    }
    const backup = `${path}.corrupt-${this.now()}`;
    try {
      await rename(path, backup);
      this.problems.push({
        code: 'INVALID_INPUT',
        message: `${path} could not be read because ${why}. It was moved to ${backup}; Queuescope started without it.`,
        details: { file: path, backup },
      });
    } catch (e) {
      this.readOnlyReason = `${path} could not be read because ${why}, and moving it aside failed (${(e as Error).message}); it is left unchanged.`;
      this.problems.push({ code: 'INVALID_INPUT', message: this.readOnlyReason, details: { file: path } });
    }
  }

  /**
   * The inspect settings saved with a profile (`inspect` in profiles.json).
   * @returns `settings` null when none are saved (or the profile is unknown); `problem` names what
   *   is wrong with a stored value that does not validate (it is then ignored but kept in the file).
   */
  inspectSettings(id: string): { settings: ProjectConfig['inspect'] | null; problem: string | null } {
    const raw = this.profiles.find((x) => x.id === id)?.inspect;
    if (raw === undefined) return { settings: null, problem: null };
    const r = inspectConfigSchema.safeParse(raw);
    if (r.success) return { settings: r.data, problem: null };
    const why = r.error.issues.map((i) => `${i.path.join('.') || '(inspect)'}: ${i.message}`).join('; ');
    return { settings: null, problem: `${this.profilesPath}: the inspect settings of connection "${this.profiles.find((x) => x.id === id)?.name ?? id}" are invalid (${why}); they are ignored.` };
  }

  /**
   * Saves (replaces) the inspect settings of a saved profile; `null` removes them.
   * @throws QueuescopeError `INVALID_INPUT` (unknown id, invalid settings, read-only store), `PERMISSION_DENIED`.
   */
  async saveInspectSettings(id: string, settings: ProjectConfig['inspect'] | null): Promise<void> {
    if (this.readOnlyReason !== null) throw new QueuescopeError('INVALID_INPUT', `Saved connections cannot be changed: ${this.readOnlyReason}`);
    const parsed = settings === null ? null : inspectConfigSchema.safeParse(settings);
    if (parsed !== null && !parsed.success) {
      throw new QueuescopeError('INVALID_INPUT', `Invalid inspect settings: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(inspect)'}: ${i.message}`).join('; ')}.`);
    }
    await this.serialize(async () => {
      const index = this.profiles.findIndex((p) => p.id === id);
      const current = this.profiles[index];
      if (current === undefined) throw new QueuescopeError('INVALID_INPUT', `No saved connection with id "${id.slice(0, 80)}".`, { id });
      const { inspect: _old, ...rest } = current;
      const next = [...this.profiles];
      next[index] = parsed === null ? rest : { ...rest, inspect: parsed.data };
      const old = this.profiles;
      this.profiles = next;
      try {
        await this.persist();
      } catch (e) {
        this.profiles = old;
        throw e;
      }
    });
  }

  /** Saved profiles (configs without secrets), in file order. */
  list(): ConnectionProfile[] {
    return this.profiles.map((p) => this.toProfile(p));
  }

  /** One profile, or undefined. */
  get(id: string): ConnectionProfile | undefined {
    const p = this.profiles.find((x) => x.id === id);
    return p === undefined ? undefined : this.toProfile(p);
  }

  /** True when the store refuses writes (see {@link problems}). */
  get readOnly(): boolean {
    return this.readOnlyReason !== null;
  }

  /**
   * The profile's config with its secrets merged in, ready for an adapter. Synchronous: secrets
   * were decrypted in {@link open} or entered in this process.
   * @throws QueuescopeError `INVALID_INPUT` for an unknown id or a stored secret that could not be
   *   decrypted at open (the message asks to enter it again).
   */
  resolve(id: string): ConnectionConfig {
    const p = this.profiles.find((x) => x.id === id);
    if (p === undefined) throw new QueuescopeError('INVALID_INPUT', `No saved connection with id "${id.slice(0, 80)}".`, { id });
    const secrets = this.secretsFor(id);
    return secrets === null ? p.config : mergeSecrets(p.config, secrets);
  }

  private secretsFor(id: string): ConnectionSecrets | null {
    const mem = this.memory.get(id);
    if (mem !== undefined) return mem;
    if (!this.encrypted.has(id) || !this.undecryptable.has(id)) return null;
    throw new QueuescopeError(
      'INVALID_INPUT',
      `The stored password of connection "${this.profiles.find((x) => x.id === id)?.name ?? id}" cannot be decrypted (was the system keychain reset?). Edit the connection and enter it again.`,
      { id },
      { cause: this.undecryptable.get(id) },
    );
  }

  private hasSecret(id: string): boolean {
    const mem = this.memory.get(id);
    if (mem !== undefined) return Object.keys(mem).length > 0;
    return this.encrypted.has(id) && this.cipherAvailable;
  }

  private toProfile(p: StoredProfile): ConnectionProfile {
    return { id: p.id, name: p.name, config: p.config, hasSecret: this.hasSecret(p.id), builtIn: false };
  }

  private async encryptSecrets(s: ConnectionSecrets): Promise<string> {
    if (this.cipher === null) throw new QueuescopeError('INTERNAL', 'No cipher.');
    return (await this.cipher.encrypt(JSON.stringify(s))).toString('base64');
  }

  /**
   * Creates (no `id`) or updates a profile. Secrets in `config` are split out: stored encrypted
   * when a cipher is available, else kept in memory for this process. Secrets omitted from
   * `config` keep the stored ones (per field, for fields the new kind uses).
   * @throws QueuescopeError `INVALID_INPUT` (unknown id, read-only store), `PERMISSION_DENIED` (cannot write).
   */
  async save(input: { id?: string; name: string; config: ConnectionConfig }): Promise<ConnectionProfile> {
    if (this.readOnlyReason !== null) throw new QueuescopeError('INVALID_INPUT', `Saved connections cannot be changed: ${this.readOnlyReason}`);
    const name = input.name.trim();
    if (name === '') throw new QueuescopeError('INVALID_INPUT', 'A connection needs a name.');
    const { config, secrets } = splitSecrets(connectionConfigSchema.parse(input.config));
    let saved: StoredProfile | undefined;
    // The whole read-modify-write runs in the write chain, so concurrent saves do not undo each other.
    await this.serialize(async () => {
      let id = input.id;
      const index = id === undefined ? -1 : this.profiles.findIndex((p) => p.id === id);
      if (id !== undefined && index === -1) throw new QueuescopeError('INVALID_INPUT', `No saved connection with id "${id.slice(0, 80)}".`, { id });
      id ??= randomUUID();
      let previous: ConnectionSecrets = {};
      let undecryptable = false;
      if (index !== -1) {
        try {
          previous = this.secretsFor(id) ?? {};
        } catch {
          undecryptable = true; // replaced by what was entered now; otherwise the blob is kept as is
        }
      }
      const merged = relevantSecrets(config, { ...previous, ...secrets });
      const previousInspect = index === -1 ? undefined : this.profiles[index]?.inspect;
      const entry: StoredProfile = { id, name, config, ...(previousInspect !== undefined ? { inspect: previousInspect } : {}) };
      const nextProfiles = [...this.profiles];
      if (index === -1) nextProfiles.push(entry);
      else nextProfiles[index] = entry;
      const nextEncrypted = new Map(this.encrypted);
      const secretsChanged = Object.keys(secrets).length > 0 || JSON.stringify(merged) !== JSON.stringify(relevantSecrets(config, previous));
      if (undecryptable && Object.keys(secrets).length === 0) {
        /* keep the stored blob untouched */
      } else if (this.cipherAvailable && !this.secretsReadOnly) {
        if (Object.keys(merged).length > 0) nextEncrypted.set(id, await this.encryptSecrets(merged));
        else nextEncrypted.delete(id);
      } else if (secretsChanged) nextEncrypted.delete(id); // a blob we cannot read is now stale
      const oldProfiles = this.profiles;
      const oldEncrypted = this.encrypted;
      this.profiles = nextProfiles;
      this.encrypted = nextEncrypted;
      try {
        await this.persist();
      } catch (e) {
        this.profiles = oldProfiles;
        this.encrypted = oldEncrypted;
        throw e;
      }
      if (nextEncrypted.get(id) !== oldEncrypted.get(id)) this.undecryptable.delete(id);
      if (Object.keys(merged).length > 0) this.memory.set(id, merged);
      else this.memory.delete(id);
      saved = entry;
    });
    if (saved === undefined) throw new QueuescopeError('INTERNAL', 'The connection was not saved.');
    return this.toProfile(saved);
  }

  /**
   * Removes a profile and its secret. Returns false when there was none.
   * @throws QueuescopeError `INVALID_INPUT` (read-only store), `PERMISSION_DENIED`.
   */
  async remove(id: string): Promise<boolean> {
    if (!this.profiles.some((p) => p.id === id)) return false;
    if (this.readOnlyReason !== null) throw new QueuescopeError('INVALID_INPUT', `Saved connections cannot be changed: ${this.readOnlyReason}`);
    await this.serialize(async () => {
      const oldProfiles = this.profiles;
      const oldEncrypted = this.encrypted;
      this.profiles = this.profiles.filter((p) => p.id !== id);
      if (!this.secretsReadOnly) {
        this.encrypted = new Map(this.encrypted);
        this.encrypted.delete(id);
      }
      try {
        await this.persist();
      } catch (e) {
        this.profiles = oldProfiles;
        this.encrypted = oldEncrypted;
        throw e;
      }
    });
    this.memory.delete(id);
    this.undecryptable.delete(id);
    return true;
  }

  private serialize(fn: () => Promise<void>): Promise<void> {
    const run = this.writeChain.then(fn, fn);
    this.writeChain = run.catch(() => undefined);
    return run;
  }

  private async persist(): Promise<void> {
    await mkdir(this.configDir, { recursive: true, mode: 0o700 });
    const profiles = { version: PROFILES_FILE_VERSION, profiles: [...this.profiles, ...this.invalidEntries] };
    // Secrets first: a crash between the two writes leaves an unused secret, never a profile without its secret.
    if (!this.secretsReadOnly && (this.encrypted.size > 0 || (await exists(this.secretsPath)))) {
      const secrets = Object.fromEntries(this.encrypted);
      await writeFileAtomic(this.secretsPath, `${JSON.stringify({ version: PROFILES_FILE_VERSION, secrets }, null, 2)}\n`);
    }
    await writeFileAtomic(this.profilesPath, `${JSON.stringify(profiles, null, 2)}\n`);
  }
}

/** Secrets from a decrypted blob (JSON of {@link ConnectionSecrets}); unknown fields are dropped. */
function parseSecrets(plain: string): ConnectionSecrets {
  const parsed = JSON.parse(plain) as unknown;
  const secrets: ConnectionSecrets = {};
  if (parsed !== null && typeof parsed === 'object') {
    for (const f of SECRET_FIELDS) {
      const v = (parsed as Record<string, unknown>)[f];
      if (typeof v === 'string') secrets[f] = v;
    }
  }
  return secrets;
}

function fileVersion(raw: unknown): number | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  const v = (raw as { version?: unknown }).version;
  return typeof v === 'number' ? v : undefined;
}

/** Keeps only the secret fields the config's kind uses. */
function relevantSecrets(config: ConnectionConfig, s: ConnectionSecrets): ConnectionSecrets {
  const out: ConnectionSecrets = {};
  if ((config.kind === 'redis' || config.kind === 'rabbitmq') && s.password !== undefined) out.password = s.password;
  if (config.kind === 'sqs') {
    if (s.secretAccessKey !== undefined) out.secretAccessKey = s.secretAccessKey;
    if (s.sessionToken !== undefined) out.sessionToken = s.sessionToken;
  }
  return out;
}

async function exists(path: string): Promise<boolean> {
  try {
    await (await open(path, 'r')).close();
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes `data` to `path` atomically: a temp file in the same folder (mode 0600), fsync, rename.
 * @throws QueuescopeError `PERMISSION_DENIED` / `INTERNAL` naming the file.
 */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    const fh = await open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(data, 'utf8');
      await fh.chmod(0o600);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (e) {
    await unlink(tmp).catch(() => undefined);
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') throw new QueuescopeError('PERMISSION_DENIED', `No permission to write ${path}.`, { file: path }, { cause: e });
    throw new QueuescopeError('INTERNAL', `Cannot write ${path}: ${(e as Error).message}`, { file: path }, { cause: e });
  }
}
