/**
 * Redrive engine benchmark (issue 4; `npm run bench` prints it through bench/run.ts): a whole
 * `runRedrive` — decisions with failure classification, the backup snapshot written and fsynced
 * before every batch, progress through the OperationManager, the audit-log entry — over the real
 * Redis mover, against the same mover with do-nothing hooks in the same run (the engine's
 * overhead as a ratio), and the engine run's peak RSS measured in a child process of its own
 * (`process.resourceUsage().maxRSS`), for the "a 1,000,000-message redrive keeps peak RSS
 * under 300 MB".
 *
 * Size: QUEUESCOPE_BENCH_REDRIVE_ENGINE_N (stream entries, default 200,000 so the bench stays
 * under two minutes; set 1000000 for the figure). Runs in Redis database
 * QUEUESCOPE_BENCH_REDIS_DB (default 15) and deletes what it creates; the backup and audit log go
 * to a temporary folder that is removed.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { createAdapter } from '../core/adapters';
import type { MoveHooks } from '../core/adapters/redrive-types';
import { runRedrive, type RedriveResult } from '../core/redrive/engine';
import { AuditLog } from '../core/services/audit-log';
import { OperationManager } from '../core/services/operations';

export interface EngineBenchRow {
  name: string;
  messages: number;
  seconds: number;
  perSecond: number;
  peakRssMb: number | null;
  target: string;
  met: string;
}

function benchUrl(): string {
  const u = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  u.pathname = `/${process.env.QUEUESCOPE_BENCH_REDIS_DB ?? '15'}`;
  return u.toString();
}

const body = (i: number): string => JSON.stringify({ orderId: `A-${100000 + i}`, idempotencyKey: `A-${100000 + i}:charge`, amountCents: 1000 + (i % 5000), customerId: `C-${i % 977}` });

async function seedStream(redis: Redis, key: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1000) {
    const p = redis.pipeline();
    for (let k = i; k < Math.min(n, i + 1000); k++) p.xadd(key, '*', 'body', body(k), 'x-last-error', k % 10 === 0 ? 'HTTP 422 Unprocessable Entity' : 'HTTP 503 Service Unavailable');
    await p.exec();
  }
}

async function emptyStream(redis: Redis, key: string): Promise<void> {
  const id = await redis.xadd(key, '*', 'x', '1');
  if (id !== null) await redis.xdel(key, id);
}

/** Child: one engine run over `n` entries; prints `{ seconds, moved, skipped, maxRssMb, backupBytes }`. */
async function child(n: number): Promise<void> {
  const url = benchUrl();
  const redis = new Redis(url);
  const tag = randomBytes(4).toString('hex');
  const dlq = `qs-bench-engine-${tag}-dlq`;
  const target = `qs-bench-engine-${tag}-work`;
  const home = mkdtempSync(join(tmpdir(), 'qs-bench-engine-'));
  const adapter = createAdapter({ kind: 'redis', url });
  try {
    await seedStream(redis, dlq, n);
    await emptyStream(redis, target);
    const ops = new OperationManager();
    const env = { adapter, connectionLabel: 'redis://127.0.0.1:6379/15', actor: 'cli' as const, auditLog: new AuditLog({ configDir: home }), configDir: home };
    const t0 = performance.now();
    const op = ops.start('redrive', 'bench', (ctx) => runRedrive(env, { dlqId: `stream:${dlq}`, selection: { kind: 'all' }, targetQueueId: `stream:${target}`, batchSize: 1000, native: 'never' }, ctx));
    const final = await ops.wait(op.id);
    const seconds = (performance.now() - t0) / 1000;
    if (final.status !== 'completed') throw new Error(`engine run ${final.status}: ${final.errors.at(-1)?.message ?? ''}`);
    const r = final.result as RedriveResult;
    const backupBytes = r.backupPath !== null ? statSync(r.backupPath).size : 0;
    process.stdout.write(`${JSON.stringify({ seconds, moved: r.moved, skipped: r.skipped, maxRssMb: process.resourceUsage().maxRSS / 1024, backupBytes })}\n`);
  } finally {
    await redis.del(dlq, target);
    await redis.quit();
    await adapter.close();
    rmSync(home, { recursive: true, force: true });
  }
}

/** The mover alone (no backup, no classification), in this process, same size: the baseline. */
async function moverOnly(n: number): Promise<{ seconds: number; moved: number }> {
  const url = benchUrl();
  const redis = new Redis(url);
  const tag = randomBytes(4).toString('hex');
  const dlq = `qs-bench-engine-${tag}-dlq`;
  const target = `qs-bench-engine-${tag}-work`;
  const adapter = createAdapter({ kind: 'redis', url });
  try {
    await seedStream(redis, dlq, n);
    await emptyStream(redis, target);
    const mover = adapter.redrive;
    if (mover === undefined) throw new Error('the Redis adapter has no redrive mover');
    const hooks: MoveHooks = { gate: () => Promise.resolve(), decide: () => ({ action: 'move', targetQueueId: `stream:${target}` }), beforeMove: () => Promise.resolve(), onBatch: () => undefined };
    const t0 = performance.now();
    const s = await mover.moveClientSide({ sourceQueueId: `stream:${dlq}`, batchSize: 1000, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, hooks);
    return { seconds: (performance.now() - t0) / 1000, moved: s.moved };
  } finally {
    await redis.del(dlq, target);
    await redis.quit();
    await adapter.close();
  }
}

function runChild(n: number): Promise<{ seconds: number; moved: number; skipped: number; maxRssMb: number; backupBytes: number }> {
  const loader = pathToFileURL(join(__dirname, '..', 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ['--import', loader, __filename, '--child', String(n)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.on('error', reject);
    c.on('exit', (code) => {
      if (code !== 0) reject(new Error(`engine bench child exited ${String(code)}`));
      else resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as { seconds: number; moved: number; skipped: number; maxRssMb: number; backupBytes: number });
    });
  });
}

/** Rows for bench/run.ts. */
export async function benchRedriveEngine(): Promise<EngineBenchRow[]> {
  const n = Number(process.env.QUEUESCOPE_BENCH_REDRIVE_ENGINE_N ?? 200_000);
  const base = await moverOnly(n);
  const eng = await runChild(n);
  const baseRate = base.moved / base.seconds;
  const engRate = eng.moved / eng.seconds;
  return [
    { name: `redrive engine baseline: Redis stream mover alone (no backup, no decisions)`, messages: base.moved, seconds: base.seconds, perSecond: baseRate, peakRssMb: null, target: 'baseline', met: '' },
    {
      name: `redrive engine: Redis stream, ${n.toLocaleString('en')} examined, ${eng.skipped.toLocaleString('en')} non-retryable stay, fsynced backup ${(eng.backupBytes / 1024 / 1024).toFixed(0)} MB, audit entry (${(engRate / baseRate).toFixed(2)}× the mover alone)`,
      messages: eng.moved,
      seconds: eng.seconds,
      perSecond: engRate,
      peakRssMb: eng.maxRssMb,
      target: n >= 1_000_000 ? 'peak RSS < 300 MB (1M)' : `peak RSS < 300 MB (1M: QUEUESCOPE_BENCH_REDRIVE_ENGINE_N=1000000)`,
      met: eng.maxRssMb < 300 ? (n >= 1_000_000 ? 'yes' : `yes at ${n.toLocaleString('en')}`) : 'NO',
    },
  ];
}

if (process.argv[2] === '--child') {
  child(Number(process.argv[3])).then(
    () => process.exit(0),
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(1);
    },
  );
}
