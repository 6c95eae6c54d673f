import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { link, mkdtemp, readdir, rm, writeFile, mkdir } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter, type RedisAdapter } from '../../core/adapters/redis';
import { EXIT } from '../../core/cli/exit-codes';
import { startReinject, type RedriveEnv } from '../../core/redrive/engine';
import { sourceLockPath } from '../../core/redrive/source-lock';
import { AuditLog } from '../../core/services/audit-log';
import { OperationManager } from '../../core/services/operations';
import { REDIS_URL, uniqueName } from './env';
import { runCli, runCliMerged } from './fixtures/run-cli';

/**
 * A re-inject holds an exclusive lock on its file for the run. Old code had none: two re-injects
 * of one backup at the same time (two terminals, the app's Put back… twice, CLI and app) both
 * published every message — each message twice in the target. Against real Redis lists: a redrive
 * backup of 200 entries, re-injected rate-limited (50/s: about 4 s) so that runs overlap.
 */

const CHILD = join(__dirname, 'fixtures', 'redrive-cli-child.ts');
const TSX_LOADER = pathToFileURL(join(__dirname, '..', '..', 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const N = 200;

const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const keys: string[] = [];
const dirs: string[] = [];
const children: ChildProcess[] = [];
let adapter: RedisAdapter;
beforeAll(() => {
  adapter = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
});
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
afterAll(async () => {
  await adapter.close();
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

function key(label: string): string {
  const k = uniqueName(label);
  keys.push(k);
  return k;
}

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'qs-reinject-lock-'));
  dirs.push(d);
  return d;
}

/** A real redrive backup: N entries redriven from a DLQ list to a work list. Returns the backup's path. */
async function listBackup(dir: string): Promise<string> {
  const dlq = key('lock-dlq');
  const work = key('lock-work');
  await redis.rpush(dlq, ...Array.from({ length: N }, (_, i) => `{"orderId":"o-${String(i + 1)}"}`));
  const rd = await runCliMerged(dir, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${work}`, '--yes']);
  expect(rd.code, rd.out).toBe(0);
  expect(await redis.llen(work)).toBe(N);
  const files = (await readdir(join(dir, 'home', 'backups'))).filter((f) => f.endsWith('.jsonl'));
  expect(files).toHaveLength(1);
  return join(dir, 'home', 'backups', files[0]!);
}

/** Each entry of `list` with how many times it is there, as counts: {1: n} when every entry is there once. */
async function multiplicity(list: string): Promise<Record<number, number>> {
  const counts = new Map<string, number>();
  for (const e of await redis.lrange(list, 0, -1)) counts.set(e, (counts.get(e) ?? 0) + 1);
  const out: Record<number, number> = {};
  for (const c of counts.values()) out[c] = (out[c] ?? 0) + 1;
  return out;
}

interface ChildRun {
  child: ChildProcess;
  /** Resolves once a progress line reports at least one message processed (the run is publishing). */
  publishing: Promise<void>;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** `queuescope <args>` in a child process (its own pid), with QUEUESCOPE_HOME = `<dir>/home`. */
function cliChild(dir: string, args: string[]): ChildRun {
  const child = spawn(process.execPath, ['--import', TSX_LOADER, CHILD, ...args], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, QUEUESCOPE_HOME: join(dir, 'home') } });
  children.push(child);
  let stdout = '';
  let stderr = '';
  let onPublishing: () => void = () => undefined;
  const publishing = new Promise<void>((res) => (onPublishing = res));
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    if (/"type":"progress","status":"running","processed":[1-9]/.test(stderr)) onPublishing();
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((res, rej) => {
    child.on('error', rej);
    child.on('exit', (code) => {
      onPublishing();
      res({ code, stdout, stderr });
    });
  });
  return { child, publishing, done };
}

function redisEnv(configDir: string): RedriveEnv {
  return { adapter, connectionLabel: REDIS_URL, actor: 'app', auditLog: new AuditLog({ configDir }), configDir };
}

describe('reinject: one run per file at a time', () => {
  it('two CLI processes re-inject one backup at once: one publishes, the other is refused at once naming the first; the list holds each message once', async () => {
    const dir = await tempDir();
    const backup = await listBackup(dir);
    const back = key('lock-back');
    const argv = ['reinject', REDIS_URL, `list:${back}`, '--from', backup, '--rate', '50', '--batch', '10', '--yes', '--json'];
    const first = cliChild(dir, argv);
    await first.publishing;
    expect(first.child.exitCode, 'the first run ended before the second started: too fast to overlap').toBeNull();
    const second = await cliChild(dir, argv).done;
    // Refused at once: it ended while the first was still publishing.
    const firstStillRunning = first.child.exitCode === null;
    const one = await first.done;
    expect(one.code, one.stderr).toBe(0);
    // Each message once (old code: both runs published all: every message twice).
    expect(await multiplicity(back)).toEqual({ 1: N });
    expect(second.code, second.stderr).toBe(EXIT.USAGE);
    // Named (--json: the error on stdout): the first run's pid, host, operation and target; and what to do.
    const err = (JSON.parse(second.stdout) as { error: { code: string; message: string; details: { reason: string; lock: { pid: number; operationId: string | null } } } }).error;
    expect(err).toMatchObject({ code: 'INVALID_INPUT', details: { reason: 'source-locked', lock: { pid: first.child.pid } } });
    expect(err.details.lock.operationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(err.message).toContain(`Another re-inject of ${backup} is running (pid ${String(first.child.pid)} on host ${hostname()}, started `);
    expect(err.message).toContain(`operation ${err.details.lock.operationId ?? ''}, publishing into list:${back} on redis://127.0.0.1:6379). Nothing was published`);
    expect(err.message).toContain('Wait for it to end');
    // It published nothing (no progress of its own).
    expect(second.stderr).not.toContain('"type":"progress"');
    expect(firstStillRunning).toBe(true);
    expect(await redis.llen(back)).toBe(N);
    // The first run released its lock.
    expect(existsSync(sourceLockPath(join(dir, 'home'), backup))).toBe(false);
  });

  it('a lock left by a killed run (its pid is gone) is taken over with a warning; a live process’s lock refuses, publishing nothing', async () => {
    const dir = await tempDir();
    const backup = await listBackup(dir);
    const lockPath = sourceLockPath(join(dir, 'home'), backup);
    await mkdir(dirname(lockPath), { recursive: true });
    const holder = (pid: number, startedAt: number): string =>
      JSON.stringify({ version: 1, kind: 'reinject', source: backup, pid, hostname: hostname(), startedAt, operationId: null, target: 'list:x', connection: REDIS_URL, token: `t-${String(pid)}` });

    // A live process (a child that sleeps) holds it, taken after that process started: refused, nothing published.
    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    children.push(sleeper);
    await new Promise((r) => sleeper.once('spawn', r));
    const startedAt = Date.now();
    const startedIso = new Date(startedAt).toISOString().replace(/\.\d{3}Z$/, 'Z');
    await writeFile(lockPath, holder(sleeper.pid!, startedAt));
    const back = key('lock-stale');
    const refused = await runCliMerged(dir, ['reinject', REDIS_URL, `list:${back}`, '--from', backup, '--yes']);
    expect(refused.code, refused.out).toBe(EXIT.USAGE);
    expect(refused.out).toContain(`Another re-inject of ${backup} is running (pid ${String(sleeper.pid)} on host ${hostname()}, started ${startedIso}, publishing into list:x`);
    expect(await redis.exists(back)).toBe(0);

    // The process is killed: its lock is stale, taken over with a warning naming it.
    sleeper.kill('SIGKILL');
    await new Promise((r) => sleeper.once('exit', r));
    const r = await runCliMerged(dir, ['reinject', REDIS_URL, `list:${back}`, '--from', backup, '--yes']);
    // Not a clean 0: the killed run may have published part of the file (old code: exit 0).
    expect(r.code, r.out).toBe(EXIT.PARTIAL);
    expect(r.out).toContain(`warning: an earlier re-inject of this file (pid ${String(sleeper.pid)} on host ${hostname()}, started ${startedIso}, publishing into list:x on `);
    expect(r.out).toContain(`process ${String(sleeper.pid)} is no longer running (killed or crashed). Its lock is taken over by this run.`);
    expect(r.out).toContain(`Possible duplicates: the earlier re-inject whose lock this run took over (see the warning above) may have published some of these ${String(N)} already`);
    expect(await multiplicity(back)).toEqual({ 1: N });
    expect(existsSync(lockPath)).toBe(false);
    // The audit entry counts them.
    const entry = (await new AuditLog({ configDir: join(dir, 'home') }).read({ limit: 1 })).entries[0];
    expect(entry).toMatchObject({ action: 'reinject', status: 'completed', counts: { published: N, possibleDuplicates: N } });
  });

  it('the lock is released after a run that completed, one that failed and one cancelled: the next run is not refused', async () => {
    const dir = await tempDir();
    const backup = await listBackup(dir);
    const lockPath = sourceLockPath(join(dir, 'home'), backup);

    // Completed.
    const a = key('lock-a');
    const done = await runCliMerged(dir, ['reinject', REDIS_URL, `list:${a}`, '--from', backup, '--yes']);
    expect(done.code, done.out).toBe(0);
    expect(existsSync(lockPath)).toBe(false);

    // Cancelled (Ctrl+C) mid-run.
    const b = key('lock-b');
    const ctrlC = new AbortController();
    const timer = setInterval(() => {
      void redis.llen(b).then((n) => {
        if (n > 0) ctrlC.abort();
      });
    }, 20);
    const cancelled = await runCli(dir, ['reinject', REDIS_URL, `list:${b}`, '--from', backup, '--rate', '100', '--batch', '10', '--yes'], ctrlC.signal).finally(() => clearInterval(timer));
    const out = cancelled.stdout + cancelled.stderr;
    expect(cancelled.code, out).toBe(EXIT.INTERRUPTED);
    const publishedBeforeCancel = await redis.llen(b);
    expect(publishedBeforeCancel).toBeGreaterThan(0);
    expect(publishedBeforeCancel).toBeLessThan(N);
    expect(existsSync(lockPath)).toBe(false);

    // Failed: the target turns into a string mid-run (WRONGTYPE on the next publish).
    const c = key('lock-c');
    const breaker = setInterval(() => {
      void redis.llen(c).then(async (n) => {
        if (n > 0) await redis.set(c, 'not a list');
      }, () => undefined);
    }, 20);
    const failed = await runCliMerged(dir, ['reinject', REDIS_URL, `list:${c}`, '--from', backup, '--rate', '100', '--batch', '10', '--yes']).finally(() => clearInterval(breaker));
    expect(failed.code, failed.out).toBe(EXIT.CONNECTION);
    expect(failed.out).toContain('WRONGTYPE');
    expect(failed.out).not.toContain('Another re-inject');
    expect(existsSync(lockPath)).toBe(false);

    // And again: allowed (earlier uses are warnings; --yes).
    const d = key('lock-d');
    const again = await runCliMerged(dir, ['reinject', REDIS_URL, `list:${d}`, '--from', backup, '--yes']);
    expect(again.code, again.out).toBe(0);
    expect(again.out).toContain('this backup was already re-injected');
    expect(await multiplicity(d)).toEqual({ 1: N });
  });

  it('in one process (the app): a second startReinject of the same file on one OperationManager is refused while the first runs, allowed after it; cancelled while pending releases it', async () => {
    const dir = await tempDir();
    const backup = await listBackup(dir);
    const configDir = join(dir, 'home');
    const env = redisEnv(configDir);
    const ops = new OperationManager();
    const t1 = key('lock-app1');
    const t2 = key('lock-app2');
    const first = startReinject(ops, env, { path: backup, targetQueueId: `list:${t1}`, ratePerSecond: 200, batchSize: 10 });
    let err: unknown;
    try {
      startReinject(ops, env, { path: backup, targetQueueId: `list:${t2}` });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'INVALID_INPUT', details: { reason: 'source-locked', lock: { pid: process.pid, operationId: first.id, target: `list:${t1}` } } });
    expect((err as Error).message).toContain(`(this process: another operation of this app), started `);
    expect((err as Error).message).toContain(`operation ${first.id}, publishing into list:${t1}`);
    expect(ops.list()).toHaveLength(1);
    const final = await ops.wait(first.id);
    expect(final.status).toBe('completed');
    expect(await multiplicity(t1)).toEqual({ 1: N });
    expect(await redis.exists(t2)).toBe(0);

    // Cancelled before it ran: released.
    const pending = startReinject(ops, env, { path: backup, targetQueueId: `list:${t2}` });
    ops.cancel(pending.id);
    expect((await ops.wait(pending.id)).status).toBe('cancelled');
    await new Promise((r) => setImmediate(r));
    expect(existsSync(sourceLockPath(configDir, backup))).toBe(false);

    // Failed (a file that is not a snapshot past its first lines): released.
    const broken = join(dir, 'broken.jsonl');
    await writeFile(broken, 'not json\n');
    const bad = await ops.wait(startReinject(ops, env, { path: broken, targetQueueId: `list:${t2}` }).id);
    expect(bad.status).toBe('failed');
    expect(existsSync(sourceLockPath(configDir, broken))).toBe(false);

    const after = await ops.wait(startReinject(ops, env, { path: backup, targetQueueId: `list:${t2}` }).id);
    expect(after.status).toBe('completed');
    expect(await multiplicity(t2)).toEqual({ 1: N });
  });
  it('a run killed with -9 mid-publish: the next run (--yes) takes its lock over, publishes the file and exits 7 (possible duplicates), saying why', async () => {
    const dir = await tempDir();
    const backup = await listBackup(dir);
    const back = key('lock-kill9');
    const first = cliChild(dir, ['reinject', REDIS_URL, `list:${back}`, '--from', backup, '--rate', '50', '--batch', '10', '--yes', '--json']);
    await first.publishing;
    first.child.kill('SIGKILL');
    await first.done;
    const before = await redis.llen(back);
    expect(before).toBeGreaterThan(0);
    expect(before).toBeLessThan(N);
    expect(existsSync(sourceLockPath(join(dir, 'home'), backup))).toBe(true);
    const r = await runCli(dir, ['reinject', REDIS_URL, `list:${back}`, '--from', backup, '--yes', '--json']);
    // Old code: exit 0, though `before` messages are now there twice.
    expect(r.code, r.stderr).toBe(EXIT.PARTIAL);
    expect(r.stderr).toContain(`warning: an earlier re-inject of this file (pid ${String(first.child.pid)} on host ${hostname()}`);
    const doc = JSON.parse(r.stdout) as { status: string; result: { published: number; possibleDuplicates: number; notes: string[] } };
    expect(doc.status).toBe('completed');
    expect(doc.result).toMatchObject({ published: N, possibleDuplicates: N });
    expect(doc.result.notes.join('\n')).toContain(`the ${String(N)} messages published by this run may include duplicates: it took over the lock of an earlier re-inject of ${backup}`);
    expect(await multiplicity(back)).toEqual({ 1: N - before, 2: before });
    expect(existsSync(sourceLockPath(join(dir, 'home'), backup))).toBe(false);
  });

  it('a hard link to the file is the same file: a run through it is refused while a run through the first name publishes', async () => {
    const dir = await tempDir();
    const backup = await listBackup(dir);
    const hard = join(dir, 'same-backup.jsonl');
    await link(backup, hard);
    const back = key('lock-hard');
    const first = cliChild(dir, ['reinject', REDIS_URL, `list:${back}`, '--from', backup, '--rate', '50', '--batch', '10', '--yes', '--json']);
    await first.publishing;
    expect(first.child.exitCode, 'the first run ended before the second started: too fast to overlap').toBeNull();
    // Old code: the lock was keyed by the path, so this published all N a second time.
    const second = await cliChild(dir, ['reinject', REDIS_URL, `list:${back}`, '--from', hard, '--rate', '50', '--batch', '10', '--yes', '--json']).done;
    const firstStillRunning = first.child.exitCode === null;
    const one = await first.done;
    expect(one.code, one.stderr).toBe(0);
    expect(second.code, second.stderr).toBe(EXIT.USAGE);
    expect(second.stdout).toContain(`Another re-inject of ${hard} is running (pid ${String(first.child.pid)} on host ${hostname()}`);
    expect(firstStillRunning).toBe(true);
    expect(await multiplicity(back)).toEqual({ 1: N });
  });
});

