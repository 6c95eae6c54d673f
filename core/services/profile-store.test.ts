import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ProfileStore, defaultConfigDir, migrateProfilesFile, type SecretCipher } from './profile-store';

/**
 * A reversible stand-in for safeStorage's async API (XOR + a key marker), so tests can see
 * encrypted ≠ plain. `key` is the marker written by `encrypt`; `oldKeys` still decrypt but with
 * `shouldReEncrypt: true`, like a rotated safeStorage key.
 */
function fakeCipher(available = true, key = 'ENC:', oldKeys: string[] = []): SecretCipher & { calls: number; decrypts: number } {
  const c = {
    calls: 0,
    decrypts: 0,
    isAvailable: () => Promise.resolve(available),
    encrypt: (plain: string) => {
      c.calls++;
      return Promise.resolve(Buffer.concat([Buffer.from(key), Buffer.from(plain, 'utf8').map((b) => b ^ 0x5a)]));
    },
    decrypt: (data: Buffer) => {
      c.decrypts++;
      const marker = data.subarray(0, 4).toString();
      if (marker !== key && !oldKeys.includes(marker)) return Promise.reject(new Error('bad blob'));
      return Promise.resolve({ plain: Buffer.from(data.subarray(4).map((b) => b ^ 0x5a)).toString('utf8'), shouldReEncrypt: marker !== key });
    },
  };
  return c;
}

