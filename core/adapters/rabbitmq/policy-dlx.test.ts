import { describe, expect, it } from 'vitest';
import { appliedPolicyDeadLetter, policyDeliveryLimit, withPolicyDeadLetter } from './policy-limit';
import { deadLetterFate, effectiveSettings, type RawQueue } from './topology';

const pol = (name: string, pattern: string, definition: Record<string, unknown>, priority = 0, applyTo = 'queues'): Record<string, unknown> => ({ name, pattern, definition, priority, 'apply-to': applyTo });

const queue = (over: Partial<RawQueue> = {}): RawQueue => ({
  name: 'orders.work', type: 'quorum', durable: true, autoDelete: false, exclusive: false, state: 'running', policy: null,
  arguments: {}, policyDefinition: {}, messagesReady: 0, messagesUnacknowledged: 0, messages: 0, consumers: 0, ...over,
});

describe('appliedPolicyDeadLetter (the dead-letter keys of the user policy RabbitMQ applies, read from the policy list)', () => {
  it('takes the highest-priority matching policy, even when it sets no dead-letter key', () => {
    expect(appliedPolicyDeadLetter('orders.work', 'quorum', [pol('a', '^orders', { 'dead-letter-exchange': 'dlx', 'dead-letter-routing-key': 'k' }, 1), pol('b', 'work$', { 'dead-letter-exchange': 'other' }, 0)])).toEqual({ policy: 'a', exchange: 'dlx', routingKey: 'k' });
    expect(appliedPolicyDeadLetter('orders.work', 'quorum', [pol('a', '^orders', { 'max-length': 10 }, 3), pol('b', 'work$', { 'dead-letter-exchange': 'other' }, 0)])).toBeNull();
  });
  it("keeps the default exchange ('') and a routing key set alone", () => {
    expect(appliedPolicyDeadLetter('orders.work', 'classic', [pol('a', '.*', { 'dead-letter-exchange': '' })])).toEqual({ policy: 'a', exchange: '', routingKey: null });
    expect(appliedPolicyDeadLetter('orders.work', 'classic', [pol('a', '.*', { 'dead-letter-routing-key': 'k' })])).toEqual({ policy: 'a', exchange: null, routingKey: 'k' });
  });
  it("is 'ambiguous' when policies of the same top priority disagree (RabbitMQ's pick is not visible), not when they agree", () => {
    expect(appliedPolicyDeadLetter('orders.work', 'quorum', [pol('a', '^orders', { 'dead-letter-exchange': 'x' }, 2), pol('b', 'work$', { 'dead-letter-exchange': 'y' }, 2)])).toBe('ambiguous');
    expect(appliedPolicyDeadLetter('orders.work', 'quorum', [pol('a', '^orders', { 'dead-letter-exchange': 'x' }, 2), pol('b', 'work$', { 'max-length': 1 }, 2)])).toBe('ambiguous');
    expect(appliedPolicyDeadLetter('orders.work', 'quorum', [pol('a', '^orders', { 'dead-letter-exchange': 'x' }, 2), pol('b', 'work$', { 'dead-letter-exchange': 'x', 'max-length': 1 }, 2)])).toMatchObject({ exchange: 'x', routingKey: null });
  });
  it("honours apply-to by queue type (3.12+ classic_queues / quorum_queues / streams) and skips exchanges, bad patterns and junk", () => {
    const list = [pol('q', '.*', { 'dead-letter-exchange': 'for-quorum' }, 5, 'quorum_queues'), pol('c', '.*', { 'dead-letter-exchange': 'for-classic' }, 4, 'classic_queues'), pol('e', '.*', { 'dead-letter-exchange': 'ex' }, 9, 'exchanges'), pol('bad', '(', { 'dead-letter-exchange': 'bad' }, 9), null, 'x', { pattern: 1 }];
    expect(appliedPolicyDeadLetter('orders.work', 'quorum', list)).toMatchObject({ policy: 'q', exchange: 'for-quorum' });
    expect(appliedPolicyDeadLetter('orders.work', 'classic', list)).toMatchObject({ policy: 'c', exchange: 'for-classic' });
    expect(appliedPolicyDeadLetter('orders.work', 'stream', list)).toBeNull();
    expect(appliedPolicyDeadLetter('orders.work', 'quorum', [])).toBeNull();
  });
});

