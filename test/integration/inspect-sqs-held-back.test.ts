import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateQueueCommand, DeleteQueueCommand, SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from './env';
import { runCli, type CliRun } from './fixtures/run-cli';

/**
 * `queuescope inspect` of an SQS FIFO queue on fauxqs, which returns one message per message group
 * per receive: 2 groups of 3 messages, one peek returns 2 of 6. The partial read is explained by
 * what the broker held back, not by the peek window ("at most 100 messages": 6 is far below it).
 */
const sqs = new SQSClient({ region: SQS_REGION, endpoint: SQS_ENDPOINT, credentials: SQS_TEST_CREDENTIALS });
const name = `${uniqueName('insp-held')}.fifo`;
let url: string;
let dir: string;
const run = (argv: string[]): Promise<CliRun> => runCli(dir, argv);

beforeAll(async () => {
  // The AWS SDK's credential chain reads the process environment.
  process.env.AWS_ACCESS_KEY_ID ??= SQS_TEST_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY ??= SQS_TEST_CREDENTIALS.secretAccessKey;
  dir = await mkdtemp(join(tmpdir(), 'qs-inspect-held-'));
  url = (await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { FifoQueue: 'true' } }))).QueueUrl!;
  for (const group of ['G-1', 'G-2']) {
    for (let i = 1; i <= 3; i++) {
      const key = `${group}-${String(i)}:charge`;
      await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: JSON.stringify({ orderId: `${group}-${String(i)}`, operation: 'charge' }), MessageGroupId: group, MessageDeduplicationId: key.replace(':', '-') }));
    }
  }
}, 30_000);

afterAll(async () => {
  await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
  sqs.destroy();
  await rm(dir, { recursive: true, force: true });
});

describe('inspect (SQS FIFO on fauxqs): a peek that returns fewer messages than its window', () => {
  it('says the broker held the others back, in the report and in the --fail-on exit 9 line', async () => {
    const r = await run(['inspect', `sqs://${SQS_REGION}?endpoint=${SQS_ENDPOINT}`, name, '--fail-on', 'flag', '--rows', '0']);
    expect(r.code).toBe(9);
    expect(r.stdout).toContain(`Partial: ${name} cannot be paged (sqs-fifo), and one peek returned 2 of about 6 messages, fewer than the 100 it can read: the broker held the others back (in flight with a consumer or another reader, delayed, or on an SQS FIFO queue behind an earlier message of their message group).`);
    expect(r.stdout).not.toContain('one peek reads at most 100 messages');
    expect(r.stderr).toContain(`fail-on flag: nothing flagged in the 2 messages read, but ${name} holds about 6: a sqs-fifo queue cannot be paged, and one peek returned these 2, fewer than the 100 it can read: the broker held the others back (`);
    expect(r.stderr).not.toContain('one peek returns at most 100 messages');
  });
});
