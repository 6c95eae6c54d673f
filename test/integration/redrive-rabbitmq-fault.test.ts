import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type ChannelModel } from 'amqplib';
import { createRabbitmqAdapter } from '../../core/adapters/rabbitmq';
import type { MoveBatchResult } from '../../core/adapters/redrive-types';
import { QueuescopeError } from '../../shared/domain';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, uniqueName } from './env';
import { closeNative, nativeConnection, nativeDeleteQueue } from './rabbitmq-native';
import { idOf, keyOf, makeDeadLettered, publishKeys, snapshotQueue, waitSettled } from './fixtures/redrive-rabbitmq-util';
import { PrivateRabbit } from './fixtures/private-rabbitmq';

/**
 * Reliability of the RabbitMQ redrive mover:
 * - SIGKILL: a child process (fixtures/redrive-rabbitmq-child.ts) redrives ≥ 10,000 messages and is
 *   killed at a random point, ≥ 10 trials (QS_RABBITMQ_FAULT_TRIALS / QS_RABBITMQ_FAULT_N raise
 *   them); after each, every original message (by the key in its body) is in the source or the
 *   target: zero lost; duplicates are counted and printed.
 * - Broker restart: on a PRIVATE node (its own node name and free ports; never the
 *   shared broker) the RabbitMQ application is restarted during a redrive: the run fails with the
 *   exact counts of what it committed, running it again completes, zero lost.
 */

const N = Number(process.env.QS_RABBITMQ_FAULT_N ?? 10_000);
const TRIALS = Number(process.env.QS_RABBITMQ_FAULT_TRIALS ?? 10);
const CHILD = join(__dirname, 'fixtures', 'redrive-rabbitmq-child.ts');

let conn: ChannelModel;
const queues: string[] = [];

beforeAll(async () => {
  conn = await nativeConnection();
});

afterAll(async () => {
  for (const q of queues) await nativeDeleteQueue(q);
  await closeNative();
});

/**
 * Runs the child mover from `source` to `target` and SIGKILLs it a random 0–30 ms after its
 * `killAtBatch`-th committed batch (by progress, not by time: a fast machine must not finish first).
 */
function runChild(source: string, target: string, killAtBatch: number): Promise<{ killed: boolean; batches: number; moved: number; dup: number }> {
  return new Promise((resolve, reject) => {
    // One process (node with the tsx loader), so SIGKILL hits the mover itself (the tsx CLI would fork it).
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, AMQP_URL, RABBITMQ_MANAGEMENT_URL, source, target, '250'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let batches = 0;
    let timer: NodeJS.Timeout | undefined;
    let killed = false;
    const stats = { moved: 0, dup: 0 };
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      let nl: number;
      while ((nl = out.indexOf('\n')) >= 0) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        const j = JSON.parse(line) as { moved?: number; dup?: number };
        if (j.moved !== undefined) {
          batches++;
          stats.moved += j.moved;
          stats.dup += j.dup ?? 0;
          if (batches === killAtBatch) {
            timer = setTimeout(() => {
              killed = child.exitCode === null && child.kill('SIGKILL');
            }, Math.floor(Math.random() * 30));
          }
        }
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code, sig) => {
      clearTimeout(timer);
      if (sig !== 'SIGKILL' && code !== 0) reject(new Error(`child exited ${String(code)}: ${err}`));
      else resolve({ killed: sig === 'SIGKILL' && killed, batches, ...stats });
    });
  });
}

describe.each(['classic', 'quorum'] as const)('SIGKILL during a redrive (%s queues)', (type) => {
  it(`loses no message over ${TRIALS} trials of ${N.toLocaleString('en')} messages; duplicates counted`, async () => {
    const a = uniqueName(`fault-${type}-a`);
    const b = uniqueName(`fault-${type}-b`);
    queues.push(a, b);
    const ch = await conn.createConfirmChannel();
    await ch.assertQueue(a, { durable: true, arguments: { 'x-queue-type': type } });
    await ch.assertQueue(b, { durable: true, arguments: { 'x-queue-type': type } });
    await publishKeys(ch, a, 0, N);
    await ch.close();
    const all = Array.from({ length: N }, (_, i) => `k-${i}`);
    let killedMidRun = 0;
    let duplicates = 0;
    const log: string[] = [];
    for (let t = 0; t < TRIALS; t++) {
      await waitSettled(conn, [a, b]);
      const [inA, inB] = [(await snapshotQueue(conn, a)).length, (await snapshotQueue(conn, b)).length];
      const [src, dst] = inA >= inB ? [a, b] : [b, a];
      // The source holds ≥ N/2 messages: ≥ 20 batches of 250; kill after 1–15 of them.
      const r = await runChild(src, dst, 1 + Math.floor(Math.random() * 15));
      if (r.killed) killedMidRun++;
      await waitSettled(conn, [a, b]); // the broker returns the killed consumer's deliveries
      const keys = [...(await snapshotQueue(conn, a)), ...(await snapshotQueue(conn, b))].map(keyOf);
      const unique = new Set(keys);
      const lost = all.filter((k) => !unique.has(k));
      expect(lost, `trial ${t}: lost messages`).toEqual([]);
      duplicates = keys.length - N;
      log.push(`trial ${t}: ${r.killed ? 'killed' : 'finished'} after ${r.batches} batches (${r.moved} moved), total copies ${keys.length}, duplicates so far ${duplicates}`);
    }
    process.stdout.write(`RabbitMQ redrive SIGKILL fault test (${type}):\n${log.join('\n')}\n`);
    expect(killedMidRun).toBeGreaterThanOrEqual(Math.ceil(TRIALS / 2));
    expect(duplicates).toBeGreaterThanOrEqual(0);
  }, 900_000);
});

