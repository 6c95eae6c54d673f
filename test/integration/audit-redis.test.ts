import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter } from '../../core/adapters/redis';
import type { BrokerAdapter } from '../../core/adapters/types';
import { defaultProjectConfig, type AuditConfig } from '../../shared/config/project-config';
import { evaluateAudit, type AuditReport, type Measurements } from '../../shared/audit';
import { REDIS_URL, uniqueName } from './env';
import { runCli } from './fixtures/run-cli';
import { EXIT } from '../../core/cli/exit-codes';
import { freePort } from './fixtures/free-port';

// Queue-level rules on the shared Redis (unique keys, removed afterwards; read-only checks of its
// server settings: it runs with --save "" --appendonly no, so redis.no-persistence fires there).
// Server-level passing/failing sides on private redis-servers started here and stopped by pid.
const p = uniqueName('aud');
const redis = new Redis(REDIS_URL);
const adapter: BrokerAdapter = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
const bullQueues: Queue[] = [];

async function audit(a: BrokerAdapter, pattern: string, config: Partial<AuditConfig> = {}, measurements: Measurements = new Map()): Promise<AuditReport> {
  const facts = await a.audit!.collect({ pattern });
  return evaluateAudit([facts], { config: { ...defaultProjectConfig().audit, ...config }, measurements, now: Date.now() });
}
const on = (r: AuditReport, name: string): string[] => r.findings.filter((f) => f.target === name).map((f) => f.ruleId).sort();

async function bull(name: string, opts: Record<string, unknown>, n = 3): Promise<Queue> {
  const q = new Queue(name, { connection: redis.duplicate() });
  bullQueues.push(q);
  for (let i = 0; i < n; i++) await q.add('charge', { orderId: `A-${String(i)}` }, opts);
  return q;
}

/** A stream with group `g` that read all 10 entries (all pending on consumer `c1`). */
async function pendingStream(key: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < 10; i++) ids.push((await redis.xadd(key, '*', 'body', `{"orderId":"A-${String(i)}"}`)) ?? '');
  await redis.xgroup('CREATE', key, 'g', '0');
  await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 10, 'STREAMS', key, '>');
  return ids;
}

