import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { RENDERER_CSP } from '../../shared/security/csp';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile, realpath, stat } from 'node:fs/promises';
import { extname, isAbsolute, relative, resolve, sep } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { ApiHandlers, ApiResult } from '../../shared/api/contract';
import type { ErrorInfo } from '../../shared/domain';
import { dispatchApi } from '../services/api';

/**
 * The browser bridge: serves the built renderer over http on 127.0.0.1 and answers the
 * renderer's API calls (`POST /api/<method>`) with the same handlers Electron main uses. Used by
 * the e2e tests, screenshots, and `npm start` where Electron cannot run.
 *
 * Security model (the API can read queues and write files, so other local pages must not drive it):
 * - binds 127.0.0.1 only; requests whose `Host` is not this server's own address are refused
 *   (DNS-rebinding defence);
 * - every API call must carry the random per-run token in the `X-Queuescope-Token` header (the
 *   page gets it once from `?token=` in its URL and keeps it in sessionStorage). A cross-site page
 *   cannot send a custom header without a CORS preflight, which this server never grants;
 * - API calls must be `POST` with `Content-Type: application/json` and at most
 *   {@link MAX_BODY_BYTES} bytes; a present `Origin` must be this server's;
 * - static files are served only from inside `rendererDir` (after resolving symlinks), with the
 *   same Content-Security-Policy as the Electron window.
 */

/** Content-Security-Policy sent with every page: the renderer's one policy (shared/security/csp.ts). */
export const WEB_CSP = RENDERER_CSP;

/** Largest accepted API request body: 10 MiB. */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** Header carrying the session token. */
export const TOKEN_HEADER = 'x-queuescope-token';

/** Options of {@link startWebServer}. */
export interface WebServerOptions {
  /** TCP port; 0 or absent = a free port chosen by the OS. */
  port?: number;
  /** Only loopback is supported. */
  host?: '127.0.0.1';
  /** Folder of the built renderer (`out/renderer`), containing `index.html`. */
  rendererDir: string;
  handlers: ApiHandlers;
  /** Session token; absent = 32 random bytes, hex. Must be at least 16 characters. */
  token?: string;
  /** Called with errors that are not QueuescopeErrors (bugs), e.g. to log their stack. Default: console.error. */
  onUnexpectedError?: (error: unknown, method: string) => void;
}

/** A running bridge. */
export interface WebServer {
  /** Page URL including `?token=…`: open this in a browser. */
  url: string;
  /** Origin, e.g. `http://127.0.0.1:5199`. */
  origin: string;
  token: string;
  /** Stops listening and drops open connections. Idempotent. */
  close(): Promise<void>;
}

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

const SECURITY_HEADERS: Record<string, string> = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/**
 * Starts the bridge.
 *
 * @returns the page URL (with the token), the token, and `close()`.
 * @throws Error when `rendererDir` has no `index.html` (build the renderer first: `npm run build`),
 *   when the token is shorter than 16 characters, or when the port is taken (`EADDRINUSE`).
 */
