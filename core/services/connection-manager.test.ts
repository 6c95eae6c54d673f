import { copyFile, mkdtemp, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ConnectionConfig } from '../../shared/domain';
import { createSnapshotAdapter } from '../adapters/snapshot';
import type { BrokerAdapter } from '../adapters/types';
import { ConnectionManager, DEMO_CONNECTION_ID } from './connection-manager';
import { ProfileStore } from './profile-store';

const fixture = fileURLToPath(new URL('../../test/fixtures/snapshots/two-queues.jsonl', import.meta.url));

/** Records which configs adapters were made for and which were closed (real snapshot adapters underneath). */
function trackingFactory() {
  const made: { config: ConnectionConfig; closed: number }[] = [];
  const factory = (config: ConnectionConfig): BrokerAdapter => {
    const entry = { config, closed: 0 };
    made.push(entry);
    const inner = createSnapshotAdapter({ kind: 'snapshot', path: config.kind === 'snapshot' ? config.path : fixture });
    return {
      broker: inner.broker,
      testConnection: (s) => inner.testConnection(s),
      listQueues: (o, s) => inner.listQueues(o, s),
      getQueue: (q, s) => inner.getQueue(q, s),
      peek: (q, o, s) => inner.peek(q, o, s),
      close: async () => {
        entry.closed++;
        await inner.close();
      },
    };
  };
  return { made, factory };
}

let dir: string;
let demo: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-cm-'));
  demo = join(dir, 'demo.jsonl');
  await copyFile(fixture, demo);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('ConnectionManager', () => {
  it('lists the demo only while its file exists', async () => {
    const store = await ProfileStore.open({ configDir: join(dir, 'cfg') });
    const cm = new ConnectionManager({ store, demoSnapshotPath: demo });
    expect(cm.list().map((p) => [p.id, p.builtIn])).toEqual([[DEMO_CONNECTION_ID, true]]);
    expect(cm.demoConnectionId()).toBe('demo');
    await unlink(demo);
    expect(cm.list()).toEqual([]);
    expect(cm.demoConnectionId()).toBeNull();
    expect(() => cm.get('demo')).toThrow(/No connection with id "demo"/);
  });

  it('creates adapters lazily, once per id, with secrets merged; closes them on update, remove and closeAll', async () => {
    const store = await ProfileStore.open({ configDir: join(dir, 'cfg') });
    const { made, factory } = trackingFactory();
    const cm = new ConnectionManager({ store, demoSnapshotPath: demo, createAdapter: factory });
    const p = await cm.save({ name: 'r', config: { kind: 'redis', url: 'redis://:pw@127.0.0.1:6379' } });
    expect(made).toHaveLength(0);
    const a1 = cm.adapter(p.id);
    expect(cm.adapter(p.id)).toBe(a1);
    expect(made).toHaveLength(1);
    expect(made[0]?.config).toMatchObject({ kind: 'redis', password: 'pw' });

    await cm.save({ id: p.id, name: 'r2', config: { kind: 'redis', url: 'redis://127.0.0.1:6380' } });
    expect(made[0]?.closed).toBe(1);
    const a2 = cm.adapter(p.id);
    expect(a2).not.toBe(a1);
    expect(made[1]?.config).toMatchObject({ url: 'redis://127.0.0.1:6380', password: 'pw' });

    cm.adapter('demo');
    await cm.remove(p.id);
    expect(made[1]?.closed).toBe(1);
    await cm.closeAll();
    expect(made.map((m) => m.closed)).toEqual([1, 1, 1]);
    await cm.closeAll(); // idempotent
    expect(made.map((m) => m.closed)).toEqual([1, 1, 1]);
  });

  it('session snapshots: same path → same id, never saved, closable; saving one makes it a profile', async () => {
    const store = await ProfileStore.open({ configDir: join(dir, 'cfg') });
    const cm = new ConnectionManager({ store });
    const s1 = cm.openSnapshot(fixture);
    expect(cm.openSnapshot(fixture)).toEqual(s1);
    expect(cm.list().map((p) => p.id)).toEqual([s1.id]);
    expect(store.list()).toEqual([]);
    expect((await cm.adapter(s1.id).listQueues({})).length).toBe(2);
    const saved = await cm.save({ id: s1.id, name: 'kept', config: s1.config });
    expect(saved.id).not.toBe(s1.id);
    expect(cm.list().map((p) => p.name)).toEqual(['kept']);
    const s2 = cm.openSnapshot(demo);
    expect(await cm.remove(s2.id)).toBe(true);
    expect(await cm.remove(s2.id)).toBe(false);
  });

  it('the demo cannot be saved over or removed', async () => {
    const store = await ProfileStore.open({ configDir: join(dir, 'cfg') });
    const cm = new ConnectionManager({ store, demoSnapshotPath: demo });
    await expect(cm.save({ id: 'demo', name: 'x', config: { kind: 'snapshot', path: demo } })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(cm.remove('demo')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});
