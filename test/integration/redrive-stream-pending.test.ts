import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createRedisAdapter } from '../../core/adapters/redis';
import type { MoveBatchResult } from '../../core/adapters/redrive-types';
import { EXIT } from '../../core/cli/exit-codes';
import { createApiHandlers, dispatchApi } from '../../core/services/api';
import { ConnectionManager } from '../../core/services/connection-manager';
import { OperationManager } from '../../core/services/operations';
import { ProfileStore } from '../../core/services/profile-store';
import type { ConnectionProfile } from '../../shared/domain';
import type { RedrivePlan, RedriveResult } from '../../shared/redrive/types';
import { REDIS_URL, uniqueName } from './env';
import { runCli } from './fixtures/run-cli';

/**
 * A stream DLQ with consumer groups whose consumers read entries and have not XACKed them: an
 * alerting consumer that XREADGROUPed 3 entries just now (likely processing them), and a DLQ
 * processor that read 2 entries two hours ago and stopped. The dry run must name both groups, their
 * consumers, counts and idle times; the run leaves the 3 fresh ones in the DLQ (still pending, so
 * the alerting consumer's XACK works) and moves the long-idle ones, XACKed. With --include-pending
 * the fresh ones would move too, with a warning. Shared Redis, database 9, unique keys (deleted).
 */

const url9 = `${REDIS_URL.replace(/\/\d*$/, '')}/9`;
const db = new Redis(url9, { maxRetriesPerRequest: null });
const keys: string[] = [];
let dir = '';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'qs-stream-held-'));
});

afterAll(async () => {
  if (keys.length > 0) await db.del(...keys);
  db.disconnect();
  rmSync(dir, { recursive: true, force: true });
});

