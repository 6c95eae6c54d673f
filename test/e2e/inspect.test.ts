/**
 * Redelivery safety (issue 3) in the GUI, end to end: the built renderer in Debian Chromium through
 * the browser bridge, on the bundled demo snapshot built from the seeded brokers
 * (`npm run seed -- --demo-snapshot resources/demo-snapshot.jsonl`): key and verdict badges in the
 * message list, the highlighted key in the message view, the per-queue summary with the duplicate
 * keys shared with the DLQ, and a key rule added in the rule editor.
 *
 * Needs a built renderer (`npm run build`, or `npx tsx test/e2e/build-renderer.ts`) and Debian chromium.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Locator, Page } from 'playwright-core';
import { listedRows, openQueue } from './app';
import { PROJECT_ROOT, startHarness, type Harness } from './harness';

const DEMO = join(PROJECT_ROOT, 'resources', 'demo-snapshot.jsonl');

let h: Harness | undefined;
let page: Page;

beforeAll(async () => {
  const harness = await startHarness({ demoSnapshotPath: DEMO, viewport: { width: 1600, height: 1000 } });
  h = harness;
  page = harness.page;
  await harness.openApp();
  await page.getByRole('heading', { level: 1, name: 'Demo snapshot' }).waitFor();
});

afterAll(async () => {
  await h?.close();
});

const row = (id: string): Locator => page.getByTestId('message-list').locator(`[role="row"][data-message-id="${id}"]`);

describe('Redelivery safety in the browser (demo snapshot)', () => {
  it('shows key and verdict badges for every message: the full orders are flagged, the ID-only messages pass', async () => {
    await openQueue(page, 'orders.work');
    await expect.poll(() => page.getByTestId('message-list').locator('[role="row"] [data-testid="verdict-badge"]').count(), { timeout: 20_000 }).toBeGreaterThan(0);
    // The list is virtualised: scroll through it to see every message, not only the rendered rows.
    const listed = await listedRows(page);
    expect(listed).toHaveLength(29);
    expect(listed.filter((r) => r.verdict === null || r.keyVerdict === null)).toEqual([]);
    // Exactly the five messages that embed the full order are flagged (as `queuescope inspect` says).
    expect(listed.filter((r) => r.verdict === 'flag').map((r) => r.id)).toEqual(['#4', '#9', '#14', '#19', '#24']);
    // #4 embeds the full mutable order; #3 carries only the order id with an Idempotency-Key header.
    await expect(row('#4').getByTestId('verdict-badge').getAttribute('data-verdict')).resolves.toBe('flag');
    await expect(row('#3').getByTestId('verdict-badge').getAttribute('data-verdict')).resolves.toBe('ok');
    await expect(row('#3').getByTestId('key-badge').getAttribute('data-verdict')).resolves.toBe('business-derived');
    await expect(row('#1').getByTestId('key-badge').getAttribute('data-verdict')).resolves.toBe('missing');
  });

  it('highlights the key in the message view with the rule that found it, and annotates the body', async () => {
    await row('#3').click();
    const view = page.getByTestId('message-view');
    await view.getByTestId('highlighted-key').waitFor();
    expect(await view.getByTestId('highlighted-key').innerText()).toBe('A-1104:ship');
    expect(await view.getByTestId('key-source').innerText()).toBe('header Idempotency-Key');
    // The verdict is named once: "business key: <sentence>", not "business key: business-derived: …".
    const reasonLine = await view.getByTestId('key-reason').locator('xpath=..').innerText();
    expect(reasonLine).toMatch(/^business key: \S/);
    expect(reasonLine).not.toContain('business-derived:');
    // The header the key came from is highlighted in the Headers table too, with the rule that found it.
    const keyRow = view.getByRole('region', { name: 'Headers / attributes' }).getByTestId('key-row');
    expect(await keyRow.count()).toBe(1);
    expect(await keyRow.getByTestId('key-row-rule').innerText()).toBe('idempotency key · header Idempotency-Key (built-in rule)');
    expect(await keyRow.locator('mark').innerText()).toBe('A-1104:ship');
    await row('#4').click();
    await expect.poll(() => view.getByTestId('inspect-reasons').innerText()).toMatch(/order\.status/);
    const status = view.getByTestId('annotated-body').locator('[data-path="body.order.status"]');
    expect(await status.getAttribute('data-class')).toBe('mutable-state');
    expect(await status.innerText()).toContain('mutable state');
  });

  it('summarises the queue: business-derived share, flagged payloads and the duplicate keys shared with orders.dlq', async () => {
    const summary = page.getByTestId('inspect-summary');
    await summary.getByTestId('inspect-report').waitFor({ timeout: 30_000 });
    expect(await summary.getByTestId('flagged-count').innerText()).toMatch(/^5\s+flagged/);
    expect(await summary.getByTestId('business-share').innerText()).toMatch(/\d+% business-derived keys/);
    const dlq = summary.getByTestId('dlq-comparison');
    expect(await dlq.locator('summary').innerText()).toMatch(/Shared with dead-letter queue orders\.dlq: 4 duplicate keys/);
    for (const key of ['A-1001:charge', 'A-1004:ship', 'A-1006:capture', 'A-1009:charge']) expect(await dlq.innerText()).toContain(key);
    // Drill-down: an example id opens that message.
    await dlq.getByRole('button', { name: 'A-1001:charge' }).first().click();
    await expect.poll(() => page.getByTestId('message-view').locator('h2').innerText()).toBe('A-1001:charge');
  });

  it('a key rule added in the rule editor applies at once (kept for the session on the demo)', async () => {
    await page.getByTestId('edit-inspect-rules').click();
    const editor = page.getByTestId('rule-editor');
    await editor.getByRole('button', { name: 'Add key rule' }).click();
    await editor.getByRole('textbox', { name: 'Rule 1', exact: true }).fill('{body.orderId}:{body.type}');
    await editor.getByTestId('save-inspect-rules').click();
    await editor.waitFor({ state: 'detached' });
    await expect.poll(() => row('#1').getByTestId('key-badge').getAttribute('data-verdict'), { timeout: 10_000 }).toBe('business-derived');
    await row('#1').click();
    expect(await page.getByTestId('message-view').getByTestId('key-source').innerText()).toMatch(/^template \{body\.orderId\}:\{body\.type\}/);
  });
});
