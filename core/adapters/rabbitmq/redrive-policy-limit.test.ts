import { describe, expect, it } from 'vitest';
import { appliedPolicyDeliveryLimit } from './policy-limit';

const pol = (pattern: string, definition: Record<string, unknown>, priority = 0, applyTo = 'queues'): Record<string, unknown> => ({ name: pattern, pattern, definition, priority, 'apply-to': applyTo });

describe('appliedPolicyDeliveryLimit (the policy RabbitMQ applies to a queue, read from the policy list)', () => {
  it('takes the highest-priority matching policy, even when it sets no limit', () => {
    expect(appliedPolicyDeliveryLimit('orders.dlq', [pol('^orders', { 'delivery-limit': 5 }, 1), pol('dlq$', { 'delivery-limit': 2 }, 0)])).toBe(5);
    expect(appliedPolicyDeliveryLimit('orders.dlq', [pol('^orders', { 'max-length': 10 }, 3), pol('dlq$', { 'delivery-limit': 2 }, 0)])).toBeNull();
  });
  it('on a priority tie takes the lowest limit', () => {
    expect(appliedPolicyDeliveryLimit('orders.dlq', [pol('^orders', { 'delivery-limit': 5 }), pol('dlq$', { 'delivery-limit': 2 }), pol('^orders', {})])).toBe(2);
  });
  it('ignores policies that do not match, apply to exchanges, or have a pattern JavaScript cannot compile', () => {
    expect(appliedPolicyDeliveryLimit('orders.dlq', [pol('^payments', { 'delivery-limit': 1 }, 9), pol('.*', { 'delivery-limit': 1 }, 9, 'exchanges'), pol('(', { 'delivery-limit': 1 }, 9), pol('.*', { 'delivery-limit': 4 }, 0, 'all')])).toBe(4);
    expect(appliedPolicyDeliveryLimit('orders.dlq', [null, 'x', { pattern: 1 }])).toBeNull();
    expect(appliedPolicyDeliveryLimit('orders.dlq', [])).toBeNull();
  });
});
