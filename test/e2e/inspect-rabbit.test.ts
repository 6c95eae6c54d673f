/**
 * Redelivery safety on a RabbitMQ quorum queue in the GUI, end to end: reading this queue is a
 * delivery (quorum queues count it), so after "Analyse all messages" the message pane shows the
 * analysed copies the report kept (labelled with when they were read) instead of asking for a peek,
 * and opening one reads nothing again. Checked on the broker too: after one analysis every message
 * was returned exactly once. The message view then highlights the header the key was read from.
 * Queues are made with amqplib (names `h5-safety-…`) and removed afterwards.
 *
 * Needs the built renderer (`npm run build`, or `npx tsx test/e2e/build-renderer.ts`) and Chromium.
 */
import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { createLocalConnection, messageRows, openQueue, waitForDepth } from './app';
import { startHarness, type Harness } from './harness';
import { AMQP_URL } from '../integration/env';

const QUEUE = `h5-safety-${randomBytes(4).toString('hex')}`;
const IDS = ['ord-1', 'ord-2', 'ord-3'];

let h: Harness;
let page: Page;
/** API methods the page called through the browser bridge (`POST /api/<method>`), in order. */
const apiCalls: string[] = [];

beforeAll(async () => {
  const conn = await amqp.connect(AMQP_URL);
  const ch = await conn.createConfirmChannel();
  await ch.assertQueue(QUEUE, { durable: true, arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 50 } });
  for (const id of IDS) {
    ch.sendToQueue(QUEUE, Buffer.from(JSON.stringify({ orderId: id.toUpperCase(), type: 'order.paid' })), { messageId: id, contentType: 'application/json', headers: { 'Idempotency-Key': `${id.toUpperCase()}:pay`, 'x-tenant': 'acme' } });
  }
  await ch.waitForConfirms();
  await conn.close();
  h = await startHarness({ demoSnapshotPath: null });
  page = h.page;
  page.on('request', (r) => {
    const m = /\/api\/([^/?]+)$/.exec(new URL(r.url()).pathname);
    if (m?.[1] !== undefined) apiCalls.push(decodeURIComponent(m[1]));
  });
  await h.openApp();
});

afterAll(async () => {
  await h.close();
  const conn = await amqp.connect(AMQP_URL);
  const ch = await conn.createChannel();
  await ch.deleteQueue(QUEUE).catch(() => undefined);
  await conn.close();
});

const reads = (): string[] => apiCalls.filter((m) => m === 'messages.peek' || m === 'messages.get');

describe('Analysed copies on a queue whose read changes it (RabbitMQ quorum)', () => {
  it('after "Analyse all messages", shows the analysed rows with the read time instead of asking for another peek', async () => {
    await createLocalConnection(page, 'RabbitMQ', 'H5 RabbitMQ');
    await waitForDepth(page, QUEUE, '3');
    await openQueue(page, QUEUE);
    await page.getByText('Messages are not read until you ask').waitFor();

    const summary = page.getByTestId('inspect-summary');
    await summary.getByRole('button', { name: 'Analyse…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Analysing this queue changes it' });
    if ((await dialog.getByRole('checkbox').count()) > 0) await dialog.getByRole('checkbox').check();
    await dialog.getByRole('button', { name: 'Analyse all messages' }).click();
    await summary.getByTestId('inspect-report').waitFor({ timeout: 30_000 });
    expect(await summary.getByTestId('inspect-report').innerText()).toMatch(/^3 messages analysed/);

    const notice = page.getByTestId('analysed-notice');
    await notice.waitFor();
    expect(await notice.innerText()).toMatch(/^Analysed copies of 3 messages, read by “Analyse all messages” (at|between) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d/);
    expect(await page.getByText('Messages are not read until you ask').count()).toBe(0);
    const rows = page.getByTestId('analysed-list').locator('[role="row"]');
    const ids = await Promise.all((await rows.all()).map((r) => r.getAttribute('data-message-id')));
    expect(ids.sort()).toEqual(IDS);
    expect(await messageRows(page).count()).toBe(0); // the peeked list stays empty: nothing was peeked

    // Opening an analysed copy shows what the analysis recorded, without reading the queue.
    await page.getByTestId('analysed-list').locator('[data-message-id="ord-2"]').click();
    const view = page.getByTestId('analysed-message-view');
    expect(await view.getByTestId('highlighted-key').innerText()).toBe('ORD-2:pay');
    expect(await view.getByTestId('key-source').innerText()).toBe('header Idempotency-Key');
    expect(await view.innerText()).toMatch(/analysed copy, read by “Analyse all messages”/);
    await page.waitForTimeout(500);
    expect(reads()).toEqual([]);

    // On the broker: the analysis returned each message once; no second read followed.
    const conn = await amqp.connect(AMQP_URL);
    try {
      const ch = await conn.createChannel();
      const counts: number[] = [];
      for (let i = 0; i < IDS.length; i++) {
        const m = await ch.get(QUEUE, { noAck: false });
        if (m === false) throw new Error('expected a message');
        counts.push(Number(m.properties.headers?.['x-delivery-count'] ?? 0));
      }
      ch.nackAll(true);
      await ch.close();
      expect(counts).toEqual([1, 1, 1]);
    } finally {
      await conn.close();
    }
  });

  it('a confirmed peek then shows the messages, and the Headers table highlights the key header with its rule', async () => {
    await page.getByRole('button', { name: 'Peek…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Peeking this queue changes it' });
    if ((await dialog.getByRole('checkbox').count()) > 0) await dialog.getByRole('checkbox').check();
    await dialog.getByRole('button', { name: /^Peek \d+ messages$/ }).click();
    await expect.poll(() => messageRows(page).count(), { timeout: 20_000 }).toBe(3);
    expect(await page.getByTestId('analysed-messages').count()).toBe(0);
    await messageRows(page).first().click();
    const headers = page.getByRole('region', { name: 'Headers / attributes' });
    const keyRow = headers.getByTestId('key-row');
    expect(await keyRow.count()).toBe(1);
    expect(await keyRow.locator('th').innerText()).toBe('Idempotency-Key');
    expect(await keyRow.getByTestId('key-row-rule').innerText()).toBe('idempotency key · header Idempotency-Key (built-in rule)');
    expect(await keyRow.locator('mark').innerText()).toMatch(/^ORD-\d:pay$/);
    // The same highlight colour as the key's line in the annotated body.
    // (a string expression: the e2e tsconfig has no DOM types)
    const bg = await page.evaluate(`getComputedStyle(document.querySelector('[data-testid="key-row"] td')).backgroundColor`);
    expect(bg).toBe('rgba(255, 229, 138, 0.35)');
  });
});
