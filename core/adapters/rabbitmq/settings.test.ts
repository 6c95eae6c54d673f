import { describe, expect, it } from 'vitest';
import { QueuescopeError } from '../../../shared/domain';
import { resolveRabbitmqSettings } from './settings';

const base = { kind: 'rabbitmq' as const };

describe('resolveRabbitmqSettings', () => {
  it('reads host, port, vhost and login from the URL, with Nagle off', () => {
    const s = resolveRabbitmqSettings({ ...base, url: 'amqp://app:s%40cret@mq.local:5673/prod%2Fa' });
    expect(s).toMatchObject({ tls: false, host: 'mq.local', port: 5673, vhost: 'prod/a', username: 'app', password: 's@cret' });
    expect(s.socket.noDelay).toBe(true);
    expect(s.managementBase.toString()).toBe('http://mq.local:15672/');
    expect(s.label).not.toContain('s%40cret');
  });

  it('defaults: vhost "/", guest/guest, amqps → port 5671 and https management on 15671', () => {
    expect(resolveRabbitmqSettings({ ...base, url: 'amqp://h' })).toMatchObject({ vhost: '/', username: 'guest', password: 'guest', port: 5672 });
    expect(resolveRabbitmqSettings({ ...base, url: 'amqp://h/' }).vhost).toBe('/');
    expect(resolveRabbitmqSettings({ ...base, url: 'amqp://h/%2F' }).vhost).toBe('/');
    const tls = resolveRabbitmqSettings({ ...base, url: 'amqps://h', tls: { rejectUnauthorized: false } });
    expect(tls).toMatchObject({ tls: true, port: 5671 });
    expect(tls.socket.rejectUnauthorized).toBe(false);
    expect(tls.managementBase.toString()).toBe('https://h:15671/');
  });

  it('lets config fields override the URL and keeps the vhost exact for amqplib', () => {
    const s = resolveRabbitmqSettings({ ...base, url: 'amqp://a:b@h/one', vhost: '100%', username: 'u', password: 'p', managementUrl: 'http://m:8080/rabbit/api/' });
    expect(s).toMatchObject({ vhost: '100%', username: 'u', password: 'p', managementUser: 'u', managementPassword: 'p' });
    // amqplib runs querystring.unescape on the vhost: the encoded form must unescape to the exact name.
    expect(decodeURIComponent(s.connect.vhost ?? '')).toBe('100%');
    expect(s.managementBase.toString()).toBe('http://m:8080/rabbit');
  });

  it('takes management credentials from the management URL and strips them', () => {
    const s = resolveRabbitmqSettings({ ...base, url: 'amqp://a:b@h', managementUrl: 'http://admin:pw@h:15672' });
    expect(s).toMatchObject({ managementUser: 'admin', managementPassword: 'pw' });
    expect(s.managementBase.toString()).toBe('http://h:15672/');
  });

  it.each(['redis://h', 'not a url', 'amqp://h/a/b', 'amqp://h/%ZZ', 'amqp://h?heartbeat=abc'])('rejects %s as INVALID_INPUT', (url) => {
    expect(() => resolveRabbitmqSettings({ ...base, url })).toThrow(QueuescopeError);
  });
});
