import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter } from '../../core/adapters/redis';
import type { MoveHooks, MoveSummary, RedriveDecision } from '../../core/adapters/redrive-types';
import { QueuescopeError, type QueueMessage } from '../../shared/domain';
import { readSnapshotFile } from '../../core/snapshot/reader';
import { runCli, type CliRun } from './fixtures/run-cli';
import { REDIS_URL, uniqueName } from './env';

/**
 * A Redis list DLQ redrive while another client pops the DLQ steadily (a consumer of the DLQ
 * list, LPOP at the head the redrive reads from). The move script checked the batch's bytes at
 * the index they were read at, so a pop between the read and the move shifted them and the run
 * stopped with exit 3 ("the DLQ list changed") — nothing lost, but it could never finish while the
 * popper ran. Now the script finds the batch's entries that are still in the list (shifted by the
 * pops), moves those, and reports the ones the other client took; every entry ends up exactly once
 * in the target or with the popper, and the counts say which.
 */

const native = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const keys: string[] = [];
let dir = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-list-popper-'));
});

afterAll(async () => {
  if (keys.length > 0) await native.del(...keys);
  native.disconnect();
  await rm(dir, { recursive: true, force: true });
});

function key(label: string): string {
  const k = uniqueName(`redis-left-${label}`);
  keys.push(k);
  return k;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Runs the CLI (`argv`, in the test's dir) while another consumer of `dlq` (its own connection)
 * LPOPs one entry at a time, ~every 0.5 ms, until the run has ended; returns the run and the
 * entries the consumer popped, in pop order.
 */
async function redriveWhilePopping(dlq: string, argv: string[]): Promise<{ r: CliRun; popped: string[] }> {
  const popper = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const popped: string[] = [];
  let stop = false;
  const popping = (async () => {
    while (!stop) {
      const e = await popper.lpop(dlq);
      if (e !== null) popped.push(e);
      await sleep(0.5);
    }
  })();
  try {
    return { r: await runCli(dir, argv), popped };
  } finally {
    stop = true;
    await popping;
    popper.disconnect();
  }
}

describe('list DLQ redrive while another client pops it', () => {
  it('moves what is still there, reports what the popper took, and every entry ends up exactly once', async () => {
    const dlq = key('dlq');
    const target = key('target');
    const N = 3000;
    const all = Array.from({ length: N }, (_, i) => JSON.stringify({ orderId: `P-${String(i)}`, error: 'HTTP 503' }));
    await native.rpush(dlq, ...all);

    // The other consumer pops the DLQ while the CLI redrives it.
    const { r, popped } = await redriveWhilePopping(dlq, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${target}`, '--batch', '50', '--yes', '--json']);
    // Exit 7 (partial: some selected entries were not moved, the popper has them), not 3.
    expect(r.code, r.stderr + r.stdout).toBe(7);
    const out = JSON.parse(r.stdout) as { status: string; result: { examined: number; moved: number; failed: number; skipped: number; warnings?: string[] }; errors: { message: string }[] };
    expect(out.status).toBe('completed');
    const res = out.result;
    const moved = await native.lrange(target, 0, -1);
    const left = await native.lrange(dlq, 0, -1);

    // Exactly once: in the target, with the popper, or (if the run ended first) still in the DLQ.
    const seen = [...moved, ...popped, ...left].sort();
    expect(seen).toEqual([...all].sort());
    // The counts are true: moved = what the target holds (in DLQ order); the entries the run read
    // and could not move are those the popper took after the read; the ones it never read were
    // popped (or are left) before it got to them.
    expect(res.moved).toBe(moved.length);
    expect(moved).toEqual(all.filter((e) => moved.includes(e)));
    expect(res.skipped).toBe(0);
    expect(res.examined).toBe(res.moved + res.failed);
    const taken = res.failed;
    expect(popped.length + left.length).toBe(taken + (N - res.examined));
    // The race did happen (entries taken between a batch's read and its move), and it is said with the count.
    expect(taken).toBeGreaterThan(0);
    expect(res.moved).toBeGreaterThan(0);
    const w = (res.warnings ?? []).join('\n');
    expect(w).toContain(`${String(taken)} entr`);
    expect(w).toMatch(/taken by another client/);
    // Each taken entry is listed as not moved (not as "stayed in the DLQ": it is not there).
    expect(out.errors.length).toBeGreaterThan(0);
    for (const e of out.errors) expect(e.message).toMatch(/^Message #\d+~[0-9a-f]{8} was not moved: Entry #\d+~[0-9a-f]{8} was taken by another client .*it is not in the DLQ, that client has it\.$/);
  }, 60_000);

  it('with a filter (entries left before each batch): batches shifted by the pops are found and moved, what the popper took is reported, nothing selected is left behind', async () => {
    const dlq = key('dlq-filter');
    const target = key('target-filter');
    const N = 3000;
    // Every third entry is selected (text:SEL); the others stay in the DLQ, so later batches sit after them.
    const all = Array.from({ length: N }, (_, i) => JSON.stringify({ orderId: `F-${String(i)}`, tag: i % 3 === 0 ? 'SEL' : 'KEEP', error: 'HTTP 503' }));
    const selected = all.filter((e) => e.includes('SEL'));
    await native.rpush(dlq, ...all);
    const { r, popped } = await redriveWhilePopping(dlq, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${target}`, '--filter', 'text:SEL', '--batch', '50', '--yes', '--json']);
    expect([0, 7], r.stderr + r.stdout).toContain(r.code);
    const res = (JSON.parse(r.stdout) as { result: { examined: number; moved: number; failed: number; skipped: number; warnings?: string[]; notes: string[] } }).result;
    const moved = await native.lrange(target, 0, -1);
    const left = await native.lrange(dlq, 0, -1);
    expect([...moved, ...popped, ...left].sort()).toEqual([...all].sort());
    // Only selected entries moved, in DLQ order, once each; none selected is left in the DLQ (the run read to the end).
    expect(moved).toEqual(selected.filter((e) => moved.includes(e)));
    expect(res.moved).toBe(moved.length);
    expect(left.filter((e) => e.includes('SEL'))).toEqual([]);
    expect(res.examined).toBe(res.moved + res.failed + res.skipped);
    // The failed ones are selected entries the popper took (it has them), and the count says so.
    expect(res.failed).toBeLessThanOrEqual(popped.filter((e) => e.includes('SEL')).length);
    if (res.failed > 0) expect((res.warnings ?? []).join('\n')).toContain(`${String(res.failed)} entr`);
    // The pops shifted batches between their read and their move, and the moves followed them.
    expect(res.failed > 0 || res.notes.some((n) => /where the pops had put them/.test(n))).toBe(true);
    // Exit 7 when something selected was taken (or the popper took entries before the run read them: fewer examined than the dry run).
    if (res.failed > 0) expect(r.code).toBe(7);
  }, 60_000);

  // The backup also held the entries the popper took (written before the move), and reinject --from
  // published the whole backup: every taken entry a second time, a duplicate of what that client has.
  it('reinject of the backup publishes what the run moved, leaves out what the popper took (naming them), and publishes them only with --include-not-moved', async () => {
    const dlq = key('dlq-back');
    const target = key('target-back');
    const restored = key('restored');
    const restoredAll = key('restored-all');
    const N = 3000;
    const all = Array.from({ length: N }, (_, i) => JSON.stringify({ orderId: `R-${String(i)}`, error: 'HTTP 503' }));
    await native.rpush(dlq, ...all);
    const { r, popped } = await redriveWhilePopping(dlq, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${target}`, '--batch', '50', '--yes', '--json']);
    expect(r.code, r.stderr + r.stdout).toBe(7);
    const out = JSON.parse(r.stdout) as { result: { moved: number; failed: number; backupPath: string }; errors: { message: string }[] };
    const { moved: movedCount, failed: taken, backupPath } = out.result;
    expect(taken).toBeGreaterThan(0);
    const moved = await native.lrange(target, 0, -1);
    expect(moved.length).toBe(movedCount);
    // The backup holds the moved entries and the taken ones (each written before its move).
    const backup = (await readSnapshotFile(backupPath))[0]?.messages ?? [];
    expect(backup.length).toBe(movedCount + taken);
    // The backed-up entries that did not move are the ones the popper took (the run's errors name them; --json lists the first 20).
    const takenEntries = backup.filter((m) => !moved.includes(m.body.data));
    expect(takenEntries.length).toBe(taken);
    const takenBodies = takenEntries.map((m) => m.body.data);
    const takenIds = takenEntries.map((m) => m.id);
    expect(takenBodies.every((b) => popped.includes(b))).toBe(true);
    for (const e of out.errors) expect(takenIds).toContain(/^Message (#\d+~[0-9a-f]{8}) was not moved/.exec(e.message)?.[1]);

    // Undo into a fresh list: exactly what the run moved, in order; no entry the popper has.
    const back = await runCli(dir, ['reinject', REDIS_URL, `list:${restored}`, '--from', backupPath, '--yes', '--json']);
    expect(back.code, back.stderr + back.stdout).toBe(0);
    const got = await native.lrange(restored, 0, -1);
    expect(got).toEqual(moved);
    expect(got.filter((b) => takenBodies.includes(b))).toEqual([]);
    const res = (JSON.parse(back.stdout) as { result: { read: number; published: number; leftOut: number; notes: string[] } }).result;
    expect(res).toMatchObject({ read: movedCount + taken, published: movedCount, leftOut: taken });
    // Said before publishing: how many, why, which.
    const plural = taken === 1 ? 'it' : 'them';
    expect(back.stderr).toContain(`warning: ${String(taken)} of the ${String(movedCount + taken)} messages in ${backupPath} were not moved by the redrive that wrote it`);
    expect(back.stderr).toContain(`${String(taken)} taken by another client (it popped ${plural} from the DLQ after the run read ${plural}: not in the DLQ, that client has ${plural})`);
    expect(back.stderr).toContain(`Not moved: ${takenIds.slice(0, 20).join(', ')}${taken > 20 ? `, and ${String(taken - 20)} more` : ''}.`);
    expect(back.stderr).toContain(`They are left out: ${String(movedCount)} are published.`);
    expect(back.stderr).toContain('--include-not-moved');

    // Asked for: all of the backup, with the warning that they are duplicates.
    const whole = await runCli(dir, ['reinject', REDIS_URL, `list:${restoredAll}`, '--from', backupPath, '--include-not-moved', '--yes', '--json']);
    expect(whole.code, whole.stderr + whole.stdout).toBe(0);
    expect(await native.lrange(restoredAll, 0, -1)).toEqual(backup.map((m) => m.body.data));
    expect(whole.stderr).toContain('They are published too (--include-not-moved), which duplicates those still in the DLQ and those the other client took');
    expect((JSON.parse(whole.stdout) as { result: { published: number; leftOut: number } }).result).toMatchObject({ published: movedCount + taken, leftOut: 0 });
  }, 60_000);

  /**
   * One batch of `list` (its first `batch` entries, moved except those starting with "K"), with `between` run
   * after the read and backup, before the move. Returns the summary or the error, and what the
   * DLQ and the target hold after.
   */
  async function oneBatch(list: string[], between: (k: string) => Promise<unknown>, batch = list.length): Promise<{ out: MoveSummary | QueuescopeError; dlq: string[]; target: string[] }> {
    const dlq = key('edge');
    const target = key('edge-t');
    await native.rpush(dlq, ...list);
    const a = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
    const decide = (m: QueueMessage): RedriveDecision => (m.body.data.startsWith('K') ? { action: 'skip', reason: 'kept' } : { action: 'move', targetQueueId: `list:${target}` });
    const hooks: MoveHooks = { gate: () => Promise.resolve(), decide, beforeMove: async () => {
      await between(dlq);
    }, onBatch: () => undefined };
    try {
      const out = await a.redrive!.moveClientSide({ sourceQueueId: `list:${dlq}`, batchSize: batch, cutoffMs: Date.now(), maxMessages: batch, dryRun: false }, hooks).catch((e: unknown) => e as QueuescopeError);
      return { out, dlq: await native.lrange(dlq, 0, -1), target: await native.lrange(target, 0, -1) };
    } finally {
      await a.close();
    }
  }

  /**
   * A client-side run (not dry) of the list `dlq` in batches of 2, every entry moved to `target`
   * except those `skip` keeps. `before.read` runs before each batch is read, `before.move` between a
   * batch's read and its move (the 1-based batch number). Returns the summary, or the error thrown.
   */
  async function runBatchesOf2(dlq: string, target: string, before: { read?: (batch: number) => Promise<unknown>; move?: (batch: number) => Promise<unknown> }, skip: (body: string) => boolean = () => false): Promise<MoveSummary | QueuescopeError> {
    const a = createRedisAdapter({ kind: 'redis', url: REDIS_URL });
    let reads = 0;
    let moves = 0;
    const hooks: MoveHooks = {
      gate: async () => {
        await before.read?.(++reads);
      },
      decide: (m) => (skip(m.body.data) ? { action: 'skip', reason: 'kept' } : { action: 'move', targetQueueId: `list:${target}` }),
      beforeMove: async () => {
        await before.move?.(++moves);
      },
      onBatch: () => undefined,
    };
    try {
      return await a.redrive!.moveClientSide({ sourceQueueId: `list:${dlq}`, batchSize: 2, cutoffMs: Date.now(), maxMessages: 100, dryRun: false }, hooks).catch((e: unknown) => e as QueuescopeError);
    } finally {
      await a.close();
    }
  }

  // CI (9a99ee3): the popper emptied the DLQ before the run read its last entries; Redis deletes an
  // empty list, so the next read found no key and the run failed with QUEUE_NOT_FOUND (exit 4)
  // instead of ending partial (exit 7) with what it moved and what the other client took.
  it('a DLQ list emptied by another client mid-run ends the run as read to its end: moved and taken counted, the entries never read named as taken in a warning', async () => {
    const dlq = key('emptied');
    const target = key('emptied-t');
    await native.rpush(dlq, 'A', 'B', 'C', 'D', 'E', 'F');
    // Between the second batch's read and its move, the other client pops C and everything after it: the list is gone.
    const out = await runBatchesOf2(dlq, target, { move: (b) => (b === 2 ? native.lpop(dlq, 10) : Promise.resolve()) });
    expect(out).toMatchObject({ examined: 4, moved: 2, failed: 2, stoppedBecause: 'exhausted' });
    expect(await native.exists(dlq)).toBe(0);
    expect(await native.lrange(target, 0, -1)).toEqual(['A', 'B']);
    const w = ((out as MoveSummary).warnings ?? []).join('\n');
    expect(w).toMatch(/^2 entries this run read and selected to move were taken by another client/);
    expect(w).toContain(`The DLQ list ${dlq} was emptied by another client while this run read it`);
    expect(w).toContain('at least 2 entries it held then were removed by another client before the run reached them — not examined, not moved, and not in the DLQ.');
  });

  // Entries removed at the tail before the run reached them (the list still exists) were not counted anywhere.
  it('entries removed before the run reached them are counted in a warning (at least N), the run reads to the end', async () => {
    const dlq = key('shrunk');
    const target = key('shrunk-t');
    await native.rpush(dlq, 'A', 'B', 'C', 'D', 'E', 'F');
    // Before the second batch is read, another client takes E and F from the tail; C stays (kept).
    const out = await runBatchesOf2(dlq, target, { read: (b) => (b === 2 ? native.rpop(dlq, 2) : Promise.resolve()) }, (body) => body === 'C');
    expect(out).toMatchObject({ examined: 4, moved: 3, skipped: 1, failed: 0, stoppedBecause: 'exhausted' });
    expect(await native.lrange(dlq, 0, -1)).toEqual(['C']);
    expect(await native.lrange(target, 0, -1)).toEqual(['A', 'B', 'D']);
    expect((out as MoveSummary).warnings).toEqual([`The DLQ list ${dlq} ended before this run had read as many entries as it held when the run started: at least 2 entries it held then were removed by another client before the run reached them — not examined, not moved, and not in the DLQ.`]);
  });

  // A key that became another type mid-run is not "emptied": the run still stops with the error.
  it('a DLQ key replaced by another type mid-run still stops the run with QUEUE_NOT_FOUND', async () => {
    const dlq = key('retyped');
    const target = key('retyped-t');
    await native.rpush(dlq, 'A', 'B', 'C', 'D');
    // Before the second batch is read (the first one moved), the key becomes a string.
    const out = await runBatchesOf2(dlq, target, { read: (b) => (b === 2 ? native.multi().del(dlq).set(dlq, 'x').exec() : Promise.resolve()) });
    expect(out).toBeInstanceOf(QueuescopeError);
    expect((out as QueuescopeError).code).toBe('QUEUE_NOT_FOUND');
    expect((out as QueuescopeError).message).toContain('is now a string, not a list');
    expect(await native.lrange(target, 0, -1)).toEqual(['A', 'B']);
  });

  it('moves only what it can tell: ambiguous identical entries, a taken entry pushed back, or a push at the head stop the run with nothing moved; a batch all taken moves nothing and says so', async () => {
    // Identical entries: after one pop, [A, A] fits one pop (the last two A) and two pops (the last A,
    // then an entry pushed since): how many the popper took cannot be told.
    const same = await oneBatch(['A', 'A', 'A'], (k) => native.lpop(k));
    expect(same.out).toBeInstanceOf(QueuescopeError);
    expect((same.out as QueuescopeError).message).toMatch(/match more than one place .*identical contents.*Nothing in this batch was moved/);
    expect(same).toMatchObject({ dlq: ['A', 'A'], target: [] });
    // Identical entries followed by another: only one pop fits, and identical entries are interchangeable.
    const told = await oneBatch(['A', 'A', 'A', 'B'], (k) => native.lpop(k));
    expect(told.out).toMatchObject({ examined: 4, moved: 3, failed: 1 });
    expect(told).toMatchObject({ dlq: [], target: ['A', 'A', 'B'] });
    // The popper took A and pushed it back at the tail (a consumer that re-dead-letters, or rotates the
    // list): A is in the DLQ again, so it is not reported taken; nothing moves.
    const back = await oneBatch(['A', 'B', 'C'], async (k) => native.rpush(k, (await native.lpop(k)) as string), 2);
    expect((back.out as QueuescopeError).message).toMatch(/the same bytes were pushed back .*Nothing in this batch was moved/);
    expect(back).toMatchObject({ dlq: ['B', 'C', 'A'], target: [] });
    // An older copy of the taken entry further in the list (there when the batch was read) is another entry.
    const older = await oneBatch(['A', 'B', 'C', 'D', 'A'], (k) => native.lpop(k), 2);
    expect(older.out).toMatchObject({ examined: 2, moved: 1, failed: 1 });
    expect(older).toMatchObject({ dlq: ['C', 'D', 'A'], target: ['B'] });
    // A push at the head is not a pop: the batch is still in the list, elsewhere; nothing moves.
    const pushed = await oneBatch(['A', 'B'], (k) => native.lpush(k, 'X'));
    expect((pushed.out as QueuescopeError).code).toBe('BROKER_ERROR');
    expect(pushed).toMatchObject({ dlq: ['X', 'A', 'B'], target: [] });
    // More pushed at the head than the batch holds: the batch is further right, not gone; nothing moves.
    const pushedMany = await oneBatch(['A', 'B', 'C'], (k) => native.lpush(k, 'X', 'Y', 'Z'), 2);
    expect((pushedMany.out as QueuescopeError).code).toBe('BROKER_ERROR');
    expect(pushedMany).toMatchObject({ dlq: ['Z', 'Y', 'X', 'A', 'B', 'C'], target: [] });
    // The popper took the whole batch: nothing to move, both reported taken.
    const all = await oneBatch(['A', 'B'], async (k) => native.lpop(k, 2));
    expect(all.out).toMatchObject({ examined: 2, moved: 0, failed: 2 });
    expect((all.out as MoveSummary).warnings?.[0]).toMatch(/^2 entries this run read and selected to move were taken by another client/);
    expect(all).toMatchObject({ dlq: [], target: [] });
    // Kept entries before moved ones, two popped (a kept one and a selected one): the rest moves, the kept one stays.
    const mixed = await oneBatch(['K1', 'S1', 'K2', 'S2', 'S3'], (k) => native.lpop(k, 2));
    expect(mixed.out).toMatchObject({ examined: 5, moved: 2, failed: 1, skipped: 2 });
    expect(mixed).toMatchObject({ dlq: ['K2'], target: ['S2', 'S3'] });
  });
});
