import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createRedisAdapter, type RedisAdapter } from '../../core/adapters/redis';
import type { MoveHooks, RedriveMover } from '../../core/adapters/redrive-types';
import { planRedrive, type RedriveEnv } from '../../core/redrive/engine';
import { AuditLog } from '../../core/services/audit-log';
import type { QueueMessage } from '../../shared/domain';
import { parseFilter } from '../../shared/redrive/filter';
import { REDIS_URL, uniqueName } from './env';

/**
 * A Redis list DLQ that workers pop and push while a redrive reads it. The dry run used to read by
 * offset (LRANGE off..off+n): after a pop at the head it skipped as many entries, after a push it
 * counted entries twice, and the plan's counts were off without a word. It now reads with the
 * peek's re-aligning list cursor: every entry that was in the list at the start is examined exactly
 * once, and when it cannot re-align (the last entries examined were consumed) the plan warns.
 *
 * The workers are a second ioredis connection acting in the mover's `gate` hook, which the engine
 * awaits before each batch is read: the mover itself is the real one, on the real Redis.
 */

const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const adapters: RedisAdapter[] = [];
const keys: string[] = [];
let dir = '';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'qs-list-moving-'));
});

afterAll(async () => {
  for (const a of adapters) await a.close();
  if (keys.length > 0) await native.del(...keys);
  native.disconnect();
  rmSync(dir, { recursive: true, force: true });
});

function key(label: string): string {
  const k = uniqueName(label);
  keys.push(k);
  return k;
}

/** Entry `i` of a seeded list: its body names it, entries 100–129 are "marked" (what a filter selects). */
function entry(i: number): string {
  return JSON.stringify({ orderId: `L-${String(i)}`, ...(i >= 100 && i < 130 ? { note: 'mark' } : {}) });
}

async function seed(k: string, n: number): Promise<string[]> {
  const all = Array.from({ length: n }, (_, i) => entry(i));
  await native.rpush(k, ...all);
  return all;
}

/**
 * The real Redis mover, with `before(batch)` run in the gate before batch 1, 2, … is read (batch 0
 * = the first), and every message it hands the engine recorded.
 */
function instrumented(a: RedisAdapter, before: (batch: number) => Promise<void>): { mover: RedriveMover; decided: QueueMessage[] } {
  const real = a.redrive;
  if (!real) throw new Error('no redrive');
  const decided: QueueMessage[] = [];
  const mover: RedriveMover = Object.create(real) as RedriveMover;
  mover.moveClientSide = (options, hooks, signal) => {
    let batch = 0;
    const wrapped: MoveHooks = {
      ...hooks,
      gate: async (n) => {
        await before(batch++);
        return hooks.gate(n);
      },
      decide: (m) => {
        decided.push(m);
        return hooks.decide(m);
      },
    };
    return real.moveClientSide(options, wrapped, signal);
  };
  return { mover, decided };
}

function envOf(a: RedisAdapter, mover: RedriveMover): RedriveEnv {
  return {
    adapter: { getQueue: (id, s) => a.getQueue(id, s), listQueues: (o, s) => a.listQueues(o, s), redrive: mover },
    connectionLabel: 'redis test',
    actor: 'cli',
    auditLog: new AuditLog({ configDir: dir }),
    configDir: dir,
  };
}

function newAdapter(): RedisAdapter {
  const a = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
  adapters.push(a);
  return a;
}

const bodyText = (m: QueueMessage): string => Buffer.from(m.body.data, m.body.encoding === 'utf8' ? 'utf8' : 'base64').toString('utf8');

