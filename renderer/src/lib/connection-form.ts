import { connectionConfigSchema, type ConnectionConfig, type ConnectionProfile } from '../../../shared/domain/connection';

/** The "New connection" form's fields, as strings/booleans the inputs hold. */
export interface ConnectionForm {
  name: string;
  kind: 'redis' | 'rabbitmq' | 'sqs';
  redis: { url: string; username: string; password: string; db: string; tls: boolean; tlsVerify: boolean };
  rabbitmq: { url: string; managementUrl: string; vhost: string; username: string; password: string; tls: boolean; tlsVerify: boolean };
  sqs: { region: string; endpoint: string; auth: 'chain' | 'profile' | 'keys'; profile: string; accessKeyId: string; secretAccessKey: string; sessionToken: string };
}

export const EMPTY_FORM: ConnectionForm = {
  name: '',
  kind: 'redis',
  redis: { url: 'redis://127.0.0.1:6379', username: '', password: '', db: '', tls: false, tlsVerify: true },
  rabbitmq: { url: 'amqp://127.0.0.1:5672', managementUrl: '', vhost: '', username: 'guest', password: '', tls: false, tlsVerify: true },
  sqs: { region: 'us-east-1', endpoint: '', auth: 'chain', profile: '', accessKeyId: '', secretAccessKey: '', sessionToken: '' },
};

/**
 * The management API URL RabbitMQ's defaults imply for an AMQP URL: `http://host:15672` for
 * `amqp://`, `https://host:15671` for `amqps://` (https://www.rabbitmq.com/docs/management#single-listener-port).
 * Null when the URL cannot be parsed.
 */
export function derivedManagementUrl(amqpUrl: string): string | null {
  try {
    const u = new URL(amqpUrl.trim());
    if (u.protocol !== 'amqp:' && u.protocol !== 'amqps:') return null;
    return u.protocol === 'amqps:' ? `https://${u.hostname}:15671` : `http://${u.hostname}:15672`;
  } catch {
    return null;
  }
}

