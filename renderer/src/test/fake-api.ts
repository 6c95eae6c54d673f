import { vi } from 'vitest';
import type { ApiResult } from '../../../shared/api/contract';
import type { ErrorCode } from '../../../shared/domain';

/** A fake of one API method: gets the call's input, returns the value (or a promise of it), or throws. */
export type FakeHandler = (input: Record<string, unknown>) => unknown;

/** What a {@link FakeHandler} throws to make its call fail with this error code (`{ ok: false, error }`). */
export class FakeApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The installed fake: handlers by method name (tests may add or replace them), and every call in order. */
export interface FakeApi {
  handlers: Record<string, FakeHandler>;
  calls: { method: string; input: Record<string, unknown> }[];
}

/**
 * Installs `window.queuescope` (the preload's API object) as a fake for renderer unit tests: each
 * `invoke(method, input)` is recorded in `calls` and answered by `handlers[method]` as the preload
 * would answer (`{ ok: true, value }`). A handler that throws a {@link FakeApiError} fails the call
 * with its code; any other throw fails it with `errorCode` (default `INTERNAL`); a method without a
 * handler fails with `INTERNAL` "no fake for <method>". Remove it with {@link removeFakeApi}.
 */
export function installFakeApi(handlers: Record<string, FakeHandler> = {}, options: { errorCode?: ErrorCode } = {}): FakeApi {
  const api: FakeApi = { handlers, calls: [] };
  window.queuescope = {
    invoke: vi.fn(async (method: string, input: unknown): Promise<ApiResult<unknown>> => {
      const args = (input ?? {}) as Record<string, unknown>;
      api.calls.push({ method, input: args });
      const h = api.handlers[method];
      if (h === undefined) return { ok: false, error: { code: 'INTERNAL', message: `no fake for ${method}` } };
      try {
        return { ok: true, value: await h(args) };
      } catch (e) {
        if (e instanceof FakeApiError) return { ok: false, error: { code: e.code, message: e.message } };
        return { ok: false, error: { code: options.errorCode ?? 'INTERNAL', message: e instanceof Error ? e.message : String(e) } };
      }
    }) as never,
  };
  return api;
}

/** Removes the fake {@link installFakeApi} installed. */
export function removeFakeApi(): void {
  delete window.queuescope;
}
