/**
 * The GUI end to end: the built renderer in Debian Chromium, through the browser bridge, against
 * the real services and the real brokers (Redis, RabbitMQ, SQS emulator fauxqs). Every test makes
 * its own queues (test/e2e/fixtures.ts) and removes them.
 *
 * Needs `npm run build` first (out/renderer) and `apt-get install -y chromium`; fails with a
 * message saying so otherwise.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { createLocalConnection, fillNewConnection, messageRows, openConnection, openQueue, queueRow, runConnectionTest, waitForDepth } from './app';
import { HTML_BODY, seedRabbit, seedRedis, seedSqs, type RabbitFixture, type RedisFixture, type SqsFixture } from './fixtures';
import { PROJECT_ROOT, startHarness, type Harness } from './harness';
import { SQS_ENDPOINT } from '../integration/env';

const BUNDLED_DEMO = join(PROJECT_ROOT, 'resources', 'demo-snapshot.jsonl');

let h: Harness;
let page: Page;
let redis: RedisFixture;
let rabbit: RabbitFixture;
let sqs: SqsFixture;
/** The whole-queue export, reused by the snapshot tests. */
let fullExport = '';

beforeAll(async () => {
  h = await startHarness({ demoSnapshotPath: BUNDLED_DEMO });
  page = h.page;
  [redis, rabbit, sqs] = await Promise.all([seedRedis(), seedRabbit(), seedSqs()]);
  await h.openApp();
});

afterAll(async () => {
  await h.close();
  await Promise.allSettled([redis.cleanup(), rabbit.cleanup(), sqs.cleanup()]);
});

/** Snapshot files written into the harness's export folder. */
function exportedFiles(): string[] {
  return readdirSync(h.exportDir)
    .filter((f) => f.endsWith('.jsonl'))
    .map((f) => join(h.exportDir, f));
}

/** Parsed lines of a JSONL snapshot. */
function snapshotLines(path: string): { type: string; id?: string }[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { type: string; id?: string });
}

/** Waits for the newest operation card to reach a terminal state; returns its status and path. */
async function finishedOperation(): Promise<{ status: string; path: string }> {
  const op = page.getByTestId('operation').first();
  await op.and(page.locator('[data-status="completed"], [data-status="failed"], [data-status="cancelled"]')).waitFor({ timeout: 60_000 });
  const status = (await op.getAttribute('data-status')) ?? '';
  const path = (await op.locator('.op-path').count()) > 0 ? await op.locator('.op-path').innerText() : '';
  await op.getByRole('button', { name: 'Dismiss' }).click();
  return { status, path };
}

