import { describe, expect, it } from 'vitest';
import { QueuescopeError } from '../../shared/domain';
import { encodeQueueId } from '../../core/adapters/rabbitmq/queue-id';
import { AMQP_URL, uniqueName } from './env';
import { rabbitmqResources } from './fixtures/rabbitmq-resources';
import { runCli } from './fixtures/run-cli';
import { nativeChannel, nativeCount, nativeMgmt } from './rabbitmq-native';

/**
 * The peek side-effect gate of a quorum queue whose delivery limit comes from a policy the queue's
 * management record does not show yet. RabbitMQ 3.10 reports a quorum queue's policy with its
 * statistics, seconds late (8–9 s after a declare, ~6 s after a policy change), while the broker
 * applies it at once. Measured before the fix: with a fresh `delivery-limit` 0 policy and a DLX,
 * `queuescope peek` without `--accept-side-effects` exited 0 and all 4 messages were dead-lettered
 * into the next queue (the gate read the limit from the record only). Now the gate also reads the
 * policy definitions: exit 5 (PEEK_REFUSED), nothing moves. Each case asserts that the record still
 * lacked the limit after the refused read (else it proves nothing) and ends with a control: the
 * same peek with consent does dead-letter the messages, so the policy was live. Real broker.
 */

const rmq = rabbitmqResources('qs-peek-plimit-');
const { queues, policies } = rmq;

/** The queue's management record: its applied policy and effective policy definition, as text. */
async function record(name: string): Promise<string> {
  return (await nativeMgmt('GET', `/api/queues/%2F/${encodeURIComponent(name)}?columns=policy,effective_policy_definition,arguments`)).text();
}

/**
 * A quorum queue (`x-dead-letter-exchange` '' → `<base>-final`) holding 4 messages, then a policy
 * `delivery-limit` 0 on it alone (a peek's requeue of a message delivered once then dead-letters it).
 * Asserts the record does not show the limit yet.
 */
async function quorumWithFreshPolicy(label: string): Promise<{ name: string; final: string }> {
  const name = uniqueName(label);
  const final = `${name}-final`;
  queues.push(name, final);
  const ch = await nativeChannel();
  await ch.assertQueue(final, { durable: true });
  await ch.assertQueue(name, { durable: true, arguments: { 'x-queue-type': 'quorum', 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': final } });
  for (let i = 0; i < 4; i++) ch.sendToQueue(name, Buffer.from(`m-${i}`), { persistent: true, messageId: `m-${i}` });
  await ch.waitForConfirms();
  await ch.close();
  expect(await nativeCount(name)).toBe(4);
  policies.push(name);
  const put = await nativeMgmt('PUT', `/api/policies/%2F/${encodeURIComponent(name)}`, { pattern: `^${name}$`, definition: { 'delivery-limit': 0 }, priority: 10, 'apply-to': 'queues' });
  expect(put.status).toBeLessThan(300);
  // The case the old gate missed: the record does not report the policy yet.
  expect(await record(name)).not.toContain('delivery-limit');
  return { name, final };
}

/** Waits (≤ 20 s) until `queue` holds `n` ready messages (dead-lettering is asynchronous). */
async function waitCount(queue: string, n: number): Promise<void> {
  for (let i = 0; i < 200 && (await nativeCount(queue)) !== n; i++) await new Promise((r) => setTimeout(r, 100));
  expect(await nativeCount(queue)).toBe(n);
}

describe('RabbitMQ peek gate: a quorum delivery-limit policy the management record does not show yet (real broker)', () => {
  it('queuescope peek without --accept-side-effects exits 5 and moves nothing (old code: exit 0, all 4 dead-lettered)', async () => {
    const { name, final } = await quorumWithFreshPolicy('peek-plim-cli');
    const res = await runCli(rmq.dir, ['peek', AMQP_URL, name]);
    // The refused read happened while the record still lacked the limit (else this proves nothing).
    expect(await record(name)).not.toContain('delivery-limit');
    await new Promise((r) => setTimeout(r, 500));
    expect(await nativeCount(final)).toBe(0); // old code: 4
    expect(await nativeCount(name)).toBe(4);
    expect(res.code, res.stdout + res.stderr).toBe(5);
    expect(res.stderr).toContain('x-delivery-limit=0');
    // Control: with consent the same peek dead-letters all 4 (the policy is in force).
    const accepted = await runCli(rmq.dir, ['peek', AMQP_URL, name, '--accept-side-effects']);
    expect(accepted.code, accepted.stdout + accepted.stderr).toBe(0);
    await waitCount(final, 4);
    expect(await nativeCount(name)).toBe(0);
  }, 60_000);

  it('the adapter itself (peek without acceptSideEffects, as the desktop app calls it; getQueue capabilities) refuses and moves nothing', async () => {
    const { name, final } = await quorumWithFreshPolicy('peek-plim-adapter');
    const id = encodeQueueId({ vhost: '/', name });
    const err = await rmq.adapter.peek(id, { limit: 10 }).then(
      () => null,
      (e: unknown) => e,
    );
    const q = await rmq.adapter.getQueue(id);
    expect(await record(name)).not.toContain('delivery-limit');
    await new Promise((r) => setTimeout(r, 500));
    expect(await nativeCount(final)).toBe(0); // old code: 4
    expect(await nativeCount(name)).toBe(4);
    expect(err).toBeInstanceOf(QueuescopeError);
    expect((err as QueuescopeError).code).toBe('PEEK_REFUSED');
    expect(q.capabilities.peekMayDeadLetter).toBe(true);
    expect(q.config).toMatchObject({ deliveryLimit: 0 });
    // Control: accepted, the peek reports and causes the dead-lettering.
    const page = await rmq.adapter.peek(id, { limit: 10, acceptSideEffects: true });
    expect(page.messages).toHaveLength(4);
    expect(page.sideEffects.join(' ')).toContain(`4 messages were at the delivery limit and dead-lettered to the default exchange, routing key '${final}' by this peek.`);
    await waitCount(final, 4);
  }, 60_000);
});
