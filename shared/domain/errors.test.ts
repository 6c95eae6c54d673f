import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { QueuescopeError, redactSecrets, redactValue, toErrorInfo } from './errors';

describe('redactSecrets', () => {
  it('removes URL passwords but keeps the user', () => {
    expect(redactSecrets('connect amqp://guest:guest@h:5672/ failed')).toBe('connect amqp://guest:***@h:5672/ failed');
    expect(redactSecrets('redis://:onlypass@h')).toBe('redis://:***@h');
  });
  it('removes password=… pairs and AWS-secret-shaped strings', () => {
    expect(redactSecrets('password=hunter2&user=x')).toBe('password=***&user=x');
    expect(redactSecrets('{"secretAccessKey":"abc"}')).toBe('{"secretAccessKey":"***"}');
    expect(redactSecrets('key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY here')).toBe('key *** here');
  });
  it('a password embedded in any URL never survives', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9]{1,12}$/), fc.stringMatching(/^[A-Za-z0-9!$%^*]{6,20}$/), (user, pass) => {
        const out = redactSecrets(`error at amqp://${user}:${pass}@host:5672/vhost`);
        expect(out).not.toContain(`:${pass}@`);
      }),
    );
  });
});

describe('QueuescopeError', () => {
  it('redacts message and details on construction', () => {
    const e = new QueuescopeError('AUTH_FAILED', 'login to amqp://guest:topsecret@h failed', { password: 'topsecret', url: 'redis://a:b@h' });
    expect(e.message).not.toContain('topsecret');
    expect(e.toInfo()).toEqual({ code: 'AUTH_FAILED', message: 'login to amqp://guest:***@h failed', details: { password: '***', url: 'redis://a:***@h' } });
  });
  it('toErrorInfo maps unknown errors to INTERNAL and aborts to CANCELLED', () => {
    expect(toErrorInfo(new Error('boom redis://x:y@h'))).toEqual({ code: 'INTERNAL', message: 'boom redis://x:***@h' });
    expect(toErrorInfo(Object.assign(new Error('aborted'), { name: 'AbortError' })).code).toBe('CANCELLED');
    expect(toErrorInfo('plain').code).toBe('INTERNAL');
  });
  it('redactValue bounds depth', () => {
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 20; i++) deep = (deep.next = {});
    expect(JSON.stringify(redactValue(root))).toContain('[…]');
  });
});
