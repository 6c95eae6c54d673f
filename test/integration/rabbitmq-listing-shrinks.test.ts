import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfirmChannel } from 'amqplib';
import { createRabbitmqAdapter } from '../../core/adapters/rabbitmq';
import type { ManagementResponse } from '../../core/adapters/rabbitmq/management';
import type { BrokerAdapter } from '../../core/adapters/types';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, uniqueName } from './env';
import { closeNative, nativeChannel } from './rabbitmq-native';

/**
 * A RabbitMQ queue listing that shrinks while it is paged (500 queues per page): queues deleted
 * between page 1 and page 2 made page 2 "out of range" (HTTP 400 "Page out of range, page: 2 page
 * size: 500, len: 475"), and the whole listing failed with BROKER_ERROR — seen in a CI run whose
 * tests deleted their queues while another listed them; on a busy broker, auto-delete and
 * exclusive reply queues do the same. The listing now starts again from page 1.
 */

const auth = `Basic ${Buffer.from('guest:guest').toString('base64')}`;
const prefix = uniqueName('qs-shrink');
const names = Array.from({ length: 510 }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);
let ch: ConfirmChannel;
let adapter: BrokerAdapter;

/** How many of this test's queues the management API lists now. */
async function listedCount(): Promise<number> {
  const url = `${RABBITMQ_MANAGEMENT_URL}/api/queues/%2F?page=1&page_size=500&columns=name&name=${encodeURIComponent(`^${prefix}-`)}&use_regex=true`;
  const res = await fetch(url, { headers: { authorization: auth } });
  const body = (await res.json()) as { filtered_count: number };
  return body.filtered_count;
}

beforeAll(async () => {
  ch = await nativeChannel();
  for (const n of names) await ch.assertQueue(n, { durable: false, autoDelete: false });
  adapter = createRabbitmqAdapter({ kind: 'rabbitmq', url: AMQP_URL, managementUrl: RABBITMQ_MANAGEMENT_URL });
}, 60_000);

afterAll(async () => {
  for (const n of names) await ch.deleteQueue(n).catch(() => undefined);
  await adapter.close();
  await closeNative();
}, 60_000);

describe('a RabbitMQ queue listing that shrinks between its pages', () => {
  it('lists every queue still there instead of failing on an out-of-range page', async () => {
    const deleted = names.slice(0, 30); // the first names: every later queue moves up one page position
    const mgmt = (adapter as unknown as { mgmt: { get: (path: string, signal?: AbortSignal, timeoutMs?: number) => Promise<ManagementResponse> } }).mgmt;
    const get = mgmt.get.bind(mgmt);
    let pagesOfThisListing = 0;
    mgmt.get = async (path, signal, timeoutMs) => {
      const res = await get(path, signal, timeoutMs);
      if (path.startsWith('/api/queues/') && path.includes('use_regex=true') && path.endsWith('&page=1') && pagesOfThisListing++ === 0) {
        // Between page 1 and page 2: 30 queues go, so 480 remain and page 2 (from item 501) is out of range.
        for (const n of deleted) await ch.deleteQueue(n);
        for (let i = 0; i < 100 && (await listedCount()) > 480; i++) await new Promise((r) => setTimeout(r, 100));
        expect(await listedCount()).toBe(480);
      }
      return res;
    };
    const listed = await adapter.listQueues({ pattern: `${prefix}-*`, limit: 10_000 });
    expect(pagesOfThisListing).toBeGreaterThan(1); // the listing was read again from page 1
    expect(listed.map((q) => q.name).sort()).toEqual(names.slice(30));
  }, 60_000);
});
