import { statSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import cliProgress from 'cli-progress';
import { QueuescopeError, toErrorInfo, type ConnectionProfile, type ErrorInfo, type OperationSnapshot, type PeekOptions, type QueueSummary } from '../../shared/domain';
import { createAdapter } from '../adapters';
import type { BrokerAdapter } from '../adapters/types';
import { assertPeekAllowed, exportQueue } from '../services/export';
import { OperationManager } from '../services/operations';
import { ProfileStore, defaultConfigDir } from '../services/profile-store';
import { EXIT, EXIT_CODES_HELP, exitCodeFor } from './exit-codes';
import { cell, connectionsTable, escapeForTerminal, peekTable, queuesTable, toJson } from './format';
import { looksLikeConnection, resolveConfig, type CliEnv, type ConnectionFlags, type ResolvedConnection } from './resolve-config';

/** A writable the CLI prints to (process.stdout/stderr, or a buffer in tests). */
export interface CliStream {
  write(chunk: string): unknown;
  /** True for a terminal: tables fit `columns`, export shows a progress bar. */
  isTTY?: boolean;
  columns?: number;
}

/** Everything the CLI touches outside itself, so tests run it in-process. */
export interface CliIo {
  stdout: CliStream;
  stderr: CliStream;
  env: CliEnv;
  /** Aborted on Ctrl+C: the running command stops between batches and the CLI exits 130. */
  signal?: AbortSignal;
  /** Folder for relative paths (default `process.cwd()`). */
  cwd?: string;
  /** Adapter factory (default: the real adapters). */
  createAdapter?: (config: ResolvedConnection['config']) => BrokerAdapter;
}

const VERSION = '0.1.0';

const ENV_HELP = `
Connections:
  A connection is a URL, a snapshot file, or a saved connection:
    redis://[user:password@]host:6379[/db]   rediss:// for TLS
    amqp://user:password@host:5672[/vhost]    amqps:// for TLS; --management-url if not http://host:15672
    sqs://REGION[?endpoint=http://host:4566&profile=NAME]
    path/to/snapshot.jsonl (or --file PATH)    read-only, never touches a broker
    --profile NAME                             a connection saved in the app (passwords saved by the
                                               app are encrypted for the app only: put them in the URL)

Environment (used when no connection is given):
  REDIS_URL, AMQP_URL                       default connection (both set = ambiguous, refused)
  RABBITMQ_MANAGEMENT_URL                   management API for amqp:// connections
  AWS_REGION / AWS_DEFAULT_REGION           SQS region (the default connection only when neither
                                            REDIS_URL nor AMQP_URL is set)
  AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL   SQS endpoint (emulators)
  AWS_PROFILE, AWS_ACCESS_KEY_ID, …         the standard AWS credential chain
  QUEUESCOPE_HOME                           folder of the app's saved connections`;

interface CommonOpts {
  json?: boolean;
  profile?: string;
  file?: string;
  managementUrl?: string;
}

/**
 * Runs the `queuescope` CLI in-process: parses `argv` (the arguments after the program name),
 * runs the command and returns the exit code (see {@link EXIT}). Never throws and never calls
 * `process.exit`; expected errors print `error: <message>` (or `{ "error": ErrorInfo }` with
 * `--json`) without a stack trace.
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const jsonWanted = argv.includes('--json');
  const width = io.stdout.isTTY === true && typeof io.stdout.columns === 'number' ? io.stdout.columns : 120;
  const out = (s: string): void => void io.stdout.write(s);
  const err = (s: string): void => void io.stderr.write(s);
  const cwd = io.cwd ?? process.cwd();
  const makeAdapter = io.createAdapter ?? createAdapter;
  const signal = io.signal ?? new AbortController().signal;
  let exitCode: number = EXIT.OK;

  const reportError = (e: unknown): number => {
    const info: ErrorInfo = toErrorInfo(e);
    if (jsonWanted) out(toJson({ error: info }));
    else {
      err(`error: ${escapeForTerminal(info.message)}\n`);
      if (info.code === 'PEEK_REFUSED') err('hint: pass --accept-side-effects to read it anyway.\n');
      if (info.code === 'INTERNAL' && io.env.QUEUESCOPE_DEBUG !== undefined && e instanceof Error && e.stack !== undefined) err(`${e.stack}\n`);
    }
    return exitCodeFor(info.code);
  };

  /** Loads saved profiles read-only (the CLI never rewrites the app's files). Problems go to stderr. */
  const loadProfiles = async (): Promise<ConnectionProfile[]> => {
    const store = await ProfileStore.open({ configDir: defaultConfigDir(io.env), readOnly: true });
    for (const p of store.problems) err(`warning: ${escapeForTerminal(p.message)}\n`);
    return store.list();
  };

  const connect = async (flags: ConnectionFlags): Promise<{ resolved: ResolvedConnection; adapter: BrokerAdapter }> => {
    const needProfiles = flags.profile !== undefined || (flags.connection !== undefined && !looksLikeConnection(flags.connection));
    const profiles = needProfiles ? await loadProfiles() : [];
    const resolved = resolveConfig({ flags: { ...flags, ...(flags.file !== undefined ? { file: resolvePath(cwd, flags.file) } : {}) }, env: io.env, profiles });
    let config = resolved.config;
    if (config.kind === 'snapshot') config = { ...config, path: resolvePath(cwd, config.path) };
    if (resolved.profile !== undefined && !resolved.profile.hasSecret && resolved.profile.config.kind !== 'snapshot' && resolved.profile.config.kind !== 'sqs') {
      err(`note: no password is available for profile "${cell(resolved.profile.name)}" here (the app keeps it encrypted); connecting without one.\n`);
    }
    return { resolved, adapter: makeAdapter(config) };
  };

  const withAdapter = async <T>(flags: ConnectionFlags, fn: (adapter: BrokerAdapter, resolved: ResolvedConnection) => Promise<T>): Promise<T> => {
    const { resolved, adapter } = await connect(flags);
    try {
      return await fn(adapter, resolved);
    } finally {
      await adapter.close().catch(() => undefined);
    }
  };

  const program = new Command('queuescope')
    .description('Inspect queues on Redis (BullMQ, streams, lists), RabbitMQ and Amazon SQS, and snapshot files.')
    .version(VERSION, '-V, --version')
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: err, getOutHelpWidth: () => width, getErrHelpWidth: () => width })
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText('after', `${ENV_HELP}\n${EXIT_CODES_HELP}\n`);
  program.configureHelp({ sortSubcommands: false });

  const connectionOptions = (cmd: Command): Command =>
    cmd
      .option('--profile <name>', 'use a connection saved in the app (name or id)')
      .option('--file <snapshot>', 'read a snapshot file (.jsonl / .jsonl.gz) instead of a broker')
      .option('--management-url <url>', 'RabbitMQ management API base URL (default: derived from the AMQP URL)')
      .option('--json', 'print JSON (the domain objects) instead of tables')
      .addHelpText('after', `${EXIT_CODES_HELP}\n`);

  program
    .command('connections')
    .description('list the connections saved in the app (without secrets)')
    .option('--json', 'print JSON (ConnectionProfile[])')
    .addHelpText('after', `${EXIT_CODES_HELP}\n`)
    .action(async (opts: { json?: boolean }) => {
      const profiles = await loadProfiles();
      out(opts.json === true ? toJson(profiles) : connectionsTable(profiles));
    });

  connectionOptions(
    program
      .command('queues')
      .description('list the queues of a connection with depth, in-flight, delayed, consumers and dead-letter links')
      .argument('[connection]', 'URL, snapshot file or saved connection (default: from the environment)')
      .option('--pattern <glob>', 'only queues whose name matches (* wildcard)'),
  ).action(async (connection: string | undefined, opts: CommonOpts & { pattern?: string }) => {
    await withAdapter(flagsOf(connection, opts), async (adapter) => {
      const queues = await adapter.listQueues(opts.pattern === undefined ? {} : { pattern: opts.pattern }, signal);
      out(opts.json === true ? toJson(queues) : queuesTable(queues, width));
    });
  });

  connectionOptions(
    program
      .command('peek')
      .description('show messages of a queue without consuming them (states what a peek changes where it changes something)')
      .argument('[connection]', 'URL, snapshot file or saved connection (default: from the environment)')
      .argument('[queue]', 'queue name or id (optional for a snapshot with one queue)')
      .addOption(new Option('--state <state>', 'message state to read (e.g. BullMQ failed, stream pending)'))
      .option('--limit <n>', 'messages to show, 1-1000', '20')
      .option('--cursor <cursor>', 'continue from a cursor printed by a previous peek')
      .option('--newest', 'start from the newest message (where the broker can)')
      .option('--accept-side-effects', 'read even where a peek can move messages to a dead-letter queue'),
  ).action(async (a1: string | undefined, a2: string | undefined, opts: CommonOpts & { state?: string; limit: string; cursor?: string; newest?: boolean; acceptSideEffects?: boolean }) => {
    const limit = Number(opts.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new QueuescopeError('INVALID_INPUT', `--limit must be a whole number from 1 to 1000, got "${cell(opts.limit, 40)}".`);
    const { connection, queue } = splitPositionals(a1, a2, opts);
    await withAdapter(flagsOf(connection, opts), async (adapter, resolved) => {
      const q = await resolveQueue(adapter, queue, resolved, signal);
      if (!q.capabilities.canPeekNonDestructively && q.capabilities.peekSideEffects.length > 0) {
        err(`note: peeking ${cell(q.name)} changes it:\n${q.capabilities.peekSideEffects.map((s) => `  - ${escapeForTerminal(s.description)}\n`).join('')}`);
      }
      assertPeekAllowed(q, opts.acceptSideEffects);
      const options: PeekOptions = {
        limit,
        ...(opts.cursor !== undefined ? { cursor: opts.cursor } : {}),
        ...(opts.newest === true ? { direction: 'newest' as const } : {}),
        ...(opts.state !== undefined ? { state: opts.state } : {}),
        ...(opts.acceptSideEffects === true ? { acceptSideEffects: true } : {}),
      };
      const page = await adapter.peek(q.id, options, signal);
      if (opts.json === true) out(toJson(page));
      else {
        out(peekTable(page, width));
        if (page.sideEffects.length > 0) err(`side effects of this peek:\n${page.sideEffects.map((e) => `  - ${escapeForTerminal(e)}\n`).join('')}`);
      }
    });
  });

  connectionOptions(
    program
      .command('export')
      .description('write the messages of a queue to a snapshot file (JSON Lines, see the snapshot format)')
      .argument('[connection]', 'URL, snapshot file or saved connection (default: from the environment)')
      .argument('[queue]', 'queue name or id (optional for a snapshot with one queue)')
      .requiredOption('--out <file>', 'snapshot file to write (.jsonl, or .jsonl.gz to compress)')
      .option('--state <state>', 'message state to export (e.g. BullMQ failed)')
      .option('--ids <ids>', 'export only these message ids (comma-separated)')
      .option('--page-size <n>', 'messages per read, 1-1000', '500')
      .option('--force', 'replace --out if it exists')
      .option('--accept-side-effects', 'export even where reading can move messages to a dead-letter queue'),
  ).action(
    async (
      a1: string | undefined,
      a2: string | undefined,
      opts: CommonOpts & { out: string; state?: string; ids?: string; pageSize: string; force?: boolean; acceptSideEffects?: boolean },
    ) => {
      const pageSize = Number(opts.pageSize);
      if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) throw new QueuescopeError('INVALID_INPUT', `--page-size must be a whole number from 1 to 1000, got "${cell(opts.pageSize, 40)}".`);
      const ids = opts.ids?.split(',').map((s) => s.trim()).filter((s) => s !== '');
      const { connection, queue } = splitPositionals(a1, a2, opts);
      await withAdapter(flagsOf(connection, opts), async (adapter, resolved) => {
        const q = await resolveQueue(adapter, queue, resolved, signal);
        if (!q.capabilities.canPeekNonDestructively && q.capabilities.peekSideEffects.length > 0) {
          err(`note: reading ${cell(q.name)} changes it:\n${q.capabilities.peekSideEffects.map((s) => `  - ${escapeForTerminal(s.description)}\n`).join('')}`);
        }
        assertPeekAllowed(q, opts.acceptSideEffects);
        const path = resolvePath(cwd, opts.out);
        const ops = new OperationManager();
        const bar = io.stderr.isTTY === true && opts.json !== true ? newBar(io.stderr) : null;
        const barState = { started: false };
        const unsubscribe = ops.subscribe((s) => {
          if (bar !== null) {
            if (s.total === null) return; // nothing sensible to draw before the total is known
            if (!barState.started) {
              bar.start(s.total, s.processed, { rate: '-', etaText: '-' });
              barState.started = true;
            }
            bar.setTotal(s.total);
            bar.update(s.processed, { rate: s.rate === null ? '-' : `${Math.round(s.rate)}/s`, etaText: s.etaMs === null ? '-' : `${Math.ceil(s.etaMs / 1000)} s` });
          } else {
            err(`${JSON.stringify({ type: 'progress', status: s.status, processed: s.processed, total: s.total, rate: s.rate === null ? null : Math.round(s.rate), etaMs: s.etaMs })}\n`);
          }
        });
        const op = ops.start('export', `Export ${q.name} to ${path}`, async (ctx) => ({
          ...(await exportQueue(
            adapter,
            q.id,
            {
              path,
              connection: resolved.label,
              pageSize,
              overwrite: opts.force === true,
              ...(opts.state !== undefined ? { state: opts.state } : {}),
              ...(ids !== undefined ? { messageIds: ids } : {}),
              ...(opts.acceptSideEffects === true ? { acceptSideEffects: true } : {}),
            },
            ctx,
          )),
        }));
        const onAbort = (): void => void ops.cancel(op.id);
        signal.addEventListener('abort', onAbort, { once: true });
        if (signal.aborted) onAbort();
        let final: OperationSnapshot;
        try {
          final = await ops.wait(op.id);
        } finally {
          signal.removeEventListener('abort', onAbort);
          unsubscribe();
          if (bar !== null && barState.started) bar.stop();
        }
        if (final.status === 'cancelled') throw new QueuescopeError('CANCELLED', `Export cancelled; ${path} was not written.`);
        if (final.status === 'failed') {
          const last = final.errors.at(-1) ?? { code: 'INTERNAL' as const, message: 'The export failed.' };
          throw new QueuescopeError(last.code, last.message, last.details);
        }
        const r = final.result ?? {};
        if (opts.json === true) out(toJson(r));
        else {
          out(`Exported ${String(r.messages)} message${r.messages === 1 ? '' : 's'} of ${cell(q.name)} to ${cell(path, 300)} (${String(r.bytes)} bytes).\n`);
          if (r.partial === true) err(`warning: the export is partial: ${escapeForTerminal(typeof r.reason === 'string' ? r.reason : '')}\n`);
        }
      });
    },
  );

  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.help' || e.code === 'commander.version') return EXIT.OK;
      if (jsonWanted) out(toJson({ error: { code: 'INVALID_INPUT', message: e.message.replace(/^error: /, '') } }));
      return EXIT.USAGE;
    }
    const cancelled = e instanceof QueuescopeError && e.code === 'CANCELLED';
    // After Ctrl+C any failure (e.g. a client closed mid-call) is the interruption itself.
    exitCode = reportError(signal.aborted && !cancelled ? new QueuescopeError('CANCELLED', 'Interrupted.') : e);
  }
  return exitCode;
}

