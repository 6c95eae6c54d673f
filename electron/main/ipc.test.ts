import { describe, expect, it } from 'vitest';
import { registerIpc, trustedUrlChecker, type IpcEventLike } from './ipc';
import { API_METHOD_NAMES, channelFor } from '../../shared/api/methods';

function fakeIpc() {
  const handlers = new Map<string, (e: IpcEventLike, ...a: unknown[]) => Promise<unknown>>();
  return {
    handlers,
    handle: (c: string, l: (e: IpcEventLike, ...a: unknown[]) => Promise<unknown>) => void handlers.set(c, l),
    removeHandler: (c: string) => void handlers.delete(c),
  };
}

describe('registerIpc', () => {
  it('registers one channel per API method and removes them all', () => {
    const ipc = fakeIpc();
    const off = registerIpc(ipc, () => Promise.resolve({ ok: true, value: null }), () => true);
    expect([...ipc.handlers.keys()].sort()).toEqual(API_METHOD_NAMES.map(channelFor).sort());
    off();
    expect(ipc.handlers.size).toBe(0);
  });

  it('refuses calls from untrusted frames without dispatching', async () => {
    const ipc = fakeIpc();
    const calls: string[] = [];
    registerIpc(ipc, (m) => { calls.push(m); return Promise.resolve({ ok: true, value: 1 }); }, (u) => u === 'file:///app/index.html');
    const h = ipc.handlers.get(channelFor('queues.list'))!;
    expect(await h({ senderFrame: { url: 'https://evil.example/' } }, {})).toMatchObject({ ok: false, error: { code: 'PERMISSION_DENIED' } });
    expect(await h({ senderFrame: null }, {})).toMatchObject({ ok: false });
    expect(calls).toEqual([]);
    expect(await h({ senderFrame: { url: 'file:///app/index.html' } }, { connectionId: 'x' })).toEqual({ ok: true, value: 1 });
    expect(calls).toEqual(['queues.list']);
  });
});

describe('trustedUrlChecker', () => {
  const check = trustedUrlChecker({ rendererFile: '/opt/qs/out/renderer/index.html', devServerUrl: null });
  it('accepts only the renderer file', () => {
    expect(check('file:///opt/qs/out/renderer/index.html')).toBe(true);
    expect(check('file:///opt/qs/out/renderer/index.html#/queues')).toBe(true);
    expect(check('file:///opt/qs/out/renderer/other.html')).toBe(false);
    expect(check('file:///etc/passwd')).toBe(false);
    expect(check('http://localhost:5173/')).toBe(false);
    expect(check('not a url')).toBe(false);
  });
  it('accepts the dev server origin when given', () => {
    const dev = trustedUrlChecker({ rendererFile: null, devServerUrl: 'http://localhost:5173' });
    expect(dev('http://localhost:5173/index.html')).toBe(true);
    expect(dev('http://localhost:5174/')).toBe(false);
  });
});
