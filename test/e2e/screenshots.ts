/**
 * `npm run screenshots -- DIR`: one PNG per main screen, taken in Chromium from the built renderer
 * through the browser bridge, against live brokers (fresh data made by test/e2e/fixtures.ts and
 * removed afterwards) and the bundled demo snapshot when present.
 *
 * Writes: new-connection.png, test-connection-failure.png, queue-list.png, queue-view.png,
 * message-json.png, message-bullmq-failure.png, peek-confirm.png, message-x-death.png,
 * queue-view-dark.png, and demo-snapshot.png (when resources/demo-snapshot.jsonl exists).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { createLocalConnection, fillNewConnection, messageRows, openConnection, openQueue, runConnectionTest, waitForDepth } from './app';
import { seedRabbit, seedRedis, seedSqs } from './fixtures';
import { PROJECT_ROOT, startHarness } from './harness';

async function main(): Promise<void> {
  const dir = resolve(process.argv[2] ?? 'screenshots');
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  const shot = async (page: Page, name: string): Promise<void> => {
    await page.waitForTimeout(250); // let transitions and virtualized rows settle
    const path = join(dir, name);
    await page.screenshot({ path });
    written.push(path);
  };

  const demoPath = join(PROJECT_ROOT, 'resources', 'demo-snapshot.jsonl');
  const h = await startHarness({ demoSnapshotPath: existsSync(demoPath) ? demoPath : null });
  const [redis, rabbit, sqs] = await Promise.all([seedRedis('shot'), seedRabbit('shot'), seedSqs('shot')]);
  const page = h.page;
  try {
    await h.openApp();
    if (existsSync(demoPath)) {
      await page.getByRole('heading', { level: 1, name: 'Demo snapshot' }).waitFor();
      await page.locator('[role="row"][data-queue-name]').first().waitFor();
      await shot(page, 'demo-snapshot.png');
    }

    // Test connection that fails: nothing listens on 6390.
    await fillNewConnection(page, 'Redis', { Name: 'Staging Redis', 'Redis URL': 'redis://127.0.0.1:6390' });
    await runConnectionTest(page);
    await shot(page, 'test-connection-failure.png');

    // New connection form with a passing test.
    await fillNewConnection(page, 'RabbitMQ', { Name: 'Local RabbitMQ', 'AMQP URL': 'amqp://127.0.0.1:5672', Username: 'guest', Password: 'guest' });
    await runConnectionTest(page);
    await shot(page, 'new-connection.png');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Local RabbitMQ' }).waitFor();

    // Queue list: the RabbitMQ work queue and its DLQ, linked both ways.
    await waitForDepth(page, rabbit.dlq, '2');
    await waitForDepth(page, rabbit.work, '2');
    await page.getByRole('searchbox', { name: 'Filter queues' }).fill(rabbit.work.replace(/-[0-9a-f]{8}$/, '*'));
    await page.locator(`[role="row"][data-queue-name="${rabbit.work}"]`).waitFor();
    await shot(page, 'queue-list.png');

    // RabbitMQ DLQ: the peek confirmation, then a message with x-death.
    await openQueue(page, rabbit.dlq);
    await page.getByRole('button', { name: /^Peek \d+ messages…$/ }).click();
    await page.getByRole('dialog').waitFor();
    await shot(page, 'peek-confirm.png');
    await page.getByRole('dialog').getByRole('button', { name: /^Peek \d+ messages$/ }).click();
    await messageRows(page).first().click();
    await page.getByRole('region', { name: 'Dead-letter history' }).waitFor();
    await shot(page, 'message-x-death.png');

    // Redis: BullMQ failed jobs (queue view + failure), and a JSON list message.
    await createLocalConnection(page, 'Redis', 'Local Redis');
    await openQueue(page, redis.bullQueue);
    await page.getByRole('combobox', { name: 'State' }).selectOption('failed');
    await messageRows(page).first().waitFor();
    await shot(page, 'queue-view.png');
    await messageRows(page).first().click();
    await page.getByRole('region', { name: 'Failure' }).waitFor();
    await shot(page, 'message-bullmq-failure.png');

    await openConnection(page, 'Local Redis');
    await openQueue(page, redis.list);
    await messageRows(page).nth(1).click();
    await page.getByTestId('message-view').waitFor();
    await shot(page, 'message-json.png');

    // SQS source queue in dark mode.
    await createLocalConnection(page, 'Amazon SQS', 'Local SQS');
    await openQueue(page, sqs.source);
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.getByRole('button', { name: /^Peek \d+ messages…$/ }).click();
    await page.getByRole('dialog').getByRole('checkbox').check();
    await page.getByRole('dialog').getByRole('button', { name: /^Peek \d+ messages$/ }).click();
    await messageRows(page).first().click();
    await page.getByTestId('message-view').waitFor();
    await shot(page, 'queue-view-dark.png');
  } finally {
    await h.close();
    await Promise.allSettled([redis.cleanup(), rabbit.cleanup(), sqs.cleanup()]);
  }
  for (const p of written) console.log(p);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