function flagsOf(connection: string | undefined, opts: CommonOpts): ConnectionFlags {
  return {
    ...(connection !== undefined ? { connection } : {}),
    ...(opts.profile !== undefined ? { profile: opts.profile } : {}),
    ...(opts.file !== undefined ? { file: opts.file } : {}),
    ...(opts.managementUrl !== undefined ? { managementUrl: opts.managementUrl } : {}),
  };
}

/**
 * `peek [connection] [queue]`: with `--profile`/`--file` the only positional is the queue; with
 * two positionals they are connection and queue; with one, it is the connection when it looks like
 * one (URL or .jsonl path) and the queue otherwise (connection from the environment).
 */
export function splitPositionals(a1: string | undefined, a2: string | undefined, opts: { profile?: string; file?: string }): { connection?: string; queue?: string } {
  if (opts.profile !== undefined || opts.file !== undefined) {
    if (a2 !== undefined) throw new QueuescopeError('INVALID_INPUT', `With ${opts.profile !== undefined ? '--profile' : '--file'} give only the queue, not a connection ("${cell(a1, 60)}").`);
    return a1 === undefined ? {} : { queue: a1 };
  }
  if (a2 !== undefined) return { ...(a1 !== undefined ? { connection: a1 } : {}), queue: a2 };
  if (a1 === undefined) return {};
  if (looksLikeConnection(a1)) return { connection: a1 };
  // A lone argument that names an existing file was meant as a snapshot, not a queue name.
  if (isExistingPath(a1)) {
    throw new QueuescopeError('INVALID_INPUT', `"${cell(a1, 80)}" is a file, not a connection: snapshot files end in .jsonl or .jsonl.gz (use --file PATH for a snapshot with another name).`);
  }
  return { queue: a1 };
}

