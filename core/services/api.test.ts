import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiHandlers } from '../../shared/api/contract';
import { QueuescopeError, type OperationSnapshot } from '../../shared/domain';
import { readSnapshotFile } from '../snapshot/reader';
import { createApiHandlers, dispatchApi, suggestedSnapshotName, type ApiDeps } from './api';
import { ConnectionManager, DEMO_CONNECTION_ID } from './connection-manager';
import { OperationManager } from './operations';
import { ProfileStore } from './profile-store';

const fixture = fileURLToPath(new URL('../../test/fixtures/snapshots/two-queues.jsonl', import.meta.url));
const invalidFixture = fileURLToPath(new URL('../../test/fixtures/snapshots/invalid-body-encoding.jsonl', import.meta.url));

let dir: string;
let handlers: ApiHandlers;
let connections: ConnectionManager;
let operations: OperationManager;
let savePath: string | null;
let openPath: string | null;
let suggested: string[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qs-api-'));
  const demo = join(dir, 'demo.jsonl');
  await copyFile(fixture, demo);
  const store = await ProfileStore.open({ configDir: join(dir, 'config') });
  connections = new ConnectionManager({ store, demoSnapshotPath: demo });
  operations = new OperationManager();
  savePath = join(dir, 'export.jsonl');
  openPath = null;
  suggested = [];
  handlers = createApiHandlers({
    connections,
    operations,
    dialogs: {
      pickSnapshotSavePath: (name) => {
        suggested.push(name);
        return Promise.resolve(savePath);
      },
      pickSnapshotOpenPath: () => Promise.resolve(openPath),
    },
    runtime: 'web',
    version: '9.9.9',
  });
});
afterEach(async () => {
  operations.cancelAll();
  await connections.closeAll();
  await rm(dir, { recursive: true, force: true });
});

const call = (method: string, input?: unknown) => dispatchApi(handlers, method, input);

