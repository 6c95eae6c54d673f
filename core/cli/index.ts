/**
 * Entry of the `queuescope` CLI, built to `out/main/cli.js` by `npm run build`
 * (electron.vite.config.ts). `bin/queuescope.cjs` requires it and calls {@link runFromProcess};
 * `node out/main/cli.js …` runs it directly. Plain Node: nothing here imports electron.
 */
import { EXIT } from './exit-codes';
import { exitCodeForSignal, interruptHandler, STOP_SIGNALS, type StopSignal } from './interrupts';
import { main, type CliStream } from './main';

export { main, splitPositionals, resolveQueue, type CliIo, type CliStream } from './main';
export { resolveConfig, looksLikeConnection, findProfile, type ConnectionFlags, type ResolvedConnection, type CliEnv } from './resolve-config';
export { EXIT, exitCodeFor } from './exit-codes';

/**
 * Runs the CLI for this process: `process.argv`, stdout/stderr, `process.env`. The first Ctrl+C
 * aborts the running command cleanly (partial export files are removed, a re-inject writes its
 * remainder file and audit entry and releases its lock; exit code 130), a second one exits at once
 * (a repeat within half a second is the same press: see core/cli/interrupts.ts). SIGTERM and
 * SIGHUP do the same, exiting 143 and 129 (128 + the signal's number) when they stopped the command.
 * Sets `process.exitCode`, and exits after a short grace period if a broker client keeps the event
 * loop alive.
 */
export function runFromProcess(argv: readonly string[] = process.argv.slice(2)): void {
  // The AWS SDK warns on stderr that future versions need Node 22; not actionable for a CLI user.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const controller = new AbortController();
  let stoppedBy: StopSignal | null = null;
  const onSignal = interruptHandler({
    onStop: (signal) => {
      stoppedBy = signal;
      process.stderr.write(signal === 'SIGINT' ? '\ninterrupted: stopping (Ctrl+C again to quit at once)\n' : `\n${signal} received: stopping as on Ctrl+C (send it again, or Ctrl+C, to quit at once)\n`);
      controller.abort();
    },
    onQuit: (signal) => {
      process.stderr.write(`${signal === 'SIGINT' ? 'interrupted' : `${signal} received`} again: quitting at once\n`);
      process.exit(exitCodeForSignal(signal));
    },
  });
  const signals = Object.keys(STOP_SIGNALS) as StopSignal[];
  for (const s of signals) process.on(s, onSignal);
  void main(argv, { stdout: pipeSafe(process.stdout), stderr: pipeSafe(process.stderr), env: process.env, signal: controller.signal }).then((result) => {
    for (const s of signals) process.off(s, onSignal);
    // Stopped by SIGTERM/SIGHUP: 128 + its number, not Ctrl+C's 130.
    const code = result === EXIT.INTERRUPTED && stoppedBy !== null ? exitCodeForSignal(stoppedBy) : result;
    process.exitCode = code;
    setTimeout(() => process.exit(code), 2000).unref();
  });
}

/**
 * `stream` for the CLI, quiet once its reader has gone (`queuescope --help | head -1`): an EPIPE
 * stops further writes instead of crashing with an unhandled 'error' event; the command itself
 * goes on (a redrive piped into `head` is not cut off halfway). Other write errors are printed once
 * on stderr.
 */
function pipeSafe(stream: NodeJS.WriteStream): CliStream {
  let closed = false;
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (!closed && e.code !== 'EPIPE' && stream !== process.stderr) process.stderr.write(`queuescope: cannot write output: ${e.message}\n`);
    closed = true;
  });
  return {
    write: (chunk: string) => (closed ? false : stream.write(chunk)),
    get isTTY() {
      return stream.isTTY;
    },
    get columns() {
      return stream.columns;
    },
  };
}

// `node out/main/cli.js …` (not taken when bin/queuescope.cjs requires it, nor in tests).
if (typeof require === 'function' && typeof module === 'object' && require.main === module) runFromProcess();
