import { basename, dirname, join } from 'node:path';
import { PROJECT_CONFIG_FILE_NAMES } from '../../shared/config/project-config';
import {
  QueuescopeError,
  connectionConfigSchema,
  describeConnection,
  parseConnectionUrl,
  type ConnectionConfig,
  type ConnectionProfile,
} from '../../shared/domain';
import { parseSqsQueueUrl } from '../../shared/domain/sqs-queue-url';

/** Connection-related command-line input. */
export interface ConnectionFlags {
  /** Positional connection: a URL, a snapshot path, or a saved profile's name/id. */
  connection?: string;
  /** `--profile NAME` (name or id of a saved connection). */
  profile?: string;
  /** `--file PATH` (a snapshot). */
  file?: string;
  /** `--management-url URL` (RabbitMQ). */
  managementUrl?: string;
}

/** Environment variables (only the ones listed in {@link resolveConfig} are read). */
export type CliEnv = Readonly<Record<string, string | undefined>>;

/** Where a resolved connection came from. */
export type ConnectionSource = 'argument' | 'file' | 'profile' | 'env';

/** The outcome of {@link resolveConfig}. */
export interface ResolvedConnection {
  /** Ready for `createAdapter` (may hold secrets: never print it; print `label`). */
  config: ConnectionConfig;
  source: ConnectionSource;
  /** `describeConnection(config)` (no secrets), plus the env variable or profile it came from. */
  label: string;
  /** The saved profile used, when any. */
  profile?: ConnectionProfile;
}