describe('redrive of a stream DLQ with pending entries in its consumer groups', () => {
  it('warns per group and consumer, leaves entries delivered just now in the DLQ (still pending) and moves long-idle ones', async () => {
    const dlq = uniqueName('stream-held-dlq');
    const target = uniqueName('stream-held-work');
    keys.push(dlq, target);
    const ids: string[] = [];
    for (let i = 1; i <= 10; i++) ids.push((await db.xadd(dlq, '*', 'body', JSON.stringify({ orderId: i }), 'error', 'HTTP 503')) as string);
    // A DLQ processor read entries 1–2 and stopped two hours ago (XCLAIM … IDLE sets the idle time).
    await db.xgroup('CREATE', dlq, 'dlq-processor', '0');
    await db.xreadgroup('GROUP', 'dlq-processor', 'dead-worker', 'COUNT', 2, 'STREAMS', dlq, '>');
    await db.xclaim(dlq, 'dlq-processor', 'dead-worker', 0, ids[0] as string, ids[1] as string, 'IDLE', 2 * 3_600_000);
    // An alerting consumer reads entries 5–7 right now.
    await db.xgroup('CREATE', dlq, 'alerts', ids[3] as string);
    await db.xreadgroup('GROUP', 'alerts', 'alert-worker', 'COUNT', 3, 'STREAMS', dlq, '>');

    const dry = await runCli(dir, ['redrive', url9, `stream:${dlq}`, '--to', `stream:${target}`, '--dry-run', '--json']);
    expect(dry.code).toBe(EXIT.OK);
    const plan = JSON.parse(dry.stdout) as RedrivePlan;
    expect(plan.examined).toBe(10);
    expect(plan.toMove).toBe(7);
    expect(plan.toSkip).toBe(3);
    expect(plan.skipped).toEqual([{ reason: 'held: pending in group "alerts", delivered < 60 s ago (likely being processed now)', category: 'held', count: 3 }]);
    const fresh = plan.warnings.find((w) => w.includes('"alerts"'));
    expect(fresh).toMatch(new RegExp(`^3 entries of stream "${dlq}" are pending in consumer group "alerts" \\(consumer "alert-worker": 3, idle \\d+\\.\\d s(–\\d+\\.\\d s)?\\): delivered less than 60 s ago and not acknowledged, so likely being processed right now; they stay in the DLQ`));
    const idle = plan.warnings.find((w) => w.includes('"dlq-processor"'));
    expect(idle).toMatch(new RegExp(`^2 entries of stream "${dlq}" are pending in consumer group "dlq-processor" \\(consumer "dead-worker": 2, idle 2\\.0 h\\): delivered 60 s or more ago and never acknowledged .*; they would be moved and XACKed in the group$`));
    // Human output: the same warnings.
    const human = await runCli(dir, ['redrive', url9, `stream:${dlq}`, '--to', `stream:${target}`, '--dry-run']);
    expect(human.stdout).toContain(`warning: 3 entries of stream "${dlq}" are pending in consumer group "alerts" (consumer "alert-worker": 3`);
    expect(human.stdout).toMatch(/would stay 3:\n\s+3 {3}held: pending in group "alerts"/);
    // Nothing changed: the alerting consumer still holds its 3.
    expect(await db.xlen(dlq)).toBe(10);

    // --include-pending: the fresh ones would move too, with the warning that someone is on them.
    const incl = JSON.parse((await runCli(dir, ['redrive', url9, `stream:${dlq}`, '--to', `stream:${target}`, '--dry-run', '--json', '--include-pending'])).stdout) as RedrivePlan;
    expect(incl.toMove).toBe(10);
    expect(incl.warnings.find((w) => w.includes('"alerts"'))).toMatch(/: delivered less than 60 s ago and likely being processed right now, yet would be moved \(pending entries included\) and XACKed in the group: that consumer's XACK or XCLAIM finds nothing/);
    expect(incl.filter).toContain('including pending entries');

    const run = await runCli(dir, ['redrive', url9, `stream:${dlq}`, '--to', `stream:${target}`, '--yes', '--json']);
    expect(run.code).toBe(EXIT.OK);
    const result = (JSON.parse(run.stdout) as { result: RedriveResult }).result;
    expect([result.examined, result.moved, result.skipped]).toEqual([10, 7, 3]);
    expect(result.warnings?.find((w) => w.includes('"alerts"'))).toContain('they stay in the DLQ');
    expect(result.warnings?.find((w) => w.includes('"dlq-processor"'))).toContain('they were moved and XACKed in the group');

    // The 3 entries being processed are still in the DLQ and still pending: the consumer's XACK works.
    expect((await db.xrange(dlq, '-', '+')).map(([id]) => id)).toEqual(ids.slice(4, 7));
    expect(await db.xlen(target)).toBe(7);
    expect((await db.xpending(dlq, 'dlq-processor'))[0]).toBe(0);
    expect(await db.xack(dlq, 'alerts', ...ids.slice(4, 7))).toBe(3);

    // Human result output carries the warnings too.
    const again = await runCli(dir, ['redrive', url9, `stream:${dlq}`, '--to', `stream:${target}`, '--yes']);
    expect(again.code).toBe(EXIT.OK);
    expect(await db.xlen(dlq)).toBe(0);
  });

  it('the real run prints the warning under its result', async () => {
    const dlq = uniqueName('stream-held-dlq2');
    const target = uniqueName('stream-held-work2');
    keys.push(dlq, target);
    for (let i = 1; i <= 4; i++) await db.xadd(dlq, '*', 'body', `m${i}`);
    await db.xgroup('CREATE', dlq, 'alerts', '0');
    await db.xreadgroup('GROUP', 'alerts', 'pager', 'COUNT', 1, 'STREAMS', dlq, '>');
    const run = await runCli(dir, ['redrive', url9, `stream:${dlq}`, '--to', `stream:${target}`, '--yes']);
    expect(run.code).toBe(EXIT.OK);
    expect(run.stdout).toMatch(/Redrive finished \(client-side\): 3 moved, 1 stayed/);
    expect(run.stdout).toContain(`warning: 1 entry of stream "${dlq}" is pending in consumer group "alerts" (consumer "pager": 1, idle `);
    expect(await db.xlen(dlq)).toBe(1);
    // Only the held entry is left: nothing to move, and the CLI says why.
    const none = await runCli(dir, ['redrive', url9, `stream:${dlq}`, '--to', `stream:${target}`, '--yes']);
    expect(none.code).toBe(EXIT.OK);
    expect(none.stdout).toBe('Nothing to move: 1 stay because a consumer received it less than 60 s ago (see the warning above; --include-pending moves it).\n');
    expect(none.stderr).toContain('warning: 1 entry of stream');
  });

  it('an entry a consumer receives between the read and the move is not moved (the move script checks the pending lists)', async () => {
    const dlq = uniqueName('stream-held-dlq3');
    const target = uniqueName('stream-held-work3');
    keys.push(dlq, target);
    for (let i = 1; i <= 5; i++) await db.xadd(dlq, '*', 'body', `m${i}`);
    await db.xgroup('CREATE', dlq, 'alerts', '0');
    const adapter = createRedisAdapter({ kind: 'redis', url: url9 });
    try {
      const batches: MoveBatchResult[] = [];
      const summary = await adapter.redrive?.moveClientSide(
        { sourceQueueId: `stream:${dlq}`, batchSize: 100, cutoffMs: Date.now(), maxMessages: null, dryRun: false },
        {
          gate: () => Promise.resolve(),
          decide: () => ({ action: 'move', targetQueueId: `stream:${target}` }),
          // After the read, before the move: a consumer takes the first two.
          beforeMove: async () => {
            await db.xreadgroup('GROUP', 'alerts', 'pager', 'COUNT', 2, 'STREAMS', dlq, '>');
          },
          onBatch: (b) => batches.push(b),
        },
      );
      expect(summary?.moved).toBe(3);
      expect(summary?.failed).toBe(2);
      expect(batches[0]?.failed[0]?.error.message).toMatch(/was delivered to consumer "pager" of group "alerts" after it was read \(idle \d+ ms, not acknowledged\): it is likely being processed now, so it stays in the DLQ/);
      expect(await db.xlen(dlq)).toBe(2);
      expect(await db.xack(dlq, 'alerts', ...(await db.xrange(dlq, '-', '+')).map(([id]) => id))).toBe(2);
      expect(await db.xlen(target)).toBe(3);
    } finally {
      await adapter.close();
    }
  });

  it('--pending-min-idle sets the threshold: a slow consumer\'s entries idle 10 min stay with 15m and move with the default', async () => {
    const dlq = uniqueName('stream-held-slow');
    const target = uniqueName('stream-held-slow-work');
    keys.push(dlq, target);
    const ids: string[] = [];
    for (let i = 1; i <= 6; i++) ids.push((await db.xadd(dlq, '*', 'body', `m${i}`)) as string);
    // A consumer that takes minutes per entry read entries 1–3 ten minutes ago (XCLAIM … IDLE sets it).
    await db.xgroup('CREATE', dlq, 'workers', '0');
    await db.xreadgroup('GROUP', 'workers', 'slow', 'COUNT', 3, 'STREAMS', dlq, '>');
    await db.xclaim(dlq, 'workers', 'slow', 0, ids[0] as string, ids[1] as string, ids[2] as string, 'IDLE', 600_000);
    const args = ['redrive', url9, `stream:${dlq}`, '--to', `stream:${target}`];

    // Default (60 s): idle for 10 min, so taken as left by a stopped consumer: all 6 would move.
    const byDefault = JSON.parse((await runCli(dir, [...args, '--dry-run', '--json'])).stdout) as RedrivePlan;
    expect([byDefault.toMove, byDefault.toSkip]).toEqual([6, 0]);
    expect(byDefault.warnings.find((w) => w.includes('"workers"'))).toMatch(/: delivered 60 s or more ago and never acknowledged .*they would be moved and XACKed in the group$/);

    const dry = await runCli(dir, [...args, '--dry-run', '--json', '--pending-min-idle', '15m']);
    expect(dry.code, dry.stderr).toBe(EXIT.OK);
    const plan = JSON.parse(dry.stdout) as RedrivePlan;
    expect([plan.examined, plan.toMove, plan.toSkip]).toEqual([6, 3, 3]);
    expect(plan.skipped).toEqual([{ reason: 'held: pending in group "workers", delivered < 15 min ago (likely being processed now)', category: 'held', count: 3 }]);
    expect(plan.warnings.find((w) => w.includes('"workers"'))).toMatch(new RegExp(`^3 entries of stream "${dlq}" are pending in consumer group "workers" \\(consumer "slow": 3, idle 10 min\\): delivered less than 15 min ago and not acknowledged, so likely being processed right now; they stay in the DLQ`));
    expect(plan.filter).toContain('pending entries held when delivered < 15 min ago');

    // A bare number is seconds, as for --interval and --window: 300 s < 10 min, so they move.
    const bare = JSON.parse((await runCli(dir, [...args, '--dry-run', '--json', '--pending-min-idle', '300'])).stdout) as RedrivePlan;
    expect(bare.toMove).toBe(6);

    // The run leaves them pending in the DLQ: the slow consumer's XACK still works.
    const run = await runCli(dir, [...args, '--yes', '--json', '--pending-min-idle', '15m']);
    expect(run.code, run.stderr).toBe(EXIT.OK);
    const result = (JSON.parse(run.stdout) as { result: RedriveResult }).result;
    expect([result.examined, result.moved, result.skipped]).toEqual([6, 3, 3]);
    expect((await db.xrange(dlq, '-', '+')).map(([id]) => id)).toEqual(ids.slice(0, 3));
    expect(await db.xack(dlq, 'workers', ...ids.slice(0, 3))).toBe(3);
    expect(await db.xlen(target)).toBe(3);
    const none = await runCli(dir, [...args, '--yes', '--pending-min-idle', '15m']);
    expect(none.stdout).not.toContain('less than 60 s ago');

    // Bad values: a usage error naming the option, nothing read.
    for (const [value, message] of [
      ['soon', 'error: --pending-min-idle must be a duration like 500ms, 30s, 5m or 1h, got "soon".'],
      ['0', 'error: --pending-min-idle must be a whole number of milliseconds from 1 ms to 7 days (604800000 ms), got 0 ms; to move pending entries however recently they were delivered, use --include-pending instead.'],
      ['169h', 'error: --pending-min-idle must be a whole number of milliseconds from 1 ms to 7 days (604800000 ms), got 608400000 ms;'],
      ['0.5ms', 'got 0.5 ms;'],
    ] as const) {
      const bad = await runCli(dir, [...args, '--dry-run', '--pending-min-idle', value]);
      expect(bad.code).toBe(EXIT.USAGE);
      expect(bad.stderr).toContain(message);
      expect(bad.stdout).toBe('');
    }
    const help = await runCli(dir, ['redrive', '--help']);
    expect(help.stdout).toContain('--pending-min-idle <duration>');
  });

  it('the move script uses the run\'s threshold: an entry received after the read, idle 5 min, stays with a 15 min threshold', async () => {
    const dlq = uniqueName('stream-held-guard');
    const target = uniqueName('stream-held-guard-work');
    keys.push(dlq, target);
    for (let i = 1; i <= 3; i++) await db.xadd(dlq, '*', 'body', `m${i}`);
    await db.xgroup('CREATE', dlq, 'workers', '0');
    const adapter = createRedisAdapter({ kind: 'redis', url: url9 });
    try {
      const run = (pendingMinIdleMs: number): Promise<unknown> =>
        adapter.redrive!.moveClientSide(
          { sourceQueueId: `stream:${dlq}`, batchSize: 100, cutoffMs: Date.now(), maxMessages: null, dryRun: false, pendingMinIdleMs },
          {
            gate: () => Promise.resolve(),
            decide: () => ({ action: 'move', targetQueueId: `stream:${target}` }),
            // After the read, before the move: a consumer takes the first entry; its delivery was 5 min ago.
            beforeMove: async () => {
              const got = (await db.xreadgroup('GROUP', 'workers', 'slow', 'COUNT', 1, 'STREAMS', dlq, '>')) as [string, [string, string[]][]][] | null;
              const id = got?.[0]?.[1][0]?.[0];
              if (id !== undefined) await db.xclaim(dlq, 'workers', 'slow', 0, id, 'IDLE', 300_000);
            },
            onBatch: () => undefined,
          },
        );
      expect(await run(900_000)).toMatchObject({ moved: 2, failed: 1 });
      expect(await db.xlen(dlq)).toBe(1);
      // With the default 60 s, an entry idle 5 min is no longer being processed: it moves.
      expect(await run(60_000)).toMatchObject({ moved: 1, failed: 0 });
      expect(await db.xlen(dlq)).toBe(0);
    } finally {
      await adapter.close();
    }
  });

  it('the app API: redrive.plan leaves entries delivered just now unless includePending, and warns', async () => {
    const dlq = uniqueName('stream-held-dlq4');
    keys.push(dlq);
    for (let i = 1; i <= 4; i++) await db.xadd(dlq, '*', 'body', `m${i}`);
    await db.xgroup('CREATE', dlq, 'alerts', '0');
    await db.xreadgroup('GROUP', 'alerts', 'pager', 'COUNT', 2, 'STREAMS', dlq, '>');
    const store = await ProfileStore.open({ configDir: join(dir, 'api-config') });
    const connections = new ConnectionManager({ store });
    const handlers = createApiHandlers({
      connections,
      operations: new OperationManager(),
      dialogs: { pickSnapshotSavePath: () => Promise.resolve(null), pickSnapshotOpenPath: () => Promise.resolve(null) },
      runtime: 'electron',
      version: '0.1.0',
    });
    try {
      const saved = await dispatchApi(handlers, 'connections.save', { name: 'redis 9', config: { kind: 'redis', url: url9 } });
      if (!saved.ok) throw new Error(saved.error.message);
      const input = { connectionId: (saved.value as ConnectionProfile).id, dlqId: `stream:${dlq}`, selection: { kind: 'all' }, targetQueueId: `stream:${dlq}-work` };
      const plan = await dispatchApi(handlers, 'redrive.plan', input);
      if (!plan.ok) throw new Error(plan.error.message);
      const p = plan.value as RedrivePlan;
      expect([p.toMove, p.toSkip]).toEqual([2, 2]);
      expect(p.warnings.some((w) => w.startsWith(`2 entries of stream "${dlq}" are pending in consumer group "alerts" (consumer "pager": 2,`))).toBe(true);
      const incl = await dispatchApi(handlers, 'redrive.plan', { ...input, includePending: true });
      if (!incl.ok) throw new Error(incl.error.message);
      expect((incl.value as RedrivePlan).toMove).toBe(4);
      // The idle threshold: 1 h holds them too; 0 is refused by the API's schema.
      const hour = await dispatchApi(handlers, 'redrive.plan', { ...input, pendingMinIdleMs: 3_600_000 });
      if (!hour.ok) throw new Error(hour.error.message);
      expect((hour.value as RedrivePlan).skipped).toEqual([{ reason: 'held: pending in group "alerts", delivered < 1 h ago (likely being processed now)', category: 'held', count: 2 }]);
      const zero = await dispatchApi(handlers, 'redrive.plan', { ...input, pendingMinIdleMs: 0 });
      expect(zero.ok ? null : zero.error.code).toBe('INVALID_INPUT');
    } finally {
      await connections.closeAll();
    }
  });
});
