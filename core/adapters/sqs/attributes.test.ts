import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  globMatcher,
  literalPrefix,
  looksLikeDeadLetterQueue,
  parseArn,
  parseRedriveAllowPolicy,
  parseRedrivePolicy,
  queueConfigFromAttributes,
  queueKind,
  queueNameFromUrl,
  sqsCapabilities,
} from './attributes';

describe('RedrivePolicy parsing', () => {
  it('reads the policy SQS returns, with a numeric or string maxReceiveCount', () => {
    expect(parseRedrivePolicy('{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq","maxReceiveCount":3}')).toEqual({
      deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000000000000:orders-dlq',
      maxReceiveCount: 3,
    });
    expect(parseRedrivePolicy('{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:1:d","maxReceiveCount":"5"}')).toMatchObject({ maxReceiveCount: 5 });
  });

  it('absent → null; malformed → an error in words', () => {
    expect(parseRedrivePolicy(undefined)).toBeNull();
    expect(parseRedrivePolicy('  ')).toBeNull();
    expect(parseRedrivePolicy('{')).toEqual({ error: 'RedrivePolicy is not valid JSON' });
    expect(parseRedrivePolicy('{"maxReceiveCount":3}')).toEqual({ error: 'RedrivePolicy has no deadLetterTargetArn' });
    expect(parseRedrivePolicy('{"deadLetterTargetArn":"arn:x","maxReceiveCount":0}')).toEqual({ error: 'RedrivePolicy has no valid maxReceiveCount' });
  });

  it('never throws, whatever the text', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (s) => {
        const r = parseRedrivePolicy(s);
        expect(r === null || 'error' in r || (typeof r.deadLetterTargetArn === 'string' && r.maxReceiveCount >= 1)).toBe(true);
        parseRedriveAllowPolicy(s);
        parseArn(s);
        queueNameFromUrl(s);
      }),
    );
  });

  it('RedriveAllowPolicy', () => {
    expect(parseRedriveAllowPolicy('{"redrivePermission":"byQueue","sourceQueueArns":["arn:aws:sqs:us-east-1:1:a"]}')).toEqual({ redrivePermission: 'byQueue', sourceQueueArns: ['arn:aws:sqs:us-east-1:1:a'] });
    expect(parseRedriveAllowPolicy('{"redrivePermission":"allowAll"}')).toEqual({ redrivePermission: 'allowAll', sourceQueueArns: [] });
    expect(parseRedriveAllowPolicy('nope')).toBeNull();
  });
});

describe('names, ARNs and kinds', () => {
  it('parses ARNs and queue URLs', () => {
    expect(parseArn('arn:aws:sqs:eu-west-1:123456789012:payments-dlq.fifo')).toEqual({ partition: 'aws', service: 'sqs', region: 'eu-west-1', accountId: '123456789012', resource: 'payments-dlq.fifo' });
    expect(parseArn('orders')).toBeNull();
    expect(queueNameFromUrl('https://sqs.us-east-1.amazonaws.com/123456789012/orders')).toBe('orders');
    expect(queueNameFromUrl('http://sqs.us-east-1.127.0.0.1:4566/000000000000/payments.fifo/')).toBe('payments.fifo');
  });

  it('recognises DLQ-like names and FIFO queues', () => {
    for (const n of ['orders-dlq', 'orders_DLQ.fifo', 'dlq', 'dead-letter-orders', 'orders.deadletter', 'orders-dead-letters']) expect(looksLikeDeadLetterQueue(n), n).toBe(true);
    for (const n of ['orders', 'dlqueue-x', 'headless', 'orders-dlqs']) expect(looksLikeDeadLetterQueue(n), n).toBe(false);
    expect(queueKind('payments.fifo', null)).toBe('sqs-fifo');
    expect(queueKind('payments', { FifoQueue: 'true' })).toBe('sqs-fifo');
    expect(queueKind('orders', {})).toBe('sqs-standard');
  });

  it('globs match whole names; the literal prefix feeds QueueNamePrefix', () => {
    expect(globMatcher('orders*')('orders-dlq')).toBe(true);
    expect(globMatcher('orders*')('my-orders')).toBe(false);
    expect(globMatcher('*.fifo')('payments.fifo')).toBe(true);
    expect(globMatcher('a.b')('axb')).toBe(false);
    expect(globMatcher('q?')('q1')).toBe(true);
    expect(globMatcher(undefined)('anything')).toBe(true);
    expect(literalPrefix('orders-*-dlq')).toBe('orders-');
    expect(literalPrefix('*x')).toBe('');
    expect(literalPrefix('exact')).toBe('exact');
    fc.assert(
      fc.property(fc.string(), (s) => {
        const literal = s.replace(/[*?]/g, '');
        expect(globMatcher(literal)(literal)).toBe(true);
        expect(globMatcher(`${literal}*`)(`${literal}-dlq`)).toBe(true);
      }),
    );
  });
});

describe('config and capabilities', () => {
  const attrs = {
    QueueArn: 'arn:aws:sqs:us-east-1:000000000000:orders',
    VisibilityTimeout: '30',
    MessageRetentionPeriod: '345600',
    MaximumMessageSize: '262144',
    ReceiveMessageWaitTimeSeconds: '0',
    DelaySeconds: '0',
    CreatedTimestamp: '1795983869',
    RedrivePolicy: '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq","maxReceiveCount":3}',
    SqsManagedSseEnabled: 'true',
    ApproximateNumberOfMessages: '4',
  };

  it('labels units and parses policies', () => {
    const c = queueConfigFromAttributes('http://x/000000000000/orders', attrs);
    expect(c).toMatchObject({
      queueArn: attrs.QueueArn,
      visibilityTimeoutSeconds: 30,
      messageRetentionPeriodSeconds: 345600,
      maximumMessageSizeBytes: 262144,
      receiveMessageWaitTimeSeconds: 0,
      delaySeconds: 0,
      redrivePolicy: { deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000000000000:orders-dlq', maxReceiveCount: 3 },
      redriveAllowPolicy: null,
      fifoQueue: false,
      contentBasedDeduplication: null,
      createdAt: new Date(1795983869 * 1000).toISOString(),
      sqsManagedSseEnabled: true,
    });
    expect(c.attributes).toEqual(attrs);
  });

  it('a RedrivePolicy makes peeks dead-letter-capable; none makes them safe; unknown stays unknown', () => {
    const withPolicy = sqsCapabilities(attrs, 'orders-dlq');
    expect(withPolicy.peekMayDeadLetter).toBe(true);
    expect(withPolicy.peekSideEffects.map((e) => e.kind)).toEqual(['delivery-count', 'temporarily-invisible', 'may-dead-letter']);
    expect(withPolicy.peekSideEffects[2]?.description).toContain('maxReceiveCount 3');
    expect(withPolicy.peekSideEffects[2]?.description).toContain('orders-dlq');
    expect(sqsCapabilities({ ...attrs, RedrivePolicy: '' }, null).peekMayDeadLetter).toBe(false);
    expect(sqsCapabilities({ ...attrs, RedrivePolicy: '{bad' }, null).peekMayDeadLetter).toBeNull();
    expect(sqsCapabilities(null, null)).toMatchObject({ peekMayDeadLetter: null, canPeekNonDestructively: false, canPageFromCursor: false, maxPeekWindow: 100 });
  });
});