function isExistingPath(p: string): boolean {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds a queue by id or name. A snapshot with a single queue needs none.
 * @throws QueuescopeError `QUEUE_NOT_FOUND`, or `INVALID_INPUT` when the name is ambiguous
 *   (listing the ids) or no queue was given.
 */
export async function resolveQueue(adapter: BrokerAdapter, arg: string | undefined, resolved: ResolvedConnection, signal?: AbortSignal): Promise<QueueSummary> {
  if (arg === undefined) {
    if (resolved.config.kind === 'snapshot') {
      const all = await adapter.listQueues({}, signal);
      if (all.length === 1 && all[0] !== undefined) return all[0];
      throw new QueuescopeError('INVALID_INPUT', `The snapshot holds ${all.length} queues; name one: ${all.map((q) => cell(q.id, 200)).join(', ')}.`, { ids: all.map((q) => q.id) });
    }
    throw new QueuescopeError('INVALID_INPUT', 'No queue given: pass a queue name or id after the connection.');
  }
  try {
    return await adapter.getQueue(arg, signal);
  } catch (e) {
    if (!(e instanceof QueuescopeError) || (e.code !== 'QUEUE_NOT_FOUND' && e.code !== 'INVALID_INPUT')) throw e;
  }
  let matches = arg.includes('*') ? [] : (await adapter.listQueues({ pattern: arg }, signal)).filter((q) => q.name === arg);
  let all: QueueSummary[] | null = null;
  if (matches.length === 0) {
    all = await adapter.listQueues({}, signal);
    matches = all.filter((q) => q.name === arg);
  }
  if (matches.length === 1 && matches[0] !== undefined) return matches[0];
  if (matches.length > 1) {
    throw new QueuescopeError('INVALID_INPUT', `"${cell(arg, 100)}" names ${matches.length} queues; pass one of these ids: ${matches.map((q) => cell(q.id, 200)).join(', ')}.`, {
      ids: matches.map((q) => q.id),
    });
  }
  const similar = (all ?? []).filter((q) => q.name.toLowerCase().includes(arg.toLowerCase())).slice(0, 5);
  throw new QueuescopeError(
    'QUEUE_NOT_FOUND',
    `No queue named or with id "${cell(arg, 100)}" on ${resolved.label}${similar.length > 0 ? `; similar: ${similar.map((q) => cell(q.name, 60)).join(', ')}` : ''}.`,
    { queue: arg },
  );
}

function newBar(stream: CliStream): cliProgress.SingleBar {
  return new cliProgress.SingleBar(
    {
      stream: stream as unknown as NodeJS.WritableStream,
      format: 'export [{bar}] {value}/{total} messages | {rate} | ETA {etaText}',
      hideCursor: true,
      clearOnComplete: true,
      etaBuffer: 20,
    },
    cliProgress.Presets.shades_classic,
  );
}
