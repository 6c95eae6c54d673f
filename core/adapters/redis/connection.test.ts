import { describe, expect, it } from 'vitest';
import { mapRedisError, resolveRedisOptions } from './connection';

const cfg = (url: string, extra: Record<string, unknown> = {}) => ({ kind: 'redis' as const, url, ...extra });

describe('resolveRedisOptions', () => {
  it('reads host, port, db, user and password from the URL', () => {
    const { endpoint, options } = resolveRedisOptions(cfg('redis://app:s%40cret@cache.local:6380/3'));
    expect(endpoint).toEqual({ host: 'cache.local', port: 6380, db: 3, tls: false, username: 'app' });
    expect(options).toMatchObject({ host: 'cache.local', port: 6380, db: 3, username: 'app', password: 's@cret', lazyConnect: true, connectTimeout: 5000, maxRetriesPerRequest: 1 });
    expect(options.tls).toBeUndefined();
  });

  it('lets config fields override the URL', () => {
    const { options } = resolveRedisOptions(cfg('redis://app:old@h/1', { username: 'ops', password: 'new', db: 5 }));
    expect(options).toMatchObject({ username: 'ops', password: 'new', db: 5 });
  });

  it('turns TLS on for rediss:// with SNI from the host name, tuned by config.tls', () => {
    expect(resolveRedisOptions(cfg('rediss://redis.example.com')).options.tls).toEqual({ rejectUnauthorized: true, servername: 'redis.example.com' });
    expect(resolveRedisOptions(cfg('rediss://10.0.0.1:6380', { tls: { rejectUnauthorized: false, ca: 'PEM' } })).options.tls).toEqual({ rejectUnauthorized: false, ca: 'PEM' });
    expect(resolveRedisOptions(cfg('redis://h', { tls: { rejectUnauthorized: true } })).options.tls).toBeUndefined();
  });

  it('rejects other schemes and bad paths without echoing the password', () => {
    expect(() => resolveRedisOptions(cfg('http://u:hunter2@h'))).toThrow(/redis:\/\//);
    try {
      resolveRedisOptions(cfg('redis://u:hunter2@h/x'));
      throw new Error('no error');
    } catch (e) {
      expect((e as Error).message).not.toContain('hunter2');
    }
  });
});

describe('mapRedisError', () => {
  const ep = { host: 'h', port: 6379, db: 0, tls: false, username: 'app' };
  const code = (e: unknown) => mapRedisError(e, ep, 'x').code;
  it('maps causes to codes', () => {
    expect(code(Object.assign(new Error('connect ECONNREFUSED 1.2.3.4:6379'), { code: 'ECONNREFUSED' }))).toBe('HOST_UNREACHABLE');
    expect(code(Object.assign(new Error('getaddrinfo ENOTFOUND h'), { code: 'ENOTFOUND' }))).toBe('HOST_UNREACHABLE');
    expect(code(Object.assign(new Error('connect ETIMEDOUT'), { code: 'ETIMEDOUT' }))).toBe('HOST_UNREACHABLE');
    expect(code(Object.assign(new Error('WRONGPASS invalid username-password pair or user is disabled.'), { name: 'ReplyError' }))).toBe('AUTH_FAILED');
    expect(code(new Error('NOAUTH Authentication required.'))).toBe('AUTH_FAILED');
    expect(code(new Error("NOPERM this user has no permissions to run the 'scan' command"))).toBe('PERMISSION_DENIED');
    // A read-only user's transaction (the listing's MULTI/EXEC): the NOPERM is inside the EXECABORT.
    const tx = mapRedisError(Object.assign(new Error("EXECABORT Transaction discarded because of: NOPERM this user has no permissions to run the 'exec' command"), { name: 'ReplyError' }), ep, 'Listing Redis queues');
    expect(tx.code).toBe('PERMISSION_DENIED');
    expect(tx.message).toContain("no permissions to run the 'exec' command");
    expect(tx.message).toContain('+multi +exec');
    expect(code(Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }))).toBe('TLS_ERROR');
    expect(code(Object.assign(new Error('wrong version number'), { code: 'ERR_SSL_WRONG_VERSION_NUMBER' }))).toBe('TLS_ERROR');
    expect(code(new Error('Command timed out'))).toBe('TIMEOUT');
    expect(code(new Error('Connection is closed.'))).toBe('HOST_UNREACHABLE');
    expect(code(Object.assign(new Error('ERR something'), { name: 'ReplyError' }))).toBe('BROKER_ERROR');
  });
});
