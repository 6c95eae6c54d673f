import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChannelModel, Message } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, uniqueName } from './env';
import { makeDeadLettered } from './fixtures/redrive-rabbitmq-util';
import { runCli } from './fixtures/run-cli';
import { closeNative, nativeConnection, nativeCount, nativeDeleteQueue } from './rabbitmq-native';

/**
 * A quorum DLQ with a delivery limit and its own dead-letter exchange (dlq → final): on RabbitMQ
 * 3.10 every requeue counts as a delivery (`x-delivery-count` +1) and a requeue past the limit
 * dead-letters the message onward (or drops it without a DLX). The redrive's dry run holds what it
 * reads and requeues it at the end, so it could move messages at the limit on to `final` — it must
 * not: messages at the limit are copied to the DLQ's tail instead (their delivery count restarts),
 * and a run copies every message that stays. So a redrive of such a DLQ needs no consent
 * (no PEEK_REFUSED): the dry run exits 0 and nothing reaches `final`, with the limit and the DLX set
 * as queue arguments or by a policy. Each case ends with a control: a plain requeue of the same
 * messages does dead-letter them, so the setup was live. Through the CLI, against the real broker.
 * The first two cases guard that (they fail when the dry run requeues messages at the limit); the
 * third is a policy the queue's management record does not show yet, where the old mover (limit
 * from that record only) requeued all 6 messages at the limit into `final`.
 */

const AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;
async function mgmt(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${RABBITMQ_MANAGEMENT_URL}${path}`, { method, headers: { authorization: AUTH, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
}

const deliveryCountOf = (m: Message): unknown => m.properties.headers?.['x-delivery-count'] ?? 0;

let conn: ChannelModel;
let dir: string;
const queues: string[] = [];
const policies: string[] = [];

beforeAll(async () => {
  conn = await nativeConnection();
  dir = await mkdtemp(join(tmpdir(), 'qs-dlimit-'));
});

afterAll(async () => {
  for (const q of queues) await nativeDeleteQueue(q);
  for (const p of policies) await mgmt('DELETE', `/api/policies/%2F/${encodeURIComponent(p)}`).catch(() => undefined);
  await closeNative();
  await rm(dir, { recursive: true, force: true });
});

interface Names {
  work: string;
  dlq: string;
  final: string;
}

/** Unique names for `work` → `dlq` → `final`. */
function namesFor(label: string): Names {
  const base = uniqueName(label);
  const names = { work: `${base}-work`, dlq: `${base}-dlq`, final: `${base}-final` };
  queues.push(names.work, names.dlq, names.final);
  return names;
}

/** Declares `final` (classic) and fills `dlq` (quorum, `dlqArgs`) with 6 messages dead-lettered from `work` (ids m-k-0…m-k-5). */
async function fill(q: Names, dlqArgs: Record<string, unknown>): Promise<void> {
  const ch = await conn.createChannel();
  await ch.assertQueue(q.final, { durable: true });
  await ch.close();
  await makeDeadLettered(conn, q.work, q.dlq, 6, { 'x-queue-type': 'quorum', ...dlqArgs });
}

/**
 * Delivers every message of `dlq` once and requeues it (basic.nack requeue=true), `times` rounds;
 * returns the delivery counts the last round saw. Waits for the requeued messages only when
 * `settle` (a requeue past the limit dead-letters instead).
 */
async function requeueAll(dlq: string, times: number, settle = true): Promise<unknown[]> {
  let seen: unknown[] = [];
  for (let i = 0; i < times; i++) {
    const n = await nativeCount(dlq);
    const ch = await conn.createChannel();
    await ch.prefetch(n);
    const got: Message[] = [];
    let tag = '';
    await new Promise<void>((resolve) => {
      void ch
        .consume(dlq, (m) => {
          if (m === null) return;
          got.push(m);
          if (got.length >= n) resolve();
        })
        .then((ok) => (tag = ok.consumerTag));
    });
    // Cancel first, so the requeued messages are not delivered to this consumer again.
    await ch.cancel(tag);
    seen = got.map(deliveryCountOf);
    ch.nack(got[got.length - 1]!, true, true);
    await ch.close();
    if (settle) await waitCount(dlq, n);
  }
  return seen;
}

/** Waits (≤ 60 s) until `queue` holds `n` ready messages (dead-lettering is asynchronous). */
async function waitCount(queue: string, n: number): Promise<void> {
  for (let i = 0; i < 600 && (await nativeCount(queue)) !== n; i++) await new Promise((r) => setTimeout(r, 100));
  expect(await nativeCount(queue)).toBe(n);
}

/** Dry runs (one with --accept-side-effects: as without) and a run that moves one message, leaving 5; nothing may reach `final`. */
async function redriveLeavesFinalEmpty(q: Names, limit: number): Promise<void> {
  for (const extra of [[], [], ['--accept-side-effects']]) {
    const dry = await runCli(dir, ['redrive', AMQP_URL, q.dlq, '--dry-run', ...extra]);
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`Messages already at the delivery limit (${limit}) would be dead-lettered by a requeue, so they are copied to the end of the DLQ instead`);
    expect(await nativeCount(q.final)).toBe(0);
    expect(await nativeCount(q.dlq)).toBe(6);
  }
  const run = await runCli(dir, ['redrive', AMQP_URL, q.dlq, '--ids', 'm-k-1', '--yes']);
  expect(run.code, run.stdout + run.stderr).toBe(0);
  expect(await nativeCount(q.work)).toBe(1);
  expect(await nativeCount(q.dlq)).toBe(5);
  expect(await nativeCount(q.final)).toBe(0);
}

describe('RabbitMQ redrive of a quorum DLQ with a delivery limit and its own dead-letter exchange (real broker, CLI)', () => {
  it('limit and DLX as arguments (x-delivery-limit 1): dry runs of messages at the limit exit 0 and move nothing onward; a run leaves the rest in the DLQ', async () => {
    const q = namesFor('dlim-arg');
    await fill(q, { 'x-delivery-limit': 1, 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': q.final });
    // One requeue each: x-delivery-count 1 = the limit (the next requeue dead-letters).
    expect(await requeueAll(q.dlq, 1)).toEqual([0, 0, 0, 0, 0, 0]);
    await redriveLeavesFinalEmpty(q, 1);
    // Control: two plain requeues of the 5 left (their copies start at 0) push them past the limit to final.
    expect(await requeueAll(q.dlq, 1)).toEqual([0, 0, 0, 0, 0]);
    expect(await requeueAll(q.dlq, 1, false)).toEqual([1, 1, 1, 1, 1]);
    await waitCount(q.final, 5);
    expect(await nativeCount(q.dlq)).toBe(0);
  }, 180_000);

  it('limit 2 and DLX from a policy: the same once the management API reports the policy', async () => {
    const q = namesFor('dlim-pol');
    policies.push(q.dlq);
    const put = await mgmt('PUT', `/api/policies/%2F/${encodeURIComponent(q.dlq)}`, {
      pattern: `^${q.dlq}$`,
      definition: { 'delivery-limit': 2, 'dead-letter-exchange': '', 'dead-letter-routing-key': q.final },
      priority: 10,
      'apply-to': 'queues',
    });
    expect(put.status).toBeLessThan(300);
    await fill(q, {});
    // RabbitMQ 3.10 reports a quorum queue's policy with its stats, seconds after the declare.
    let seen = '';
    for (let i = 0; i < 300 && !seen.includes('"delivery-limit":2'); i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      seen = await (await mgmt('GET', `/api/queues/%2F/${encodeURIComponent(q.dlq)}?columns=effective_policy_definition`)).text();
    }
    expect(seen).toContain('"delivery-limit":2');
    expect(await requeueAll(q.dlq, 2)).toEqual([1, 1, 1, 1, 1, 1]); // now 2 = the limit
    await redriveLeavesFinalEmpty(q, 2);
    expect(await requeueAll(q.dlq, 2)).toEqual([1, 1, 1, 1, 1]);
    expect(await requeueAll(q.dlq, 1, false)).toEqual([2, 2, 2, 2, 2]);
    await waitCount(q.final, 5);
    expect(await nativeCount(q.dlq)).toBe(0);
  }, 180_000);

  it('a policy the management API does not report yet (just declared queue): the dry run still copies messages at the limit instead of dead-lettering them (old code: all 6 in final, exit 0)', async () => {
    const q = namesFor('dlim-new');
    policies.push(q.dlq);
    const put = await mgmt('PUT', `/api/policies/%2F/${encodeURIComponent(q.dlq)}`, {
      pattern: `^${q.dlq}$`,
      definition: { 'delivery-limit': 1, 'dead-letter-exchange': '', 'dead-letter-routing-key': q.final },
      priority: 10,
      'apply-to': 'queues',
    });
    expect(put.status).toBeLessThan(300);
    await fill(q, {});
    expect(await requeueAll(q.dlq, 1)).toEqual([0, 0, 0, 0, 0, 0]); // now 1 = the limit
    // RabbitMQ 3.10 reports a new quorum queue's policy with its first statistics, 8–9 s after the
    // declare: the queue's record has no policy yet (so this case is the one the old code missed).
    const record = await (await mgmt('GET', `/api/queues/%2F/${encodeURIComponent(q.dlq)}?columns=effective_policy_definition`)).text();
    expect(record).not.toContain('delivery-limit');
    const dry = await runCli(dir, ['redrive', AMQP_URL, q.dlq, '--dry-run']);
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    await new Promise((r) => setTimeout(r, 500));
    expect(await nativeCount(q.final)).toBe(0);
    expect(await nativeCount(q.dlq)).toBe(6);
    // Control: the copies start at 0; two plain requeues push them past the limit to final.
    expect(await requeueAll(q.dlq, 1)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(await requeueAll(q.dlq, 1, false)).toEqual([1, 1, 1, 1, 1, 1]);
    await waitCount(q.final, 6);
  }, 180_000);
});
