import { createHash, randomUUID } from 'node:crypto';
import { closeSync, linkSync, mkdirSync, openSync, readFileSync, realpathSync, renameSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { utimes } from 'node:fs/promises';
import { hostname as osHostname } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { QueuescopeError } from '../../shared/domain';

/**
 * # Re-inject source locks
 *
 * Two re-injects of the same file at the same time (two terminals, the app's *Put back…* in two
 * windows, CLI and app) would each publish every message: every message twice. A re-inject
 * therefore holds an exclusive lock on its source file for the whole run, across processes and
 * within one (the app's `OperationManager` runs several operations).
 *
 * The lock is a small JSON file `<config dir>/locks/reinject-<sha256 of the file's device and inode>.lock`
 * ({@link SourceLockHolder}: pid, host name, start time, operation id, target, connection). It is
 * written whole to a temporary name and then hard-linked to the lock name, which fails atomically
 * when the name exists (where the file system has no hard links, `open(…, 'wx')`, O_EXCL, instead),
 * so a reader never sees a half-written lock. All of it is synchronous: a handful of tiny file
 * operations, so `startReinject` can refuse before it creates an operation.
 *
 * A lock is stale, and is taken over with a note ({@link SourceLock.takenOver}), when its process is
 * gone: on this host, `process.kill(pid, 0)` answers ESRCH, or the pid is this process's own but
 * the lock is not one this process holds (an earlier process had the same pid), or (Linux, where
 * `/proc` tells when a process started: {@link processStartMs}) the process with that pid started
 * after the lock was written, so it is another process that was given the pid again — exactly, by
 * the kernel's identity of the holder ({@link SourceLockHolder.proc}: boot id and start ticks) the
 * lock records, else by the wall clock; on another host
 * (a config folder shared over the network), when the holder has not refreshed the lock's mtime —
 * it does so every {@link HEARTBEAT_MS} — for {@link OTHER_HOST_STALE_MS}. A lock file that cannot
 * be read as a lock is stale once it is {@link UNREADABLE_STALE_MS} old (a crash between creating
 * and filling it cannot happen with the link, but an old version or a hand edit can). Taking over
 * renames the stale file away (atomic: of two processes taking over at once, one rename succeeds)
 * and checks that what it moved is the stale lock it read.
 *
 * Released in the run's `finally` (completed, failed, cancelled, cancelled while pending), and by
 * a process `exit` handler for whatever this process still holds (`process.exit` on a second
 * Ctrl+C). Release removes the file only while it still holds this lock's token. SIGKILL and
 * crashes leave the file: its pid is then dead and the next re-inject takes it over.
 *
 * The lock covers re-injects that share the config folder (`QUEUESCOPE_HOME`; the CLI and the app
 * use the same one by default). It is keyed by the file's device and inode (`fs.stat` `dev`/`ino`),
 * so every name of one file — a relative path, a symlink, a hard link — maps to one lock; a copy of a
 * backup is another file and is not covered (nor is a file rewritten under its name, which gets a new
 * inode). A file that cannot be stat'ed (absent: the run then fails on reading it) is keyed by its
 * resolved path.
 * @module
 */

/** How often a holder refreshes its lock file's mtime, ms. */
export const HEARTBEAT_MS = 30_000;
/** A lock from another host whose mtime is older than this is stale, ms (10 minutes). */
export const OTHER_HOST_STALE_MS = 10 * 60_000;
/** A lock file that cannot be parsed is stale once its mtime is older than this, ms. */
export const UNREADABLE_STALE_MS = 60_000;
/**
 * A holder pid whose process started more than this after the lock's `startedAt` is another process
 * (the pid was reused), ms. Covers `/proc`'s precision (boot time in whole seconds, start in clock ticks).
 */
export const PID_START_SLACK_MS = 2_000;

/** What a lock file holds: who is re-injecting the file (plain JSON, one object). */
export interface SourceLockHolder {
  version: 1;
  /** Always `reinject` today. */
  kind: 'reinject';
  /** The locked file's real path (absolute; for messages: the lock name is a hash of its device and inode). */
  source: string;
  /** Process id of the holder. */
  pid: number;
  /** `os.hostname()` of the holder. */
  hostname: string;
  /** When the lock was taken, ms since epoch. */
  startedAt: number;
  /** The re-inject's operation id (`OperationManager`), null until known or when run without one. */
  operationId: string | null;
  /** The target queue (its id) the holder publishes into. */
  target: string;
  /** The connection label (no secrets) of the target. */
  connection: string;
  /** Random id of this lock: release removes the file only while it still holds it. */
  token: string;
  /**
   * Linux: which process holds it, in the kernel's terms ({@link procIdentity}: boot id and start
   * time in clock ticks since boot), immune to wall-clock changes; a live pid without this identity
   * is another process (the pid was reused). Absent where `/proc` cannot tell, and in older locks.
   */
  proc?: ProcIdentity;
}

/** A process as Linux identifies it: the boot it runs in and when it started (`/proc/<pid>/stat` field 22, clock ticks since boot). */
export interface ProcIdentity {
  /** `/proc/sys/kernel/random/boot_id`: a new one at every boot. */
  bootId: string;
  /** Field 22 of `/proc/<pid>/stat`: when the process started, clock ticks since boot. */
  startTicks: number;
}

/** A lock found in place ({@link inspectSourceLock}). */
export interface SourceLockState {
  /** `held`: another run is live; `stale`: its process is gone (taken over by the next acquire); `free`: no lock. */
  state: 'free' | 'held' | 'stale';
  /** The lock file's path. */
  lockPath: string;
  /** What it says (null when free, or unreadable). */
  holder: SourceLockHolder | null;
  /** Why it is stale, in words (null otherwise). */
  staleWhy: string | null;
}

/** A lock this process holds ({@link acquireSourceLock}). */
export interface SourceLock {
  /** The lock file's path; null when no lock could be created (see {@link SourceLock.warning}). */
  readonly lockPath: string | null;
  readonly holder: SourceLockHolder;
  /** The stale lock this one replaced, and why it was stale; null when there was none. */
  readonly takenOver: { holder: SourceLockHolder | null; why: string } | null;
  /**
   * Why no lock is held (the locks folder cannot be written: read-only or no permission): the run
   * goes ahead unguarded, and this sentence says so. Null when locked.
   */
  readonly warning: string | null;
  /** Records the operation id in the lock file (rewritten atomically). No-op once released. */
  setOperationId(id: string): void;
  /** Removes the lock file if it still holds this lock's token. Idempotent, synchronous, never throws. */
  release(): void;
}

/** Options of {@link acquireSourceLock}. */
export interface AcquireSourceLockOptions {
  /** The config folder (`RedriveEnv.configDir`); locks go to `<configDir>/locks/`. */
  configDir: string;
  /** The file being re-injected. */
  source: string;
  /** Target queue id. */
  target: string;
  /** Connection label (no secrets). */
  connection: string;
  operationId?: string | null;
  /** Now, ms since epoch (tests). */
  now?: () => number;
}

/** Tokens of the locks this process holds, by lock path (the in-process side; the exit handler releases them). */
const held = new Map<string, string>();
let exitHookInstalled = false;

/** The file's real path (resolved when it does not exist: the run then fails on reading it). */
function realSource(source: string): string {
  let p: string;
  try {
    p = realpathSync.native(source);
  } catch {
    p = resolvePath(source);
  }
  return process.platform === 'win32' ? p.toLowerCase() : p;
}

/**
 * What names the file `source` for its lock: `file:<dev>:<ino>` (the same for every path, symlink
 * or hard link to it), or `path:<real path>` when it cannot be stat'ed (absent).
 */
function lockKey(source: string): string {
  try {
    const st = statSync(source, { bigint: true });
    return `file:${st.dev.toString()}:${st.ino.toString()}`;
  } catch {
    return `path:${realSource(source)}`;
  }
}

/**
 * The lock file of `source` under `configDir`: `<configDir>/locks/reinject-<sha256 of its device and
 * inode>.lock` (of its resolved path when it cannot be stat'ed), so every name of one file shares it.
 */
export function sourceLockPath(configDir: string, source: string): string {
  const key = createHash('sha256').update(lockKey(source)).digest('hex').slice(0, 40);
  return join(resolvePath(configDir), 'locks', `reinject-${key}.lock`);
}

function readHolder(lockPath: string): { holder: SourceLockHolder | null; mtimeMs: number } | null {
  let text: string;
  let mtimeMs: number;
  try {
    mtimeMs = statSync(lockPath).mtimeMs;
    text = readFileSync(lockPath, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  try {
    const v = JSON.parse(text) as Partial<SourceLockHolder> | null;
    if (v !== null && typeof v === 'object' && typeof v.pid === 'number' && typeof v.hostname === 'string' && typeof v.token === 'string' && typeof v.startedAt === 'number') {
      return { holder: { version: 1, kind: 'reinject', source: typeof v.source === 'string' ? v.source : '', pid: v.pid, hostname: v.hostname, startedAt: v.startedAt, operationId: typeof v.operationId === 'string' ? v.operationId : null, target: typeof v.target === 'string' ? v.target : '?', connection: typeof v.connection === 'string' ? v.connection : '?', token: v.token, ...(isProcIdentity(v.proc) ? { proc: { bootId: v.proc.bootId, startTicks: v.proc.startTicks } } : {}) }, mtimeMs };
    }
  } catch {
    // not JSON: below
  }
  return { holder: null, mtimeMs };
}

/** True when process `pid` runs on this host (EPERM: it runs, as another user). */
function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function isProcIdentity(v: unknown): v is ProcIdentity {
  return typeof v === 'object' && v !== null && typeof (v as ProcIdentity).bootId === 'string' && Number.isInteger((v as ProcIdentity).startTicks);
}

/** Field 22 of `/proc/<pid>/stat` (start time, clock ticks since boot); null when it cannot be read. */
function procStartTicks(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${String(pid)}/stat`, 'utf8');
    // Field 2 (the command name) is in parentheses and may hold spaces or ')': split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state): field 22 (starttime) is fields[19].
    const ticks = Number(fields[19]);
    return Number.isInteger(ticks) && ticks >= 0 ? ticks : null;
  } catch {
    return null;
  }
}

/**
 * Linux: process `pid` as the kernel identifies it (a pid and this identity name one process, even
 * after the pid is reused); null where `/proc` cannot tell (not Linux, gone, not readable).
 */
export function procIdentity(pid: number): ProcIdentity | null {
  const startTicks = procStartTicks(pid);
  if (startTicks === null) return null;
  try {
    const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return bootId === '' ? null : { bootId, startTicks };
  } catch {
    return null;
  }
}

/** Whether /proc's start times can be trusted here (checked once on this process: {@link processStartMs}). */
let procStartTrusted: boolean | null = null;

/** Linux: when `pid` started, ms since epoch, from /proc (`/proc/<pid>/stat` field 22 and `btime`), at 100 ticks/s; null when unknown. */
function procStartMs(pid: number): number | null {
  try {
    const ticks = procStartTicks(pid);
    const btime = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'));
    if (ticks === null || btime === null) return null;
    // USER_HZ, the unit of starttime, is 100 on Linux's common architectures; checked on this process below.
    return Number(btime[1]) * 1000 + ticks * 10;
  } catch {
    return null;
  }
}

/**
 * When process `pid` (on this host) started, ms since epoch, precise to about a second; null where
 * it cannot be told: no `/proc` (not Linux), the process is gone or cannot be read, or `/proc`'s
 * start time of this very process is more than {@link PID_START_SLACK_MS} off what Node says (an
 * unusual clock-tick rate), in which case it is not used at all.
 */
export function processStartMs(pid: number): number | null {
  if (procStartTrusted === null) {
    const self = procStartMs(process.pid);
    procStartTrusted = self !== null && Math.abs(self - (Date.now() - process.uptime() * 1000)) <= PID_START_SLACK_MS;
  }
  return procStartTrusted ? procStartMs(pid) : null;
}

/** Why the lock read from `lockPath` is stale, or null while its holder may still run. */
function staleWhy(lockPath: string, found: { holder: SourceLockHolder | null; mtimeMs: number }, now: number): string | null {
  const h = found.holder;
  const age = now - found.mtimeMs;
  if (h === null) return age >= UNREADABLE_STALE_MS ? `the lock file ${lockPath} cannot be read as a lock and is ${String(Math.round(age / 1000))} s old` : null;
  if (h.hostname === osHostname()) {
    if (h.pid === process.pid) return held.get(lockPath) === h.token ? null : `process ${String(h.pid)} is this process, which does not hold it (an earlier process with the same pid ended without releasing it)`;
    if (!pidAlive(h.pid)) return `process ${String(h.pid)} is no longer running (killed or crashed)`;
    // A live pid may be another process that was given the same number after the holder ended.
    const started = processStartMs(h.pid);
    const reused = `it is another process that was given the same pid, and the re-inject that took the lock is gone (killed or crashed)`;
    const current = h.proc !== undefined ? procIdentity(h.pid) : null;
    if (h.proc !== undefined && current !== null) {
      // Exact, and immune to wall-clock changes: the kernel's identity recorded by the holder.
      if (current.bootId !== h.proc.bootId) return `process ${String(h.pid)} is running, but the system has restarted since the lock was taken: ${reused}`;
      if (current.startTicks !== h.proc.startTicks) return `process ${String(h.pid)} is running but is not the process that took the lock${started !== null ? ` (it started at ${iso(started)})` : ''}: ${reused}`;
      return null;
    }
    // An older lock (no identity): by the wall clock.
    if (started !== null && started > h.startedAt + PID_START_SLACK_MS) return `process ${String(h.pid)} is running but started at ${iso(started)}, after the lock was taken: ${reused}`;
    return null;
  }
  return age >= OTHER_HOST_STALE_MS ? `its holder on host ${h.hostname} has not refreshed it for ${String(Math.round(age / 60_000))} minutes (it refreshes it every ${String(HEARTBEAT_MS / 1000)} s while it runs)` : null;
}

/**
 * What the lock of `source` says now, without taking it (the CLI asks before prompting, so that a
 * second run is refused before the question and a stale lock is warned about).
 * @throws nothing: an unreadable locks folder reads as free.
 */
export function inspectSourceLock(configDir: string, source: string, now: number = Date.now()): SourceLockState {
  const lockPath = sourceLockPath(configDir, source);
  let found: ReturnType<typeof readHolder>;
  try {
    found = readHolder(lockPath);
  } catch {
    return { state: 'free', lockPath, holder: null, staleWhy: null };
  }
  if (found === null) return { state: 'free', lockPath, holder: null, staleWhy: null };
  const why = staleWhy(lockPath, found, now);
  return { state: why === null ? 'held' : 'stale', lockPath, holder: found.holder, staleWhy: why };
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The holder in words: `pid 123 on host h (this process), started <ISO>, operation <id>, into <target> on <connection>`. */
export function describeHolder(h: SourceLockHolder): string {
  const self = h.hostname === osHostname() && h.pid === process.pid ? ' (this process: another operation of this app)' : '';
  return `pid ${String(h.pid)} on host ${h.hostname}${self}, started ${iso(h.startedAt)}${h.operationId !== null ? `, operation ${h.operationId}` : ''}, publishing into ${h.target} on ${h.connection}`;
}

/**
 * The refusal of a second re-inject of `source` while `state` (held) runs.
 * `INVALID_INPUT` (CLI exit 2), like the other refusals to start a re-inject that would publish
 * messages twice; `details.reason` is `source-locked`, `details.lock` the holder.
 */
export function sourceLockedError(source: string, state: Pick<SourceLockState, 'lockPath' | 'holder'>): QueuescopeError {
  const who = state.holder !== null ? describeHolder(state.holder) : 'a run whose lock file is being written or cannot be read';
  return new QueuescopeError(
    'INVALID_INPUT',
    `Another re-inject of ${source} is running (${who}). Nothing was published: two re-injects of one file at the same time would publish every message twice. ` +
      `Wait for it to end (queuescope history shows it then), or cancel it (Ctrl+C in its terminal, or Cancel in the app); re-injecting the file again after it published would publish its messages a second time. ` +
      `If that re-inject is not running any more — its process ended, and its pid may since have been given to another process (${state.holder !== null ? `ps -p ${String(state.holder.pid)} -o lstart,args shows what runs under it and since when` : 'see the lock file'}) — delete the lock file ${state.lockPath}.`,
    { reason: 'source-locked', path: source, lockPath: state.lockPath, ...(state.holder !== null ? { lock: publicHolder(state.holder) } : {}) },
  );
}

/** The holder without its token (for error details). */
function publicHolder(h: SourceLockHolder): Omit<SourceLockHolder, 'token'> {
  const { token: _token, ...rest } = h;
  return rest;
}

/** The note of a stale lock taken over (or about to be: the CLI's warning). */
export function staleLockNote(source: string, holder: SourceLockHolder | null, why: string): string {
  const who = holder !== null ? `an earlier re-inject of this file (${describeHolder(holder)})` : 'an earlier re-inject of this file';
  return `${who} did not end cleanly: ${why}. Its lock is taken over by this run. That run may have published some of the messages of ${source} already, and a run killed mid-way records nothing in the audit log: check ${holder !== null ? holder.target : 'its target'} before relying on this run's counts, or publish only what is missing`;
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const [path, token] of held) removeIfOurs(path, token);
  });
}

