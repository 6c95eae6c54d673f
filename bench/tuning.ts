/**
 * Tuning (issue 5): reading BullMQ job history for processing times (HMGET processedOn/finishedOn
 * per job, pipelined) and computing the statistics. Seeds 100,000 finished-job hashes under a
 * unique prefix (the fields BullMQ writes), measures, deletes them.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createRedisAdapter } from '../core/adapters/redis';
import { computeStats, seededRandom } from '../shared/tuning';

export interface TuningBenchRow {
  name: string;
  items: number;
  seconds: number;
  perSecond: number;
  target: string;
  met: string;
}

export async function benchTuning(redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'): Promise<TuningBenchRow[]> {
  const rows: TuningBenchRow[] = [];
  const n = 100_000;
  const prefix = `qs-bench-tune-${randomBytes(4).toString('hex')}`;
  const name = 'work';
  const redis = new Redis(redisUrl);
  const adapter = createRedisAdapter({ kind: 'redis', url: redisUrl });
  try {
    const rnd = seededRandom(3);
    const now = Date.now();
    for (let i = 0; i < n; i += 5000) {
      const p = redis.pipeline();
      for (let j = i; j < Math.min(n, i + 5000); j++) {
        const start = now - (n - j) * 10;
        const took = Math.round(150 + rnd() * 100);
        p.hset(`${prefix}:${name}:${j}`, 'name', 'job', 'data', '{}', 'opts', '{"attempts":3,"backoff":{"type":"exponential","delay":1000}}', 'timestamp', start - 5, 'processedOn', start, 'finishedOn', start + took, 'atm', 1);
        p.zadd(`${prefix}:${name}:completed`, start + took, String(j));
      }
      await p.exec();
    }
    await redis.hset(`${prefix}:${name}:meta`, 'opts.maxLenEvents', '10000');
    const t0 = performance.now();
    const m = await adapter.tuning!.measure(`bullmq:${prefix}:${name}`, 'bullmq', { windowMs: 0, maxSamples: n });
    const s1 = (performance.now() - t0) / 1000;
    rows.push({ name: `tune: BullMQ history (${m.samplesMs.length.toLocaleString('en')} jobs, HMGET in a read-only script per 5,000)`, items: m.samplesMs.length, seconds: s1, perSecond: m.samplesMs.length / s1, target: '< 2 s for 100k jobs', met: s1 < 2 ? 'yes' : 'NO' });
    const samples = Array.from({ length: 1_000_000 }, () => rnd() * 1000);
    const t1 = performance.now();
    computeStats(samples);
    const s2 = (performance.now() - t1) / 1000;
    rows.push({ name: 'tune: statistics of 1,000,000 durations', items: 1_000_000, seconds: s2, perSecond: 1_000_000 / s2, target: '< 1 s', met: s2 < 1 ? 'yes' : 'NO' });
  } finally {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 5000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
    await adapter.close();
    redis.disconnect();
  }
  return rows;
}

if (require.main === module) {
  benchTuning().then(
    (rows) => {
      for (const r of rows) console.log(`${r.name}: ${r.seconds.toFixed(2)} s, ${Math.round(r.perSecond).toLocaleString('en')}/s (target ${r.target}: ${r.met})`);
    },
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
