/**
 * Reading a count that settles a moment after the call that changed it.
 *
 * local-aws-sqs moves a message on to its queue's dead-letter queue in a timer that its
 * ChangeMessageVisibility(Batch) sets (visibility 0 → moved in the next turn of its event loop,
 * when the receive count has reached the RedrivePolicy's maxReceiveCount), not within the call: a
 * GetQueueAttributes sent right after the call returned can still miss it on a busy machine. AWS
 * moves a message on only within a receive, so there the first reading is already final and the
 * extra readings only cost the steady period.
 */

/** How long {@link readUntilSteady} reads (all in ms). */
export interface SteadyReadOptions {
  /** Pause between readings (ms). */
  intervalMs: number;
  /** The count must read the same for this long (ms) to be taken as settled. */
  steadyMs: number;
  /** Longest time from the first reading to the last (ms): the last reading is then taken as it is. */
  maxMs: number;
  /** Waits `ms` (injectable for tests; default setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** The clock in ms (injectable for tests; default Date.now). */
  now?: () => number;
}

/** Defaults of {@link readUntilSteady}: a reading every 100 ms, steady for 500 ms, at most 3 s. */
export const DEFAULT_STEADY_READ: Readonly<Pick<SteadyReadOptions, 'intervalMs' | 'steadyMs' | 'maxMs'>> = { intervalMs: 100, steadyMs: 500, maxMs: 3_000 };

/** What {@link readUntilSteady} found. */
export interface SteadyReading {
  /** The last reading (null when the count could not be told, e.g. no counts in the answer). */
  value: number | null;
  /** Readings taken (≥ 1). */
  readings: number;
  /** ms from the first reading to the last. */
  spanMs: number;
  /** True when the count held still for `steadyMs`; false when `maxMs` ran out first. */
  steady: boolean;
}

/**
 * Reads `read()` until its value has not changed for `steadyMs`, or until `maxMs` has passed since
 * the first reading, and returns the last value with how it ended. A null reading counts as a
 * value (null twice in a row is steady). Errors of `read` propagate (the caller decides what an
 * unreadable count means); a value read before an error is lost with it.
 */
export async function readUntilSteady(read: () => Promise<number | null>, o: SteadyReadOptions = DEFAULT_STEADY_READ): Promise<SteadyReading> {
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const now = o.now ?? Date.now;
  const start = now();
  let value = await read();
  let readings = 1;
  let since = start;
  for (;;) {
    const t = now();
    if (t - since >= o.steadyMs) return { value, readings, spanMs: t - start, steady: true };
    if (t - start >= o.maxMs) return { value, readings, spanMs: t - start, steady: false };
    await sleep(Math.min(o.intervalMs, Math.max(0, o.maxMs - (t - start))));
    const next = await read();
    readings++;
    if (next !== value) {
      value = next;
      since = now();
    }
  }
}
