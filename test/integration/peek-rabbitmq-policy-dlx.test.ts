import { describe, expect, it } from 'vitest';
import { QueuescopeError } from '../../shared/domain';
import type { RabbitQueueFacts } from '../../shared/audit/types';
import { encodeQueueId } from '../../core/adapters/rabbitmq/queue-id';
import { AMQP_URL, uniqueName } from './env';
import { rabbitmqResources } from './fixtures/rabbitmq-resources';
import { runCli } from './fixtures/run-cli';
import { nativeChannel, nativeCount, nativeMgmt } from './rabbitmq-native';

/**
 * Where a quorum queue's messages go at the delivery limit when the dead-letter exchange comes
 * from a policy the queue's management record does not show yet. RabbitMQ 3.10 reports a quorum
 * queue's policy with its statistics, seconds late (8–9 s after a declare, ~6 s after a policy
 * change), while the broker applies it at once. Before the fix the delivery limit was read from
 * the policies but the dead-letter exchange from the record only: in that window the peek refusal
 * said the message would be dropped ("drops it (no dead-letter exchange is configured)"), getQueue
 * and listQueues showed no dead-letter exchange, no link to the DLQ and no source on the DLQ (and
 * the listing no delivery limit), the audit reported
 * no dead-letter exchange, and tuning said "dead-lettered (or dropped …)" with no target. Each case
 * asserts that the record still lacked the policy's dead-letter keys after the reads (else it proves
 * nothing) and ends with a control: with consent the peek really dead-letters (or drops) the
 * messages as the refusal said. Real broker, no mocks.
 */

const rmq = rabbitmqResources('qs-peek-pdlx-');
const { queues, policies } = rmq;

/** The queue's management record: its applied policy and effective policy definition, as text. */
async function record(name: string): Promise<string> {
  return (await nativeMgmt('GET', `/api/queues/%2F/${encodeURIComponent(name)}?columns=policy,effective_policy_definition`)).text();
}

/**
 * A quorum queue (declared with `args(name)`) holding 4 messages and classic queues `extra` (created
 * first), then a user policy with `definition` on the quorum queue alone. Asserts the record does
 * not show the policy yet.
 */
