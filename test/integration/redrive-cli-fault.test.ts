import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import amqp from 'amqplib';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type CliIo } from '../../core/cli/main';
import { readSnapshot } from '../../core/snapshot/reader';
import { AMQP_URL, REDIS_URL, uniqueName } from './env';

/**
 * The issue's reliability test at the CLI level: `queuescope redrive` (engine + real mover) in a
 * child process is SIGKILLed at a random point of a 10,000-message redrive, ≥ 10 trials per broker
 * (QS_REDRIVE_CLI_FAULT_TRIALS raises or lowers it). After each kill, every original message (by
 * the id in its body) is in the DLQ or the target — zero lost — duplicates are counted and
 * reported, every message found in the target is in the run's backup (the backup is written before
 * publishing), and running the CLI again completes the redrive (Redis). RabbitMQ runs client-side
 * (`--no-native`): a dynamic shovel keeps running inside the broker when the CLI dies.
 */

const N = Number(process.env.QS_REDRIVE_CLI_FAULT_N ?? 10_000);
const TRIALS = Number(process.env.QS_REDRIVE_CLI_FAULT_TRIALS ?? 10);
const CHILD = join(__dirname, 'fixtures', 'redrive-cli-child.ts');
const TSX_LOADER = pathToFileURL(join(__dirname, '..', '..', 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;

let home: string;
beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'qs-rd-fault-'));
});
afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

/**
 * Runs the CLI in a child and SIGKILLs it as soon as a progress line reports at least a random
 * 2–60 % of `total` processed, so every trial is killed mid-run however fast the machine is (a
 * kill after a random delay let fast runs finish first). Returns whether it was killed before finishing.
 */
function runAndKill(args: string[], total: number, rand: () => number): Promise<{ killed: boolean; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX_LOADER, CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, QUEUESCOPE_HOME: home } });
    const killAt = Math.max(1, Math.floor((0.02 + rand() * 0.58) * total));
    let stderr = '';
    let pending = '';
    let killed = false;
    child.stderr.on('data', (d: Buffer) => {
      const text = d.toString();
      stderr += text;
      pending += text;
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        const m = /"type":"progress","status":"running","processed":(\d+)/.exec(line);
        if (!killed && m !== null && Number(m[1]) >= killAt && child.exitCode === null) killed = child.kill('SIGKILL');
      }
    });
    child.stdout.resume();
    child.on('error', reject);
    child.on('exit', (code) => {
      resolve({ killed, stderr, code });
    });
  });
}

async function cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) }, env: { QUEUESCOPE_HOME: home } };
  return { code: await main(argv, io), stdout, stderr };
}

/** Ids held by the first backup of `dlq` (the killed run's; names end in the ISO start time, so they sort by time). */
async function killedRunBackupIds(dlq: string, key: (body: string) => number): Promise<Set<number>> {
  const dir = join(home, 'backups');
  const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.startsWith(`redrive-${dlq}-`) && f.endsWith('.jsonl')).sort();
  const ids = new Set<number>();
  const last = files[0];
  if (last === undefined) return ids;
  try {
    for await (const item of readSnapshot(join(dir, last))) if (item.type === 'message') ids.add(key(item.message.body.data));
  } catch (e) {
    // A line cut by the kill: everything before it was read.
    if (process.env.QS_REDRIVE_CLI_FAULT_DEBUG) console.log('backup read stopped:', e instanceof Error ? e.message.slice(0, 300) : e, 'ids so far', ids.size);
  }
  return ids;
}

/** One line: how a trial that was not killed ended (exit code, last progress line, last other stderr). */
function endedBefore(code: number | null, stderr: string): string {
  const lines = stderr.split('\n').filter((l) => l.trim() !== '');
  const lastProgress = lines.filter((l) => l.includes('"progress"')).at(-1) ?? '(no progress line)';
  const other = lines.filter((l) => !l.includes('"progress"')).join(' ').slice(-400);
  return `exit ${String(code)}; last progress ${lastProgress}; ${other}`;
}

/** The failure message of the "enough trials were killed" check: why each other trial ended first. */
function notKilled(reports: TrialReport[]): string {
  return `trials not killed mid-run: ${reports.filter((r) => !r.killed).map((r) => `#${r.trial} ${r.ended ?? ''}`).join(' | ')}`;
}

