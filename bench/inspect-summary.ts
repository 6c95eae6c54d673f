/**
 * Per-queue "redelivery safety" summary benchmark (issue 3; `npm run bench` prints it through
 * bench/run.ts). Target: the summary of 100,000 messages in the app in < 2 s.
 *
 * Measures what the app runs for the summary — `inspectQueue` (core/inspect): adapter peeks in
 * pages, `analyzeMessage` per message into the streaming summary, per-message rows, duplicate
 * groups — end to end, on 100,000 ~1 KiB JSON messages (a mix of ID-only commands with
 * business-derived keys, random-UUID keys, missing keys, full mutable orders, and re-sends that
 * form duplicate groups):
 * - from a snapshot file (JSONL, through the snapshot adapter), plain and gzip-compressed;
 * - from a Redis list (LRANGE pages through the Redis adapter) in its own database
 *   (`QUEUESCOPE_BENCH_REDIS_DB`, default 15), removed afterwards.
 * with the options the app's `inspect.queue` handler passes (built-in rules, dead-letter comparison
 * on — these queues have no dead-letter partners —, the default page size).
 * Each row: an untimed warm-up run on 5,000 messages, then {@link REPS} timed runs; the row is the
 * median run by CPU time (every run's CPU seconds are in `cpuRuns`, the load average in `load`).
 *
 * The same code's CPU time varies by up to 2× between runs on a shared 2-core VM (2026-12-02: 1.5 s
 * in one CI run, 3.5 s in the next), with the load average low in both. So each row also records what
 * the machine was doing while it ran: the hypervisor's steal time (`/proc/stat`, share of both CPUs'
 * time during the timed runs; Linux only) and a same-moment machine reference, `JSON.parse` of 10,000
 * of the bench bodies timed just before each run (msg/s by CPU time; the median is reported). A slow
 * row beside a slow reference is the machine, not the code.
 *
 * `npm run bench` (bench/run.ts) runs this file with `--json` in a process of its own, before the
 * broker rows (which leave Redis and RabbitMQ busy for a while), as it does the analysis rows.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createAdapter } from '../core/adapters';
import { inspectQueue, type InspectQueueOptions } from '../core/inspect/inspect';
import { resolveInspectSettings } from '../core/inspect/settings';
import { SnapshotWriter } from '../core/snapshot/writer';
import type { QueueMessage, QueueSummary } from '../shared/domain';

/**
 * One row: `seconds` is the wall time of the inspection (reading + analysis + summary), seeding
 * excluded; `cpuSeconds` the CPU time of this process over the same span (`process.cpuUsage()`,
 * user + system, all threads: GC and I/O threads included; the broker's own CPU is not).
 */
export interface InspectSummaryResult {
  name: string;
  messages: number;
  seconds: number;
  perSecond: number;
  cpuSeconds: number;
  /** Messages per CPU second (`messages / cpuSeconds`). */
  cpuPerSecond: number;
  peakRssMb: number;
  flagged: number;
  duplicateGroups: number;
  /** CPU seconds of every timed run, in run order (the row is the median one). */
  cpuRuns: number[];
  /** 1-minute load average before and after the timed runs (CPU time is noisy on a busy machine). */
  load: [number, number];
  /** Hypervisor steal time during the timed runs, % of both CPUs' time (`/proc/stat`); null where unreadable (not Linux). */
  stealPercent: number | null;
  /** Median of the same-moment references: `JSON.parse` of 10,000 bench bodies, msg/s by CPU time, timed before each run. */
  referencePerCpuSecond: number;
}

const COUNT = 100_000;
/** Timed runs per row (median by CPU time reported); `INSPECT_BENCH_REPS` overrides. */
const REPS = Math.max(1, Math.floor(Number(process.env.INSPECT_BENCH_REPS ?? '5')) || 5);
/** Bodies the same-moment `JSON.parse` reference parses before each run (few enough not to weigh on the runs' heap). */
const REFERENCE_COUNT = 10_000;

