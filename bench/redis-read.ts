/**
 * Redis read benchmark (`npm run bench` prints it through bench/run.ts).
 *
 * Seeds 100,000 stream entries and 100,000 real BullMQ failed jobs (added with `addBulk`, then
 * failed by a Worker whose processor throws — the same path production failures take) from a
 * child process, reads
 * every one through the Redis adapter's `peek` in pages of 1,000 into the message model, and
 * measures messages/s and peak RSS. Each timed read follows an untimed warm-up of 5 pages (JIT,
 * connection). Everything it creates is removed afterwards.
 *
 * It runs in its own database (`QUEUESCOPE_BENCH_REDIS_DB`, default 15) so 100k job keys never
 * crowd the keyspace other tests and the app scan in db 0.
 */
import { fork } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { Queue, Worker } from 'bullmq';
import { createRedisAdapter } from '../core/adapters/redis';
import type { BrokerAdapter } from '../core/adapters/types';

/** One benchmark row. `seconds` is the read time only (seeding excluded); `peakRssMb` the process's peak RSS during the read. */
export interface RedisReadResult {
  name: string;
  messages: number;
  seconds: number;
  perSecond: number;
  peakRssMb: number;
}

const COUNT = 100_000;
const PAGE = 1000;
const WARM_UP_PAGES = 5;

function benchUrl(): string {
  const u = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  u.pathname = `/${process.env.QUEUESCOPE_BENCH_REDIS_DB ?? '15'}`;
  return u.toString();
}

function orderPayload(i: number): string {
  return JSON.stringify({
    orderId: `A-${100000 + i}`,
    operation: i % 3 === 0 ? 'refund' : 'charge',
    idempotencyKey: `A-${100000 + i}:charge`,
    amountCents: 1000 + (i % 5000),
    currency: 'EUR',
    customerId: `C-${i % 977}`,
    requestedAt: new Date(1_790_000_000_000 + i * 1000).toISOString(),
  });
}

/** Reads a whole queue state through the adapter, sampling RSS; returns the count and timings. */
async function readAll(adapter: BrokerAdapter, queueId: string, state: string, maxPages = Infinity): Promise<{ messages: number; seconds: number; peakRssMb: number; bytes: number }> {
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  let messages = 0;
  let bytes = 0;
  let cursor: string | null = null;
  const t0 = performance.now();
  try {
    for (let pages = 1; ; pages++) {
      const page = await adapter.peek(queueId, { limit: PAGE, cursor, state });
      messages += page.messages.length;
      for (const m of page.messages) bytes += m.body.sizeBytes;
      peak = Math.max(peak, process.memoryUsage().rss);
      cursor = page.nextCursor;
      if (cursor === null || page.messages.length === 0 || pages >= maxPages) break;
    }
  } finally {
    clearInterval(sampler);
  }
  const seconds = (performance.now() - t0) / 1000;
  return { messages, seconds, peakRssMb: peak / 1024 / 1024, bytes };
}

async function seedStream(r: Redis, key: string): Promise<void> {
  for (let i = 0; i < COUNT; i += PAGE) {
    const p = r.pipeline();
    for (let j = i; j < Math.min(COUNT, i + PAGE); j++) p.xadd(key, '*', 'body', orderPayload(j), 'type', 'order.created', 'traceId', randomUUID());
    await p.exec();
  }
}

/**
 * The error the processor throws, with a fixed, realistic stack: BullMQ stores `err.stack`, and a
 * stack through a file loaded as a `data:` URL (tsx's ESM loader) would be tens of KB per job.
 */
function gatewayError(): Error {
  const e = new Error('HTTP 503 Service Unavailable');
  e.stack = [
    'Error: HTTP 503 Service Unavailable',
    '    at PaymentsGateway.charge (/srv/payments/src/gateway.js:88:13)',
    '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
    '    at async chargeOrder (/srv/payments/src/jobs/charge.js:41:20)',
    '    at async Worker.processJob (/srv/payments/node_modules/bullmq/dist/cjs/classes/worker.js:578:21)',
  ].join('\n');
  return e;
}

