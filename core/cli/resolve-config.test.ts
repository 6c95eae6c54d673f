import { describe, expect, it } from 'vitest';
import type { ConnectionProfile } from '../../shared/domain';
import { join } from 'node:path';
import { looksLikeConnection, projectFileNote, resolveConfig } from './resolve-config';

const profiles: ConnectionProfile[] = [
  { id: 'p1', name: 'Prod Rabbit', config: { kind: 'rabbitmq', url: 'amqp://app@mq.example:5672/%2F', managementUrl: 'https://mq.example:15671' }, hasSecret: false, builtIn: false },
  { id: 'p2', name: 'local redis', config: { kind: 'redis', url: 'redis://127.0.0.1:6379' }, hasSecret: false, builtIn: false },
  { id: 'p3', name: 'twin', config: { kind: 'redis', url: 'redis://a:6379' }, hasSecret: false, builtIn: false },
  { id: 'p4', name: 'twin', config: { kind: 'redis', url: 'redis://b:6379' }, hasSecret: false, builtIn: false },
];

const r = (flags: Parameters<typeof resolveConfig>[0]['flags'], env: Record<string, string> = {}) => resolveConfig({ flags, env, profiles });

describe('resolveConfig', () => {
  it('takes a URL argument as is, with the secret kept in config but not in the label', () => {
    const x = r({ connection: 'amqp://guest:guest@127.0.0.1:5672' });
    expect(x.source).toBe('argument');
    expect(x.config).toMatchObject({ kind: 'rabbitmq', url: 'amqp://guest:guest@127.0.0.1:5672' });
    expect(x.label).toBe('amqp://guest@127.0.0.1:5672');
  });

  it('a plain SQS queue URL as the connection: the region of an AWS host; an emulator origin as endpoint with AWS_REGION, else an error saying what to type', () => {
    expect(r({ connection: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq' }).config).toMatchObject({ kind: 'sqs', region: 'eu-west-1' });
    expect(r({ connection: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq' }).config).not.toHaveProperty('endpoint');
    expect(r({ connection: 'http://127.0.0.1:4566/000000000000/orders' }, { AWS_REGION: 'us-east-1' }).config).toMatchObject({ kind: 'sqs', region: 'us-east-1', endpoint: 'http://127.0.0.1:4566' });
    expect(() => r({ connection: 'http://127.0.0.1:4566/000000000000/orders' })).toThrow(
      "does not say its region (only AWS hosts do): set AWS_REGION, or give the connection before it, e.g. 'sqs://us-east-1?endpoint=http://127.0.0.1:4566' http://127.0.0.1:4566/000000000000/orders",
    );
  });

  it('management URL: flag beats ?management= beats RABBITMQ_MANAGEMENT_URL', () => {
    const env = { RABBITMQ_MANAGEMENT_URL: 'http://env:15672' };
    expect(r({ connection: 'amqp://h' }, env).config).toMatchObject({ managementUrl: 'http://env:15672' });
    expect(r({ connection: 'amqp://h?management=http://url:15672' }, env).config).toMatchObject({ managementUrl: 'http://url:15672' });
    expect(r({ connection: 'amqp://h?management=http://url:15672', managementUrl: 'http://flag:1' }, env).config).toMatchObject({ managementUrl: 'http://flag:1' });
    expect(() => r({ connection: 'redis://h', managementUrl: 'http://flag:1' })).toThrow(/applies to RabbitMQ/);
  });

  it('fills SQS region, endpoint and profile from the standard AWS variables', () => {
    const env = { AWS_REGION: 'eu-west-1', AWS_ENDPOINT_URL: 'http://generic:1', AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:4566', AWS_PROFILE: 'dev' };
    expect(r({ connection: 'sqs://' }, env).config).toEqual({ kind: 'sqs', region: 'eu-west-1', endpoint: 'http://127.0.0.1:4566', profile: 'dev' });
    expect(r({ connection: 'sqs://us-east-1?endpoint=http://x:9' }, env).config).toMatchObject({ region: 'us-east-1', endpoint: 'http://x:9' });
    expect(r({ connection: 'sqs://us-east-1' }, { AWS_ENDPOINT_URL: 'http://generic:1' }).config).toMatchObject({ endpoint: 'http://generic:1' });
    expect(() => r({ connection: 'sqs://' })).toThrow(/needs a region/);
    // credentials are never copied into the config: the SDK's own chain reads them
    expect(r({ connection: 'sqs://us-east-1' }, { AWS_ACCESS_KEY_ID: 'AKIA', AWS_SECRET_ACCESS_KEY: 'x' }).config).toEqual({ kind: 'sqs', region: 'us-east-1' });
  });

  it('snapshot paths and --file give a snapshot config', () => {
    expect(r({ connection: 'dir/x.jsonl' }).config).toEqual({ kind: 'snapshot', path: 'dir/x.jsonl' });
    expect(r({ file: 'y.jsonl.gz' })).toMatchObject({ source: 'file', config: { kind: 'snapshot', path: 'y.jsonl.gz' } });
  });

  it('--profile finds by id, exact name, or unique case-insensitive name; ambiguity lists ids', () => {
    expect(r({ profile: 'p2' }).profile?.id).toBe('p2');
    expect(r({ profile: 'Prod Rabbit' })).toMatchObject({ source: 'profile', label: 'amqp://app@mq.example:5672/%2F (profile "Prod Rabbit")' });
    expect(r({ profile: 'LOCAL REDIS' }).profile?.id).toBe('p2');
    expect(() => r({ profile: 'twin' })).toThrow(/p3, p4/);
    expect(() => r({ profile: 'nope' })).toThrow(/No saved connection named "nope"; saved: Prod Rabbit/);
    expect(r({ profile: 'Prod Rabbit', managementUrl: 'http://other:15672' }).config).toMatchObject({ managementUrl: 'http://other:15672' });
    // a positional that is not a URL may name a profile
    expect(r({ connection: 'local redis' }).profile?.id).toBe('p2');
  });

  it('refuses conflicting sources', () => {
    expect(() => r({ connection: 'redis://h', profile: 'p2' })).toThrow(/Give only one of --profile, a connection argument/);
    expect(() => r({ file: 'a.jsonl', profile: 'p2' })).toThrow(/Give only one of --file, --profile/);
  });

  it('environment defaults: REDIS_URL or AMQP_URL; both is ambiguous; AWS_REGION only when neither', () => {
    expect(r({}, { REDIS_URL: 'redis://r:6379' })).toMatchObject({ source: 'env', label: 'redis://r:6379 (from REDIS_URL)' });
    expect(r({}, { AMQP_URL: 'amqp://a', RABBITMQ_MANAGEMENT_URL: 'http://m:15672' }).config).toMatchObject({ kind: 'rabbitmq', managementUrl: 'http://m:15672' });
    expect(() => r({}, { REDIS_URL: 'redis://r', AMQP_URL: 'amqp://a' })).toThrow(/ambiguous/);
    expect(r({}, { REDIS_URL: 'redis://r', AWS_REGION: 'us-east-1' }).config.kind).toBe('redis');
    expect(r({}, { AWS_DEFAULT_REGION: 'us-west-2', AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:4566' }).config).toEqual({ kind: 'sqs', region: 'us-west-2', endpoint: 'http://127.0.0.1:4566' });
    expect(() => r({}, { REDIS_URL: 'amqp://wrong' })).toThrow(/REDIS_URL must be a redis/);
    expect(() => r({}, {})).toThrow(/No connection given/);
  });

  it('errors never echo a password', () => {
    try {
      r({ connection: 'redis://u:hunter2@h:6379/notanumber' });
      expect.unreachable();
    } catch (e) {
      expect((e as Error).message).not.toContain('hunter2');
      expect((e as { code: string }).code).toBe('INVALID_INPUT');
    }
  });
});

describe('looksLikeConnection', () => {
  it('is true for URLs and snapshot paths, false for queue names', () => {
    for (const s of ['redis://h', 'amqps://h', 'sqs://us-east-1', 'file:///x', 'a/b.jsonl', 'x.JSONL.GZ']) expect(looksLikeConnection(s), s).toBe(true);
    for (const s of ['orders', 'orders.dlq', 'bullmq:payments', 'rabbitmq:%2F/orders.work', 'payments.fifo']) expect(looksLikeConnection(s), s).toBe(false);
  });
});

describe('projectFileNote', () => {
  const dir = join('/repo', 'app');
  const has = (...names: string[]) => (p: string) => names.some((n) => p === join(dir, n));

  it('names the file used and the sibling it ignores (JSON beside YAML: the JSON wins)', () => {
    expect(projectFileNote(join(dir, 'queuescope.config.json'), has('queuescope.config.json', 'queuescope.config.yaml'))).toBe(
      `note: using ${join(dir, 'queuescope.config.json')}; ${join(dir, 'queuescope.config.yaml')} in the same folder is ignored (the first of queuescope.config.json, queuescope.config.yaml, queuescope.config.yml wins)`,
    );
    expect(projectFileNote(join(dir, 'queuescope.config.yaml'), has('queuescope.config.yaml', 'queuescope.config.yml'))).toMatch(/queuescope\.config\.yml in the same folder is ignored/);
    expect(projectFileNote(join(dir, 'queuescope.config.json'), has('queuescope.config.json', 'queuescope.config.yaml', 'queuescope.config.yml'))).toMatch(/yaml and .*yml in the same folder are ignored/);
  });

  it('says nothing for a lone file or when no file was found', () => {
    expect(projectFileNote(join(dir, 'queuescope.config.yaml'), has('queuescope.config.yaml'))).toBeNull();
    expect(projectFileNote(null, () => true)).toBeNull();
  });
});
