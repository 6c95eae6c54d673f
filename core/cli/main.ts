import { Command, CommanderError } from 'commander';
import { QueuescopeError, toErrorInfo, type ErrorInfo } from '../../shared/domain';
import { createAdapter } from '../adapters';
import { COMMANDS } from './commands';
import { createCliContext, type CliIo } from './context';
import { EXIT, EXIT_CODES_HELP, exitCodeFor } from './exit-codes';
import { escapeForTerminal, toJson } from './format';

export { resolveQueue, splitPositionals, type CliIo, type CliStream, type CliContext } from './context';

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
  QUEUESCOPE_HOME                           folder of the app's saved connections

Progress (redrive, reinject, export):
  On a terminal, a progress bar on stderr. When stderr is not a terminal (a pipe, a file, CI), one
  JSON line per update instead, for scripts: {"type":"progress","status":…,"processed":…,"total":…,
  "rate":…,"etaMs":…}; with --json always these lines, never the bar. Results and --json documents
  go to stdout.`;

/**
 * Runs the `queuescope` CLI in-process: parses `argv` (the arguments after the program name),
 * runs the command and returns the exit code (see {@link EXIT}). Never throws and never calls
 * `process.exit`; expected errors print `error: <message>` (or `{ "error": ErrorInfo }` with
 * `--json`) without a stack trace. Commands live in `core/cli/commands/`.
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const exit = { code: EXIT.OK as number };
  const ctx = createCliContext(io, argv, exit, io.createAdapter ?? createAdapter);

  const reportError = (e: unknown): number => {
    const info: ErrorInfo = toErrorInfo(e);
    if (ctx.jsonWanted) ctx.out(toJson({ error: info }));
    else {
      ctx.err(`error: ${escapeForTerminal(info.message)}\n`);
      if (info.code === 'PEEK_REFUSED') ctx.err('hint: pass --accept-side-effects to read it anyway.\n');
      if (info.code === 'INTERNAL' && io.env.QUEUESCOPE_DEBUG !== undefined && e instanceof Error && e.stack !== undefined) ctx.err(`${e.stack}\n`);
    }
    return exitCodeFor(info.code);
  };

  const program = new Command('queuescope')
    .description('Inspect queues on Redis (BullMQ, streams, lists), RabbitMQ and Amazon SQS, and snapshot files: check redelivery safety, redrive dead-letter queues, tune visibility timeouts, audit configuration.')
    .version(VERSION, '-V, --version')
    .exitOverride()
    .configureOutput({ writeOut: ctx.out, writeErr: ctx.err, getOutHelpWidth: () => ctx.width, getErrHelpWidth: () => ctx.width })
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText('after', `${ENV_HELP}\n${EXIT_CODES_HELP}\n`);
  program.configureHelp({ sortSubcommands: false });

  for (const command of COMMANDS) command.register(program, ctx);

  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.help' || e.code === 'commander.version') return EXIT.OK;
      if (ctx.jsonWanted) ctx.out(toJson({ error: { code: 'INVALID_INPUT', message: e.message.replace(/^error: /, '') } }));
      return EXIT.USAGE;
    }
    const cancelled = e instanceof QueuescopeError && e.code === 'CANCELLED';
    // After Ctrl+C any failure (e.g. a client closed mid-call) is the interruption itself.
    return reportError(ctx.signal.aborted && !cancelled ? new QueuescopeError('CANCELLED', 'Interrupted.') : e);
  }
  return exit.code;
}
