/**
 * What "the visibility timeout" is on each broker, its limits, and copyable snippets.
 *
 * Units: ms throughout; `unit` says what the broker's own setting takes (SQS: seconds).
 *
 * Broker documentation followed:
 * - SQS: Developer Guide "Amazon SQS visibility timeout" (0 s – 12 h, default 30 s; a consumer may
 *   override it per ReceiveMessage; `ChangeMessageVisibility` extends it, at most 12 h from the receive).
 * - BullMQ 6 WorkerOptions: `lockDuration` (default 30,000 ms), renewed automatically every
 *   `lockRenewTime` (= lockDuration / 2) while the worker's event loop runs; `stalledInterval`
 *   (default 30,000 ms) is how often stalled jobs are looked for; `maxStalledCount` (default 1).
 * - Redis Streams: `XAUTOCLAIM key group consumer min-idle-time start` claims pending entries idle
 *   longer than min-idle-time; `XCLAIM … JUSTID` by the owner resets an entry's idle time.
 * - RabbitMQ: `consumer_timeout` (rabbitmq.conf, ms, default 1,800,000 = 30 min) closes a channel whose
 *   delivery stays unacknowledged longer; checked about once a minute. Per-queue `consumer-timeout`
 *   policy key / `x-consumer-timeout` argument from 3.11.15 / 3.12 on; 3.10 accepts and ignores the argument.
 */

/** Which broker-side knob a recommendation maps to. */
export type TuningTarget = 'sqs' | 'bullmq' | 'redis-stream' | 'rabbitmq';

/** The knob on one broker that plays the role of the visibility timeout. */
export interface TimeoutSetting {
  target: TuningTarget;
  /** Name as the broker spells it, e.g. `VisibilityTimeout`, `lockDuration`. */
  name: string;
  /** Unit the broker setting takes. */
  unit: 'ms' | 's';
  minMs: number;
  maxMs: number;
  /** Granularity of the broker setting, ms (SQS: whole seconds). */
  granularityMs: number;
  /** The broker default, ms (null: there is none, e.g. a claimer's min-idle-time is your code's). */
  defaultMs: number | null;
  /** True when Queuescope can change it on the broker (SQS `SetQueueAttributes`). */
  canApply: boolean;
  /** A value not to recommend going below, ms, with the reason (BullMQ: its default), or undefined. */
  floor?: { ms: number; reason: string };
  /** One sentence: what happens when processing outlives it. */
  whatHappens: string;
}

/** Largest timeout RabbitMQ accepts for consumer_timeout (Erlang small int), ms. */
const RABBIT_MAX_MS = 2_147_483_647;

/** The timeout knob per target. */
export const TIMEOUT_SETTINGS: Record<TuningTarget, TimeoutSetting> = {
  sqs: {
    target: 'sqs',
    name: 'VisibilityTimeout',
    unit: 's',
    minMs: 0,
    maxMs: 43_200_000,
    granularityMs: 1000,
    defaultMs: 30_000,
    canApply: true,
    whatHappens: 'the message becomes visible again and another consumer receives it while the first is still working: a duplicate',
  },
  bullmq: {
    target: 'bullmq',
    name: 'lockDuration',
    unit: 'ms',
    minMs: 1,
    maxMs: Number.MAX_SAFE_INTEGER,
    granularityMs: 1,
    defaultMs: 30_000,
    canApply: false,
    floor: {
      ms: 30_000,
      reason:
        "Raised to BullMQ's default lockDuration of 30 s: the lock is renewed every lockDuration/2 while the worker runs, so a shorter lockDuration only adds renewal traffic and turns event-loop pauses (GC, CPU-bound work) into stalled jobs that run twice",
    },
    whatHappens:
      'the job lock expires; the stalled-job checker moves the job back to wait (or fails it after maxStalledCount) and another worker runs it again. BullMQ renews the lock every lockDuration/2 while the worker process is alive, so this bites only when the processor blocks the event loop (CPU-bound, synchronous work) or the worker dies',
  },
  'redis-stream': {
    target: 'redis-stream',
    name: 'min-idle-time (XAUTOCLAIM / XCLAIM of the claiming consumer)',
    unit: 'ms',
    minMs: 0,
    maxMs: Number.MAX_SAFE_INTEGER,
    granularityMs: 1,
    defaultMs: null,
    canApply: false,
    whatHappens: 'the claiming consumer takes over a pending entry that is still being processed: a duplicate',
  },
  rabbitmq: {
    target: 'rabbitmq',
    name: 'consumer_timeout',
    unit: 'ms',
    minMs: 60_000,
    maxMs: RABBIT_MAX_MS,
    granularityMs: 1000,
    defaultMs: 1_800_000,
    canApply: false,
    whatHappens:
      'RabbitMQ closes the consumer\'s channel with PRECONDITION_FAILED and requeues every unacknowledged delivery on it, including the one still being processed: duplicates of all of them',
  },
};

