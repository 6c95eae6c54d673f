import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRabbitmqAdapter } from '../../core/adapters/rabbitmq';
import type { BrokerAdapter } from '../../core/adapters/types';
import { defaultProjectConfig, type AuditConfig } from '../../shared/config/project-config';
import { evaluateAudit, type AuditReport, type Measurements } from '../../shared/audit';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, uniqueName } from './env';
import { closeNative, nativeChannel, nativeCount, nativeDeleteQueue } from './rabbitmq-native';

// Each rule: the misconfiguration built on the shared RabbitMQ (unique names) is found, the
// corrected configuration passes. Queues, exchanges and policies are removed afterwards.
const adapter: BrokerAdapter = createRabbitmqAdapter({ kind: 'rabbitmq', url: AMQP_URL, managementUrl: RABBITMQ_MANAGEMENT_URL });
const p = uniqueName('aud').replace(/-/g, '.');
const queues: string[] = [];
const exchanges: string[] = [];
const policies: string[] = [];
const AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;

async function mgmt(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${RABBITMQ_MANAGEMENT_URL}${path}`, { method, headers: { authorization: AUTH, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
}
async function policy(name: string, queue: string, definition: Record<string, unknown>, priority = 10): Promise<void> {
  policies.push(name);
  const r = await mgmt('PUT', `/api/policies/%2F/${encodeURIComponent(name)}`, { pattern: `^${queue.replace(/\./g, '\\.')}$`, definition, priority, 'apply-to': 'queues' });
  expect(r.status).toBeLessThan(300);
}
async function declare(name: string, options: { durable?: boolean; arguments?: Record<string, unknown> } = {}): Promise<void> {
  const ch = await nativeChannel();
  await ch.assertQueue(name, { durable: options.durable ?? true, ...(options.arguments ? { arguments: options.arguments } : {}) });
  await ch.close();
  queues.push(name);
}
async function exchange(name: string, type: string): Promise<void> {
  const ch = await nativeChannel();
  await ch.assertExchange(name, type, { durable: true });
  await ch.close();
  exchanges.push(name);
}
async function bind(queue: string, ex: string, key: string): Promise<void> {
  const ch = await nativeChannel();
  await ch.bindQueue(queue, ex, key);
  await ch.close();
}

async function audit(config: Partial<AuditConfig> = {}, measurements: Measurements = new Map()): Promise<AuditReport> {
  const facts = await adapter.audit!.collect({ pattern: `${p}.*` });
  return evaluateAudit([facts], { config: { ...defaultProjectConfig().audit, ...config }, measurements, now: Date.now() });
}
const on = (r: AuditReport, name: string): string[] => r.findings.filter((f) => f.target === `${p}.${name}`).map((f) => f.ruleId).sort();
/** Re-audits until `ok` (the management API applies policies and updates stats asynchronously). */
async function until(ok: (r: AuditReport) => boolean, run: () => Promise<AuditReport>, ms = 20_000): Promise<AuditReport> {
  const end = Date.now() + ms;
  let r = await run();
  while (!ok(r) && Date.now() < end) {
    await new Promise((res) => setTimeout(res, 500));
    r = await run();
  }
  return r;
}

const DLX = `${p}.dlx`;
let report: AuditReport;

beforeAll(async () => {
  await exchange(DLX, 'direct');
  await declare(`${p}.ok.dlq`);
  await bind(`${p}.ok.dlq`, DLX, `${p}.ok.dlq`);
  await declare(`${p}.ok`, { arguments: { 'x-dead-letter-exchange': DLX, 'x-dead-letter-routing-key': `${p}.ok.dlq` } });
  await declare(`${p}.nodlx`);
  await declare(`${p}.nodlx.dlq`);
  await declare(`${p}.missingdlx`, { arguments: { 'x-dead-letter-exchange': `${p}.nope` } });
  await declare(`${p}.unroutable`, { arguments: { 'x-dead-letter-exchange': DLX, 'x-dead-letter-routing-key': 'nothing.bound' } });
  // Precedence: the queue argument (a missing exchange) wins over the policy's (working) DLX.
  await declare(`${p}.prec`, { arguments: { 'x-dead-letter-exchange': `${p}.nope2` } });
  await policy(`${p}-prec`, `${p}.prec`, { 'dead-letter-exchange': DLX, 'dead-letter-routing-key': `${p}.ok.dlq` });
  await declare(`${p}.polonly`);
  await policy(`${p}-polonly`, `${p}.polonly`, { 'dead-letter-exchange': DLX, 'dead-letter-routing-key': `${p}.ok.dlq` });
  await declare(`${p}.qq`, { arguments: { 'x-queue-type': 'quorum', 'x-dead-letter-exchange': DLX, 'x-dead-letter-routing-key': `${p}.ok.dlq` } });
  await declare(`${p}.qq-ok`, { arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 5, 'x-dead-letter-exchange': DLX, 'x-dead-letter-routing-key': `${p}.ok.dlq` } });
  await declare(`${p}.ttl`, { arguments: { 'x-message-ttl': 60_000 } });
  await declare(`${p}.maxlen`);
  await policy(`${p}-maxlen`, `${p}.maxlen`, { 'max-length': 100 });
  await declare(`${p}.drophead`, { arguments: { 'x-max-length': 10, 'x-overflow': 'drop-head' } });
  await declare(`${p}.ttl-ok`, { arguments: { 'x-message-ttl': 60_000, 'x-dead-letter-exchange': DLX, 'x-dead-letter-routing-key': `${p}.ok.dlq` } });
  await declare(`${p}.reject`, { arguments: { 'x-max-length': 10, 'x-overflow': 'reject-publish', 'x-dead-letter-exchange': DLX, 'x-dead-letter-routing-key': `${p}.ok.dlq` } });
  await declare(`${p}.transient`, { durable: false, arguments: { 'x-dead-letter-exchange': DLX, 'x-dead-letter-routing-key': `${p}.ok.dlq` } });
  // A DLQ that fills up: 5 dead letters, no consumer.
  await declare(`${p}.grow.dlq`);
  await bind(`${p}.grow.dlq`, DLX, `${p}.grow.dlq`);
  await declare(`${p}.grow`, { arguments: { 'x-dead-letter-exchange': DLX, 'x-dead-letter-routing-key': `${p}.grow.dlq` } });
  const ch = await nativeChannel();
  for (let i = 0; i < 5; i++) ch.sendToQueue(`${p}.grow`, Buffer.from(`{"orderId":"A-${String(i)}"}`), { persistent: true });
  await ch.waitForConfirms();
  for (let i = 0; i < 5; i++) {
    const m = await ch.get(`${p}.grow`, { noAck: false });
    if (m) ch.nack(m, false, false);
  }
  await ch.close();
  const measurements: Measurements = new Map([
    [`${p}.ttl-ok`, { p99Ms: 2_000_000, meanMs: 500_000, source: 'file' }],
    [`${p}.ok`, { p99Ms: 1_000, meanMs: 300, source: 'file' }],
  ]);
  const config = { thresholds: { 'rabbitmq.dlq-growing-without-consumers': { maxMessages: 3 } } };
  // Wait for what only the asynchronously applied policies and stats produce: the max-length
  // policy's own finding (before it shows, the queue has the plain no-DLX finding instead), the
  // DLX policy clearing polonly's finding, and the DLQ's message count.
  report = await until(
    (r) =>
      on(r, 'grow.dlq').length > 0 &&
      on(r, 'maxlen').includes('rabbitmq.ttl-or-max-length-without-dlx') &&
      on(r, 'polonly').length === 0,
    () => audit(config, measurements),
    60_000,
  );
}, 150_000);

afterAll(async () => {
  for (const name of policies) await mgmt('DELETE', `/api/policies/%2F/${encodeURIComponent(name)}`).catch(() => undefined);
  for (const q of queues) await nativeDeleteQueue(q);
  const ch = await nativeChannel();
  for (const e of exchanges) await ch.deleteExchange(e).catch(() => undefined);
  await ch.close().catch(() => undefined);
  await closeNative();
  await adapter.close();
});

describe('RabbitMQ audit against the real broker', () => {
  it('a durable queue dead-lettering through a bound DLX passes every rule', () => {
    expect(on(report, 'ok')).toEqual([]);
    expect(on(report, 'ok.dlq')).toEqual([]);
    const passed = report.checks.filter((c) => c.target === `${p}.ok` && c.status === 'pass').map((c) => c.ruleId);
    expect(passed).toEqual(expect.arrayContaining(['rabbitmq.no-dead-letter-exchange', 'rabbitmq.dead-letter-exchange-missing', 'rabbitmq.dead-letters-unroutable', 'rabbitmq.non-durable-queue', 'rabbitmq.consumer-timeout-below-processing-time']));
  });

  it('no dead-letter exchange: found, with a DLX policy to <name>.dlq as one-click fix', () => {
    expect(on(report, 'nodlx')).toEqual(['rabbitmq.no-dead-letter-exchange']);
    expect(report.findings.find((f) => f.target === `${p}.nodlx`)?.autoFix).toMatchObject({ kind: 'rabbitmq.add-dlx-policy', deadLetterExchange: '', deadLetterRoutingKey: `${p}.nodlx.dlq` });
  });

  it('a DLX that does not exist, and dead letters no binding routes', () => {
    expect(on(report, 'missingdlx')).toEqual(['rabbitmq.dead-letter-exchange-missing']);
    expect(on(report, 'unroutable')).toEqual(['rabbitmq.dead-letters-unroutable']);
    expect(report.findings.find((f) => f.target === `${p}.unroutable`)?.message).toContain("'nothing.bound'");
  });

  it('the x-dead-letter-exchange argument wins over a policy; a policy alone counts', () => {
    expect(on(report, 'prec')).toEqual(['rabbitmq.dead-letter-exchange-missing']);
    expect(report.findings.find((f) => f.target === `${p}.prec`)?.evidence).toMatchObject({ deadLetterExchange: { value: `${p}.nope2`, source: 'argument' } });
    expect(on(report, 'polonly')).toEqual([]);
  });

  it('quorum queue without a delivery limit; with x-delivery-limit it passes', () => {
    expect(on(report, 'qq')).toEqual(['rabbitmq.quorum-no-delivery-limit']);
    expect(on(report, 'qq-ok')).toEqual([]);
  });

  it('TTL, max length (policy) and drop-head without DLX; with a DLX, or reject-publish, they pass', () => {
    expect(on(report, 'ttl')).toEqual(['rabbitmq.ttl-or-max-length-without-dlx']);
    expect(on(report, 'maxlen')).toEqual(['rabbitmq.ttl-or-max-length-without-dlx']);
    expect(report.findings.find((f) => f.target === `${p}.maxlen`)?.message).toContain('max length 100 (policy)');
    expect(on(report, 'drophead')).toEqual(['rabbitmq.drop-head-without-dlx']);
    expect(on(report, 'reject')).toEqual([]);
  });

  it('consumer_timeout (default 30 min) below a measured p99 of 33 min; 1 s passes', () => {
    expect(on(report, 'ttl-ok')).toEqual(['rabbitmq.consumer-timeout-below-processing-time']);
    expect(report.checks.find((c) => c.target === `${p}.ok` && c.ruleId === 'rabbitmq.consumer-timeout-below-processing-time')?.status).toBe('pass');
  });

  it('dead letters routed back into the same queue (DLX "" without a routing key) are reported as the cycle they are, not as "no binding of \'\' matches"', async () => {
    await declare(`${p}.selfdlx`, { arguments: { 'x-dead-letter-exchange': '' } });
    const r = await audit();
    expect(on(r, 'selfdlx')).toEqual(['rabbitmq.dead-letters-unroutable']);
    expect(r.findings.find((f) => f.target === `${p}.selfdlx`)?.message).toBe(
      'dead letters are routed back into this same queue (a cycle); RabbitMQ drops a message that completes a cycle without being rejected.',
    );
  });

  it('a non-durable queue', () => {
    expect(on(report, 'transient')).toEqual(['rabbitmq.non-durable-queue']);
  });

  it('a consumer-less DLQ holding 5 dead letters (threshold 3); with a consumer it passes', async () => {
    expect(on(report, 'grow.dlq')).toEqual(['rabbitmq.dlq-growing-without-consumers']);
    expect(await nativeCount(`${p}.grow.dlq`)).toBe(5);
    const ch = await nativeChannel();
    await ch.prefetch(1);
    await ch.consume(`${p}.grow.dlq`, () => undefined, { noAck: false });
    const config = { thresholds: { 'rabbitmq.dlq-growing-without-consumers': { maxMessages: 3 } } };
    const r = await until((x) => on(x, 'grow.dlq').length === 0, () => audit(config));
    await ch.close();
    expect(on(r, 'grow.dlq')).toEqual([]);
  });

  it('one-click fix: a DLX policy whose dead letters really reach the DLQ', async () => {
    const fix = report.findings.find((f) => f.target === `${p}.nodlx`)?.autoFix;
    if (!fix || fix.kind !== 'rabbitmq.add-dlx-policy') throw new Error('no fix offered');
    policies.push(fix.policyName);
    const preview = await adapter.audit!.previewFix(fix);
    expect(preview.before).toMatchObject({ policy: null });
    expect(preview.after).toMatchObject({ policy: fix.policyName, effectivePolicyDefinition: { 'dead-letter-exchange': '', 'dead-letter-routing-key': `${p}.nodlx.dlq` } });
    // applyFix waits (bounded, APPLY_WAIT_MS) until the management API shows the policy on the queue: slow under load.
    const applied = await adapter.audit!.applyFix(fix);
    expect(applied.after).toMatchObject({ policy: fix.policyName, effectivePolicyDefinition: { 'dead-letter-exchange': '', 'dead-letter-routing-key': `${p}.nodlx.dlq` } });
    expect(applied.notes.filter((n) => n.includes('still shows'))).toEqual([]);
    const ch = await nativeChannel();
    ch.sendToQueue(`${p}.nodlx`, Buffer.from('{"orderId":"A-7"}'));
    await ch.waitForConfirms();
    const m = await ch.get(`${p}.nodlx`, { noAck: false });
    expect(m).toBeTruthy();
    if (m) ch.nack(m, false, false);
    await ch.close();
    for (let i = 0; i < 50 && (await nativeCount(`${p}.nodlx.dlq`)) === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await nativeCount(`${p}.nodlx.dlq`)).toBe(1);
    const r = await audit();
    expect(on(r, 'nodlx')).toEqual([]);
    await expect(adapter.audit!.applyFix(fix)).rejects.toThrow(/already has a dead-letter exchange/);
  }, 90_000);
});
