/**
 * Retry-schedule check: per-attempt delays, total time to the dead-letter queue, and when 100
 * messages that failed together retry — with the configured jitter and with full jitter.
 *
 * Units: milliseconds throughout.
 *
 * BullMQ 6 semantics followed (bullmq/src/classes/backoffs.ts, https://docs.bullmq.io/guide/retrying-failing-jobs):
 * - `attempts` counts the first try: `attempts: 5` = 1 try + 4 retries, then the job is failed.
 * - `fixed`: every retry waits `delay`. `exponential`: retry n (n = attemptsMade ≥ 1) waits
 *   `round(2^(n−1) · delay)` — there is **no cap**.
 * - `jitter` (0–1, default 0) is a fraction: the wait is uniform in
 *   `[max · (1 − jitter), max)`; `jitter: 1` is full jitter (`random(0, max)`), `0.5` keeps at least half.
 */

import { formatMs } from './stats';

/** How retries are spaced. */
export type BackoffType = 'fixed' | 'exponential' | 'visibility-timeout';

/** A retry policy as configured (BullMQ job options, values the user enters, or SQS redrive). */
export interface RetryPolicy {
  /** Total deliveries including the first (BullMQ `attempts`; SQS `maxReceiveCount`). ≥ 1. */
  attempts: number;
  type: BackoffType;
  /** Base delay, ms (BullMQ `backoff.delay`; for `visibility-timeout` the queue's VisibilityTimeout). */
  delayMs: number;
  /** Jitter fraction 0–1 as BullMQ defines it (0 = none, 1 = full jitter). */
  jitter: number;
  /** Upper bound on one wait, ms (null = none: BullMQ's built-in exponential has none). */
  capMs: number | null;
  /** Processing time of one failing attempt, ms (added between attempts; default 0). */
  attemptMs?: number;
}

/** One retry: `attempt` is the delivery number it leads to (2 = first retry). */
export interface RetryStep {
  attempt: number;
  /** Wait before this delivery without jitter (the upper bound when jitter applies), ms. */
  delayMs: number;
  /** Lower bound of the wait with the configured jitter, ms. */
  minDelayMs: number;
  /** Time of this delivery after the first failure's start, without jitter, ms. */
  atMs: number;
}

/** A warning about the policy, with a stable code for tests and UI. */
export interface RetryFlag {
  code: 'exponential-without-jitter' | 'exponential-without-cap' | 'fixed-visibility-timeout' | 'fixed-without-jitter' | 'single-attempt';
  message: string;
}

/** Times (ms after the common failure) at which each of N messages makes each retry. */
export interface HerdSimulation {
  /** `retries[k]` = times of retry k+1 of every message, sorted ascending. */
  retries: number[][];
  /** Largest number of retries falling into one `binMs` window. */
  peakPerBin: number;
  binMs: number;
}

/** Result of {@link checkRetrySchedule}. */
export interface RetrySchedule {
  policy: RetryPolicy;
  steps: RetryStep[];
  /** Time from the first delivery until the message is dead-lettered/failed, without jitter, ms (includes `attemptMs` per attempt). */
  totalToDlqMs: number;
  flags: RetryFlag[];
  /** 100 messages failing together, with the policy's own jitter. */
  asConfigured: HerdSimulation;
  /** The same with full jitter and the cap (or the uncapped max when there is no cap): `random(0, min(cap, base·2^(n−1)))`. */
  fullJitter: HerdSimulation;
}

/**
 * Time for an SQS message that always fails to reach its DLQ, ms: every receive keeps it invisible
 * for the whole visibility timeout (a failing consumer does not delete it), and after the
 * `maxReceiveCount`-th receive's timeout runs out the next receive moves it to the DLQ — so
 * `maxReceiveCount × visibilityTimeout` (SQS redrive policy, "maxReceiveCount"). The one computation
 * used by the retry schedule and the verdict.
 */
export function sqsTimeToDlqMs(maxReceiveCount: number, visibilityTimeoutMs: number): number {
  return maxReceiveCount * visibilityTimeoutMs;
}

