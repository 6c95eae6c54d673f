import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { QueuescopeError, type QueueSummary } from '../../../shared/domain';
import { checkDlqsOnce, checkInterval, watchDlqs, DEFAULT_WATCH_INTERVAL_MS, type DlqWatchEvent } from '../../services/dlq-watch';
import { connectionOptions, flagsOf, resolveQueue, type CliContext, type CommonOpts } from '../context';
import { EXIT, exitCodeFor } from '../exit-codes';
import { cell, escapeForTerminal, escapeJsonForTerminal, formatTime } from '../format';
import { looksLikeConnection, type CliEnv } from '../resolve-config';
import { parseDuration } from './tune';

const WATCH_HELP = `
Events (one line each; JSON lines with --json):
  status          the depth the watch starts from (printed once per DLQ; no alert)
  first-message   the DLQ was empty and now holds messages: the first dead letter matters
  grew            the DLQ holds more messages than at the last poll (+N)
  drained         the DLQ became empty
  error           the DLQ could not be read (unreachable, deleted…); retried with back-off
  recovered       the DLQ can be read again after an error
For BullMQ queues the watched depth is the failed jobs. Where reading a message changes nothing
(Redis streams, lists, BullMQ) first-message and grew name the newest message's failure class and
reason; queues where a read is a delivery (RabbitMQ classic and quorum, SQS) are never peeked.

--exec CMD runs CMD through your shell for every event except status, one at a time (at most
60 s each), with the event in the environment — QUEUESCOPE_EVENT, QUEUESCOPE_QUEUE (name),
QUEUESCOPE_QUEUE_ID, QUEUESCOPE_DEPTH, QUEUESCOPE_DELTA (empty when unknown),
QUEUESCOPE_FAILURE_CLASS — and the event as JSON on stdin. Broker values are never put into the
command line, so quote them in CMD as "$QUEUESCOPE_QUEUE".
  queuescope watch redis://127.0.0.1:6379 orders-dlq --exec 'notify-send "DLQ $QUEUESCOPE_QUEUE: $QUEUESCOPE_DEPTH"'

--once reads each DLQ once, prints its status and exits: 0 when every DLQ is empty, 6 when one
holds messages (for cron / CI), or the error's exit code when one could not be read.
Ctrl+C stops the watch (exit 130).`;

interface WatchOpts extends CommonOpts {
  interval?: string;
  exec?: string;
  once?: boolean;
}

/** Longest an `--exec` command may run, ms; then it is sent SIGTERM. */
const EXEC_TIMEOUT_MS = 60_000;

/**
 * Splits `watch`'s positionals: with `--profile`/`--file` all of them are DLQs; otherwise the first
 * is the connection when there are two or more, or when it looks like one (URL, .jsonl); a lone
 * name is a DLQ on the connection from the environment.
 * @throws QueuescopeError `INVALID_INPUT` when no DLQ is named.
 */
export function splitWatchArgs(args: readonly string[], opts: { profile?: string; file?: string }): { connection?: string; dlqs: string[] } {
  let connection: string | undefined;
  let dlqs = [...args];
  if (opts.profile === undefined && opts.file === undefined && dlqs.length > 0 && (dlqs.length > 1 || looksLikeConnection(dlqs[0] ?? ''))) {
    connection = dlqs[0];
    dlqs = dlqs.slice(1);
  }
  if (dlqs.length === 0) throw new QueuescopeError('INVALID_INPUT', 'Name at least one dead-letter queue to watch after the connection (e.g. queuescope watch redis://127.0.0.1:6379 orders-dlq).');
  return { ...(connection !== undefined ? { connection } : {}), dlqs };
}

/** One human line for an event (untrusted names and reasons escaped). */
export function formatWatchEvent(e: DlqWatchEvent): string {
  const parts = [formatTime(e.at), e.type.padEnd(13), cell(e.queueName, 80)];
  if (e.type === 'error') {
    parts.push(`${e.error?.code ?? 'ERROR'}: ${escapeForTerminal(e.error?.message ?? 'unknown error')}`);
    if (e.retryInMs !== null) parts.push(`(retrying in ${Math.ceil(e.retryInMs / 1000)} s)`);
    return `${parts.join('  ')}\n`;
  }
  const delta = e.delta !== null && e.delta !== 0 && e.type !== 'status' ? ` (${e.delta > 0 ? '+' : ''}${e.delta})` : '';
  parts.push(`depth ${e.depth === null ? 'unknown' : e.depth}${delta}`);
  if (e.deadLetterSources.length > 0) parts.push(`from ${e.deadLetterSources.map((s) => cell(s, 80)).join(', ')}`);
  if (e.failure !== null) parts.push(`newest: ${e.failure.class} (${cell(e.failure.label, 40)})${e.failure.reason !== null ? ` — ${cell(e.failure.reason, 160)}` : ''}`);
  return `${parts.join('  ')}\n`;
}

/** The environment an `--exec` command gets: the CLI's own plus the event's QUEUESCOPE_* variables. */
export function execEnvironment(base: CliEnv, e: DlqWatchEvent): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined) env[k] = v;
  env.QUEUESCOPE_EVENT = e.type;
  env.QUEUESCOPE_QUEUE = e.queueName;
  env.QUEUESCOPE_QUEUE_ID = e.queueId;
  env.QUEUESCOPE_DEPTH = e.depth === null ? '' : String(e.depth);
  env.QUEUESCOPE_DELTA = e.delta === null ? '' : String(e.delta);
  env.QUEUESCOPE_FAILURE_CLASS = e.failure?.class ?? '';
  return env;
}

