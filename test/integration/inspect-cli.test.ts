import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConfirmChannel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type CliIo } from '../../core/cli/main';
import type { InspectReport } from '../../shared/api/inspect';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, uniqueName } from './env';
import { closeNative, nativeChannel, nativeCount, nativeDeleteQueue } from './rabbitmq-native';

/**
 * `queuescope inspect` against a real RabbitMQ work queue with a dead-letter exchange and its DLQ:
 * keys, verdicts, the DLQ-vs-source duplicate, `--fail-on`, `--config` rules, snapshots and the
 * peek side-effect gate.
 */

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}
async function run(argv: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { QUEUESCOPE_HOME: home },
    cwd: dir,
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}
const report = (r: Run): InspectReport => JSON.parse(r.stdout) as InspectReport;

const work = uniqueName('insp-work');
const dlq = uniqueName('insp-dlq');
const dlx = uniqueName('insp-dlx');
const quorum = uniqueName('insp-quorum');
const big = uniqueName('insp-big');
const p = work.slice(-8).toUpperCase(); // order ids unique to this run
let dir: string;
let home: string;
let ch: ConfirmChannel;

function send(queue: string, body: unknown, options: { messageId?: string; headers?: Record<string, unknown> } = {}): void {
  ch.sendToQueue(queue, Buffer.from(JSON.stringify(body)), { contentType: 'application/json', persistent: false, ...options });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-inspect-'));
  home = join(dir, 'home');
  ch = await nativeChannel();
  await ch.assertExchange(dlx, 'direct', { durable: false, autoDelete: false });
  await ch.assertQueue(dlq, { durable: false });
  await ch.bindQueue(dlq, dlx, dlq);
  await ch.assertQueue(work, { durable: false, arguments: { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': dlq } });
  // 1. The first copy of P-1:charge fails and is dead-lettered by the broker.
  send(work, { type: 'order.charge', orderId: `${p}-1` }, { messageId: `${p}-1:charge` });
  await ch.waitForConfirms();
  const first = await ch.get(work, { noAck: false });
  if (first === false) throw new Error('the first message did not arrive');
  ch.reject(first, false);
  for (let i = 0; i < 100 && (await nativeCount(dlq)) < 1; i++) await new Promise((r) => setTimeout(r, 20));
  // 2. The sender re-sends it with the same key; plus a full mutable order and an ID-only message.
  send(work, { type: 'order.charge', orderId: `${p}-1` }, { messageId: `${p}-1:charge` });
  send(
    work,
    {
      type: 'order.updated',
      order: { id: `${p}-2`, status: 'paid', customer: { id: 'c-1', email: 'buyer@example.com', shippingAddress: { line1: '1 Harbour St', city: 'Lisbon' } }, items: [{ sku: 'SKU-1', qty: 2 }], updatedAt: '2026-11-29T10:00:00Z' },
    },
    { headers: { 'Idempotency-Key': `${p}-2:update` } },
  );
  send(work, { orderId: `${p}-3`, operation: 'ship' });
  await ch.waitForConfirms();
  await ch.assertQueue(quorum, { durable: true, arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 3 } });
  send(quorum, { orderId: `${p}-9` }, { messageId: `${p}-9:charge` });
  await ch.waitForConfirms();
  // A 3 MiB document: 19% of RabbitMQ 4.x's 16 MiB default, 2% of 3.8–3.13's 128 MiB.
  await ch.assertQueue(big, { durable: false });
  send(big, { documentId: `${p}-D1`, content: 'x'.repeat(3 * 1024 * 1024) }, { messageId: `${p}-D1:store` });
  await ch.waitForConfirms();
}, 30_000);

afterAll(async () => {
  for (const q of [work, dlq, quorum, big]) await nativeDeleteQueue(q);
  await ch.deleteExchange(dlx).catch(() => undefined);
  await ch.close().catch(() => undefined);
  await closeNative();
  await rm(dir, { recursive: true, force: true });
});

describe('queuescope inspect (RabbitMQ)', () => {
  it('reports each message key, source and verdicts, and the duplicate key shared with the DLQ', async () => {
    const r = await run(['inspect', AMQP_URL, work, '--json']);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^note: reading qs-test-insp-work-\S+ changes it:\n.*redelivered=true/s); // said before reading
    const rep = report(r);
    expect(rep.analysed).toBe(3);
    const byKey = new Map(rep.messages.map((m) => [m.key, m]));
    expect(byKey.get(`${p}-1:charge`)).toMatchObject({ keySource: 'AMQP message_id', keyVerdict: 'business-derived', verdict: 'ok' });
    expect(byKey.get(`${p}-2:update`)).toMatchObject({ keySource: 'header Idempotency-Key', verdict: 'flag' });
    expect(byKey.get(`${p}-2:update`)?.topReason).toMatch(/order\.status/);
    expect(byKey.get(null)).toMatchObject({ keyVerdict: 'missing', verdict: 'ok' });
    expect(rep.summary.flagged).toBe(1);
    const cmp = rep.comparisons.find((c) => c.relation === 'dead-letter-target');
    expect(cmp?.label).toBe(dlq);
    expect(cmp?.result?.sharedKeyCount).toBe(1);
    expect(cmp?.result?.sharedKeys[0]?.key).toBe(`${p}-1:charge`);
  });

  it('prints the summary and a table of verdicts, and --fail-on flag exits 6', async () => {
    const plain = await run(['inspect', AMQP_URL, work]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/Redelivery safety of qs-test-insp-work-/);
    expect(plain.stdout).toMatch(/Payloads: 1 flag, 0 review, 2 ok/);
    expect(plain.stdout).toContain(`${p}-1:charge`);
    expect(plain.stdout).toMatch(new RegExp(`Compared with dead-letter queue ${dlq}[^\\n]*1 shared key`));
    const failing = await run(['inspect', AMQP_URL, work, '--fail-on', 'flag']);
    expect(failing.code).toBe(6);
    expect(failing.stderr).toMatch(/fail-on flag: 1 message flagged; exit 6/);
    // The DLQ holds only the ID-only copy: nothing to flag there.
    const dlqRun = await run(['inspect', AMQP_URL, dlq, '--fail-on', 'flag', '--json']);
    expect(dlqRun.code).toBe(0);
    expect(report(dlqRun).comparisons.find((c) => c.relation === 'dead-letter-source')?.result?.sharedKeyCount).toBe(1);
  });

  it('applies key rules from --config and refuses a bad --fail-on', async () => {
    const cfg = join(dir, 'rules.json');
    await writeFile(cfg, JSON.stringify({ inspect: { queues: [{ match: 'qs-test-insp-work-*', keyRules: [{ kind: 'template', template: '{body.orderId}:{body.operation}' }] }] } }));
    const rep = report(await run(['inspect', AMQP_URL, work, '--config', cfg, '--json']));
    expect(rep.rulesSource).toMatch(/"qs-test-insp-work-\*" in .*rules\.json/);
    const composed = rep.messages.find((m) => m.key === `${p}-3:ship`);
    expect(composed).toMatchObject({ keyOrigin: 'user', keyVerdict: 'business-derived' });
    expect(composed?.keySource).toMatch(/template/);
    const bad = await run(['inspect', AMQP_URL, work, '--fail-on', 'maybe']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--fail-on must be "flag" or "review"/);
  });

  it('inspects an exported snapshot file the same way', async () => {
    const file = join(dir, 'work.jsonl');
    expect((await run(['export', AMQP_URL, work, '--out', file])).code).toBe(0);
    const r = await run(['inspect', file, '--fail-on', 'flag', '--json']);
    expect(r.code).toBe(6);
    const rep = report(r);
    expect(rep.queue.name).toBe(work);
    expect(rep.sideEffects).toEqual([]); // a file is read without touching the broker
    expect(rep.summary.verdicts).toEqual({ ok: 2, review: 0, flag: 1 });
  });

  it('measures payload size against the connected RabbitMQ version\'s default max_message_size', async () => {
    const overview = await fetch(`${RABBITMQ_MANAGEMENT_URL}/api/overview`, { headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` } });
    const version = ((await overview.json()) as { rabbitmq_version?: string }).rabbitmq_version;
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    const rep = report(await run(['inspect', AMQP_URL, big, '--json']));
    const m = rep.messages[0];
    expect(m?.bytes).toBeGreaterThan(3 * 1024 * 1024);
    expect(m?.verdict).toBe('review');
    const major = Number(version?.split('.')[0]);
    // 3.8–3.13 allow 128 MiB by default; 4.x 16 MiB. The shared broker here is 3.10.8.
    const limit = major < 4 ? '128 MiB' : '16 MiB';
    expect(m?.reasons.join(' | ')).toContain(`of ${limit}, RabbitMQ ${String(version)} default max_message_size (${limit})`);
    if (major < 4) expect(m?.reasons.join(' | ')).not.toContain('16 MiB');
  });

  it('refuses a queue whose peek could dead-letter messages unless side effects are accepted', async () => {
    const refused = await run(['inspect', AMQP_URL, quorum]);
    expect(refused.code).toBe(5);
    expect(refused.stderr).toMatch(/dead-letter/);
    const ok = await run(['inspect', AMQP_URL, quorum, '--accept-side-effects', '--json']);
    expect(ok.code).toBe(0);
    expect(report(ok).messages[0]?.key).toBe(`${p}-9:charge`);
  });
});
