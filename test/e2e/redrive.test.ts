/**
 * DLQ redrive from the app, end to end: the built renderer in Chromium through the browser bridge,
 * against the real brokers. A DLQ is seeded with the brokers' own clients with transient
 * (HTTP 503, ETIMEDOUT) and non-retryable (HTTP 422, 404) failures; the test analyses it in the
 * DLQ view (groups by class and reason), previews, confirms, watches the run finish, and checks on
 * the broker that the transient messages went back to the source and the non-retryable ones stayed.
 * Then a filtered redrive (one group), and the audit log view. The same whole + filtered flow on a
 * RabbitMQ DLQ (filled by real dead-lettering) and on BullMQ failed jobs.
 *
 * Needs the built renderer (`npm run build`, or `npx tsx test/e2e/build-renderer.ts`) and Chromium.
 */
import amqp from 'amqplib';
import { Queue, UnrecoverableError, Worker } from 'bullmq';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { createLocalConnection, openQueue } from './app';
import { startHarness, type Harness } from './harness';
import { AMQP_URL, REDIS_URL, SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from '../integration/env';

let h: Harness;
let page: Page;

const sqs = new SQSClient({ region: SQS_REGION, endpoint: SQS_ENDPOINT, credentials: { ...SQS_TEST_CREDENTIALS } });
const base = uniqueName('e2e-rd');
const urls: string[] = [];
let dlqUrl = '';
let srcUrl = '';

const ERRORS = ['HTTP 503 Service Unavailable from payments-api', 'ETIMEDOUT calling inventory-service', 'HTTP 422 Unprocessable Entity: amount must be positive', 'HTTP 404 Not Found: order does not exist'];

async function bodiesIn(url: string): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < 20; i++) {
    const r = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 120, WaitTimeSeconds: 0 }));
    const ms = r.Messages ?? [];
    if (ms.length === 0) break;
    for (const m of ms) out.push((JSON.parse(m.Body ?? '{}') as { n: number }).n);
  }
  return out.sort((a, b) => a - b);
}

async function visible(url: string): Promise<number> {
  const a = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages'] }));
  return Number(a.Attributes?.ApproximateNumberOfMessages ?? 0);
}

