import { describe, expect, it } from 'vitest';
import { parseSqsQueueUrl } from './sqs-queue-url';

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
