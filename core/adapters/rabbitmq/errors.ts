import { QueuescopeError, type ErrorCode } from '../../../shared/domain';

export { cancelledError, throwIfAborted } from '../../lib/abort';

/** The Node / OpenSSL error code of an error or of its `cause` (fetch and undici nest it). */
export function systemCode(e: unknown): string | undefined {
  for (let cur: unknown = e, i = 0; cur !== null && typeof cur === 'object' && i < 4; cur = (cur as { cause?: unknown }).cause, i++) {
    const c = (cur as { code?: unknown }).code;
    if (typeof c === 'string') return c;
  }
  return undefined;
}

/** The AMQP reply code (404, 403, 530…) of an amqplib error, from `code` or the message text. */
export function replyCode(e: unknown): number | undefined {
  if (e === null || typeof e !== 'object') return undefined;
  const c = (e as { code?: unknown }).code;
  if (typeof c === 'number') return c;
  const m = /\b(\d{3}) \([A-Z-]+\)/.exec(messageOf(e));
  return m ? Number(m[1]) : undefined;
}

export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : typeof e === 'string' ? e : '';
}

/** The broker's `with message "…"` text inside an amqplib error, when present. */
export function brokerText(e: unknown): string | null {
  const m = /with message "([^"]*)"/.exec(messageOf(e));
  return m?.[1] ?? null;
}

const TLS_CODE = /^(ERR_SSL_|ERR_TLS_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT|EPROTO$|HOSTNAME_MISMATCH|ERR_OSSL)/;

/** True when an error comes from a failed TLS handshake or certificate check. */
export function isTlsError(e: unknown): boolean {
  const code = systemCode(e);
  if (code !== undefined && TLS_CODE.test(code)) return true;
  return /\b(SSL routines|certificate|self[- ]signed|TLS)\b/i.test(messageOf(e));
}

/**
 * Maps a network-level failure to a cause in words. Returns null when `e` is not a network error.
 * DNS failure, refused connection, unreachable network and connect timeouts are `HOST_UNREACHABLE`;
 * TLS failures are `TLS_ERROR`.
 */
export function networkCause(e: unknown, where: string): { code: ErrorCode; message: string } | null {
  if (isTlsError(e)) {
    const code = systemCode(e) ?? '';
    const hint = /WRONG_VERSION_NUMBER|EPROTO|packet length too long/i.test(`${code} ${messageOf(e)}`)
      ? ' — the server does not speak TLS on this port (use amqp:// / http:// or the TLS port)'
      : /CERT|SIGNED|VERIFY|ALTNAME|HOSTNAME/i.test(code)
        ? ' — the server certificate is not trusted for this host (set a CA, a server name, or turn verification off for test brokers)'
        : '';
    return { code: 'TLS_ERROR', message: `TLS handshake with ${where} failed (${code || messageOf(e).slice(0, 120)})${hint}.` };
  }
  switch (systemCode(e)) {
    case 'ECONNREFUSED':
      return { code: 'HOST_UNREACHABLE', message: `Connection to ${where} was refused: nothing is listening on that port.` };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return { code: 'HOST_UNREACHABLE', message: `The host name of ${where} could not be resolved (DNS).` };
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EHOSTDOWN':
    case 'EADDRNOTAVAIL':
      return { code: 'HOST_UNREACHABLE', message: `${where} is not reachable from this machine (no route to host).` };
    case 'ETIMEDOUT':
      return { code: 'HOST_UNREACHABLE', message: `${where} did not answer within the connect timeout.` };
    case 'ECONNRESET':
    case 'EPIPE':
      return { code: 'HOST_UNREACHABLE', message: `${where} closed the connection unexpectedly.` };
    default:
      break;
  }
  if (/connect ETIMEDOUT|timed? ?out/i.test(messageOf(e))) return { code: 'HOST_UNREACHABLE', message: `${where} did not answer within the connect timeout.` };
  return null;
}

/**
 * Maps an error from a channel operation on a queue (checkQueue, consume, get) to a
 * QueuescopeError. AMQP reply codes per https://www.rabbitmq.com/amqp-0-9-1-reference#constants:
 * 404 → `QUEUE_NOT_FOUND`, 403 → `PERMISSION_DENIED`, 405 (exclusive queue of another connection)
 * and other codes → `BROKER_ERROR`; a lost connection → `HOST_UNREACHABLE`.
 */
export function channelError(e: unknown, queue: string, vhost: string): QueuescopeError {
  if (e instanceof QueuescopeError) return e;
  const code = replyCode(e);
  const text = brokerText(e) ?? messageOf(e);
  switch (code) {
    case 404:
      return new QueuescopeError('QUEUE_NOT_FOUND', `Queue '${queue}' does not exist in vhost '${vhost}' (it may have been deleted).`, { queue, vhost });
    case 403:
      return new QueuescopeError('PERMISSION_DENIED', `RabbitMQ refused access to queue '${queue}': ${text}`, { queue, vhost, replyCode: code });
    case 405:
      return new QueuescopeError('BROKER_ERROR', `Queue '${queue}' is exclusive to another connection, so it cannot be read: ${text}`, { queue, vhost, replyCode: code });
    default:
      break;
  }
  const net = networkCause(e, 'RabbitMQ');
  if (net) return new QueuescopeError(net.code, net.message, { queue, vhost });
  if (/Connection closed|Unexpected close|Socket closed|Channel ended|Heartbeat timeout/i.test(messageOf(e))) {
    return new QueuescopeError('HOST_UNREACHABLE', `The connection to RabbitMQ was lost while reading queue '${queue}': ${text}`, { queue, vhost, replyCode: code });
  }
  return new QueuescopeError('BROKER_ERROR', `RabbitMQ refused an operation on queue '${queue}': ${text || 'unknown error'}`, { queue, vhost, replyCode: code });
}