function mulberry(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface TrialReport {
  trial: number;
  killed: boolean;
  /** For a trial that was not killed: the CLI's exit code and the tail of its stderr (why it ended first). */
  ended?: string;
  inDlq: number;
  inTarget: number;
  duplicates: number;
  lost: number;
}

describe('SIGKILL during a CLI redrive (Redis stream)', () => {
  const redis = new Redis(REDIS_URL);
  afterAll(async () => {
    await redis.quit();
  });

  it(`${TRIALS} trials of ${N} messages: zero lost, duplicates counted, target ⊆ backup, a second run completes`, { timeout: 600_000 }, async () => {
    const rand = mulberry(Number(process.env.QS_REDRIVE_CLI_FAULT_SEED ?? Date.now() % 100_000));
    const reports: TrialReport[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const dlq = uniqueName('rdfault-dlq');
      const target = uniqueName('rdfault-work');
      try {
        // The target must exist: an empty stream (XADD then XDEL keeps the key).
        const marker = await redis.xadd(target, '*', 'body', '{}');
        if (marker !== null) await redis.xdel(target, marker);
        for (let i = 0; i < N; i += 1000) {
          const p = redis.pipeline();
          for (let k = i; k < Math.min(N, i + 1000); k++) p.xadd(dlq, '*', 'body', JSON.stringify({ k, orderId: `A-${k}` }), 'x-last-error', 'ETIMEDOUT');
          await p.exec();
        }
        const { killed, code, stderr } = await runAndKill(['redrive', REDIS_URL, `stream:${dlq}`, '--to', `stream:${target}`, '--yes', '--json', '--batch', '200', '--rate', '8000'], N, rand);
        if (!killed && code !== 0) console.log(`trial ${trial}: the CLI exited ${String(code)} before the kill: ${stderr.split('\n').filter((l) => !l.includes('"progress"')).join(' ').slice(-600)}`);
        const count = new Map<number, number>();
        let inDlq = 0;
        let inTarget = 0;
        const targetIds = new Set<number>();
        for (const [key, isTarget] of [
          [dlq, false],
          [target, true],
        ] as const) {
          const entries = await redis.xrange(key, '-', '+');
          for (const [, fields] of entries) {
            const body = fields[fields.indexOf('body') + 1] ?? '{}';
            const k = (JSON.parse(body) as { k: number }).k;
            count.set(k, (count.get(k) ?? 0) + 1);
            if (isTarget) {
              inTarget++;
              targetIds.add(k);
            } else inDlq++;
          }
        }
        let lost = 0;
        let duplicates = 0;
        for (let k = 0; k < N; k++) {
          const c = count.get(k) ?? 0;
          if (c === 0) lost++;
          if (c > 1) duplicates += c - 1;
        }
        reports.push({ trial, killed, ended: killed ? undefined : endedBefore(code, stderr), inDlq, inTarget, duplicates, lost });
        expect(lost, `trial ${trial}: lost messages`).toBe(0);
        const backup = await killedRunBackupIds(dlq, (b) => (JSON.parse(b) as { k: number }).k);
        for (const k of targetIds) if (!backup.has(k)) throw new Error(`trial ${trial}: message ${k} is in the target but not in the backup`);
        const again = await cli(['redrive', REDIS_URL, `stream:${dlq}`, '--to', `stream:${target}`, '--yes', '--json']);
        expect(again.code, again.stderr).toBe(0);
        expect(await redis.xlen(dlq)).toBe(0);
        expect(await redis.xlen(target)).toBe(N + duplicates);
      } finally {
        await redis.del(dlq, target);
      }
    }
    console.log(`redrive CLI SIGKILL (Redis stream, ${N} messages):\n${reports.map((r) => `  trial ${r.trial}: killed=${r.killed} dlq=${r.inDlq} target=${r.inTarget} duplicates=${r.duplicates} lost=${r.lost}`).join('\n')}`);
    expect(reports.filter((r) => r.killed).length, notKilled(reports)).toBeGreaterThanOrEqual(Math.min(TRIALS, Math.ceil(TRIALS / 2)));
  });
});

describe('SIGKILL during a CLI redrive (RabbitMQ)', () => {
  let conn: amqp.ChannelModel;
  let ch: amqp.ConfirmChannel;
  beforeAll(async () => {
    conn = await amqp.connect(AMQP_URL, { noDelay: true });
    ch = await conn.createConfirmChannel();
  });
  afterAll(async () => {
    await conn.close().catch(() => undefined);
  });

  async function drainIds(queue: string): Promise<number[]> {
    const ids: number[] = [];
    const c = await conn.createChannel();
    await c.prefetch(1000);
    const expected = (await c.checkQueue(queue)).messageCount;
    await new Promise<void>((resolve) => {
      if (expected === 0) {
        resolve();
        return;
      }
      void c.consume(
        queue,
        (m) => {
          if (m === null) return;
          ids.push((JSON.parse(m.content.toString()) as { k: number }).k);
          if (ids.length >= expected) resolve();
        },
        { noAck: true },
      );
    });
    await c.close();
    return ids;
  }

  it(`${TRIALS} trials of ${N} persistent messages: zero lost, duplicates counted, target ⊆ backup`, { timeout: 900_000 }, async () => {
    const rand = mulberry(Number(process.env.QS_REDRIVE_CLI_FAULT_SEED ?? Date.now() % 100_000) + 1);
    const reports: TrialReport[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const dlq = uniqueName('rdfault-dlq');
      const target = uniqueName('rdfault-work');
      try {
        await ch.assertQueue(dlq, { durable: true });
        await ch.assertQueue(target, { durable: true });
        for (let k = 0; k < N; k++) {
          if (!ch.sendToQueue(dlq, Buffer.from(JSON.stringify({ k })), { persistent: true, messageId: `m-${k}`, headers: { 'x-last-error': 'HTTP 503' } })) await new Promise((r) => ch.once('drain', r));
          if (k % 2000 === 1999) await ch.waitForConfirms();
        }
        await ch.waitForConfirms();
        // Client-side (--no-native): a dynamic shovel would go on inside the broker after the CLI dies.
        const { killed, code, stderr } = await runAndKill(['redrive', AMQP_URL, dlq, '--to', target, '--yes', '--json', '--batch', '250', '--rate', '6000', '--no-native'], N, rand);
        if (!killed && code !== 0) console.log(`trial ${trial}: the CLI exited ${String(code)} before the kill: ${stderr.split('\n').filter((l) => !l.includes('"progress"')).join(' ').slice(-600)}`);
        // The killed connection's unacked messages go back to the DLQ once the broker notices.
        let settled = 0;
        for (let i = 0; i < 100; i++) {
          const a = await ch.checkQueue(dlq);
          const b = await ch.checkQueue(target);
          if (a.messageCount + b.messageCount >= N && a.consumerCount === 0) {
            settled = a.messageCount + b.messageCount;
            break;
          }
          await new Promise((r) => setTimeout(r, 100));
        }
        expect(settled).toBeGreaterThanOrEqual(N);
        const inDlqIds = await drainIds(dlq);
        const inTargetIds = await drainIds(target);
        const count = new Map<number, number>();
        for (const k of [...inDlqIds, ...inTargetIds]) count.set(k, (count.get(k) ?? 0) + 1);
        let lost = 0;
        let duplicates = 0;
        for (let k = 0; k < N; k++) {
          const c = count.get(k) ?? 0;
          if (c === 0) lost++;
          if (c > 1) duplicates += c - 1;
        }
        reports.push({ trial, killed, ended: killed ? undefined : endedBefore(code, stderr), inDlq: inDlqIds.length, inTarget: inTargetIds.length, duplicates, lost });
        expect(lost, `trial ${trial}: lost messages`).toBe(0);
        const backup = await killedRunBackupIds(dlq, (b) => (JSON.parse(b) as { k: number }).k);
        const notBackedUp = [...new Set(inTargetIds)].filter((k) => !backup.has(k));
        if (notBackedUp.length > 0) throw new Error(`trial ${trial}: ${notBackedUp.length} of ${inTargetIds.length} messages in the target are not in the backup (${backup.size} backed up), e.g. ${notBackedUp.slice(0, 5).join(', ')}`);
      } finally {
        await ch.deleteQueue(dlq).catch(() => undefined);
        await ch.deleteQueue(target).catch(() => undefined);
      }
    }
    console.log(`redrive CLI SIGKILL (RabbitMQ, ${N} messages):\n${reports.map((r) => `  trial ${r.trial}: killed=${r.killed} dlq=${r.inDlq} target=${r.inTarget} duplicates=${r.duplicates} lost=${r.lost}`).join('\n')}`);
    expect(reports.filter((r) => r.killed).length, notKilled(reports)).toBeGreaterThanOrEqual(Math.min(TRIALS, Math.ceil(TRIALS / 2)));
  });
});
