import { describe, expect, it } from 'vitest';
import { EMPTY_FORM, buildConfig, derivedManagementUrl, formFromProfile, suggestName, vhostFromUrl, type ConnectionForm } from './connection-form';

const form = (patch: (f: ConnectionForm) => void): ConnectionForm => {
  const f = structuredClone(EMPTY_FORM);
  patch(f);
  return f;
};

describe('connection form', () => {
  it('builds a Redis config, omitting empty fields', () => {
    const r = buildConfig(form((f) => { f.redis.password = 's3cret'; f.redis.db = '2'; }));
    expect(r).toEqual({ ok: true, config: { kind: 'redis', url: 'redis://127.0.0.1:6379', password: 's3cret', db: 2 } });
  });

  it('names the Redis fields that are wrong', () => {
    const r = buildConfig(form((f) => { f.redis.url = 'http://x'; f.redis.db = 'two'; }));
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.errors.url).toMatch(/redis:\/\//);
      expect(r.errors.db).toMatch(/whole number/);
    }
  });

  it('turns TLS on for rediss:// and keeps certificate verification unless unticked', () => {
    const r = buildConfig(form((f) => { f.redis.url = 'rediss://cache.example:6380'; }));
    expect(r.ok && r.config.kind === 'redis' && r.config.tls).toEqual({ rejectUnauthorized: true });
    const r2 = buildConfig(form((f) => { f.redis.tls = true; f.redis.tlsVerify = false; }));
    expect(r2.ok && r2.config.kind === 'redis' && r2.config.tls).toEqual({ rejectUnauthorized: false });
  });

  it('builds RabbitMQ with derived defaults left out', () => {
    const r = buildConfig(form((f) => { f.kind = 'rabbitmq'; f.rabbitmq.password = 'guest'; }));
    expect(r).toEqual({ ok: true, config: { kind: 'rabbitmq', url: 'amqp://127.0.0.1:5672', username: 'guest', password: 'guest' } });
    const bad = buildConfig(form((f) => { f.kind = 'rabbitmq'; f.rabbitmq.managementUrl = 'ftp://x'; }));
    expect(!bad.ok && bad.errors.managementUrl).toBeTruthy();
  });

  it('derives the management URL and vhost from the AMQP URL', () => {
    expect(derivedManagementUrl('amqp://rabbit.internal:5672/%2F')).toBe('http://rabbit.internal:15672');
    expect(derivedManagementUrl('amqps://rabbit.internal')).toBe('https://rabbit.internal:15671');
    expect(derivedManagementUrl('nonsense')).toBeNull();
    expect(vhostFromUrl('amqp://h:5672/%2F')).toBe('/');
    expect(vhostFromUrl('amqp://h:5672/orders')).toBe('orders');
    expect(vhostFromUrl('amqp://h:5672')).toBe('/');
  });

  it('builds SQS per credential mode and validates region and endpoint', () => {
    expect(buildConfig(form((f) => { f.kind = 'sqs'; }))).toEqual({ ok: true, config: { kind: 'sqs', region: 'us-east-1' } });
    const keys = buildConfig(form((f) => { f.kind = 'sqs'; f.sqs.auth = 'keys'; f.sqs.accessKeyId = 'AKIA1'; f.sqs.secretAccessKey = 'sec'; f.sqs.profile = 'ignored'; f.sqs.endpoint = 'http://127.0.0.1:4566'; }));
    expect(keys).toEqual({ ok: true, config: { kind: 'sqs', region: 'us-east-1', endpoint: 'http://127.0.0.1:4566', accessKeyId: 'AKIA1', secretAccessKey: 'sec' } });
    const bad = buildConfig(form((f) => { f.kind = 'sqs'; f.sqs.region = 'Mars'; f.sqs.endpoint = 'nope'; f.sqs.auth = 'profile'; }));
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(Object.keys(bad.errors).sort()).toEqual(['endpoint', 'profile', 'region']);
  });

  it('fills the form from a saved profile without secrets, and round-trips', () => {
    const config = { kind: 'rabbitmq' as const, url: 'amqp://h:5672', vhost: 'orders', username: 'app', tls: { rejectUnauthorized: false } };
    const f = formFromProfile({ id: 'p1', name: 'Prod', config, hasSecret: true, builtIn: false });
    expect(f.name).toBe('Prod');
    expect(f.rabbitmq.password).toBe('');
    expect(buildConfig(f)).toEqual({ ok: true, config });
  });

  it('suggests a name from the host', () => {
    expect(suggestName({ kind: 'redis', url: 'redis://cache:6379' })).toBe('Redis cache:6379');
    expect(suggestName({ kind: 'sqs', region: 'eu-west-1', endpoint: 'http://127.0.0.1:4566' })).toBe('SQS eu-west-1 (127.0.0.1:4566)');
  });
});
