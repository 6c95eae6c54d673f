import type { Options, SocketOptions } from 'amqplib';
import { QueuescopeError, type RabbitmqConnectionConfig } from '../../../shared/domain';

/** Connect / handshake / check timeout (ms). */
export const CONNECT_TIMEOUT_MS = 5_000;

/** Where and how to reach one RabbitMQ vhost, resolved from a {@link RabbitmqConnectionConfig}. */
export interface RabbitmqSettings {
  tls: boolean;
  host: string;
  port: number;
  vhost: string;
  username: string;
  password: string;
  /** amqplib connect options (credentials included: never log this object). */
  connect: Options.Connect;
  /** amqplib socket options: `noDelay: true` (Nagle off), connect timeout, TLS settings. */
  socket: SocketOptions;
  /** Management API base URL without credentials and without a trailing slash. */
  managementBase: URL;
  managementUser: string;
  managementPassword: string;
  /** TLS options for an `https:` management URL. */
  managementTls: { ca?: string; rejectUnauthorized: boolean; servername?: string };
  /** `amqp://user@host:port/vhost` with no password, for messages. */
  label: string;
}

function decode(s: string, what: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new QueuescopeError('INVALID_INPUT', `The ${what} in the AMQP URL is not valid percent-encoding.`);
  }
}

/**
 * Resolves a RabbitMQ connection config, following the AMQP URI spec
 * (https://www.rabbitmq.com/docs/uri-spec) as amqplib reads it:
 * - `amqp://` (port 5672) or `amqps://` (TLS, port 5671); user info is the login (guest/guest when
 *   the URL has none); the one path segment is the vhost, percent-encoded (`%2F` = `/`, an empty
 *   or absent path = `/`); `?heartbeat=` (s), `?frameMax=`, `?channelMax=` are honoured.
 * - `config.vhost`, `config.username` and `config.password` override the URL's.
 * - The management API is `config.managementUrl`, else `http://<host>:15672` for amqp and
 *   `https://<host>:15671` for amqps; it uses the same login unless its URL carries user info.
 * - amqplib gets `noDelay: true`: with Nagle on, request/response loops run at ~21 msg/s (FACTS.md).
 * @throws QueuescopeError `INVALID_INPUT` naming what is wrong (never echoing a password).
 */
export function resolveRabbitmqSettings(config: RabbitmqConnectionConfig): RabbitmqSettings {
  let url: URL;
  try {
    url = new URL(config.url.trim());
  } catch {
    throw new QueuescopeError('INVALID_INPUT', 'The AMQP URL is not a valid URL: use amqp://host:5672/%2F or amqps://host:5671/%2F.');
  }
  const scheme = url.protocol.replace(/:$/, '').toLowerCase();
  if (scheme !== 'amqp' && scheme !== 'amqps') throw new QueuescopeError('INVALID_INPUT', `A RabbitMQ URL must start with amqp:// or amqps://, not ${scheme}://.`);
  const tls = scheme === 'amqps';
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw new QueuescopeError('INVALID_INPUT', 'The AMQP URL has no host name.');
  const port = url.port === '' ? (tls ? 5671 : 5672) : Number(url.port);
  const path = url.pathname.replace(/^\//, '');
  if (path.includes('/')) throw new QueuescopeError('INVALID_INPUT', 'The AMQP URL path must be one vhost name, percent-encoded: write %2F for the default vhost "/".');
  const vhost = config.vhost ?? (path === '' ? '/' : decode(path, 'vhost'));
  if (vhost === '') throw new QueuescopeError('INVALID_INPUT', 'The vhost name is empty.');
  const hasUserInfo = url.username !== '' || url.password !== '';
  const username = config.username ?? (hasUserInfo ? decode(url.username, 'user name') : 'guest');
  const password = config.password ?? (hasUserInfo ? decode(url.password, 'password') : 'guest');

  const intParam = (name: string): number | undefined => {
    const v = url.searchParams.get(name);
    if (v === null) return undefined;
    if (!/^\d{1,10}$/.test(v)) throw new QueuescopeError('INVALID_INPUT', `The AMQP URL parameter ${name} must be a whole number, got "${v.slice(0, 20)}".`);
    return Number(v);
  };
  const connect: Options.Connect = {
    protocol: scheme,
    hostname: host,
    port,
    username,
    password,
    // amqplib unescapes the vhost (querystring.unescape): encode it so names with '%' survive.
    vhost: encodeURIComponent(vhost),
    heartbeat: intParam('heartbeat'),
    frameMax: intParam('frameMax'),
    channelMax: intParam('channelMax'),
  };
  const socket: SocketOptions = {
    noDelay: true,
    timeout: CONNECT_TIMEOUT_MS,
    clientProperties: { connection_name: 'Queuescope' },
  };
  if (tls) {
    socket.rejectUnauthorized = config.tls?.rejectUnauthorized ?? true;
    if (config.tls?.ca !== undefined) socket.ca = config.tls.ca;
    if (config.tls?.servername !== undefined) socket.servername = config.tls.servername;
  }

  let mgmt: URL;
  const rawMgmt = config.managementUrl?.trim();
  const bracketHost = host.includes(':') ? `[${host}]` : host;
  try {
    mgmt = new URL(rawMgmt !== undefined && rawMgmt !== '' ? rawMgmt : tls ? `https://${bracketHost}:15671` : `http://${bracketHost}:15672`);
  } catch {
    throw new QueuescopeError('INVALID_INPUT', 'The management API URL is not a valid URL: use http://host:15672.');
  }
  if (mgmt.protocol !== 'http:' && mgmt.protocol !== 'https:') throw new QueuescopeError('INVALID_INPUT', `The management API URL must start with http:// or https://, not ${mgmt.protocol}//.`);
  const mgmtHasUser = mgmt.username !== '' || mgmt.password !== '';
  const managementUser = mgmtHasUser ? decode(mgmt.username, 'management user name') : username;
  const managementPassword = mgmtHasUser ? decode(mgmt.password, 'management password') : password;
  mgmt.username = '';
  mgmt.password = '';
  mgmt.search = '';
  mgmt.hash = '';
  mgmt.pathname = mgmt.pathname.replace(/\/+$/, '').replace(/\/api$/, '');
  const managementTls: RabbitmqSettings['managementTls'] = { rejectUnauthorized: config.tls?.rejectUnauthorized ?? true };
  if (config.tls?.ca !== undefined) managementTls.ca = config.tls.ca;
  if (config.tls?.servername !== undefined) managementTls.servername = config.tls.servername;

  return {
    tls,
    host,
    port,
    vhost,
    username,
    password,
    connect,
    socket,
    managementBase: mgmt,
    managementUser,
    managementPassword,
    managementTls,
    label: `${scheme}://${encodeURIComponent(username)}@${bracketHost}:${port}/${encodeURIComponent(vhost)}`,
  };
}