/**
 * Runs the user's own command string through the shell (the only shell string; broker values go
 * only into the environment and stdin), forwarding its output. Resolves with its exit code
 * (null when killed). Killed with SIGTERM on `signal` or after {@link EXEC_TIMEOUT_MS}.
 */
function runExec(ctx: CliContext, command: string, e: DlqWatchEvent, signal: AbortSignal): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(command, { shell: true, env: execEnvironment(ctx.io.env, e), cwd: ctx.cwd, stdio: ['pipe', 'pipe', 'pipe'], timeout: EXEC_TIMEOUT_MS });
    const kill = (): void => void child.kill('SIGTERM');
    signal.addEventListener('abort', kill, { once: true });
    child.stdout.setEncoding('utf8').on('data', (s: string) => ctx.out(s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => ctx.err(s));
    child.stdin.on('error', () => undefined); // the command need not read stdin
    child.stdin.end(`${JSON.stringify(e)}\n`);
    child.on('error', (err) => {
      ctx.err(`warning: --exec could not start: ${escapeForTerminal(err.message)}\n`);
    });
    child.on('close', (code) => {
      signal.removeEventListener('abort', kill);
      resolve(code);
    });
  });
}

/** `queuescope watch <connection> <dlq…>`: DLQ alerts on the terminal, optionally running a command per event. */
export function register(program: Command, ctx: CliContext): void {
  connectionOptions(
    program
      .command('watch')
      .description('watch dead-letter queues and print an event when one receives its first message, grows, drains or cannot be read')
      .argument('[connection-and-dlqs...]', 'connection (URL, snapshot file or saved connection; default: from the environment), then one or more DLQ names or ids')
      .option('--interval <duration>', `time between polls of each DLQ, at least 1s (e.g. 5s, 30s, 1m; a bare number is seconds) (default: "${DEFAULT_WATCH_INTERVAL_MS / 1000}s")`)
      .option('--exec <command>', 'run this shell command for every event (event in QUEUESCOPE_* variables and as JSON on stdin)')
      .option('--once', 'read each DLQ once, print its status and exit (6 when one holds messages)')
      .addHelpText('after', WATCH_HELP),
  ).action(async (args: string[], opts: WatchOpts) => {
    const intervalMs = checkInterval(opts.interval === undefined ? undefined : parseDuration(opts.interval, '--interval', 's'));
    if (opts.once === true && opts.exec !== undefined) throw new QueuescopeError('INVALID_INPUT', '--exec runs on changes, which --once cannot see: use one or the other.');
    if (opts.exec?.trim() === '') throw new QueuescopeError('INVALID_INPUT', '--exec needs a command.');
    const { connection, dlqs } = splitWatchArgs(args, opts);
    await ctx.withAdapter(flagsOf(connection, opts), async (adapter, resolved) => {
      const queues: QueueSummary[] = [];
      for (const name of dlqs) queues.push(await resolveQueue(adapter, name, resolved, ctx.signal));
      const print = (e: DlqWatchEvent): void => ctx.out(opts.json === true ? `${escapeJsonForTerminal(JSON.stringify(e))}\n` : formatWatchEvent(e));
      for (const q of queues) {
        if (!q.isDeadLetterQueue && !q.capabilities.peekStates.includes('failed')) ctx.err(`note: ${cell(q.name)} is not known as a dead-letter queue; watching its depth anyway.\n`);
      }

      if (opts.once === true) {
        const events = await checkDlqsOnce(adapter, queues.map((q) => q.id), { signal: ctx.signal });
        for (const e of events) print(e);
        const failed = events.find((e) => e.error !== null);
        if (failed?.error != null) ctx.setExitCode(exitCodeFor(failed.error.code));
        else if (events.some((e) => (e.depth ?? 0) > 0)) ctx.setExitCode(EXIT.FINDINGS);
        return;
      }

      if (opts.json !== true) ctx.err(`watching ${queues.length} DLQ${queues.length === 1 ? '' : 's'} on ${resolved.label} every ${intervalMs / 1000} s (Ctrl+C to stop)\n`);
      let execChain: Promise<void> = Promise.resolve();
      const command = opts.exec;
      const stopped = (): boolean => ctx.signal.aborted; // a call: narrowing must not survive an await
      await watchDlqs(adapter, {
        queueIds: queues.map((q) => q.id),
        intervalMs,
        signal: ctx.signal,
        onEvent: (e) => {
          print(e);
          if (command === undefined || e.type === 'status') return;
          execChain = execChain.then(async () => {
            if (stopped()) return;
            const code = await runExec(ctx, command, e, ctx.signal);
            if (code !== 0 && !stopped()) ctx.err(`warning: --exec exited with ${code === null ? 'a signal (timeout?)' : `code ${code}`} for ${e.type} ${cell(e.queueName)}\n`);
          });
        },
      });
      await execChain;
      if (ctx.signal.aborted) {
        if (opts.json !== true) ctx.err('stopped watching\n');
        ctx.setExitCode(EXIT.INTERRUPTED);
      }
    });
  });
}
