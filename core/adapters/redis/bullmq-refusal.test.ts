import { describe, expect, it } from 'vitest';
import { isRefusal } from './bullmq';

/** A Redis error reply as ioredis hands it over (redis-errors ReplyError). */
function reply(message: string): Error {
  const e = new Error(message);
  e.name = 'ReplyError';
  return e;
}

describe('isRefusal: Redis refusing a command as such (fallback to plain reads) vs. other errors', () => {
  it.each([
    // Redis 7.0.15, ACL user ~myapp:payments:* +@all running SORT_RO … GET <pattern>
    'ERR GET option of SORT denied due to insufficient ACL permissions.',
    'ERR BY option of SORT denied due to insufficient ACL permissions.',
    "NOPERM this user has no permissions to run the 'sort_ro' command",
    'NOPERM this user has no permissions to access one of the keys used as arguments',
    'NOPERM User u has no permissions to run the \'sort_ro\' command',
    "ERR unknown command 'SORT_RO', with args beginning with: 'myapp:payments:failed' ",
    "ERR This Redis command is not allowed from script script: ...",
  ])('%s', (m) => {
    expect(isRefusal(reply(m))).toBe(true);
  });

  it.each([
    'WRONGTYPE Operation against a key holding the wrong kind of value',
    'ERR syntax error',
    'OOM command not allowed when used memory > \'maxmemory\'.',
    'LOADING Redis is loading the dataset in memory',
  ])('not: %s', (m) => {
    expect(isRefusal(reply(m))).toBe(false);
  });

  it('only Redis replies, not connection errors with the same words', () => {
    expect(isRefusal(new Error('NOPERM this user has no permissions'))).toBe(false);
    expect(isRefusal(null)).toBe(false);
  });
});
