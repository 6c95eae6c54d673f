import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AMQP_URL, uniqueName } from './env';
import { runCli } from './fixtures/run-cli';

/**
 * A client-side redrive starts with a dry run that holds every message it examined and then
 * requeues them. The run that follows is bounded by the DLQ's ready count when it starts, so it
 * must not start before the requeued messages are counted again: with a fixed 2 s wait, a DLQ of
 * 10,000 persistent messages was moved ~4,000 at a time, exit 0, the rest left behind.
 */
describe('RabbitMQ redrive after its dry run (real broker)', () => {
  let conn: ChannelModel;
  let ch: ConfirmChannel;
  let dir: string;
  const N = 10_000;

  beforeAll(async () => {
    conn = await amqp.connect(AMQP_URL);
    ch = await conn.createConfirmChannel();
    dir = await mkdtemp(join(tmpdir(), 'qs-settle-'));
  });
  afterAll(async () => {
    await conn.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it(`moves all ${N} persistent messages in one run`, { timeout: 180_000 }, async () => {
    const dlq = uniqueName('settle-dlq');
    const target = uniqueName('settle-work');
    try {
      await ch.assertQueue(dlq, { durable: true });
      await ch.assertQueue(target, { durable: true });
      for (let k = 0; k < N; k++) {
        if (!ch.sendToQueue(dlq, Buffer.from(JSON.stringify({ k })), { persistent: true, messageId: `m-${String(k)}`, headers: { 'x-last-error': 'HTTP 503' } })) await new Promise((r) => ch.once('drain', r));
        if (k % 2000 === 1999) await ch.waitForConfirms();
      }
      await ch.waitForConfirms();
      const run = await runCli(dir, ['redrive', AMQP_URL, dlq, '--to', target, '--yes', '--json', '--batch', '250', '--no-native']);
      expect(run.code, run.stderr.slice(-800)).toBe(0);
      const result = (JSON.parse(run.stdout) as { result: { moved: number; notes: string[] } }).result;
      expect(result.moved).toBe(N);
      // The CLI's note for a run that examined fewer messages than its dry run (exit 7).
      expect(result.notes.join(' ')).not.toMatch(/the run examined \d+ messages, the dry run/);
      expect((await ch.checkQueue(dlq)).messageCount).toBe(0);
      expect((await ch.checkQueue(target)).messageCount).toBe(N);
    } finally {
      await ch.deleteQueue(dlq).catch(() => undefined);
      await ch.deleteQueue(target).catch(() => undefined);
    }
  });
});
