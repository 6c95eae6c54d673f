import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiHandlers } from '../../shared/api/contract';
import { QueuescopeError } from '../../shared/domain';
import { BRIDGE_JS, MAX_BODY_BYTES, TOKEN_HEADER, WEB_CSP, injectBridge, startWebServer, type WebServer } from './server';

const TOKEN = 'test-token-0123456789abcdef';
const INDEX = '<!doctype html><html><head><title>Q</title><script type="module" crossorigin src="./assets/app.js"></script></head><body><div id="root"></div></body></html>';

/** Handlers that record calls; only the ones the tests use do anything. */
function fakeHandlers(calls: { method: string; input: unknown }[]): ApiHandlers {
  const unused = (): Promise<never> => Promise.reject(new Error('not used in this test'));
  return {
    'app.info': (input) => {
      calls.push({ method: 'app.info', input });
      return Promise.resolve({ version: '9.9.9', runtime: 'web', demoConnectionId: null, warnings: [], pathInput: true, defaultExportDir: null });
    },
    'connections.list': () => Promise.resolve([]),
    'connections.save': unused,
    'connections.remove': unused,
    'connections.test': unused,
    'queues.list': (input) => {
      calls.push({ method: 'queues.list', input });
      return Promise.reject(new QueuescopeError('HOST_UNREACHABLE', 'Redis at 127.0.0.1:6390 refused the connection (password=hunter2).'));
    },
    'queues.get': unused,
    'messages.peek': unused,
    'snapshots.export': unused,
    'snapshots.open': unused,
    'operations.get': unused,
    'operations.cancel': unused,
    'operations.pause': unused,
    'operations.resume': unused,
    'redrive.plan': unused,
    'redrive.analyse': unused,
    'redrive.start': unused,
    'redrive.history': unused,
    'redrive.reinject': unused,
    'inspect.queue': unused,
    'inspect.rules.get': unused,
    'inspect.rules.set': unused,
    'tuning.sources': unused,
    'tuning.measure': unused,
    'tuning.apply': unused,
    'audit.run': unused,
    'audit.fix.preview': unused,
    'audit.fix.apply': unused,
    'watch.set': unused,
    'watch.list': unused,
    'watch.events': unused,
  };
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Raw HTTP (fetch would normalise paths and forbid some headers). */
function send(server: WebServer, opts: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer }): Promise<Reply> {
  const { port } = new URL(server.origin);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: Number(port), method: opts.method ?? 'GET', path: opts.path, headers: opts.headers ?? {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

const api = (server: WebServer, method: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> =>
  send(server, { method: 'POST', path: `/api/${method}`, headers: { 'content-type': 'application/json', [TOKEN_HEADER]: TOKEN, ...headers }, body: JSON.stringify(body) });

describe('browser bridge server', () => {
  let dir: string;
  let outside: string;
  let server: WebServer;
  const calls: { method: string; input: unknown }[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'qs-web-'));
    outside = mkdtempSync(join(tmpdir(), 'qs-web-outside-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), INDEX);
    writeFileSync(join(dir, 'assets', 'app.js'), 'console.log("app")');
    writeFileSync(join(outside, 'secret.txt'), 'do not serve');
    symlinkSync(join(outside, 'secret.txt'), join(dir, 'assets', 'link.txt'));
    server = await startWebServer({ rendererDir: dir, handlers: fakeHandlers(calls), token: TOKEN, onUnexpectedError: () => undefined });
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  it('listens on 127.0.0.1 and puts the token in the page URL', () => {
    expect(server.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.url).toBe(`${server.origin}/?token=${TOKEN}`);
  });

  it('serves index.html with the CSP header and the bridge script before the app script', async () => {
    const r = await send(server, { path: '/?token=x' });
    expect(r.status).toBe(200);
    expect(r.headers['content-security-policy']).toBe(WEB_CSP);
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.body.indexOf('<script src="/bridge.js"></script>')).toBeGreaterThan(0);
    expect(r.body.indexOf('/bridge.js')).toBeLessThan(r.body.indexOf('./assets/app.js'));
  });

  it('serves /bridge.js and built assets with their types', async () => {
    const b = await send(server, { path: '/bridge.js' });
    expect(b.status).toBe(200);
    expect(b.headers['content-type']).toMatch(/^text\/javascript/);
    expect(b.body).toBe(BRIDGE_JS);
    const a = await send(server, { path: '/assets/app.js' });
    expect(a.status).toBe(200);
    expect(a.body).toBe('console.log("app")');
  });

  it('never serves files outside the renderer folder', async () => {
    for (const path of ['/../' + 'etc/passwd', '/assets/../../etc/passwd', '/%2e%2e/%2e%2e/etc/passwd', '/assets/%2e%2e%2f%2e%2e%2fetc%2fpasswd', '/assets/link.txt', '/assets/..%5c..%5cetc%5cpasswd', '/assets/%00app.js']) {
      const r = await send(server, { path });
      expect([400, 404], path).toContain(r.status);
      expect(r.body).not.toContain('root:');
      expect(r.body).not.toContain('do not serve');
    }
  });

  it('answers API calls with the handler result', async () => {
    const r = await api(server, 'app.info', {});
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ ok: true, value: { version: '9.9.9', runtime: 'web', demoConnectionId: null, warnings: [], pathInput: true, defaultExportDir: null } });
  });

  it('returns handler errors as data with their code, credentials redacted', async () => {
    const r = await api(server, 'queues.list', { connectionId: 'c1' });
    const body = JSON.parse(r.body) as { ok: boolean; error: { code: string; message: string } };
    expect(body.ok).toBe(false);
    expect(body.error.code).toBe('HOST_UNREACHABLE');
    expect(body.error.message).not.toContain('hunter2');
  });

  it('validates input with the contract schema before any handler runs', async () => {
    const before = calls.length;
    const r = await api(server, 'queues.list', { connectionId: 42 });
    expect(JSON.parse(r.body)).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    const unknown = await api(server, 'fs.readFile', { path: '/etc/passwd' });
    expect(JSON.parse(unknown.body)).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } });
    expect(calls.length).toBe(before);
  });

  it('rejects calls without the right token', async () => {
    const none = await send(server, { method: 'POST', path: '/api/app.info', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body)).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    const wrong = await api(server, 'app.info', {}, { [TOKEN_HEADER]: 'test-token-0123456789abcdeX' });
    expect(wrong.status).toBe(401);
    const short = await api(server, 'app.info', {}, { [TOKEN_HEADER]: 'x' });
    expect(short.status).toBe(401);
  });

  it('rejects other origins, other Host names, GET, and non-JSON bodies', async () => {
    expect((await api(server, 'app.info', {}, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await api(server, 'app.info', {}, { host: 'evil.example' })).status).toBe(421);
    expect((await send(server, { path: '/api/app.info', headers: { [TOKEN_HEADER]: TOKEN } })).status).toBe(405);
    const form = await send(server, { method: 'POST', path: '/api/app.info', headers: { 'content-type': 'text/plain', [TOKEN_HEADER]: TOKEN }, body: '{}' });
    expect(form.status).toBe(415);
    const bad = await send(server, { method: 'POST', path: '/api/app.info', headers: { 'content-type': 'application/json', [TOKEN_HEADER]: TOKEN }, body: '{not json' });
    expect(bad.status).toBe(400);
  });

  it('rejects bodies over 10 MiB, declared or streamed', async () => {
    const big = Buffer.alloc(MAX_BODY_BYTES + 1, 0x20);
    const declared = await send(server, { method: 'POST', path: '/api/app.info', headers: { 'content-type': 'application/json', [TOKEN_HEADER]: TOKEN, 'content-length': String(big.length) }, body: big });
    expect(declared.status).toBe(413);
    const chunked = await send(server, { method: 'POST', path: '/api/app.info', headers: { 'content-type': 'application/json', [TOKEN_HEADER]: TOKEN, 'transfer-encoding': 'chunked' }, body: big });
    expect(chunked.status).toBe(413);
  });

  it('refuses to start without a built renderer, naming the fix', async () => {
    await expect(startWebServer({ rendererDir: join(dir, 'nope'), handlers: fakeHandlers([]) })).rejects.toThrow(/npm run build/);
  });
});

describe('injectBridge', () => {
  it('puts the bridge before the first script, or into head when there is none', () => {
    expect(injectBridge('<head><script src="a.js"></script></head>')).toMatch(/^<head><script src="\/bridge.js"><\/script>\s*<script src="a.js">/);
    expect(injectBridge('<head><title>x</title></head>')).toBe('<head><title>x</title><script src="/bridge.js"></script>\n</head>');
  });
});
