import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient, SendMessageBatchCommand, type Message } from '@aws-sdk/client-sqs';
import amqp from 'amqplib';
import { Queue, UnrecoverableError, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type CliIo } from '../../core/cli/main';
import { EXIT } from '../../core/cli/exit-codes';
import { readSnapshotFile } from '../../core/snapshot/reader';
import { AMQP_URL, REDIS_URL, SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from './env';

/**
 * The redrive engine and its CLI (`queuescope redrive`, `reinject`, `history`) end to end through
 * the real adapters and brokers: dry run, filtered and whole redrives, non-retryable messages
 * staying with their reason, backups, re-inject and the audit log.
 */

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}
let home: string;
let dir: string;
async function cli(argv: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { QUEUESCOPE_HOME: home, AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' },
    cwd: dir,
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}

beforeAll(async () => {
  // The SQS adapter takes credentials from the AWS SDK's default chain (process environment).
  process.env.AWS_ACCESS_KEY_ID ??= SQS_TEST_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY ??= SQS_TEST_CREDENTIALS.secretAccessKey;
  dir = await mkdtemp(join(tmpdir(), 'qs-redrive-it-'));
  home = join(dir, 'home');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('redrive CLI on SQS (fauxqs)', () => {
  const sqs = new SQSClient({ region: SQS_REGION, endpoint: SQS_ENDPOINT, credentials: { ...SQS_TEST_CREDENTIALS } });
  const conn = `sqs://${SQS_REGION}?endpoint=${SQS_ENDPOINT}`;
  const base = uniqueName('rd-engine');
  const urls: string[] = [];
  let dlqUrl = '';
  let srcUrl = '';

  async function create(name: string, attributes: Record<string, string> = {}): Promise<string> {
    const url = (await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }))).QueueUrl ?? '';
    urls.push(url);
    return url;
  }

  async function drain(url: string): Promise<Message[]> {
    const out: Message[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 60, MessageAttributeNames: ['All'], WaitTimeSeconds: 0 }));
      if ((r.Messages ?? []).length === 0) break;
      out.push(...(r.Messages ?? []));
    }
    return out;
  }

  async function depth(url: string): Promise<number> {
    const a = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }));
    return Number(a.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
  }

  beforeAll(async () => {
    dlqUrl = await create(`${base}-dlq`);
    const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn ?? '';
    srcUrl = await create(base, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn, maxReceiveCount: 3 }) });
    const errors = ['HTTP 503 Service Unavailable', 'ETIMEDOUT calling inventory', 'HTTP 422 Unprocessable Entity: amount must be positive', 'HTTP 404 Not Found: order does not exist'];
    for (let b = 0; b < 2; b++) {
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: dlqUrl,
          Entries: Array.from({ length: 6 }, (_, j) => {
            const n = b * 6 + j;
            return {
              Id: `m${n}`,
              MessageBody: JSON.stringify({ n, orderId: `A-${1000 + n}`, idempotencyKey: `A-${1000 + n}:charge` }),
              MessageAttributes: { 'x-last-error': { DataType: 'String', StringValue: errors[n % 4] ?? '' } },
            };
          }),
        }),
      );
    }
  });
  afterAll(async () => {
    for (const url of urls) await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
  });

  it('dry run lists what would move where and changes nothing', async () => {
    const r = await cli(['redrive', conn, `${base}-dlq`, '--dry-run', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout) as { examined: number; toMove: number; targets: { queueName: string; count: number }[]; skipped: { reason: string; count: number }[] };
    expect(plan.examined).toBe(12);
    expect(plan.toMove).toBe(6);
    expect(plan.targets).toMatchObject([{ queueName: base, count: 6 }]);
    expect(plan.skipped).toEqual(
      expect.arrayContaining([
        { reason: 'non-retryable: HTTP 422', category: 'non-retryable', count: 3 },
        { reason: 'non-retryable: HTTP 404', category: 'non-retryable', count: 3 },
      ]),
    );
    expect(await depth(dlqUrl)).toBe(12);
    expect(await depth(srcUrl)).toBe(0);
  });

  it('refuses without --yes and without a terminal (exit 8), moving nothing', async () => {
    const r = await cli(['redrive', conn, `${base}-dlq`]);
    expect(r.code).toBe(EXIT.NOT_CONFIRMED);
    expect(r.stderr).toMatch(/pass --yes/);
    expect(await depth(dlqUrl)).toBe(12);
  });

  it('a filtered redrive moves only the matching transient messages; the rest stay with their content', async () => {
    const backup = join(dir, 'filtered.jsonl');
    const r = await cli(['redrive', conn, `${base}-dlq`, '--filter', 'label:"HTTP 503"', '--yes', '--json', '--backup', backup]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { status: string; result: { moved: number; skipped: number; backupPath: string } };
    expect(out.status).toBe('completed');
    expect(out.result).toMatchObject({ moved: 3, skipped: 9, backupPath: backup });
    expect(r.stderr).toMatch(/"type":"progress"/);
    const moved = await drain(srcUrl);
    expect(moved.map((m) => (JSON.parse(m.Body ?? '{}') as { n: number }).n).sort((a, b) => a - b)).toEqual([0, 4, 8]);
    expect(moved[0]?.MessageAttributes?.['x-last-error']?.StringValue).toBe('HTTP 503 Service Unavailable');
    expect(moved[0]?.MessageAttributes?.['x-queuescope-redrive-count']).toBeDefined();
    const snap = await readSnapshotFile(backup);
    expect(snap[0]?.messages.map((m) => (JSON.parse(m.body.data) as { n: number }).n).sort((a, b) => a - b)).toEqual([0, 4, 8]);
    // fauxqs keeps received-but-undeleted messages invisible for a moment; the moved ones are gone for good.
    await new Promise((res) => setTimeout(res, 1500));
    expect(await depth(dlqUrl)).toBe(9);
  });

  it('the whole DLQ: transient ones go back to the source, non-retryable ones stay; history shows both runs', async () => {
    const r = await cli(['redrive', conn, `${base}-dlq`, '--yes']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/Redrive finished \(client-side\): 3 moved, 6 stayed, 0 failed, 0 possible duplicates of 9 examined/);
    expect(r.stdout).toMatch(/stayed: non-retryable: HTTP 422/);
    await new Promise((res) => setTimeout(res, 1500));
    expect(await depth(dlqUrl)).toBe(6);
    const left = await drain(dlqUrl);
    expect(left.map((m) => m.MessageAttributes?.['x-last-error']?.StringValue).sort()).toEqual([
      ...Array(3).fill('HTTP 404 Not Found: order does not exist'),
      ...Array(3).fill('HTTP 422 Unprocessable Entity: amount must be positive'),
    ]);
    const h = await cli(['history', '--json', '--limit', '5']);
    const page = JSON.parse(h.stdout) as { entries: { action: string; source: string; status: string; counts: { moved: number }; connection: string }[] };
    expect(page.entries.slice(0, 2).map((e) => [e.action, e.source, e.status, e.counts.moved])).toEqual([
      ['redrive', `${base}-dlq`, 'completed', 3],
      ['redrive', `${base}-dlq`, 'completed', 3],
    ]);
    expect(page.entries[0]?.connection).not.toMatch(/test@|secret/i);
  });

  it('re-injects a backup into a queue', async () => {
    const target = await create(`${base}-restore`);
    const r = await cli(['reinject', conn, `${base}-restore`, '--from', join(dir, 'filtered.jsonl'), '--yes']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/Re-injected 3 of 3 messages/);
    const got = await drain(target);
    expect(got.map((m) => (JSON.parse(m.Body ?? '{}') as { n: number }).n).sort((a, b) => a - b)).toEqual([0, 4, 8]);
  });

  it('refuses to redrive into the DLQ itself without --confirm-loop', async () => {
    const r = await cli(['redrive', conn, `${base}-dlq`, '--to', `${base}-dlq`, '--dry-run']);
    expect(r.code).toBe(EXIT.USAGE);
    expect(r.stderr).toMatch(/dead-letter queue itself/);
  });
});

