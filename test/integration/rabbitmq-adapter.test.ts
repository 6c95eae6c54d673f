import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfirmChannel } from 'amqplib';
import { createRabbitmqAdapter } from '../../core/adapters/rabbitmq';
import type { BrokerAdapter } from '../../core/adapters/types';
import { QueuescopeError, type QueueSummary } from '../../shared/domain';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, uniqueName } from './env';

// ---- native fixtures: test/integration/rabbitmq-native.ts ----
import { closeNative, nativeChannel, nativeCount, nativeDeleteQueue } from './rabbitmq-native';

const auth = `Basic ${Buffer.from('guest:guest').toString('base64')}`;

/** Calls the management API as guest. @returns the HTTP status and parsed JSON (or null). */
async function mgmt(method: 'GET' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const r = await fetch(`${RABBITMQ_MANAGEMENT_URL}${path}`, {
    method,
    headers: { authorization: auth, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  return { status: r.status, json };
}

/**
 * RabbitMQ-specific behaviour of the adapter against the real broker (3.10): dead-letter
 * resolution (arguments, policies, topic bindings, missing exchanges), real dead-lettering and
 * `x-death`, quorum delivery counts and limits, connection failures with their causes, and
 * hostile headers. Users, vhosts and policies are created through the management API and removed.
 */

const config = { kind: 'rabbitmq' as const, url: AMQP_URL, managementUrl: RABBITMQ_MANAGEMENT_URL };
const idOf = (name: string): string => `rabbitmq:%2F/${encodeURIComponent(name)}`;

async function expectCode(p: Promise<unknown>, code: string): Promise<QueuescopeError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(QueuescopeError);
    expect((e as QueuescopeError).code).toBe(code);
    return e as QueuescopeError;
  }
  throw new Error(`expected a QueuescopeError ${code}, but the call succeeded`);
}

let adapter: BrokerAdapter;
let ch: ConfirmChannel;
const queues: string[] = [];
const exchanges: string[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

async function queue(label: string, args: Record<string, unknown> = {}, durable = true): Promise<string> {
  const name = uniqueName(label);
  await ch.assertQueue(name, { durable, arguments: args });
  queues.push(name);
  return name;
}
async function exchange(label: string, type: string): Promise<string> {
  const name = uniqueName(label);
  await ch.assertExchange(name, type, { durable: false, autoDelete: false });
  exchanges.push(name);
  return name;
}

/** The listing entries for these queue names, through the adapter. */
async function listed(...names: string[]): Promise<Map<string, QueueSummary>> {
  const all = await adapter.listQueues({ pattern: 'qs-test-*' });
  const m = new Map(all.filter((q) => names.includes(q.name)).map((q) => [q.name, q]));
  expect([...m.keys()].sort()).toEqual([...names].sort());
  return m;
}

async function waitFor<T>(what: string, fn: () => Promise<T | null | undefined | false>, ms = 15_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== null && v !== undefined && v !== false) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  adapter = createRabbitmqAdapter(config);
  ch = await nativeChannel();
});

afterAll(async () => {
  for (const c of cleanups) await c().catch(() => undefined);
  for (const q of queues) await nativeDeleteQueue(q);
  const c2 = await nativeChannel();
  for (const e of exchanges) await c2.deleteExchange(e).catch(() => undefined);
  await c2.close().catch(() => undefined);
  await ch.close().catch(() => undefined);
  await adapter.close();
  await closeNative();
});