beforeAll(async () => {
  h = await startHarness({ demoSnapshotPath: null });
  page = h.page;
  dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${base}-dlq` }))).QueueUrl ?? '';
  urls.push(dlqUrl);
  const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn ?? '';
  srcUrl = (await sqs.send(new CreateQueueCommand({ QueueName: base, Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arn, maxReceiveCount: 3 }) } }))).QueueUrl ?? '';
  urls.push(srcUrl);
  for (let b = 0; b < 2; b++) {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: dlqUrl,
        Entries: Array.from({ length: 8 }, (_, j) => {
          const n = b * 8 + j;
          return { Id: `m${n}`, MessageBody: JSON.stringify({ n, orderId: `A-${1000 + n}` }), MessageAttributes: { 'x-last-error': { DataType: 'String', StringValue: ERRORS[n % 4] ?? '' } } };
        }),
      }),
    );
  }
  await h.openApp();
});

afterAll(async () => {
  await h.close();
  for (const url of urls) await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
});

describe('redrive from the DLQ view (SQS)', () => {
  it('groups by failure class and reason, previews, and redrives the transient ones; non-retryable stay with their reason', async () => {
    await createLocalConnection(page, 'Amazon SQS', 'SQS redrive');
    await openQueue(page, `${base}-dlq`);
    const panel = page.getByTestId('redrive-panel');
    await panel.getByRole('button', { name: 'Analyse for redrive' }).click();
    await panel.getByTestId('redrive-analysis').waitFor({ timeout: 60_000 });
    await expect.poll(() => panel.getByTestId('redrive-analysis').innerText()).toMatch(/16 messages in 4 groups/);
    const groups = panel.getByTestId('redrive-group');
    expect(await groups.count()).toBe(4);
    // Non-retryable groups are unchecked and say they stay.
    const nonRetryable = panel.locator('[data-testid="redrive-group"][data-class="non-retryable"]');
    expect(await nonRetryable.count()).toBe(2);
    for (let i = 0; i < 2; i++) {
      await expect.poll(() => nonRetryable.nth(i).getByRole('checkbox').isChecked()).toBe(false);
      expect(await nonRetryable.nth(i).innerText()).toMatch(/stays in the DLQ \(non-retryable\)/);
    }
    expect(await panel.innerText()).toMatch(/HTTP 422 Unprocessable Entity: amount must be positive/);

    await panel.getByRole('button', { name: 'Preview (dry run)' }).click();
    const preview = panel.getByTestId('redrive-preview');
    await preview.waitFor({ timeout: 60_000 });
    const previewText = await preview.innerText();
    expect(previewText).toMatch(/Would move 8 of 16 examined/);
    expect(previewText).toMatch(new RegExp(`8 → ${base}\\b`));
    expect(previewText).toMatch(/4 · non-retryable: HTTP 422/);
    expect(previewText).toMatch(/4 · non-retryable: HTTP 404/);
    expect(await visible(dlqUrl)).toBe(16); // the dry run changed nothing (messages were put back)

    await panel.getByRole('button', { name: 'Redrive 8…' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.innerText()).toMatch(new RegExp(`Redrive 8 messages from ${base}-dlq\\?[^]*8 → ${base}`));
    await dialog.getByRole('button', { name: 'Redrive', exact: true }).click();
    const run = panel.getByTestId('redrive-run');
    await run.and(page.locator('[data-status="completed"], [data-status="failed"], [data-status="cancelled"]')).waitFor({ timeout: 60_000 });
    expect(await run.getAttribute('data-status')).toBe('completed');
    const result = await panel.getByTestId('redrive-result').innerText();
    expect(result).toMatch(/8 moved, 8 stayed, 0 failed, 0 possible duplicates/);
    expect(result).toMatch(/Backup: .*\.jsonl/);

    expect(await bodiesIn(srcUrl)).toEqual([0, 1, 4, 5, 8, 9, 12, 13]);
    await expect.poll(() => visible(dlqUrl), { timeout: 10_000 }).toBe(8);
    // The queue header is refreshed when the redrive ends (16 before).
    await expect.poll(() => page.locator('.stat[data-stat="Depth"] .stat-value').innerText(), { timeout: 10_000 }).toBe('8');
  });

  it('a filtered redrive (one group) and the audit log view', async () => {
    const panel = page.getByTestId('redrive-panel');
    await panel.getByRole('button', { name: 'Done' }).click();
    await panel.getByRole('button', { name: 'Analyse for redrive' }).click();
    await expect.poll(() => panel.getByTestId('redrive-analysis').innerText(), { timeout: 60_000 }).toMatch(/8 messages in 2 groups/);
    // Choose only the HTTP 404 group (non-retryable: moved because the user chose it).
    await panel.getByRole('checkbox', { name: 'Redrive HTTP 404 (non-retryable)' }).check();
    await panel.getByRole('checkbox', { name: 'Redrive HTTP 422 (non-retryable)' }).uncheck();
    await panel.getByRole('button', { name: 'Preview (dry run)' }).click();
    await expect.poll(() => panel.getByTestId('redrive-preview').innerText(), { timeout: 60_000 }).toMatch(/Would move 4 of 8 examined/);
    await panel.getByRole('button', { name: 'Redrive 4…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Redrive', exact: true }).click();
    const run = panel.getByTestId('redrive-run');
    await run.and(page.locator('[data-status="completed"], [data-status="failed"], [data-status="cancelled"]')).waitFor({ timeout: 60_000 });
    expect(await panel.getByTestId('redrive-result').innerText()).toMatch(/4 moved, 4 stayed/);
    expect(await bodiesIn(srcUrl)).toEqual([3, 7, 11, 15]);

    await panel.getByRole('button', { name: 'History' }).click();
    const history = panel.getByTestId('redrive-history');
    await history.getByTestId('audit-entry').first().waitFor();
    expect(await history.getByTestId('audit-entry').count()).toBe(2);
    const newest = await history.getByTestId('audit-entry').first().innerText();
    expect(newest).toMatch(/app\s+redrive\s+completed/);
    expect(newest).toMatch(/moved 4/);

    // Put that run's backup back into the DLQ (re-inject through the same engine).
    await history.getByTestId('audit-entry').first().getByRole('button', { name: 'Put back…' }).click();
    const putBack = panel.getByTestId('redrive-putback');
    expect(await putBack.getByRole('combobox', { name: 'Re-inject into queue' }).inputValue()).toMatch(new RegExp(`${base}-dlq$`));
    await putBack.getByRole('button', { name: 'Re-inject' }).click();
    await panel.locator('[data-testid="redrive-putback-status"][data-status="completed"]').waitFor({ timeout: 60_000 });
    expect(await putBack.innerText()).toMatch(/completed: 4 of 4 published/);
    await expect.poll(() => visible(dlqUrl), { timeout: 10_000 }).toBe(8);
    await expect.poll(async () => (await history.getByTestId('audit-entry').first().innerText()).replace(/\s+/g, ' ')).toMatch(/app reinject completed/);
  });
});

/** Analyse → choose groups → preview → confirm → wait; returns the result text. */
async function redriveFromPanel(opts: { uncheck?: string[]; check?: string[]; expectMove: number }): Promise<string> {
  const panel = page.getByTestId('redrive-panel');
  if ((await panel.getByRole('button', { name: 'Done' }).count()) > 0) await panel.getByRole('button', { name: 'Done' }).click();
  await panel.getByRole('button', { name: 'Analyse for redrive' }).click();
  await panel.getByTestId('redrive-analysis').waitFor({ timeout: 60_000 });
  for (const name of opts.uncheck ?? []) await panel.getByRole('checkbox', { name }).uncheck();
  for (const name of opts.check ?? []) await panel.getByRole('checkbox', { name }).check();
  await panel.getByRole('button', { name: 'Preview (dry run)' }).click();
  await panel.getByTestId('redrive-preview').waitFor({ timeout: 60_000 });
  await panel.getByRole('button', { name: `Redrive ${opts.expectMove}…` }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Redrive', exact: true }).click();
  const run = panel.getByTestId('redrive-run');
  await run.and(page.locator('[data-status="completed"], [data-status="failed"], [data-status="cancelled"]')).waitFor({ timeout: 60_000 });
  expect(await run.getAttribute('data-status')).toBe('completed');
  return panel.getByTestId('redrive-result').innerText();
}

describe('redrive from the DLQ view (RabbitMQ)', () => {
  const work = uniqueName('e2e-rd-work');
  const dlq = `${work}.dlq`;
  const dlx = `${work}.dlx`;
  let conn: amqp.ChannelModel;
  let ch: amqp.ConfirmChannel;

  beforeAll(async () => {
    conn = await amqp.connect(AMQP_URL, { noDelay: true });
    ch = await conn.createConfirmChannel();
    await ch.assertExchange(dlx, 'direct', { durable: false });
    await ch.assertQueue(dlq, { durable: false });
    await ch.bindQueue(dlq, dlx, work);
    await ch.assertQueue(work, { durable: false, arguments: { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': work } });
    for (let n = 0; n < 8; n++) ch.sendToQueue(work, Buffer.from(JSON.stringify({ n })), { messageId: `m-${n}`, headers: { 'x-last-error': ERRORS[n % 4] } });
    await ch.waitForConfirms();
    for (let n = 0; n < 8; n++) {
      const m = await ch.get(work, { noAck: false });
      if (m === false) throw new Error('expected a message');
      ch.nack(m, false, false);
    }
    const until = Date.now() + 10_000;
    while ((await ch.checkQueue(dlq)).messageCount < 8) {
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

  it('filtered (the timeout group only), then the whole DLQ; non-retryable messages stay', async () => {
    await createLocalConnection(page, 'RabbitMQ', 'Rabbit redrive');
    await openQueue(page, dlq);
    const filtered = await redriveFromPanel({ uncheck: ['Redrive HTTP 503 (transient)'], expectMove: 2 });
    expect(filtered).toMatch(/2 moved, 6 stayed, 0 failed/);
    expect((await ch.checkQueue(work)).messageCount).toBe(2);
    const whole = await redriveFromPanel({ expectMove: 2 });
    expect(whole).toMatch(/2 moved, 4 stayed, 0 failed/);
    expect(whole).toMatch(/non-retryable: HTTP 422/);
    expect((await ch.checkQueue(work)).messageCount).toBe(4);
    expect((await ch.checkQueue(dlq)).messageCount).toBe(4);
  });

  it('a rate-limited redrive of the chosen non-retryable groups can be paused and resumed', async () => {
    const panel = page.getByTestId('redrive-panel');
    await panel.getByRole('button', { name: 'Done' }).click();
    await panel.getByRole('button', { name: 'Analyse for redrive' }).click();
    await panel.getByTestId('redrive-analysis').waitFor({ timeout: 60_000 });
    await panel.getByRole('checkbox', { name: 'Redrive HTTP 422 (non-retryable)' }).check();
    await panel.getByRole('checkbox', { name: 'Redrive HTTP 404 (non-retryable)' }).check();
    await panel.getByRole('textbox', { name: 'Rate (messages per second)' }).fill('1');
    await panel.getByRole('button', { name: 'Preview (dry run)' }).click();
    await expect.poll(() => panel.getByTestId('redrive-preview').innerText(), { timeout: 60_000 }).toMatch(/Would move 4 of 4 examined/);
    await panel.getByRole('button', { name: 'Redrive 4…' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.innerText()).toMatch(/At most 1 messages per second/);
    await dialog.getByRole('button', { name: 'Redrive', exact: true }).click();
    const run = panel.getByTestId('redrive-run');
    await expect.poll(async () => /([1-3]) moved/.test(await panel.getByTestId('redrive-counts').innerText()), { timeout: 30_000 }).toBe(true);
    await panel.getByRole('button', { name: 'Pause' }).click();
    await page.locator('[data-testid="redrive-run"][data-status="paused"]').waitFor({ timeout: 10_000 });
    await new Promise((r) => setTimeout(r, 600)); // a batch in hand finishes
    const atPause = (await ch.checkQueue(work)).messageCount;
    await new Promise((r) => setTimeout(r, 2000));
    expect((await ch.checkQueue(work)).messageCount).toBe(atPause);
    expect(atPause).toBeLessThan(8);
    await panel.getByRole('button', { name: 'Resume' }).click();
    await run.and(page.locator('[data-status="completed"], [data-status="failed"], [data-status="cancelled"]')).waitFor({ timeout: 60_000 });
    expect(await run.getAttribute('data-status')).toBe('completed');
    expect(await panel.getByTestId('redrive-result').innerText()).toMatch(/4 moved, 0 stayed, 0 failed/);
    expect((await ch.checkQueue(work)).messageCount).toBe(8);
    expect((await ch.checkQueue(dlq)).messageCount).toBe(0);
  });
});

describe('redrive from the queue view (BullMQ failed jobs)', () => {
  const name = uniqueName('e2e-rd-bull');
  const connection = { url: REDIS_URL, maxRetriesPerRequest: null } as const;
  let queue: Queue;

  beforeAll(async () => {
    queue = new Queue(name, { connection });
    for (let n = 0; n < 8; n++) await queue.add('charge', { n }, { attempts: 2, backoff: { type: 'fixed', delay: 5 } });
    const worker = new Worker(
      name,
      async (job) => {
        await Promise.resolve();
        const e = ERRORS[(job.data as { n: number }).n % 4] ?? '';
        throw e.startsWith('HTTP 4') ? new UnrecoverableError(e) : new Error(e);
      },
      { connection },
    );
    const until = Date.now() + 20_000;
    while ((await queue.getFailedCount()) < 8) {
      if (Date.now() > until) throw new Error('jobs did not fail');
      await new Promise((r) => setTimeout(r, 50));
    }
    await worker.close();
  });
  afterAll(async () => {
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
  });

  it('filtered (the HTTP 503 group), then the whole failed set; non-retryable jobs stay failed', async () => {
    await createLocalConnection(page, 'Redis', 'Redis redrive');
    await openQueue(page, name);
    const filtered = await redriveFromPanel({ uncheck: ['Redrive timeout (transient)'], expectMove: 2 });
    expect(filtered).toMatch(/2 moved, 6 stayed, 0 failed/);
    expect(await queue.getFailedCount()).toBe(6);
    const whole = await redriveFromPanel({ expectMove: 2 });
    expect(whole).toMatch(/2 moved, 4 stayed, 0 failed/);
    expect(await queue.getFailedCount()).toBe(4);
    const waiting = await queue.getWaiting();
    expect(waiting.map((j) => (j.data as { n: number }).n).sort()).toEqual([0, 1, 4, 5]);
  });

  it('redrives one message picked in the list (a non-retryable one, chosen by the user)', async () => {
    const failed = await queue.getFailed();
    const picked = failed.find((j) => (j.data as { n: number }).n === 2);
    if (picked?.id === undefined) throw new Error('job n=2 should be failed');
    await page.getByRole('combobox', { name: 'State' }).selectOption('failed');
    const box = page.getByRole('checkbox', { name: `Select message ${picked.id}` });
    await box.waitFor({ timeout: 30_000 });
    await box.check();
    const panel = page.getByTestId('redrive-panel');
    await panel.getByRole('button', { name: 'Done' }).click();
    await panel.getByRole('button', { name: 'Analyse for redrive' }).click();
    await panel.getByTestId('redrive-analysis').waitFor({ timeout: 60_000 });
    await panel.getByRole('checkbox', { name: /Only the 1 message selected in the list/ }).check();
    await panel.getByRole('button', { name: 'Preview (dry run)' }).click();
    await expect.poll(() => panel.getByTestId('redrive-preview').innerText(), { timeout: 60_000 }).toMatch(/Would move 1 of 4 examined[^]*Would stay 3:[^]*3 · not picked/);
    await panel.getByRole('button', { name: 'Redrive 1…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Redrive', exact: true }).click();
    const run = panel.getByTestId('redrive-run');
    await run.and(page.locator('[data-status="completed"], [data-status="failed"], [data-status="cancelled"]')).waitFor({ timeout: 60_000 });
    expect(await panel.getByTestId('redrive-result').innerText()).toMatch(/1 moved, 3 stayed, 0 failed/);
    expect(await queue.getFailedCount()).toBe(3);
    expect((await queue.getJob(picked.id))?.failedReason ?? '').toBe(''); // retried: no longer failed
    expect(await queue.getJobState(picked.id)).toBe('waiting');
  });
});
