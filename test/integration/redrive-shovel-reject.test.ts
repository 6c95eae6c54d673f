import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Channel, ChannelModel } from 'amqplib';
import { createRabbitmqAdapter } from '../../core/adapters/rabbitmq';
import type { NativeMoveHandle, NativeMoveStatus, RedriveMover } from '../../core/adapters/redrive-types';
import type { BrokerAdapter } from '../../core/adapters/types';
import { EXIT } from '../../core/cli/exit-codes';
import { runCli } from './fixtures/run-cli';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, uniqueName } from './env';
import { closeNative, nativeConnection, nativeCount, nativeDeleteQueue } from './rabbitmq-native';
import { idOf, makeDeadLettered, publishKeys } from './fixtures/redrive-rabbitmq-util';
import { ShovelMover } from '../../core/adapters/rabbitmq/redrive-shovel';
import { ManagementClient } from '../../core/adapters/rabbitmq/management';
import { resolveRabbitmqSettings } from '../../core/adapters/rabbitmq/settings';
import { decodeQueueId } from '../../core/adapters/rabbitmq/queue-id';
import { QueuescopeError } from '../../shared/domain';
import { startRedrive, type RedriveEnv, type RedriveResult } from '../../core/redrive/engine';
import { AuditLog } from '../../core/services/audit-log';
import { OperationManager } from '../../core/services/operations';
import { readSnapshotFile } from '../../core/snapshot/reader';

/**
 * The dynamic-shovel native move against a target that refuses publishes (RabbitMQ 3.10.8): a
 * queue with `x-max-length: 3` and `x-overflow: reject-publish` nacks every publish past 3; the
 * shovel (ack-mode on-confirm) then nacks the DLQ delivery (requeue) and still deletes itself after
 * as many confirms or nacks as it was to move (src-delete-after = the DLQ's count at the start).
 * The status must report what left the DLQ, not the start depth.
 */

const config = { kind: 'rabbitmq' as const, url: AMQP_URL, managementUrl: RABBITMQ_MANAGEMENT_URL };
let adapter: BrokerAdapter;
let mover: RedriveMover;
let conn: ChannelModel;
let dir: string;
const queues: string[] = [];

beforeAll(async () => {
  adapter = createRabbitmqAdapter(config);
  if (!adapter.redrive) throw new Error('the RabbitMQ adapter has no redrive member');
  mover = adapter.redrive;
  conn = await nativeConnection();
  dir = await mkdtemp(join(tmpdir(), 'qs-shovel-reject-'));
});

afterAll(async () => {
  for (const q of queues) await nativeDeleteQueue(q);
  await adapter.close();
  await closeNative();
  await rm(dir, { recursive: true, force: true });
});

/** A DLQ of `n` really dead-lettered messages, and a target holding at most `max` (reject-publish) when `max` is given. */
async function setup(label: string, n: number, max: number | null): Promise<{ work: string; dlq: string; target: string }> {
  const work = uniqueName(`${label}-work`);
  const dlq = uniqueName(`${label}-dlq`);
  const target = uniqueName(`${label}-target`);
  queues.push(work, dlq, target);
  await makeDeadLettered(conn, work, dlq, n);
  const ch = await conn.createChannel();
  await ch.assertQueue(target, { durable: true, arguments: max === null ? {} : { 'x-max-length': max, 'x-overflow': 'reject-publish' } });
  await ch.close();
  return { work, dlq, target };
}

async function pollUntilDone(h: NativeMoveHandle): Promise<NativeMoveStatus> {
  let st = await mover.nativeMoveStatus(h);
  for (let i = 0; i < 300 && st.status === 'running'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    st = await mover.nativeMoveStatus(h);
  }
  return st;
}

