import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ListQueuesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { fromIni } from '@aws-sdk/credential-providers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueuescopeError } from '../../../shared/domain';
import { mapSqsError, type SqsErrorContext } from './errors';

/**
 * The emulators accept any credentials, so the auth and permission mappings are tested with the
 * error objects the real SDK builds from AWS's own replies: a local HTTP endpoint answers with the
 * status, `x-amzn-query-error` header and JSON body AWS sends (SQS JSON protocol, awsQueryCompatible),
 * and `@aws-sdk/client-sqs` deserializes them as it would from AWS.
 */

interface Canned {
  status: number;
  queryError?: string;
  body: Record<string, string>;
}

/** Replies AWS (and, for the last two, fauxqs) actually sends. */
const REPLIES: Record<string, Canned> = {
  unknownKey: {
    status: 403,
    queryError: 'InvalidClientTokenId;Sender',
    body: { __type: 'com.amazon.coral.service#UnrecognizedClientException', message: 'The security token included in the request is invalid.' },
  },
  unknownKeyNoHeader: {
    status: 400,
    body: { __type: 'com.amazon.coral.service#UnrecognizedClientException', message: 'The security token included in the request is invalid.' },
  },
  badSignature: {
    status: 403,
    queryError: 'SignatureDoesNotMatch;Sender',
    body: { __type: 'com.amazon.coral.service#InvalidSignatureException', message: 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.' },
  },
  expired: {
    status: 403,
    queryError: 'ExpiredToken;Sender',
    body: { __type: 'com.amazon.coral.service#ExpiredTokenException', message: 'The security token included in the request is expired' },
  },
  denied: {
    status: 403,
    queryError: 'AccessDenied;Sender',
    body: {
      __type: 'com.amazon.coral.service#AccessDeniedException',
      Message: 'User: arn:aws:sts::111122223333:assumed-role/reader/s is not authorized to perform: sqs:listqueues on resource: arn:aws:sqs:us-east-1:111122223333: because no identity-based policy allows the sqs:listqueues action',
    },
  },
  throttled: { status: 400, queryError: 'RequestThrottled;Sender', body: { __type: 'com.amazonaws.sqs#RequestThrottled', message: 'Request is throttled.' } },
  // fauxqs 2.4.1, captured with curl:
  noQueue: { status: 400, queryError: 'AWS.SimpleQueueService.NonExistentQueue;Sender', body: { __type: 'com.amazonaws.sqs#QueueDoesNotExist', message: 'The specified queue does not exist.' } },
  invalidAction: { status: 400, body: { __type: 'com.amazonaws.sqs#InvalidAction', message: 'Unknown action: ListDeadLetterSourceQueues' } },
  html: { status: 502, body: {} },
};

let server: Server;
let endpoint = '';
const ctx = (): SqsErrorContext => ({ action: 'ListQueues', endpoint, region: 'us-east-1' });

beforeAll(async () => {
  server = createServer((req, res) => {
    const key = (req.url ?? "/").replace(/^\/+|\/+$/g, "");
    const reply = REPLIES[key];
    req.resume();
    if (!reply || key === 'html') {
      res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>Bad Gateway</body></html>');
      return;
    }
    const headers: Record<string, string> = { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'req-1' };
    if (reply.queryError !== undefined) headers['x-amzn-query-error'] = reply.queryError;
    res.writeHead(reply.status, headers).end(JSON.stringify(reply.body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** The error the SDK throws for one canned reply. */
async function sdkError(key: string): Promise<unknown> {
  const client = new SQSClient({ region: 'us-east-1', endpoint: `${endpoint}/${key}`, credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' }, maxAttempts: 1 });
  try {
    await client.send(new ListQueuesCommand({ MaxResults: 1 }));
  } catch (e) {
    return e;
  } finally {
    client.destroy();
  }
  throw new Error(`the SDK accepted the canned reply ${key}`);
}

describe('mapSqsError with the SDK error objects of real AWS replies', () => {
  it.each([
    ['unknownKey', 'AUTH_FAILED', /rejected the access key ID \(InvalidClientTokenId\)/, 'unknown-access-key'],
    ['unknownKeyNoHeader', 'AUTH_FAILED', /rejected the access key ID \(UnrecognizedClientException\)/, 'unknown-access-key'],
    ['badSignature', 'AUTH_FAILED', /secret access key is wrong/, 'bad-signature'],
    ['expired', 'AUTH_FAILED', /session token has expired/, 'expired-token'],
  ])('%s → %s', async (key, code, message, reason) => {
    const err = mapSqsError(await sdkError(key), ctx());
    expect(err.code).toBe(code);
    expect(err.message).toMatch(message);
    expect(err.details?.reason).toBe(reason);
    expect(err.message).not.toContain('wJalrXUtnFEMI');
  });

  it('AccessDenied → PERMISSION_DENIED naming the denied action', async () => {
    const err = mapSqsError(await sdkError('denied'), ctx());
    expect(err.code).toBe('PERMISSION_DENIED');
    expect(err.message).toBe('The credentials are valid but not allowed to call sqs:listqueues (AccessDenied).');
    expect(err.details).toMatchObject({ deniedAction: 'sqs:listqueues', httpStatus: 403 });
  });

  it('NonExistentQueue → QUEUE_NOT_FOUND; InvalidAction → UNSUPPORTED; throttling and non-SQS replies → BROKER_ERROR', async () => {
    const nq = mapSqsError(await sdkError('noQueue'), { ...ctx(), action: 'GetQueueAttributes', queueName: 'orders' });
    expect(nq.code).toBe('QUEUE_NOT_FOUND');
    expect(nq.message).toContain('"orders"');
    const ia = mapSqsError(await sdkError('invalidAction'), { ...ctx(), action: 'ListDeadLetterSourceQueues' });
    expect(ia.code).toBe('UNSUPPORTED');
    expect(ia.message).toContain('does not implement ListDeadLetterSourceQueues');
    const th = mapSqsError(await sdkError('throttled'), ctx());
    expect(th.code).toBe('BROKER_ERROR');
    expect(th.details?.retryable).toBe(true);
    const html = mapSqsError(await sdkError('html'), ctx());
    expect(html.code).toBe('BROKER_ERROR');
    expect(html.message).toMatch(/does not answer like an SQS endpoint \(HTTP 502 to ListQueues\); check the endpoint URL\./);
    expect(html.details?.reason).toBe('not-sqs');
  });
});

describe('mapSqsError for transport and credential-provider errors', () => {
  it('a missing profile (real CredentialsProviderError) → AUTH_FAILED', async () => {
    const saved = { c: process.env.AWS_CONFIG_FILE, s: process.env.AWS_SHARED_CREDENTIALS_FILE };
    process.env.AWS_CONFIG_FILE = '/nonexistent/qs-config';
    process.env.AWS_SHARED_CREDENTIALS_FILE = '/nonexistent/qs-credentials';
    try {
      let thrown: unknown;
      try {
        await fromIni({ profile: 'qs-nope' })();
      } catch (e) {
        thrown = e;
      }
      const err = mapSqsError(thrown, ctx());
      expect(err.code).toBe('AUTH_FAILED');
      expect(err.message).toContain('qs-nope');
      expect(err.details?.reason).toBe('no-credentials');
    } finally {
      if (saved.c === undefined) delete process.env.AWS_CONFIG_FILE;
      else process.env.AWS_CONFIG_FILE = saved.c;
      if (saved.s === undefined) delete process.env.AWS_SHARED_CREDENTIALS_FILE;
      else process.env.AWS_SHARED_CREDENTIALS_FILE = saved.s;
    }
  });

  it('maps socket, timeout, TLS and abort errors', () => {
    const sock = (code: string, message = code): Error => Object.assign(new Error(message), { code });
    expect(mapSqsError(sock('ECONNREFUSED'), ctx()).code).toBe('HOST_UNREACHABLE');
    expect(mapSqsError(sock('ENOTFOUND'), ctx()).message).toContain('host name not found');
    expect(mapSqsError(Object.assign(new Error('@smithy/node-http-handler - the request socket did not establish a connection with the server within the configured timeout of 5000 ms.'), { name: 'TimeoutError' }), ctx()).code).toBe('HOST_UNREACHABLE');
    expect(mapSqsError(Object.assign(new Error('the request socket timed out after 60000 ms of inactivity'), { name: 'TimeoutError' }), ctx()).code).toBe('TIMEOUT');
    expect(mapSqsError(sock('EPROTO', 'write EPROTO error:0A00010B:SSL routines:ssl3_get_record:wrong version number'), ctx()).code).toBe('TLS_ERROR');
    expect(mapSqsError(sock('DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate'), ctx()).code).toBe('TLS_ERROR');
    expect(mapSqsError(Object.assign(new Error('Request aborted'), { name: 'AbortError' }), ctx()).code).toBe('CANCELLED');
    expect(mapSqsError(new TypeError('x is undefined'), ctx()).code).toBe('INTERNAL');
    const q = new QueuescopeError('PEEK_REFUSED', 'no');
    expect(mapSqsError(q, ctx())).toBe(q);
  });
});
