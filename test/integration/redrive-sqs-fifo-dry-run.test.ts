import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import type { RedrivePlan } from '../../shared/redrive/types';
import { SQS_ALT_ENDPOINT, SQS_ENDPOINT, SQS_REGION, uniqueName } from './env';
import { runCliMerged } from './fixtures/run-cli';
import { drainFifo, sqsResources, useSqsTestCredentials } from './fixtures/sqs-resources';

/**
 * The dry run of a FIFO SQS DLQ with several messages per message group. SQS returns no later
 * message of a group while an earlier one is in flight; a dry run holds what it reads and deletes
 * nothing, so it cannot see past the first message(s) of each group without changing the DLQ.
 * Measured: fauxqs returns one message per group per receive (a dry run of 3 groups × 4 sees 3);
 * local-aws-sqs returns later messages of a group in flight too (it sees all 12).
 * Old code: "Dry run …: 3 messages examined … would move 3" with nothing saying 9 were not seen.
 */

const { client, createQueue } = sqsResources();

useSqsTestCredentials();
const cli = runCliMerged;

/** A FIFO DLQ with 3 groups × 4 messages (g0-0, g1-0, g2-0, g0-1, …) and a FIFO target. */
async function fifoDlq(c: SQSClient, label: string) {
  const base = uniqueName(label);
  const dlq = await createQueue(c, `${base}-dlq.fifo`, { FifoQueue: 'true' });
  const target = await createQueue(c, `${base}.fifo`, { FifoQueue: 'true' });
  for (let i = 0; i < 12; i++) {
    await c.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: `g${i % 3}-${Math.floor(i / 3)}`, MessageGroupId: `g${i % 3}`, MessageDeduplicationId: `d${i}` }));
  }
  return { base, dlq, target };
}

describe('dry run of a FIFO SQS DLQ with several messages per group (fauxqs)', () => {
  const c = client(SQS_ENDPOINT);
  const conn = `sqs://${SQS_REGION}?endpoint=${SQS_ENDPOINT}`;

  it('says how many it examined and that the other 9 (behind the first message of 3 groups) were not seen, and why; the run still moves all 12 in order', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'qs-sqs-fifo-dry-'));
    try {
      const q = await fifoDlq(c, 'fifo-dry');
      const json = await cli(dir, ['redrive', conn, `${q.base}-dlq.fifo`, '--to', `${q.base}.fifo`, '--dry-run', '--json']);
      const plan = JSON.parse(json.out) as RedrivePlan;
      expect(plan).toMatchObject({ examined: 3, toMove: 3, unseen: { count: 9, groups: 3 } });
      expect(plan.unseen?.reason).toContain(`FIFO: 9 messages of the 12 ${q.base}-dlq.fifo held at the start were not seen (not examined, not counted above): they are behind messages of 3 message groups that this dry run held`);
      expect(plan.unseen?.reason).toContain('SQS returns no later message of a FIFO message group while an earlier one is in flight');
      expect(plan.unseen?.reason).toContain('a dry run deletes nothing');

      const text = await cli(dir, ['redrive', conn, `${q.base}-dlq.fifo`, '--to', `${q.base}.fifo`, '--dry-run']);
      expect(text.out).toContain(`Dry run of ${q.base}-dlq.fifo: 3 messages examined`);
      expect(text.out).toContain('NOT SEEN 9, the counts below cover only the 3 examined: FIFO: 9 messages of the 12');
      expect(text.code).toBe(0);

      // The dry runs changed nothing; the run reads each group past its first message as it moves it.
      const run = await cli(dir, ['redrive', conn, `${q.base}-dlq.fifo`, '--to', `${q.base}.fifo`, '--yes']);
      expect(run.out).toContain('12 moved, 0 stayed, 0 failed, 0 possible duplicates of 12 examined');
      expect(run.code).toBe(0);
      const got = await drainFifo(c, q.target.url);
      for (const g of [0, 1, 2]) expect(got.filter((m) => m.Attributes?.MessageGroupId === `g${g}`).map((m) => m.Body)).toEqual([0, 1, 2, 3].map((n) => `g${g}-${n}`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('one message per group: the dry run sees every message and says nothing is unseen', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'qs-sqs-fifo-dry-'));
    try {
      const base = uniqueName('fifo-dry1');
      const dlq = await createQueue(c, `${base}-dlq.fifo`, { FifoQueue: 'true' });
      await createQueue(c, `${base}.fifo`, { FifoQueue: 'true' });
      for (let i = 0; i < 4; i++) await c.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: `m${i}`, MessageGroupId: `g${i}`, MessageDeduplicationId: `d${i}` }));
      const plan = JSON.parse((await cli(dir, ['redrive', conn, `${base}-dlq.fifo`, '--to', `${base}.fifo`, '--dry-run', '--json'])).out) as RedrivePlan;
      expect(plan.examined).toBe(4);
      expect(plan.unseen).toBeUndefined();
      expect(plan.notes.join(' ')).not.toContain('not seen');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('dry run of a FIFO SQS DLQ with several messages per group (local-aws-sqs)', () => {
  const c = client(SQS_ALT_ENDPOINT);
  const conn = `sqs://${SQS_REGION}?endpoint=${SQS_ALT_ENDPOINT}`;

  it('local-aws-sqs returns later messages of a group in flight too: the dry run sees all 12 and reports nothing unseen', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'qs-sqs-fifo-dry-'));
    try {
      const q = await fifoDlq(c, 'fifo-dry-l');
      const plan = JSON.parse((await cli(dir, ['redrive', conn, `${q.base}-dlq.fifo`, '--to', `${q.base}.fifo`, '--dry-run', '--json'])).out) as RedrivePlan;
      expect(plan).toMatchObject({ examined: 12, toMove: 12 });
      expect(plan.unseen).toBeUndefined();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