describe('broker restart during a redrive (private node)', () => {
  const rabbit = new PrivateRabbit();
  let pconn: ChannelModel | null = null;

  beforeAll(async () => {
    await rabbit.start();
  }, 180_000);

  afterAll(async () => {
    await pconn?.close().catch(() => undefined);
    await rabbit.stop();
  }, 120_000);

  it.each(['classic', 'quorum'] as const)('%s DLQ: ends failed with exact counts; a second run completes; zero lost', async (type) => {
    const M = 12_000;
    pconn = await connect(rabbit.url, { noDelay: true });
    pconn.on('error', () => undefined);
    const work = uniqueName('restart-work');
    const dlq = uniqueName('restart-dlq');
    await makeDeadLettered(pconn, work, dlq, M, { 'x-queue-type': type });
    await pconn.close().catch(() => undefined);
    pconn = null;
    const adapter = createRabbitmqAdapter({ kind: 'rabbitmq', url: rabbit.url, managementUrl: rabbit.mgmtUrl });
    const mover = adapter.redrive;
    if (!mover) throw new Error('no redrive');
    const batches: MoveBatchResult[] = [];
    const restart: { p: Promise<void> | null } = { p: null };
    const opts = { sourceQueueId: idOf(dlq), batchSize: 200, cutoffMs: Date.now() + 3_600_000, maxMessages: null, dryRun: false };
    const hooks = {
      // ~100 ms per 200-message batch, so the run is still going when rabbitmqctl (≈ 1–3 s to act) stops the app.
      gate: () => new Promise<void>((r) => setTimeout(r, 100)),
      decide: () => ({ action: 'move' as const, targetQueueId: idOf(work) }),
      beforeMove: () => Promise.resolve(),
      onBatch: (r: MoveBatchResult) => {
        batches.push(r);
        if (batches.length === 1) restart.p = rabbit.restartApp();
      },
    };
    let failure: unknown = null;
    try {
      await mover.moveClientSide(opts, hooks);
    } catch (e) {
      failure = e;
    }
    await restart.p;
    expect(failure).toBeInstanceOf(QueuescopeError);
    expect(['HOST_UNREACHABLE', 'BROKER_ERROR', 'QUEUE_NOT_FOUND']).toContain((failure as QueuescopeError).code);
    const firstMoved = batches.reduce((n, b) => n + b.moved.length, 0);
    const firstDup = batches.reduce((n, b) => n + b.possibleDuplicates.length, 0);
    expect(firstMoved).toBeGreaterThanOrEqual(200);
    expect(firstMoved).toBeLessThan(M);

    pconn = await connect(rabbit.url, { noDelay: true });
    pconn.on('error', () => undefined);
    const inWorkAfterFailure = (await snapshotQueue(pconn, work)).length;
    // Everything reported moved is in the target; reported possible duplicates may be too.
    expect(inWorkAfterFailure).toBeGreaterThanOrEqual(firstMoved);
    expect(inWorkAfterFailure).toBeLessThanOrEqual(firstMoved + firstDup);

    batches.length = 0;
    const second = await mover.moveClientSide({ ...opts, cutoffMs: Date.now() + 3_600_000 }, { ...hooks, gate: () => Promise.resolve(), onBatch: (r: MoveBatchResult) => batches.push(r) });
    expect(second.failed).toBe(0);
    const keys = [...(await snapshotQueue(pconn, work)), ...(await snapshotQueue(pconn, dlq))].map(keyOf);
    const unique = new Set(keys);
    expect(Array.from({ length: M }, (_, i) => `k-${i}`).filter((k) => !unique.has(k))).toEqual([]);
    const dups = keys.length - M;
    process.stdout.write(`RabbitMQ redrive restart test (${type} DLQ): first run moved ${firstMoved} (+${firstDup} possible duplicates) then failed with ${(failure as QueuescopeError).code}; second run moved ${second.moved}; duplicates ${dups}\n`);
    expect(dups).toBeLessThanOrEqual(firstDup);
    expect(await snapshotQueue(pconn, dlq)).toHaveLength(0);
    await adapter.close();
  }, 300_000);
});