async function seedFailedJobs(url: string, r: Redis, name: string): Promise<void> {
  const queue = new Queue(name, { connection: r });
  try {
    for (let i = 0; i < COUNT; i += PAGE) {
      await queue.addBulk(
        Array.from({ length: Math.min(PAGE, COUNT - i) }, (_, k) => ({
          name: 'charge',
          data: JSON.parse(orderPayload(i + k)),
          opts: { attempts: 1, removeOnFail: false },
        })),
      );
    }
    const connection = { url, maxRetriesPerRequest: null };
    const workers = [0].map(
      () =>
        new Worker(
          name,
          () => {
            throw gatewayError();
          },
          { connection, concurrency: 500 },
        ),
    );
    for (const w of workers) w.on('error', () => undefined);
    const deadline = Date.now() + 300_000;
    for (;;) {
      const { failed = 0 } = await queue.getJobCounts('failed');
      if (failed >= COUNT) break;
      if (Date.now() > deadline) throw new Error(`only ${failed} of ${COUNT} jobs failed within 5 minutes`);
      await new Promise((res) => setTimeout(res, 250));
    }
    await Promise.all(workers.map((w) => w.close()));
  } finally {
    await queue.close();
  }
}

const CHILD_FLAG = 'QUEUESCOPE_BENCH_REDIS_SEED';

/** Runs {@link seedStream} and {@link seedFailedJobs} in a forked copy of this module (same loader, e.g. tsx). */
function seedInChild(url: string, streamKey: string, queueName: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = fork(__filename, [], { env: { ...process.env, [CHILD_FLAG]: JSON.stringify({ url, streamKey, queueName }) }, stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`the seeding process exited with code ${code ?? 'null'}`))));
  });
}

async function childMain(arg: string): Promise<void> {
  const { url, streamKey, queueName } = JSON.parse(arg) as { url: string; streamKey: string; queueName: string };
  const r = new Redis(url, { maxRetriesPerRequest: null });
  try {
    await seedStream(r, streamKey);
    await seedFailedJobs(url, r, queueName);
  } finally {
    r.disconnect();
  }
}

const childArg = process.env[CHILD_FLAG];
if (childArg !== undefined) {
  childMain(childArg).then(
    () => process.exit(0),
    (e: unknown) => {
      process.stderr.write(`bench seeding failed: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}

/**
 * Seeds, reads and cleans up; returns one row per benchmark. Does not print.
 * @throws when Redis is unreachable or seeding does not finish within 5 minutes.
 */
export async function benchRedisRead(): Promise<RedisReadResult[]> {
  const url = benchUrl();
  const r = new Redis(url, { maxRetriesPerRequest: null });
  const tag = randomBytes(4).toString('hex');
  const streamKey = `qs-bench-stream-${tag}`;
  const queueName = `qs-bench-failed-${tag}`;
  const adapter = createRedisAdapter({ kind: 'redis', url });
  const results: RedisReadResult[] = [];
  try {
    // Seeded by a child process, as producers and workers are in real life: their CPU and the
    // garbage of 200k writes stay out of the process whose reads are timed.
    await seedInChild(url, streamKey, queueName);
    // Untimed warm-up (JIT, connection): the first few pages of each, then the timed full reads.
    await readAll(adapter, `stream:${streamKey}`, 'all', WARM_UP_PAGES);
    await readAll(adapter, `bullmq:bull:${queueName}`, 'failed', WARM_UP_PAGES);

    const s = await readAll(adapter, `stream:${streamKey}`, 'all');
    if (s.messages !== COUNT) throw new Error(`stream read returned ${s.messages} entries, expected ${COUNT}`);
    results.push({ name: `Redis stream: ${COUNT.toLocaleString('en')} entries, peek pages of ${PAGE}`, messages: s.messages, seconds: s.seconds, perSecond: s.messages / s.seconds, peakRssMb: s.peakRssMb });

    const b = await readAll(adapter, `bullmq:bull:${queueName}`, 'failed');
    if (b.messages !== COUNT) throw new Error(`BullMQ read returned ${b.messages} failed jobs, expected ${COUNT}`);
    results.push({ name: `BullMQ: ${COUNT.toLocaleString('en')} failed jobs, peek pages of ${PAGE}`, messages: b.messages, seconds: b.seconds, perSecond: b.messages / b.seconds, peakRssMb: b.peakRssMb });
  } finally {
    await adapter.close();
    await r.del(streamKey);
    const q = new Queue(queueName, { connection: r });
    await q.obliterate({ force: true }).catch(() => undefined);
    await q.close();
    r.disconnect();
  }
  return results;
}
