import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { fromIni } from '@aws-sdk/credential-providers';
import type { SqsConnectionConfig } from '../../../shared/domain';
import { QueuescopeError } from '../../../shared/domain';

/** Timeouts and retries for one SQS client. */
export interface SqsClientOptions {
  /** SDK attempts per call including the first (SDK default 3). */
  maxAttempts: number;
  /** Time to establish the TCP (+TLS) connection, ms. */
  connectionTimeoutMs: number;
  /** Whole-request time limit, ms (must exceed any long-poll `WaitTimeSeconds`). */
  requestTimeoutMs: number;
}

/** Regular calls: 3 attempts, 5 s to connect, 60 s per request (a 10-message receive can carry 10 MiB). */
export const DEFAULT_CLIENT_OPTIONS: SqsClientOptions = { maxAttempts: 3, connectionTimeoutMs: 5_000, requestTimeoutMs: 60_000 };
/** "Test connection": one attempt, 5 s to connect, 10 s per request, so a wrong endpoint fails fast. */
export const TEST_CLIENT_OPTIONS: SqsClientOptions = { maxAttempts: 1, connectionTimeoutMs: 5_000, requestTimeoutMs: 10_000 };

/** How credentials are obtained, in words (no secrets): for "Test connection" and error details. */
export function describeCredentialSource(config: SqsConnectionConfig): string {
  if (config.accessKeyId !== undefined && config.accessKeyId !== '') return config.sessionToken ? 'static access key with session token' : 'static access key';
  if (config.profile !== undefined && config.profile !== '') return `profile "${config.profile}" (~/.aws/config, ~/.aws/credentials)`;
  return 'default AWS credential chain (environment, SSO, shared files, container/instance role)';
}

/** The endpoint requests go to: the configured override, or the regional AWS endpoint. */
export function effectiveEndpoint(config: SqsConnectionConfig): string {
  return config.endpoint ?? `https://sqs.${config.region}.amazonaws.com`;
}

/**
 * Checks the parts of the config zod cannot: an access key needs its secret and vice versa.
 * @returns a QueuescopeError `INVALID_INPUT` naming the problem, or null.
 */
export function credentialConfigProblem(config: SqsConnectionConfig): QueuescopeError | null {
  const hasId = config.accessKeyId !== undefined && config.accessKeyId !== '';
  const hasSecret = config.secretAccessKey !== undefined && config.secretAccessKey !== '';
  if (hasId && !hasSecret) return new QueuescopeError('INVALID_INPUT', 'An AWS access key ID was given without its secret access key.');
  if (!hasId && hasSecret) return new QueuescopeError('INVALID_INPUT', 'An AWS secret access key was given without its access key ID.');
  if (config.endpoint !== undefined) {
    try {
      const u = new URL(config.endpoint);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') return new QueuescopeError('INVALID_INPUT', `The SQS endpoint must be an http:// or https:// URL, got ${u.protocol}//.`);
    } catch {
      return new QueuescopeError('INVALID_INPUT', 'The SQS endpoint is not a valid URL.');
    }
  }
  return null;
}

/**
 * Builds an `SQSClient` (AWS SDK v3, JSON protocol) for a connection:
 * - credentials: static keys when given, else `fromIni({ profile })` for a named profile, else the
 *   SDK's default provider chain;
 * - `endpoint` is set explicitly when configured. The SDK then sends every request to that endpoint
 *   even when a `QueueUrl` names another host (its `queueUrlMiddleware` only redirects to the
 *   QueueUrl's host when no endpoint is configured) — needed for fauxqs, whose queue URLs use
 *   host `sqs.<region>.<host>`.
 * @throws nothing; call {@link credentialConfigProblem} first.
 */
export function createSqsClient(config: SqsConnectionConfig, options: SqsClientOptions): SQSClient {
  const clientConfig: SQSClientConfig = {
    region: config.region,
    maxAttempts: options.maxAttempts,
    requestHandler: { connectionTimeout: options.connectionTimeoutMs, requestTimeout: options.requestTimeoutMs, throwOnRequestTimeout: true },
  };
  if (config.endpoint !== undefined) clientConfig.endpoint = config.endpoint;
  if (config.accessKeyId !== undefined && config.accessKeyId !== '' && config.secretAccessKey !== undefined) {
    clientConfig.credentials = {
      accessKeyId: config.accessKeyId,
      secretAccessKey: config.secretAccessKey,
      ...(config.sessionToken !== undefined && config.sessionToken !== '' ? { sessionToken: config.sessionToken } : {}),
    };
  } else if (config.profile !== undefined && config.profile !== '') {
    clientConfig.credentials = fromIni({ profile: config.profile });
  }
  return new SQSClient(clientConfig);
}