describe('dispatchApi', () => {
  it('rejects unknown methods, including prototype keys', async () => {
    for (const m of ['nope', 'toString', '__proto__', 'constructor']) {
      const r = await call(m, {});
      expect(r).toEqual({ ok: false, error: { code: 'INVALID_INPUT', message: `Unknown API method "${m}".` } });
    }
  });

  it('bad input is INVALID_INPUT naming each issue path and message', async () => {
    const r = await call('messages.peek', { connectionId: 'demo', queueId: 'x', options: { limit: 5000, bogus: true } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('INVALID_INPUT');
    expect(r.error.message).toMatch(/^Invalid input for messages\.peek: /);
    expect(r.error.message).toContain('options.limit:');
    expect(r.error.message).toContain('options:'); // unrecognized key "bogus"
    const issues = r.error.details?.issues as { path: string; message: string }[];
    expect(issues.map((i) => i.path).sort()).toEqual(['options', 'options.limit']);
    expect((await call('queues.list', 'a string')).ok).toBe(false);
    expect((await call('queues.list', null)).ok).toBe(false);
  });

  it('undefined input counts as {} for methods without parameters', async () => {
    const r = await call('app.info');
    expect(r).toEqual({ ok: true, value: { version: '9.9.9', runtime: 'web', demoConnectionId: DEMO_CONNECTION_ID, warnings: [], pathInput: true, defaultExportDir: null } });
  });

  it('maps thrown QueuescopeErrors to their code, other throws to INTERNAL, without credentials', async () => {
    const r = await call('queues.get', { connectionId: 'demo', queueId: 'stream:missing' });
    expect(r).toMatchObject({ ok: false, error: { code: 'QUEUE_NOT_FOUND' } });

    const seen: unknown[] = [];
    const boom: ApiHandlers = {
      ...handlers,
      'queues.list': () => Promise.reject(new Error('connect to amqp://admin:Sup3rS3cret@mq.internal:5672 failed, password=Sup3rS3cret')),
      'queues.get': () => Promise.reject(new QueuescopeError('AUTH_FAILED', 'login failed for redis://bob:hunter22@h:6379', { url: 'redis://bob:hunter22@h:6379', password: 'hunter22' })),
    };
    const r1 = await dispatchApi(boom, 'queues.list', { connectionId: 'demo' }, { onUnexpectedError: (e) => seen.push(e) });
    expect(r1).toMatchObject({ ok: false, error: { code: 'INTERNAL' } });
    expect(JSON.stringify(r1)).not.toContain('Sup3rS3cret');
    expect(JSON.stringify(r1)).toContain('admin:***@mq.internal');
    expect(seen).toHaveLength(1);
    const r2 = await dispatchApi(boom, 'queues.get', { connectionId: 'demo', queueId: 'x' }, { onUnexpectedError: (e) => seen.push(e) });
    expect(r2).toMatchObject({ ok: false, error: { code: 'AUTH_FAILED' } });
    expect(JSON.stringify(r2)).not.toContain('hunter22');
    expect(seen).toHaveLength(1); // expected errors are not "unexpected"
  });

  it('a connection config error message never echoes the password', async () => {
    const r = await call('connections.test', { config: { kind: 'redis', url: 'redis://u:pa55word@127.0.0.1:1', password: 'pa55word', db: 'x' } });
    expect(r.ok).toBe(false);
    expect(JSON.stringify(r)).not.toContain('pa55word');
  });
});

describe('API handlers over snapshots', () => {
  it('lists the demo, reads its queues and pages messages', async () => {
    const list = await call('connections.list', {});
    expect(list).toMatchObject({ ok: true, value: [{ id: 'demo', builtIn: true, config: { kind: 'snapshot' } }] });
    const qs = await call('queues.list', { connectionId: 'demo', pattern: 'orders-*' });
    expect(qs.ok && qs.value).toMatchObject([{ id: 'stream:orders-stream', depth: 3 }]);
    const p = await call('messages.peek', { connectionId: 'demo', queueId: 'stream:orders-stream', options: { limit: 2 } });
    expect(p.ok && (p.value as { nextCursor: string }).nextCursor).toBe('p:2');
  });

  it('the demo cannot be changed or removed; saved profiles round-trip without secrets', async () => {
    expect(await call('connections.remove', { id: 'demo' })).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    expect(await call('connections.save', { id: 'demo', name: 'x', config: { kind: 'snapshot', path: fixture } })).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    const saved = await call('connections.save', { name: 'local redis', config: { kind: 'redis', url: 'redis://:topsecret@127.0.0.1:6379' } });
    expect(saved).toMatchObject({ ok: true, value: { name: 'local redis', hasSecret: true, builtIn: false, config: { kind: 'redis', url: 'redis://127.0.0.1:6379' } } });
    expect(JSON.stringify(await call('connections.list', {}))).not.toContain('topsecret');
    expect(await readFile(join(dir, 'config', 'profiles.json'), 'utf8')).not.toContain('topsecret');
    const id = saved.ok ? (saved.value as { id: string }).id : '';
    expect(await call('connections.remove', { id })).toEqual({ ok: true, value: { removed: true } });
    expect(await call('connections.remove', { id })).toEqual({ ok: true, value: { removed: false } });
  });

  it('connections.test reports a failed result (not an error) for a missing snapshot', async () => {
    const r = await call('connections.test', { config: { kind: 'snapshot', path: join(dir, 'missing.jsonl') } });
    expect(r).toMatchObject({ ok: true, value: { ok: false, error: { code: 'INVALID_INPUT' } } });
    const d = await call('connections.test', { id: 'demo' });
    expect(d).toMatchObject({ ok: true, value: { ok: true, server: 'Queuescope snapshot v1' } });
  });

  it('snapshots.export runs an operation that writes the selected messages', async () => {
    const r = await call('snapshots.export', { connectionId: 'demo', queueId: 'stream:orders-stream', messageIds: ['1764441600002-0', '1764441600000-0', 'gone'] });
    expect(r.ok).toBe(true);
    const op = (r as { value: OperationSnapshot }).value;
    expect(op.type).toBe('export');
    expect(suggested[0]).toMatch(/^orders-stream-\d{4}-\d\d-\d\d\.jsonl$/);
    const done = await operations.wait(op.id);
    expect(done.status).toBe('completed');
    expect(done.result).toMatchObject({ messages: 2, partial: true, notFound: 1, path: savePath });
    const got = await call('operations.get', { operationId: op.id });
    expect(got).toMatchObject({ ok: true, value: { status: 'completed' } });
    const sections = await readSnapshotFile(savePath!);
    expect(sections).toHaveLength(1);
    expect(sections[0]?.header.selection).toBe('ids');
    expect(sections[0]?.header.source.connection).toBe(`snapshot ${join(dir, 'demo.jsonl')}`);
    expect(sections[0]?.messages.map((m) => m.id)).toEqual(['1764441600000-0', '1764441600002-0']);
    // cancelling a finished operation is a no-op
    expect(await call('operations.cancel', { operationId: op.id })).toMatchObject({ ok: true, value: { status: 'completed' } });
  });

  it('snapshots.export returns null when the dialog is cancelled, and writes nothing', async () => {
    savePath = null;
    expect(await call('snapshots.export', { connectionId: 'demo', queueId: 'stream:orders-stream' })).toEqual({ ok: true, value: null });
    expect(operations.list()).toEqual([]);
  });

  it('snapshots.open adds a session connection; a bad file is refused with line and field', async () => {
    expect(await call('snapshots.open', {})).toEqual({ ok: true, value: null });
    openPath = fixture;
    const r = await call('snapshots.open', {});
    expect(r).toMatchObject({ ok: true, value: { name: 'two-queues.jsonl', config: { kind: 'snapshot', path: fixture } } });
    const id = (r as { value: { id: string } }).value.id;
    expect((await call('connections.list', {})).ok && connections.list().map((c) => c.id)).toEqual(['demo', id]);
    expect(await call('queues.get', { connectionId: id, queueId: 'rabbitmq:%2F/orders.dlq' })).toMatchObject({ ok: true, value: { depth: 2 } });
    openPath = invalidFixture;
    const bad = await call('snapshots.open', {});
    expect(bad).toMatchObject({ ok: false, error: { code: 'SNAPSHOT_INVALID' } });
    expect(!bad.ok && bad.error.message).toMatch(/line 3, field "body\.encoding"/);
    expect(connections.list()).toHaveLength(2); // not kept
  });

  it('operations.get of an unknown id is INVALID_INPUT', async () => {
    expect(await call('operations.get', { operationId: 'nope' })).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
  });
});

describe('typed snapshot paths', () => {
  let exportDir: string;
  let dialogCalls: string[];
  const make = (runtime: ApiDeps['runtime']): ApiHandlers =>
    createApiHandlers({
      connections,
      operations,
      runtime,
      version: '1.2.3',
      defaultExportDir: () => exportDir,
      dialogs: {
        pickSnapshotSavePath: () => {
          dialogCalls.push('save');
          return Promise.resolve(join(exportDir, 'from-dialog.jsonl'));
        },
        pickSnapshotOpenPath: () => {
          dialogCalls.push('open');
          return Promise.resolve(fixture);
        },
      },
    });
  const web = (method: string, input?: unknown) => dispatchApi(make('web'), method, input);
  const desktop = (method: string, input?: unknown) => dispatchApi(make('electron'), method, input);
  const exportTo = async (path: string): Promise<string> => {
    const r = await web('snapshots.export', { connectionId: 'demo', queueId: 'stream:orders-stream', path });
    if (!r.ok) throw new Error(r.error.message);
    const done = await operations.wait((r.value as OperationSnapshot).id);
    expect(done.status).toBe('completed');
    return (done.result as { path: string }).path;
  };

  beforeEach(async () => {
    exportDir = join(dir, 'exports');
    await mkdir(exportDir);
    dialogCalls = [];
  });

  it('app.info tells the UI to ask for paths in the web runtime only, with the default export folder', async () => {
    expect(await web('app.info')).toMatchObject({ ok: true, value: { runtime: 'web', pathInput: true, defaultExportDir: exportDir } });
    expect(await desktop('app.info')).toMatchObject({ ok: true, value: { runtime: 'electron', pathInput: false, defaultExportDir: null } });
  });

  it('the desktop app refuses a path in export and open, without touching the file system', async () => {
    const target = join(exportDir, 'x.jsonl');
    const e = await desktop('snapshots.export', { connectionId: 'demo', queueId: 'stream:orders-stream', path: target });
    expect(e).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    expect(!e.ok && e.error.message).toMatch(/paths come from the file dialog in the desktop app/);
    const o = await desktop('snapshots.open', { path: fixture });
    expect(o).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    expect(!o.ok && o.error.message).toMatch(/paths come from the file dialog in the desktop app/);
    expect(existsSync(target)).toBe(false);
    expect(operations.list()).toEqual([]);
    expect(connections.list()).toHaveLength(1);
    expect(dialogCalls).toEqual([]);
    // without a path the desktop app still uses its dialogs
    expect(await desktop('snapshots.open', {})).toMatchObject({ ok: true, value: { config: { path: fixture } } });
    expect(dialogCalls).toEqual(['open']);
  });

  it('web export writes to an absolute path, and never overwrites: a second export gets a -1 name', async () => {
    const target = join(exportDir, 'mine.jsonl');
    expect(await exportTo(target)).toBe(target);
    const first = await readFile(target, 'utf8');
    expect(await exportTo(target)).toBe(join(exportDir, 'mine-1.jsonl'));
    expect(await readFile(target, 'utf8')).toBe(first);
    expect((await readSnapshotFile(join(exportDir, 'mine-1.jsonl')))[0]?.messages).toHaveLength(3);
    expect(dialogCalls).toEqual([]);
  });

  it('web export resolves a relative path against the export folder, and a folder gets the suggested name', async () => {
    await mkdir(join(exportDir, 'sub'));
    expect(await exportTo('sub/rel.jsonl')).toBe(join(exportDir, 'sub', 'rel.jsonl'));
    const inFolder = await exportTo(join(exportDir, 'sub'));
    expect(dirname(inFolder)).toBe(join(exportDir, 'sub'));
    expect(basename(inFolder)).toMatch(/^orders-stream-\d{4}-\d\d-\d\d\.jsonl$/);
    expect((await readdir(join(exportDir, 'sub'))).sort()).toEqual(['rel.jsonl', basename(inFolder)].sort());
  });

  it('web export into a missing folder is INVALID_INPUT naming the folder, and starts nothing', async () => {
    const r = await web('snapshots.export', { connectionId: 'demo', queueId: 'stream:orders-stream', path: join(exportDir, 'nope', 'x.jsonl') });
    expect(r).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    expect(!r.ok && r.error.message).toContain(`The folder ${join(exportDir, 'nope')} does not exist`);
    await writeFile(join(exportDir, 'afile'), 'x');
    const r2 = await web('snapshots.export', { connectionId: 'demo', queueId: 'stream:orders-stream', path: join(exportDir, 'afile', 'x.jsonl') });
    expect(!r2.ok && r2.error.message).toContain('is not a folder');
    expect(operations.list()).toEqual([]);
    expect(await web('snapshots.export', { connectionId: 'demo', queueId: 'stream:orders-stream', path: '   ' })).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
  });

  it('web export without a path still uses the runtime dialog', async () => {
    const r = await web('snapshots.export', { connectionId: 'demo', queueId: 'stream:orders-stream' });
    const done = await operations.wait((r as { value: OperationSnapshot }).value.id);
    expect(done.result).toMatchObject({ path: join(exportDir, 'from-dialog.jsonl') });
    expect(dialogCalls).toEqual(['save']);
  });

  it('web open takes a path (absolute or relative to the export folder); a missing file or a folder is INVALID_INPUT', async () => {
    const abs = await web('snapshots.open', { path: fixture });
    expect(abs).toMatchObject({ ok: true, value: { name: 'two-queues.jsonl', config: { kind: 'snapshot', path: fixture } } });
    await copyFile(fixture, join(exportDir, 'copy.jsonl'));
    expect(await web('snapshots.open', { path: 'copy.jsonl' })).toMatchObject({ ok: true, value: { config: { path: join(exportDir, 'copy.jsonl') } } });
    const missing = await web('snapshots.open', { path: join(exportDir, 'missing.jsonl') });
    expect(missing).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    expect(!missing.ok && missing.error.message).toContain(`There is no file at ${join(exportDir, 'missing.jsonl')}`);
    const folder = await web('snapshots.open', { path: exportDir });
    expect(!folder.ok && folder.error.message).toContain('is a folder');
    const bad = await web('snapshots.open', { path: invalidFixture });
    expect(bad).toMatchObject({ ok: false, error: { code: 'SNAPSHOT_INVALID' } });
    expect(connections.list()).toHaveLength(3);
    expect(dialogCalls).toEqual([]);
  });
});

describe('suggestedSnapshotName', () => {
  it('is a safe file name with the state and the date', () => {
    const d = new Date('2026-11-29T12:00:00Z');
    expect(suggestedSnapshotName('payments', 'failed', d)).toBe('payments-failed-2026-11-29.jsonl');
    expect(suggestedSnapshotName('../../etc/passwd', undefined, d)).toBe('etc_passwd-2026-11-29.jsonl');
    expect(suggestedSnapshotName('sqs:https://x/q.fifo', undefined, d)).toBe('sqs_https_x_q.fifo-2026-11-29.jsonl');
  });
});