/** A ~1 KiB body in one of five styles; every 50th message re-sends an earlier order (same key). */
export function benchBody(i: number): { body: string; key: string | null } {
  const n = i % 50 === 49 ? i - 9 : i;
  const orderId = `A-${String(100000 + n)}`;
  const pad = 'x'.repeat(560);
  switch (n % 5) {
    case 0:
      return { body: JSON.stringify({ type: 'order.charge', orderId, operation: 'charge', idempotencyKey: `${orderId}:charge`, amountCents: 1000 + (n % 5000), currency: 'EUR', note: pad }), key: `${orderId}:charge` };
    case 1:
      return { body: JSON.stringify({ type: 'order.refund', orderId, amountCents: 500, reason: 'customer request', note: pad }), key: null };
    case 2: {
      const uuid = `${randomBytes(4).toString('hex')}-${randomBytes(2).toString('hex')}-4${randomBytes(2).toString('hex').slice(1)}-a${randomBytes(2).toString('hex').slice(1)}-${randomBytes(6).toString('hex')}`;
      return { body: JSON.stringify({ type: 'order.ship', orderId, idempotencyKey: uuid, carrier: 'dhl', note: pad }), key: uuid };
    }
    case 3:
      return { body: JSON.stringify({ orderId, operation: 'capture', idempotencyKey: `${orderId}:capture`, note: pad.slice(0, 700) }), key: `${orderId}:capture` };
    default:
      return {
        body: JSON.stringify({
          type: 'order.updated',
          order: {
            id: orderId,
            status: 'paid',
            customer: { id: `C-${String(n % 977)}`, email: 'buyer@example.com', shippingAddress: { line1: '1 Harbour St', city: 'Lisbon', country: 'PT' } },
            items: [
              { sku: 'SKU-100', qty: 1, unitPriceCents: 1200 },
              { sku: 'SKU-200', qty: 2, unitPriceCents: 800 },
            ],
            totalCents: 2800,
            updatedAt: '2026-11-29T10:00:00Z',
          },
          note: pad.slice(0, 300),
        }),
        key: null,
      };
  }
}

/** What the app's `inspect.queue` handler passes for a connection without inspect settings (core/inspect/api-handlers.ts). */
function appOptions(q: QueueSummary, limit: number | undefined): InspectQueueOptions {
  const settings = resolveInspectSettings([{ label: 'connection "bench"', inspect: { queues: [] } }], q, 'bench');
  return { rules: settings.rules, rulesSource: settings.source, ...(limit !== undefined ? { limit } : {}) };
}

function peakRss(): { stop: () => number } {
  let peak = process.memoryUsage.rss();
  const t = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 25);
  return {
    stop: () => {
      clearInterval(t);
      return Math.max(peak, process.memoryUsage.rss()) / 1024 / 1024;
    },
  };
}

