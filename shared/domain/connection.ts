import { z } from 'zod';

/**
 * Connection configuration for each broker kind, validated with zod wherever it
 * enters the program (IPC, CLI flags, profile files).
 *
 * Secrets (`password`, `secretAccessKey`, `sessionToken`) live in these objects
 * only in memory. Stored profiles keep them apart (see `SECRET_FIELDS`), encrypted
 * by Electron `safeStorage` in the app.
 */

const tlsSchema = z
  .object({
    /** Verify the server certificate (default true). Turn off only for self-signed test brokers. */
    rejectUnauthorized: z.boolean().default(true),
    /** PEM-encoded CA certificate(s) to trust, in addition to the system store. */
    ca: z.string().max(200_000).optional(),
    /** SNI / certificate host name override. */
    servername: z.string().max(255).optional(),
  })
  .strict();
export type TlsOptions = z.infer<typeof tlsSchema>;

export const redisConnectionSchema = z
  .object({
    kind: z.literal('redis'),
    /** `redis://` or `rediss://` URL; user info and path (db index) are honoured. */
    url: z.string().min(1).max(2048),
    /** ACL user name; overrides the URL's. */
    username: z.string().max(512).optional(),
    password: z.string().max(4096).optional(),
    /** Database index 0–15 (or more, per server config); overrides the URL path. */
    db: z.number().int().min(0).max(1023).optional(),
    /** TLS settings; `rediss://` enables TLS with defaults. */
    tls: tlsSchema.optional(),
    /** Upper bound on keys examined by SCAN during discovery (default 100,000). */
    scanLimit: z.number().int().min(100).max(10_000_000).optional(),
  })
  .strict();

export const rabbitmqConnectionSchema = z
  .object({
    kind: z.literal('rabbitmq'),
    /** `amqp://` or `amqps://` URL. The path is the vhost (`/` is `%2F`). */
    url: z.string().min(1).max(2048),
    /** Management HTTP API base URL, e.g. `http://127.0.0.1:15672`. Derived from the AMQP URL when absent. */
    managementUrl: z.string().max(2048).optional(),
    /** Overrides the vhost from the URL. */
    vhost: z.string().max(255).optional(),
    username: z.string().max(512).optional(),
    password: z.string().max(4096).optional(),
    tls: tlsSchema.optional(),
  })
  .strict();

export const sqsConnectionSchema = z
  .object({
    kind: z.literal('sqs'),
    region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'an AWS region such as us-east-1'),
    /** Endpoint override for SQS-compatible servers (emulators), e.g. `http://127.0.0.1:4566`. */
    endpoint: z.url({ protocol: /^https?$/ }).max(2048).optional(),
    /** Named profile from ~/.aws/config and ~/.aws/credentials. */
    profile: z.string().max(255).optional(),
    /** Static credentials; otherwise the standard AWS credential chain is used. */
    accessKeyId: z.string().max(256).optional(),
    secretAccessKey: z.string().max(4096).optional(),
    sessionToken: z.string().max(8192).optional(),
  })
  .strict();

export const snapshotConnectionSchema = z
  .object({
    kind: z.literal('snapshot'),
    /** Path to a JSONL snapshot file written by `export`. Opened read-only. */
    path: z.string().min(1).max(4096),
  })
  .strict();

export const connectionConfigSchema = z.discriminatedUnion('kind', [
  redisConnectionSchema,
  rabbitmqConnectionSchema,
  sqsConnectionSchema,
  snapshotConnectionSchema,
]);

export type RedisConnectionConfig = z.infer<typeof redisConnectionSchema>;
export type RabbitmqConnectionConfig = z.infer<typeof rabbitmqConnectionSchema>;
export type SqsConnectionConfig = z.infer<typeof sqsConnectionSchema>;
export type SnapshotConnectionConfig = z.infer<typeof snapshotConnectionSchema>;
export type ConnectionConfig = z.infer<typeof connectionConfigSchema>;
export type BrokerKind = ConnectionConfig['kind'];

/** Fields that hold secrets, per kind. They are never written to disk in plain text. */
export const SECRET_FIELDS = ['password', 'secretAccessKey', 'sessionToken'] as const;
export type SecretField = (typeof SECRET_FIELDS)[number];
export type ConnectionSecrets = Partial<Record<SecretField, string>>;

/** A saved connection as listed to the UI: the config without secrets, and whether one is stored. */
export const connectionProfileSchema = z
  .object({
    id: z.string().min(1).max(128),
    name: z.string().min(1).max(200),
    config: connectionConfigSchema,
    /** True when a secret is stored for this profile (in safeStorage / the secret store). */
    hasSecret: z.boolean().default(false),
    /** True for the bundled demo snapshot and other profiles the app made itself. */
    builtIn: z.boolean().default(false),
  })
  .strict();
export type ConnectionProfile = z.infer<typeof connectionProfileSchema>;

/** Splits secrets out of a config: the returned `config` has none of {@link SECRET_FIELDS}. */
export function splitSecrets(config: ConnectionConfig): { config: ConnectionConfig; secrets: ConnectionSecrets } {
  const secrets: ConnectionSecrets = {};
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) {
    if ((SECRET_FIELDS as readonly string[]).includes(k)) {
      if (typeof v === 'string' && v !== '') secrets[k as SecretField] = v;
    } else copy[k] = v;
  }
  // A password embedded in the URL is a secret too: move it out.
  if ((config.kind === 'redis' || config.kind === 'rabbitmq') && typeof copy.url === 'string') {
    try {
      const u = new URL(copy.url);
      if (u.password !== '') {
        secrets.password ??= decodeURIComponent(u.password);
        u.password = '';
        copy.url = u.toString();
      }
    } catch {
      /* invalid URL: validation reports it elsewhere */
    }
  }
  return { config: connectionConfigSchema.parse(copy), secrets };
}

/** Puts secrets back into a config (the inverse of {@link splitSecrets}). */
export function mergeSecrets(config: ConnectionConfig, secrets: ConnectionSecrets): ConnectionConfig {
  const copy: Record<string, unknown> = { ...config };
  for (const f of SECRET_FIELDS) {
    const v = secrets[f];
    if (v === undefined) continue;
    if (f === 'password' && (config.kind === 'redis' || config.kind === 'rabbitmq')) copy[f] = v;
    if ((f === 'secretAccessKey' || f === 'sessionToken') && config.kind === 'sqs') copy[f] = v;
  }
  return connectionConfigSchema.parse(copy);
}

/**
 * A short human label for a connection, without secrets:
 * `redis://127.0.0.1:6379/0`, `amqp://guest@127.0.0.1:5672/%2F`, `sqs://us-east-1 (http://127.0.0.1:4566)`.
 */
export function describeConnection(config: ConnectionConfig): string {
  switch (config.kind) {
    case 'redis':
    case 'rabbitmq': {
      try {
        const u = new URL(config.url);
        u.password = '';
        return u.toString().replace(/\/$/, u.protocol.startsWith('amqp') ? '/' : '');
      } catch {
        return `${config.kind} (invalid URL)`;
      }
    }
    case 'sqs':
      return `sqs://${config.region}${config.endpoint ? ` (${config.endpoint})` : ''}${config.profile ? ` profile ${config.profile}` : ''}`;
    case 'snapshot':
      return `snapshot ${config.path}`;
  }
}
