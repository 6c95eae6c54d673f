import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../core/cli/exit-codes';
import { main, type CliIo } from '../../core/cli/main';
import { AuditLog } from '../../core/services/audit-log';
import { privateRedis } from './fixtures/private-redis';

/**
 * A broker restart during a CLI redrive, through the engine: a private redis-server (AOF,
 * appendfsync always; never the shared one) is SIGKILLed and started again while `queuescope
 * redrive` moves a 5,000-entry stream. The run ends `failed` with exact counts (printed, and in the
 * audit log), nothing is lost, and running the same command again completes.
 */
describe('Redis restart during a CLI redrive (private redis-server)', () => {
  let dir = '';
  let home = '';
  const { url, start, waitUp, kill } = privateRedis(() => dir);
  async function cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    let stdout = '';
    let stderr = '';
    const io: CliIo = { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) }, env: { QUEUESCOPE_HOME: home } };
    return { code: await main(argv, io), stdout, stderr };
  }

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'qs-rd-engine-restart-'));
    home = mkdtempSync(join(tmpdir(), 'qs-rd-engine-home-'));
    start();
  });
  afterAll(async () => {
    await kill();
    rmSync(dir, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  });

  it('the run fails with exact counts, the audit log says so, a second run completes, nothing is lost', { timeout: 120_000 }, async () => {
    let r = await waitUp();
    const N = 5000;
    for (let i = 0; i < N; i += 1000) {
      const p = r.pipeline();
      for (let k = i; k < i + 1000; k++) p.xadd('dlq', '*', 'body', JSON.stringify({ k }), 'x-last-error', 'ECONNRESET');
      await p.exec();
    }
    const marker = await r.xadd('work', '*', 'x', '1');
    if (marker !== null) await r.xdel('work', marker);

    const args = ['redrive', url, 'stream:dlq', '--to', 'stream:work', '--yes', '--json', '--batch', '100', '--rate', '2500'];
    const running = cli(args);
    // Restart Redis once the run has moved some messages.
    for (let i = 0; i < 200 && (await r.xlen('work')) < 500; i++) await new Promise((res) => setTimeout(res, 20));
    r.disconnect();
    await kill();
    start();
    const first = await running;
    r = await waitUp();
    expect(first.code, first.stderr).toBe(EXIT.CONNECTION);
    const out = JSON.parse(first.stdout) as { status: string; result: { moved: number; failed: number; examined: number; backupPath: string } };
    expect(out.status).toBe('failed');
    const inDlq = await r.xlen('dlq');
    const inTarget = await r.xlen('work');
    expect(inDlq + inTarget).toBe(N); // nothing lost, no duplicate (a stream batch moves in one script)
    expect(out.result.moved).toBeGreaterThan(0);
    expect(out.result.moved).toBeLessThan(N);
    // A batch whose script outcome was unknown is counted failed; it either committed or not.
    expect(inTarget - out.result.moved).toBeGreaterThanOrEqual(0);
    expect(inTarget - out.result.moved).toBeLessThanOrEqual(out.result.failed);
    const entry = (await new AuditLog({ configDir: home }).read({ limit: 1 })).entries[0];
    expect(entry).toMatchObject({ action: 'redrive', status: 'failed', counts: { moved: out.result.moved, failed: out.result.failed } });
    expect(entry?.details.error).toMatchObject({ code: 'HOST_UNREACHABLE' });

    const second = await cli(args.filter((a, i) => a !== '--rate' && args[i - 1] !== '--rate'));
    expect(second.code, second.stderr).toBe(0);
    const out2 = JSON.parse(second.stdout) as { status: string; result: { moved: number } };
    expect(out2.result.moved).toBe(inDlq);
    expect([await r.xlen('dlq'), await r.xlen('work')]).toEqual([0, N]);
    r.disconnect();
  });
});
