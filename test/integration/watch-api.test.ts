/**
 * DLQ alerts through the app's API (`watch.set`, `watch.list`, `watch.events`) on the real Redis:
 * what the renderer and the browser bridge call, the watch list saved in `watch.json`, and a new
 * service instance picking it up (app restart).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiResult } from '../../shared/api/contract';
import type { ConnectionProfile } from '../../shared/domain';
import type { WatchEventsPage, WatchListView } from '../../shared/api/watch';
import { watchAlertText } from '../../shared/api/watch';
import { createWebServices, type WebServices } from '../../core/web/main';
import { dispatchApi } from '../../core/services/api';
import { REDIS_URL, uniqueName } from './env';

const redis = new Redis(REDIS_URL);
const dlq = `${uniqueName('watchapi')}-dlq`;
let dir: string;
let services: WebServices | null = null;
let profile: ConnectionProfile;

async function call<T>(method: string, input: unknown): Promise<T> {
  if (services === null) throw new Error('no services');
  const r = (await dispatchApi(services.handlers, method, input)) as ApiResult<T>;
  if (!r.ok) throw new Error(`${method}: ${r.error.code} ${r.error.message}`);
  return r.value;
}
async function until<T>(get: () => Promise<T>, ok: (v: T) => boolean, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-watch-api-'));
  const id = await redis.xadd(dlq, '*', 'body', 'seed');
  await redis.xdel(dlq, id!);
  services = await createWebServices({ configDir: dir, demoSnapshotPath: null, version: '0.0.0-test' });
  profile = await call<ConnectionProfile>('connections.save', { name: 'Watch Redis', config: { kind: 'redis', url: REDIS_URL } });
});

afterAll(async () => {
  await services?.close();
  await redis.del(dlq);
  redis.disconnect();
  await rm(dir, { recursive: true, force: true });
});

describe('watch.* API on real Redis', () => {
  it('watches a chosen DLQ, saves the list, reports first-message once through watch.events, and survives a restart', async () => {
    const queueId = `stream:${dlq}`;
    const set = await call<WatchListView>('watch.set', { connectionId: profile.id, queueIds: [queueId], intervalMs: 1_000 });
    expect(set.watched).toEqual([expect.objectContaining({ connectionId: profile.id, queueId, intervalMs: 1_000 })]);
    const saved = JSON.parse(await readFile(join(dir, 'watch.json'), 'utf8')) as unknown;
    expect(saved).toEqual({ version: 1, watches: [{ connectionId: profile.id, queueIds: [queueId], intervalMs: 1_000 }] });

    const listed = await until(() => call<WatchListView>('watch.list', {}), (v) => v.watched[0]?.status === 'ok', 10_000, 'the first poll');
    expect(listed.watched[0]).toMatchObject({ queueName: dlq, depth: 0, error: null, lastEvent: null });
    const first = await call<WatchEventsPage>('watch.events', {});
    expect(first.events.map((e) => e.type)).toEqual(['status']);

    await redis.xadd(dlq, '*', 'body', '{"orderId":"A-7"}', 'error', 'HTTP 404 customer not found');
    const page = await until(() => call<WatchEventsPage>('watch.events', { since: first.cursor }), (v) => v.events.length > 0, 10_000, 'first-message');
    expect(page.events).toHaveLength(1);
    const e = page.events[0]!;
    expect(e).toMatchObject({ type: 'first-message', connectionId: profile.id, queueId, depth: 1, delta: 1, seq: first.cursor + 1, failure: { class: 'non-retryable', label: 'HTTP 404' } });
    expect(watchAlertText(e)).toEqual({ title: `Dead letters in ${dlq}`, body: `${dlq} received its first message. Newest: non-retryable (HTTP 404) — HTTP 404 customer not found.` });
    expect((await call<WatchListView>('watch.list', {})).watched[0]).toMatchObject({ depth: 1, lastEvent: { type: 'first-message' } });
    await new Promise((r) => setTimeout(r, 2_200));
    expect((await call<WatchEventsPage>('watch.events', { since: page.cursor })).events).toEqual([]);

    // Restart: a new service instance over the same folder watches the saved list again.
    await services?.close();
    services = await createWebServices({ configDir: dir, demoSnapshotPath: null, version: '0.0.0-test' });
    const again = await until(() => call<WatchListView>('watch.list', {}), (v) => v.watched[0]?.status === 'ok', 10_000, 'the watch after restart');
    expect(again.watched[0]).toMatchObject({ queueId, depth: 1, intervalMs: 1_000 });

    // An empty list stops watching and is saved.
    expect((await call<WatchListView>('watch.set', { connectionId: profile.id, queueIds: [] })).watched).toEqual([]);
    expect(JSON.parse(await readFile(join(dir, 'watch.json'), 'utf8'))).toEqual({ version: 1, watches: [] });
  });

  it('refuses unknown connections and bad input by name; a corrupt watch.json is moved aside, not fatal', async () => {
    if (services === null) throw new Error('no services');
    const r = await dispatchApi(services.handlers, 'watch.set', { connectionId: 'nope', queueIds: ['x'] });
    expect(r).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT', message: expect.stringMatching(/No connection with id "nope"/) as unknown } });
    const bad = await dispatchApi(services.handlers, 'watch.set', { connectionId: profile.id, queueIds: ['x'], intervalMs: 10 });
    expect(bad).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT', message: expect.stringMatching(/intervalMs/) as unknown } });

    await services.close();
    await writeFile(join(dir, 'watch.json'), '{"version":1,"watches":[{"connectionId":');
    services = await createWebServices({ configDir: dir, demoSnapshotPath: null, version: '0.0.0-test' });
    expect((await call<WatchListView>('watch.list', {})).watched).toEqual([]);
    await expect(readFile(join(dir, 'watch.json'), 'utf8')).rejects.toThrow();
  });
});