/** Where the queue is, for snippets. */
export interface SnippetContext {
  /** Queue name as people know it. */
  queueName: string;
  /** SQS queue URL. */
  queueUrl?: string;
  /** Redis Stream key and consumer group. */
  streamKey?: string;
  group?: string;
  /** RabbitMQ vhost. */
  vhost?: string;
  /** RabbitMQ version (e.g. `3.10.8`), decides node config vs per-queue policy. */
  brokerVersion?: string | null;
}

/**
 * Whether a RabbitMQ version supports a per-queue consumer timeout (`consumer-timeout` policy key,
 * `x-consumer-timeout` argument): 3.11.15 and later 3.11.x, and 3.12+. null when the version is unknown.
 */
export function rabbitPerQueueTimeout(version: string | null | undefined): boolean | null {
  if (version === null || version === undefined) return null;
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(version.trim());
  if (!m) return null;
  const [maj, min, patch] = [Number(m[1]), Number(m[2]), Number(m[3] ?? '0')];
  if (maj !== 3) return maj > 3;
  if (min > 11) return true;
  if (min === 11) return patch >= 15;
  return false;
}

function secs(ms: number): number {
  return Math.ceil(ms / 1000);
}

function regexEscape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * A copyable snippet that sets `timeoutMs` on the broker (language `sh`, `ts` or `ini`).
 * Text only: the caller shows it as text (it may contain the queue name, which is untrusted).
 */
export function timeoutSnippet(target: TuningTarget, timeoutMs: number, ctx: SnippetContext): { language: string; text: string }[] {
  switch (target) {
    case 'sqs': {
      const s = secs(timeoutMs);
      const url = ctx.queueUrl ?? `<QueueUrl of ${ctx.queueName}>`;
      return [
        { language: 'sh', text: `aws sqs set-queue-attributes --queue-url ${shellQuote(url)} --attributes VisibilityTimeout=${s}` },
        {
          language: 'ts',
          text: `// A consumer's receive-time override wins over the queue attribute: set both, or neither.\nawait sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 20, VisibilityTimeout: ${s} }));`,
        },
      ];
    }
    case 'bullmq':
      return [
        {
          language: 'ts',
          text: `new Worker(${JSON.stringify(ctx.queueName)}, processor, {\n  connection,\n  lockDuration: ${Math.ceil(timeoutMs)}, // ms; renewed every lockDuration/2 while the event loop runs\n  stalledInterval: 30_000, // ms between stalled-job checks\n  maxStalledCount: 1,\n});`,
        },
      ];
    case 'redis-stream': {
      const key = ctx.streamKey ?? ctx.queueName;
      const group = ctx.group ?? '<group>';
      return [
        { language: 'sh', text: `redis-cli XAUTOCLAIM ${shellQuote(key)} ${shellQuote(group)} recovery-consumer ${Math.ceil(timeoutMs)} 0-0 COUNT 100` },
        {
          language: 'ts',
          text: `// The claiming consumer: only take entries idle longer than the recommended min-idle-time.\nconst [next, claimed] = await redis.xautoclaim(${JSON.stringify(key)}, ${JSON.stringify(group)}, consumerName, ${Math.ceil(timeoutMs)}, cursor, 'COUNT', 100);`,
        },
      ];
    }
    case 'rabbitmq': {
      const perQueue = rabbitPerQueueTimeout(ctx.brokerVersion);
      const ms = Math.ceil(timeoutMs);
      const node = { language: 'ini', text: `# rabbitmq.conf (node-wide; restart the node)\nconsumer_timeout = ${ms}` };
      const policy = {
        language: 'sh',
        text: `rabbitmqctl set_policy -p ${shellQuote(ctx.vhost ?? '/')} consumer-timeout ${shellQuote(`^${regexEscape(ctx.queueName)}$`)} '{"consumer-timeout":${ms}}' --apply-to queues`,
      };
      return perQueue === true ? [policy, node] : [node];
    }
  }
}

/** Largest total visibility of one SQS receive (ChangeMessageVisibility cannot extend past it), ms. */
const SQS_MAX_VISIBILITY_MS = 43_200_000;

/**
 * How to extend the lease for long jobs on this broker: one paragraph and a snippet.
 * @param recommendedMs the recommended timeout (heartbeat every half of it).
 * @param opts.leaseMs SQS: the short lease the heartbeat keeps (the queue's VisibilityTimeout in
 *   force while heartbeating, ms; default `recommendedMs`). The heartbeat runs every half of it and
 *   pushes the visibility that far ahead each time, so it comes before the lease in force expires.
 * @param opts.exceedsMax SQS: the needed timeout is beyond the 12 h a receive can be kept invisible.
 */
