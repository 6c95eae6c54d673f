import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRabbitmqAdapter } from '../../core/adapters/rabbitmq';
import { AMQP_COUNTS_CAP } from '../../core/adapters/rabbitmq/adapter';
import type { BrokerAdapter } from '../../core/adapters/types';
import { main, type CliIo } from '../../core/cli/main';
import { defaultProjectConfig } from '../../shared/config/project-config';
import { evaluateAudit, type AuditReport } from '../../shared/audit';
import { PrivateRabbit } from './fixtures/private-rabbitmq';
import { RABBITMQ_MANAGEMENT_URL, uniqueName } from './env';

/**
 * A RabbitMQ broker with management statistics off (`management_agent.disable_metrics_collector =
 * true`, the default of the official Docker image without the management tag), on a PRIVATE node
 * (never the shared broker): the management API then lists queues without counts or consumers and
 * keeps no ack statistics. Queuescope reads the counts over AMQP, does not use a shovel (whose
 * outcome it measures with those statistics) nor Little's law for tuning, and says why in the
 * connection test, the queue config, the audit and the tuning sources.
 */

const rabbit = new PrivateRabbit({ plugins: ['rabbitmq_shovel', 'rabbitmq_shovel_management'], config: ['management_agent.disable_metrics_collector = true'] });
const work = uniqueName('nostats-work');
const dlq = uniqueName('nostats-dlq');
const N = 60;
let conn: amqp.ChannelModel;
let adapter: BrokerAdapter;
let home: string;

const id = (name: string): string => `rabbitmq:%2F/${name}`;

