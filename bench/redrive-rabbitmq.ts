/**
 * RabbitMQ redrive bench: a client-side FILTERED redrive (RabbitmqRedriveMover.moveClientSide, every
 * 10th message skipped = copied to the DLQ tail, the rest moved; confirm-then-ack; the selected
 * messages appended to a backup with the engine's RedriveBackup: one write + fsync per batch) versus the
 * dynamic shovel (the management UI's "Move messages", RabbitmqRedriveMover.startNativeMove) on
 * the same number of persistent ~300-byte messages, measured in the same run.
 * Target: client-side ≥ 0.9× the shovel's rate.
 *
 * Size: QS_BENCH_REDRIVE_RABBITMQ_N (default 100,000, the issue's figure; ~1.5 min per round). Batch size:
 * QS_BENCH_REDRIVE_RABBITMQ_BATCH (default 1,000). Rounds: QS_BENCH_REDRIVE_RABBITMQ_ROUNDS (default 2; each
 * round runs the shovel then the client-side redrive on fresh queues, the ratio is the median of
 * the rounds' ratios, because other work on a shared 2-core machine shifts both rates by ±30%). Each
 * row also gives the CPU each path costs per 1,000 messages (a local broker's beam.smp from /proc,
 * and this process), which that other work shifts much less, and the 1-minute load average at the start of
 * each round and at the end. QS_BENCH_REDRIVE_RABBITMQ_RSS_N=1000000 adds a
 * peak-RSS row for a 1M-message client-side redrive. Uses the shared broker with unique queue names
 * and deletes them. Run alone: `npx tsx bench/redrive-rabbitmq.ts`.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { connect, type ConfirmChannel } from 'amqplib';
import { createRabbitmqAdapter } from '../core/adapters/rabbitmq';
import { RedriveBackup } from '../core/redrive/backup';
import type { MoveHooks } from '../core/adapters/redrive-types';
import type { BrokerAdapter } from '../core/adapters/types';

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const MGMT = process.env.RABBITMQ_MANAGEMENT_URL ?? 'http://127.0.0.1:15672';

export interface RabbitmqRedriveRow {
  name: string;
  messages: number;
  seconds: number;
  perSecond: number;
  peakRssMb: number;
  target: string;
  met: string;
}

const idOf = (name: string): string => `rabbitmq:%2F/${encodeURIComponent(name)}`;

/**
 * CPU seconds (user + system) used so far by the local RabbitMQ node(s) — every `beam.smp` process
 * in /proc — or null when there is none (a remote broker). With the bench's own `process.cpuUsage()`
 * it gives the CPU each path costs per message, which other work on the machine shifts much less
 * than the rates.
 */
function brokerCpuSeconds(): number | null {
  let ticks = 0;
  let found = false;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return null;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      if (stat.slice(stat.indexOf('(') + 1, close) !== 'beam.smp') continue;
      const f = stat.slice(close + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]); // utime, stime (fields 14 and 15 of /proc/<pid>/stat)
      found = true;
    } catch {
      /* the process ended */
    }
  }
  return found ? ticks / 100 : null; // USER_HZ is 100 on Linux
}

/** CPU seconds of the broker and of this process since `from` (see {@link brokerCpuSeconds}). */
function cpuSince(from: { broker: number | null; self: NodeJS.CpuUsage }): { broker: number | null; self: number } {
  const b = brokerCpuSeconds();
  const u = process.cpuUsage(from.self);
  return { broker: b === null || from.broker === null ? null : b - from.broker, self: (u.user + u.system) / 1e6 };
}

const cpuMark = (): { broker: number | null; self: NodeJS.CpuUsage } => ({ broker: brokerCpuSeconds(), self: process.cpuUsage() });

const median = (xs: number[]): number => {
  const v = [...xs].sort((x, y) => x - y);
  const mid = Math.floor(v.length / 2);
  return v.length % 2 === 1 ? (v[mid] ?? 0) : ((v[mid - 1] ?? 0) + (v[mid] ?? 0)) / 2;
};

/** Fills `queue` with `n` persistent ~300-byte messages (confirmed). */
async function fill(ch: ConfirmChannel, queue: string, n: number, sourceName: string): Promise<void> {
  const pad = 'x'.repeat(260);
  for (let i = 0; i < n; i++) {
    const ok = ch.sendToQueue(queue, Buffer.from(`{"key":"k-${i}","p":"${pad}"}`), { persistent: true, messageId: `m-${i}`, headers: { 'x-first-death-queue': sourceName, seq: i } });
    if (!ok) await new Promise((r) => ch.once('drain', r));
    if (i % 5000 === 4999) await ch.waitForConfirms();
  }
  await ch.waitForConfirms();
}

