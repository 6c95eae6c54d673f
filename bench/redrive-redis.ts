/**
 * Redis redrive benchmark (issue 4; `npm run bench` prints it through bench/run.ts).
 *
 * In one run, against the same Redis, each Queuescope move is timed beside its raw baseline:
 * - list: the mover's whole-list move vs raw pipelined `LMOVE src dst LEFT RIGHT` (1,000 per pipeline);
 * - stream: the mover vs raw `XRANGE` 1,000 + pipelined `XADD` + `XDEL`;
 * - BullMQ: `queue.retryJobs({ state: 'failed', count: 1000 })` alone vs the mover's native path
 *   (startNativeMove + status polling every 10 ms) and its client-side retry (every job read into
 *   the message model — one SORT_RO per 1,000, the next batch read ahead — decided, and retried
 *   as BullMQ's reprocessJob does, with the counter, in one script per 1,000);
 * target ≥ 0.5× the baseline. The client-side retry is bound by Redis time, not the client: on a
 * private Redis (INFO commandstats, load 6-7) its SORT_RO read took 4.4-6.4 µs/job and the retry
 * script 12-17 µs/job, against 3.7-6.7 µs/job for retryJobs' script (which resets no attempts, adds no
 * counter, checks no priority); the bench's median ratio (0.32× at load 6-7) is about the ratio of those
 * Redis times, so cutting client CPU does not raise it. Optionally a 1,000,000-element list redrive's peak RSS (< 300 MB).
 *
 * Sizes: QUEUESCOPE_BENCH_REDRIVE_N (list/stream messages, default 100,000),
 * QUEUESCOPE_BENCH_REDRIVE_JOBS (failed jobs, default 20,000; the issue's figure is 100,000 —
 * seeding them through a failing Worker takes ~1 s per 1,000), QUEUESCOPE_BENCH_REDRIVE_1M=1 for
 * the 1M-message RSS row, QUEUESCOPE_BENCH_REDRIVE_KINDS (default `list,stream,bullmq`) to run
 * only some of the rows, QUEUESCOPE_BENCH_REDRIVE_ROUNDS (default 1) BullMQ rounds on the same seeded
 * jobs, each retryJobs then client-side (re-failed in between; medians reported). Runs in database QUEUESCOPE_BENCH_REDIS_DB (default 15) and deletes what
 * it creates. The mover's hooks do nothing (no backup, no rate limit): this measures the mover.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { Queue, Worker } from 'bullmq';
import { createRedisAdapter, type RedisAdapter } from '../core/adapters/redis';
import type { MoveHooks, NativeMoveStatus, RedriveMover } from '../core/adapters/redrive-types';

/** One printed row: `ratio` is against the baseline row named in `target`. */
export interface RedriveBenchRow {
  name: string;
  items: number;
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

const body = (i: number): string =>
  JSON.stringify({ orderId: `A-${100000 + i}`, idempotencyKey: `A-${100000 + i}:charge`, amountCents: 1000 + (i % 5000), currency: 'EUR', customerId: `C-${i % 977}`, error: 'HTTP 503 upstream unavailable', at: 1_790_000_000_000 + i });

function hooksTo(target: string): MoveHooks {
  return { gate: () => Promise.resolve(), decide: () => ({ action: 'move', targetQueueId: target }), beforeMove: () => Promise.resolve(), onBatch: () => undefined };
}

async function timed<T>(fn: () => Promise<T>): Promise<{ seconds: number; peakRssMb: number; value: T }> {
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  const t0 = performance.now();
  try {
    const value = await fn();
    return { seconds: (performance.now() - t0) / 1000, peakRssMb: Math.max(peak, process.memoryUsage().rss) / 1024 / 1024, value };
  } finally {
    clearInterval(sampler);
  }
}

async function seedList(r: Redis, key: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1000) {
    const vals: string[] = [];
    for (let j = i; j < Math.min(n, i + 1000); j++) vals.push(body(j));
    await r.rpush(key, ...vals);
  }
}

async function seedStream(r: Redis, key: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1000) {
    const p = r.pipeline();
    for (let j = i; j < Math.min(n, i + 1000); j++) p.xadd(key, '*', 'body', body(j), 'error', 'HTTP 503', 'attempt', '3');
    await p.exec();
  }
}

/** The run with the median time (the upper median for an even count). */
function median<T extends { seconds: number }>(xs: T[]): T {
  return [...xs].sort((a, b) => a.seconds - b.seconds)[Math.floor(xs.length / 2)] as T;
}

function row(name: string, items: number, t: { seconds: number; peakRssMb: number }, target: string, met: string): RedriveBenchRow {
  return { name, items, seconds: t.seconds, perSecond: items / t.seconds, peakRssMb: t.peakRssMb, target, met };
}

function ratioRow(name: string, items: number, t: { seconds: number; peakRssMb: number }, base: RedriveBenchRow, min: number): RedriveBenchRow {
  const ratio = items / t.seconds / base.perSecond;
  return row(name, items, t, `≥ ${min}× ${base.name}`, `${ratio >= min ? 'yes' : 'NO'} (${ratio.toFixed(2)}×)`);
}

