import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { QueueMessage } from '../domain';
import { FAILURE_CLASSES, classifyErrorText, classifyFailure, httpStatus, normalizeReason } from './failure-class';

function msg(over: Partial<QueueMessage> = {}): QueueMessage {
  return {
    id: '1',
    queueId: 'q',
    queueName: 'q',
    position: 0,
    body: { encoding: 'utf8', data: '{}', sizeBytes: 2, truncated: false },
    headers: {},
    properties: {},
    meta: {},
    ...over,
  };
}

describe('classifyErrorText', () => {
  it.each([
    ['HTTP 422 Unprocessable Entity: amount must be positive', 'non-retryable', 'HTTP 422'],
    ['HTTP 404 Not Found: customer C-77 does not exist', 'non-retryable', 'HTTP 404'],
    ['HTTP 400 Bad Request from ledger: currency missing', 'non-retryable', 'HTTP 400'],
    ['Request failed with status code 401', 'non-retryable', 'HTTP 401'],
    ['{"statusCode": 403, "message": "nope"}', 'non-retryable', 'HTTP 403'],
    ['HTTP/1.1 404 Not Found', 'non-retryable', 'HTTP 404'],
    ['HTTP 503 Service Unavailable', 'transient', 'HTTP 503'],
    ['503 Service Unavailable from payments-api (attempt 2)', 'transient', 'HTTP 503'],
    ['429 Too Many Requests from payments-api, retry-after 2 s', 'transient', 'HTTP 429'],
    ['500 Internal Server Error from ledger: deadlock detected', 'transient', 'HTTP 500'],
    ['ETIMEDOUT connect to api.payments.local:443', 'transient', 'timeout'],
    ['ETIMEDOUT calling inventory-service after 5000 ms', 'transient', 'timeout'],
    ['read ECONNRESET', 'transient', 'connection lost'],
    ['connect ECONNREFUSED 127.0.0.1:5432', 'transient', 'connection refused'],
    ['Connection lost to broker', 'transient', 'connection lost'],
    ['getaddrinfo ENOTFOUND api.example', 'transient', 'network'],
    ['ValidationError: "email" is not allowed to be empty', 'non-retryable', 'validation'],
    ['field "currency" is required', 'non-retryable', 'missing field'],
    ['Order A-1001 not found', 'non-retryable', 'not found'],
    ['job stalled more than allowable limit', 'transient', 'temporary'],
    ['UnrecoverableError: bad payload', 'non-retryable', 'unrecoverable'],
    ['something odd happened', 'unknown', 'other error'],
    ['', 'unknown', 'no error recorded'],
  ] as const)('%s → %s (%s)', (text, cls, label) => {
    const r = classifyErrorText(text);
    expect(r.class).toBe(cls);
    expect(r.label).toBe(label);
  });

  it('does not read ids or durations as HTTP statuses', () => {
    expect(httpStatus('after 5000 ms')).toBeNull();
    expect(httpStatus('order A-404-1')).toBeNull();
    expect(httpStatus('retry in 500ms')).toBeNull();
  });

  it('the earliest phrase wins when a text names two causes', () => {
    expect(classifyErrorText('timeout while looking up order: not found').class).toBe('transient');
    expect(classifyErrorText('order not found (after a timeout)').class).toBe('non-retryable');
  });
});

const noiseWord = fc.constantFrom('payments-api', 'from', 'ledger', 'while', 'calling', 'orders', 'the', 'worker', 'job', 'A-1001:charge', 'C-77', '->', ':');
const noise = fc.array(noiseWord, { maxLength: 6 }).map((w) => w.join(' '));

