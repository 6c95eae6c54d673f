import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DlqWatchEvent } from '../../../shared/api/watch';
import { execEnvironment, formatWatchEvent, splitWatchArgs } from './watch';

const ev: DlqWatchEvent = {
  type: 'grew',
  at: Date.UTC(2026, 0, 2, 3, 4, 5),
  queueId: 'stream:orders-dlq',
  queueName: 'orders-dlq',
  depth: 5,
  previousDepth: 3,
  delta: 2,
  deadLetterSources: ['stream:orders'],
  failure: { messageId: '1-0', class: 'non-retryable', label: 'HTTP 422', reason: 'HTTP 422 amount must be positive', source: 'header error' },
  failureNote: null,
  error: null,
  retryInMs: null,
};
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('watch command helpers', () => {
  it('splits the connection from the DLQs', () => {
    expect(splitWatchArgs(['redis://h:6379', 'a', 'b'], {})).toEqual({ connection: 'redis://h:6379', dlqs: ['a', 'b'] });
    expect(splitWatchArgs(['my-profile', 'a'], {})).toEqual({ connection: 'my-profile', dlqs: ['a'] });
    expect(splitWatchArgs(['a'], {})).toEqual({ dlqs: ['a'] });
    expect(splitWatchArgs(['a', 'b'], { profile: 'p' })).toEqual({ dlqs: ['a', 'b'] });
    expect(() => splitWatchArgs(['redis://h:6379'], {})).toThrow(/Name at least one dead-letter queue/);
    expect(() => splitWatchArgs([], {})).toThrow(/Name at least one/);
  });

  it('formats one line per event', () => {
    expect(formatWatchEvent(ev)).toBe('2026-01-02 03:04:05Z  grew           orders-dlq  depth 5 (+2)  from stream:orders  newest: non-retryable (HTTP 422) — HTTP 422 amount must be positive\n');
    expect(formatWatchEvent({ ...ev, type: 'error', depth: null, delta: null, failure: null, error: { code: 'HOST_UNREACHABLE', message: 'Cannot reach h:6379.' }, retryInMs: 4_200 })).toBe(
      '2026-01-02 03:04:05Z  error          orders-dlq  HOST_UNREACHABLE: Cannot reach h:6379.  (retrying in 5 s)\n',
    );
  });

  it('escapes broker text: a line never carries raw control or bidi characters', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (name, reason) => {
        const line = formatWatchEvent({ ...ev, queueName: name, deadLetterSources: [name], failure: { ...ev.failure!, reason, label: reason } });
        expect(line.endsWith('\n')).toBe(true);
        expect(RAW_CONTROL.test(line.slice(0, -1))).toBe(false);
        expect(line.slice(0, -1).includes('\n')).toBe(false);
      }),
    );
  });

  it('puts the event into QUEUESCOPE_* variables (empty when unknown), keeping the rest of the environment', () => {
    expect(execEnvironment({ PATH: '/bin', UNSET: undefined }, ev)).toEqual({
      PATH: '/bin',
      QUEUESCOPE_EVENT: 'grew',
      QUEUESCOPE_QUEUE: 'orders-dlq',
      QUEUESCOPE_QUEUE_ID: 'stream:orders-dlq',
      QUEUESCOPE_DEPTH: '5',
      QUEUESCOPE_DELTA: '2',
      QUEUESCOPE_FAILURE_CLASS: 'non-retryable',
    });
    expect(execEnvironment({}, { ...ev, depth: null, delta: null, failure: null })).toMatchObject({ QUEUESCOPE_DEPTH: '', QUEUESCOPE_DELTA: '', QUEUESCOPE_FAILURE_CLASS: '' });
  });
});