describe('redrive CLI on RabbitMQ', () => {
  const work = uniqueName('rd-engine-work');
  const dlq = `${work}.dlq`;
  const dlx = `${work}.dlx`;
  let conn: amqp.ChannelModel;
  let ch: amqp.ConfirmChannel;
  const url = AMQP_URL;
  const errors = ['HTTP 503 Service Unavailable', 'ETIMEDOUT calling inventory', 'HTTP 422 Unprocessable Entity: amount must be positive'];

  beforeAll(async () => {
    conn = await amqp.connect(AMQP_URL, { noDelay: true });
    ch = await conn.createConfirmChannel();
    await ch.assertExchange(dlx, 'direct', { durable: false });
    await ch.assertQueue(dlq, { durable: false });
    await ch.bindQueue(dlq, dlx, work);
    await ch.assertQueue(work, { durable: false, arguments: { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': work } });
    for (let n = 0; n < 9; n++) {
      ch.sendToQueue(work, Buffer.from(JSON.stringify({ n, invoiceId: `INV-${n}` })), { messageId: `inv-${n}`, contentType: 'application/json', headers: { 'x-last-error': errors[n % 3], 'x-tenant': 'acme' } });
    }
    await ch.waitForConfirms();
    for (let n = 0; n < 9; n++) {
      const m = await ch.get(work, { noAck: false });
      if (m === false) throw new Error('expected a message');
      ch.nack(m, false, false);
    }
    const until = Date.now() + 10_000;
    while ((await ch.checkQueue(dlq)).messageCount < 9) {
      if (Date.now() > until) throw new Error('dead-lettering did not happen');
      await new Promise((r) => setTimeout(r, 50));
    }
  });
  afterAll(async () => {
    await ch.deleteQueue(work).catch(() => undefined);
    await ch.deleteQueue(dlq).catch(() => undefined);
    await ch.deleteExchange(dlx).catch(() => undefined);
    await conn.close().catch(() => undefined);
  });

  async function drain(queue: string): Promise<amqp.GetMessage[]> {
    const out: amqp.GetMessage[] = [];
    for (;;) {
      const m = await ch.get(queue, { noAck: true });
      if (m === false) return out;
      out.push(m);
    }
  }

  it('filtered (timeouts only), then whole: transient messages go back to the x-death queue with headers and x-death kept; non-retryable stay', async () => {
    const f = await cli(['redrive', url, dlq, '--filter', 'label:timeout', '--yes']);
    expect(f.code, f.stderr).toBe(0);
    expect(f.stdout).toMatch(/3 moved, 6 stayed, 0 failed, 0 possible duplicates of 9 examined/);
    expect((await ch.checkQueue(work)).messageCount).toBe(3);
    expect((await ch.checkQueue(dlq)).messageCount).toBe(6);
    const r = await cli(['redrive', url, dlq, '--yes', '--rate', '100']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/3 moved, 3 stayed, 0 failed, 0 possible duplicates of 6 examined/);
    const back = await drain(work);
    expect(back.map((m) => (JSON.parse(m.content.toString()) as { n: number }).n).sort((a, b) => a - b)).toEqual([0, 1, 3, 4, 6, 7]);
    const h = back[0]?.properties.headers ?? {};
    expect(h['x-tenant']).toBe('acme');
    expect(Array.isArray(h['x-death'])).toBe(true);
    expect(h['x-queuescope-redrive-count']).toBe(1);
    expect(back[0]?.properties.messageId).toMatch(/^inv-/);
    const left = await drain(dlq);
    expect(left.map((m) => String(m.properties.headers?.['x-last-error']))).toEqual(Array(3).fill('HTTP 422 Unprocessable Entity: amount must be positive'));
  });
});

describe('redrive CLI on Redis (BullMQ failed jobs)', () => {
  const name = uniqueName('rd-engine-bull');
  const connection = { url: REDIS_URL, maxRetriesPerRequest: null } as const;
  let queue: Queue;

  beforeAll(async () => {
    queue = new Queue(name, { connection });
    for (let n = 0; n < 6; n++) await queue.add('charge', { n, orderId: `A-${n}` }, { attempts: 2, backoff: { type: 'fixed', delay: 5 } });
    const worker = new Worker(
      name,
      async (job) => {
        await Promise.resolve();
        const n = (job.data as { n: number }).n;
        if (n === 2) throw new UnrecoverableError('HTTP 422 Unprocessable Entity: amount must be positive');
        // No status in the text: BullMQ keeps only the message in failedReason, the class is in the stack trace.
        if (n === 5) throw new UnrecoverableError('card permanently declined (do_not_honor)');
        throw new Error('HTTP 503 Service Unavailable');
      },
      { connection },
    );
    const until = Date.now() + 20_000;
    while ((await queue.getFailedCount()) < 6) {
      if (Date.now() > until) throw new Error('jobs did not fail');
      await new Promise((r) => setTimeout(r, 50));
    }
    await worker.close();
  });
  afterAll(async () => {
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
  });

  it('retries the transient failed jobs (client-side, as non-retryable ones stay), then the rest natively with --include-non-retryable', async () => {
    const plan = await cli(['redrive', REDIS_URL, name, '--dry-run']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/would move 4:/);
    expect(plan.stdout).toMatch(/1\s+non-retryable: HTTP 422/);
    expect(plan.stdout).toMatch(/1\s+non-retryable: unrecoverable/);
    expect(plan.stdout).toMatch(/non-retryable unrecoverable\s+1\s+UnrecoverableError: card permanently declined/);
    expect(plan.stdout).toMatch(/wasted retries|non-retryable/);
    const r = await cli(['redrive', REDIS_URL, name, '--yes', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { result: { mode: string; moved: number; skipped: number } };
    expect(out.result).toMatchObject({ mode: 'client-side', moved: 4, skipped: 2 });
    expect(await queue.getFailedCount()).toBe(2);
    const waiting = await queue.getWaiting();
    expect(waiting.map((j) => (j.data as { n: number }).n).sort()).toEqual([0, 1, 3, 4]);
    const all = await cli(['redrive', REDIS_URL, name, '--yes', '--json', '--include-non-retryable']);
    expect(all.code, all.stderr).toBe(0);
    const out2 = JSON.parse(all.stdout) as { result: { mode: string; mechanism: string; moved: number; backupPath: string } };
    expect(out2.result).toMatchObject({ mode: 'native', moved: 2 });
    expect(out2.result.mechanism).toMatch(/retryJobs/);
    expect(await queue.getFailedCount()).toBe(0);
    const backup = await readSnapshotFile(out2.result.backupPath);
    expect(backup[0]?.messages.map((m) => (JSON.parse(m.body.data) as { n: number }).n).sort()).toEqual([2, 5]);
  });
});
