import type { ApiInput, ApiMethod, ApiOutput } from '../../shared/api/contract';
import type { ErrorCode, ErrorInfo } from '../../shared/domain/errors';

/** An API call that failed; carries the {@link ErrorInfo} that crossed the boundary (code, message in words, details). */
export class ApiError extends Error {
  readonly info: ErrorInfo;
  constructor(info: ErrorInfo) {
    super(info.message);
    this.name = 'ApiError';
    this.info = info;
  }
  get code(): ErrorCode {
    return this.info.code;
  }
}

/**
 * Calls one API method through `window.queuescope.invoke` and unwraps the `ApiResult`.
 *
 * @returns the method's output value.
 * @throws ApiError with the boundary's ErrorInfo when the call failed, or `INTERNAL` when no
 *   API object is present (page opened outside the app/bridge) or the transport itself failed.
 */
export async function call<M extends ApiMethod>(method: M, input: ApiInput<M>): Promise<ApiOutput<M>> {
  const bridge = window.queuescope;
  if (bridge === undefined) {
    throw new ApiError({ code: 'INTERNAL', message: 'The Queuescope API is not available in this window: open it from the app or the browser bridge.' });
  }
  let result: Awaited<ReturnType<typeof bridge.invoke<M>>>;
  try {
    result = await bridge.invoke(method, input);
  } catch (e) {
    throw new ApiError({ code: 'INTERNAL', message: `The call to ${method} did not complete: ${e instanceof Error ? e.message : String(e)}` });
  }
  if (result.ok) return result.value;
  throw new ApiError(result.error);
}

/** Any thrown value as ErrorInfo, for banners and inline error states. Never exposes a stack. */
export function errorInfoOf(e: unknown): ErrorInfo {
  if (e instanceof ApiError) return e.info;
  if (e instanceof Error) return { code: 'INTERNAL', message: e.message || 'Unexpected error.' };
  return { code: 'INTERNAL', message: String(e) };
}