describe('native move (dynamic shovel) into a target that refuses publishes', () => {
  it('ends failed, reporting exactly the messages that left the DLQ (3 of 10), not the start depth', async () => {
    const { dlq, target } = await setup('shovel-reject', 10, 3);
    const summary = await adapter.getQueue(idOf(dlq));
    const h = await mover.startNativeMove(summary, idOf(target), null);
    expect(h.total).toBe(10);
    const st = await pollUntilDone(h);
    expect(await nativeCount(target)).toBe(3);
    expect(await nativeCount(dlq)).toBe(7);
    expect(st).toMatchObject({ status: 'failed', moved: 3, total: 10 });
    expect(st.error).toMatch(/only 3 of the 10 messages left the DLQ: 7 stayed/);
    // Polling again returns the same outcome (it is measured once).
    expect(await mover.nativeMoveStatus(h)).toEqual(st);
  }, 60_000);

  it('a large DLQ into a nearly full target: the shovel does not loop on the refused messages; counts are exact', async () => {
    const { dlq, target } = await setup('shovel-reject-big', 1500, 40);
    const summary = await adapter.getQueue(idOf(dlq));
    const h = await mover.startNativeMove(summary, idOf(target), null);
    const st = await pollUntilDone(h);
    expect(await nativeCount(target)).toBe(40);
    expect(await nativeCount(dlq)).toBe(1460);
    expect(st).toMatchObject({ status: 'failed', moved: 40, total: 1500 });
  }, 60_000);

  it('messages dead-lettered after the shovel finished are not counted as refused: completed, every one of the start depth moved', async () => {
    const { dlq, target } = await setup('shovel-late', 200, null);
    const summary = await adapter.getQueue(idOf(dlq));
    const h = await mover.startNativeMove(summary, idOf(target), null);
    // Wait (outside the mover) until the shovel deleted itself, then add messages to the DLQ before the mover looks.
    const mgmt = `${RABBITMQ_MANAGEMENT_URL}/api/parameters/shovel/%2F/${encodeURIComponent(h.id)}`;
    const auth = `Basic ${Buffer.from('guest:guest').toString('base64')}`;
    for (let i = 0; i < 300; i++) {
      const res = await fetch(mgmt, { headers: { authorization: auth } });
      if (res.status === 404) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const ch = await conn.createConfirmChannel();
    await publishKeys(ch, dlq, 0, 25, 'late');
    await ch.close();
    const st = await pollUntilDone(h);
    expect(await nativeCount(target)).toBe(200);
    expect(await nativeCount(dlq)).toBe(25);
    expect(st).toMatchObject({ status: 'completed', moved: 200, total: 200, error: null });
  }, 60_000);

  it('messages dead-lettered while the shovel runs: completed; moved counts what reached the target, arrivals left behind are not failures', async () => {
    const { dlq, target } = await setup('shovel-busy', 3000, null);
    const summary = await adapter.getQueue(idOf(dlq));
    const h = await mover.startNativeMove(summary, idOf(target), null);
    const ch = await conn.createConfirmChannel();
    for (let i = 0; i < 20; i++) {
      await publishKeys(ch, dlq, i * 5, i * 5 + 5, 'busy');
      await new Promise((r) => setTimeout(r, 25));
    }
    await ch.close();
    const st = await pollUntilDone(h);
    // The shovel forwards the 3000 counted at the start (src-delete-after 3000); the 100 that
    // arrived during the move stay in the DLQ, however slowly the shovel started.
    expect(await nativeCount(target)).toBe(3000);
    expect(await nativeCount(dlq)).toBe(100);
    expect(st, st.error ?? '').toMatchObject({ status: 'completed', moved: 3000, total: 3000, error: null });
  }, 60_000);

  /**
   * A shovel mover whose first count of `dlq` is 5 more than its ready messages: as if 5 left the
   * DLQ (or were taken by another consumer) between the count and the shovel's start.
   */
  function overCountingMover(dlq: string, ch: Channel, timings: { idleMs?: number; stalledMs?: number } = {}): ShovelMover {
    let extra = 5;
    return new ShovelMover(
      {
        vhost: '/',
        mgmt: new ManagementClient(resolveRabbitmqSettings(config)),
        queueRef: (id) => decodeQueueId(id).name,
        mgmtStatusError: (res, path) => new QueuescopeError('BROKER_ERROR', `HTTP ${res.status} on ${path}`),
        readyCount: async (name) => {
          const n = (await ch.checkQueue(name)).messageCount;
          if (name !== dlq || extra === 0) return n;
          const counted = n + extra;
          extra = 0;
          return counted;
        },
        consumerCount: async (name) => (await ch.checkQueue(name)).consumerCount,
        statsDisabled: () => Promise.resolve(false),
      },
      timings,
    );
  }

  async function pollShovel(shovels: ShovelMover, h: NativeMoveHandle): Promise<NativeMoveStatus> {
    let st = await shovels.status(h);
    for (let i = 0; i < 400 && st.status === 'running'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      st = await shovels.status(h);
    }
    return st;
  }

  async function shovelParamStatus(name: string): Promise<number> {
    const res = await fetch(`${RABBITMQ_MANAGEMENT_URL}/api/parameters/shovel/%2F/${encodeURIComponent(name)}`, { headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` } });
    return res.status;
  }

  it('a DLQ holding fewer messages than counted (they left another way): the waiting shovel is removed; failed with exactly what it moved', async () => {
    const { dlq, target } = await setup('shovel-idle', 200, null);
    const ch = await conn.createChannel();
    const shovels = overCountingMover(dlq, ch);
    const summary = await adapter.getQueue(idOf(dlq));
    const h = await shovels.start(summary, idOf(target), null);
    expect(h.total).toBe(205);
    const st = await pollShovel(shovels, h);
    await ch.close();
    expect({ target: await nativeCount(target), dlq: await nativeCount(dlq), st }).toMatchObject({ target: 200, dlq: 0, st: { status: 'failed', moved: 200, total: 205 } });
    expect(st.error).toMatch(/moved 200 of the 205 messages and then waited on an empty DLQ: the other 5 left the DLQ another way/);
    // The shovel parameter is gone, and nothing was lost or doubled.
    expect(await shovelParamStatus(h.id)).toBe(404);
    expect(await nativeCount(target)).toBe(200);
    expect(await nativeCount(dlq)).toBe(0);
  }, 90_000);

  it('a shovel stalled by messages another consumer holds unacknowledged is removed (no hang); failed, the counts an upper bound, the held ones back in the DLQ', async () => {
    const { dlq, target } = await setup('shovel-stalled', 205, null);
    // Another consumer takes 5 and never acks them.
    const holder = await conn.createChannel();
    await holder.prefetch(5);
    let held = 0;
    await holder.consume(dlq, () => {
      held++;
    });
    for (let i = 0; i < 100 && held < 5; i++) await new Promise((r) => setTimeout(r, 20));
    expect(held).toBe(5);
    const ch = await conn.createChannel();
    const shovels = overCountingMover(dlq, ch, { stalledMs: 8_000 });
    const summary = await adapter.getQueue(idOf(dlq));
    const h = await shovels.start(summary, idOf(target), null);
    expect(h.total).toBe(205);
    const st = await pollShovel(shovels, h);
    expect(st).toMatchObject({ status: 'failed', moved: 200, total: 205 });
    expect(st.error).toMatch(/Another consumer read the DLQ during the move.*at most 200 of the 205 messages went to the target.*the shovel made no progress for 8 s and was removed/);
    expect(await shovelParamStatus(h.id)).toBe(404);
    await holder.close();
    await ch.close();
    expect(await nativeCount(target)).toBe(200);
    expect(await nativeCount(dlq)).toBe(5);
  }, 90_000);

  it('a consumer that takes and acks DLQ messages during the move: never reported completed; at most what the counters allow', async () => {
    const { dlq, target } = await setup('shovel-compete', 200, null);
    const ch = await conn.createConfirmChannel();
    const shovels = overCountingMover(dlq, ch, { idleMs: 4_000 });
    const summary = await adapter.getQueue(idOf(dlq));
    const h = await shovels.start(summary, idOf(target), null);
    // Once the 200 are gone, a competitor attaches (the polls see two consumers), then 5 more arrive: shared between them.
    for (let i = 0; i < 200 && (await nativeCount(dlq)) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    const competitor = await conn.createChannel();
    await competitor.prefetch(1);
    let taken = 0;
    await competitor.consume(dlq, (m) => {
      if (m === null) return;
      taken++;
      competitor.ack(m);
    });
    expect((await shovels.status(h)).status).toBe('running');
    await publishKeys(ch, dlq, 0, 5, 'compete');
    const st = await pollShovel(shovels, h);
    await competitor.close();
    await ch.close();
    const inTarget = await nativeCount(target);
    expect(inTarget + taken).toBe(205);
    expect(await nativeCount(dlq)).toBe(0);
    expect(st.status, st.error ?? '').toBe('failed');
    expect(st.error).toMatch(/Another consumer read the DLQ during the move/);
    expect(st.moved).toBeGreaterThanOrEqual(inTarget);
    expect(st.moved).toBeLessThanOrEqual(205);
  }, 90_000);

  it('is not offered for a quorum DLQ, a priority DLQ, or a DLQ another consumer reads (those move client-side)', async () => {
    const quorum = uniqueName('shovel-support-qq');
    const prio = uniqueName('shovel-support-prio');
    const read = uniqueName('shovel-support-read');
    const target = uniqueName('shovel-support-target');
    queues.push(quorum, prio, read, target);
    const ch = await conn.createChannel();
    await ch.assertQueue(quorum, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    await ch.assertQueue(prio, { durable: true, arguments: { 'x-max-priority': 10 } });
    await ch.assertQueue(read, { durable: true });
    await ch.assertQueue(target, { durable: true });
    const support = async (q: string): Promise<string> => {
      const s = await mover.nativeMove(await adapter.getQueue(idOf(q)), idOf(target));
      expect(s.available, q).toBe(false);
      return s.note ?? '';
    };
    expect(await support(quorum)).toMatch(/quorum queue/);
    expect(await support(prio)).toMatch(/priority queue/);
    expect((await mover.nativeMove(await adapter.getQueue(idOf(read)), idOf(target))).available).toBe(true);
    await ch.consume(read, () => undefined);
    expect(await support(read)).toMatch(/1 consumer reads the DLQ/);
    await ch.close();
  }, 60_000);

  it('the engine limits the shovel to the messages its backup holds: dead letters that arrive before the shovel starts stay in the DLQ', async () => {
    const { work, dlq } = await setup('shovel-engine-late', 300, null);
    // Between the backup pre-pass and the shovel's start, 20 more messages are dead-lettered.
    const startNativeMove: RedriveMover['startNativeMove'] = async (...a) => {
      const ch = await conn.createConfirmChannel();
      await publishKeys(ch, dlq, 0, 20, 'late');
      await ch.close();
      return mover.startNativeMove(...a);
    };
    const late = new Proxy(mover, {
      get: (t, k) => {
        if (k === 'startNativeMove') return startNativeMove;
        const v: unknown = Reflect.get(t, k, t);
        return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(t) : v;
      },
    });
    const env: RedriveEnv = {
      adapter: { getQueue: (id, s) => adapter.getQueue(id, s), listQueues: (o, s) => adapter.listQueues(o, s), redrive: late },
      connectionLabel: AMQP_URL,
      actor: 'cli',
      auditLog: new AuditLog({ path: join(dir, 'audit-late.jsonl') }),
      configDir: dir,
      nativePollMs: 100,
    };
    const ops = new OperationManager();
    const snap = startRedrive(ops, env, { dlqId: idOf(dlq), selection: { kind: 'all' }, backupPath: join(dir, 'late-backup.jsonl') });
    const final = await ops.wait(snap.id);
    const result = final.result as RedriveResult;
    expect(final.errors).toEqual([]);
    expect(result).toMatchObject({ mode: 'native', moved: 300 });
    expect(result.notes.join(' ')).toMatch(/backup of 300 messages written before the native move, which takes only those; messages dead-lettered since stay in the DLQ/);
    expect((await readSnapshotFile(join(dir, 'late-backup.jsonl')))[0]?.messages).toHaveLength(300);
    expect(await nativeCount(work)).toBe(300);
    expect(await nativeCount(dlq)).toBe(20);
  }, 90_000);

  it('cancelled mid-move (Ctrl+C): the result counts what the shovel moved and bounds what may now be in both queues', async () => {
    const { work, dlq } = await setup('shovel-cancel', 6000, null);
    const env: RedriveEnv = { adapter, connectionLabel: AMQP_URL, actor: 'cli', auditLog: new AuditLog({ path: join(dir, 'audit-cancel.jsonl') }), configDir: dir, nativePollMs: 100 };
    const ops = new OperationManager();
    const snap = startRedrive(ops, env, { dlqId: idOf(dlq), selection: { kind: 'all' }, backupPath: join(dir, 'cancel-backup.jsonl') });
    // Cancel as soon as the shovel has taken messages (before the engine's first poll may have reported any).
    for (let i = 0; i < 3000 && (await nativeCount(work)) === 0; i++) await new Promise((r) => setTimeout(r, 10));
    ops.cancel(snap.id);
    const final = await ops.wait(snap.id);
    expect(final.status).toBe('cancelled');
    const result = (final.errors.find((e) => e.code === 'CANCELLED')?.details as { result?: RedriveResult } | undefined)?.result;
    expect(result?.mode).toBe('native');
    // Counted once the messages the deleted shovel held are back (two equal readings).
    let inWork = -1;
    let inDlq = -1;
    for (let i = 0; i < 40; i++) {
      const [w, d] = [await nativeCount(work), await nativeCount(dlq)];
      if (w === inWork && d === inDlq) break;
      [inWork, inDlq] = [w, d];
      await new Promise((r) => setTimeout(r, 250));
    }
    // Nothing lost; what is in both queues is within the reported bound.
    expect(inWork + inDlq).toBeGreaterThanOrEqual(6000);
    expect(inWork + inDlq - 6000).toBeLessThanOrEqual(result?.possibleDuplicates ?? -1);
    expect(result?.possibleDuplicates).toBeLessThanOrEqual(1000);
    expect(result?.moved).toBe(6000 - inDlq);
    // Whatever reached the target is counted as moved or within the possible duplicates.
    expect((result?.moved ?? 0) + (result?.possibleDuplicates ?? 0)).toBeGreaterThanOrEqual(inWork);
  }, 90_000);

  it('an empty DLQ creates no shovel: completed at once, nothing moved', async () => {
    const dlq = uniqueName('shovel-empty-dlq');
    const target = uniqueName('shovel-empty-target');
    queues.push(dlq, target);
    const ch = await conn.createChannel();
    await ch.assertQueue(dlq, { durable: true });
    await ch.assertQueue(target, { durable: true });
    await ch.close();
    const summary = await adapter.getQueue(idOf(dlq));
    const h = await mover.startNativeMove(summary, idOf(target), null);
    expect(await mover.nativeMoveStatus(h)).toEqual({ status: 'completed', moved: 0, total: 0, error: null });
  }, 60_000);

  it('the CLI (native path chosen automatically) does not report the refused messages as moved', async () => {
    const { dlq, target } = await setup('shovel-reject-cli', 10, 3);
    const { code, stdout, stderr } = await runCli(dir, ['redrive', AMQP_URL, dlq, '--to', target, '--yes']);
    const out = stdout + stderr;
    expect(out).toMatch(/native: RabbitMQ dynamic shovel/);
    // Exact counts and exit 7 (partial), as the client-side run reports the same situation.
    expect(code, out).toBe(EXIT.PARTIAL);
    expect(out).not.toMatch(/\b10 moved\b/);
    expect(out).toMatch(/\b3 moved, 0 stayed, 7 failed\b/);
    expect(out).toMatch(/7 stayed \(7 in the DLQ now\)/);
    expect(await nativeCount(target)).toBe(3);
    expect(await nativeCount(dlq)).toBe(7);
  }, 60_000);
});

/** A management API call as guest (the shared broker's administrator), for creating and removing test users. */
function admin(method: string, path: string, body?: unknown): Promise<Response> {
  const authorization = `Basic ${Buffer.from('guest:guest').toString('base64')}`;
  return fetch(`${RABBITMQ_MANAGEMENT_URL}${path}`, { method, headers: { authorization, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
}

describe('a user without the policymaker tag (monitoring only)', () => {
  const user = uniqueName('mon-user');
  const password = 'mon-pw';
  const dlq = uniqueName('mon-dlq');
  const work = uniqueName('mon-work');

  beforeAll(async () => {
    expect((await admin('PUT', `/api/users/${encodeURIComponent(user)}`, { password, tags: 'monitoring' })).status).toBeLessThan(300);
    expect((await admin('PUT', `/api/permissions/%2F/${encodeURIComponent(user)}`, { configure: '.*', write: '.*', read: '.*' })).status).toBeLessThan(300);
    await makeDeadLettered(await nativeConnection(), work, dlq, 20);
  });
  afterAll(async () => {
    await nativeDeleteQueue(dlq);
    await nativeDeleteQueue(work);
    await closeNative();
    await admin('DELETE', `/api/users/${encodeURIComponent(user)}`);
  });

  it('is not offered the shovel (creating one needs policymaker); a shovel it tries anyway is refused as a permission, not a bad password', async () => {
    const u = new URL(AMQP_URL);
    u.username = encodeURIComponent(user);
    u.password = password;
    const adapter = createRabbitmqAdapter({ kind: 'rabbitmq', url: u.toString(), managementUrl: RABBITMQ_MANAGEMENT_URL });
    try {
      const q = await adapter.getQueue(idOf(dlq));
      const support = await adapter.redrive!.nativeMove(q, idOf(work));
      expect(support.available).toBe(false);
      expect(support.note).toContain('needs the policymaker (or administrator) tag');
      expect(support.note).toContain('monitoring');
      // start() checks the same before creating anything.
      const err = await adapter.redrive!.startNativeMove(q, idOf(work), null).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(QueuescopeError);
      expect((err as QueuescopeError).code).toBe('UNSUPPORTED');
      expect((err as QueuescopeError).message).toContain('policymaker');
      // What the broker itself answers such a user's PUT: 401 "not authorised" (the adapter maps it
      // to PERMISSION_DENIED naming the tag, no longer to "wrong user name or password").
      const put = await fetch(`${RABBITMQ_MANAGEMENT_URL}/api/parameters/shovel/%2F/${encodeURIComponent(uniqueName('mon-shovel'))}`, {
        method: 'PUT',
        headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`, 'content-type': 'application/json' },
        body: JSON.stringify({ value: { 'src-uri': 'amqp://', 'src-queue': dlq, 'dest-uri': 'amqp://', 'dest-queue': work } }),
      });
      expect(put.status).toBe(401);
      expect(((await put.json()) as { reason?: string }).reason).toMatch(/not[ _]authori[sz]ed/i);
      expect(await nativeCount(dlq)).toBe(20);
    } finally {
      await adapter.close();
    }
  });
});

