/**
 * Page helpers for the Queuescope UI, used by the e2e tests and the screenshot script. They act
 * the way a person does: by visible labels and roles.
 */
import type { Locator, Page } from 'playwright-core';
import { AMQP_URL, REDIS_URL, SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS } from '../integration/env';

export type FormKind = 'Redis' | 'RabbitMQ' | 'Amazon SQS';

/** Opens "New connection", picks the broker tab and fills the given fields (by label). */
export async function fillNewConnection(page: Page, kind: FormKind, fields: Record<string, string>, options: { sqsAuth?: 'Access keys' | 'Named profile' } = {}): Promise<void> {
  await page.getByRole('button', { name: '+ New connection' }).click();
  await page.getByRole('heading', { name: 'New connection' }).waitFor();
  await page.getByRole('tab', { name: kind }).click();
  if (options.sqsAuth !== undefined) await page.getByRole('radio', { name: options.sqsAuth }).check();
  for (const [label, value] of Object.entries(fields)) await page.getByLabel(label, { exact: true }).fill(value);
}

/** The connection fields for the local brokers (from test/integration/env.ts). */
export function localFields(kind: FormKind, name: string): { fields: Record<string, string>; sqsAuth?: 'Access keys' } {
  if (kind === 'Redis') return { fields: { Name: name, 'Redis URL': REDIS_URL } };
  if (kind === 'RabbitMQ') {
    const u = new URL(AMQP_URL);
    const user = decodeURIComponent(u.username);
    const pass = decodeURIComponent(u.password);
    u.username = '';
    u.password = '';
    return { fields: { Name: name, 'AMQP URL': u.toString().replace(/\/$/, ''), Username: user, Password: pass } };
  }
  return {
    fields: { Name: name, Region: SQS_REGION, Endpoint: SQS_ENDPOINT, 'Access key id': SQS_TEST_CREDENTIALS.accessKeyId, 'Secret access key': SQS_TEST_CREDENTIALS.secretAccessKey },
    sqsAuth: 'Access keys',
  };
}

/** Clicks "Test connection" and returns the result panel once it shows. */
export async function runConnectionTest(page: Page): Promise<Locator> {
  await page.getByRole('button', { name: 'Test connection' }).click();
  const result = page.getByTestId('test-result');
  await result.waitFor({ timeout: 30_000 });
  return result;
}

/** Clicks Save and waits for the new connection's queue list. */
export async function saveConnection(page: Page, name: string): Promise<void> {
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await page.getByRole('heading', { name, level: 1 }).waitFor();
}

/** Creates a connection to the local broker through the form (test + save). Returns the test result text. */
export async function createLocalConnection(page: Page, kind: FormKind, name: string): Promise<string> {
  const { fields, sqsAuth } = localFields(kind, name);
  await fillNewConnection(page, kind, fields, sqsAuth !== undefined ? { sqsAuth } : {});
  const result = await runConnectionTest(page);
  const text = await result.innerText();
  await saveConnection(page, name);
  return text;
}

/** Selects a connection in the sidebar. */
export async function openConnection(page: Page, name: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Connections' }).getByRole('button', { name: new RegExp(`^${escapeRe(name)}`) }).click();
  await page.getByRole('heading', { name, level: 1 }).waitFor();
}

/** The queue list row of `queueName` (waits for it; filters the list first). */
export async function queueRow(page: Page, queueName: string): Promise<Locator> {
  await page.getByRole('searchbox', { name: 'Filter queues' }).fill(queueName);
  const row = page.locator(`[role="row"][data-queue-name="${queueName}"]`);
  await row.waitFor({ timeout: 30_000 });
  return row;
}

/** Opens a queue from the list. */
export async function openQueue(page: Page, queueName: string): Promise<void> {
  const row = await queueRow(page, queueName);
  await row.getByRole('button', { name: queueName, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: new RegExp(escapeRe(queueName)) }).waitFor();
}

/** Rows of the message list. */
export function messageRows(page: Page): Locator {
  return page.getByTestId('message-list').locator('[role="row"]');
}

/** What one message-list row shows: its id and the data-verdict of its payload and key badges (null when absent). */
export interface ListedRow {
  id: string;
  verdict: string | null;
  keyVerdict: string | null;
}

/**
 * Every row of the message list, read by scrolling it from top to bottom. The list is virtualised
 * (only the rows near the viewport exist in the DOM, and how many depends on the pane's height, which
 * changes when panels above it appear), so counting rendered rows is not a count of messages.
 * Rows come back in list order, each once; the list is scrolled back to where it was.
 */
export async function listedRows(page: Page): Promise<ListedRow[]> {
  // Browser-side snippets as strings: this file is type-checked without the DOM library.
  const list = `document.querySelector('[data-testid="message-list"]')`;
  const frames = `new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done())))`;
  await page.getByTestId('message-list').waitFor();
  const startTop = await page.evaluate<number>(`(() => { const el = ${list}; const top = el.scrollTop; el.scrollTop = 0; return top; })()`);
  const seen = new Map<number, ListedRow>();
  for (let step = 0; step < 10_000; step++) {
    // Two animation frames: the virtualiser reacts to the scroll event, then React commits.
    await page.evaluate(frames);
    const rows = await page.evaluate<(ListedRow & { index: number })[]>(
      `[...${list}.querySelectorAll('[role="row"]')].map((el) => ({
        index: Number(el.getAttribute('aria-rowindex')),
        id: el.getAttribute('data-message-id') ?? '',
        verdict: el.querySelector('[data-testid="verdict-badge"]')?.getAttribute('data-verdict') ?? null,
        keyVerdict: el.querySelector('[data-testid="key-badge"]')?.getAttribute('data-verdict') ?? null,
      }))`,
    );
    for (const { index, ...r } of rows) seen.set(index, r);
    const atEnd = await page.evaluate<boolean>(
      `(() => { const el = ${list}; if (el.scrollTop + el.clientHeight >= el.scrollHeight - 1) return true; el.scrollTop += Math.max(1, Math.floor(el.clientHeight / 2)); return false; })()`,
    );
    if (atEnd) break;
  }
  // Leave the list where it was, rendered, for the steps that follow.
  await page.evaluate(`${list}.scrollTop = ${startTop}`);
  await page.evaluate(frames);
  return [...seen.entries()].sort(([a], [b]) => a - b).map(([, r]) => r);
}

export function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Clicks Refresh until the queue's Depth cell shows `expected` (RabbitMQ's management API lags
 * AMQP by up to ~5 s; new queues report no count for a few seconds).
 * @throws Error naming the last depth seen when it does not show within `timeoutMs`.
 */
export async function waitForDepth(page: Page, queueName: string, expected: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await queueRow(page, queueName);
    const seen = (await row.locator('[data-col="depth"]').innerText()).trim();
    if (seen === expected) return;
    if (Date.now() > deadline) throw new Error(`Depth of ${queueName} stayed "${seen}", expected "${expected}"`);
    await page.waitForTimeout(1000);
    await page.getByRole('button', { name: 'Refresh queues' }).click();
  }
}