/** Steal and total CPU ticks of all CPUs so far (`/proc/stat` line `cpu`), null where unreadable. */
function cpuTicks(): { steal: number; total: number } | null {
  try {
    const fields = (readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already in user/nice.
    const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
    const steal = fields[7];
    return steal === undefined || !Number.isFinite(total) ? null : { steal, total };
  } catch {
    return null;
  }
}

let referenceBodies: string[] | null = null;

/** `JSON.parse` of {@link REFERENCE_COUNT} bench bodies, msg/s by this process's CPU time. */
function referencePerCpuSecond(): number {
  referenceBodies ??= Array.from({ length: REFERENCE_COUNT }, (_, i) => benchBody(i).body);
  const cpu0 = process.cpuUsage();
  let keys = 0;
  for (const b of referenceBodies) keys += Object.keys(JSON.parse(b) as object).length;
  const cpu = process.cpuUsage(cpu0);
  if (keys === 0) throw new Error('the reference parsed nothing');
  return referenceBodies.length / Math.max(1e-6, (cpu.user + cpu.system) / 1e6);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function timed(name: string, run: (limit?: number) => Promise<{ analysed: number; flagged: number; duplicateGroups: number }>): Promise<InspectSummaryResult> {
  await run(5000); // warm-up
  referencePerCpuSecond(); // warm-up
  const load0 = loadavg()[0] ?? 0;
  const rows: InspectSummaryResult[] = [];
  const references: number[] = [];
  let steal = 0;
  let ticks = 0;
  for (let i = 0; i < REPS; i++) {
    references.push(referencePerCpuSecond());
    const ticks0 = cpuTicks();
    const rss = peakRss();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const r = await run();
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    const ticks1 = cpuTicks();
    if (ticks0 !== null && ticks1 !== null) {
      steal += ticks1.steal - ticks0.steal;
      ticks += ticks1.total - ticks0.total;
    }
    rows.push({ name, messages: r.analysed, seconds, perSecond: r.analysed / seconds, cpuSeconds, cpuPerSecond: r.analysed / cpuSeconds, peakRssMb: rss.stop(), flagged: r.flagged, duplicateGroups: r.duplicateGroups, cpuRuns: [], load: [0, 0], stealPercent: null, referencePerCpuSecond: 0 });
  }
  const mid = [...rows].sort((a, b) => a.cpuSeconds - b.cpuSeconds)[Math.floor(rows.length / 2)] as InspectSummaryResult;
  return { ...mid, cpuRuns: rows.map((r) => r.cpuSeconds), load: [load0, loadavg()[0] ?? 0], stealPercent: ticks > 0 ? (100 * steal) / ticks : null, referencePerCpuSecond: median(references) };
}

async function snapshotRow(dir: string, gzip = false): Promise<InspectSummaryResult> {
  const path = join(dir, gzip ? 'inspect-bench.jsonl.gz' : 'inspect-bench.jsonl');
  const queue: QueueSummary = {
    id: 'rabbitmq:%2F/bench.orders',
    name: 'bench.orders',
    broker: 'rabbitmq',
    kind: 'rabbitmq-classic',
    depth: COUNT,
    inFlight: 0,
    delayed: 0,
    consumers: 0,
    counts: {},
    deadLetterTargets: [],
    deadLetterSources: [],
    isDeadLetterQueue: false,
    capabilities: { canPeekNonDestructively: false, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: false, maxPeekWindow: 1000, peekStates: [] },
    config: {},
  };
  const w = await SnapshotWriter.create(path, { overwrite: true });
  await w.writeHeader({ exportedAt: Date.now(), source: { broker: 'rabbitmq', connection: 'bench', queue }, selection: 'all' });
  for (let i = 0; i < COUNT; i++) {
    const { body, key } = benchBody(i);
    const m: QueueMessage = {
      id: key ?? `#${String(i)}`,
      queueId: queue.id,
      queueName: queue.name,
      position: i,
      body: { encoding: 'utf8', data: body, sizeBytes: Buffer.byteLength(body), truncated: false },
      headers: {},
      properties: key !== null && i % 2 === 0 ? { messageId: key } : {},
      meta: { state: 'ready', enqueuedAt: 1_790_000_000_000 + i },
    };
    await w.writeMessage(m);
  }
  await w.finish();
  const adapter = createAdapter({ kind: 'snapshot', path });
  try {
    const [q] = await adapter.listQueues({});
    if (q === undefined) throw new Error('the bench snapshot has no queue');
    return await timed(`inspect summary, ${gzip ? 'gzip ' : ''}snapshot file (100k × ~1 KiB JSON)`, async (limit) => {
      const r = await inspectQueue(adapter, q.id, appOptions(q, limit));
      return { analysed: r.analysed, flagged: r.summary.flagged, duplicateGroups: r.summary.duplicateGroupCount };
    });
  } finally {
    await adapter.close();
  }
}

async function redisRow(): Promise<InspectSummaryResult> {
  const u = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  u.pathname = `/${process.env.QUEUESCOPE_BENCH_REDIS_DB ?? '15'}`;
  const key = `qs-bench-inspect-${randomBytes(4).toString('hex')}`;
  const redis = new Redis(u.toString());
  const adapter = createAdapter({ kind: 'redis', url: u.toString() });
  try {
    for (let start = 0; start < COUNT; start += 1000) {
      const batch: string[] = [];
      for (let i = start; i < Math.min(COUNT, start + 1000); i++) batch.push(benchBody(i).body);
      await redis.rpush(key, ...batch);
    }
    const q = await adapter.getQueue(`list:${key}`);
    return await timed('inspect summary, Redis list (100k × ~1 KiB JSON)', async (limit) => {
      const r = await inspectQueue(adapter, q.id, appOptions(q, limit));
      return { analysed: r.analysed, flagged: r.summary.flagged, duplicateGroups: r.summary.duplicateGroupCount };
    });
  } finally {
    await redis.del(key).catch(() => undefined);
    redis.disconnect();
    await adapter.close();
  }
}

/** The rows: snapshot file, gzip snapshot file, Redis list. */
export async function benchInspectSummary(): Promise<InspectSummaryResult[]> {
  const dir = await mkdtemp(join(tmpdir(), 'qs-bench-inspect-'));
  try {
    return [await snapshotRow(dir), await snapshotRow(dir, true), await redisRow()];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** One row's machine readings, for the table and the standalone print. */
export function machineNote(r: InspectSummaryResult): string {
  return `JSON.parse reference ${String(Math.round(r.referencePerCpuSecond / 1000))}k msg/s CPU, steal ${r.stealPercent === null ? 'unknown' : `${r.stealPercent.toFixed(1)} %`}, load ${r.load[0].toFixed(1)} → ${r.load[1].toFixed(1)}`;
}

// Run alone: `npx tsx bench/inspect-summary.ts` (a line per row), or `--json` (the rows, for bench/run.ts).
if (process.argv[1]?.endsWith('inspect-summary.ts') === true) {
  benchInspectSummary().then(
    (rows) => {
      if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(rows)}\n`);
      else {
        for (const r of rows) {
          process.stdout.write(
            `${r.name}: ${String(r.messages)} in ${r.seconds.toFixed(2)} s wall (${String(Math.round(r.perSecond))}/s), ${r.cpuSeconds.toFixed(2)} s CPU (${String(Math.round(r.cpuPerSecond))}/s; median of ${r.cpuRuns.map((c) => c.toFixed(2)).join(', ')}), peak RSS ${r.peakRssMb.toFixed(0)} MB, ${String(r.flagged)} flagged, ${String(r.duplicateGroups)} duplicate groups; ${machineNote(r)}\n`,
          );
        }
      }
      process.exit(0);
    },
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(1);
    },
  );
}