/** Largest attempts value simulated (schedules beyond are unrealistic and would overflow 2^n). */
export const MAX_ATTEMPTS = 50;

/**
 * Upper bound (no jitter) of the wait before retry `n` (n ≥ 1 = attemptsMade), ms, capped.
 */
export function retryDelayMs(policy: RetryPolicy, n: number): number {
  const raw = policy.type === 'exponential' ? Math.round(2 ** (n - 1) * policy.delayMs) : policy.delayMs;
  return policy.capMs === null ? raw : Math.min(policy.capMs, raw);
}

/** A small deterministic PRNG (mulberry32) so plots and tests are reproducible. Returns [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Validates a policy.
 * @returns null when valid, else a sentence naming the bad field (callers wrap it in QueuescopeError `INVALID_INPUT`).
 */
export function validateRetryPolicy(p: RetryPolicy): string | null {
  if (!Number.isInteger(p.attempts) || p.attempts < 1 || p.attempts > MAX_ATTEMPTS) return `attempts must be a whole number from 1 to ${MAX_ATTEMPTS}, got ${String(p.attempts)}`;
  if (!Number.isFinite(p.delayMs) || p.delayMs < 0) return `the backoff delay must be ≥ 0 ms, got ${String(p.delayMs)}`;
  if (!Number.isFinite(p.jitter) || p.jitter < 0 || p.jitter > 1) return `jitter must be a fraction from 0 to 1 (BullMQ's meaning), got ${String(p.jitter)}`;
  if (p.capMs !== null && (!Number.isFinite(p.capMs) || p.capMs <= 0)) return `the cap must be > 0 ms, got ${String(p.capMs)}`;
  if (p.attemptMs !== undefined && (!Number.isFinite(p.attemptMs) || p.attemptMs < 0)) return `the attempt time must be ≥ 0 ms, got ${String(p.attemptMs)}`;
  return null;
}

/**
 * Builds the retry schedule of a policy and simulates `messages` messages that failed together.
 * @param options.messages how many messages fail together (default 100)
 * @param options.seed PRNG seed (default 1) — same seed, same plot
 * @throws Error with the message from {@link validateRetryPolicy} for an invalid policy.
 */
export function checkRetrySchedule(policy: RetryPolicy, options: { messages?: number; seed?: number } = {}): RetrySchedule {
  const problem = validateRetryPolicy(policy);
  if (problem !== null) throw new Error(problem);
  const attemptMs = policy.attemptMs ?? 0;
  const steps: RetryStep[] = [];
  let at = attemptMs;
  for (let n = 1; n < policy.attempts; n++) {
    const d = retryDelayMs(policy, n);
    at += d;
    steps.push({ attempt: n + 1, delayMs: d, minDelayMs: Math.floor(d * (1 - policy.jitter)), atMs: at });
    at += attemptMs;
  }
  // SQS: the last receive also holds the message for the timeout before it is dead-lettered.
  const totalToDlqMs = policy.type === 'visibility-timeout' ? sqsTimeToDlqMs(policy.attempts, policy.delayMs) : at;
  const messages = Math.max(1, Math.min(10_000, Math.floor(options.messages ?? 100)));
  const seed = options.seed ?? 1;
  const asConfigured = simulate(policy, messages, seededRandom(seed), policy.jitter);
  const fullJitter = simulate(policy, messages, seededRandom(seed), 1);
  return { policy, steps, totalToDlqMs, flags: flagsFor(policy, steps), asConfigured, fullJitter };
}