describe('redrive dry run of a Redis list that moves while it is read', () => {
  it('workers pop 30 entries at the head after batch 1 and push 20 there after batch 2: every entry of the start is examined exactly once', async () => {
    const a = newAdapter();
    const dlq = key('list-moving-dlq');
    const target = key('list-moving-work');
    const originals = await seed(dlq, 300);
    const { mover, decided } = instrumented(a, async (batch) => {
      // Consumers LPOP 30 (entries the dry run examined already), then producers LPUSH 20 new ones.
      if (batch === 1) for (let i = 0; i < 30; i++) await native.lpop(dlq);
      if (batch === 2) await native.lpush(dlq, ...Array.from({ length: 20 }, (_, i) => JSON.stringify({ orderId: `new-${String(i)}`, note: 'mark' })));
    });
    const plan = await planRedrive(envOf(a, mover), {
      dlqId: `list:${dlq}`,
      selection: { kind: 'filter', filter: parseFilter(['text:mark']) },
      targetQueueId: `list:${target}`,
      batchSize: 100,
    });
    // What the dry run examined: each of the 300 entries present at the start, once, in order.
    expect(decided.map(bodyText)).toEqual(originals);
    expect(plan.examined).toBe(300);
    // The filter selects entries 100–129 (those at offsets 70–99 after the pop, which offset reading skipped).
    expect(plan.toMove).toBe(30);
    expect(plan.toSkip).toBe(270);
    expect(plan.targets.map((t) => t.count)).toEqual([30]);
    expect(plan.stoppedBecause).toBe('exhausted');
    expect(plan.warnings.filter((w) => w.includes(dlq))).toEqual([]);
    // Both moves were re-aligned on, and the plan says so.
    expect(plan.notes).toContain(`The list ${dlq} moved 2 times while it was read (entries pushed or popped at its left end); each time reading re-aligned on the last entry read, so none was skipped or read twice.`);
    // The dry run changed nothing: the list holds what the workers left.
    const now = await native.lrange(dlq, 0, -1);
    expect(now).toHaveLength(290);
    expect(now.slice(20)).toEqual(originals.slice(30));
  });

  it('says in the plan when it cannot re-align (the entries examined last were consumed): its counts may be off', async () => {
    const a = newAdapter();
    const dlq = key('list-gone-dlq');
    await seed(dlq, 400);
    const { mover, decided } = instrumented(a, async (batch) => {
      // After batch 1 consumers take 250: the 100 examined and 150 more, beyond where the read could look.
      if (batch === 1) for (let i = 0; i < 250; i++) await native.lpop(dlq);
    });
    const plan = await planRedrive(envOf(a, mover), { dlqId: `list:${dlq}`, selection: { kind: 'all' }, targetQueueId: `list:${key('list-gone-work')}`, batchSize: 100 });
    const w = plan.warnings.filter((x) => x.includes(dlq));
    expect(w).toHaveLength(1);
    expect(w[0]).toMatch(/^The list \S+ changed between two pages, so an unknown number of entries may have been skipped or read twice: the last entry read \(…~[0-9a-f]{8}\) is no longer within \d+ positions of where it was .* So this dry run's counts \(examined, would move, would stay\) may be off by as many; stop the DLQ's other clients for exact counts\.$/);
    // It read on from the head: the 150 left, none twice.
    expect(plan.examined).toBe(decided.length);
    expect(new Set(decided.map(bodyText)).size).toBe(decided.length);
    expect(decided.slice(100).map(bodyText)).toEqual(Array.from({ length: 150 }, (_, i) => entry(250 + i)));
  });

  it('a run (not dry) whose head is popped between batches moves what it examined, at the re-aligned index', async () => {
    const a = newAdapter();
    const dlq = key('list-run-dlq');
    const target = key('list-run-work');
    const originals = await seed(dlq, 300);
    const real = a.redrive;
    if (!real) throw new Error('no redrive');
    let batch = 0;
    const decided: string[] = [];
    // Even entries move, odd ones stay; before every batch after the first a consumer pops one (an odd one that stayed).
    const popped: string[] = [];
    const summary = await real.moveClientSide(
      { sourceQueueId: `list:${dlq}`, batchSize: 50, cutoffMs: Date.now(), maxMessages: null, dryRun: false },
      {
        gate: async () => {
          if (batch++ > 0) popped.push((await native.lpop(dlq)) as string);
        },
        decide: (m) => {
          const t = bodyText(m);
          decided.push(t);
          const i = Number((JSON.parse(t) as { orderId: string }).orderId.slice(2));
          return i % 2 === 0 ? { action: 'move', targetQueueId: `list:${target}` } : { action: 'skip', reason: 'odd' };
        },
        beforeMove: () => Promise.resolve(),
        onBatch: () => undefined,
      },
    );
    expect(decided).toEqual(originals);
    expect(summary).toMatchObject({ examined: 300, moved: 150, skipped: 150, failed: 0 });
    expect(summary.warnings).toBeUndefined();
    expect(summary.notes).toEqual([`The list ${dlq} moved 5 times while it was read (entries pushed or popped at its left end); each time reading re-aligned on the last entry read, so none was skipped or read twice.`]);
    expect(await native.lrange(target, 0, -1)).toEqual(originals.filter((_, i) => i % 2 === 0));
    expect(popped).toEqual(originals.filter((_, i) => i % 2 === 1).slice(0, 5));
    expect(await native.lrange(dlq, 0, -1)).toEqual(originals.filter((_, i) => i % 2 === 1).slice(5));

    // Without other clients (the cursor rebuilt after each commit only): no note, no warning, exact contents.
    const quiet = key('list-run-quiet');
    await seed(quiet, 300);
    const still = await real.moveClientSide(
      { sourceQueueId: `list:${quiet}`, batchSize: 50, cutoffMs: Date.now(), maxMessages: null, dryRun: false },
      {
        gate: () => Promise.resolve(),
        decide: (m) => (m.id.startsWith('#') && (JSON.parse(bodyText(m)) as { orderId: string }).orderId.endsWith('0') ? { action: 'skip', reason: 'x' } : { action: 'move', targetQueueId: `list:${target}-2` }),
        beforeMove: () => Promise.resolve(),
        onBatch: () => undefined,
      },
    );
    keys.push(`${target}-2`);
    expect(still).toEqual({ examined: 300, moved: 270, skipped: 30, failed: 0, possibleDuplicates: 0, stoppedBecause: 'exhausted' });
    expect(await native.lrange(quiet, 0, -1)).toEqual(originals.filter((_, i) => i % 10 === 0));
  });
});