async function listRows(r: Redis, m: RedriveMover, p: string, n: number): Promise<RedriveBenchRow[]> {
  const [a, b, c, d] = [`${p}:la`, `${p}:lb`, `${p}:lc`, `${p}:ld`];
  await seedList(r, a, n);
  const raw = await timed(async () => {
    for (let i = 0; i < n; i += 1000) {
      const pl = r.pipeline();
      for (let j = i; j < Math.min(n, i + 1000); j++) pl.lmove(a, b, 'LEFT', 'RIGHT');
      await pl.exec();
    }
  });
  const base = row('raw pipelined LMOVE', n, raw, 'baseline', '');
  await seedList(r, c, n);
  const moved = await timed(() => m.moveClientSide({ sourceQueueId: `list:${c}`, batchSize: 1000, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, hooksTo(`list:${d}`)));
  if (moved.value.moved !== n || (await r.llen(d)) !== n) throw new Error(`list redrive moved ${moved.value.moved} of ${n}`);
  await r.del(a, b, c, d);
  return [base, ratioRow('redrive list (Queuescope)', n, moved, base, 0.5)];
}

async function streamRows(r: Redis, m: RedriveMover, p: string, n: number): Promise<RedriveBenchRow[]> {
  const [a, b, c, d] = [`${p}:sa`, `${p}:sb`, `${p}:sc`, `${p}:sd`];
  await seedStream(r, a, n);
  const raw = await timed(async () => {
    for (;;) {
      const entries = await r.xrangeBuffer(a, '-', '+', 'COUNT', 1000);
      if (entries.length === 0) return;
      const pl = r.pipeline();
      for (const [id, fields] of entries) pl.xadd(b, '*', ...fields).xdel(a, id);
      await pl.exec();
    }
  });
  const base = row('raw XRANGE + pipelined XADD/XDEL', n, raw, 'baseline', '');
  await seedStream(r, c, n);
  const moved = await timed(() => m.moveClientSide({ sourceQueueId: `stream:${c}`, batchSize: 1000, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, hooksTo(`stream:${d}`)));
  if (moved.value.moved !== n || (await r.xlen(d)) !== n) throw new Error(`stream redrive moved ${moved.value.moved} of ${n}`);
  await r.del(a, b, c, d);
  return [base, ratioRow('redrive stream (Queuescope)', n, moved, base, 0.5)];
}

/** Bench-only: puts retried jobs back into the failed set (as failing them again would), for the next measurement. */
async function refail(r: Redis, prefix: string, name: string): Promise<void> {
  await r.eval(
    `local now = tonumber(ARGV[1])
     local ids = redis.call('LRANGE', KEYS[1], 0, -1)
     for i = 1, #ids, 1000 do
       local chunk = {}
       for j = i, math.min(#ids, i + 999) do
         chunk[#chunk + 1] = now
         chunk[#chunk + 1] = ids[j]
         redis.call('HSET', ARGV[2] .. ids[j], 'finishedOn', now, 'failedReason', 'HTTP 503', 'atm', 1)
       end
       redis.call('ZADD', KEYS[2], unpack(chunk))
     end
     redis.call('DEL', KEYS[1], KEYS[3])
     return #ids`,
    3,
    `${prefix}:${name}:wait`,
    `${prefix}:${name}:failed`,
    `${prefix}:${name}:marker`,
    String(Date.now() - 1000),
    `${prefix}:${name}:`,
  );
}

async function bullmqRows(r: Redis, adapter: RedisAdapter, m: RedriveMover, prefix: string, n: number): Promise<RedriveBenchRow[]> {
  const name = 'payments';
  const id = `bullmq:${prefix}:${name}`;
  const q = new Queue(name, { connection: r, prefix });
  try {
    for (let i = 0; i < n; i += 1000) await q.addBulk(Array.from({ length: Math.min(1000, n - i) }, (_, k) => ({ name: 'charge', data: JSON.parse(body(i + k)) as unknown })));
    const wc = r.duplicate();
    const w = new Worker(
      name,
      () => {
        throw new Error('HTTP 503 upstream unavailable');
      },
      { connection: wc, prefix, concurrency: 200 },
    );
    w.on('error', () => undefined);
    while ((await q.getFailedCount()) < n) await new Promise((res) => setTimeout(res, 100));
    await w.close();
    wc.disconnect();

    // Rounds alternate the baseline and the client-side path on the same jobs (re-failed in
    // between), so load drift on a shared machine hits both alike; the rows give the medians.
    const rounds = Math.max(1, Number(process.env.QUEUESCOPE_BENCH_REDRIVE_ROUNDS ?? 1));
    const rawT: Awaited<ReturnType<typeof timed>>[] = [];
    const clientT: Awaited<ReturnType<typeof timed>>[] = [];
    const ratios: number[] = [];
    let nat: Awaited<ReturnType<typeof timed<NativeMoveStatus>>> | null = null;
    for (let round = 0; round < rounds; round++) {
      if (round > 0) await refail(r, prefix, name);
      const raw = await timed(() => q.retryJobs({ state: 'failed', count: 1000, timestamp: Date.now() }));
      rawT.push(raw);
      await refail(r, prefix, name);
      if (round === 0) {
        const dlq = await adapter.getQueue(id);
        if (!(await m.nativeMove(dlq, null)).available) throw new Error('native retry unavailable');
        nat = await timed(async () => {
          const h = await m.startNativeMove(dlq, null, null);
          for (;;) {
            const s = await m.nativeMoveStatus(h);
            if (s.status !== 'running') return s;
            await new Promise((res) => setTimeout(res, 10));
          }
        });
        if (nat.value.status !== 'completed' || nat.value.moved !== n) throw new Error(`native retry: ${JSON.stringify(nat.value)}`);
        await refail(r, prefix, name);
      }
      const client = await timed(() => m.moveClientSide({ sourceQueueId: id, state: 'failed', batchSize: 1000, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, hooksTo(id)));
      if (client.value.moved !== n) throw new Error(`client-side retry moved ${client.value.moved} of ${n}`);
      clientT.push(client);
      ratios.push(raw.seconds / client.seconds);
    }
    const base = row(`BullMQ queue.retryJobs alone${rounds > 1 ? ` (median of ${rounds})` : ''}`, n, median(rawT), 'baseline', '');
    const c = median(ratios.map((x) => ({ seconds: x, peakRssMb: 0 }))).seconds;
    return [
      base,
      ratioRow('BullMQ retry, whole queue (Queuescope native path)', n, nat as NonNullable<typeof nat>, base, 0.5),
      row(
        `BullMQ retry, client-side (filtered path, all selected)${rounds > 1 ? ` (median of ${rounds}; ratio = median of per-round ratios ${ratios.map((x) => x.toFixed(2)).join('/')})` : ''}`,
        n,
        median(clientT),
        `${base.name} (informative)`,
        `${c.toFixed(2)}×`,
      ),
    ];
  } finally {
    await q.obliterate({ force: true }).catch(() => undefined);
    await q.close();
  }
}

async function millionRow(r: Redis, m: RedriveMover, p: string): Promise<RedriveBenchRow> {
  const n = 1_000_000;
  const [a, b] = [`${p}:ma`, `${p}:mb`];
  await seedList(r, a, n);
  const t = await timed(() => m.moveClientSide({ sourceQueueId: `list:${a}`, batchSize: 1000, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, hooksTo(`list:${b}`)));
  if (t.value.moved !== n) throw new Error(`1M list redrive moved ${t.value.moved}`);
  await r.del(a, b);
  return row('redrive 1,000,000-message list: peak RSS', n, t, 'peak RSS < 300 MB', t.peakRssMb < 300 ? 'yes' : 'NO');
}

/** Runs the Redis redrive benchmarks and returns the rows (baselines first, then Queuescope with its ratio). */
export async function benchRedisRedrive(): Promise<RedriveBenchRow[]> {
  const url = benchUrl();
  const r = new Redis(url, { maxRetriesPerRequest: null });
  const adapter = createRedisAdapter({ kind: 'redis', url });
  const p = `qs-bench-redrive-${randomBytes(3).toString('hex')}`;
  try {
    const m = adapter.redrive;
    if (!m) throw new Error('the Redis adapter has no redrive mover');
    const n = Number(process.env.QUEUESCOPE_BENCH_REDRIVE_N ?? 100_000);
    const jobs = Number(process.env.QUEUESCOPE_BENCH_REDRIVE_JOBS ?? 20_000);
    const kinds = new Set((process.env.QUEUESCOPE_BENCH_REDRIVE_KINDS ?? 'list,stream,bullmq').split(',').map((k) => k.trim()));
    const rows: RedriveBenchRow[] = [];
    if (kinds.has('list')) rows.push(...(await listRows(r, m, p, n)));
    if (kinds.has('stream')) rows.push(...(await streamRows(r, m, p, n)));
    if (kinds.has('bullmq')) rows.push(...(await bullmqRows(r, adapter, m, p, jobs)));
    if (process.env.QUEUESCOPE_BENCH_REDRIVE_1M === '1') rows.push(await millionRow(r, m, p));
    return rows;
  } finally {
    await adapter.close();
    r.disconnect();
  }
}

if (require.main === module) {
  benchRedisRedrive().then(
    (rows) => {
      for (const x of rows) process.stdout.write(`${x.name}\t${x.items}\t${x.seconds.toFixed(2)}s\t${Math.round(x.perSecond)}/s\tRSS ${x.peakRssMb?.toFixed(0) ?? '-'} MB\t${x.target}\t${x.met}\n`);
      process.exit(0);
    },
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(1);
    },
  );
}
