import { appendFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AUDIT_LOG_FILE, AuditLog, MAX_AUDIT_LINE_BYTES, findAuditEntry, parseAuditLine } from './audit-log';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-audit-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('AuditLog', () => {
  it('appends one JSON line per entry in <configDir>/audit-log.jsonl (mode 0600) and reads them newest first', async () => {
    let t = 1_000;
    const log = new AuditLog({ configDir: join(dir, 'cfg'), now: () => t++ });
    const a = await log.append({
      actor: 'cli',
      action: 'redrive',
      connection: 'amqp://guest@127.0.0.1:5672/',
      source: 'orders.dlq',
      target: 'orders.work',
      filter: 'class:transient',
      status: 'completed',
      counts: { moved: 10, skipped: 2 },
      operationId: 'op-1',
      backupPath: '/tmp/b.jsonl',
    });
    const b = await log.append({ actor: 'app', action: 'reinject', source: '/tmp/b.jsonl', target: 'orders.work', counts: { published: 10 } });
    expect(log.path).toBe(join(dir, 'cfg', AUDIT_LOG_FILE));
    expect((await stat(log.path)).mode & 0o777).toBe(0o600);
    const text = await readFile(log.path, 'utf8');
    expect(text.split('\n')).toHaveLength(3);
    expect(a).toMatchObject({ version: 1, time: 1000, actor: 'cli', action: 'redrive', counts: { moved: 10, skipped: 2 }, backupPath: '/tmp/b.jsonl', details: {} });
    const page = await log.read();
    expect(page.entries.map((e) => e.id)).toEqual([b.id, a.id]);
    expect(page.entries[1]).toEqual(a);
    expect(page).toMatchObject({ total: 2, skippedLines: 0, nextBefore: null });
  });

  it('a run\'s "started" entry is left out once the run ended; one without an end (process killed) stays', async () => {
    const log = new AuditLog({ configDir: join(dir, 'cfg') });
    await log.append({ actor: 'cli', action: 'redrive', source: 'a.dlq', status: 'started', operationId: 'op-a', backupPath: '/tmp/a.jsonl' });
    await log.append({ actor: 'cli', action: 'redrive', source: 'b.dlq', status: 'started', operationId: 'op-b', backupPath: '/tmp/b.jsonl' });
    await log.append({ actor: 'cli', action: 'redrive', source: 'a.dlq', status: 'completed', operationId: 'op-a', counts: { moved: 3 } });
    const page = await log.read();
    expect(page.entries.map((e) => [e.source, e.status])).toEqual([
      ['a.dlq', 'completed'],
      ['b.dlq', 'started'],
    ]);
    expect(page.entries[1]?.backupPath).toBe('/tmp/b.jsonl');
    expect(page.nextBefore).toBeNull();
  });

  it('never stores secrets: URL passwords and secret-looking keys are redacted', async () => {
    const log = new AuditLog({ path: join(dir, 'a.jsonl') });
    await log.append({
      actor: 'cli',
      action: 'redrive',
      connection: 'amqp://app:s3cr3t-pw@mq.example:5672/',
      details: { password: 'hunter2', nested: { url: 'redis://:topsecret@h:6379' }, secretAccessKey: 'AKIAxxxxxxxx' },
    });
    const text = await readFile(join(dir, 'a.jsonl'), 'utf8');
    expect(text).not.toContain('s3cr3t-pw');
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('topsecret');
    expect(text).not.toContain('AKIAxxxxxxxx');
    expect(text).toContain('mq.example');
  });

  it('pages backwards with nextBefore, and filters by action', async () => {
    const log = new AuditLog({ path: join(dir, 'a.jsonl') });
    for (let i = 0; i < 7; i++) await log.append({ actor: 'cli', action: i % 2 === 0 ? 'redrive' : 'reinject', counts: { i } });
    const p1 = await log.read({ limit: 3 });
    expect(p1.entries.map((e) => e.counts.i)).toEqual([6, 5, 4]);
    expect(p1.nextBefore).toBe(4);
    const p2 = await log.read({ limit: 3, before: p1.nextBefore ?? -1 });
    expect(p2.entries.map((e) => e.counts.i)).toEqual([3, 2, 1]);
    const p3 = await log.read({ limit: 3, before: p2.nextBefore ?? -1 });
    expect(p3.entries.map((e) => e.counts.i)).toEqual([0]);
    expect(p3.nextBefore).toBeNull();
    const redrives = await log.read({ action: 'redrive', limit: 10 });
    expect(redrives.entries.map((e) => e.counts.i)).toEqual([6, 4, 2, 0]);
  });

  it('skips bad lines with a count, and a line cut by a crash does not swallow the next entry', async () => {
    const path = join(dir, 'a.jsonl');
    const log = new AuditLog({ path });
    await log.append({ actor: 'cli', action: 'redrive', counts: { n: 1 } });
    await appendFile(path, 'not json\n{"version":1,"id":"x"}\n{"version":1,"id":"cut-by-cra');
    await log.append({ actor: 'app', action: 'redrive', counts: { n: 2 } });
    const page = await log.read();
    expect(page.entries.map((e) => e.counts.n)).toEqual([2, 1]);
    expect(page.skippedLines).toBe(3);
    expect(page.total).toBe(2);
  });

  it('a missing file is an empty log; bad paging input is INVALID_INPUT', async () => {
    const log = new AuditLog({ path: join(dir, 'none', 'a.jsonl') });
    expect(await log.read()).toEqual({ entries: [], total: 0, skippedLines: 0, nextBefore: null });
    await expect(log.read({ limit: 0 })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(log.read({ before: -1 })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('rejects action names that are not short identifiers', async () => {
    const log = new AuditLog({ path: join(dir, 'a.jsonl') });
    await expect(log.append({ actor: 'cli', action: 'Redrive all!' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('concurrent appends from one instance and from several instances all land on their own line', async () => {
    const path = join(dir, 'a.jsonl');
    const logs: [AuditLog, ...AuditLog[]] = [new AuditLog({ path }), new AuditLog({ path }), new AuditLog({ path })];
    await Promise.all(Array.from({ length: 60 }, (_, i) => (logs[i % 3] ?? logs[0]).append({ actor: 'cli', action: 'redrive', counts: { i }, details: { pad: 'x'.repeat(2000) } })));
    const page = await log0(path).read({ limit: 1000 });
    expect(page.skippedLines).toBe(0);
    expect(page.total).toBe(60);
    expect(new Set(page.entries.map((e) => e.counts.i)).size).toBe(60);
  });

  it('replaces oversized details by a note instead of writing a huge line', async () => {
    const path = join(dir, 'a.jsonl');
    const log = new AuditLog({ path });
    const many = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`k${i}`, 'z'.repeat(1500)]));
    const e = await log.append({ actor: 'cli', action: 'redrive', details: { big: 'y'.repeat(MAX_AUDIT_LINE_BYTES * 2), many } });
    expect(e.details).toEqual({ note: expect.stringContaining('details omitted') as unknown });
    expect((await stat(path)).size).toBeLessThan(MAX_AUDIT_LINE_BYTES);
  });

  it('a write failure names the file', async () => {
    await writeFile(join(dir, 'file'), 'x');
    const log = new AuditLog({ path: join(dir, 'file', 'a.jsonl') });
    await expect(log.append({ actor: 'cli', action: 'redrive' })).rejects.toMatchObject({ message: expect.stringContaining(join(dir, 'file', 'a.jsonl')) as unknown });
  });
});

describe('findAuditEntry', () => {
  it('finds an entry by id; null for an unknown id or a missing file', async () => {
    const log = new AuditLog({ path: join(dir, 'a.jsonl') });
    expect(await findAuditEntry(log, 'x')).toBeNull();
    const a = await log.append({ actor: 'cli', action: 'redrive', backupPath: '/b1.jsonl' });
    await log.append({ actor: 'cli', action: 'redrive', backupPath: '/b2.jsonl' });
    expect(await findAuditEntry(log, a.id)).toEqual(a);
    expect(await findAuditEntry(log, 'nope')).toBeNull();
  });
});

describe('parseAuditLine', () => {
  it('returns null for anything that is not a valid entry, never throws', () => {
    for (const s of ['', '{', 'null', '[]', '{"version":2}', '"x"', '{"version":1,"id":"a","time":-1}']) expect(parseAuditLine(s)).toBeNull();
  });
});

function log0(path: string): AuditLog {
  return new AuditLog({ path });
}