/** The vhost an AMQP URL names (its path, URL-decoded; `/` when empty), or null when unparsable. */
export function vhostFromUrl(amqpUrl: string): string | null {
  try {
    const u = new URL(amqpUrl.trim());
    const path = u.pathname.replace(/^\//, '');
    return path === '' ? '/' : decodeURIComponent(path);
  } catch {
    return null;
  }
}

const opt = (s: string): string | undefined => (s.trim() === '' ? undefined : s.trim());

/**
 * Builds a connection config from the form. Empty fields are omitted (an omitted password keeps
 * the stored one when saving an existing connection).
 *
 * @returns the config, or `errors` keyed by field (`url`, `db`, `region`, `endpoint`…) in words.
 */
export function buildConfig(form: ConnectionForm): { ok: true; config: ConnectionConfig } | { ok: false; errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  let candidate: Record<string, unknown>;
  if (form.kind === 'redis') {
    const f = form.redis;
    if (!/^rediss?:\/\//i.test(f.url.trim())) errors.url = 'A Redis URL starts with redis:// or rediss:// (TLS).';
    const db = opt(f.db);
    if (db !== undefined && !/^\d+$/.test(db)) errors.db = 'The database index is a whole number (0–15 on a default server).';
    const tls = f.tls || /^rediss:/i.test(f.url.trim());
    candidate = {
      kind: 'redis',
      url: f.url.trim(),
      username: opt(f.username),
      password: f.password === '' ? undefined : f.password,
      db: db !== undefined && /^\d+$/.test(db) ? Number(db) : undefined,
      tls: tls ? { rejectUnauthorized: f.tlsVerify } : undefined,
    };
  } else if (form.kind === 'rabbitmq') {
    const f = form.rabbitmq;
    if (!/^amqps?:\/\//i.test(f.url.trim())) errors.url = 'An AMQP URL starts with amqp:// or amqps:// (TLS).';
    const mgmt = opt(f.managementUrl);
    if (mgmt !== undefined && !/^https?:\/\//i.test(mgmt)) errors.managementUrl = 'The management URL starts with http:// or https://.';
    const tls = f.tls || /^amqps:/i.test(f.url.trim());
    candidate = {
      kind: 'rabbitmq',
      url: f.url.trim(),
      managementUrl: mgmt,
      vhost: f.vhost === '' ? undefined : f.vhost,
      username: opt(f.username),
      password: f.password === '' ? undefined : f.password,
      tls: tls ? { rejectUnauthorized: f.tlsVerify } : undefined,
    };
  } else {
    const f = form.sqs;
    const endpoint = opt(f.endpoint);
    if (endpoint !== undefined && !/^https?:\/\/[^\s]+$/i.test(endpoint)) errors.endpoint = 'The endpoint is a URL such as http://127.0.0.1:4566.';
    if (f.auth === 'profile' && opt(f.profile) === undefined) errors.profile = 'Name the profile from ~/.aws/config.';
    if (f.auth === 'keys' && opt(f.accessKeyId) === undefined) errors.accessKeyId = 'Enter the access key id.';
    candidate = {
      kind: 'sqs',
      region: f.region.trim(),
      endpoint,
      profile: f.auth === 'profile' ? opt(f.profile) : undefined,
      accessKeyId: f.auth === 'keys' ? opt(f.accessKeyId) : undefined,
      secretAccessKey: f.auth === 'keys' && f.secretAccessKey !== '' ? f.secretAccessKey : undefined,
      sessionToken: f.auth === 'keys' && f.sessionToken !== '' ? f.sessionToken : undefined,
    };
  }
  const parsed = connectionConfigSchema.safeParse(Object.fromEntries(Object.entries(candidate).filter(([, v]) => v !== undefined)));
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const field = String(issue.path[0] ?? 'form');
      errors[field] ??= field === 'region' ? 'An AWS region such as us-east-1.' : issue.message;
    }
  }
  if (Object.keys(errors).length > 0 || !parsed.success) return { ok: false, errors };
  return { ok: true, config: parsed.data };
}

/** The form filled from a saved profile (secrets are never returned by the API: password fields stay empty). */
export function formFromProfile(p: ConnectionProfile): ConnectionForm {
  const form: ConnectionForm = structuredClone(EMPTY_FORM);
  form.name = p.name;
  const c = p.config;
  if (c.kind === 'redis') {
    form.kind = 'redis';
    form.redis = { url: c.url, username: c.username ?? '', password: '', db: c.db === undefined ? '' : String(c.db), tls: c.tls !== undefined, tlsVerify: c.tls?.rejectUnauthorized ?? true };
  } else if (c.kind === 'rabbitmq') {
    form.kind = 'rabbitmq';
    form.rabbitmq = { url: c.url, managementUrl: c.managementUrl ?? '', vhost: c.vhost ?? '', username: c.username ?? '', password: '', tls: c.tls !== undefined, tlsVerify: c.tls?.rejectUnauthorized ?? true };
  } else if (c.kind === 'sqs') {
    form.kind = 'sqs';
    const auth = c.accessKeyId !== undefined ? 'keys' : c.profile !== undefined ? 'profile' : 'chain';
    form.sqs = { region: c.region, endpoint: c.endpoint ?? '', auth, profile: c.profile ?? '', accessKeyId: c.accessKeyId ?? '', secretAccessKey: '', sessionToken: '' };
  }
  return form;
}

/** A default connection name from the config: "127.0.0.1:6379", "sqs us-east-1". */
export function suggestName(config: ConnectionConfig): string {
  if (config.kind === 'redis' || config.kind === 'rabbitmq') {
    try {
      const u = new URL(config.url);
      return `${config.kind === 'redis' ? 'Redis' : 'RabbitMQ'} ${u.host}`;
    } catch {
      return config.kind;
    }
  }
  if (config.kind === 'sqs') return `SQS ${config.region}${config.endpoint ? ` (${config.endpoint.replace(/^https?:\/\//, '')})` : ''}`;
  return 'Snapshot';
}
