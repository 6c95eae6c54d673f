import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, uniqueName } from './env';
import { runCli } from './fixtures/run-cli';

/**
 * A run keeps its last 20 per-message errors (the operation's list), and the text output listed
 * those 20 with nothing said of the others: 25 failed, 20 lines, as if that were all (fresh-user
 * pass: 71 taken by another client, 20 lines). It now says how many are not listed.
 */
let dir = '';
const native = new Redis(REDIS_URL);
const dlq = uniqueName('errors-listed-dlq');
const target = uniqueName('errors-listed-work');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-errors-listed-'));
  // 25 bodies over a 10-byte read limit (they cannot move), then one that can.
  await native.rpush(dlq, ...Array.from({ length: 25 }, (_, i) => JSON.stringify({ orderId: `B-${String(i)}`, pad: 'x'.repeat(40) })), '{}');
});

afterAll(async () => {
  await native.del(dlq, target);
  native.disconnect();
  await rm(dir, { recursive: true, force: true });
});

describe('redrive text output: failed messages beyond the listed ones', () => {
  it('lists the last 20 and says how many more are not listed; exit 7', async () => {
    const r = await runCli(dir, ['redrive', REDIS_URL, `list:${dlq}`, '--to', `list:${target}`, '--max-body-bytes', '10', '--yes']);
    expect(r.code, r.stderr).toBe(7);
    const listed = r.stderr.split('\n').filter((l) => /^ {2}Message #\d+~[0-9a-f]{8} stayed in the DLQ: /.test(l));
    expect(listed).toHaveLength(20);
    // The id once per line (it read "Message #3~… stayed in the DLQ: Message #3~… was not moved: its body …").
    for (const l of listed) expect(l).toMatch(/^ {2}Message (#\d+~[0-9a-f]{8}) stayed in the DLQ: its body \(\d+ bytes\) is larger than the read limit of 10 bytes/);
    expect(r.stderr).toContain('  … and 5 more messages not listed (the last 20 are shown; the counts above include all)');
    expect(await native.lrange(target, 0, -1)).toEqual(['{}']);
    expect(await native.llen(dlq)).toBe(25);
  });
});
