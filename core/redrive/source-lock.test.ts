import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireSourceLock, inspectSourceLock, OTHER_HOST_STALE_MS, sourceLockPath, type SourceLockHolder } from './source-lock';

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
    // The parent of this process is alive.
    writeLock({ pid: process.ppid });
    expect(() => acquireSourceLock(opts())).toThrow(`pid ${String(process.ppid)} on host ${hostname()}, started 2026-12-03T03:00:00Z, operation op-old, publishing into list:old on redis://h`);
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
    writeLock({ pid: process.ppid, token: 'someone-else' });
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