describe('classifyErrorText properties', () => {
  it('never throws and always returns a known class for any string', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (s) => {
        const r = classifyErrorText(s);
        expect(FAILURE_CLASSES).toContain(r.class);
        expect(r.label.length).toBeGreaterThan(0);
      }),
    );
  });

  it('an HTTP status decides the class whatever neutral text surrounds it', () => {
    fc.assert(
      fc.property(noise, fc.constantFrom(400, 401, 403, 404, 422, 408, 429, 500, 502, 503, 504), noise, (pre, status, post) => {
        const r = classifyErrorText(`${pre} HTTP ${status} ${post}`);
        const expected = [400, 401, 403, 404, 422].includes(status) ? 'non-retryable' : 'transient';
        expect(r.class).toBe(expected);
        expect(r.label).toBe(`HTTP ${status}`);
      }),
    );
  });

  it('neutral words added around a phrase do not change its class', () => {
    fc.assert(
      fc.property(fc.constantFrom('ETIMEDOUT', 'ECONNRESET', 'validation failed', 'not found', 'connection refused', 'missing field amount'), noise, noise, (phrase, pre, post) => {
        expect(classifyErrorText(`${pre} ${phrase} ${post}`).class).toBe(classifyErrorText(phrase).class);
      }),
    );
  });
});

describe('normalizeReason', () => {
  it('groups reasons that differ only in numbers and ids; keeps HTTP status codes', () => {
    expect(normalizeReason('HTTP 503 Service Unavailable (attempt 2)')).toBe('HTTP 503 Service Unavailable (attempt #)');
    expect(normalizeReason('HTTP 503 Service Unavailable (attempt 3)')).toBe('HTTP 503 Service Unavailable (attempt #)');
    expect(normalizeReason('job 4f1c2a9e-1b2c-4d3e-8f90-1234567890ab failed')).toBe('job # failed');
  });

  it('is idempotent', () => {
    fc.assert(fc.property(fc.string({ maxLength: 200 }), (s) => {
        expect(normalizeReason(normalizeReason(s))).toBe(normalizeReason(s));
      }),
    );
  });
});