function simulate(policy: RetryPolicy, messages: number, rnd: () => number, jitter: number): HerdSimulation {
  const attemptMs = policy.attemptMs ?? 0;
  const retries: number[][] = [];
  for (let n = 1; n < policy.attempts; n++) retries.push([]);
  for (let m = 0; m < messages; m++) {
    let t = attemptMs;
    for (let n = 1; n < policy.attempts; n++) {
      const max = retryDelayMs(policy, n);
      // BullMQ: floor(random · max · jitter + max · (1 − jitter)); jitter 1 = random(0, max).
      const wait = jitter > 0 ? Math.floor(rnd() * max * jitter + max * (1 - jitter)) : max;
      t += wait;
      retries[n - 1]?.push(t);
      t += attemptMs;
    }
  }
  for (const r of retries) r.sort((a, b) => a - b);
  const all = retries.flat();
  const span = all.length === 0 ? 0 : Math.max(...all);
  const binMs = Math.max(1, Math.ceil(span / 100));
  const bins = new Map<number, number>();
  let peakPerBin = 0;
  for (const x of all) {
    const b = Math.floor(x / binMs);
    const c = (bins.get(b) ?? 0) + 1;
    bins.set(b, c);
    if (c > peakPerBin) peakPerBin = c;
  }
  return { retries, peakPerBin, binMs };
}

function flagsFor(p: RetryPolicy, steps: RetryStep[]): RetryFlag[] {
  const flags: RetryFlag[] = [];
  if (p.attempts === 1) {
    flags.push({ code: 'single-attempt', message: 'attempts is 1: a failure is final at once — transient errors (timeouts, 5xx, 429) are never retried.' });
    return flags;
  }
  if (p.type === 'exponential' && p.jitter === 0) {
    flags.push({
      code: 'exponential-without-jitter',
      message: 'Exponential backoff without jitter: messages that failed together (an outage) all retry at the same instants, so each retry is a new spike. Use full jitter: wait = random(0, min(cap, base·2^(n−1))) (BullMQ: backoff.jitter = 1).',
    });
  }
  if (p.type === 'exponential' && p.capMs === null) {
    const last = steps[steps.length - 1];
    flags.push({
      code: 'exponential-without-cap',
      message: `Exponential backoff without a cap: the last wait is ${formatMs(last?.delayMs ?? 0)} and doubles with every extra attempt. BullMQ's built-in "exponential" has no cap — use a custom backoff strategy with min(cap, …).`,
    });
  }
  if (p.type === 'visibility-timeout') {
    flags.push({
      code: 'fixed-visibility-timeout',
      message: `SQS retries fire when the visibility timeout expires: every ${formatMs(p.delayMs)}, with no backoff and no jitter. For real backoff, have the consumer call ChangeMessageVisibility on failure with random(0, min(cap, base·2^(receiveCount−1))).`,
    });
  } else if (p.type === 'fixed' && p.jitter === 0) {
    flags.push({ code: 'fixed-without-jitter', message: `Fixed backoff without jitter: every retry waits exactly ${formatMs(p.delayMs)}, so messages that failed together retry together.` });
  }
  return flags;
}

/**
 * Reads a BullMQ job's `opts` (`attempts`, `backoff` as a number or `{ type, delay, jitter }`)
 * into a {@link RetryPolicy}. Unknown (custom) strategies return null: their delays are code.
 * Defaults follow BullMQ: attempts 1, no backoff (retries immediately: delay 0).
 */
export function policyFromBullmqOptions(opts: unknown): RetryPolicy | null {
  const o = (opts !== null && typeof opts === 'object' ? opts : {}) as { attempts?: unknown; backoff?: unknown };
  const attempts = typeof o.attempts === 'number' && Number.isInteger(o.attempts) && o.attempts >= 1 ? Math.min(MAX_ATTEMPTS, o.attempts) : 1;
  const b = o.backoff;
  if (typeof b === 'number' && Number.isFinite(b) && b >= 0) return { attempts, type: 'fixed', delayMs: b, jitter: 0, capMs: null };
  if (b === undefined || b === null) return { attempts, type: 'fixed', delayMs: 0, jitter: 0, capMs: null };
  if (typeof b !== 'object') return null;
  const bo = b as { type?: unknown; delay?: unknown; jitter?: unknown };
  if (bo.type !== 'fixed' && bo.type !== 'exponential') return null;
  const delayMs = typeof bo.delay === 'number' && Number.isFinite(bo.delay) && bo.delay >= 0 ? bo.delay : 0;
  const jitter = typeof bo.jitter === 'number' && Number.isFinite(bo.jitter) ? Math.min(1, Math.max(0, bo.jitter)) : 0;
  return { attempts, type: bo.type, delayMs, jitter, capMs: null };
}
