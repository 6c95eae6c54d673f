/**
 * The audit page end to end, in Chromium through the browser bridge, on the seeded brokers
 * (`npm run seed` incl. scripts/seed/misconfig.ts, run here): it shows the deliberate
 * misconfigurations by queue with why and fix, and applies one-click fixes (RabbitMQ DLX policy for
 * `shipments.work`; SQS RedrivePolicy on `invoices` → `invoices-dlq`) after a confirmation with a
 * before/after diff; the fixes are on the broker and in the audit log. They are undone afterwards
 * (the seed's state is restored).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetQueueAttributesCommand, GetQueueUrlCommand, SQSClient, SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { createLocalConnection } from './app';
import { startHarness, type Harness } from './harness';
import { seedRedis } from '../../scripts/seed/redis';
import { seedRabbitmq } from '../../scripts/seed/rabbitmq';
import { seedSqs } from '../../scripts/seed/sqs';
import { seedMisconfig } from '../../scripts/seed/misconfig';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, REDIS_URL, SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS } from '../integration/env';

let h: Harness;
let page: Page;
const MGMT_AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;
const sqs = new SQSClient({ endpoint: SQS_ENDPOINT, region: SQS_REGION, credentials: SQS_TEST_CREDENTIALS });

beforeAll(async () => {
  process.env.AWS_ACCESS_KEY_ID ??= SQS_TEST_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY ??= SQS_TEST_CREDENTIALS.secretAccessKey;
  await seedRedis(REDIS_URL);
  await seedRabbitmq(AMQP_URL, RABBITMQ_MANAGEMENT_URL);
  await seedSqs(SQS_ENDPOINT, SQS_REGION);
  await seedMisconfig({ only: new Set(['redis', 'rabbitmq', 'sqs']), redisUrl: REDIS_URL, amqpUrl: AMQP_URL, sqsEndpoint: SQS_ENDPOINT, region: SQS_REGION });
  h = await startHarness({ demoSnapshotPath: null });
  page = h.page;
  await h.openApp();
}, 180_000);

afterAll(async () => {
  await h.close();
  // Put the seed back as it was: shipments.work without a DLX policy, invoices without a RedrivePolicy.
  await fetch(`${RABBITMQ_MANAGEMENT_URL}/api/policies/%2F/qs-dlx-shipments.work`, { method: 'DELETE', headers: { authorization: MGMT_AUTH } }).catch(() => undefined);
  const url = (await sqs.send(new GetQueueUrlCommand({ QueueName: 'invoices' }))).QueueUrl;
  if (url !== undefined) await sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { RedrivePolicy: '' } })).catch(() => undefined);
  sqs.destroy();
});

/** The finding card of `rule` on queue `target`. */
const finding = (target: string, rule: string) => page.locator(`[data-testid="audit-finding"][data-target="${target}"][data-rule="${rule}"]`);