describe('dead-letter resolution', () => {
  it('follows x-dead-letter-exchange and routing key (arguments) through a direct binding', async () => {
    const dlx = await exchange('dlx-direct', 'direct');
    const dlq = await queue('dlq');
    await ch.bindQueue(dlq, dlx, 'work.failed');
    const work = await queue('work', { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': 'work.failed' });
    const m = await listed(work, dlq);
    const w = m.get(work)!;
    expect(w.deadLetterTargets).toHaveLength(1);
    expect(w.deadLetterTargets[0]).toMatchObject({ queueId: idOf(dlq), queueName: dlq });
    expect(w.deadLetterTargets[0]?.problem).toBeUndefined();
    expect(w.deadLetterTargets[0]?.via).toContain('argument');
    expect(w.config).toMatchObject({ deadLetterExchange: dlx, deadLetterRoutingKey: 'work.failed', sources: { deadLetterExchange: 'argument' } });
    const d = m.get(dlq)!;
    expect(d.deadLetterSources).toEqual([idOf(work)]);
    expect(d.isDeadLetterQueue).toBe(true);
    expect(w.isDeadLetterQueue).toBe(false);
  });

  it('follows a policy, and queue arguments win over the policy', async () => {
    const dlxPolicy = await exchange('dlx-pol', 'fanout');
    const dlxArg = await exchange('dlx-arg', 'fanout');
    const dlqPolicy = await queue('dlq-pol');
    const dlqArg = await queue('dlq-arg');
    await ch.bindQueue(dlqPolicy, dlxPolicy, '');
    await ch.bindQueue(dlqArg, dlxArg, '');
    const prefix = uniqueName('pol');
    const viaPolicy = `${prefix}-a`;
    const viaArg = `${prefix}-b`;
    await ch.assertQueue(viaPolicy, { durable: true });
    await ch.assertQueue(viaArg, { durable: true, arguments: { 'x-dead-letter-exchange': dlxArg } });
    queues.push(viaPolicy, viaArg);
    const policy = uniqueName('policy');
    const put = await mgmt('PUT', `/api/policies/%2F/${policy}`, {
      pattern: `^${prefix}-`,
      definition: { 'dead-letter-exchange': dlxPolicy, 'message-ttl': 60_000 },
      'apply-to': 'queues',
      priority: 10,
    });
    expect(put.status).toBeLessThan(300);
    cleanups.push(() => mgmt('DELETE', `/api/policies/%2F/${policy}`));
    await waitFor('the policy to apply', async () => {
      const r = await mgmt('GET', `/api/queues/%2F/${viaArg}`);
      return (r.json as { policy?: string }).policy === policy;
    });

    const a = await adapter.getQueue(idOf(viaPolicy));
    expect(a.deadLetterTargets.map((t) => t.queueName)).toEqual([dlqPolicy]);
    expect(a.deadLetterTargets[0]?.via).toContain(`policy '${policy}'`);
    expect(a.config).toMatchObject({ policy, deadLetterExchange: dlxPolicy, messageTtlMs: 60_000, sources: { deadLetterExchange: 'policy', messageTtlMs: 'policy' } });

    const b = await adapter.getQueue(idOf(viaArg));
    expect(b.deadLetterTargets.map((t) => t.queueName)).toEqual([dlqArg]);
    expect(b.deadLetterTargets[0]?.via).toMatch(/argument.*override the policy/);
    expect(b.config).toMatchObject({ deadLetterExchange: dlxArg, sources: { deadLetterExchange: 'argument' } });

    const dlq = await adapter.getQueue(idOf(dlqPolicy));
    expect(dlq.deadLetterSources).toEqual([idOf(viaPolicy)]);
  });

  it('reports a problem when the dead-letter exchange does not exist or nothing is bound', async () => {
    const missing = uniqueName('no-such-exchange');
    const lost = await queue('lost', { 'x-dead-letter-exchange': missing });
    const empty = await exchange('dlx-empty', 'direct');
    const unbound = await queue('unbound', { 'x-dead-letter-exchange': empty, 'x-dead-letter-routing-key': 'nowhere' });
    const m = await listed(lost, unbound);
    const l = m.get(lost)!.deadLetterTargets;
    expect(l).toHaveLength(1);
    expect(l[0]?.queueId).toBeNull();
    expect(l[0]?.problem).toContain(`exchange '${missing}' does not exist`);
    expect(l[0]?.problem).toContain('dropped');
    const u = m.get(unbound)!.deadLetterTargets;
    expect(u[0]?.queueId).toBeNull();
    expect(u[0]?.problem).toContain("no binding that matches routing key 'nowhere'");
  });

  it('matches topic bindings with * and #', async () => {
    const dlx = await exchange('dlx-topic', 'topic');
    const eu = await queue('dlq-eu');
    const all = await queue('dlq-all-failed');
    const pay = await queue('dlq-payments');
    await ch.bindQueue(eu, dlx, 'orders.eu.*');
    await ch.bindQueue(all, dlx, '#.failed');
    await ch.bindQueue(pay, dlx, 'payments.#');
    const work = await queue('work-topic', { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': 'orders.eu.failed' });
    const other = await queue('work-topic2', { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': 'orders.us.retry' });
    const m = await listed(work, other, eu, all, pay);
    expect(m.get(work)!.deadLetterTargets.map((t) => t.queueName).sort()).toEqual([all, eu].sort());
    expect(m.get(other)!.deadLetterTargets[0]?.problem).toContain('no binding');
    expect(m.get(pay)!.deadLetterSources).toEqual([]);
    expect(m.get(eu)!.deadLetterSources).toEqual([idOf(work)]);
  });

  it('uses the original routing key when no dead-letter routing key is set, and says so', async () => {
    const dlx = await exchange('dlx-orig', 'direct');
    const work = await queue('work-orig');
    const dlq = await queue('dlq-orig');
    await ch.bindQueue(dlq, dlx, work);
    await ch.deleteQueue(work);
    await ch.assertQueue(work, { durable: true, arguments: { 'x-dead-letter-exchange': dlx } });
    const m = await listed(work, dlq);
    const t = m.get(work)!.deadLetterTargets;
    expect(t.map((x) => x.queueName)).toEqual([dlq]);
    expect(t[0]?.via).toContain('original routing key');
  });

  it('puts the quorum delivery limit on the link', async () => {
    const dlx = await exchange('dlx-q', 'fanout');
    const dlq = await queue('dlq-q');
    await ch.bindQueue(dlq, dlx, '');
    const work = await queue('work-q', { 'x-queue-type': 'quorum', 'x-delivery-limit': 3, 'x-dead-letter-exchange': dlx });
    const q = await adapter.getQueue(idOf(work));
    expect(q.kind).toBe('rabbitmq-quorum');
    expect(q.deadLetterTargets[0]).toMatchObject({ queueName: dlq, maxReceiveCount: 3 });
    expect(q.config).toMatchObject({ type: 'quorum', deliveryLimit: 3, durable: true });
  });
});

describe('peek metadata from real dead-lettering', () => {
  it('shows x-death written by the broker (rejected and expired)', async () => {
    const dlx = await exchange('dlx-real', 'direct');
    const dlq = await queue('dlq-real');
    await ch.bindQueue(dlq, dlx, 'dead');
    const work = await queue('work-real', { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': 'dead' });
    const ttl = await queue('work-ttl', { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': 'dead', 'x-message-ttl': 50 });
    const t0 = Date.now();
    ch.sendToQueue(work, Buffer.from('{"orderId":"A-1001"}'), { messageId: 'A-1001:charge', headers: { 'x-last-error': 'HTTP 422 Unprocessable Entity' }, persistent: true });
    await ch.waitForConfirms();
    const c = await nativeChannel();
    const got = await waitFor('the message', async () => c.get(work, { noAck: false }));
    c.reject(got, false);
    ch.sendToQueue(ttl, Buffer.from('late'), { messageId: 'late-1' });
    await waitFor('two dead letters', async () => (await nativeCount(dlq)) === 2);
    await c.close();

    const page = await adapter.peek(idOf(dlq), { limit: 10 });
    expect(page.messages.map((m) => m.id).sort()).toEqual(['A-1001:charge', 'late-1']);
    const rejected = page.messages.find((m) => m.id === 'A-1001:charge')!;
    expect(rejected.headers['x-last-error']).toBe('HTTP 422 Unprocessable Entity');
    expect(rejected.meta.xDeath).toHaveLength(1);
    expect(rejected.meta.xDeath?.[0]).toMatchObject({ reason: 'rejected', queue: work, count: 1, exchange: '', routingKeys: [work] });
    expect(rejected.meta.xDeath?.[0]?.time).toBeGreaterThanOrEqual(Math.floor(t0 / 1000) * 1000);
    expect(rejected.meta.xDeath?.[0]?.time).toBeLessThanOrEqual(Date.now());
    expect(rejected.meta).toMatchObject({ firstDeathReason: 'rejected', firstDeathQueue: work, firstDeathExchange: '', exchange: dlx, routingKey: 'dead' });
    const expired = page.messages.find((m) => m.id === 'late-1')!;
    expect(expired.meta.xDeath?.[0]).toMatchObject({ reason: 'expired', queue: ttl, count: 1 });
    const dq = await adapter.getQueue(idOf(dlq));
    expect(dq.deadLetterSources.sort()).toEqual([idOf(work), idOf(ttl)].sort());
    expect(await nativeCount(dlq)).toBe(2);
  });
});

describe('quorum queues', () => {
  it('each peek adds one to x-delivery-count', async () => {
    const q = await queue('quorum-count', { 'x-queue-type': 'quorum' });
    ch.sendToQueue(q, Buffer.from('one'), { persistent: true });
    await ch.waitForConfirms();
    const summary = await adapter.getQueue(idOf(q));
    expect(summary.capabilities.peekMayDeadLetter).toBe(false);
    expect(summary.capabilities.peekSideEffects.map((s) => s.kind)).toContain('delivery-count');
    const first = await adapter.peek(idOf(q), { limit: 5, acceptSideEffects: true });
    expect(first.messages[0]?.meta.receiveCount).toBe(0);
    expect(first.sideEffects).toContain('Each peek counts as a delivery on a quorum queue: x-delivery-count +1.');
    expect(first.sideEffects[0]).toMatch(/^Held 1 message unacknowledged/);
    const second = await adapter.peek(idOf(q), { limit: 5, acceptSideEffects: true });
    expect(second.messages[0]?.meta.receiveCount).toBe(1);
    expect(second.messages[0]?.headers['x-delivery-count']).toBe(1);
    expect(second.messages[0]?.meta.redelivered).toBe(true);
    expect(await nativeCount(q)).toBe(1);
  });

  it('with x-delivery-limit, refuses to peek without acceptSideEffects and changes nothing', async () => {
    const q = await queue('quorum-limit', { 'x-queue-type': 'quorum', 'x-delivery-limit': 3 });
    for (let i = 0; i < 3; i++) ch.sendToQueue(q, Buffer.from(`m${i}`), { persistent: true });
    await ch.waitForConfirms();
    const summary = await adapter.getQueue(idOf(q));
    expect(summary.capabilities.peekMayDeadLetter).toBe(true);
    const mayDl = summary.capabilities.peekSideEffects.find((s) => s.kind === 'may-dead-letter');
    expect(mayDl?.description).toContain('x-delivery-limit=3 allows 4 deliveries');
    const e = await expectCode(adapter.peek(idOf(q), { limit: 10 }), 'PEEK_REFUSED');
    expect(e.message).toContain('delivery limit');
    expect(await nativeCount(q)).toBe(3);
    // Nothing was delivered by the refused peek: the first accepted peek sees delivery count 0.
    const page = await adapter.peek(idOf(q), { limit: 10, acceptSideEffects: true });
    expect(page.messages.map((m) => m.meta.receiveCount)).toEqual([0, 0, 0]);
    expect(await nativeCount(q)).toBe(3);
  });
});

describe('connection failures name their cause', () => {
  it('wrong password → AUTH_FAILED', async () => {
    const u = new URL(AMQP_URL);
    u.password = 'definitely-wrong';
    const bad = createRabbitmqAdapter({ ...config, url: u.toString() });
    try {
      const r = await bad.testConnection();
      expect(r.ok).toBe(false);
      expect(r.error?.code).toBe('AUTH_FAILED');
      expect(r.checks.map((c) => c.ok)).toEqual([true, false]);
      expect(JSON.stringify(r)).not.toContain('definitely-wrong');
      await expectCode(bad.listQueues({}), 'AUTH_FAILED');
      await expectCode(bad.peek(idOf('x'), { limit: 1 }), 'AUTH_FAILED');
    } finally {
      await bad.close();
    }
  });

  it('unknown vhost → UNKNOWN_VHOST', async () => {
    const vhost = uniqueName('no-vhost');
    const u = new URL(AMQP_URL);
    u.pathname = `/${encodeURIComponent(vhost)}`;
    const bad = createRabbitmqAdapter({ ...config, url: u.toString() });
    try {
      const r = await bad.testConnection();
      expect(r.error?.code).toBe('UNKNOWN_VHOST');
      expect(r.error?.message).toContain(vhost);
      expect(r.checks.find((c) => c.name.startsWith('AMQP login'))?.ok).toBe(true);
      await expectCode(bad.listQueues({}), 'UNKNOWN_VHOST');
    } finally {
      await bad.close();
    }
  });

  it('a vhost the user may not use → PERMISSION_DENIED; no management tag → AUTH_FAILED naming the tag', async () => {
    const vhost = uniqueName('vh');
    const user = uniqueName('user');
    expect((await mgmt('PUT', `/api/vhosts/${vhost}`, {})).status).toBeLessThan(300);
    cleanups.push(() => mgmt('DELETE', `/api/vhosts/${vhost}`));
    expect((await mgmt('PUT', `/api/users/${user}`, { password: 'pw-123', tags: '' })).status).toBeLessThan(300);
    cleanups.push(() => mgmt('DELETE', `/api/users/${user}`));
    const base = new URL(AMQP_URL);
    const url = `amqp://${user}:pw-123@${base.host}/${vhost}`;
    const denied = createRabbitmqAdapter({ ...config, url });
    try {
      const r = await denied.testConnection();
      // Without the management tag the API cannot say whether the vhost exists; with it, it can.
      expect(['PERMISSION_DENIED', 'UNKNOWN_VHOST']).toContain(r.error?.code);
      expect(r.error?.message).toMatch(/permission/);
    } finally {
      await denied.close();
    }
    await mgmt('PUT', `/api/users/${user}`, { password: 'pw-123', tags: 'management' });
    const denied2 = createRabbitmqAdapter({ ...config, url });
    try {
      const r = await denied2.testConnection();
      expect(r.error?.code).toBe('PERMISSION_DENIED');
      expect(r.error?.message).toContain(`no permissions on virtual host '${vhost}'`);
    } finally {
      await denied2.close();
    }
    await mgmt('PUT', `/api/users/${user}`, { password: 'pw-123', tags: '' });
    await mgmt('PUT', `/api/permissions/${vhost}/${user}`, { configure: '.*', write: '.*', read: '.*' });
    const noTag = createRabbitmqAdapter({ ...config, url });
    try {
      const r = await noTag.testConnection();
      expect(r.error?.code).toBe('AUTH_FAILED');
      expect(r.error?.message).toContain('lacks the management/monitoring tag');
      expect(r.checks.find((c) => c.name === `vhost '${vhost}' opened`)?.ok).toBe(true);
    } finally {
      await noTag.close();
    }
  });

  it('an administrator without permissions on an existing vhost → PERMISSION_DENIED saying so (the API shows admins every vhost)', async () => {
    const vhost = uniqueName('vh');
    const user = uniqueName('admin');
    expect((await mgmt('PUT', `/api/vhosts/${vhost}`, {})).status).toBeLessThan(300);
    cleanups.push(() => mgmt('DELETE', `/api/vhosts/${vhost}`));
    expect((await mgmt('PUT', `/api/users/${user}`, { password: 'pw-123', tags: 'administrator' })).status).toBeLessThan(300);
    cleanups.push(() => mgmt('DELETE', `/api/users/${user}`));
    const base = new URL(AMQP_URL);
    const denied = createRabbitmqAdapter({ ...config, url: `amqp://${user}:pw-123@${base.host}/${vhost}` });
    try {
      const r = await denied.testConnection();
      expect(r.error?.code).toBe('PERMISSION_DENIED');
      expect(r.error?.message).toBe(`User '${user}' has no permissions on virtual host '${vhost}': grant them with rabbitmqctl set_permissions -p '${vhost}' '${user}' '.*' '.*' '.*'.`);
    } finally {
      await denied.close();
    }
  });

  it('management API on a closed port → MANAGEMENT_UNAVAILABLE with the plugin hint', async () => {
    const bad = createRabbitmqAdapter({ ...config, managementUrl: 'http://127.0.0.1:1' });
    try {
      const r = await bad.testConnection();
      expect(r.ok).toBe(false);
      expect(r.error?.code).toBe('MANAGEMENT_UNAVAILABLE');
      expect(r.error?.message).toContain('rabbitmq-plugins enable rabbitmq_management');
      expect(r.server).toMatch(/^RabbitMQ 3\./);
      const e = await expectCode(bad.listQueues({}), 'MANAGEMENT_UNAVAILABLE');
      expect(e.message).toContain('rabbitmq-plugins enable rabbitmq_management');
    } finally {
      await bad.close();
    }
  });

  it('TLS to a plain port → TLS_ERROR', async () => {
    const u = new URL(AMQP_URL);
    const bad = createRabbitmqAdapter({ ...config, url: `amqps://guest:guest@${u.hostname}:${u.port || '5672'}` });
    try {
      const r = await bad.testConnection();
      expect(r.error?.code).toBe('TLS_ERROR');
    } finally {
      await bad.close();
    }
  });
});

describe('listing proves the AMQP endpoint, not only the management API', () => {
  const mgmtWithGuest = (): string => {
    const m = new URL(RABBITMQ_MANAGEMENT_URL);
    m.username = 'guest';
    m.password = 'guest';
    return m.toString();
  };

  it('a closed AMQP port → HOST_UNREACHABLE for listQueues and getQueue although the management API answers', async () => {
    const q = await queue('amqp-closed');
    const bad = createRabbitmqAdapter({ ...config, url: 'amqp://guest:guest@127.0.0.1:5690' });
    try {
      const e = await expectCode(bad.listQueues({}), 'HOST_UNREACHABLE');
      expect(e.message).toContain('127.0.0.1:5690');
      await expectCode(bad.getQueue(idOf(q)), 'HOST_UNREACHABLE');
    } finally {
      await bad.close();
    }
  });

  it('a wrong AMQP password with a working management login → AUTH_FAILED for listQueues', async () => {
    const u = new URL(AMQP_URL);
    u.password = 'definitely-wrong';
    const bad = createRabbitmqAdapter({ ...config, url: u.toString(), managementUrl: mgmtWithGuest() });
    try {
      const e = await expectCode(bad.listQueues({}), 'AUTH_FAILED');
      expect(e.message).not.toContain('definitely-wrong');
    } finally {
      await bad.close();
    }
  });

  it('TLS to the plain AMQP port → TLS_ERROR for listQueues', async () => {
    const u = new URL(AMQP_URL);
    const bad = createRabbitmqAdapter({ ...config, url: `amqps://guest:guest@${u.hostname}:${u.port || '5672'}`, managementUrl: mgmtWithGuest() });
    try {
      await expectCode(bad.listQueues({}), 'TLS_ERROR');
    } finally {
      await bad.close();
    }
  });
});

describe('cancellation', () => {
  it('aborting during a peek requeues what was held and throws CANCELLED', async () => {
    const q = await queue('abort');
    for (let i = 0; i < 400; i++) ch.sendToQueue(q, Buffer.alloc(2000, 'a'));
    await ch.waitForConfirms();
    let cancelled = 0;
    for (const delay of [0, 2, 5, 10, 20]) {
      const ac = new AbortController();
      const p = adapter.peek(idOf(q), { limit: 500 }, ac.signal);
      setTimeout(() => ac.abort(), delay);
      try {
        const page = await p;
        expect(page.messages).toHaveLength(400);
      } catch (e) {
        expect((e as QueuescopeError).code).toBe('CANCELLED');
        cancelled++;
      }
      expect(await nativeCount(q)).toBe(400);
    }
    expect(cancelled).toBeGreaterThan(0);
  });
});

describe('connection lifecycle', () => {
  it('reconnects after the broker closed its connection', async () => {
    const user = uniqueName('user');
    await mgmt('PUT', `/api/users/${user}`, { password: 'pw-123', tags: 'monitoring' });
    cleanups.push(() => mgmt('DELETE', `/api/users/${user}`));
    await mgmt('PUT', `/api/permissions/%2F/${user}`, { configure: '.*', write: '.*', read: '.*' });
    const base = new URL(AMQP_URL);
    const own = createRabbitmqAdapter({ ...config, url: `amqp://${user}:pw-123@${base.host}/%2F` });
    try {
      const q = await queue('reconnect');
      ch.sendToQueue(q, Buffer.from('still here'));
      await ch.waitForConfirms();
      expect((await own.peek(idOf(q), { limit: 1 })).messages[0]?.body.data).toBe('still here');
      const conns = await waitFor('the connection to show up', async () => {
        const r = await mgmt('GET', '/api/connections?columns=name,user');
        const mine = (r.json as { name: string; user: string }[]).filter((c) => c.user === user);
        return mine.length > 0 ? mine : null;
      });
      for (const c of conns) await mgmt('DELETE', `/api/connections/${encodeURIComponent(c.name)}`);
      await new Promise((r) => setTimeout(r, 200));
      expect((await own.peek(idOf(q), { limit: 1 })).messages[0]?.body.data).toBe('still here');
      expect((await own.getQueue(idOf(q))).depth).toBe(1);
    } finally {
      await own.close();
    }
  });
});

describe('message counts between statistics samples', () => {
  it("counts.total is never below the passive declare's current ready count (old code: the management sample, 0 for up to 5 s after 3 arrived)", async () => {
    const q = await queue('total-fresh');
    // Wait for a statistics sample of the empty queue (messages: 0), then publish 3 right after one.
    await waitFor('a statistics sample of the empty queue', async () => {
      const r = await mgmt('GET', `/api/queues/%2F/${encodeURIComponent(q)}`);
      return (r.json as { messages?: number } | null)?.messages === 0;
    });
    for (let i = 0; i < 3; i++) ch.sendToQueue(q, Buffer.from(`m${i}`));
    await ch.waitForConfirms();
    const s = await adapter.getQueue(idOf(q));
    expect(s.depth).toBe(3);
    expect(s.counts.total).toBe(3);
    // A DLQ watch compares this total: it sees the 3 at once, not a sample later.
  });
});

describe('queue ids and vanished queues', () => {
  it('a queue deleted while open is QUEUE_NOT_FOUND for getQueue and peek', async () => {
    const q = await queue('vanish');
    ch.sendToQueue(q, Buffer.from('x'));
    expect((await adapter.getQueue(idOf(q))).name).toBe(q);
    await nativeDeleteQueue(q);
    await expectCode(adapter.getQueue(idOf(q)), 'QUEUE_NOT_FOUND');
    await expectCode(adapter.peek(idOf(q), { limit: 5 }), 'QUEUE_NOT_FOUND');
  });

  it('bad ids are INVALID_INPUT; names with any characters round-trip', async () => {
    await expectCode(adapter.getQueue('stream:orders'), 'INVALID_INPUT');
    await expectCode(adapter.getQueue('rabbitmq:%2F'), 'INVALID_INPUT');
    await expectCode(adapter.getQueue('rabbitmq:%2F/%E0%A4%A'), 'INVALID_INPUT');
    await expectCode(adapter.getQueue('rabbitmq:other-vhost/x'), 'INVALID_INPUT');
    const odd = `${uniqueName('odd')} / ü #?%&`;
    await ch.assertQueue(odd, { durable: false });
    queues.push(odd);
    ch.sendToQueue(odd, Buffer.from('odd'));
    await ch.waitForConfirms();
    const found = (await adapter.listQueues({ pattern: `${odd.slice(0, 20)}*` })).find((x) => x.name === odd);
    expect(found).toBeDefined();
    const page = await adapter.peek(found!.id, { limit: 1 });
    expect(page.messages[0]?.body.data).toBe('odd');
  });

  it('listQueues honours pattern and limit, sorted by name', async () => {
    const prefix = uniqueName('lst');
    for (const s of ['c', 'a', 'b']) {
      await ch.assertQueue(`${prefix}-${s}`, { durable: false });
      queues.push(`${prefix}-${s}`);
    }
    const all = await adapter.listQueues({ pattern: `${prefix}-*` });
    expect(all.map((q) => q.name)).toEqual([`${prefix}-a`, `${prefix}-b`, `${prefix}-c`]);
    const two = await adapter.listQueues({ pattern: `${prefix}-*`, limit: 2 });
    expect(two).toHaveLength(2);
    await expectCode(adapter.listQueues({ limit: 0 }), 'INVALID_INPUT');
  });
});

describe('hostile headers', () => {
  it('converts nested tables, arrays, bytes, timestamps, decimals, big numbers and huge values without crashing', async () => {
    const q = await queue('headers');
    const huge = 'h'.repeat(60_000);
    const headers: Record<string, unknown> = {
      nested: { a: { b: { c: [1, 'two', { d: true }] } } },
      list: [1, 2.5, null, 'x', [true, false]],
      binary: Buffer.from([0xff, 0xfe, 0x00]),
      text: Buffer.from('plain text'),
      when: { '!': 'timestamp', value: 1_700_000_000 },
      dec: { '!': 'decimal', value: { places: 2, digits: 12345 } },
      big: 2 ** 60,
      // RabbitMQ closes the connection (541) on a NaN double, so no NaN here; a 32-bit float instead.
      single: { '!': 'float', value: 1.5 },
      nil: null,
      flag: false,
      huge,
      'x-death': 'not a list',
    };
    Object.defineProperty(headers, '__proto__', { value: { polluted: true }, enumerable: true, configurable: true, writable: true });
    ch.sendToQueue(q, Buffer.from([0x00, 0xc3, 0x28]), { headers, timestamp: 1_700_000_001, priority: 3, contentType: 'application/octet-stream', correlationId: 'c-1', appId: 'seed' });
    await ch.waitForConfirms();
    const [m] = (await adapter.peek(idOf(q), { limit: 1 })).messages;
    expect(m).toBeDefined();
    expect(m!.body).toMatchObject({ encoding: 'base64', data: Buffer.from([0x00, 0xc3, 0x28]).toString('base64'), sizeBytes: 3 });
    expect(m!.headers.nested).toEqual({ a: { b: { c: [1, 'two', { d: true }] } } });
    expect(m!.headers.list).toEqual([1, 2.5, null, 'x', [true, false]]);
    expect(m!.headers.binary).toEqual({ base64: Buffer.from([0xff, 0xfe, 0x00]).toString('base64') });
    expect(m!.headers.text).toBe('plain text');
    expect(m!.headers.when).toBe(1_700_000_000_000);
    expect(m!.headers.dec).toBeCloseTo(123.45);
    expect(m!.headers.big).toBe(2 ** 60);
    expect(m!.headers.single).toBe(1.5);
    expect(m!.headers.nil).toBeNull();
    expect(m!.headers.flag).toBe(false);
    expect(m!.headers.huge).toBe(huge);
    // amqplib's decoder assigns a `__proto__` header as a prototype (so the header is lost);
    // it must not leak into the result or into Object.prototype.
    expect(Object.getPrototypeOf(m!.headers)).toBe(Object.prototype);
    expect((m!.headers as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(m!.meta.xDeath).toEqual([]);
    expect(m!.properties).toMatchObject({ timestamp: 1_700_000_001_000, priority: 3, contentType: 'application/octet-stream', correlationId: 'c-1', appId: 'seed' });
    expect(m!.meta.enqueuedAt).toBe(1_700_000_001_000);
    expect(m!.id).toBe('#0');
    expect(JSON.parse(JSON.stringify(m))).toEqual(m);
  });
});
