import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bullmqUnreadLiveJobs } from '../../core/cli/commands/inspect';
import type { InspectReport } from '../../shared/api/inspect';
import { REDIS_URL, uniqueName } from './env';
import { runCli, type CliRun } from './fixtures/run-cli';

/**
 * `queuescope inspect` of a live BullMQ queue without `--state` reads its waiting jobs only (the
 * adapter's default). The report names that state, and stderr names the delayed / prioritized jobs
 * that read left out (they will run too), so a clean report or `--fail-on` pass is not taken for the
 * whole queue's.
 */
let dir: string;
const run = (argv: string[]): Promise<CliRun> => runCli(dir, argv);

const name = uniqueName('insp-bq-state');
let q: Queue;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-inspect-bq-'));
  q = new Queue(name, { connection: { url: REDIS_URL } });
  await q.add('charge', { orderId: 'W-1', operation: 'charge', idempotencyKey: 'W-1:charge' });
  // Delayed an hour, and it embeds a whole mutable order (flag).
  const order = { id: 'W-2', status: 'paid', customer: { id: 'c-1', email: 'buyer@example.com', shippingAddress: { line1: '1 Harbour St', city: 'Lisbon' } }, items: [{ sku: 'S-1', qty: 2 }], updatedAt: '2026-11-29T10:00:00Z' };
  await q.add('sync', { operation: 'sync', order }, { delay: 3_600_000 });
  await q.add('sync', { operation: 'sync', order: { ...order, id: 'W-3' } }, { delay: 3_600_000 });
  await q.add('refund', { orderId: 'W-4', operation: 'refund' }, { priority: 5 });
}, 30_000);

afterAll(async () => {
  await q.obliterate({ force: true }).catch(() => undefined);
  await q.close();
  await rm(dir, { recursive: true, force: true });
});

describe('inspect (live BullMQ) without --state', () => {
  it('names the state read and the delayed / prioritized jobs it left out', async () => {
    const r = await run(['inspect', REDIS_URL, name]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Redelivery safety of ${name} (bullmq, state waiting): 1 message analysed`);
    expect(r.stderr).toContain(`note: ${name}: read its waiting jobs (the default --state); 1 prioritized, 2 delayed jobs were not read and will run too: --state prioritized, --state delayed check them.\n`);
    const json = await run(['inspect', REDIS_URL, name, '--json']);
    expect((JSON.parse(json.stdout) as InspectReport).state).toBe('waiting');
    // The flagged payloads are in the delayed jobs: --state delayed reads them (and names no other state).
    const delayed = await run(['inspect', REDIS_URL, name, '--state', 'delayed', '--fail-on', 'flag']);
    expect(delayed.code).toBe(6);
    expect(delayed.stdout).toContain('(bullmq, state delayed): 2 messages analysed');
    expect(delayed.stderr).not.toContain('the default --state');
  });

  it('bullmqUnreadLiveJobs: nothing to say when only waiting, failed or completed jobs exist; singular wording', () => {
    expect(bullmqUnreadLiveJobs('q', { waiting: 4, failed: 3, completed: 9, delayed: 0 })).toBeNull();
    expect(bullmqUnreadLiveJobs('q', { waiting: 0, delayed: 1 })).toBe('q: read its waiting jobs (the default --state); 1 delayed job was not read and will run too: --state delayed checks it.');
  });
});
