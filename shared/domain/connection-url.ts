import { QueuescopeError } from './errors';
import { connectionConfigSchema, type ConnectionConfig } from './connection';

/**
 * Parses a connection given as one string, the form the CLI takes:
 *
 * - `redis://[user[:pass]@]host[:port][/db]`, `rediss://…` (TLS)
 * - `amqp://[user[:pass]@]host[:port][/vhost]`, `amqps://…`; `?management=http://host:15672` optional
 * - `sqs://REGION[?endpoint=http://host:port&profile=NAME]`
 * - a path ending in `.jsonl` (or `file://…`) → a read-only snapshot
 *
 * @throws QueuescopeError `INVALID_INPUT` naming what is wrong (never echoing a password).
 */
export function parseConnectionUrl(input: string): ConnectionConfig {
  const raw = input.trim();
  if (raw === '') throw new QueuescopeError('INVALID_INPUT', 'No connection given: pass a URL such as redis://127.0.0.1:6379, amqp://guest:guest@127.0.0.1:5672 or sqs://us-east-1.');
  if (/^file:\/\//i.test(raw)) return connectionConfigSchema.parse({ kind: 'snapshot', path: decodeURIComponent(raw.replace(/^file:\/\//i, '')) });
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
    if (/\.jsonl(\.gz)?$/i.test(raw)) return connectionConfigSchema.parse({ kind: 'snapshot', path: raw });
    throw new QueuescopeError('INVALID_INPUT', `"${safe(raw)}" is not a connection URL: it must start with redis://, rediss://, amqp://, amqps:// or sqs://, or be a .jsonl snapshot path.`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new QueuescopeError('INVALID_INPUT', `"${safe(raw)}" is not a valid URL${raw.includes('@') ? ` (${ENCODE_HINT})` : ''}.`);
  }
  // An "@" left in the path or fragment: the password (or user name) held a raw "/" or "#", so
  // the rest of it was read as the path — and would be echoed as a database or vhost name.
  if (url.pathname.includes('@') || url.hash.includes('@')) {
    throw new QueuescopeError('INVALID_INPUT', `The connection URL has an "@" after the host, so it cannot be read as user:password@host (${ENCODE_HINT}).`);
  }
  const scheme = url.protocol.replace(/:$/, '').toLowerCase();
  switch (scheme) {
    case 'redis':
    case 'rediss': {
      const dbPath = url.pathname.replace(/^\//, '');
      if (dbPath !== '' && !/^\d+$/.test(dbPath)) throw new QueuescopeError('INVALID_INPUT', `Redis database index must be a number, got "/${safe(dbPath)}".`);
      return connectionConfigSchema.parse({ kind: 'redis', url: raw, ...(dbPath !== '' ? { db: Number(dbPath) } : {}) });
    }
    case 'amqp':
    case 'amqps': {
      const management = url.searchParams.get('management') ?? undefined;
      url.searchParams.delete('management');
      return connectionConfigSchema.parse({ kind: 'rabbitmq', url: url.toString(), ...(management ? { managementUrl: management } : {}) });
    }
    case 'sqs': {
      const region = url.hostname;
      const unknown: string[] = [];
      url.searchParams.forEach((_v, k) => {
        if (k !== 'endpoint' && k !== 'profile' && !unknown.includes(k)) unknown.push(k);
      });
      if (unknown.length > 0) throw new QueuescopeError('INVALID_INPUT', `sqs:// URL: unknown parameter${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${safe(k)}"`).join(', ')}; only "endpoint" and "profile" are understood.`);
      const endpoint = url.searchParams.get('endpoint') ?? undefined;
      const profile = url.searchParams.get('profile') ?? undefined;
      const result = connectionConfigSchema.safeParse({ kind: 'sqs', region, ...(endpoint ? { endpoint } : {}), ...(profile ? { profile } : {}) });
      if (!result.success) {
        const what = result.error.issues.map((i) =>
          i.path[0] === 'endpoint' ? `endpoint "${safe(endpoint ?? '')}" is not an http(s) URL such as http://127.0.0.1:4566` : i.path[0] === 'region' ? `region "${safe(region)}" is not an AWS region such as us-east-1` : `${i.path.join('.')}: ${i.message}`,
        );
        throw new QueuescopeError('INVALID_INPUT', `sqs:// URL: ${[...new Set(what)].join('; ')}.`);
      }
      return result.data;
    }
    default:
      throw new QueuescopeError('INVALID_INPUT', `Unsupported scheme "${safe(scheme)}://": use redis://, rediss://, amqp://, amqps:// or sqs://.`);
  }
}

const ENCODE_HINT = 'a user name or password with special characters must be percent-encoded: @ → %40, / → %2F, : → %3A, # → %23, ? → %3F, % → %25';

/**
 * Echo user input in an error without its password or control characters. The user info runs to
 * the LAST "@" (a raw "@", "/" or "#" in a password must not let its tail through); without a ":"
 * in it, it is shown only when it has no "@" (a plain user name).
 */
function safe(s: string): string {
  const m = /^([a-z][a-z0-9+.-]*:\/\/)([\s\S]*)@([^@]*)$/i.exec(s);
  let out = s;
  if (m !== null) {
    const info = m[2] ?? '';
    const colon = info.indexOf(':');
    const shown = colon >= 0 ? `${info.slice(0, colon)}:***` : info.includes('@') ? '***' : info;
    out = `${m[1] ?? ''}${shown}@${m[3] ?? ''}`;
  }
  return out.replace(/[\u0000-\u001f\u007f]/g, '?').slice(0, 200);
}
