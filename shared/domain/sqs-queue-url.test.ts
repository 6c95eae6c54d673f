import { describe, expect, it } from 'vitest';
import { parseSqsQueueUrl, sqsQueueUrlMismatch, type SqsQueueUrl } from './sqs-queue-url';

describe('parseSqsQueueUrl', () => {
  it('reads AWS queue URLs (region from the host) and emulator URLs (no region)', () => {
    expect(parseSqsQueueUrl('https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq')).toEqual({
      url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq',
      origin: 'https://sqs.eu-west-1.amazonaws.com',
      region: 'eu-west-1',
      aws: true,
      accountId: '123456789012',
      name: 'orders-dlq',
    });
    expect(parseSqsQueueUrl('https://us-gov-west-1.queue.amazonaws.com/123456789012/a.fifo')).toMatchObject({ region: 'us-gov-west-1', name: 'a.fifo', aws: true });
    expect(parseSqsQueueUrl('https://queue.amazonaws.com/123456789012/a')).toMatchObject({ region: 'us-east-1', aws: true });
    expect(parseSqsQueueUrl('https://sqs.cn-north-1.amazonaws.com.cn/123456789012/a')).toMatchObject({ region: 'cn-north-1' });
    expect(parseSqsQueueUrl(' http://127.0.0.1:4566/000000000000/orders ')).toEqual({
      url: 'http://127.0.0.1:4566/000000000000/orders',
      origin: 'http://127.0.0.1:4566',
      region: null,
      aws: false,
      accountId: '000000000000',
      name: 'orders',
    });
  });

  it("reads fauxqs's own queue URL (http://sqs.<region>.<IPv4>:PORT/…, which new URL() refuses): region from the host, the IPv4 address as the endpoint", () => {
    expect(parseSqsQueueUrl('http://sqs.us-east-1.127.0.0.1:4566/000000000000/orders-dlq')).toEqual({
      url: 'http://sqs.us-east-1.127.0.0.1:4566/000000000000/orders-dlq',
      origin: 'http://127.0.0.1:4566',
      region: 'us-east-1',
      aws: false,
      accountId: '000000000000',
      name: 'orders-dlq',
    });
    expect(parseSqsQueueUrl('http://sqs.eu-west-1.10.0.0.7/000000000000/a.fifo')).toMatchObject({ origin: 'http://10.0.0.7', region: 'eu-west-1', name: 'a.fifo' });
    for (const s of [
      'http://sqs.us-east-1.127.0.0.1:4566/000000000000/orders?x=1',
      'http://sqs.us-east-1.127.0.0.1:4566/000000000000',
      'http://sqs.us-east-1.999.0.0.1:4566/000000000000/orders', // not an IPv4 address
      'http://sqs.us-east-1.127.0.0.1:4566/1234/orders',
    ]) {
      expect(parseSqsQueueUrl(s), s).toBeNull();
    }
  });

  it('is null for anything else', () => {
    for (const s of [
      'orders',
      'sqs:https://sqs.us-east-1.amazonaws.com/123456789012/orders',
      'sqs://us-east-1',
      'http://127.0.0.1:15672/api/queues', // RabbitMQ management
      'http://127.0.0.1:4566/000000000000', // no name
      'http://127.0.0.1:4566/1234/orders', // not an account id
      'http://127.0.0.1:4566/000000000000/orders/x',
      'http://127.0.0.1:4566/000000000000/or ders',
      'http://127.0.0.1:4566/000000000000/orders?x=1',
      'http://user:pw@127.0.0.1:4566/000000000000/orders',
      'http://sqs.us-east-1.amazonaws.com/123456789012/orders', // AWS is https only
      'redis://127.0.0.1:6379/000000000000/orders',
    ]) {
      expect(parseSqsQueueUrl(s), s).toBeNull();
    }
  });
});

describe('sqsQueueUrlMismatch', () => {
  const url = (s: string): SqsQueueUrl => {
    const u = parseSqsQueueUrl(s);
    if (u === null) throw new Error(s);
    return u;
  };
  it('an AWS URL matches an AWS connection of its region only', () => {
    const eu = url('https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq');
    expect(sqsQueueUrlMismatch(eu, 'https://sqs.eu-west-1.amazonaws.com', 'eu-west-1')).toBeNull();
    expect(sqsQueueUrlMismatch(eu, 'https://vpce-1a2b.sqs.eu-west-1.vpce.amazonaws.com', 'eu-west-1')).toBeNull();
    expect(sqsQueueUrlMismatch(eu, 'https://sqs.us-east-1.amazonaws.com', 'us-east-1')).toBe('it names region eu-west-1, but the connection is to region us-east-1');
    expect(sqsQueueUrlMismatch(eu, 'http://127.0.0.1:4566', 'eu-west-1')).toBe('it is an AWS queue URL (region eu-west-1), but the connection goes to http://127.0.0.1:4566');
  });
  it("an emulator's URL matches its own endpoint (loopback names alike), not another port or AWS", () => {
    const local = url('http://127.0.0.1:4566/000000000000/orders');
    expect(sqsQueueUrlMismatch(local, 'http://127.0.0.1:4566', 'us-east-1')).toBeNull();
    expect(sqsQueueUrlMismatch(local, 'http://localhost:4566/', 'us-east-1')).toBeNull();
    expect(sqsQueueUrlMismatch(url('http://sqs.us-east-1.127.0.0.1:4566/000000000000/orders'), 'http://localhost:4566', 'us-east-1')).toBeNull();
    expect(sqsQueueUrlMismatch(local, 'http://127.0.0.1:4577', 'us-east-1')).toBe('it names the server http://127.0.0.1:4566, but the connection goes to http://127.0.0.1:4577');
    expect(sqsQueueUrlMismatch(local, 'https://sqs.us-east-1.amazonaws.com', 'us-east-1')).toMatch(/connection goes to AWS/);
    expect(sqsQueueUrlMismatch(local, 'not a url', 'us-east-1')).toBeNull();
  });
});