describe('withPolicyDeadLetter (policy dead-letter keys laid over a queue record that shows the policy late)', () => {
  const lists = (policies: unknown[] | null) => ({ policies, operatorPolicies: [] });

  it('fills in a DLX the record does not show yet, with the policy name, as a policy-sourced setting', () => {
    const q = withPolicyDeadLetter(queue(), lists([pol('dlx-pol', '^orders', { 'dead-letter-exchange': '', 'dead-letter-routing-key': 'orders.dlq', 'delivery-limit': 2 })]));
    expect(q.policy).toBe('dlx-pol');
    const s = effectiveSettings(q);
    expect(s.deadLetterExchange).toEqual({ value: '', source: 'policy' });
    expect(s.deadLetterRoutingKey).toEqual({ value: 'orders.dlq', source: 'policy' });
    expect(deadLetterFate(s)).toBe("dead-lettered to the default exchange, routing key 'orders.dlq'");
  });
  it('queue arguments still overrule the policy, key by key (https://www.rabbitmq.com/docs/dlx)', () => {
    const s = effectiveSettings(withPolicyDeadLetter(queue({ arguments: { 'x-dead-letter-exchange': 'arg-dlx' } }), lists([pol('p', '.*', { 'dead-letter-exchange': 'pol-dlx', 'dead-letter-routing-key': 'pol-key' })])));
    expect(s.deadLetterExchange).toEqual({ value: 'arg-dlx', source: 'argument' });
    expect(s.deadLetterRoutingKey).toEqual({ value: 'pol-key', source: 'policy' });
  });
  it("replaces a stale policy's keys as a pair (a key the new policy does not set is gone)", () => {
    const stale = queue({ policy: 'old', policyDefinition: { 'dead-letter-exchange': 'old-dlx', 'dead-letter-routing-key': 'old-key', 'message-ttl': 5 } });
    const q = withPolicyDeadLetter(stale, lists([pol('new', '.*', { 'dead-letter-exchange': 'new-dlx' })]));
    expect(q.policyDefinition).toEqual({ 'dead-letter-exchange': 'new-dlx', 'message-ttl': 5 });
  });
  it('leaves the record alone when the policies cannot be read, set no dead-letter key, are ambiguous, or the queue is a stream', () => {
    const rec = queue({ policy: 'old', policyDefinition: { 'dead-letter-exchange': 'old-dlx' } });
    expect(withPolicyDeadLetter(rec, lists(null))).toBe(rec);
    expect(withPolicyDeadLetter(rec, lists([pol('p', '.*', { 'max-length': 1 })]))).toBe(rec);
    expect(withPolicyDeadLetter(rec, lists([pol('a', '.*', { 'dead-letter-exchange': 'x' }), pol('b', '.*', { 'dead-letter-exchange': 'y' })]))).toBe(rec);
    const stream = queue({ type: 'stream' });
    expect(withPolicyDeadLetter(stream, lists([pol('p', '.*', { 'dead-letter-exchange': 'x' })]))).toBe(stream);
    expect(deadLetterFate(effectiveSettings(queue()))).toBe('dropped (no dead-letter exchange is configured)');
  });
});

describe('policyDeliveryLimit', () => {
  it('takes the lower of the applied user and operator policy limits; null lists count as none', () => {
    expect(policyDeliveryLimit('orders.work', { policies: [pol('p', '.*', { 'delivery-limit': 5 })], operatorPolicies: [pol('o', '.*', { 'delivery-limit': 3 })] })).toBe(3);
    expect(policyDeliveryLimit('orders.work', { policies: null, operatorPolicies: [pol('o', '.*', { 'delivery-limit': 3 })] })).toBe(3);
    expect(policyDeliveryLimit('orders.work', { policies: null, operatorPolicies: null })).toBeNull();
  });
});