describe('Queuescope in the browser', () => {
  it('opens the bundled demo snapshot when there is no connection', async () => {
    await page.getByRole('heading', { level: 1, name: 'Demo snapshot' }).waitFor();
    // The heading renders before the queue list has loaded: wait for the rows themselves.
    await page.locator('[role="row"][data-queue-name="orders.dlq"]').waitFor();
    await expect(page.locator('[role="row"][data-queue-name]').count()).resolves.toBe(12);
  });

  it('Test connection names the cause when the broker is unreachable', async () => {
    await fillNewConnection(page, 'Redis', { Name: 'Nowhere', 'Redis URL': 'redis://127.0.0.1:6390' });
    const result = await runConnectionTest(page);
    const text = await result.innerText();
    expect(text).toContain('Host unreachable');
    expect(text).toMatch(/refused/i);
    expect(await result.locator('.check-fail').count()).toBeGreaterThan(0);
  });

  it('creates a Redis connection through the form; Test connection shows each check passing', async () => {
    const text = await createLocalConnection(page, 'Redis', 'E2E Redis');
    expect(text).toMatch(/Connection works — Redis \d+\.\d+/);
    expect(text).not.toContain('✗');
    await page.getByRole('navigation', { name: 'Connections' }).getByText('E2E Redis').waitFor();
  });

  it('lists the new queues with their depth', async () => {
    await waitForDepth(page, redis.list, '3');
    await waitForDepth(page, redis.stream, '25');
    await waitForDepth(page, redis.bullQueue, '2'); // 2 waiting; the 3 failed are not "depth"
    const row = await queueRow(page, redis.bullQueue);
    expect(await row.innerText()).toContain('BullMQ');
  });

  it('opens a queue and shows a message; an HTML body stays text', async () => {
    await openQueue(page, redis.list);
    await expect.poll(() => messageRows(page).count(), { timeout: 20_000 }).toBe(3);
    await messageRows(page).first().click();
    const view = page.getByTestId('message-view');
    await view.waitFor();
    expect(await page.getByTestId('body-text').innerText()).toBe(HTML_BODY);
    expect(await view.locator('img, script, b').count()).toBe(0);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
  });

  it('moves through messages with the keyboard and shows gzip-in-base64 bodies decoded', async () => {
    await page.getByTestId('message-list').focus();
    await page.keyboard.press('End');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 2, name: '#2' }).waitFor();
    expect(await page.getByTestId('body-layers').innerText()).toBe('base64 → gzip → JSON');
    expect(await page.getByTestId('body-text').innerText()).toContain('"orderId": "A-3001"');
    await page.keyboard.press('k');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 2, name: '#1' }).waitFor();
    await page.keyboard.press('Home');
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 2, name: '#2' }).waitFor();
  });

  it('shows BullMQ failures: reason, attempts and stack traces', async () => {
    await openConnection(page, 'E2E Redis');
    await openQueue(page, redis.bullQueue);
    await page.getByRole('combobox', { name: 'State' }).selectOption('failed');
    await expect.poll(() => messageRows(page).count(), { timeout: 20_000 }).toBe(3);
    await messageRows(page).first().click();
    const failure = page.getByRole('region', { name: 'Failure' });
    await failure.waitFor();
    const text = await failure.innerText();
    expect(text).toContain('payment provider answered HTTP 503 Service Unavailable');
    expect(text).toMatch(/after 2 attempts/i);
    expect(text).toMatch(/Stack traces \(2\)/);
  });

  it('pages a stream with "Load more"', async () => {
    await openConnection(page, 'E2E Redis');
    await openQueue(page, redis.stream);
    await page.getByRole('combobox', { name: 'Messages per peek' }).selectOption('10');
    const footer = page.locator('.list-footer');
    await footer.getByText(/^10 loaded/).waitFor();
    await footer.getByRole('button', { name: 'Load more' }).click();
    await footer.getByText(/^20 loaded/).waitFor();
    await footer.getByRole('button', { name: 'Load more' }).click();
    await footer.getByText(/^25 loaded/).waitFor();
    expect(await footer.getByRole('button', { name: 'Load more' }).count()).toBe(0);
    await page.getByTestId('message-list').focus();
    await page.keyboard.press('End');
    await page.keyboard.press('Enter');
    expect(await page.getByTestId('body-text').innerText()).toContain('"orderId": "S-24"');
    await page.getByRole('combobox', { name: 'Messages per peek' }).selectOption('50');
  });

  it('exports the whole list queue to a JSONL file with one line per message', async () => {
    await openConnection(page, 'E2E Redis');
    await openQueue(page, redis.list);
    await expect.poll(() => messageRows(page).count(), { timeout: 20_000 }).toBe(3);
    await page.getByRole('button', { name: 'Export…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Export to a snapshot' });
    await dialog.getByRole('radio', { name: /All messages in the queue/ }).check();
    // the browser bridge has no save dialog: the path field is prefilled with the export folder + suggested name
    const saveTo = dialog.getByRole('textbox', { name: 'Save to' });
    const prefilled = await saveTo.inputValue();
    expect(prefilled.startsWith(`${h.exportDir}/`)).toBe(true);
    expect(prefilled).toMatch(/-\d{4}-\d\d-\d\d\.jsonl$/);
    const target = join(h.exportDir, 'whole-list.jsonl');
    await saveTo.fill(target);
    await dialog.getByRole('button', { name: 'Export', exact: true }).click();
    const card = page.getByTestId('operation').first();
    await card.and(page.locator('[data-status="completed"]')).waitFor({ timeout: 60_000 });
    expect(await card.getByRole('button', { name: 'Copy path' }).isVisible()).toBe(true);
    const { status, path } = await finishedOperation();
    expect(status).toBe('completed');
    expect(path).toBe(target);
    expect(exportedFiles()).toContain(path);
    const lines = snapshotLines(path);
    expect(lines.filter((l) => l.type === 'queue')).toHaveLength(1);
    expect(lines.filter((l) => l.type === 'message')).toHaveLength(3);
    fullExport = path;
  });

  it('exports only the selected messages', async () => {
    const rows = messageRows(page);
    await rows.nth(0).getByRole('checkbox').check();
    await rows.nth(2).getByRole('checkbox').check();
    await page.getByRole('button', { name: 'Export…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Export to a snapshot' });
    expect(await dialog.getByRole('radio', { name: 'Selected messages (2)' }).isChecked()).toBe(true);
    // a relative path is written into the export folder; an existing name is never overwritten
    await dialog.getByRole('textbox', { name: 'Save to' }).fill('whole-list.jsonl');
    await dialog.getByRole('button', { name: 'Export', exact: true }).click();
    const { status, path } = await finishedOperation();
    expect(status).toBe('completed');
    expect(path).toBe(join(h.exportDir, 'whole-list-1.jsonl'));
    expect(snapshotLines(fullExport).filter((l) => l.type === 'message')).toHaveLength(3);
    const ids = snapshotLines(path)
      .filter((l) => l.type === 'message')
      .map((l) => l.id);
    expect(ids.map((id) => (id ?? '').replace(/~[0-9a-f]{8}$/, ''))).toEqual(['#0', '#2']); // list entry ids: index ~ content hash
  });

  it('opens an exported snapshot with File › Open snapshot', async () => {
    expect(fullExport).not.toBe('');
    await page.getByRole('button', { name: 'Open snapshot…' }).first().click();
    const dialog = page.getByRole('dialog', { name: 'Open snapshot' });
    expect(await dialog.innerText()).toContain(`Exports go to ${h.exportDir} by default`);
    await dialog.getByRole('textbox', { name: 'Snapshot file' }).fill(fullExport);
    await dialog.getByRole('button', { name: 'Open', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    const row = await queueRow(page, redis.list);
    expect((await row.locator('[data-col="depth"]').innerText()).trim()).toBe('3');
    await openQueue(page, redis.list);
    await expect.poll(() => messageRows(page).count(), { timeout: 20_000 }).toBe(3);
    await messageRows(page).first().click();
    expect(await page.getByTestId('body-text').innerText()).toBe(HTML_BODY);
  });

  it('reports a missing file and a file that is not a snapshot in the Open dialog, in words', async () => {
    const bad = join(h.exportDir, 'not-a-snapshot.jsonl');
    writeFileSync(bad, 'this is not JSON\n');
    await page.getByRole('button', { name: 'Open snapshot…' }).first().click();
    const dialog = page.getByRole('dialog', { name: 'Open snapshot' });
    const field = dialog.getByRole('textbox', { name: 'Snapshot file' });
    await field.fill('missing.jsonl'); // relative: looked up in the export folder
    await field.press('Enter');
    const alert = dialog.getByRole('alert');
    await alert.waitFor();
    expect(await alert.innerText()).toContain(`There is no file at ${join(h.exportDir, 'missing.jsonl')}`);
    await field.fill(bad);
    await dialog.getByRole('button', { name: 'Open', exact: true }).click();
    await expect.poll(() => alert.innerText()).toMatch(/snapshot/i);
    const text = await alert.innerText();
    expect(text).not.toContain('There is no file');
    expect(text).not.toMatch(/\bat .*\(.*:\d+:\d+\)/); // no stack trace
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('dialog', { name: 'Open snapshot' }).waitFor({ state: 'detached' });
    expect(await page.getByTestId('error-banner').count()).toBe(0);
  });

  it('RabbitMQ: connects, links the DLQ both ways, and asks before a peek that changes the queue', async () => {
    const text = await createLocalConnection(page, 'RabbitMQ', 'E2E RabbitMQ');
    expect(text).toMatch(/Connection works — RabbitMQ/);
    await waitForDepth(page, rabbit.dlq, '2');
    const work = await queueRow(page, rabbit.work);
    expect(await work.innerText()).toContain(`→ ${rabbit.dlq}`);
    const dlqRow = await queueRow(page, rabbit.dlq);
    expect(await dlqRow.innerText()).toContain(`DLQ ← ${rabbit.work}`);

    await openQueue(page, rabbit.dlq);
    await page.getByText('Messages are not read until you ask').waitFor();
    expect(await messageRows(page).count()).toBe(0);
    await page.getByRole('button', { name: /^Peek 50 messages…$/ }).click();
    const dialog = page.getByRole('dialog', { name: 'Peeking this queue changes it' });
    expect(await dialog.innerText()).toMatch(/redelivered/);
    await dialog.getByRole('button', { name: 'Peek 50 messages' }).click();
    await expect.poll(() => messageRows(page).count(), { timeout: 20_000 }).toBe(2);
    await messageRows(page).first().click();
    const deaths = page.getByRole('region', { name: 'Dead-letter history' });
    await deaths.waitFor();
    expect(await deaths.innerText()).toContain('rejected');
    expect(await deaths.innerText()).toContain(rabbit.work);
  });

  it('SQS: a peek that can dead-letter needs the explicit checkbox', async () => {
    const text = await createLocalConnection(page, 'Amazon SQS', 'E2E SQS');
    expect(text).toMatch(/Connection works/);
    await waitForDepth(page, sqs.source, '3');
    await openQueue(page, sqs.source);
    await page.getByRole('button', { name: /^Peek 50 messages…$/ }).click();
    const dialog = page.getByRole('dialog', { name: 'Peeking this queue changes it' });
    const go = dialog.getByRole('button', { name: 'Peek 50 messages' });
    expect(await go.isDisabled()).toBe(true);
    expect(await dialog.innerText()).toMatch(/ApproximateReceiveCount/);
    await dialog.getByRole('checkbox').check();
    await go.click();
    await expect.poll(() => messageRows(page).count(), { timeout: 20_000 }).toBe(3);
    // Each message was received once by the peek.
    const recv = await messageRows(page).locator('[role="gridcell"]:nth-child(4)').allInnerTexts();
    expect(recv.map((s) => s.trim())).toEqual(['1', '1', '1']);
  });

  it('edits and deletes a saved connection', async () => {
    await openConnection(page, 'E2E SQS');
    await page.getByRole('button', { name: 'Edit connection' }).click();
    await page.getByRole('heading', { name: 'Edit E2E SQS' }).waitFor();
    // The form comes back filled from the saved profile (the secret is not sent back).
    expect(await page.getByLabel('Endpoint', { exact: true }).inputValue()).toBe(SQS_ENDPOINT);
    expect(await page.getByLabel('Secret access key', { exact: true }).inputValue()).toBe('');
    await page.getByLabel('Name', { exact: true }).fill('E2E SQS renamed');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'E2E SQS renamed' }).waitFor();
    await page.getByRole('button', { name: 'Edit connection' }).click();
    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    const sidebar = page.getByRole('navigation', { name: 'Connections' });
    await sidebar.getByText('E2E SQS renamed').waitFor({ state: 'detached' });
    expect(await sidebar.getByText('E2E Redis').count()).toBe(1);
  });

  it('shows an exported snapshot as the demo on a fresh start', async () => {
    expect(fullExport).not.toBe('');
    const fresh = await startHarness({ demoSnapshotPath: fullExport });
    try {
      await fresh.openApp();
      await fresh.page.getByRole('heading', { level: 1, name: 'Demo snapshot' }).waitFor();
      await fresh.page.locator(`[role="row"][data-queue-name="${redis.list}"]`).waitFor();
      expect(await fresh.page.getByText('You are looking at the bundled demo snapshot').count()).toBe(1);
    } finally {
      await fresh.close();
    }
  });
});