function removeIfOurs(lockPath: string, token: string): void {
  try {
    const now = readHolder(lockPath);
    if (now?.holder?.token === token) unlinkSync(lockPath);
  } catch {
    // best effort: a lock left behind is stale once this process is gone
  }
}

/** Creates `lockPath` with `content` if it does not exist; false when it exists. */
function createExclusive(lockPath: string, content: string): boolean {
  const tmp = `${lockPath}.${randomUUID()}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(tmp, lockPath);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS' && code !== 'EXDEV') throw e;
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      // gone already
    }
  }
  // No hard links here (some network or FAT file systems): O_EXCL.
  let fd: number;
  try {
    fd = openSync(lockPath, 'wx', 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
  try {
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Takes the exclusive lock of `o.source` for a re-inject (see the module docs). A stale lock is
 * taken over ({@link SourceLock.takenOver}). When the locks folder cannot be created or written
 * (no permission, read-only), the run is not refused: the returned lock holds nothing and
 * {@link SourceLock.warning} says so.
 * @throws QueuescopeError `INVALID_INPUT` (`details.reason: 'source-locked'`, see
 *   {@link sourceLockedError}) when another live run holds it; `INTERNAL` for other file errors.
 */
export function acquireSourceLock(o: AcquireSourceLockOptions): SourceLock {
  const now = o.now ?? Date.now;
  const lockPath = sourceLockPath(o.configDir, o.source);
  const holder: SourceLockHolder = {
    version: 1,
    kind: 'reinject',
    source: realSource(o.source),
    pid: process.pid,
    hostname: osHostname(),
    startedAt: now(),
    operationId: o.operationId ?? null,
    target: o.target,
    connection: o.connection,
    token: randomUUID(),
  };
  const proc = procIdentity(process.pid);
  if (proc !== null) holder.proc = proc;
  let takenOver: SourceLock['takenOver'] = null;
  try {
    mkdirSync(join(resolvePath(o.configDir), 'locks'), { recursive: true, mode: 0o700 });
    // Create; or find a stale lock, move it away, and create again.
    for (let round = 0; ; round++) {
      if (createExclusive(lockPath, JSON.stringify(holder))) break;
      const found = readHolder(lockPath);
      // Released in between: try again (a few times; a name that keeps coming and going is refused).
      if (found === null && round < 5) continue;
      const why = found === null ? null : staleWhy(lockPath, found, now());
      if (found === null || why === null || round >= 5) throw sourceLockedError(o.source, { lockPath, holder: found?.holder ?? null });
      const aside = `${lockPath}.stale-${holder.token}`;
      try {
        renameSync(lockPath, aside);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // another run took it over first
        throw e;
      }
      const moved = readHolder(aside);
      if (moved !== null && moved.holder?.token !== found.holder?.token) {
        // Another run took the stale lock over between the read and the rename: this moved its live
        // lock. Put it back (link: never over a newer one) and let that run be.
        try {
          linkSync(aside, lockPath);
        } catch {
          // a third run holds the name now; the moved lock's owner releases nothing it does not find
        }
        unlinkSync(aside);
        throw sourceLockedError(o.source, { lockPath, holder: moved.holder });
      }
      unlinkSync(aside);
      takenOver = { holder: found.holder, why };
    }
  } catch (e) {
    if (e instanceof QueuescopeError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
      const warning = `${o.source} could not be locked for this run (${lockPath}: ${code}, the config folder cannot be written): another re-inject of the same file started now would not be refused`;
      return { lockPath: null, holder, takenOver: null, warning, setOperationId: () => undefined, release: () => undefined };
    }
    throw new QueuescopeError('INTERNAL', `Could not lock ${o.source} for the re-inject (${lockPath}): ${e instanceof Error ? e.message : String(e)}`, { path: o.source, lockPath }, { cause: e });
  }
  held.set(lockPath, holder.token);
  installExitHook();
  let released = false;
  const heartbeat = setInterval(() => {
    const t = new Date();
    void utimes(lockPath, t, t).catch(() => undefined);
  }, HEARTBEAT_MS);
  heartbeat.unref();
  return {
    lockPath,
    holder,
    takenOver,
    warning: null,
    setOperationId(id: string): void {
      if (released) return;
      holder.operationId = id;
      // Rewritten under a temporary name and renamed over the lock: readers see the old or the new one.
      const tmp = `${lockPath}.${randomUUID()}.tmp`;
      try {
        writeFileSync(tmp, JSON.stringify(holder), { mode: 0o600, flag: 'wx' });
        if (readHolder(lockPath)?.holder?.token === holder.token) renameSync(tmp, lockPath);
        else unlinkSync(tmp);
      } catch {
        try {
          unlinkSync(tmp);
        } catch {
          // not created
        }
      }
    },
    release(): void {
      if (released) return;
      released = true;
      clearInterval(heartbeat);
      removeIfOurs(lockPath, holder.token);
      if (held.get(lockPath) === holder.token) held.delete(lockPath);
    },
  };
}