export function leaseExtension(target: TuningTarget, recommendedMs: number, ctx: SnippetContext, opts: { leaseMs?: number; exceedsMax?: boolean } = {}): { how: string; snippet: { language: string; text: string } } {
  const half = Math.max(1, Math.floor(recommendedMs / 2));
  switch (target) {
    case 'sqs': {
      const leaseS = Math.max(2, secs(Math.min(opts.leaseMs ?? recommendedMs, SQS_MAX_VISIBILITY_MS)));
      const beatS = Math.max(1, Math.floor(leaseS / 2));
      const cap = opts.exceedsMax === true
        ? " SQS keeps one receive invisible for at most 12 h in total (ChangeMessageVisibility fails beyond it), so no heartbeat covers processing longer than that: record such work durably (a job table, a workflow) and delete the message, or split it."
        : ' SQS keeps one receive invisible for at most 12 h in total.';
      if (opts.exceedsMax === true && leaseS * 1000 >= SQS_MAX_VISIBILITY_MS) {
        // Even the typical message needs the whole 12 h: a heartbeat has nothing left to extend.
        return {
          how: `No heartbeat helps here: even typical processing needs the whole 12 h that SQS keeps one receive invisible at most (ChangeMessageVisibility fails beyond it). Record such work durably (a job table, a workflow) and delete the message, or split it.`,
          snippet: { language: 'ts', text: `// Record the work, then delete the message at once; process from the record.\nawait jobs.insert({ id: msg.MessageId, body: msg.Body });\nawait sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: msg.ReceiptHandle }));` },
        };
      }
      return {
        how: `Heartbeat: set the queue's VisibilityTimeout (and any VisibilityTimeout your consumer passes to ReceiveMessage) to a short lease of ${String(leaseS)} s instead, and while a message is being processed call ChangeMessageVisibility every ${String(beatS)} s to push it ${String(leaseS)} s ahead: a live consumer keeps its message, a crashed one's comes back within ${String(leaseS)} s. The heartbeat must come before the lease in force runs out: with a longer interval, or a VisibilityTimeout shorter than the interval, the message is delivered again while still being processed.${cap}`,
        snippet: {
          language: 'ts',
          text: `// Queue VisibilityTimeout (or the ReceiveMessage override) = ${String(leaseS)} s; heartbeat every ${String(beatS)} s.\nconst beat = setInterval(() => {\n  void sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl, ReceiptHandle: msg.ReceiptHandle, VisibilityTimeout: ${String(leaseS)} }));\n}, ${String(beatS * 1000)});\ntry { await handle(msg); await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: msg.ReceiptHandle })); }\nfinally { clearInterval(beat); }`,
        },
      };
    }
    case 'bullmq':
      return {
        how: 'BullMQ extends the lock itself every lockDuration/2 while the worker\'s event loop is free. For CPU-bound work, run the processor in a sandbox (a processor file → child process/worker thread) so renewals keep running; for manual processing call job.extendLock(token, ms).',
        snippet: { language: 'ts', text: `// sandboxed processor: lock renewals keep running while the child works\nnew Worker(${JSON.stringify(ctx.queueName)}, require.resolve('./processor.js'), { connection, lockDuration: ${Math.ceil(recommendedMs)}, useWorkerThreads: true });` },
      };
    case 'redis-stream':
      return {
        how: `The owning consumer resets the idle time of entries it is still working on with XCLAIM … JUSTID every ${Math.ceil(half)} ms, so a claimer using min-idle-time ${Math.ceil(recommendedMs)} ms never takes them over.`,
        snippet: {
          language: 'ts',
          text: `const beat = setInterval(() => {\n  void redis.xclaim(${JSON.stringify(ctx.streamKey ?? ctx.queueName)}, ${JSON.stringify(ctx.group ?? '<group>')}, consumerName, 0, entryId, 'JUSTID');\n}, ${Math.ceil(half)});`,
        },
      };
    case 'rabbitmq':
      return {
        how: 'RabbitMQ has no per-delivery lease to extend: consumer_timeout must exceed the longest processing time. For very long work, ack the message once the work is recorded durably (e.g. a job table) and process from there, or raise consumer_timeout for that queue only (per-queue policy on 3.11.15+/3.12+).',
        snippet: timeoutSnippet('rabbitmq', recommendedMs, ctx)[0] ?? { language: 'ini', text: '' },
      };
  }
}
