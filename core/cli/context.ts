import { statSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { Option, type Command } from 'commander';
import cliProgress from 'cli-progress';
import { snapshotStateCounts } from '../../shared/api/inspect-scope';
import { QueuescopeError, type ConnectionProfile, type OperationSnapshot, type QueueSummary } from '../../shared/domain';
import type { BrokerAdapter } from '../adapters/types';
import { ProfileStore, defaultConfigDir } from '../services/profile-store';
import type { OperationManager } from '../services/operations';
import { EXIT_CODES_HELP } from './exit-codes';
import { cell, escapeForTerminal } from './format';
import { looksLikeConnection, resolveConfig, type CliEnv, type ConnectionFlags, type ResolvedConnection } from './resolve-config';
import { parseSqsQueueUrl } from '../../shared/domain/sqs-queue-url';

/** A writable the CLI prints to (process.stdout/stderr, or a buffer in tests). */
export interface CliStream {
  write(chunk: string): unknown;
  /** True for a terminal: tables fit `columns`, long commands show a progress bar. */
  isTTY?: boolean;
  columns?: number;
}

/** Everything the CLI touches outside itself, so tests run it in-process. */
export interface CliIo {
  stdout: CliStream;
  stderr: CliStream;
  env: CliEnv;
  /** Aborted on Ctrl+C, SIGTERM or SIGHUP: the running command stops between batches and the CLI exits 130 (143, 129: core/cli/index.ts). */
  signal?: AbortSignal;
  /** Folder for relative paths (default `process.cwd()`). */
  cwd?: string;
  /** Adapter factory (default: the real adapters). */
  createAdapter?: (config: ResolvedConnection['config']) => BrokerAdapter;
}

/** Options every connection-taking command accepts (see {@link connectionOptions}). */
export interface CommonOpts {
  json?: boolean;
  profile?: string;
  file?: string;
  managementUrl?: string;
}

/**
 * What a command's action may use: output streams, the resolved environment, connection helpers
 * and the exit code. Built once per {@link import('./main').main} call; commands get it in
 * `register(program, ctx)` (core/cli/commands/*.ts).
 */
export interface CliContext {
  io: CliIo;
  /** Writes to stdout / stderr as is (escape untrusted text with `escapeForTerminal` / `cell`). */
  out: (s: string) => void;
  err: (s: string) => void;
  /** Terminal width (120 when stdout is not a terminal). */
  width: number;
  /** Folder relative paths resolve against. */
  cwd: string;
  /** Aborted on Ctrl+C. */
  signal: AbortSignal;
  /** True when `--json` is anywhere on the command line (errors are then printed as JSON). */
  jsonWanted: boolean;
  /** Sets the process exit code for a command that succeeded but must report a finding (e.g. `--fail-on`). */
  setExitCode: (code: number) => void;
  /** The saved profiles, read-only; problems go to stderr as warnings. */
  loadProfiles: () => Promise<ConnectionProfile[]>;
  /** Resolves a connection (URL, snapshot, saved profile, environment) and creates its adapter (connects lazily). */
  connect: (flags: ConnectionFlags) => Promise<{ resolved: ResolvedConnection; adapter: BrokerAdapter }>;
  /** {@link connect}, runs `fn`, closes the adapter whatever happens. */
  withAdapter: <T>(flags: ConnectionFlags, fn: (adapter: BrokerAdapter, resolved: ResolvedConnection) => Promise<T>) => Promise<T>;
}

/** Builds the {@link CliContext} for one run; `setExitCode` writes through `exit.code`. */
export function createCliContext(io: CliIo, argv: readonly string[], exit: { code: number }, makeAdapter: (config: ResolvedConnection['config']) => BrokerAdapter): CliContext {
  const width = io.stdout.isTTY === true && typeof io.stdout.columns === 'number' ? io.stdout.columns : 120;
  const out = (s: string): void => void io.stdout.write(s);
  const err = (s: string): void => void io.stderr.write(s);
  const cwd = io.cwd ?? process.cwd();
  const signal = io.signal ?? new AbortController().signal;

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

  return {
    io,
    out,
    err,
    width,
    cwd,
    signal,
    jsonWanted: argv.includes('--json'),
    setExitCode: (code) => {
      exit.code = code;
    },
    loadProfiles,
    connect,
    withAdapter,
  };
}

/** Adds the connection options (`--profile`, `--file`, `--management-url`, `--json`) and the exit-code help to a command. */
export function connectionOptions(cmd: Command): Command {
  return cmd
    .option('--profile <name>', 'use a connection saved in the app (name or id)')
    .option('--file <snapshot>', 'read a snapshot file (.jsonl / .jsonl.gz) instead of a broker')
    .option('--management-url <url>', 'RabbitMQ management API base URL (default: derived from the AMQP URL)')
    .option('--json', 'print JSON (the domain objects) instead of tables')
    .addHelpText('after', `${EXIT_CODES_HELP}\n`);
}

/**
 * {@link connectionOptions} for commands that need a live broker (redrive, reinject, audit):
 * `--file` is hidden and refused by {@link refuseSnapshot}.
 */
export function brokerConnectionOptions(cmd: Command): Command {
  return cmd
    .option('--profile <name>', 'use a connection saved in the app (name or id)')
    .addOption(new Option('--file <snapshot>', 'not supported: a snapshot file is not a live broker').hideHelp())
    .option('--management-url <url>', 'RabbitMQ management API base URL (default: derived from the AMQP URL)')
    .option('--json', 'print JSON (the domain objects) instead of tables')
    .addHelpText('after', `${EXIT_CODES_HELP}\n`);
}

/**
 * Refuses a connection that cannot do what the command needs: `--file` before connecting, and
 * after connecting an adapter without the `capability` (`redrive` for redrive and reinject,
 * `audit` for audit), which is the case of a snapshot given as the connection argument (a `.jsonl`
 * path). Decided by the capability, not the broker's name. `why` completes the sentence.
 * @throws QueuescopeError `INVALID_INPUT` (exit 2) with `why`.
 */
export function refuseSnapshot(command: string, why: string, given: { file?: string } | BrokerAdapter, capability: 'redrive' | 'audit'): void {
  if (!('broker' in given)) {
    if (given.file !== undefined) throw new QueuescopeError('INVALID_INPUT', `A snapshot file cannot be used by ${command}: ${why}`);
    return;
  }
  if (given[capability] !== undefined) return;
  if (given.broker === 'snapshot') throw new QueuescopeError('INVALID_INPUT', `A snapshot file cannot be used by ${command}: ${why}`);
  throw new QueuescopeError('INVALID_INPUT', `This ${given.broker} connection cannot be used by ${command}: it has no ${capability} support.`);
}

/** The {@link ConnectionFlags} of a command's `[connection]` argument and {@link CommonOpts}. */
export function flagsOf(connection: string | undefined, opts: CommonOpts): ConnectionFlags {
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
 * one (URL or .jsonl path) and the queue otherwise (connection from the environment) — a plain SQS
 * queue URL alone is both the connection and the queue.
 * @throws QueuescopeError `INVALID_INPUT` for a connection given twice, or an existing file that is not a snapshot.
 */
export function splitPositionals(a1: string | undefined, a2: string | undefined, opts: { profile?: string; file?: string }): { connection?: string; queue?: string } {
  if (opts.profile !== undefined || opts.file !== undefined) {
    if (a2 !== undefined) throw new QueuescopeError('INVALID_INPUT', `With ${opts.profile !== undefined ? '--profile' : '--file'} give only the queue, not a connection ("${cell(a1, 60)}").`);
    return a1 === undefined ? {} : { queue: a1 };
  }
  if (a2 !== undefined) return { ...(a1 !== undefined ? { connection: a1 } : {}), queue: a2 };
  if (a1 === undefined) return {};
  // A plain SQS queue URL alone names both: the connection (its region or endpoint) and the queue.
  if (looksLikeConnection(a1)) return parseSqsQueueUrl(a1) !== null ? { connection: a1, queue: a1.trim() } : { connection: a1 };
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

/** ` (waiting, failed)`: the states a snapshot section's messages carry; '' for a live queue or none. */
function sectionStatesNote(q: QueueSummary): string {
  const counts = snapshotStateCounts(q);
  const states = counts === null ? [] : Object.keys(counts);
  return states.length === 0 ? '' : ` (${states.map((s) => cell(s, 40)).join(', ')})`;
}

/**
 * For snapshot sections that are all one queue (the same original id and connection: exports of it
 * joined with `cat`), a sentence saying so: each is read alone, by its id, and inspect compares
 * BullMQ failed jobs with live ones across them. '' otherwise.
 */
function sameQueueNote(matches: QueueSummary[]): string {
  const key = (q: QueueSummary): string | null => {
    const info = (q.config as { snapshot?: { originalId?: unknown; connection?: unknown } } | undefined)?.snapshot;
    return typeof info?.originalId === 'string' ? `${info.originalId}\n${String(info.connection)}` : null;
  };
  const first = matches[0] === undefined ? null : key(matches[0]);
  if (first === null || !matches.every((q) => key(q) === first)) return '';
  return ` They are sections of one queue (files joined with cat), each read by its id${matches[0]?.kind === 'bullmq' ? "; inspect compares failed jobs with waiting, delayed… ones across them" : ''}.`;
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
  if (arg.trim() === '') throw new QueuescopeError('INVALID_INPUT', 'An empty queue name was given: pass a queue name or id.');
  try {
    return await adapter.getQueue(arg, signal);
  } catch (e) {
    if (!(e instanceof QueuescopeError) || (e.code !== 'QUEUE_NOT_FOUND' && e.code !== 'INVALID_INPUT')) throw e;
    // A plain SQS queue URL is no queue's name: the adapter's reason (e.g. another region) is the answer.
    if (e.code === 'INVALID_INPUT' && parseSqsQueueUrl(arg) !== null) throw e;
  }
  let matches = arg.includes('*') ? [] : (await adapter.listQueues({ pattern: arg }, signal)).filter((q) => q.name === arg);
  let all: QueueSummary[] | null = null;
  if (matches.length === 0) {
    all = await adapter.listQueues({}, signal);
    matches = all.filter((q) => q.name === arg);
  }
  if (matches.length === 1 && matches[0] !== undefined) return matches[0];
  if (matches.length > 1) {
    throw new QueuescopeError('INVALID_INPUT', `"${cell(arg, 100)}" names ${matches.length} queues; pass one of these ids: ${matches.map((q) => `${cell(q.id, 200)}${sectionStatesNote(q)}`).join(', ')}.${sameQueueNote(matches)}`, {
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

/**
 * Waits for an operation of `ops` while showing its progress: a progress bar on a terminal
 * (`label [bar] value/total unit | rate | ETA`), otherwise one JSON line per snapshot on stderr
 * (`{"type":"progress",…}`; suppressed when `jsonLines` is false). Ctrl+C (ctx.signal) cancels
 * the operation. Returns the final snapshot (completed, failed or cancelled); never throws for
 * the operation's own failure.
 */
export async function waitWithProgress(
  ctx: CliContext,
  ops: OperationManager,
  operationId: string,
  options: { label: string; unit?: string; json?: boolean; jsonLines?: boolean },
): Promise<OperationSnapshot> {
  const bar = ctx.io.stderr.isTTY === true && options.json !== true ? newBar(ctx.io.stderr, options.label, options.unit ?? 'messages') : null;
  const barState = { started: false };
  const unsubscribe = ops.subscribe((s) => {
    if (s.id !== operationId) return;
    if (bar !== null) {
      if (s.total === null) return; // nothing sensible to draw before the total is known
      if (!barState.started) {
        bar.start(s.total, s.processed, { rate: '-', etaText: '-' });
        barState.started = true;
      }
      bar.setTotal(s.total);
      bar.update(s.processed, { rate: s.rate === null ? '-' : `${Math.round(s.rate)}/s`, etaText: s.etaMs === null ? '-' : `${Math.ceil(s.etaMs / 1000)} s` });
    } else if (options.jsonLines !== false) {
      ctx.err(`${JSON.stringify({ type: 'progress', status: s.status, processed: s.processed, total: s.total, rate: s.rate === null ? null : Math.round(s.rate), etaMs: s.etaMs })}\n`);
    }
  });
  const onAbort = (): void => void ops.cancel(operationId);
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  if (ctx.signal.aborted) onAbort();
  try {
    return await ops.wait(operationId);
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
    unsubscribe();
    if (bar !== null && barState.started) bar.stop();
  }
}

/** Throws the last error of a failed operation as a QueuescopeError (its code decides the exit code). */
export function throwOperationFailure(final: OperationSnapshot, fallback: string): never {
  const last = final.errors.at(-1) ?? { code: 'INTERNAL' as const, message: fallback };
  throw new QueuescopeError(last.code, last.message, last.details);
}

function newBar(stream: CliStream, label: string, unit: string): cliProgress.SingleBar {
  return new cliProgress.SingleBar(
    {
      stream: stream as unknown as NodeJS.WritableStream,
      format: `${label} [{bar}] {value}/{total} ${unit} | {rate} | ETA {etaText}`,
      hideCursor: true,
      clearOnComplete: true,
      etaBuffer: 20,
    },
    cliProgress.Presets.shades_classic,
  );
}
