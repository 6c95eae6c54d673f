/**
 * Ctrl+C handling of the CLI: the first SIGINT stops the running command cleanly, a later one
 * quits at once.
 *
 * One Ctrl+C can arrive twice: the terminal sends SIGINT to its whole foreground process group,
 * and `npx` / `npm exec` (which is in that group too) forwards it to the CLI again
 * (`@npmcli/run-script` signal-manager). Counted as two presses, that turned every Ctrl+C under
 * `npx queuescope …` into "quit at once": no final report, and a RabbitMQ shovel left running. So
 * a second SIGINT within {@link DUPLICATE_SIGINT_MS} of the first is taken as the same press.
 */

/** A SIGINT this soon after the first one is the same Ctrl+C delivered twice, ms. */
export const DUPLICATE_SIGINT_MS = 500;

/**
 * A SIGINT listener: calls `onStop` on the first signal, ignores repeats within
 * {@link DUPLICATE_SIGINT_MS}, and calls `onQuit` on any later one. `now` (ms) is for tests.
 */
export function interruptHandler(o: { onStop: () => void; onQuit: () => void; now?: () => number }): () => void {
  const now = o.now ?? Date.now;
  let first: number | null = null;
  return () => {
    const t = now();
    if (first === null) {
      first = t;
      o.onStop();
      return;
    }
    if (t - first >= DUPLICATE_SIGINT_MS) o.onQuit();
  };
}
