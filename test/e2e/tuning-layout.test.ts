/**
 * The tuning panel's charts are laid out (ui-pass: the retry chart's legend was drawn over the plot,
 * and the histogram's canvas sat outside its box over the content below — uPlot's stylesheet came
 * with the lazily loaded chart chunk, as a CSS file nothing loaded). Checked by geometry in Chromium:
 * each chart's canvas inside its box, the legend below the plot area without overlapping it, and
 * the content after a chart starting below it.
 *
 * Needs a built renderer (`npm run build`, or `npx tsx test/e2e/build-renderer.ts`), Debian chromium
 * and the fauxqs SQS emulator (started by the harness when down).
 */
import { join } from 'node:path';
import { CreateQueueCommand, DeleteQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from '../integration/env';
import { createLocalConnection, openConnection, openQueue } from './app';
import { startHarness, type Harness } from './harness';

const sqs = new SQSClient({ region: SQS_REGION, endpoint: SQS_ENDPOINT, credentials: SQS_TEST_CREDENTIALS });
const name = uniqueName('tune-layout');
let url = '';
let h: Harness | undefined;
let page: Page;

beforeAll(async () => {
  url = (await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '2' } }))).QueueUrl ?? '';
  h = await startHarness({ demoSnapshotPath: null, viewport: { width: 1280, height: 1000 } });
  page = h.page;
  await h.openApp();
});

afterAll(async () => {
  await h?.close();
  if (url !== '') await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
  sqs.destroy();
});

type Box = { top: number; bottom: number; left: number; right: number } | null;
interface ChartGeometry {
  box: Box;
  canvas: Box;
  plot: Box;
  legend: Box;
  next: Box;
}

/** Boxes (CSS px) of a chart's container, canvas, plot area (uPlot's cursor layer), legend and the element after the chart. */
function geometry(testId: string): Promise<ChartGeometry> {
  // A string: this file is type-checked without the DOM library.
  return page.evaluate<ChartGeometry>(`(() => {
    const el = document.querySelector('[data-testid="${testId}"]');
    const r = (e) => { if (!e) return null; const b = e.getBoundingClientRect(); return { top: b.top, bottom: b.bottom, left: b.left, right: b.right }; };
    return { box: r(el), canvas: r(el.querySelector('canvas')), plot: r(el.querySelector('.u-over')), legend: r(el.querySelector('.u-legend')), next: r(el.nextElementSibling) };
  })()`);
}

const inside = (inner: Box, outer: Box): boolean => inner !== null && outer !== null && inner.top >= outer.top - 1 && inner.bottom <= outer.bottom + 1 && inner.left >= outer.left - 1 && inner.right <= outer.right + 1;
const overlapsVertically = (a: Box, b: Box): boolean => a !== null && b !== null && a.top < b.bottom - 1 && b.top < a.bottom - 1;

describe('tuning charts in the browser', () => {
  it('draws the histogram and the retry chart inside their boxes, the legend below the plot, nothing over the content after them', async () => {
    await createLocalConnection(page, 'Amazon SQS', 'Tune layout');
    await openConnection(page, 'Tune layout');
    await openQueue(page, name);
    const panel = page.getByTestId('tuning-panel');
    await panel.locator('summary').first().click();
    await panel.getByTestId('tuning-source').selectOption('file');
    await panel.getByLabel('Durations', { exact: true }).fill(`duration_ms\n${Array.from({ length: 200 }, (_, i) => 2000 + (i % 10) * 100).join('\n')}\n`);
    await panel.getByTestId('tuning-measure').click();
    await panel.getByTestId('tuning-report').waitFor({ timeout: 30_000 });
    await panel.getByTestId('tuning-histogram').locator('canvas').first().waitFor();
    await panel.getByTestId('retry-chart').locator('canvas').first().waitFor();
    await page.evaluate(`new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done())))`);
    if (process.env.QUEUESCOPE_TUNE_SHOT) await panel.screenshot({ path: join(process.env.QUEUESCOPE_TUNE_SHOT, 'tuning-layout.png') });

    const hist = await geometry('tuning-histogram');
    expect(inside(hist.canvas, hist.box)).toBe(true);
    expect(inside(hist.plot, hist.canvas)).toBe(true);
    expect(overlapsVertically(hist.box, hist.next)).toBe(false);

    const retry = await geometry('retry-chart');
    expect(retry.legend).not.toBeNull();
    expect(inside(retry.canvas, retry.box)).toBe(true);
    expect(inside(retry.plot, retry.canvas)).toBe(true);
    expect(inside(retry.legend, retry.box)).toBe(true);
    // The legend is under the plot, not over it.
    expect(overlapsVertically(retry.legend, retry.plot)).toBe(false);
    expect(overlapsVertically(retry.legend, retry.canvas)).toBe(false);
  });
});
