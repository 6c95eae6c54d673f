/**
 * DLQ alerts (issue 4) in the GUI, end to end: the built renderer in Debian Chromium through the
 * browser bridge against the real Redis. A DLQ is chosen for watching from the queue list, the
 * test puts a dead letter into it with its own Redis client, and the in-app banner and the badges
 * (queue row and sidebar) show the alert. (The browser bridge has no desktop notifications: the
 * banner is the alert there.)
 *
 * Needs a built renderer (`npm run build`, or `npx tsx test/e2e/build-renderer.ts`) and Debian chromium.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, uniqueName } from '../integration/env';
import { openConnection, queueRow } from './app';
import { startHarness, type Harness } from './harness';

const redis = new Redis(REDIS_URL);
const dlq = `${uniqueName('e2e-watch')}-dlq`;
const CONNECTION = 'Watch e2e Redis';
let h: Harness | undefined;
let page: Page;

beforeAll(async () => {
  const id = await redis.xadd(dlq, '*', 'body', 'seed');
  await redis.xdel(dlq, id!); // an empty stream DLQ that exists
  const harness = await startHarness({ demoSnapshotPath: null });
  h = harness;
  page = harness.page;
  await harness.services.connections.save({ name: CONNECTION, config: { kind: 'redis', url: REDIS_URL } });
  await harness.openApp();
});

afterAll(async () => {
  await h?.close();
  await redis.del(dlq);
  redis.disconnect();
});

describe('DLQ alerts in the browser', () => {
  it('watching a DLQ, then a dead letter arriving, shows the banner and the alert badges; Dismiss clears the alert', async () => {
    await openConnection(page, CONNECTION);
    const row = await queueRow(page, dlq);
    const toggle = row.getByTestId('watch-toggle');
    expect(await toggle.innerText()).toBe('Watch');
    await toggle.click();
    await expect.poll(() => toggle.getAttribute('aria-pressed'), { timeout: 10_000 }).toBe('true');
    const badge = row.getByTestId('watch-badge');
    await expect.poll(() => badge.innerText(), { timeout: 20_000 }).toMatch(/0$/);
    expect(await badge.getAttribute('data-state')).toBe('quiet');
    expect(await page.getByTestId('watch-banner').count()).toBe(0);
    // Saved for the next start.
    const saved = JSON.parse(readFileSync(join(h!.configDir, 'watch.json'), 'utf8')) as { watches: { queueIds: string[] }[] };
    expect(saved.watches[0]?.queueIds).toEqual([`stream:${dlq}`]);

    await redis.xadd(dlq, '*', 'body', '{"orderId":"A-1001"}', 'x-last-error', 'HTTP 422 Unprocessable Entity: amount must be positive');

    const alert = page.getByTestId('watch-alert');
    await alert.waitFor({ timeout: 30_000 });
    expect(await alert.getAttribute('data-event')).toBe('first-message');
    const text = await alert.innerText();
    expect(text).toContain(`Dead letters in ${dlq}`);
    expect(text).toContain(`${dlq} received its first message.`);
    expect(text).toContain('non-retryable (HTTP 422) — HTTP 422 Unprocessable Entity: amount must be positive');
    expect(await page.getByTestId('watch-alert').count()).toBe(1); // exactly one alert for the first message
    await expect.poll(() => badge.getAttribute('data-state'), { timeout: 10_000 }).toBe('alert');
    expect(await badge.innerText()).toMatch(/1$/);
    // The queue list refreshes with the alert: its Depth column agrees with the badge.
    await expect.poll(() => row.locator('[data-col="depth"]').innerText(), { timeout: 10_000 }).toBe('1');
    const sidebarBadge = page.getByRole('navigation', { name: 'Connections' }).getByTestId('watch-connection-badge');
    expect(await sidebarBadge.getAttribute('data-state')).toBe('alert');
    expect(await sidebarBadge.innerText()).toMatch(/1\/1$/);

    await alert.getByRole('button', { name: 'Dismiss' }).click();
    expect(await page.getByTestId('watch-banner').count()).toBe(0);
    expect(await badge.getAttribute('data-state')).toBe('quiet');
    expect(await sidebarBadge.getAttribute('data-state')).toBe('quiet');

    // A second message is growth, raised once more.
    await redis.xadd(dlq, '*', 'body', '{"orderId":"A-1002"}', 'x-last-error', 'connect ETIMEDOUT');
    await page.getByTestId('watch-alert').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('watch-alert').getAttribute('data-event')).toBe('grew');
    expect(await page.getByTestId('watch-alert').innerText()).toContain(`${dlq} grew by 1`);
  });
});
