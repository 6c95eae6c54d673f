import type { SqsConnectionConfig } from '../../../shared/domain';
import type { BrokerAdapter } from '../types';
import { SqsAdapter } from './adapter';

export { SqsAdapter } from './adapter';
export { mapSqsError, type SqsErrorContext } from './errors';
export { PEEK_VISIBILITY_TIMEOUT_S, SQS_MAX_PEEK_WINDOW } from './attributes';

/**
 * Creates the adapter for Amazon SQS or an SQS-compatible endpoint (see {@link SqsAdapter} for
 * behaviour and side effects). No network I/O happens until the first call; a config whose access
 * key lacks its secret (or vice versa) fails each call with `INVALID_INPUT` (and `testConnection`
 * reports it) instead of throwing here.
 *
 * Credentials: static keys if given, else the named `profile` (`fromIni`), else the SDK's default
 * chain. `endpoint` (e.g. `http://127.0.0.1:4566` for fauxqs) receives every request.
 */
export function createSqsAdapter(config: SqsConnectionConfig): BrokerAdapter {
  return new SqsAdapter(config);
}
