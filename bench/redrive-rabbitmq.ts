/**
 * RabbitMQ redrive bench: a client-side FILTERED redrive (RabbitmqRedriveMover.moveClientSide, every
 * 10th message skipped = copied to the DLQ tail, the rest moved; confirm-then-ack; the selected
 * messages appended to a JSONL backup with one fsync per batch, as the engine does) versus the
 * dynamic shovel (the management UI's "Move messages", RabbitmqRedriveMover.startNativeMove) on
 * the same number of persistent ~300-byte messages, measured in the same run.
 * Target: client-side ≥ 0.9× the shovel's rate.
 *
 * Size: QS_BENCH_REDRIVE_RABBITMQ_N (default 20,000; the figure is 100,000). Batch size:
 * QS_BENCH_REDRIVE_RABBITMQ_BATCH (default 1,000). Uses the shared broker with unique queue names
 * and deletes them. Run alone: `npx tsx bench/redrive-rabbitmq.ts`.
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { connect } from 'amqplib';
import { createRabbitmqAdapter } from '../core/adapters/rabbitmq';
import type { MoveHooks } from '../core/adapters/redrive-types';

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

export async function benchRabbitmqRedrive(): Promise<RabbitmqRedriveRow[]> {
  const n = Number(process.env.QS_BENCH_REDRIVE_RABBITMQ_N ?? 20_000);
  const batch = Number(process.env.QS_BENCH_REDRIVE_RABBITMQ_BATCH ?? 1000);
  const tag = randomBytes(4).toString('hex');
  const [a, b, c] = ['a', 'b', 'c'].map((x) => `qs-bench-redrive-${tag}-${x}`) as [string, string, string];
  const conn = await connect(AMQP_URL, { noDelay: true });
  const ch = await conn.createConfirmChannel();
  const adapter = createRabbitmqAdapter({ kind: 'rabbitmq', url: AMQP_URL, managementUrl: MGMT });
  const dir = mkdtempSync(join(tmpdir(), 'qs-bench-rmq-'));
  try {
    for (const q of [a, b, c]) await ch.assertQueue(q, { durable: true });
    const pad = 'x'.repeat(260);
    for (let i = 0; i < n; i++) {
      const ok = ch.sendToQueue(a, Buffer.from(`{"key":"k-${i}","p":"${pad}"}`), { persistent: true, messageId: `m-${i}`, headers: { 'x-first-death-queue': b, seq: i } });
      if (!ok) await new Promise((r) => ch.once('drain', r));
      if (i % 5000 === 4999) await ch.waitForConfirms();
    }
    await ch.waitForConfirms();
    const mover = adapter.redrive;
    if (!mover) throw new Error('no redrive on the RabbitMQ adapter');

    // 1. The dynamic shovel a → b (the baseline).
    const dlqA = await adapter.getQueue(idOf(a));
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
    const inB = (await ch.checkQueue(b)).messageCount;
    if (inB !== n) throw new Error(`shovel left ${inB} of ${n} in the target`);

    // 2. Client-side filtered redrive b → c.
    const fd = openSync(join(dir, 'backup.jsonl'), 'a');
    let peak = process.memoryUsage().rss;
    const hooks: MoveHooks = {
      gate: () => Promise.resolve(),
      decide: (m) => ((m.headers.seq as number) % 10 === 9 ? { action: 'skip', reason: 'non-retryable: HTTP 422' } : { action: 'move', targetQueueId: idOf(c) }),
      beforeMove: (ms) => {
        writeSync(fd, ms.map((m) => JSON.stringify(m)).join('\n') + '\n');
        fsyncSync(fd);
        return Promise.resolve();
      },
      onBatch: () => {
        peak = Math.max(peak, process.memoryUsage().rss);
      },
    };
    t0 = performance.now();
    const sum = await mover.moveClientSide({ sourceQueueId: idOf(b), batchSize: batch, cutoffMs: Date.now() + 3_600_000, maxMessages: null, dryRun: false }, hooks);
    const clientS = (performance.now() - t0) / 1000;
    closeSync(fd);
    if (sum.examined !== n || sum.failed !== 0) throw new Error(`client-side redrive examined ${sum.examined} of ${n}, failed ${sum.failed}`);
    const shovelRate = n / shovelS;
    const clientRate = n / clientS;
    const ratio = clientRate / shovelRate;
    return [
      { name: `RabbitMQ dynamic shovel (Move messages), ${n.toLocaleString('en')} persistent msgs`, messages: n, seconds: shovelS, perSecond: shovelRate, peakRssMb: 0, target: 'baseline', met: '' },
      {
        name: `RabbitMQ client-side filtered redrive (${sum.moved.toLocaleString('en')} moved, ${sum.skipped.toLocaleString('en')} kept; batch ${batch}; ${ratio.toFixed(2)}× shovel)`,
        messages: n,
        seconds: clientS,
        perSecond: clientRate,
        peakRssMb: peak / 1024 / 1024,
        target: '≥ 0.9× shovel',
        met: ratio >= 0.9 ? 'yes' : 'NO',
      },
    ];
  } finally {
    for (const q of [a, b, c]) await ch.deleteQueue(q).catch(() => undefined);
    await conn.close().catch(() => undefined);
    await adapter.close();
    rmSync(dir, { recursive: true, force: true });
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