describe('a user who may read the DLQ but not publish (write permission ^$)', () => {
  const user = uniqueName('ro-user');
  const password = 'ro-pw';
  const dlq = uniqueName('ro-dlq');
  const work = uniqueName('ro-work');
  let dir: string;

  beforeAll(async () => {
    expect((await admin('PUT', `/api/users/${encodeURIComponent(user)}`, { password, tags: 'monitoring' })).status).toBeLessThan(300);
    expect((await admin('PUT', `/api/permissions/%2F/${encodeURIComponent(user)}`, { configure: '^$', write: '^$', read: '.*' })).status).toBeLessThan(300);
    await makeDeadLettered(await nativeConnection(), work, dlq, 200);
    dir = await mkdtemp(join(tmpdir(), 'qs-ro-user-'));
  });
  afterAll(async () => {
    await nativeDeleteQueue(dlq);
    await nativeDeleteQueue(work);
    await closeNative();
    await admin('DELETE', `/api/users/${encodeURIComponent(user)}`);
    await rm(dir, { recursive: true, force: true });
  });

  it('a redrive fails with the permission error and counts no possible duplicates (the broker refused every publish); nothing moves', async () => {
    const u = new URL(AMQP_URL);
    u.username = encodeURIComponent(user);
    u.password = password;
    const r = await runCli(dir, ['redrive', u.toString(), dlq, '--to', work, '--no-native', '--include-non-retryable', '--yes', '--json', '--management-url', RABBITMQ_MANAGEMENT_URL]);
    expect(r.code, r.stderr.slice(-500)).toBe(EXIT.CONNECTION);
    const out = JSON.parse(r.stdout) as { status: string; result: { moved: number; possibleDuplicates: number } | null; error?: { code: string; message: string } };
    expect(out.status).toBe('failed');
    expect(out.error?.code).toBe('PERMISSION_DENIED');
    expect(out.result?.moved ?? 0).toBe(0);
    expect(out.result?.possibleDuplicates ?? 0).toBe(0);
    expect(await nativeCount(dlq)).toBe(200);
    expect(await nativeCount(work)).toBe(0);
    // `history` shows why the run failed, not only "failed" with no counts.
    const h = await runCli(dir, ['history', '--limit', '1']);
    expect(h.code, h.stderr).toBe(0);
    expect(h.stdout).toMatch(/failed .* examined 200, failed 200\n\s+error: PERMISSION_DENIED: RabbitMQ closed the publishing channel \(403\)/);
  });
});