describe('reinject stopped by SIGTERM or SIGHUP: as on Ctrl+C', () => {
  for (const [signal, code] of [
    ['SIGTERM', EXIT.TERMINATED],
    ['SIGHUP', EXIT.HANGUP],
  ] as const) {
    it(`${signal} mid-run: cancelled cleanly — remainder file written, audit entry, lock released — and exit ${String(code)}`, async () => {
      const dir = await tempDir();
      const backup = await listBackup(dir);
      const back = key(`sig-${signal}`);
      const run = cliChild(dir, ['reinject', REDIS_URL, `list:${back}`, '--from', backup, '--rate', '50', '--batch', '10', '--yes', '--json']);
      await run.publishing;
      expect(run.child.exitCode).toBeNull();
      run.child.kill(signal);
      const r = await run.done;
      // Old code: killed by the signal at once (exit code null, signal set): no remainder, no entry, lock left.
      expect(r.code, r.stderr).toBe(code);
      expect(r.stderr).toContain(`${signal} received: stopping as on Ctrl+C`);
      const published = await redis.llen(back);
      expect(published).toBeGreaterThan(0);
      expect(published).toBeLessThan(N);
      const doc = JSON.parse(r.stdout) as { status: string; result: { published: number; remainder: { path: string; messages: number } | null } };
      expect(doc.status).toBe('cancelled');
      expect(doc.result.published).toBe(published);
      expect(doc.result.remainder).toMatchObject({ messages: N - published });
      expect(existsSync(doc.result.remainder!.path)).toBe(true);
      expect((await readdir(dirname(backup))).filter((f) => f.includes('.remainder-'))).toHaveLength(1);
      const entry = (await new AuditLog({ configDir: join(dir, 'home') }).read({ limit: 1 })).entries[0];
      expect(entry).toMatchObject({ action: 'reinject', status: 'cancelled', counts: { published } });
      expect(existsSync(sourceLockPath(join(dir, 'home'), backup))).toBe(false);
    });
  }
});