export async function benchRabbitmqRedrive(): Promise<RabbitmqRedriveRow[]> {
  const n = Number(process.env.QS_BENCH_REDRIVE_RABBITMQ_N ?? 100_000);
  const batch = Number(process.env.QS_BENCH_REDRIVE_RABBITMQ_BATCH ?? 1000);
  const rounds = Math.max(1, Number(process.env.QS_BENCH_REDRIVE_RABBITMQ_ROUNDS ?? 2));
  const backup = process.env.QS_BENCH_REDRIVE_RABBITMQ_BACKUP !== '0';
  const tag = randomBytes(4).toString('hex');
  const conn = await connect(AMQP_URL, { noDelay: true });
  const ch = await conn.createConfirmChannel();
  const adapter = createRabbitmqAdapter({ kind: 'rabbitmq', url: AMQP_URL, managementUrl: MGMT });
  const dir = mkdtempSync(join(tmpdir(), 'qs-bench-rmq-'));
  const created: string[] = [];
  try {
    const mover = adapter.redrive;
    if (!mover) throw new Error('no redrive on the RabbitMQ adapter');
    const shovelRates: number[] = [];
    const clientRates: number[] = [];
    const ratios: number[] = [];
    /** 1-minute load average at the start of each round and at the end of the last. */
    const loads: number[] = [];
    const shovelCpu: { broker: number | null; self: number }[] = [];
    const clientCpu: { broker: number | null; self: number }[] = [];
    let peak = process.memoryUsage().rss;
    let last = { moved: 0, skipped: 0 };
    // Rounds alternate shovel and client-side runs, so load from other work on the machine hits both.
    for (let round = 0; round < rounds; round++) {
      const [a, b, c] = ['a', 'b', 'c'].map((x) => `qs-bench-redrive-${tag}-${round}-${x}`) as [string, string, string];
      created.push(a, b, c);
      for (const q of [a, b, c]) await ch.assertQueue(q, { durable: true });
      await fill(ch, a, n, b);
      loads.push(loadavg()[0] ?? 0);

      // 1. The dynamic shovel a → b (the baseline).
      const dlqA = await adapter.getQueue(idOf(a));
      let cpu0 = cpuMark();
      let t0 = performance.now();
      const h = await mover.startNativeMove(dlqA, idOf(b), null);
      for (;;) {
        const st = await mover.nativeMoveStatus(h);
        if (st.status !== 'running') {
          if (st.status !== 'completed') throw new Error(`shovel ${st.status}: ${st.error ?? ''}`);
          break;
        }
        await new Promise((r) => setTimeout(r, 25));
      }
      const shovelS = (performance.now() - t0) / 1000;
      shovelCpu.push(cpuSince(cpu0));
      const inB = (await ch.checkQueue(b)).messageCount;
      if (inB !== n) throw new Error(`shovel left ${inB} of ${n} in the target`);

      // 2. Client-side filtered redrive b → c, with the engine's backup writer (core/redrive/backup.ts:
      //    one write + fsync per batch; QS_BENCH_REDRIVE_RABBITMQ_BACKUP=0 leaves it out).
      const dlqB = await adapter.getQueue(idOf(b));
      const bk = backup
        ? await RedriveBackup.create(join(dir, `backup-${round}.jsonl`), {
            exportedAt: Date.now(),
            source: { broker: 'rabbitmq', connection: 'bench', queue: dlqB },
            selection: 'ids',
            partial: true,
            partialReason: 'bench backup',
          })
        : null;
      const hooks: MoveHooks = {
        gate: () => Promise.resolve(),
        decide: (m) => ((m.headers.seq as number) % 10 === 9 ? { action: 'skip', reason: 'non-retryable: HTTP 422' } : { action: 'move', targetQueueId: idOf(c) }),
        beforeMove: (ms) => (bk ? bk.append(ms) : Promise.resolve()),
        onBatch: () => {
          peak = Math.max(peak, process.memoryUsage().rss);
        },
      };
      cpu0 = cpuMark();
      t0 = performance.now();
      const sum = await mover.moveClientSide({ sourceQueueId: idOf(b), batchSize: batch, cutoffMs: Date.now() + 3_600_000, maxMessages: null, dryRun: false }, hooks);
      const clientS = (performance.now() - t0) / 1000;
      clientCpu.push(cpuSince(cpu0));
      await bk?.close();
      if (sum.examined !== n || sum.failed !== 0) throw new Error(`client-side redrive examined ${sum.examined} of ${n}, failed ${sum.failed}`);
      last = { moved: sum.moved, skipped: sum.skipped };
      shovelRates.push(n / shovelS);
      clientRates.push(n / clientS);
      ratios.push(n / clientS / (n / shovelS));
      for (const q of [a, b, c]) await ch.deleteQueue(q).catch(() => undefined);
    }
    loads.push(loadavg()[0] ?? 0);
    const rows: RabbitmqRedriveRow[] = [];
    const rssN = Number(process.env.QS_BENCH_REDRIVE_RABBITMQ_RSS_N ?? 0);
    if (rssN > 0) rows.push(await peakRssRun(ch, adapter, rssN, `qs-bench-redrive-${tag}-rss`));
    const ratio = median(ratios);
    const each = ratios.map((r, i) => `${r.toFixed(2)}× (${Math.round(shovelRates[i] ?? 0)} vs ${Math.round(clientRates[i] ?? 0)} msg/s)`).join(', ');
    const load = `load ${loads.map((l) => l.toFixed(1)).join(' → ')}`;
    const shovelRate = median(shovelRates);
    const clientRate = median(clientRates);
    // CPU ms per 1,000 messages, medians over the rounds: broker (all local beam.smp) + this process.
    const perK = (xs: { broker: number | null; self: number }[]): string => {
      const broker = xs.every((x) => x.broker !== null) ? `broker ${Math.round((median(xs.map((x) => x.broker ?? 0)) * 1e6) / n)} ms + ` : '';
      return `${broker}bench process ${Math.round((median(xs.map((x) => x.self)) * 1e6) / n)} ms CPU per 1,000 msgs`;
    };
    return [
      ...rows,
      { name: `RabbitMQ dynamic shovel (Move messages), ${n.toLocaleString('en')} persistent msgs (median of ${rounds}; ${perK(shovelCpu)}; ${load})`, messages: n, seconds: n / shovelRate, perSecond: shovelRate, peakRssMb: 0, target: 'baseline', met: '' },
      {
        name: `RabbitMQ client-side filtered redrive${backup ? ' + JSONL backup' : ''} (${last.moved.toLocaleString('en')} moved, ${last.skipped.toLocaleString('en')} kept; batch ${batch}; median ${ratio.toFixed(2)}× shovel; rounds ${each}; ${perK(clientCpu)}; ${load})`,
        messages: n,
        seconds: n / clientRate,
        perSecond: clientRate,
        peakRssMb: peak / 1024 / 1024,
        target: '≥ 0.9× shovel',
        met: ratio >= 0.9 ? 'yes' : 'NO',
      },
    ];
  } finally {
    for (const q of created) await ch.deleteQueue(q).catch(() => undefined);
    await conn.close().catch(() => undefined);
    await adapter.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Peak RSS of this process during a client-side filtered redrive of `n` messages (transient, to
 * fill the queue quickly; the mover's memory does not depend on persistence), with a no-op backup
 * hook: what the mover itself keeps. Enabled by QS_BENCH_REDRIVE_RABBITMQ_RSS_N (e.g. 1000000).
 */
async function peakRssRun(ch: ConfirmChannel, adapter: BrokerAdapter, n: number, base: string): Promise<RabbitmqRedriveRow> {
  const src = `${base}-src`;
  const dst = `${base}-dst`;
  try {
    await ch.assertQueue(src, { durable: true });
    await ch.assertQueue(dst, { durable: true });
    const pad = 'x'.repeat(260);
    for (let i = 0; i < n; i++) {
      const ok = ch.sendToQueue(src, Buffer.from(`{"key":"k-${i}","p":"${pad}"}`), { messageId: `m-${i}`, headers: { seq: i } });
      if (!ok) await new Promise((r) => ch.once('drain', r));
      if (i % 10_000 === 9_999) await ch.waitForConfirms();
    }
    await ch.waitForConfirms();
    let peak = process.memoryUsage().rss;
    const t0 = performance.now();
    const sum = await adapter.redrive!.moveClientSide(
      { sourceQueueId: idOf(src), batchSize: 1000, cutoffMs: Date.now() + 3_600_000, maxMessages: null, dryRun: false },
      {
        gate: () => Promise.resolve(),
        decide: (m) => ((m.headers.seq as number) % 10 === 9 ? { action: 'skip', reason: 'non-retryable' } : { action: 'move', targetQueueId: idOf(dst) }),
        beforeMove: () => Promise.resolve(),
        onBatch: () => {
          peak = Math.max(peak, process.memoryUsage().rss);
        },
      },
    );
    const s = (performance.now() - t0) / 1000;
    const mb = peak / 1024 / 1024;
    return { name: `RabbitMQ client-side filtered redrive, peak RSS (${sum.examined.toLocaleString('en')} examined, transient msgs, no backup)`, messages: n, seconds: s, perSecond: n / s, peakRssMb: mb, target: '< 300 MB peak RSS', met: mb < 300 ? 'yes' : 'NO' };
  } finally {
    await ch.deleteQueue(src).catch(() => undefined);
    await ch.deleteQueue(dst).catch(() => undefined);
  }
}

if (require.main === module) {
  benchRabbitmqRedrive().then(
    (rows) => {
      for (const r of rows) process.stdout.write(`${r.name}: ${r.messages} in ${r.seconds.toFixed(2)} s = ${Math.round(r.perSecond)} msg/s, peak RSS ${r.peakRssMb.toFixed(0)} MB ${r.target} ${r.met}\n`);
      process.exit(0);
    },
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(1);
    },
  );
}