async function quorumWithFreshPolicy(label: string, args: (name: string) => Record<string, unknown>, definition: (name: string) => Record<string, unknown>, extra: string[] = []): Promise<string> {
  const name = uniqueName(`rmq-policy-dlx-${label}`);
  queues.push(name, ...extra.map((x) => `${name}-${x}`));
  const ch = await nativeChannel();
  for (const x of extra) await ch.assertQueue(`${name}-${x}`, { durable: true });
  await ch.assertQueue(name, { durable: true, arguments: { 'x-queue-type': 'quorum', ...args(name) } });
  for (let i = 0; i < 4; i++) ch.sendToQueue(name, Buffer.from(`m-${i}`), { persistent: true, messageId: `m-${i}` });
  await ch.waitForConfirms();
  await ch.close();
  expect(await nativeCount(name)).toBe(4);
  policies.push(name);
  const put = await nativeMgmt('PUT', `/api/policies/%2F/${encodeURIComponent(name)}`, { pattern: `^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, definition: definition(name), priority: 10, 'apply-to': 'queues' });
  expect(put.status).toBeLessThan(300);
  expect(await record(name)).not.toContain(name); // the record does not name the policy yet
  return name;
}

/** Waits (≤ 20 s) until `queue` holds `n` ready messages (dead-lettering is asynchronous). */
async function waitCount(queue: string, n: number): Promise<void> {
  for (let i = 0; i < 200 && (await nativeCount(queue)) !== n; i++) await new Promise((r) => setTimeout(r, 100));
  expect(await nativeCount(queue)).toBe(n);
}

async function refusal(id: string): Promise<QueuescopeError> {
  const err = await rmq.adapter.peek(id, { limit: 10 }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(QueuescopeError);
  expect((err as QueuescopeError).code).toBe('PEEK_REFUSED');
  return err as QueuescopeError;
}

describe('RabbitMQ (CLI peek, adapter): a dead-letter exchange from a policy the management record does not show yet (real broker)', () => {
  it('peek refusal (adapter and CLI), getQueue (config, links, DLQ sources), listQueues, audit and tuning say dead-lettered to the policy DLX (old code: dropped / no DLX)', async () => {
    const name = await quorumWithFreshPolicy('pol', () => ({}), (n) => ({ 'delivery-limit': 0, 'dead-letter-exchange': '', 'dead-letter-routing-key': `${n}-dlq` }), ['dlq']);
    const dlq = `${name}-dlq`;
    const id = encodeQueueId({ vhost: '/', name });
    const err = await refusal(id);
    const cli = await runCli(rmq.dir, ['peek', AMQP_URL, name]);
    const q = await rmq.adapter.getQueue(id);
    const target = await rmq.adapter.getQueue(encodeQueueId({ vhost: '/', name: dlq }));
    const listed = await rmq.adapter.listQueues({ pattern: `${name}*` });
    const facts = await rmq.adapter.audit!.collect({ pattern: name });
    const tuning = await rmq.adapter.tuning!.readSettings(id);
    // The reads happened while the record still lacked the policy (else this proves nothing).
    expect(await record(name)).not.toContain('dead-letter-exchange');

    expect(err.message).toContain(`A message at the delivery limit is dead-lettered to the default exchange, routing key '${dlq}' when a peek requeues it (x-delivery-limit=0 allows 1 delivery).`);
    expect(err.message).not.toContain('dropped'); // old code: "drops it (no dead-letter exchange is configured)"
    expect(cli.code, cli.stdout + cli.stderr).toBe(5);
    expect(cli.stderr).toContain(`is dead-lettered to the default exchange, routing key '${dlq}' when a peek requeues it`);
    expect(q.config).toMatchObject({ policy: name, deadLetterExchange: '', deadLetterRoutingKey: dlq, deliveryLimit: 0, sources: { deadLetterExchange: 'policy', deadLetterRoutingKey: 'policy' } });
    expect(q.deadLetterTargets.map((t) => [t.queueName, t.problem])).toEqual([[dlq, undefined]]);
    expect(q.deadLetterTargets[0]?.via).toContain(`policy '${name}' dead-letter-exchange the default exchange`);
    expect(target.deadLetterSources).toEqual([id]);
    // The listing (whose links the redrive's loop check reads) says the same.
    expect(listed.map((x) => [x.name, x.deadLetterTargets.map((t) => t.queueName), x.deadLetterSources, x.capabilities.peekMayDeadLetter])).toEqual([
      [name, [dlq], [], true],
      [dlq, [], [id], false],
    ]);
    const f = facts.queues.find((x) => x.name === name) as RabbitQueueFacts | undefined;
    expect(f?.deadLetterExchange).toEqual({ value: '', source: 'policy' });
    expect(f?.deadLetterRouting?.reachedQueues).toEqual([dlq]);
    expect(tuning.maxReceiveCount).toBe(1);
    expect(tuning.notes.join(' ')).toContain(`a message is dead-lettered to the default exchange, routing key '${dlq}' after 1 delivery`);

    // Control: with consent the peek dead-letters all 4 into the policy's DLQ, and says so.
    const page = await rmq.adapter.peek(id, { limit: 10, acceptSideEffects: true });
    expect(page.messages).toHaveLength(4);
    expect(page.sideEffects.join(' ')).toContain(`4 messages were at the delivery limit and dead-lettered to the default exchange, routing key '${dlq}' by this peek.`);
    await waitCount(dlq, 4);
    expect(await nativeCount(name)).toBe(0);
  }, 60_000);

  it('queue arguments overrule the policy key by key: the x-dead-letter-exchange argument wins, the policy routing key applies, as the broker does', async () => {
    // Policy: a missing exchange and a routing key; argument: the default exchange (no routing key argument).
    const name = await quorumWithFreshPolicy('arg', () => ({ 'x-dead-letter-exchange': '' }), (n) => ({ 'delivery-limit': 0, 'dead-letter-exchange': `${n}-missing`, 'dead-letter-routing-key': `${n}-pol` }), ['pol']);
    const id = encodeQueueId({ vhost: '/', name });
    const err = await refusal(id);
    const q = await rmq.adapter.getQueue(id);
    expect(await record(name)).not.toContain('dead-letter-routing-key');
    expect(err.message).toContain(`is dead-lettered to the default exchange, routing key '${name}-pol' when a peek requeues it`);
    expect(q.config).toMatchObject({ deadLetterExchange: '', deadLetterRoutingKey: `${name}-pol`, sources: { deadLetterExchange: 'argument', deadLetterRoutingKey: 'policy' } });
    // Old code: no routing key, so the queue's own name: a link back to itself (a cycle).
    expect(q.deadLetterTargets.map((t) => [t.queueName, t.problem])).toEqual([[`${name}-pol`, undefined]]);
    // Control: the broker routes them through the argument's exchange with the policy's key.
    await rmq.adapter.peek(id, { limit: 10, acceptSideEffects: true });
    await waitCount(`${name}-pol`, 4);
    expect(await nativeCount(name)).toBe(0);
  }, 60_000);

  it('says dropped only when no dead-letter exchange applies (a delivery-limit policy without one)', async () => {
    const name = await quorumWithFreshPolicy('none', () => ({}), () => ({ 'delivery-limit': 0 }));
    const id = encodeQueueId({ vhost: '/', name });
    const err = await refusal(id);
    expect(await record(name)).not.toContain('delivery-limit');
    expect(err.message).toContain('A message at the delivery limit is dropped (no dead-letter exchange is configured) when a peek requeues it');
    const page = await rmq.adapter.peek(id, { limit: 10, acceptSideEffects: true });
    expect(page.sideEffects.join(' ')).toContain('4 messages were at the delivery limit and dropped (no dead-letter exchange is configured) by this peek.');
    await waitCount(name, 0);
  }, 60_000);
});