describe('classifyFailure', () => {
  it('BullMQ: failedReason, attempts and wasted retries', () => {
    const a = classifyFailure(msg({ meta: { failedReason: 'HTTP 422 Unprocessable Entity', attemptsMade: 5, attemptsLimit: 5 } }));
    expect(a).toMatchObject({ class: 'non-retryable', label: 'HTTP 422', source: 'failedReason', attempts: 5, attemptsLimit: 5, wastedRetries: true });
    const b = classifyFailure(msg({ meta: { failedReason: 'HTTP 422 Unprocessable Entity', attemptsMade: 1, attemptsLimit: 5 } }));
    expect(b.wastedRetries).toBe(false);
    const c = classifyFailure(msg({ meta: { failedReason: 'ETIMEDOUT', attemptsMade: 3, attemptsLimit: 3 } }));
    expect(c).toMatchObject({ class: 'transient', wastedRetries: false });
  });

  it('BullMQ: the error class is read from the newest stack trace (failedReason holds only the message)', () => {
    // What BullMQ stores for `throw new UnrecoverableError('card permanently declined (do_not_honor)')`.
    const stack = 'UnrecoverableError: card permanently declined (do_not_honor)\n    at Worker.processor (/app/worker.js:12:11)\n    at Worker.callProcessJob (/app/node_modules/bullmq/dist/cjs/classes/worker.js:640:28)';
    const u = classifyFailure(msg({ meta: { failedReason: 'card permanently declined (do_not_honor)', stacktrace: [stack], attemptsMade: 1, attemptsLimit: 3 } }));
    expect(u).toMatchObject({ class: 'non-retryable', label: 'unrecoverable', source: 'failedReason + stacktrace', reason: 'UnrecoverableError: card permanently declined (do_not_honor)' });
    // The newest attempt decides: an earlier timeout, then an UnrecoverableError.
    const two = classifyFailure(msg({ meta: { failedReason: 'card declined', stacktrace: ['Error: ETIMEDOUT\n    at x', 'UnrecoverableError: card declined\n    at y'] } }));
    expect(two.class).toBe('non-retryable');
    // A plain Error adds nothing; a name already in failedReason is not repeated.
    const plain = classifyFailure(msg({ meta: { failedReason: 'card declined', stacktrace: ['Error: card declined\n    at y'] } }));
    expect(plain).toMatchObject({ class: 'unknown', source: 'failedReason', reason: 'card declined' });
    const named = classifyFailure(msg({ meta: { failedReason: 'UnrecoverableError: x', stacktrace: ['UnrecoverableError: x\n    at y'] } }));
    expect(named.reason).toBe('UnrecoverableError: x');
    // Garbage in the stack trace never throws nor changes the class.
    expect(classifyFailure(msg({ meta: { failedReason: 'ETIMEDOUT', stacktrace: [42 as unknown as string, ''] } })).class).toBe('transient');
  });

  it('RabbitMQ: error header first, else the x-death reason', () => {
    const xDeath = [{ count: 1, reason: 'rejected', queue: 'orders.work', exchange: '', routingKeys: ['orders.work'], time: 1 }];
    const a = classifyFailure(msg({ headers: { 'x-last-error': 'HTTP 404 Not Found from orders-api', 'x-attempts': 3 }, meta: { xDeath } }));
    expect(a).toMatchObject({ class: 'non-retryable', source: 'header x-last-error', attempts: 3, wastedRetries: true });
    const b = classifyFailure(msg({ headers: { 'X-Exception-Message': 'java.net.SocketTimeoutException: Read timed out' } }));
    expect(b).toMatchObject({ class: 'transient', source: 'header X-Exception-Message' });
    const c = classifyFailure(msg({ meta: { xDeath } }));
    expect(c).toMatchObject({ class: 'unknown', label: 'x-death rejected', source: 'x-death', reason: 'dead-lettered from orders.work: rejected', attempts: 1 });
    const d = classifyFailure(msg({ meta: { firstDeathReason: 'expired', firstDeathQueue: 'q' } }));
    expect(d).toMatchObject({ class: 'transient', label: 'x-death expired' });
  });

  it('SQS: an error attribute, else the receive count', () => {
    const a = classifyFailure(msg({ headers: { 'x-last-error': '429 Too Many Requests' }, properties: { ApproximateReceiveCount: '4' }, meta: { receiveCount: 4 } }));
    expect(a).toMatchObject({ class: 'transient', attempts: 4 });
    const b = classifyFailure(msg({ properties: { ApproximateReceiveCount: '4' }, meta: { receiveCount: 4 } }));
    expect(b).toMatchObject({ class: 'unknown', source: 'receive count', label: 'no error recorded' });
  });

  it('keeps only the first line of a reason and bounds its length', () => {
    const a = classifyFailure(msg({ meta: { failedReason: `ValidationError: bad\n    at foo (x.js:1)` } }));
    expect(a.reason).toBe('ValidationError: bad');
    const b = classifyFailure(msg({ meta: { failedReason: 'x'.repeat(5000) } }));
    expect((b.reason ?? '').length).toBeLessThanOrEqual(501);
  });

  it('never throws on odd messages; wasted retries only for non-retryable failures retried', () => {
    const header = fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.boolean());
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom('x-error', 'x-last-error', 'attempts', 'x-attempts', 'error', 'foo'), header),
        fc.option(fc.string(), { nil: undefined }),
        fc.option(fc.integer({ min: -5, max: 50 }), { nil: undefined }),
        fc.option(fc.integer({ min: -5, max: 50 }), { nil: undefined }),
        (headers, failedReason, attemptsMade, attemptsLimit) => {
          const r = classifyFailure(msg({ headers, meta: { ...(failedReason !== undefined ? { failedReason } : {}), ...(attemptsMade !== undefined ? { attemptsMade } : {}), ...(attemptsLimit !== undefined ? { attemptsLimit } : {}) } }));
          expect(FAILURE_CLASSES).toContain(r.class);
          if (r.wastedRetries) {
            expect(r.class).toBe('non-retryable');
            expect(r.attempts).toBeGreaterThan(1);
          }
          expect(r.groupKey.startsWith(`${r.class}|${r.label}|`)).toBe(true);
        },
      ),
    );
  });
});
