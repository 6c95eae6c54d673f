import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { watchAlertText, type DlqWatchEvent } from './watch';

const base: DlqWatchEvent = {
  type: 'first-message',
  at: 0,
  queueId: 'rabbitmq:%2F/orders.dlq',
  queueName: 'orders.dlq',
  depth: 1,
  previousDepth: 0,
  delta: 1,
  deadLetterSources: ['rabbitmq:%2F/orders.work'],
  failure: null,
  failureNote: null,
  error: null,
  retryInMs: null,
};
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069<>&]/;

describe('watchAlertText', () => {
  it('words the alerts people act on; no alert for status, drained, recovered', () => {
    expect(watchAlertText(base)).toEqual({ title: 'Dead letters in orders.dlq', body: 'orders.dlq received its first message. From rabbitmq:%2F/orders.work.' });
    expect(watchAlertText({ ...base, depth: 4, delta: 4 })?.body).toBe('orders.dlq received its first messages (4). From rabbitmq:%2F/orders.work.');
    expect(watchAlertText({ ...base, type: 'grew', depth: 7, previousDepth: 4, delta: 3, deadLetterSources: [], failure: { messageId: 'j', class: 'transient', label: 'timeout', reason: 'ETIMEDOUT', source: 'failedReason' } })).toEqual({
      title: 'orders.dlq grew by 3',
      body: 'orders.dlq holds 7 messages (+3). Newest: transient (timeout) — ETIMEDOUT.',
    });
    expect(watchAlertText({ ...base, type: 'error', depth: null, error: { code: 'HOST_UNREACHABLE', message: 'Cannot reach 127.0.0.1:5672.' } })).toEqual({ title: 'Cannot watch orders.dlq', body: 'Cannot reach 127.0.0.1:5672.' });
    for (const type of ['status', 'drained', 'recovered'] as const) expect(watchAlertText({ ...base, type })).toBeNull();
  });

  it('never passes control, bidi or markup characters from broker data into notification text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), fc.constantFrom('first-message' as const, 'grew' as const, 'error' as const), (name, reason, type) => {
        const t = watchAlertText({
          ...base,
          type,
          queueName: name,
          deadLetterSources: [name],
          failure: { messageId: 'm', class: 'unknown', label: reason, reason, source: null },
          error: { code: 'BROKER_ERROR', message: reason },
        });
        expect(t).not.toBeNull();
        expect(UNSAFE.test(t!.title)).toBe(false);
        expect(UNSAFE.test(t!.body)).toBe(false);
      }),
    );
  });
});
