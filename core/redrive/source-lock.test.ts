import { spawn, spawnSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireSourceLock, inspectSourceLock, OTHER_HOST_STALE_MS, procIdentity, processStartMs, sourceLockPath, type SourceLockHolder } from './source-lock';

let dir: string;
let home: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'qs-source-lock-'));
  home = join(dir, 'home');
  file = join(dir, 'backup.jsonl');
  writeFileSync(file, '');
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const opts = (target = 'list:orders') => ({ configDir: home, source: file, target, connection: 'redis://127.0.0.1:6379' });

/** The pid of a process that has ended (a child run to completion). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '']);
  return r.pid;
}

function writeLock(h: Partial<SourceLockHolder>, mtime?: Date): string {
  const path = sourceLockPath(home, file);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify({ version: 1, kind: 'reinject', source: file, pid: 1, hostname: hostname(), startedAt: Date.parse('2026-12-03T03:00:00Z'), operationId: 'op-old', target: 'list:old', connection: 'redis://h', token: 'old-token', ...h }));
  if (mtime !== undefined) utimesSync(path, mtime, mtime);
  return path;
}

describe('acquireSourceLock', () => {
  it('one holder at a time in one process: the second is refused naming the first; released, the file can be locked again', () => {
    const a = acquireSourceLock(opts());
    a.setOperationId('op-1');
    expect(a.lockPath).toBe(sourceLockPath(home, file));
    const onDisk = JSON.parse(readFileSync(a.lockPath!, 'utf8')) as SourceLockHolder;
    expect(onDisk).toMatchObject({ pid: process.pid, hostname: hostname(), operationId: 'op-1', target: 'list:orders', source: file });
    let err: unknown;
    try {
      acquireSourceLock(opts('list:other'));
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'INVALID_INPUT', details: { reason: 'source-locked', lock: { pid: process.pid, operationId: 'op-1', target: 'list:orders' } } });
    const msg = (err as Error).message;
    expect(msg).toContain(`Another re-inject of ${file} is running (pid ${String(process.pid)} on host ${hostname()} (this process: another operation of this app), started `);
    expect(msg).toContain('operation op-1, publishing into list:orders on redis://127.0.0.1:6379');
    expect(msg).toContain('Nothing was published');
    expect(msg).not.toContain(onDisk.token);
    expect(inspectSourceLock(home, file).state).toBe('held');
    a.release();
    a.release();
    expect(existsSync(a.lockPath!)).toBe(false);
    expect(inspectSourceLock(home, file).state).toBe('free');
    const b = acquireSourceLock(opts());
    expect(b.takenOver).toBeNull();
    b.release();
  });

  it('the same file through a symlink is the same lock', () => {
    const link = join(dir, 'link.jsonl');
    symlinkSync(file, link);
    const a = acquireSourceLock(opts());
    expect(() => acquireSourceLock({ ...opts(), source: link })).toThrow(/Another re-inject/);
    a.release();
  });

  it('a lock whose process is gone is taken over, with why; a live process’s lock is not', () => {
    const dead = deadPid();
    writeLock({ pid: dead });
    expect(inspectSourceLock(home, file)).toMatchObject({ state: 'stale', holder: { pid: dead } });
    const a = acquireSourceLock(opts());
    expect(a.takenOver?.holder).toMatchObject({ pid: dead, target: 'list:old' });
    expect(a.takenOver?.why).toBe(`process ${String(dead)} is no longer running (killed or crashed)`);
    a.release();
    // The parent of this process is alive (and started before the lock was written).
    writeLock({ pid: process.ppid, startedAt: Date.now() });
    expect(() => acquireSourceLock(opts())).toThrow(`pid ${String(process.ppid)} on host ${hostname()}, started ${new Date(Date.now()).toISOString().slice(0, 10)}`);
    expect(() => acquireSourceLock(opts())).toThrow('operation op-old, publishing into list:old on redis://h');
  });

  it('a hard link, a relative path and a symlink to the file are the same lock (keyed by device and inode, not path)', () => {
    const hard = join(dir, 'hard.jsonl');
    linkSync(file, hard);
    const soft = join(dir, 'soft.jsonl');
    symlinkSync(hard, soft);
    const rel = relative(process.cwd(), file);
    for (const p of [hard, soft, rel]) expect(sourceLockPath(home, p)).toBe(sourceLockPath(home, file));
    const a = acquireSourceLock(opts());
    // The lock names the file by the path it was taken with (resolved).
    expect((JSON.parse(readFileSync(a.lockPath!, 'utf8')) as SourceLockHolder).source).toBe(file);
    expect(() => acquireSourceLock({ ...opts(), source: hard })).toThrow(`Another re-inject of ${hard} is running`);
    a.release();
    const b = acquireSourceLock({ ...opts(), source: hard });
    expect(() => acquireSourceLock(opts())).toThrow(/Another re-inject/);
    b.release();
    // A copy is another file.
    const copy = join(dir, 'copy.jsonl');
    writeFileSync(copy, readFileSync(file));
    expect(sourceLockPath(home, copy)).not.toBe(sourceLockPath(home, file));
  });

  it.runIf(process.platform === 'linux')('a live pid that started after the lock was written (the pid was reused) is stale; one that started before is held', async () => {
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      const pid = other.pid!;
      await new Promise((r) => other.once('spawn', r));
      const started = processStartMs(pid);
      expect(started).not.toBeNull();
      expect(Math.abs(started! - Date.now())).toBeLessThan(5_000);
      // Written a minute before that process started: it cannot be the holder.
      writeLock({ pid, startedAt: Date.now() - 60_000 });
      const st = inspectSourceLock(home, file);
      expect(st).toMatchObject({ state: 'stale', holder: { pid } });
      expect(st.staleWhy).toContain(`process ${String(pid)} is running but started at `);
      expect(st.staleWhy).toContain('another process that was given the same pid');
      const a = acquireSourceLock(opts());
      expect(a.takenOver?.holder).toMatchObject({ pid });
      a.release();
      // Written after it started: it may be the holder; refused, and the message covers a reused pid.
      writeLock({ pid, startedAt: Date.now() });
      expect(inspectSourceLock(home, file).state).toBe('held');
      expect(() => acquireSourceLock(opts())).toThrow(`its pid may since have been given to another process (ps -p ${String(pid)} -o lstart,args shows what runs under it and since when) — delete the lock file`);
    } finally {
      other.kill('SIGKILL');
    }
  });

  it.runIf(process.platform === 'linux')('a lock records its holder’s kernel identity (boot id, start ticks): a live pid with another identity is stale whatever the clocks say; the same identity is held', async () => {
    const a = acquireSourceLock(opts());
    expect((JSON.parse(readFileSync(a.lockPath!, 'utf8')) as SourceLockHolder).proc).toEqual(procIdentity(process.pid));
    a.release();
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      const pid = other.pid!;
      await new Promise((r) => other.once('spawn', r));
      const id = procIdentity(pid)!;
      expect(id.startTicks).toBeGreaterThan(0);
      // Its own identity, with a start time an hour before it (the wall clock stepped): still its lock.
      writeLock({ pid, startedAt: Date.now() - 3_600_000, proc: id });
      expect(inspectSourceLock(home, file).state).toBe('held');
      // Same pid, another start (the pid was reused), though the wall clock says it started before the lock.
      writeLock({ pid, startedAt: Date.now() + 60_000, proc: { ...id, startTicks: id.startTicks - 1 } });
      const st = inspectSourceLock(home, file);
      expect(st.state).toBe('stale');
      expect(st.staleWhy).toContain(`process ${String(pid)} is running but is not the process that took the lock (it started at `);
      // Another boot.
      writeLock({ pid, startedAt: Date.now(), proc: { ...id, bootId: 'another-boot' } });
      expect(inspectSourceLock(home, file).staleWhy).toContain('the system has restarted since the lock was taken');
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('this process’s pid in a lock it does not hold (an earlier process with the same pid) is stale', () => {
    writeLock({ pid: process.pid, token: 'not-ours' });
    const a = acquireSourceLock(opts());
    expect(a.takenOver?.why).toContain('is this process, which does not hold it');
    a.release();
  });

  it('another host’s lock is honoured while refreshed, stale after 10 minutes without', () => {
    writeLock({ hostname: 'elsewhere', pid: 12345 });
    expect(() => acquireSourceLock(opts())).toThrow(/pid 12345 on host elsewhere/);
    writeLock({ hostname: 'elsewhere', pid: 12345 }, new Date(Date.now() - OTHER_HOST_STALE_MS - 60_000));
    const a = acquireSourceLock(opts());
    expect(a.takenOver?.why).toContain('its holder on host elsewhere has not refreshed it for 11 minutes');
    a.release();
  });

  it('release leaves a lock that is no longer its own (taken over meanwhile)', () => {
    const a = acquireSourceLock(opts());
    writeLock({ pid: process.ppid, token: 'someone-else', startedAt: Date.now() });
    a.release();
    expect(inspectSourceLock(home, file)).toMatchObject({ state: 'held', holder: { token: 'someone-else' } });
  });

  it('an unreadable lock file is honoured while fresh, stale once old', () => {
    const path = sourceLockPath(home, file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, '{"pid":');
    expect(() => acquireSourceLock(opts())).toThrow(/lock file is being written or cannot be read/);
    const old = new Date(Date.now() - 120_000);
    utimesSync(path, old, old);
    const a = acquireSourceLock(opts());
    expect(a.takenOver?.holder).toBeNull();
    a.release();
  });

  it('a config folder that cannot be written: no lock, a warning, the run is not refused', () => {
    if (process.getuid?.() === 0) {
      // root writes anywhere: a file in the way of the locks folder stands in for it.
      writeFileSync(home, 'not a folder');
      expect(() => acquireSourceLock(opts())).toThrow(/Could not lock/);
      return;
    }
    mkdirSync(home, { mode: 0o500 });
    const a = acquireSourceLock(opts());
    expect(a.lockPath).toBeNull();
    expect(a.warning).toContain('could not be locked for this run');
    a.release();
  });
});
