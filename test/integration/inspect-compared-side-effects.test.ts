import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConfirmChannel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InspectReport } from '../../shared/api/inspect';
import { AMQP_URL, uniqueName } from './env';
import { runCli, type CliRun } from './fixtures/run-cli';
import { closeNative, nativeChannel, nativeCount, nativeDeleteQueue } from './rabbitmq-native';

/**
 * `queuescope inspect` of a RabbitMQ work queue also reads its DLQ to compare duplicate keys, and
 * that read is a delivery too (the DLQ's messages are held unacked, then requeued redelivered).
 * The side effects of that read are reported with the DLQ named, not only those of the work queue.
 */

let dir: string;
let ch: ConfirmChannel;
const run = (argv: string[]): Promise<CliRun> => runCli(dir, argv);

const work = uniqueName('insp-se-work');
const dlq = uniqueName('insp-se-dlq');
const dlx = uniqueName('insp-se-dlx');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-inspect-se-'));
  ch = await nativeChannel();
  await ch.assertExchange(dlx, 'direct', { durable: false, autoDelete: false });
  await ch.assertQueue(dlq, { durable: false });
  await ch.bindQueue(dlq, dlx, dlq);
  await ch.assertQueue(work, { durable: false, arguments: { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': dlq } });
  // Two messages dead-lettered by the broker, then one in the work queue.
  for (const id of ['S-1', 'S-2']) ch.sendToQueue(work, Buffer.from(JSON.stringify({ orderId: id })), { messageId: `${id}:charge` });
  await ch.waitForConfirms();
  for (let i = 0; i < 2; i++) {
    const m = await ch.get(work, { noAck: false });
    if (m === false) throw new Error('a message did not arrive');
    ch.reject(m, false);
  }
  for (let i = 0; i < 100 && (await nativeCount(dlq)) < 2; i++) await new Promise((r) => setTimeout(r, 20));
  ch.sendToQueue(work, Buffer.from(JSON.stringify({ orderId: 'S-3' })), { messageId: 'S-3:charge' });
  await ch.waitForConfirms();
}, 30_000);

afterAll(async () => {
  for (const q of [work, dlq]) await nativeDeleteQueue(q);
  await ch.deleteExchange(dlx).catch(() => undefined);
  await ch.close().catch(() => undefined);
  await closeNative();
  await rm(dir, { recursive: true, force: true });
});

describe('inspect: side effects of reading the compared DLQ', () => {
  it('--json: sideEffects name the DLQ read for the comparison and what its read did', async () => {
    const r = await run(['inspect', AMQP_URL, work, '--json']);
    expect(r.code).toBe(0);
    const rep = JSON.parse(r.stdout) as InspectReport;
    expect(rep.analysed).toBe(1);
    expect(rep.comparisons.find((c) => c.relation === 'dead-letter-target')?.read).toBe(2);
    expect(rep.sideEffects).toContain('Held 1 message unacknowledged while reading, then requeued it.');
    expect(rep.sideEffects).toContain(`${dlq} (read for the duplicate comparison): Held 2 messages unacknowledged while reading, then requeued them.`);
    expect(rep.sideEffects.filter((s) => s.startsWith(`${dlq} (read for the duplicate comparison): `) && s.includes('redelivered=true'))).toHaveLength(1);
  });

  it('text: "side effects of reading" lists the DLQ too; --no-dead-letter reads (and lists) only the queue', async () => {
    const r = await run(['inspect', AMQP_URL, work]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`  - ${dlq} (read for the duplicate comparison): Held 2 messages unacknowledged while reading, then requeued them.\n`);
    const alone = await run(['inspect', AMQP_URL, work, '--no-dead-letter', '--json']);
    expect(alone.code).toBe(0);
    const rep = JSON.parse(alone.stdout) as InspectReport;
    expect(rep.sideEffects.some((s) => s.includes(dlq))).toBe(false);
    expect(rep.sideEffects).toContain('Held 1 message unacknowledged while reading, then requeued it.');
  });
});