beforeAll(async () => {
  await rabbit.start();
  home = await mkdtemp(join(tmpdir(), 'qs-nostats-'));
  conn = await amqp.connect(rabbit.url);
  const ch = await conn.createConfirmChannel();
  await ch.assertQueue(dlq, { durable: true });
  await ch.assertQueue(work, { durable: true, arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': dlq } });
  for (let i = 0; i < N; i++) ch.sendToQueue(work, Buffer.from(JSON.stringify({ orderId: `A-${i}` })), { persistent: true, messageId: `A-${i}:charge` });
  await ch.waitForConfirms();
  const plain = await conn.createChannel();
  for (let i = 0; i < N; i++) {
    const m = await plain.get(work);
    if (m === false) throw new Error(`only ${i} messages to dead-letter`);
    plain.nack(m, false, false);
  }
  // Dead-lettering is asynchronous: wait until the DLQ counts them all (over AMQP).
  for (let t = 0; (await plain.checkQueue(dlq)).messageCount < N; t++) {
    if (t > 100) throw new Error('the messages did not reach the DLQ');
    await new Promise((r) => setTimeout(r, 100));
  }
  await plain.close();
  await ch.close();
  adapter = createRabbitmqAdapter({ kind: 'rabbitmq', url: rabbit.url, managementUrl: rabbit.mgmtUrl });
}, 180_000);

afterAll(async () => {
  // Either may be unset when beforeAll failed.
  await Promise.resolve()
    .then(() => adapter.close())
    .catch(() => undefined);
  await Promise.resolve()
    .then(() => conn.close())
    .catch(() => undefined);
  await rabbit.stop();
  if (home) await rm(home, { recursive: true, force: true });
}, 120_000);

describe('a management URL that belongs to another broker (private node AMQP, shared broker management)', () => {
  // Without --management-url the CLI derives http://127.0.0.1:15672 — the shared broker, not this node.
  it('listing, the connection test, the audit and a redrive refuse with the reason; nothing moves on either broker', async () => {
    const wrong = createRabbitmqAdapter({ kind: 'rabbitmq', url: rabbit.url, managementUrl: RABBITMQ_MANAGEMENT_URL });
    try {
      await expect(wrong.listQueues({})).rejects.toMatchObject({ code: 'MANAGEMENT_UNAVAILABLE', message: expect.stringContaining('belongs to another broker') as unknown });
      await expect(wrong.audit!.collect({})).rejects.toMatchObject({ code: 'MANAGEMENT_UNAVAILABLE' });
      const t = await wrong.testConnection();
      expect(t.ok).toBe(false);
      expect(t.error?.message).toContain('belongs to another broker');
    } finally {
      await wrong.close();
    }
    const ch = await conn.createChannel();
    const before = (await ch.checkQueue(dlq)).messageCount;
    let stdout = '';
    let stderr = '';
    const io: CliIo = { stdout: { write: (x: string) => (stdout += x) }, stderr: { write: (x: string) => (stderr += x) }, env: { QUEUESCOPE_HOME: home }, cwd: home };
    const code = await main(['redrive', rabbit.url, dlq, '--to', work, '--yes'], io);
    expect(code, stdout).not.toBe(0);
    expect(stderr).toContain('belongs to another broker');
    expect((await ch.checkQueue(dlq)).messageCount).toBe(before);
    await ch.close();
  });
});

describe('RabbitMQ with management statistics off (private node)', () => {
  it('the connection test passes and says the statistics are off and what Queuescope does instead', async () => {
    const r = await adapter.testConnection();
    expect(r.ok, JSON.stringify(r.error)).toBe(true);
    const detail = r.checks.map((c) => c.detail).join('\n');
    expect(detail).toContain('management statistics are off');
    expect(detail).toContain('reads counts over AMQP');
  });

  it('lists the queues with ready and consumer counts read over AMQP (the management API has none)', async () => {
    // What the management API itself gives: no counts at all.
    const res = await fetch(`${rabbit.mgmtUrl}/api/queues/%2F/${encodeURIComponent(dlq)}`, { headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` } });
    const raw = (await res.json()) as Record<string, unknown>;
    expect(raw.messages_ready).toBeUndefined();
    expect(raw.consumers).toBeUndefined();

    const ch = await conn.createChannel();
    await ch.consume(work, () => undefined, { noAck: false });
    try {
      const queues = await adapter.listQueues({ pattern: 'qs-test-nostats-*' });
      const d = queues.find((q) => q.name === dlq);
      const w = queues.find((q) => q.name === work);
      expect(d?.depth).toBe(N);
      expect(d?.consumers).toBe(0);
      expect(d?.inFlight).toBeNull();
      expect(w?.depth).toBe(0);
      expect(w?.consumers).toBe(1);
      expect(String(d?.config.managementStatistics)).toMatch(/^off: .*counts here come from AMQP/);
      // The CLI says once why in-flight is unknown (stderr; the table stays as it is).
      let out = '';
      let err = '';
      const io: CliIo = { stdout: { write: (x: string) => (out += x) }, stderr: { write: (x: string) => (err += x) }, env: { QUEUESCOPE_HOME: home }, cwd: home };
      expect(await main(['queues', rabbit.url, '--management-url', rabbit.mgmtUrl, '--pattern', 'qs-test-nostats-*'], io)).toBe(0);
      expect(out).toContain(dlq);
      expect(err).toMatch(/^note: management statistics off: /);
      const one = await adapter.getQueue(id(dlq));
      expect(one.depth).toBe(N);
      expect(String(one.config.managementStatistics)).toMatch(/^off: /);
    } finally {
      await ch.close();
    }
  });

  it('audit: the consumer-less-DLQ check is judged from AMQP counts (a DLQ without consumers: finding; one with a consumer: pass), and says so', async () => {
    // A second DLQ with a consumer holding 1 of its 60 (prefetch 1): 59 ready, above the threshold below,
    // so only its consumer count can make it pass.
    const held = uniqueName('nostats-dlq-held');
    const ch = await conn.createConfirmChannel();
    await ch.assertQueue(held, { durable: true });
    for (let i = 0; i < N; i++) ch.sendToQueue(held, Buffer.from(`H-${i}`), { persistent: true });
    await ch.waitForConfirms();
    const consumerCh = await conn.createChannel();
    await consumerCh.prefetch(1);
    await consumerCh.consume(held, () => undefined, { noAck: false });
    try {
      for (let t = 0; (await ch.checkQueue(held)).messageCount !== N - 1; t++) {
        if (t > 100) throw new Error('the consumer did not take a message');
        await new Promise((r) => setTimeout(r, 50));
      }
      const dir = await mkdtemp(join(home, 'audit-'));
      // maxMessages 50: the 60 dead letters in the consumer-less DLQ are reported (the default is 1000).
      await writeFile(join(dir, 'queuescope.config.json'), JSON.stringify({ version: 1, audit: { thresholds: { 'rabbitmq.dlq-growing-without-consumers': { maxMessages: 50 } } } }));
      let stdout = '';
      let stderr = '';
      const io: CliIo = { stdout: { write: (x: string) => (stdout += x) }, stderr: { write: (x: string) => (stderr += x) }, env: { QUEUESCOPE_HOME: home }, cwd: dir };
      const code = await main(['audit', rabbit.url, '--management-url', rabbit.mgmtUrl, '--queues', 'qs-test-nostats-*', '--fail-on', 'warning', '--json'], io);
      const report = JSON.parse(stdout) as AuditReport;
      const rule = 'rabbitmq.dlq-growing-without-consumers';
      const findings = report.findings.filter((f) => f.ruleId === rule);
      expect(findings.map((f) => f.target)).toEqual([dlq]);
      expect(findings[0]?.message).toBe(
        `${dlq} has no consumers and holds ${N} ready messages (at least 50); counts from AMQP (passive queue.declare), as the broker's management statistics are off (management_agent.disable_metrics_collector = true): ready messages only, unacknowledged unknown, no growth rate.`,
      );
      expect(findings[0]?.evidence).toMatchObject({ consumers: 0, messagesReady: N, messagesUnacknowledged: null, countsSource: 'amqp' });
      expect(code, stderr).toBe(6);
      const heldCheck = report.checks.find((c) => c.ruleId === rule && c.target === held);
      expect(heldCheck?.status).toBe('pass');
      expect(heldCheck?.note).toMatch(/^1 consumer; counts from AMQP \(passive queue\.declare\).*unacknowledged unknown/);
      const notes = report.notes.join('\n');
      expect(notes).toContain('management statistics are off');
      expect(notes).toContain('consumer and ready counts of 2 dead-letter queues were read over AMQP instead');
      expect(notes).toContain('unacknowledged unknown');
    } finally {
      await consumerCh.close();
      await ch.deleteQueue(held);
      await ch.close();
    }
  });

  it('audit and listing past the AMQP count cap (lowered to 1 for this test; 2,000 in production): not checked / not read, with the reason', async () => {
    expect(AMQP_COUNTS_CAP).toBe(2000);
    const second = uniqueName('nostats-dlq-second'); // sorts after `dlq` (hex suffix), so it is past a cap of 1
    const ch = await conn.createChannel();
    await ch.assertQueue(second, { durable: true });
    const capped = createRabbitmqAdapter({ kind: 'rabbitmq', url: rabbit.url, managementUrl: rabbit.mgmtUrl }, { amqpCountsCap: 1 });
    try {
      const facts = await capped.audit!.collect({ pattern: 'qs-test-nostats-*' });
      const report = evaluateAudit([facts], { config: defaultProjectConfig().audit, measurements: new Map(), now: Date.now() });
      const rule = 'rabbitmq.dlq-growing-without-consumers';
      const first = report.checks.find((c) => c.ruleId === rule && c.target === dlq);
      expect(first?.status).toBe('pass'); // 60 ready, below both default thresholds
      expect(first?.note).toContain(`no consumers, ${N} ready messages, below both thresholds; counts from AMQP`);
      const past = report.checks.find((c) => c.ruleId === rule && c.target === second);
      expect(past?.status).toBe('not-checked');
      expect(past?.note).toContain('management statistics are off');
      expect(past?.note).toContain('counts over AMQP are read for the first 1 dead-letter queues of an audit (this is one of 1 past that cap; audit fewer queues with a name pattern, --queues in the CLI)');
      expect(report.notes.join('\n')).toContain('Only the first 1 dead-letter queues are counted over AMQP: 1 more are not checked (audit fewer queues with a name pattern, --queues in the CLI)');

      const listed = await capped.listQueues({ pattern: 'qs-test-nostats-*' });
      const counted = listed.filter((q) => q.depth !== null);
      const notRead = listed.filter((q) => q.config.counts !== undefined);
      expect(counted).toHaveLength(1);
      expect(notRead).toHaveLength(listed.length - 1);
      expect(String(notRead[0]?.config.counts)).toBe('not read: counts over AMQP are read for the first 1 queues of a listing without them; list fewer (a name pattern) or open the queue');
    } finally {
      await capped.close();
      await ch.deleteQueue(second);
      await ch.close();
    }
  });

  it("tuning: Little's law (ack counter and unacknowledged gauge) is unavailable, with the reason and what to do", async () => {
    const [little] = await adapter.tuning!.sources(id(work));
    expect(little?.source).toBe('littles-law');
    expect(little?.available).toBe(false);
    expect(little?.unavailableReason).toContain('management statistics are off');
    expect(little?.unavailableReason).toContain('--source file');
    // `tune` without --source (the README's form) says why, not "the file source needs durations".
    let stderr = '';
    const io: CliIo = { stdout: { write: () => true }, stderr: { write: (x: string) => (stderr += x) }, env: { QUEUESCOPE_HOME: home }, cwd: home };
    const code = await main(['tune', rabbit.url, work, '--management-url', rabbit.mgmtUrl, '--window', '10s'], io);
    expect(code).not.toBe(0);
    expect(stderr).toContain('management statistics are off');
    expect(stderr).not.toContain('needs durations');
  });

  it('redrive dry run: warns that messages another consumer holds unacknowledged are neither examined nor moved', async () => {
    const ch = await conn.createChannel();
    await ch.prefetch(5);
    let held = 0;
    await ch.consume(dlq, () => {
      held++;
    }, { noAck: false });
    try {
      for (let t = 0; held < 5 && t < 100; t++) await new Promise((r) => setTimeout(r, 50));
      expect(held).toBe(5);
      let stdout = '';
      let stderr = '';
      const io: CliIo = { stdout: { write: (x: string) => (stdout += x) }, stderr: { write: (x: string) => (stderr += x) }, env: { QUEUESCOPE_HOME: home }, cwd: home };
      const code = await main(['redrive', rabbit.url, dlq, '--management-url', rabbit.mgmtUrl, '--to', work, '--dry-run'], io);
      expect(code, stderr).toBe(0);
      expect(stdout).toMatch(/examined/);
      expect(stdout).toContain(`warning: 1 consumer reads ${dlq}: messages it holds unacknowledged (not counted here) are neither examined nor moved`);
    } finally {
      await ch.close(); // the 5 go back to the DLQ
    }
  });

  it('redrive: no shovel (its outcome needs the statistics); the client-side move takes every message', async () => {
    const support = await adapter.redrive!.nativeMove(await adapter.getQueue(id(dlq)), id(work));
    expect(support.available).toBe(false);
    expect(support.note).toContain('management statistics are off');

    let stdout = '';
    let stderr = '';
    const io: CliIo = { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) }, env: { QUEUESCOPE_HOME: home }, cwd: home };
    const code = await main(['redrive', rabbit.url, dlq, '--management-url', rabbit.mgmtUrl, '--yes', '--json'], io);
    expect(code, stderr).toBe(0);
    const out = JSON.parse(stdout) as { status: string; result: { mode: string; moved: number; failed: number } };
    expect(out.status).toBe('completed');
    expect(out.result.mode).toBe('client-side');
    expect(out.result.moved).toBe(N);
    const ch = await conn.createChannel();
    try {
      expect((await ch.checkQueue(dlq)).messageCount).toBe(0);
      expect((await ch.checkQueue(work)).messageCount).toBe(N);
    } finally {
      await ch.close();
    }
  });
});