async function openAudit(connectionName: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Connections' }).getByRole('button', { name: new RegExp(`^${connectionName}`) }).click();
  await page.getByRole('heading', { name: connectionName, level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Audit configuration' }).click();
  await page.getByRole('heading', { level: 1, name: `Configuration audit — ${connectionName}` }).waitFor();
  await page.getByTestId('audit-summary').waitFor({ timeout: 60_000 });
}

describe('audit page on the seeded brokers', () => {
  it('RabbitMQ: unroutable DLX, TTL without DLX (errors) and a queue without DLX (warning, with a one-click fix), with why and fix', async () => {
    await createLocalConnection(page, 'RabbitMQ', 'Seeded RabbitMQ');
    await openAudit('Seeded RabbitMQ');
    const unroutable = finding('audit.work', 'rabbitmq.dead-letters-unroutable');
    await unroutable.waitFor();
    const text = await unroutable.innerText();
    expect(text).toContain('Error');
    expect(text).toContain("no binding that matches routing key 'audit.work': dead letters are dropped");
    expect(text).toContain('Why:');
    expect(text).toContain('Fix:');
    expect(await finding('notifications', 'rabbitmq.ttl-or-max-length-without-dlx').innerText()).toContain('message TTL 60 min');
    const nodlx = finding('shipments.work', 'rabbitmq.no-dead-letter-exchange');
    expect(await nodlx.innerText()).toContain('Warning');
    await expect(nodlx.getByRole('button', { name: 'Add DLX policy → shipments.dlq…' }).count()).resolves.toBe(1);
    // Laid out like the other screens: padded away from the sidebar and the top edge, "Run again" in the header's top right.
    const heading = await page.getByRole('heading', { level: 1, name: /^Configuration audit/ }).boundingBox();
    const sidebar = await page.getByRole('navigation', { name: 'Connections' }).boundingBox();
    const again = await page.getByRole('button', { name: 'Run again' }).boundingBox();
    if (!heading || !sidebar || !again) throw new Error('audit page not laid out');
    expect(heading.x - (sidebar.x + sidebar.width)).toBeGreaterThanOrEqual(12);
    expect(again.y).toBeLessThan(heading.y + heading.height);
    expect(again.x + again.width).toBeGreaterThan(heading.x + heading.width);
    const back = await page.getByRole('button', { name: '← Queues' }).boundingBox();
    expect(back && back.x - heading.x).toBeLessThan(20); // left-aligned above the title, not centred
    if (process.env.QS_AUDIT_SCREENSHOTS) await page.screenshot({ path: join(process.env.QS_AUDIT_SCREENSHOTS, 'audit-page.png') });
    // Grouped by queue: the audit.work group holds only its own findings.
    const group = page.getByRole('region', { name: 'audit.work' });
    await expect(group.getByTestId('audit-finding').count()).resolves.toBe(1);
  });

  it('RabbitMQ: one-click DLX policy for shipments.work, previewed and applied', async () => {
    const nodlx = finding('shipments.work', 'rabbitmq.no-dead-letter-exchange');
    await nodlx.getByRole('button', { name: 'Add DLX policy → shipments.dlq…' }).click();
    const dialog = page.getByTestId('audit-fix-dialog');
    const diff = dialog.getByTestId('audit-diff');
    await diff.waitFor();
    // Human labels, not field names; an absent value reads "none".
    const row = (label: string) => diff.locator('tr', { has: page.locator('th', { hasText: new RegExp(`^${label}$`) }) });
    expect(await row('Policy').locator('.audit-diff-before').innerText()).toBe('none');
    expect(await row('Policy').locator('.audit-diff-after').innerText()).toBe('qs-dlx-shipments.work');
    expect(await row('Policy pattern').locator('.audit-diff-after').innerText()).toBe('^shipments\\.work$');
    expect(await row('Effective policy').locator('.audit-diff-before').innerText()).toBe('none');
    expect(await row('Effective policy').locator('.audit-diff-after').innerText()).toContain('"dead-letter-routing-key": "shipments.dlq"');
    const dialogText = await dialog.innerText();
    for (const internal of ['effectivePolicyDefinition', 'policyPattern', 'policyPriority', 'null']) expect(dialogText).not.toContain(internal);
    if (process.env.QS_AUDIT_SCREENSHOTS) await page.screenshot({ path: join(process.env.QS_AUDIT_SCREENSHOTS, 'audit-fix-dialog.png') });
    expect(await dialog.innerText()).toContain("Dead letters go through the default exchange straight to queue 'shipments.dlq'.");
    await dialog.getByRole('button', { name: 'Apply fix' }).click();
    await dialog.getByRole('heading', { name: 'Fix applied' }).waitFor({ timeout: 30_000 });
    await dialog.getByRole('button', { name: 'Close' }).click();
    await nodlx.waitFor({ state: 'detached', timeout: 30_000 });
    const r = await fetch(`${RABBITMQ_MANAGEMENT_URL}/api/queues/%2F/shipments.work`, { headers: { authorization: MGMT_AUTH } });
    const q = (await r.json()) as { policy: string | null; effective_policy_definition: Record<string, unknown> };
    expect(q.policy).toBe('qs-dlx-shipments.work');
    expect(q.effective_policy_definition).toEqual({ 'dead-letter-exchange': '', 'dead-letter-routing-key': 'shipments.dlq' });
  });

  it('Redis: no persistence on the server, removeOnFail: true, stranded pending entries', async () => {
    await createLocalConnection(page, 'Redis', 'Seeded Redis');
    await openAudit('Seeded Redis');
    await finding('127.0.0.1:6379', 'redis.no-persistence').waitFor();
    expect(await finding('mailer', 'redis.bullmq-remove-on-fail').innerText()).toContain('5 of 5 recent jobs of mailer have removeOnFail true');
    expect(await finding('orders-stream', 'redis.stream-stranded-pending-entries').innerText()).toContain('consumer worker-1');
    await expect(finding('payments', 'redis.bullmq-remove-on-fail').count()).resolves.toBe(0);
  });

  it('SQS: one-click RedrivePolicy after a before/after confirmation; logged; the finding goes away', async () => {
    await createLocalConnection(page, 'Amazon SQS', 'Seeded SQS');
    await openAudit('Seeded SQS');
    const invoices = finding('invoices', 'sqs.no-redrive-policy');
    await invoices.waitFor();
    expect(await finding('emails', 'sqs.no-redrive-policy').count()).toBe(1);
    expect(await finding('orders-dlq', 'sqs.dlq-not-empty').innerText()).toContain('20 dead letters (from orders)');
    await invoices.getByRole('button', { name: 'Set RedrivePolicy → invoices-dlq…' }).click();
    const dialog = page.getByTestId('audit-fix-dialog');
    await dialog.getByRole('heading', { name: 'Apply this fix?' }).waitFor();
    const diff = dialog.getByTestId('audit-diff');
    await diff.waitFor();
    const row = diff.locator('tr.audit-diff-changed');
    expect(await row.locator('th').innerText()).toBe('Redrive policy');
    expect(await row.locator('.audit-diff-before').innerText()).toBe('none');
    expect(await row.locator('.audit-diff-after').innerText()).toContain('"maxReceiveCount": 5');
    await dialog.getByRole('button', { name: 'Apply fix' }).click();
    await dialog.getByRole('heading', { name: 'Fix applied' }).waitFor({ timeout: 30_000 });
    await dialog.getByRole('button', { name: 'Close' }).click();
    // The audit ran again: the finding is gone, emails (no DLQ candidate) is still there.
    await invoices.waitFor({ state: 'detached', timeout: 30_000 });
    expect(await finding('emails', 'sqs.no-redrive-policy').count()).toBe(1);
    // On the broker…
    const url = (await sqs.send(new GetQueueUrlCommand({ QueueName: 'invoices' }))).QueueUrl ?? '';
    const attrs = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['RedrivePolicy'] }))).Attributes ?? {};
    expect(JSON.parse(attrs.RedrivePolicy ?? '{}')).toMatchObject({ maxReceiveCount: 5 });
    // …and in the audit log.
    const log = readFileSync(join(h.configDir, 'audit-log.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { action: string; target: string; status: string; actor: string });
    expect(log.filter((e) => e.action === 'audit-fix').map((e) => `${e.actor} ${e.target} ${e.status}`)).toEqual(['app shipments.work completed', 'app invoices completed']);
  });
});