/** Starts a private redis-server; returns its port and a stop function (by pid). */
async function privateRedis(args: string[]): Promise<{ port: number; stop: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'qs-audit-redis-'));
  const port = await freePort();
  execFileSync('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--daemonize', 'yes', '--pidfile', join(dir, 'redis.pid'), '--logfile', join(dir, 'redis.log'), '--dir', dir, ...args]);
  let pid = 0;
  for (let i = 0; i < 100 && pid === 0; i++) {
    try {
      pid = Number(readFileSync(join(dir, 'redis.pid'), 'utf8').trim());
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const stop = async (): Promise<void> => {
    try {
      process.kill(pid, 'SIGTERM');
      for (let i = 0; i < 100; i++) {
        process.kill(pid, 0);
        await new Promise((r) => setTimeout(r, 100));
      }
    } catch {
      // gone
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { port, stop };
}

let report: AuditReport;
const measurements: Measurements = new Map([
  [`${p}-slow`, { p99Ms: 60_000, meanMs: 20_000, source: 'file' }],
  [`${p}-keep`, { p99Ms: 2_000, meanMs: 500, source: 'file' }],
]);

beforeAll(async () => {
  await bull(`${p}-rof`, { removeOnFail: true });
  await bull(`${p}-small`, { removeOnFail: 10 });
  await bull(`${p}-keep`, { attempts: 3, removeOnFail: { count: 5000 } });
  await bull(`${p}-slow`, {});
  const trimmed = await pendingStream(`${p}-trimmed`);
  await redis.xtrim(`${p}-trimmed`, 'MAXLEN', 2); // removes 8 pending entries
  expect(trimmed.length).toBe(10);
  await pendingStream(`${p}-fresh`);
  const stranded = await pendingStream(`${p}-stranded`);
  // Make 3 entries look abandoned for an hour (XCLAIM … IDLE sets the idle time).
  await redis.xclaim(`${p}-stranded`, 'g', 'c1', 0, ...stranded.slice(0, 3), 'IDLE', 3_600_000, 'JUSTID');
  report = await audit(adapter, `${p}*`, {}, measurements);
}, 60_000);

afterAll(async () => {
  for (const q of bullQueues) {
    await q.obliterate({ force: true }).catch(() => undefined);
    await q.close();
  }
  await redis.del(`${p}-trimmed`, `${p}-fresh`, `${p}-stranded`);
  redis.disconnect();
  await adapter.close();
});

describe('Redis audit: queues on the shared server', () => {
  it('BullMQ removeOnFail true and a count of 10 are found; { count: 5000 } passes', () => {
    expect(on(report, `${p}-rof`)).toEqual(['redis.bullmq-remove-on-fail']);
    expect(report.findings.find((f) => f.target === `${p}-rof`)?.message).toContain('3 of 3 recent jobs');
    expect(on(report, `${p}-small`)).toEqual(['redis.bullmq-remove-on-fail']);
    expect(on(report, `${p}-keep`)).toEqual([]);
  });

  it('lockDuration (BullMQ default 30 s) below a measured p99 of 60 s; a 2 s p99 passes', () => {
    expect(on(report, `${p}-slow`)).toEqual(['redis.bullmq-lock-duration-below-processing-time']);
    expect(report.checks.find((c) => c.target === `${p}-keep` && c.ruleId === 'redis.bullmq-lock-duration-below-processing-time')?.status).toBe('pass');
  });

  it('a stream trimmed (XTRIM MAXLEN 2) while 10 entries were pending; an untrimmed one passes', () => {
    expect(on(report, `${p}-trimmed`)).toEqual(['redis.stream-trimmed-while-pending']);
    expect(report.findings.find((f) => f.target === `${p}-trimmed`)?.message).toMatch(/^8 pending entries of group g/);
    expect(on(report, `${p}-fresh`)).toEqual([]);
  });

  it('pending entries idle for an hour (claim time 60 s × 10) are stranded; fresh ones are not; a 1 h claim time passes', async () => {
    expect(on(report, `${p}-stranded`)).toEqual(['redis.stream-stranded-pending-entries']);
    expect(report.findings.find((f) => f.target === `${p}-stranded`)?.message).toMatch(/^3 pending entries of group g/);
    const relaxed = await audit(adapter, `${p}-stranded`, { thresholds: { 'redis.stream-stranded-pending-entries': { claimIdleMs: 3_600_000 } } });
    expect(on(relaxed, `${p}-stranded`)).toEqual([]);
  });

  it('the shared server (save "" and appendonly no) has no persistence; its noeviction policy passes', () => {
    const server = report.findings.filter((f) => f.queueId === null).map((f) => f.ruleId);
    expect(server).toEqual(['redis.no-persistence']);
    expect(report.checks.find((c) => c.ruleId === 'redis.maxmemory-policy')?.status).toBe('pass');
  });
});

describe('Redis audit: server settings on private servers', () => {
  it('noeviction + appendonly yes passes; allkeys-lru without persistence fails both; CONFIG renamed: policy from INFO, persistence not checked', async () => {
    const good = await privateRedis(['--save', '', '--appendonly', 'yes', '--maxmemory-policy', 'noeviction']);
    const bad = await privateRedis(['--save', '', '--appendonly', 'no', '--maxmemory-policy', 'allkeys-lru']);
    const hidden = await privateRedis(['--save', '', '--appendonly', 'no', '--rename-command', 'CONFIG', '""']);
    try {
      const results: Record<string, AuditReport> = {};
      for (const [name, s] of Object.entries({ good, bad, hidden })) {
        const c = new Redis({ port: s.port, host: '127.0.0.1' });
        await c.xadd('events', '*', 'body', '{}');
        c.disconnect();
        const a = createRedisAdapter({ kind: 'redis', url: `redis://127.0.0.1:${String(s.port)}` });
        results[name] = await audit(a, '*');
        await a.close();
      }
      expect(results.good?.findings.map((f) => f.ruleId)).toEqual([]);
      expect(results.good?.checks.filter((c) => c.queueId === null).map((c) => `${c.ruleId}:${c.status}`).sort()).toEqual(['redis.maxmemory-policy:pass', 'redis.no-persistence:pass']);
      expect(results.bad?.findings.map((f) => f.ruleId).sort()).toEqual(['redis.maxmemory-policy', 'redis.no-persistence']);
      expect(results.bad?.findings.find((f) => f.ruleId === 'redis.maxmemory-policy')?.message).toContain('allkeys-lru');
      // CONFIG renamed away: the policy (noeviction) is read from INFO memory; AOF off is read from INFO
      // persistence, but the RDB save schedule is not in INFO, so persistence stays not checked.
      expect(results.hidden?.findings).toEqual([]);
      expect(results.hidden?.checks.filter((c) => c.queueId === null).map((c) => `${c.ruleId}:${c.status}`)).toEqual(['redis.maxmemory-policy:pass', 'redis.no-persistence:not-checked']);
      expect(results.hidden?.checks.find((c) => c.ruleId === 'redis.maxmemory-policy')?.note).toContain("read from INFO memory maxmemory_policy (CONFIG GET is not available: ERR unknown command 'CONFIG')");
      const hiddenPersistence = results.hidden?.checks.find((c) => c.ruleId === 'redis.no-persistence')?.note ?? '';
      expect(hiddenPersistence).toMatch(/^not checked: AOF is off \(INFO persistence aof_enabled:0\), but whether RDB snapshots are scheduled cannot be read/);
      // The refusal is quoted without the setting Redis echoed from the first CONFIG GET.
      expect(hiddenPersistence).not.toContain('maxmemory-policy');
    } finally {
      await good.stop();
      await bad.stop();
      await hidden.stop();
    }
  }, 60_000);
});

describe('Redis audit: CONFIG renamed away (managed services) falls back to INFO', () => {
  it('allkeys-lru is found from INFO memory, and the CLI exits non-zero under --fail-on warning; AOF on passes from INFO persistence', async () => {
    const lru = await privateRedis(['--save', '', '--appendonly', 'no', '--maxmemory-policy', 'allkeys-lru', '--rename-command', 'CONFIG', '""']);
    const aof = await privateRedis(['--save', '', '--appendonly', 'yes', '--rename-command', 'CONFIG', '""']);
    const home = mkdtempSync(join(tmpdir(), 'qs-audit-redis-cli-'));
    try {
      for (const s of [lru, aof]) {
        const c = new Redis({ port: s.port, host: '127.0.0.1' });
        await expect(c.call('CONFIG', 'GET', 'maxmemory-policy')).rejects.toThrow(/unknown command 'CONFIG'/);
        await c.xadd('events', '*', 'body', '{}');
        c.disconnect();
      }
      const a = createRedisAdapter({ kind: 'redis', url: `redis://127.0.0.1:${String(lru.port)}` });
      const facts = await a.audit!.collect({ pattern: '*' });
      await a.close();
      expect(facts.servers[0]).toMatchObject({ maxmemoryPolicy: 'allkeys-lru', appendonly: 'no', save: null, configError: "ERR unknown command 'CONFIG'" });
      expect(facts.notes.join('\n')).toMatch(/CONFIG GET is not available \(ERR unknown command 'CONFIG'\); read from INFO instead: maxmemory-policy allkeys-lru \(INFO memory maxmemory_policy\), appendonly no \(INFO persistence aof_enabled:0\); the RDB save schedule is not in INFO/);
      const report = evaluateAudit([facts], { config: defaultProjectConfig().audit, measurements: new Map(), now: Date.now() });
      const finding = report.findings.find((f) => f.ruleId === 'redis.maxmemory-policy');
      expect(finding?.message).toMatch(/^maxmemory-policy is allkeys-lru on .* \(read from INFO memory: CONFIG GET is not available\)/);
      expect(finding?.evidence).toMatchObject({ maxmemoryPolicy: 'allkeys-lru', source: "INFO memory maxmemory_policy (CONFIG GET is not available: ERR unknown command 'CONFIG')" });
      expect(report.checks.find((c) => c.ruleId === 'redis.no-persistence')?.status).toBe('not-checked');

      const run = await runCli(home, ['audit', `redis://127.0.0.1:${String(lru.port)}`, '--fail-on', 'warning']);
      expect(run.code).toBe(EXIT.FINDINGS);
      expect(run.stdout).toContain('redis.maxmemory-policy');
      expect(run.stdout).toContain('allkeys-lru');

      const b = createRedisAdapter({ kind: 'redis', url: `redis://127.0.0.1:${String(aof.port)}` });
      const aofReport = evaluateAudit([await b.audit!.collect({ pattern: '*' })], { config: defaultProjectConfig().audit, measurements: new Map(), now: Date.now() });
      await b.close();
      expect(aofReport.findings).toEqual([]);
      expect(aofReport.checks.filter((c) => c.queueId === null).map((c) => `${c.ruleId}:${c.status}`)).toEqual(['redis.maxmemory-policy:pass', 'redis.no-persistence:pass']);
      expect(aofReport.checks.find((c) => c.ruleId === 'redis.no-persistence')?.note).toContain('INFO persistence aof_enabled:1');
      expect((await runCli(home, ['audit', `redis://127.0.0.1:${String(aof.port)}`, '--fail-on', 'warning'])).code).toBe(EXIT.OK);
    } finally {
      await lru.stop();
      await aof.stop();
      rmSync(home, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('Redis audit: nothing to audit without a pattern', () => {
  it('an empty server, and one holding only a list, exit 4 naming why (not "No queue matches  on …" with an empty pattern)', async () => {
    const s = await privateRedis(['--save', '', '--appendonly', 'no']);
    const home = mkdtempSync(join(tmpdir(), 'qs-audit-redis-empty-'));
    try {
      const url = `redis://127.0.0.1:${String(s.port)}`;
      const empty = await runCli(home, ['audit', url]);
      expect(empty.code).toBe(EXIT.QUEUE_NOT_FOUND);
      expect(empty.stderr).toContain(`No queue to audit on 127.0.0.1:${String(s.port)}: it has no queues. Nothing was audited (server-level checks alone are not a pass).`);
      const c = new Redis({ port: s.port, host: '127.0.0.1' });
      await c.rpush('outbox', '{}');
      c.disconnect();
      const listOnly = await runCli(home, ['audit', url, '--fail-on', 'none']);
      expect(listOnly.code).toBe(EXIT.QUEUE_NOT_FOUND);
      expect(listOnly.stderr).toContain('it holds only queues with no configuration to audit: outbox (redis-list)');
    } finally {
      await s.stop();
      rmSync(home, { recursive: true, force: true });
    }
  }, 60_000);
});
