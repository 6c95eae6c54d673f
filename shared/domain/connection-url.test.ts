import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseConnectionUrl } from './connection-url';
import { QueuescopeError } from './errors';
import { describeConnection, mergeSecrets, splitSecrets } from './connection';

describe('parseConnectionUrl', () => {
  it('reads redis URLs with db index and TLS scheme', () => {
    expect(parseConnectionUrl('redis://127.0.0.1:6379/3')).toEqual({ kind: 'redis', url: 'redis://127.0.0.1:6379/3', db: 3 });
    expect(parseConnectionUrl('rediss://u:p@cache.example:6380')).toMatchObject({ kind: 'redis', url: 'rediss://u:p@cache.example:6380' });
  });

  it('reads amqp URLs and the management override', () => {
    expect(parseConnectionUrl('amqp://guest:guest@127.0.0.1:5672/%2F?management=http://127.0.0.1:15672')).toEqual({
      kind: 'rabbitmq',
      url: 'amqp://guest:guest@127.0.0.1:5672/%2F',
      managementUrl: 'http://127.0.0.1:15672',
    });
  });

  it('reads sqs URLs with endpoint and profile', () => {
    expect(parseConnectionUrl('sqs://eu-west-1?endpoint=http://127.0.0.1:4566&profile=dev')).toEqual({
      kind: 'sqs',
      region: 'eu-west-1',
      endpoint: 'http://127.0.0.1:4566',
      profile: 'dev',
    });
  });

  it('treats .jsonl paths and file:// URLs as snapshots', () => {
    expect(parseConnectionUrl('./out/failed.jsonl')).toEqual({ kind: 'snapshot', path: './out/failed.jsonl' });
    expect(parseConnectionUrl('file:///tmp/a%20b.jsonl')).toEqual({ kind: 'snapshot', path: '/tmp/a b.jsonl' });
  });

  it.each([
    ['', /No connection given/],
    ['localhost:6379', /not a connection URL/],
    ['http://example.com', /Unsupported scheme "http:\/\/"/],
    ['redis://h/notanumber', /database index must be a number/],
    ['sqs://not a region', /not a valid URL|region/],
    ['sqs://mars', /region "mars" is not an AWS region/],
    ['sqs://us-east-1?endpoint=notaurl', /endpoint "notaurl" is not an http\(s\) URL/],
    ['sqs://us-east-1?bogus=1', /unknown parameter "bogus"/],
  ])('rejects %j with a clear INVALID_INPUT', (input, msg) => {
    try {
      parseConnectionUrl(input);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(QueuescopeError);
      expect((e as QueuescopeError).code).toBe('INVALID_INPUT');
      expect((e as Error).message).toMatch(msg);
    }
  });

  it('never echoes a password in its errors', () => {
    try {
      parseConnectionUrl('http://admin:hunter2@example.com');
    } catch (e) {
      expect((e as Error).message).not.toContain('hunter2');
    }
    try {
      parseConnectionUrl('redis://admin:hunter2@h/x');
    } catch (e) {
      expect((e as Error).message).not.toContain('hunter2');
    }
  });

  it('never echoes any part of a password holding raw @ / # ? % (it says to percent-encode instead)', () => {
    const cases = [
      'redis://sp:p@ss:w/rd%#?@127.0.0.1:39871',
      'redis://app:Tr0ub4dor@prod/3x@10.0.0.5:6379/0',
      'amqp://app:Tr0ub4dor@prod/3x@10.0.0.5:5672/%2F',
      'amqps://app:se#cret@host/vh',
      'redis://:p@ss/w0rd@127.0.0.1:6379',
    ];
    for (const input of cases) {
      let message = '';
      try {
        parseConnectionUrl(input);
      } catch (e) {
        expect(e).toBeInstanceOf(QueuescopeError);
        message = (e as Error).message;
      }
      expect(message, input).toMatch(/percent-encoded|%40/);
      for (const secret of ['ss:w', 'w/rd', 'Tr0ub4dor', 'prod/3x', '3x@', 'se#cret', 'cret', 'w0rd']) expect(message, input).not.toContain(secret);
    }
  });

  it('either parses or throws QueuescopeError for any input (never anything else)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.webUrl(), fc.constantFrom('redis://', 'amqp://', 'sqs://', 'rediss://').chain((s) => fc.string().map((t) => s + t))), (input) => {
        try {
          parseConnectionUrl(input);
        } catch (e) {
          expect(e).toBeInstanceOf(QueuescopeError);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('splitSecrets / mergeSecrets', () => {
  it('moves the URL password and password fields out, and back', () => {
    const cfg = parseConnectionUrl('amqp://guest:s3cr%40t@127.0.0.1:5672/%2F');
    const { config, secrets } = splitSecrets(cfg);
    expect(secrets).toEqual({ password: 's3cr@t' });
    expect(JSON.stringify(config)).not.toContain('s3cr');
    expect(config).toMatchObject({ kind: 'rabbitmq', url: 'amqp://guest@127.0.0.1:5672/%2F' });
    expect(mergeSecrets(config, secrets)).toMatchObject({ password: 's3cr@t' });
  });

  it('splits SQS keys', () => {
    const { config, secrets } = splitSecrets({ kind: 'sqs', region: 'us-east-1', accessKeyId: 'AKIA', secretAccessKey: 'shh', sessionToken: 'tok' });
    expect(config).toEqual({ kind: 'sqs', region: 'us-east-1', accessKeyId: 'AKIA' });
    expect(secrets).toEqual({ secretAccessKey: 'shh', sessionToken: 'tok' });
    expect(mergeSecrets(config, secrets)).toMatchObject({ secretAccessKey: 'shh', sessionToken: 'tok' });
  });
});

describe('describeConnection', () => {
  it('labels connections without secrets', () => {
    expect(describeConnection({ kind: 'redis', url: 'redis://u:pw@h:6379/0' })).toBe('redis://u@h:6379/0');
    expect(describeConnection({ kind: 'sqs', region: 'us-east-1', endpoint: 'http://127.0.0.1:4566' })).toBe('sqs://us-east-1 (http://127.0.0.1:4566)');
  });
});
