import { QueuescopeError, type ErrorCode } from '../../../shared/domain';

/** Where an SQS call failed, for error messages and `details` (never credentials). */
export interface SqsErrorContext {
  /** SQS API action, e.g. `ListQueues`, `ReceiveMessage`. */
  action: string;
  /** Endpoint the request went to, e.g. `http://127.0.0.1:4566` or `https://sqs.us-east-1.amazonaws.com`. */
  endpoint: string;
  region: string;
  /** Queue name when the call was about one queue. */
  queueName?: string;
}

/** Error names / query-compatible codes meaning "AWS does not know this access key". */
const UNKNOWN_KEY = new Set(['InvalidClientTokenId', 'UnrecognizedClientException', 'InvalidAccessKeyId', 'AuthFailure']);
/** "The key is known but the signature is wrong": a wrong secret key, or a skewed clock. */
const BAD_SIGNATURE = new Set(['SignatureDoesNotMatch', 'InvalidSignatureException', 'IncompleteSignature', 'IncompleteSignatureException']);
const EXPIRED = new Set(['ExpiredToken', 'ExpiredTokenException', 'RequestExpired', 'TokenRefreshRequired']);
const MISSING_AUTH = new Set(['MissingAuthenticationToken', 'MissingAuthenticationTokenException', 'MissingClientTokenId']);
const DENIED = new Set(['AccessDenied', 'AccessDeniedException', 'AuthorizationError', 'NotAuthorized']);
const KMS_DENIED = new Set(['KmsAccessDenied', 'KMS.AccessDeniedException', 'KmsDisabled', 'KMS.DisabledException', 'KmsInvalidKeyUsage', 'KmsInvalidState', 'KmsNotFound', 'KMS.NotFoundException']);
const NO_QUEUE = new Set(['QueueDoesNotExist', 'AWS.SimpleQueueService.NonExistentQueue', 'QueueDeletedRecently', 'AWS.SimpleQueueService.QueueDeletedRecently']);
const UNSUPPORTED_OP = new Set(['InvalidAction', 'UnknownOperationException', 'UnsupportedOperation', 'AWS.SimpleQueueService.UnsupportedOperation', 'NotImplemented', 'UnknownOperation']);
const THROTTLED = new Set(['RequestThrottled', 'ThrottlingException', 'Throttling', 'KmsThrottled', 'OverLimit']);

/** Node socket error codes that mean "could not reach the host". */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED']);
/** OpenSSL / Node TLS codes (certificate problems and handshake failures). */
const TLS_CODES = new Set([
  'EPROTO',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REVOKED',
  'HOSTNAME_MISMATCH',
]);

