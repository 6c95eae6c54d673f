import { describe, expect, it } from 'vitest';
import { errorHint, errorTitle } from './errors';

describe('errorHint for a failed login', () => {
  it('names the credentials of the broker being tested', () => {
    const auth = { code: 'AUTH_FAILED' as const, message: 'x' };
    expect(errorHint(auth, 'rabbitmq')).toBe('Check the user name and password.');
    expect(errorHint(auth, 'redis')).toMatch(/user name .*and password/);
    expect(errorHint(auth, 'sqs')).toBe('Check the access key ID and secret access key, or the AWS profile.');
    for (const kind of ['rabbitmq', 'redis'] as const) expect(errorHint(auth, kind)).not.toMatch(/AWS|access key/);
  });

  it('without a broker kind, infers it from the error details (as the adapters write them)', () => {
    expect(errorHint({ code: 'AUTH_FAILED', details: { action: 'ListQueues', endpoint: 'http://x', region: 'us-east-1', reason: 'bad-signature' } })).toMatch(/access key/);
    expect(errorHint({ code: 'AUTH_FAILED', details: { user: 'guest', stage: 'login' } })).toBe('Check the user name and password.');
    expect(errorHint({ code: 'AUTH_FAILED' })).toBe('Check the user name and password.');
  });

  it('other codes keep their hint and title', () => {
    expect(errorHint({ code: 'HOST_UNREACHABLE' }, 'sqs')).toMatch(/host name and port/);
    expect(errorTitle({ code: 'AUTH_FAILED' })).toBe('Authentication failed');
  });
});
