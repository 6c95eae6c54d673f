/**
 * Ctrl+C handling of the CLI: the first SIGINT stops the running command cleanly, a later one
 * quits at once. SIGTERM (`kill`, a service manager, `docker stop`) and SIGHUP (the terminal or
 * SSH session closed) are handled the same way ({@link STOP_SIGNALS}): a re-inject killed by them
 * wrote no remainder file, no audit entry, and left its source lock behind.
 *
 * One Ctrl+C can arrive twice: the terminal sends SIGINT to its whole foreground process group,
 * and `npx` / `npm exec` (which is in that group too) forwards it to the CLI again
 * (`@npmcli/run-script` signal-manager). Counted as two presses, that turned every Ctrl+C under
 * `npx queuescope …` into "quit at once": no final report, and a RabbitMQ shovel left running. So
 * a second SIGINT within {@link DUPLICATE_SIGINT_MS} of the first is taken as the same press.
 */

/** A SIGINT this soon after the first one is the same Ctrl+C delivered twice, ms (a closed terminal's SIGHUP can come twice too: the kernel and the shell). */
export const DUPLICATE_SIGINT_MS = 500;

/**
 * The signals that stop the running command cleanly, with their numbers: the CLI exits 128 + the
 * number when one stopped it (130 for Ctrl+C, 143 for SIGTERM, 129 for SIGHUP), as shells report a
 * process killed by it.
 */
export const STOP_SIGNALS = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 } as const;

/** A signal of {@link STOP_SIGNALS}. */
export type StopSignal = keyof typeof STOP_SIGNALS;

/** The exit code of a command stopped by `signal`: 128 + its number. */
export function exitCodeForSignal(signal: StopSignal): number {
  return 128 + STOP_SIGNALS[signal];
}

/**
 * A listener for the {@link STOP_SIGNALS} (Node passes the signal's name): calls `onStop` on the
 * first signal, ignores repeats (of any of them) within {@link DUPLICATE_SIGINT_MS}, and calls
 * `onQuit` on any later one, each with the signal received (SIGINT when none is passed). `now` (ms)
 * is for tests.
 */
export function interruptHandler(o: { onStop: (signal: StopSignal) => void; onQuit: (signal: StopSignal) => void; now?: () => number }): (signal?: NodeJS.Signals) => void {
  const now = o.now ?? Date.now;
  let first: number | null = null;
  return (signal) => {
    const sig: StopSignal = signal === 'SIGTERM' || signal === 'SIGHUP' ? signal : 'SIGINT';
    const t = now();
    if (first === null) {
      first = t;
      o.onStop(sig);
      return;
    }
    if (t - first >= DUPLICATE_SIGINT_MS) o.onQuit(sig);
  };
}