/** True when a string is clearly a connection and not a queue name: a URL or a snapshot path. */
export function looksLikeConnection(arg: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(arg) || /\.jsonl(\.gz)?$/i.test(arg);
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function usage(message: string): QueuescopeError {
  return new QueuescopeError('INVALID_INPUT', message);
}

/** Finds a saved profile by exact id, exact name, or (when unique) case-insensitive name. */
export function findProfile(profiles: readonly ConnectionProfile[], nameOrId: string): ConnectionProfile | undefined {
  const byId = profiles.find((p) => p.id === nameOrId);
  if (byId !== undefined) return byId;
  const exact = profiles.filter((p) => p.name === nameOrId);
  if (exact.length === 1) return exact[0];
  if (exact.length > 1) throw usage(`${exact.length} saved connections are named "${nameOrId}"; use one of their ids: ${exact.map((p) => p.id).join(', ')}.`);
  const loose = profiles.filter((p) => p.name.toLowerCase() === nameOrId.toLowerCase());
  if (loose.length === 1) return loose[0];
  if (loose.length > 1) throw usage(`${loose.length} saved connections are named like "${nameOrId}"; use one of their ids: ${loose.map((p) => p.id).join(', ')}.`);
  return undefined;
}

/** Parses a URL/path and fills the gaps the standard environment variables cover. */
function fromUrl(raw: string, env: CliEnv, managementFlag: string | undefined): ConnectionConfig {
  let text = raw.trim();
  // A plain SQS queue URL as the connection (the queue is then that URL too, see splitPositionals):
  // AWS hosts name their region; an emulator's endpoint is the URL's origin, its region from the environment.
  const queueUrl = parseSqsQueueUrl(text);
  if (queueUrl !== null) {
    const region = queueUrl.region ?? nonEmpty(env.AWS_REGION) ?? nonEmpty(env.AWS_DEFAULT_REGION);
    if (region === undefined) {
      throw usage(
        `The SQS queue URL ${queueUrl.url} does not say its region (only AWS hosts do): set AWS_REGION, or give the connection before it, e.g. 'sqs://us-east-1?endpoint=${queueUrl.origin}' ${queueUrl.url}`,
      );
    }
    text = queueUrl.aws ? `sqs://${region}` : `sqs://${region}?endpoint=${queueUrl.origin}`;
  }
  if (/^sqs:\/\/(?:[?#]|$)/i.test(text)) {
    const region = nonEmpty(env.AWS_REGION) ?? nonEmpty(env.AWS_DEFAULT_REGION);
    if (region === undefined) throw usage('sqs:// needs a region: write sqs://us-east-1 or set AWS_REGION.');
    text = `sqs://${region}${text.slice('sqs://'.length)}`;
  }
  let config = parseConnectionUrl(text);
  if (config.kind === 'sqs') {
    const endpoint = config.endpoint ?? nonEmpty(env.AWS_ENDPOINT_URL_SQS) ?? nonEmpty(env.AWS_ENDPOINT_URL);
    const profile = config.profile ?? nonEmpty(env.AWS_PROFILE);
    config = { ...config, ...(endpoint !== undefined ? { endpoint } : {}), ...(profile !== undefined ? { profile } : {}) };
  }
  if (config.kind === 'rabbitmq') {
    const mgmt = managementFlag ?? config.managementUrl ?? nonEmpty(env.RABBITMQ_MANAGEMENT_URL);
    if (mgmt !== undefined) config = { ...config, managementUrl: mgmt };
  }
  return validate(config);
}

function validate(config: ConnectionConfig): ConnectionConfig {
  const r = connectionConfigSchema.safeParse(config);
  if (!r.success) throw usage(`Invalid connection settings: ${r.error.issues.map((i) => `${i.path.join('.') || 'connection'}: ${i.message}`).join('; ')}.`);
  return r.data;
}

/**
 * Decides which connection a command uses. Pure: everything comes in through the arguments.
 *
 * Precedence (at most one of the first three may be given):
 * 1. `--file PATH` → a read-only snapshot.
 * 2. `--profile NAME` → a saved connection (by id, name, or unique case-insensitive name);
 *    `--management-url` overrides its management URL.
 * 3. the positional connection: a URL (`redis://`, `rediss://`, `amqp://`, `amqps://`, `sqs://`, or
 *    a plain SQS queue URL: its AWS region, or an emulator's origin as the endpoint with `AWS_REGION`),
 *    a `.jsonl`/`.jsonl.gz` path, or else the name/id of a saved connection.
 * 4. the environment: `REDIS_URL`, or `AMQP_URL` — if both are set the choice is ambiguous and
 *    refused; only when neither is set, `AWS_REGION`/`AWS_DEFAULT_REGION` selects SQS (it is
 *    commonly set for other tools, so it never competes with an explicit URL variable).
 *
 * Gaps are filled from the standard variables: `RABBITMQ_MANAGEMENT_URL` (when neither the flag
 * nor the URL's `?management=` gives one), for SQS `AWS_REGION`/`AWS_DEFAULT_REGION` (for a bare
 * `sqs://`), `AWS_ENDPOINT_URL_SQS` then `AWS_ENDPOINT_URL` (endpoint), `AWS_PROFILE`. AWS
 * credentials are left to the AWS SDK's default chain (`AWS_ACCESS_KEY_ID`…), never copied.
 *
 * @throws QueuescopeError `INVALID_INPUT` naming what is wrong (no connection, conflicting flags,
 *   unknown profile, malformed URL) — the CLI exits with 2.
 */
export function resolveConfig(input: { flags: ConnectionFlags; env: CliEnv; profiles: readonly ConnectionProfile[] }): ResolvedConnection {
  const { flags, env, profiles } = input;
  const file = nonEmpty(flags.file);
  const profileName = nonEmpty(flags.profile);
  const positional = nonEmpty(flags.connection);
  const management = nonEmpty(flags.managementUrl);
  const given = [file !== undefined && '--file', profileName !== undefined && '--profile', positional !== undefined && 'a connection argument'].filter(
    (x): x is string => typeof x === 'string',
  );
  if (given.length > 1) throw usage(`Give only one of ${given.join(', ')}.`);

  const withLabel = (config: ConnectionConfig, source: ConnectionSource, extra = '', profile?: ConnectionProfile): ResolvedConnection => ({
    config,
    source,
    label: `${describeConnection(config)}${extra}`,
    ...(profile !== undefined ? { profile } : {}),
  });
  const fromProfile = (p: ConnectionProfile): ResolvedConnection => {
    let config = p.config;
    if (management !== undefined) {
      if (config.kind !== 'rabbitmq') throw usage(`--management-url applies to RabbitMQ connections; "${p.name}" is ${config.kind}.`);
      config = { ...config, managementUrl: management };
    }
    return withLabel(validate(config), 'profile', ` (profile "${p.name}")`, p);
  };

  if (file !== undefined) {
    if (management !== undefined) throw usage('--management-url does not apply to a snapshot file.');
    return withLabel(validate({ kind: 'snapshot', path: file }), 'file');
  }
  if (profileName !== undefined) {
    const p = findProfile(profiles, profileName);
    if (p === undefined) {
      const names = profiles.map((x) => x.name);
      throw usage(`No saved connection named "${profileName}"${names.length > 0 ? `; saved: ${names.join(', ')}` : ' (there are none: save one in the app)'}.`);
    }
    return fromProfile(p);
  }
  if (positional !== undefined) {
    if (!looksLikeConnection(positional)) {
      const p = findProfile(profiles, positional);
      if (p !== undefined) return fromProfile(p);
    }
    const config = fromUrl(positional, env, management);
    if (management !== undefined && config.kind !== 'rabbitmq') throw usage(`--management-url applies to RabbitMQ (amqp://) connections, not ${config.kind}.`);
    return withLabel(config, 'argument');
  }

  const redis = nonEmpty(env.REDIS_URL);
  const amqp = nonEmpty(env.AMQP_URL);
  if (redis !== undefined && amqp !== undefined) {
    throw usage('Both REDIS_URL and AMQP_URL are set, so the connection is ambiguous: pass a connection URL, --profile NAME or --file PATH.');
  }
  if (redis !== undefined) {
    const config = fromUrl(redis, env, management);
    if (config.kind !== 'redis') throw usage('REDIS_URL must be a redis:// or rediss:// URL.');
    return withLabel(config, 'env', ' (from REDIS_URL)');
  }
  if (amqp !== undefined) {
    const config = fromUrl(amqp, env, management);
    if (config.kind !== 'rabbitmq') throw usage('AMQP_URL must be an amqp:// or amqps:// URL.');
    return withLabel(config, 'env', ' (from AMQP_URL)');
  }
  const region = nonEmpty(env.AWS_REGION) ?? nonEmpty(env.AWS_DEFAULT_REGION);
  if (region !== undefined) {
    if (management !== undefined) throw usage('--management-url applies to RabbitMQ connections, not SQS.');
    return withLabel(fromUrl(`sqs://${region}`, env, undefined), 'env', ' (from AWS_REGION)');
  }
  throw usage(
    'No connection given: pass a URL (redis://127.0.0.1:6379, amqp://guest:guest@127.0.0.1:5672, sqs://us-east-1), a snapshot file, or --profile NAME; or set REDIS_URL, AMQP_URL or AWS_REGION.',
  );
}

/**
 * The note a command prints (stderr) when the project file it found upward from the current
 * folder has a sibling it ignores: `queuescope.config.json`, `.yaml` and `.yml` are looked for in
 * that order in each folder and the first wins (`findProjectConfig`), so with a JSON and a YAML
 * file side by side the YAML one is silently unused. Pure: `exists` tells whether a path exists.
 *
 * @param found the project file in use, or null when none was found (or `--config` named one:
 *   then pass null, nothing was chosen silently).
 * @returns e.g. `note: using /repo/queuescope.config.json; /repo/queuescope.config.yaml in the same
 *   folder is ignored (the first of queuescope.config.json, .yaml, .yml wins)`, or null.
 */
export function projectFileNote(found: string | null, exists: (path: string) => boolean): string | null {
  if (found === null) return null;
  const dir = dirname(found);
  const used = basename(found);
  const ignored = PROJECT_CONFIG_FILE_NAMES.filter((n) => n !== used && exists(join(dir, n))).map((n) => join(dir, n));
  if (ignored.length === 0) return null;
  return `note: using ${found}; ${ignored.join(' and ')} in the same folder ${ignored.length === 1 ? 'is' : 'are'} ignored (the first of ${PROJECT_CONFIG_FILE_NAMES.join(', ')} wins)`;
}
