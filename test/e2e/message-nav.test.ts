/**
 * Opening and closing messages in the browser (ui-pass), on the bundled demo snapshot:
 * - Esc closes the open message and gives focus back to the list; with a dialog on top, Esc closes
 *   only the dialog (the message stays open) — in Chromium, where a dialog's own Esc handler has
 *   already removed it from the page by the time later listeners run.
 * - A message id in the safety summary's drill-down scrolls the virtualized message list to that
 *   message (rendered, in view, selected) and opens it, also when it was far below the rendered rows.
 *
 * Needs a built renderer (`npm run build`, or `npx tsx test/e2e/build-renderer.ts`) and Debian chromium.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Locator, Page } from 'playwright-core';
import { openQueue } from './app';
import { PROJECT_ROOT, startHarness, type Harness } from './harness';

const DEMO = join(PROJECT_ROOT, 'resources', 'demo-snapshot.jsonl');

let h: Harness | undefined;
let page: Page;

beforeAll(async () => {
  // A short window: the message list shows a few rows, so most of orders.work's 29 are not rendered.
  const harness = await startHarness({ demoSnapshotPath: DEMO, viewport: { width: 1280, height: 800 } });
  h = harness;
  page = harness.page;
  await harness.openApp();
  await page.getByRole('heading', { level: 1, name: 'Demo snapshot' }).waitFor();
  await openQueue(page, 'orders.work');
  await page.getByTestId('inspect-report').waitFor({ timeout: 30_000 });
});

afterAll(async () => {
  await h?.close();
});

const list = (): Locator => page.getByTestId('message-list');
const row = (id: string): Locator => list().locator(`[role="row"][data-message-id="${id}"]`);
const view = (): Locator => page.getByTestId('message-view');
const focusedTestId = (): Promise<string | null> => page.evaluate<string | null>(`document.activeElement?.getAttribute('data-testid') ?? null`);

describe('messages in the browser: Esc and the drill-down', () => {
  it('Esc closes the open message and returns focus to the list', async () => {
    await row('#3').click();
    await view().waitFor();
    // Focus inside the message (its close button): closing must not drop it on the page body.
    await view().getByRole('button', { name: 'Close message' }).focus();
    await page.keyboard.press('Escape');
    await view().waitFor({ state: 'detached', timeout: 5_000 });
    expect(await focusedTestId()).toBe('message-list');
    // The list keeps the closed message as its active row: Enter opens it again.
    await page.keyboard.press('Enter');
    await expect.poll(() => view().locator('h2').innerText()).toBe('#3');
  });

  it('with a dialog on top, Esc closes only the dialog; the next Esc closes the message', async () => {
    await expect.poll(() => view().count()).toBe(1);
    await page.getByRole('button', { name: 'Export…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached', timeout: 5_000 });
    // Give a (wrong) second handler time to act.
    await page.waitForTimeout(200);
    expect(await view().count()).toBe(1);
    await page.keyboard.press('Escape');
    await view().waitFor({ state: 'detached', timeout: 5_000 });
  });

  it('a drill-down id far below the rendered rows scrolls the list to it, selects and opens it', async () => {
    // #28 shares its key with orders.dlq; with a few rows visible it is not rendered until scrolled to.
    expect(await row('#28').count()).toBe(0);
    const dlq = page.getByTestId('dlq-comparison');
    await dlq.getByTestId('drill-id').filter({ hasText: /^#28$/ }).click();
    await expect.poll(() => view().locator('h2').innerText()).toBe('#28');
    await expect.poll(() => row('#28').count()).toBe(1);
    expect(await row('#28').getAttribute('aria-selected')).toBe('true');
    // In view: inside the list's visible area, and the list inside the window.
    const box = await row('#28').boundingBox();
    const listBox = await list().boundingBox();
    expect(box).not.toBeNull();
    expect(listBox).not.toBeNull();
    if (box === null || listBox === null) return;
    expect(box.y).toBeGreaterThanOrEqual(listBox.y - 1);
    expect(box.y + box.height).toBeLessThanOrEqual(listBox.y + listBox.height + 1);
    expect(listBox.y + listBox.height).toBeLessThanOrEqual(800 + 1);
    // Another id, back up the list: scrolls there too.
    const flagged = page.getByTestId('inspect-summary').locator('details', { has: page.locator('summary', { hasText: /^Flagged messages/ }) });
    await flagged.locator('summary').click();
    await flagged.getByTestId('drill-id').filter({ hasText: /^#4$/ }).click();
    await expect.poll(() => view().locator('h2').innerText()).toBe('#4');
    await expect.poll(() => row('#4').getAttribute('aria-selected')).toBe('true');
    const box4 = await row('#4').boundingBox();
    const listBox4 = await list().boundingBox();
    if (box4 === null || listBox4 === null) throw new Error('row #4 or the list is not laid out');
    expect(box4.y).toBeGreaterThanOrEqual(listBox4.y - 1);
    expect(box4.y + box4.height).toBeLessThanOrEqual(listBox4.y + listBox4.height + 1);
  });
});
