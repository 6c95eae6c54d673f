import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type CliIo } from '../../core/cli/main';
import { EXIT } from '../../core/cli/exit-codes';
import type { InspectReport } from '../../shared/api/inspect';
import { REDIS_URL, uniqueName } from './env';

/**
 * Redis stream pending entries whose entries were trimmed (XTRIM) while pending: the data is gone.
 * `inspect` must not call them harmless empty bodies (verdict ok, exit 0 under --fail-on flag), as
 * a fresh-user pass found; they are flagged `entry-deleted`.
 */

const stream = uniqueName('insp-trim');
let redis: Redis;
let dir: string;

beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  dir = await mkdtemp(join(tmpdir(), 'qs-insp-trim-'));
  for (let i = 0; i < 10; i++) await redis.xadd(stream, '*', 'body', JSON.stringify({ orderId: `A-${i}` }));
  await redis.xgroup('CREATE', stream, 'billing', '0');
  // A consumer reads all 10 (pending), then the stream is trimmed to its newest 4.
  await redis.xreadgroup('GROUP', 'billing', 'worker-1', 'COUNT', 10, 'STREAMS', stream, '>');
  await redis.xtrim(stream, 'MAXLEN', 4);
});

afterAll(async () => {
  await redis.del(stream);
  redis.disconnect();
  await rm(dir, { recursive: true, force: true });
});

describe('inspect of stream pending entries whose entries were trimmed', () => {
  it('flags the 6 lost entries (entry-deleted) and exits 6 under --fail-on flag', async () => {
    let stdout = '';
    let stderr = '';
    const io: CliIo = { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) }, env: { QUEUESCOPE_HOME: join(dir, 'home') }, cwd: dir };
    const code = await main(['inspect', REDIS_URL, `stream:${stream}`, '--state', 'pending:billing', '--fail-on', 'flag', '--json'], io);
    expect(code, stderr).toBe(EXIT.FINDINGS);
    const r = JSON.parse(stdout) as InspectReport;
    expect(r.summary.flagged).toBe(6);
    const lost = r.messages.filter((m) => m.verdict === 'flag');
    expect(lost).toHaveLength(6);
    expect(r.messages.filter((m) => m.verdict === 'ok')).toHaveLength(4);
  });
});
