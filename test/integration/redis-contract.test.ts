import { afterAll } from 'vitest';
import { Redis } from 'ioredis';
import { Queue } from 'bullmq';
import { createRedisAdapter } from '../../core/adapters/redis';
import { runAdapterContract } from './adapter-contract';
import { REDIS_URL, uniqueName } from './env';

/**
 * The shared adapter contract, run against the real Redis for each queue kind the Redis
 * adapter supports: streams, lists and BullMQ (state `waiting`). Fixtures are written with
 * ioredis / BullMQ directly.
 */
const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const bullQueues = new Map<string, Queue>();

afterAll(async () => {
  for (const q of bullQueues.values()) await q.close();
  native.disconnect();
});

const adapterFor = (url = REDIS_URL) => Promise.resolve(createRedisAdapter({ kind: 'redis', url }));
const unreachable = () => adapterFor('redis://127.0.0.1:1');

runAdapterContract({
  name: 'redis-stream',
  createAdapter: () => adapterFor(),
  async createQueueWithMessages(bodies, headers) {
    const key = uniqueName('stream');
    const extra = Object.entries(headers ?? {}).flat();
    for (const b of bodies) await native.xadd(key, '*', 'body', Buffer.from(b), ...extra);
    return { queueId: `stream:${key}`, name: key };
  },
  countMessages: (key) => native.xlen(key),
  deleteQueue: async (key) => {
    await native.del(key);
  },
  supportsHeaders: true,
  createUnreachableAdapter: unreachable,
});

runAdapterContract({
  name: 'redis-list',
  createAdapter: () => adapterFor(),
  async createQueueWithMessages(bodies) {
    const key = uniqueName('list');
    // Index 0 (the LPOP end) is the head the adapter reads first.
    await native.rpush(key, ...bodies.map((b) => Buffer.from(b)));
    return { queueId: `list:${key}`, name: key };
  },
  countMessages: (key) => native.llen(key),
  deleteQueue: async (key) => {
    await native.del(key);
  },
  supportsHeaders: false,
  createUnreachableAdapter: unreachable,
});

runAdapterContract({
  name: 'redis-bullmq-waiting',
  createAdapter: () => adapterFor(),
  async createQueueWithMessages(bodies) {
    const name = uniqueName('bull');
    const queue = new Queue(name, { connection: native });
    bullQueues.set(name, queue);
    const jobs = await queue.addBulk(bodies.map((_, i) => ({ name: 'contract', data: { i } })));
    // BullMQ JSON-encodes job data, so it cannot hold arbitrary bytes. The adapter shows the
    // job hash's `data` field exactly as stored; writing the contract's bytes into that field of
    // real, queued jobs proves the byte-exact path (text, binary, 1 MiB) for BullMQ too.
    for (let i = 0; i < jobs.length; i++) await native.hset(`bull:${name}:${jobs[i]!.id!}`, 'data', Buffer.from(bodies[i]!));
    return { queueId: `bullmq:bull:${name}`, name };
  },
  countMessages: async (name) => {
    const q = bullQueues.get(name) ?? new Queue(name, { connection: native });
    return q.getWaitingCount();
  },
  deleteQueue: async (name) => {
    const q = bullQueues.get(name) ?? new Queue(name, { connection: native });
    await q.obliterate({ force: true });
  },
  peekOptions: { state: 'waiting' },
  supportsHeaders: false,
  createUnreachableAdapter: unreachable,
});
