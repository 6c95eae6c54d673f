import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Queue, Worker } from 'bullmq';
import { createRedisAdapter } from '../../core/adapters/redis';
import { tuneQueue } from '../../core/tuning';
import { REDIS_URL, uniqueName } from './env';

/** The sampling window is validated only for sources that sample over one; bullmq reads history and ignores it. */
const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const adapter = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
const cleanups: (() => Promise<unknown>)[] = [];

afterAll(async () => {
  await adapter.close();
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  native.disconnect();
});

describe('tune --window only for sources that use it', () => {
  it('bullmq accepts window 0 and warns that a p99 from 5 samples is rough', async () => {
    const prefix = uniqueName('tunewin');
    const connection = { host: '127.0.0.1', port: Number(new URL(REDIS_URL).port || 6379) };
    const q = new Queue('work', { connection, prefix });
    cleanups.push(async () => {
      await q.obliterate({ force: true });
      await q.close();
    });
    await q.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: 'job', data: { i } })));
    const worker = new Worker('work', async () => new Promise((r) => setTimeout(r, 20)), { connection, prefix, concurrency: 5 });
    worker.on('error', () => undefined);
    cleanups.push(() => worker.close());
    const until = Date.now() + 20_000;
    while ((await q.getCompletedCount()) < 5 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    await worker.close();

    const report = await tuneQueue(adapter, `bullmq:${prefix}:work`, { source: 'bullmq', windowMs: 0 });
    expect(report.stats?.n).toBe(5);
    expect(report.recommendation?.reasons.join(' ')).toContain('p99 from 5 samples is a rough estimate');
  });

  it('pel (a sampling source) still rejects window 0', async () => {
    const key = uniqueName('tunewin-stream');
    await native.xgroup('CREATE', key, 'g', '$', 'MKSTREAM');
    cleanups.push(() => native.del(key));
    await expect(tuneQueue(adapter, `stream:${key}`, { source: 'pel', windowMs: 0 })).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/window must be from 1 s to 1 h/) });
  });
});