async function secretsFile(): Promise<{ version: number; secrets: Record<string, string> }> {
  return JSON.parse(await readFile(join(dir, 'secrets.json'), 'utf8')) as { version: number; secrets: Record<string, string> };
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-profiles-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('defaultConfigDir', () => {
  it('honours QUEUESCOPE_HOME, then the Electron userData folder per platform', () => {
    expect(defaultConfigDir({ QUEUESCOPE_HOME: '/x/qs' }, 'linux', '/home/a')).toBe('/x/qs');
    expect(defaultConfigDir({}, 'linux', '/home/a')).toBe('/home/a/.config/Queuescope');
    expect(defaultConfigDir({ XDG_CONFIG_HOME: '/cfg' }, 'linux', '/home/a')).toBe('/cfg/Queuescope');
    expect(defaultConfigDir({}, 'darwin', '/Users/a')).toBe('/Users/a/Library/Application Support/Queuescope');
    expect(defaultConfigDir({ APPDATA: 'C:\\Users\\a\\AppData\\Roaming' }, 'win32', 'C:\\Users\\a')).toBe('C:\\Users\\a\\AppData\\Roaming\\Queuescope');
  });
});

describe('migrateProfilesFile', () => {
  it('turns a bare array (v0) into v1, keeps v1, rejects unknown shapes and newer versions', () => {
    expect(migrateProfilesFile([{ id: 'a' }])).toEqual({ version: 1, profiles: [{ id: 'a' }] });
    expect(migrateProfilesFile({ version: 1, profiles: [] })).toEqual({ version: 1, profiles: [] });
    expect(migrateProfilesFile({ hello: 1 })).toBeNull();
    expect(() => migrateProfilesFile({ version: 7, profiles: [] })).toThrow(/newer Queuescope/);
  });
});

describe('ProfileStore', () => {
  it('never writes secrets in plain text; with a cipher they survive a restart', async () => {
    const cipher = fakeCipher();
    const s1 = await ProfileStore.open({ configDir: dir, cipher });
    const p = await s1.save({ name: 'prod rabbit', config: { kind: 'rabbitmq', url: 'amqp://app:s3cr3t-pw@mq.example:5672/%2F' } });
    expect(p.hasSecret).toBe(true);
    expect(p.config).toEqual({ kind: 'rabbitmq', url: 'amqp://app@mq.example:5672/%2F' });
    const onDisk = (await readFile(join(dir, 'profiles.json'), 'utf8')) + (await readFile(join(dir, 'secrets.json'), 'utf8'));
    expect(onDisk).not.toContain('s3cr3t-pw');
    expect((await stat(join(dir, 'profiles.json'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'secrets.json'))).mode & 0o777).toBe(0o600);

    const s2 = await ProfileStore.open({ configDir: dir, cipher });
    expect(s2.problems).toEqual([]);
    expect(s2.list()).toEqual([{ ...p, hasSecret: true, builtIn: false }]);
    expect(s2.resolve(p.id)).toMatchObject({ kind: 'rabbitmq', password: 's3cr3t-pw' });
  });

  it('without a cipher keeps secrets in memory only: hasSecret false after restart', async () => {
    const s1 = await ProfileStore.open({ configDir: dir });
    const p = await s1.save({ name: 'sqs', config: { kind: 'sqs', region: 'eu-west-1', accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' } });
    expect(p.hasSecret).toBe(true);
    expect(s1.resolve(p.id)).toMatchObject({ secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' });
    const files = await readdir(dir);
    expect(files).toEqual(['profiles.json']);
    expect(await readFile(join(dir, 'profiles.json'), 'utf8')).not.toContain('wJalr');
    const s2 = await ProfileStore.open({ configDir: dir });
    expect(s2.get(p.id)?.hasSecret).toBe(false);
    expect(s2.resolve(p.id)).not.toHaveProperty('secretAccessKey');
    expect(s2.resolve(p.id)).toMatchObject({ accessKeyId: 'AKIAEXAMPLE' });
  });

  it('an update without secrets keeps the stored ones; a new password replaces it', async () => {
    const cipher = fakeCipher();
    const s = await ProfileStore.open({ configDir: dir, cipher });
    const p = await s.save({ name: 'r', config: { kind: 'redis', url: 'redis://127.0.0.1:6379', password: 'one' } });
    await s.save({ id: p.id, name: 'renamed', config: { kind: 'redis', url: 'redis://127.0.0.1:6380' } });
    expect(s.resolve(p.id)).toMatchObject({ url: 'redis://127.0.0.1:6380', password: 'one' });
    await s.save({ id: p.id, name: 'renamed', config: { kind: 'redis', url: 'redis://127.0.0.1:6380', password: 'two' } });
    const again = await ProfileStore.open({ configDir: dir, cipher });
    expect(again.resolve(p.id)).toMatchObject({ password: 'two' });
    expect(again.get(p.id)?.name).toBe('renamed');
  });

  it('remove deletes the profile and its secret', async () => {
    const cipher = fakeCipher();
    const s = await ProfileStore.open({ configDir: dir, cipher });
    const p = await s.save({ name: 'r', config: { kind: 'redis', url: 'redis://:pw@127.0.0.1:6379' } });
    expect(await s.remove(p.id)).toBe(true);
    expect(await s.remove(p.id)).toBe(false);
    const again = await ProfileStore.open({ configDir: dir, cipher });
    expect(again.list()).toEqual([]);
    expect(JSON.parse(await readFile(join(dir, 'secrets.json'), 'utf8'))).toEqual({ version: 1, secrets: {} });
  });

  it('a corrupt profiles.json is moved aside (not deleted), named in a problem, and the store starts empty', async () => {
    await writeFile(join(dir, 'profiles.json'), '{"version":1,"profiles":[{"id":"a"');
    const s = await ProfileStore.open({ configDir: dir, now: () => 1234 });
    expect(s.list()).toEqual([]);
    expect(s.problems).toHaveLength(1);
    expect(s.problems[0]?.message).toContain(join(dir, 'profiles.json'));
    expect(s.problems[0]?.message).toContain('profiles.json.corrupt-1234');
    expect(await readFile(join(dir, 'profiles.json.corrupt-1234'), 'utf8')).toBe('{"version":1,"profiles":[{"id":"a"');
    // still usable
    await s.save({ name: 'x', config: { kind: 'snapshot', path: '/tmp/x.jsonl' } });
    expect((await ProfileStore.open({ configDir: dir })).list()).toHaveLength(1);
  });

  it('a file of an unknown shape is also quarantined', async () => {
    await writeFile(join(dir, 'profiles.json'), '"just a string"');
    const s = await ProfileStore.open({ configDir: dir, now: () => 99 });
    expect(s.problems[0]?.message).toMatch(/not a profiles file/);
    expect((await readdir(dir)).sort()).toEqual(['profiles.json.corrupt-99']);
  });

  it('a newer file version is left alone and the store is read-only', async () => {
    const text = JSON.stringify({ version: 2, profiles: [], future: true });
    await writeFile(join(dir, 'profiles.json'), text);
    const s = await ProfileStore.open({ configDir: dir });
    expect(s.readOnly).toBe(true);
    expect(s.problems[0]?.message).toMatch(/newer Queuescope/);
    await expect(s.save({ name: 'x', config: { kind: 'snapshot', path: '/x.jsonl' } })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(await readFile(join(dir, 'profiles.json'), 'utf8')).toBe(text);
  });

  it('an invalid entry is skipped, reported, and written back unchanged on save', async () => {
    const bad = { id: 'b', name: 'broken', config: { kind: 'redis' } };
    await writeFile(join(dir, 'profiles.json'), JSON.stringify({ version: 1, profiles: [{ id: 'a', name: 'ok', config: { kind: 'snapshot', path: '/a.jsonl' } }, bad] }));
    const s = await ProfileStore.open({ configDir: dir });
    expect(s.list().map((p) => p.id)).toEqual(['a']);
    expect(s.problems[0]?.message).toMatch(/#2 is invalid \(config\.url/);
    await s.save({ name: 'new', config: { kind: 'snapshot', path: '/n.jsonl' } });
    const file = JSON.parse(await readFile(join(dir, 'profiles.json'), 'utf8'));
    expect(file.profiles).toContainEqual(bad);
    expect(file.profiles).toHaveLength(3);
  });

  it('migrates a v0 array file with a plain-text password into v1 + encrypted secret', async () => {
    await writeFile(join(dir, 'profiles.json'), JSON.stringify([{ id: 'old', name: 'old redis', config: { kind: 'redis', url: 'redis://127.0.0.1:6379', password: 'legacy-pw' } }]));
    const s = await ProfileStore.open({ configDir: dir, cipher: fakeCipher() });
    expect(s.resolve('old')).toMatchObject({ password: 'legacy-pw' });
    const text = await readFile(join(dir, 'profiles.json'), 'utf8');
    expect(text).not.toContain('legacy-pw');
    expect(JSON.parse(text).version).toBe(1);
    expect((await ProfileStore.open({ configDir: dir, cipher: fakeCipher() })).resolve('old')).toMatchObject({ password: 'legacy-pw' });
  });

  it('an undecryptable secret is a clear INVALID_INPUT and a plain rename keeps the blob', async () => {
    const cipher = fakeCipher();
    const s = await ProfileStore.open({ configDir: dir, cipher });
    const p = await s.save({ name: 'r', config: { kind: 'redis', url: 'redis://127.0.0.1:6379', password: 'pw' } });
    const blob = (await secretsFile()).secrets[p.id];
    const broken: SecretCipher = { isAvailable: () => Promise.resolve(true), encrypt: (p) => cipher.encrypt(p), decrypt: () => Promise.reject(new Error('keychain reset')) };
    const s2 = await ProfileStore.open({ configDir: dir, cipher: broken });
    expect(s2.get(p.id)?.hasSecret).toBe(true);
    expect(() => s2.resolve(p.id)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT', message: expect.stringMatching(/connection "r" cannot be decrypted.*enter it again/) }));
    expect((await secretsFile()).secrets[p.id]).toBe(blob);
    await s2.save({ id: p.id, name: 'renamed', config: { kind: 'redis', url: 'redis://127.0.0.1:6379' } });
    expect(() => s2.resolve(p.id)).toThrow(/cannot be decrypted/);
    expect((await secretsFile()).secrets[p.id]).toBe(blob);
    expect((await ProfileStore.open({ configDir: dir, cipher })).resolve(p.id)).toMatchObject({ password: 'pw' });
    // entering a new password replaces the blob and clears the error
    await s2.save({ id: p.id, name: 'renamed', config: { kind: 'redis', url: 'redis://127.0.0.1:6379', password: 'pw2' } });
    expect(s2.resolve(p.id)).toMatchObject({ password: 'pw2' });
    expect((await ProfileStore.open({ configDir: dir, cipher })).resolve(p.id)).toMatchObject({ password: 'pw2' });
  });

  it('decrypts every stored secret once at open; lookups do not call the cipher again', async () => {
    const cipher = fakeCipher();
    const s = await ProfileStore.open({ configDir: dir, cipher });
    const a = await s.save({ name: 'a', config: { kind: 'redis', url: 'redis://127.0.0.1:6379', password: 'pa' } });
    const b = await s.save({ name: 'b', config: { kind: 'rabbitmq', url: 'amqp://guest:pb@127.0.0.1:5672' } });
    const reader = fakeCipher();
    const s2 = await ProfileStore.open({ configDir: dir, cipher: reader });
    expect(reader.decrypts).toBe(2);
    expect(s2.resolve(a.id)).toMatchObject({ password: 'pa' });
    expect(s2.resolve(b.id)).toMatchObject({ password: 'pb' });
    expect(s2.list().map((p) => p.hasSecret)).toEqual([true, true]);
    expect(reader.decrypts).toBe(2);
  });

  it('re-encrypts and saves secrets the cipher flags shouldReEncrypt (rotated key)', async () => {
    const s = await ProfileStore.open({ configDir: dir, cipher: fakeCipher(true, 'OLD:') });
    const p = await s.save({ name: 'r', config: { kind: 'redis', url: 'redis://127.0.0.1:6379', password: 'rotate-me' } });
    const other = await s.save({ name: 'snap', config: { kind: 'snapshot', path: '/x.jsonl' } });
    const profilesBefore = await readFile(join(dir, 'profiles.json'), 'utf8');
    expect(Buffer.from((await secretsFile()).secrets[p.id] ?? '', 'base64').subarray(0, 4).toString()).toBe('OLD:');

    const rotated = fakeCipher(true, 'NEW:', ['OLD:']);
    const s2 = await ProfileStore.open({ configDir: dir, cipher: rotated });
    expect(s2.problems).toEqual([]);
    expect(s2.resolve(p.id)).toMatchObject({ password: 'rotate-me' });
    expect(rotated.calls).toBe(1);
    const stored = Buffer.from((await secretsFile()).secrets[p.id] ?? '', 'base64');
    expect(stored.subarray(0, 4).toString()).toBe('NEW:');
    expect(await readFile(join(dir, 'profiles.json'), 'utf8')).toBe(profilesBefore);
    expect(s2.get(other.id)?.hasSecret).toBe(false);

    // the new blob now decrypts with the new key alone, and is not re-encrypted again
    const newOnly = fakeCipher(true, 'NEW:');
    expect((await ProfileStore.open({ configDir: dir, cipher: newOnly })).resolve(p.id)).toMatchObject({ password: 'rotate-me' });
    expect(newOnly.calls).toBe(0);
  });

  it('does not re-encrypt a rotated secret when the store must not write', async () => {
    const s = await ProfileStore.open({ configDir: dir, cipher: fakeCipher(true, 'OLD:') });
    const p = await s.save({ name: 'r', config: { kind: 'redis', url: 'redis://127.0.0.1:6379', password: 'keep' } });
    const before = await readFile(join(dir, 'secrets.json'), 'utf8');
    const rotated = fakeCipher(true, 'NEW:', ['OLD:']);
    const ro = await ProfileStore.open({ configDir: dir, cipher: rotated, readOnly: true });
    expect(ro.resolve(p.id)).toMatchObject({ password: 'keep' });
    expect(rotated.calls).toBe(0);
    expect(await readFile(join(dir, 'secrets.json'), 'utf8')).toBe(before);
  });

  it('a cipher whose isAvailable throws counts as unavailable: secrets in memory only, stored blobs untouched', async () => {
    const cipher = fakeCipher();
    const s = await ProfileStore.open({ configDir: dir, cipher });
    const p = await s.save({ name: 'r', config: { kind: 'redis', url: 'redis://127.0.0.1:6379', password: 'pw' } });
    const before = await readFile(join(dir, 'secrets.json'), 'utf8');
    for (const isAvailable of [() => { throw new Error('no keyring'); }, () => Promise.reject(new Error('no keyring'))]) {
      const throwing = { ...fakeCipher(), isAvailable } as SecretCipher & { calls: number; decrypts: number };
      const s2 = await ProfileStore.open({ configDir: dir, cipher: throwing });
      expect(s2.problems).toEqual([]);
      expect(s2.get(p.id)?.hasSecret).toBe(false);
      expect(s2.resolve(p.id)).not.toHaveProperty('password');
      const q = await s2.save({ name: 'new', config: { kind: 'redis', url: 'redis://127.0.0.1:6379', password: 'mem-only' } });
      expect(s2.resolve(q.id)).toMatchObject({ password: 'mem-only' });
      expect(throwing.calls + throwing.decrypts).toBe(0);
      expect(await readFile(join(dir, 'secrets.json'), 'utf8')).toBe(before);
      await s2.remove(q.id);
    }
    expect((await ProfileStore.open({ configDir: dir, cipher })).resolve(p.id)).toMatchObject({ password: 'pw' });
  });

  it('unknown ids are INVALID_INPUT', async () => {
    const s = await ProfileStore.open({ configDir: dir });
    expect(() => s.resolve('nope')).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    await expect(s.save({ id: 'nope', name: 'x', config: { kind: 'snapshot', path: '/x.jsonl' } })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});