export async function startWebServer(opts: WebServerOptions): Promise<WebServer> {
  const host = '127.0.0.1';
  const token = opts.token ?? randomBytes(32).toString('hex');
  if (token.length < 16) throw new Error('The bridge token must be at least 16 characters.');
  const rootDir = await realpath(resolve(opts.rendererDir)).catch(() => null);
  const indexPath = rootDir === null ? null : resolve(rootDir, 'index.html');
  const indexSource = indexPath === null ? null : await readFile(indexPath, 'utf8').catch(() => null);
  if (rootDir === null || indexSource === null) {
    throw new Error(`No built renderer at ${resolve(opts.rendererDir)} (index.html missing): run \`npm run build\` first.`);
  }
  const indexHtml = injectBridge(indexSource);
  const tokenBuf = Buffer.from(token, 'utf8');
  const onUnexpected = opts.onUnexpectedError ?? ((e: unknown, m: string) => console.error(`[web] ${m} failed unexpectedly:`, e));
  let origin = '';
  let allowedHosts = new Set<string>();

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      onUnexpected(e, 'http');
      if (!res.headersSent) sendJson(res, 500, fail('INTERNAL', 'The bridge failed to answer this request.'));
      else res.destroy();
    });
  });
  server.headersTimeout = 30_000;
  server.requestTimeout = 10 * 60_000; // long API calls (a slow broker) are allowed; the handlers time out themselves

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!allowedHosts.has((req.headers.host ?? '').toLowerCase())) {
      sendText(res, 421, 'Misdirected request: this server answers only to its own loopback address.');
      return;
    }
    const url = new URL(req.url ?? '/', origin);
    if (url.pathname.startsWith('/api/')) {
      await handleApi(req, res, url.pathname.slice('/api/'.length));
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      sendText(res, 405, 'Method not allowed.');
      return;
    }
    if (url.pathname === '/bridge.js') {
      sendBody(res, 200, MIME['.js'] ?? '', BRIDGE_JS, { 'Cache-Control': 'no-store' });
      return;
    }
    if (url.pathname === '/' || url.pathname === '/index.html') {
      sendBody(res, 200, MIME['.html'] ?? '', indexHtml, { 'Cache-Control': 'no-store', 'Content-Security-Policy': WEB_CSP });
      return;
    }
    await serveStatic(req, res, url.pathname);
  }

  async function serveStatic(_req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> {
    let decoded: string;
    try {
      decoded = decodeURIComponent(pathname);
    } catch {
      sendText(res, 400, 'Bad path.');
      return;
    }
    if (decoded.includes('\0') || decoded.includes('\\')) {
      sendText(res, 400, 'Bad path.');
      return;
    }
    const candidate = resolve(rootDir as string, `.${decoded}`);
    const real = await realpath(candidate).catch(() => null);
    if (real === null || !isInside(rootDir as string, real)) {
      sendText(res, 404, 'Not found.');
      return;
    }
    const info = await stat(real).catch(() => null);
    if (info === null || !info.isFile()) {
      sendText(res, 404, 'Not found.');
      return;
    }
    const body = await readFile(real);
    const type = MIME[extname(real).toLowerCase()] ?? 'application/octet-stream';
    const headers: Record<string, string> = { 'Cache-Control': decoded.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache' };
    if (type.startsWith('text/html')) headers['Content-Security-Policy'] = WEB_CSP;
    sendBody(res, 200, type, body, headers);
  }

  async function handleApi(req: IncomingMessage, res: ServerResponse, rawMethod: string): Promise<void> {
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      sendJson(res, 405, fail('INVALID_INPUT', 'API calls must use POST.'));
      return;
    }
    const reqOrigin = req.headers.origin;
    if (reqOrigin !== undefined && reqOrigin !== origin) {
      sendJson(res, 403, fail('PERMISSION_DENIED', 'Calls from other origins are not allowed.'));
      return;
    }
    const given = req.headers[TOKEN_HEADER];
    if (typeof given !== 'string' || !sameToken(Buffer.from(given, 'utf8'), tokenBuf)) {
      sendJson(res, 401, fail('PERMISSION_DENIED', 'Missing or wrong session token: open the URL the bridge printed (it contains ?token=…).'));
      return;
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/json') {
      sendJson(res, 415, fail('INVALID_INPUT', 'API calls must send Content-Type: application/json.'));
      return;
    }
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) {
      sendJson(res, 413, fail('INVALID_INPUT', `Request body too large: at most ${MAX_BODY_BYTES} bytes.`), true);
      return;
    }
    const body = await readBody(req, MAX_BODY_BYTES);
    if (body === null) {
      sendJson(res, 413, fail('INVALID_INPUT', `Request body too large: at most ${MAX_BODY_BYTES} bytes.`), true);
      return;
    }
    let input: unknown;
    try {
      input = body.length === 0 ? undefined : (JSON.parse(body.toString('utf8')) as unknown);
    } catch {
      sendJson(res, 400, fail('INVALID_INPUT', 'The request body is not valid JSON.'));
      return;
    }
    let method: string;
    try {
      method = decodeURIComponent(rawMethod);
    } catch {
      method = rawMethod;
    }
    const result = await dispatchApi(opts.handlers, method, input, { onUnexpectedError: onUnexpected });
    sendJson(res, 200, result);
  }

  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  const port = (server.address() as AddressInfo).port;
  origin = `http://${host}:${port}`;
  allowedHosts = new Set([`${host}:${port}`, `localhost:${port}`]);

  let closing: Promise<void> | null = null;
  return {
    url: `${origin}/?token=${encodeURIComponent(token)}`,
    origin,
    token,
    close() {
      closing ??= new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** Inserts `<script src="/bridge.js"></script>` before the first script of the page (so `window.queuescope` exists when the app starts). */
export function injectBridge(html: string): string {
  const tag = '<script src="/bridge.js"></script>';
  const at = html.search(/<script\b/i);
  if (at >= 0) return `${html.slice(0, at)}${tag}\n    ${html.slice(at)}`;
  const head = html.search(/<\/head>/i);
  return head >= 0 ? `${html.slice(0, head)}${tag}\n${html.slice(head)}` : `${tag}\n${html}`;
}

function isInside(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

function sameToken(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Reads the request body; null when it exceeds `limit` bytes (the rest is discarded). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  return new Promise((resolveBody, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolveBody(over ? null : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function fail(code: ErrorInfo['code'], message: string): ApiResult<never> {
  return { ok: false, error: { code, message } };
}

function sendJson(res: ServerResponse, status: number, value: unknown, closeConnection = false): void {
  if (closeConnection) res.setHeader('Connection', 'close');
  sendBody(res, status, 'application/json; charset=utf-8', JSON.stringify(value), { 'Cache-Control': 'no-store' });
}

function sendText(res: ServerResponse, status: number, text: string): void {
  sendBody(res, status, 'text/plain; charset=utf-8', text, { 'Cache-Control': 'no-store' });
}

function sendBody(res: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string>): void {
  const buf = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  res.writeHead(status, { ...SECURITY_HEADERS, ...extra, 'Content-Type': type, 'Content-Length': String(buf.length) });
  if (res.req.method === 'HEAD') res.end();
  else res.end(buf);
}

/**
 * `/bridge.js`: defines `window.queuescope.invoke(method, input)` over `fetch('POST /api/<method>')`.
 * Takes the token from `?token=` once, keeps it in sessionStorage, and removes it from the address
 * bar. Transport failures resolve to `{ ok: false, error }` like any other API error.
 */
export const BRIDGE_JS = `(() => {
  'use strict';
  const KEY = 'queuescope.bridgeToken';
  const params = new URLSearchParams(location.search);
  const fromUrl = params.get('token');
  if (fromUrl) {
    sessionStorage.setItem(KEY, fromUrl);
    params.delete('token');
    const q = params.toString();
    history.replaceState(null, '', location.pathname + (q ? '?' + q : '') + location.hash);
  }
  const token = sessionStorage.getItem(KEY) || '';
  const failure = (code, message) => ({ ok: false, error: { code, message } });
  async function invoke(method, input) {
    let res;
    try {
      res = await fetch('/api/' + encodeURIComponent(String(method)), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', '${TOKEN_HEADER}': token },
        body: JSON.stringify(input === undefined ? {} : input),
        cache: 'no-store',
        credentials: 'same-origin',
      });
    } catch (e) {
      return failure('HOST_UNREACHABLE', 'The Queuescope bridge is not answering (was it stopped?).');
    }
    try {
      const body = await res.json();
      if (body && typeof body === 'object' && typeof body.ok === 'boolean') return body;
    } catch (e) { /* fall through */ }
    return failure('INTERNAL', 'The Queuescope bridge sent an unreadable reply (HTTP ' + res.status + ').');
  }
  Object.defineProperty(window, 'queuescope', { value: Object.freeze({ invoke }), writable: false, configurable: false, enumerable: true });
})();
`;

// Entry point when this file is built as out/main/web-server.js (electron.vite.config.ts): start
// the bridge with the real services. Not taken when imported (tests, other entries).
if (typeof require === 'function' && typeof module === 'object' && require.main === module) {
  void import('./main').then((m) => m.runFromCommandLine(process.argv.slice(2)));
}