interface SdkErrorShape {
  name?: unknown;
  code?: unknown;
  Code?: unknown;
  message?: unknown;
  $fault?: unknown;
  $metadata?: { httpStatusCode?: unknown; requestId?: unknown };
  cause?: unknown;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** `sqs:receivemessage` → `sqs:ReceiveMessage`-style action named in an AccessDenied text, if any. */
function deniedAction(message: string): string | undefined {
  return /not authorized to perform:?\s+([a-z0-9-]+:[A-Za-z*]+)/i.exec(message)?.[1];
}

/**
 * Maps anything the AWS SDK v3 (`@aws-sdk/client-sqs`, JSON protocol) or a credential provider throws
 * to a {@link QueuescopeError} with the most specific code:
 *
 * | thrown | code |
 * |---|---|
 * | `AbortError` (our `AbortSignal`) | `CANCELLED` |
 * | socket `ECONNREFUSED`, `ENOTFOUND`, `EAI_AGAIN`, `EHOSTUNREACH`, `ETIMEDOUT`…; connect timeout (`TimeoutError` "did not establish a connection") | `HOST_UNREACHABLE` |
 * | other `TimeoutError` (connected, no answer in time) | `TIMEOUT` |
 * | `EPROTO`, `ERR_SSL_*`, `ERR_TLS_*`, certificate codes | `TLS_ERROR` |
 * | `CredentialsProviderError` (no credentials, unknown profile) | `AUTH_FAILED` |
 * | `InvalidClientTokenId`, `UnrecognizedClientException` (unknown key), `SignatureDoesNotMatch` / `InvalidSignatureException` (wrong secret or clock skew), `ExpiredToken`, `MissingAuthenticationToken` | `AUTH_FAILED` |
 * | `AccessDenied` / `AccessDeniedException`, KMS access errors | `PERMISSION_DENIED` (names the action) |
 * | `QueueDoesNotExist` / `AWS.SimpleQueueService.NonExistentQueue` | `QUEUE_NOT_FOUND` |
 * | `InvalidAction`, `UnknownOperationException`, `UnsupportedOperation` (emulators lacking an action) | `UNSUPPORTED` |
 * | a reply that shows the endpoint is not SQS: HTTP 404/405, a non-JSON or unparseable body, or no HTTP at all (`HPE_*`) | `BROKER_ERROR` ("does not answer like an SQS endpoint", `details.reason: 'not-sqs'`) |
 * | any other service error | `BROKER_ERROR` (with the AWS error code) |
 * | anything else | `INTERNAL` |
 *
 * The SDK names query-compatible errors after the `x-amzn-query-error` header, so both the error
 * `name` and its `Code` are checked (see the SQS API reference, "Common Errors", and
 * `@aws-sdk/core` `AwsJson1_0Protocol`). Messages never contain credentials: SDK texts do not, and
 * {@link QueuescopeError} redacts anything key-shaped anyway.
 */
export function mapSqsError(e: unknown, ctx: SqsErrorContext): QueuescopeError {
  if (e instanceof QueuescopeError) return e;
  const err = (typeof e === 'object' && e !== null ? e : {}) as SdkErrorShape;
  const name = str(err.name) ?? '';
  const awsCode = str(err.Code) ?? name;
  const nodeCode = str(err.code) ?? '';
  const rawMessage = str(err.message) ?? (typeof e === 'string' ? e : '');
  const status = typeof err.$metadata?.httpStatusCode === 'number' ? err.$metadata.httpStatusCode : undefined;
  const requestId = str(err.$metadata?.requestId);
  const where = ctx.queueName !== undefined ? ` on queue "${ctx.queueName}"` : '';
  const base: Record<string, unknown> = { action: ctx.action, endpoint: ctx.endpoint, region: ctx.region };
  if (ctx.queueName !== undefined) base.queue = ctx.queueName;
  const make = (code: ErrorCode, message: string, extra: Record<string, unknown> = {}): QueuescopeError =>
    new QueuescopeError(code, message, { ...base, ...extra }, { cause: e });
  const is = (set: Set<string>): boolean => set.has(name) || set.has(awsCode);

  if (name === 'AbortError') return make('CANCELLED', `${ctx.action} was cancelled.`);

  if (name === 'CredentialsProviderError') {
    const why = (rawMessage || 'the credential provider failed').replace(/\.?\s*$/, '.');
    return make('AUTH_FAILED', `No usable AWS credentials: ${why} Give an access key, a profile from ~/.aws/config, or set AWS_* environment variables.`, {
      reason: 'no-credentials',
    });
  }

  // Service errors first: they carry $metadata and an AWS error code.
  if (is(UNKNOWN_KEY)) {
    return make('AUTH_FAILED', `${ctx.endpoint} rejected the access key ID (${awsCode}): the key does not exist or was deactivated.`, { reason: 'unknown-access-key', awsCode, httpStatus: status, requestId });
  }
  if (is(BAD_SIGNATURE)) {
    return make('AUTH_FAILED', `${ctx.endpoint} rejected the request signature (${awsCode}): the secret access key is wrong, or this computer's clock is off.`, { reason: 'bad-signature', awsCode, httpStatus: status, requestId });
  }
  if (is(EXPIRED)) {
    return make('AUTH_FAILED', `The AWS session token has expired (${awsCode}): refresh the credentials (e.g. aws sso login) and retry.`, { reason: 'expired-token', awsCode, httpStatus: status, requestId });
  }
  if (is(MISSING_AUTH)) {
    return make('AUTH_FAILED', `${ctx.endpoint} requires signed requests and none were sent (${awsCode}).`, { reason: 'missing-signature', awsCode, httpStatus: status, requestId });
  }
  if (is(DENIED)) {
    const action = deniedAction(rawMessage) ?? `sqs:${ctx.action}`;
    return make('PERMISSION_DENIED', `The credentials are valid but not allowed to call ${action}${where} (${awsCode}).`, { awsCode, deniedAction: action, httpStatus: status, requestId });
  }
  if (is(KMS_DENIED)) {
    return make('PERMISSION_DENIED', `${ctx.action}${where} needs the queue's KMS key, which refused (${awsCode}): allow kms:Decrypt / kms:GenerateDataKey for these credentials.`, { awsCode, httpStatus: status, requestId });
  }
  if (is(NO_QUEUE)) {
    return make('QUEUE_NOT_FOUND', `The SQS queue${ctx.queueName !== undefined ? ` "${ctx.queueName}"` : ''} does not exist (any more) at ${ctx.endpoint} (${ctx.action}).`, { awsCode, httpStatus: status, requestId });
  }
  if (is(UNSUPPORTED_OP)) {
    return make('UNSUPPORTED', `${ctx.endpoint} does not implement ${ctx.action} (${awsCode}): an SQS emulator may lack it.`, { awsCode, httpStatus: status, requestId });
  }

  // Transport errors.
  if (nodeCode.startsWith('HPE_')) {
    // Node's HTTP parser could not read the reply at all: something other than HTTP (AMQP, Redis…) listens there.
    return make('BROKER_ERROR', `${ctx.endpoint} does not answer like an SQS endpoint (no HTTP reply to ${ctx.action}: ${firstLine(rawMessage) || nodeCode}); check the endpoint URL.`, { nodeCode, reason: 'not-sqs' });
  }
  if (nodeCode.startsWith('ERR_SSL_') || nodeCode.startsWith('ERR_TLS_') || TLS_CODES.has(nodeCode) || /\bSSL routines\b|certificate/i.test(rawMessage)) {
    return make('TLS_ERROR', `TLS with ${ctx.endpoint} failed (${nodeCode || 'handshake'}): ${firstLine(rawMessage)}. Check the endpoint's scheme (https:// to a plain-http port fails) and its certificate.`, { nodeCode });
  }
  if (name === 'TimeoutError' && !/did not establish a connection/i.test(rawMessage) && nodeCode !== 'ETIMEDOUT') {
    return make('TIMEOUT', `${ctx.endpoint} accepted the connection but did not answer ${ctx.action} in time.`, { nodeCode });
  }
  if (NETWORK_CODES.has(nodeCode) || name === 'TimeoutError') {
    const why =
      nodeCode === 'ECONNREFUSED' ? 'connection refused' :
      nodeCode === 'ENOTFOUND' || nodeCode === 'EAI_AGAIN' ? 'host name not found' :
      name === 'TimeoutError' || nodeCode === 'ETIMEDOUT' ? 'no connection within the timeout' :
      nodeCode;
    return make('HOST_UNREACHABLE', `Cannot reach SQS at ${ctx.endpoint} (${why}).`, { nodeCode });
  }

  if (is(THROTTLED)) {
    return make('BROKER_ERROR', `SQS throttled ${ctx.action}${where} (${awsCode}); retry in a moment.`, { awsCode, httpStatus: status, requestId, retryable: true });
  }
  if (err.$metadata !== undefined || err.$fault !== undefined) {
    // A reply that is not an SQS JSON error (e.g. an HTML page, a 404/405 from another HTTP server).
    // SQS itself answers its errors with 400/403/5xx, never 404/405 (QueueDoesNotExist is a 400, handled above).
    if (
      status === 404 ||
      status === 405 ||
      awsCode === 'Unknown' ||
      awsCode === '' ||
      awsCode === 'SyntaxError' ||
      rawMessage === 'UnknownError' ||
      /is not valid JSON|Deserialization error|Unexpected token/i.test(rawMessage)
    ) {
      return make('BROKER_ERROR', `${ctx.endpoint} does not answer like an SQS endpoint (HTTP ${status ?? '?'} to ${ctx.action}); check the endpoint URL.`, { httpStatus: status, requestId, reason: 'not-sqs' });
    }
    return make('BROKER_ERROR', `SQS refused ${ctx.action}${where}: ${awsCode}: ${firstLine(rawMessage)}`, { awsCode, httpStatus: status, requestId });
  }
  return make('INTERNAL', `${ctx.action} failed unexpectedly: ${firstLine(rawMessage) || 'unknown error'}`);
}

function firstLine(s: string): string {
  return s.split('\n')[0]?.trim().slice(0, 300) ?? '';
}
