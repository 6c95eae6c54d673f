import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ProfileStore } from './profile-store';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-profiles-inspect-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const rules = {
  queues: [{ match: 'orders*', keyRules: [{ kind: 'template' as const, template: '{body.orderId}:{body.operation}' }], snapshotFields: ['order.*'], queueIsSnapshot: false }],
};

describe('ProfileStore inspect settings', () => {
  it('reads a profiles.json written before inspect settings existed (no field) as "none saved"', async () => {
    await writeFile(join(dir, 'profiles.json'), JSON.stringify({ version: 1, profiles: [{ id: 'p1', name: 'Local', config: { kind: 'redis', url: 'redis://127.0.0.1:6379' } }] }));
    const s = await ProfileStore.open({ configDir: dir });
    expect(s.list()).toHaveLength(1);
    expect(s.inspectSettings('p1')).toEqual({ settings: null, problem: null });
    expect(s.inspectSettings('unknown')).toEqual({ settings: null, problem: null });
  });

  it('saves settings with the profile, keeps them when the connection is edited, and removes them on null', async () => {
    const s = await ProfileStore.open({ configDir: dir });
    const p = await s.save({ name: 'Local', config: { kind: 'redis', url: 'redis://127.0.0.1:6379' } });
    await s.saveInspectSettings(p.id, rules);
    const again = await ProfileStore.open({ configDir: dir });
    expect(again.inspectSettings(p.id).settings?.queues[0]).toMatchObject({ match: 'orders*', snapshotFields: ['order.*'] });
    await again.save({ id: p.id, name: 'Local renamed', config: { kind: 'redis', url: 'redis://127.0.0.1:6380' } });
    const third = await ProfileStore.open({ configDir: dir });
    expect(third.get(p.id)?.name).toBe('Local renamed');
    expect(third.inspectSettings(p.id).settings?.queues[0]?.keyRules).toEqual([{ kind: 'template', template: '{body.orderId}:{body.operation}' }]);
    await third.saveInspectSettings(p.id, null);
    const file = JSON.parse(await readFile(join(dir, 'profiles.json'), 'utf8')) as { profiles: Record<string, unknown>[] };
    expect(file.profiles[0]).not.toHaveProperty('inspect');
  });

  it('refuses invalid settings and unknown ids with the problem named', async () => {
    const s = await ProfileStore.open({ configDir: dir });
    const p = await s.save({ name: 'Local', config: { kind: 'redis', url: 'redis://127.0.0.1:6379' } });
    await expect(s.saveInspectSettings(p.id, { queues: [{ match: '', keyRules: [], snapshotFields: [], queueIsSnapshot: false }] })).rejects.toThrow(/Invalid inspect settings: queues\.0\.match/);
    await expect(s.saveInspectSettings('nope', rules)).rejects.toThrow(/No saved connection with id "nope"/);
  });

  it('a stored value that does not validate is reported and ignored, the connection stays usable and the value is kept in the file', async () => {
    const bad = { queues: [{ match: 'x', keyRules: [{ kind: 'regex', pattern: '.*' }] }] };
    await writeFile(join(dir, 'profiles.json'), JSON.stringify({ version: 1, profiles: [{ id: 'p1', name: 'Local', config: { kind: 'redis', url: 'redis://127.0.0.1:6379' }, inspect: bad }] }));
    const s = await ProfileStore.open({ configDir: dir });
    expect(s.list()).toHaveLength(1);
    const r = s.inspectSettings('p1');
    expect(r.settings).toBeNull();
    expect(r.problem).toMatch(/inspect settings of connection "Local" are invalid/);
    await s.save({ id: 'p1', name: 'Local 2', config: { kind: 'redis', url: 'redis://127.0.0.1:6379' } });
    const file = JSON.parse(await readFile(join(dir, 'profiles.json'), 'utf8')) as { profiles: Record<string, unknown>[] };
    expect(file.profiles[0]?.inspect).toEqual(bad);
  });
});
