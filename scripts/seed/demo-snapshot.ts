import { createAdapter } from '../../core/adapters';
import type { BrokerAdapter } from '../../core/adapters/types';
import { SnapshotWriter } from '../../core/snapshot/writer';
import { describeConnection, parseConnectionUrl, type ConnectionConfig, type QueueMessage, type QueueSummary } from '../../shared/domain';

/** Queues the demo snapshot takes from the seeded brokers (names as the seeds create them). */
const DEMO_QUEUES: Record<'redis' | 'rabbitmq' | 'sqs', string[]> = {
  redis: ['payments', 'orders-stream', 'emails:outbox'],
  rabbitmq: ['orders.work', 'orders.dlq', 'invoices.work', 'notifications'],
  sqs: ['orders', 'orders-dlq', 'payments.fifo', 'payments-dlq.fifo', 'emails'],
};

/** Messages per queue state written to the demo. */
const PER_STATE = 60;

/** Most peeks of one SQS queue while new message ids keep arriving. */
const MAX_SQS_PEEKS = 5;

/**
 * Reads one state of a queue (the whole queue when `state` is undefined) for the demo: up to
 * {@link PER_STATE} messages, following cursors where the broker pages; on SQS (no cursor) it
 * repeats the peek while new ids arrive, without bringing any message within one receive of its
 * `maxReceiveCount`. `shortfall` says in words how many the section misses, or is null when it
 * holds all the queue had in that state.
 */
async function readState(adapter: BrokerAdapter, q: QueueSummary, state: string | undefined): Promise<{ messages: QueueMessage[]; shortfall: string | null }> {
  const limit = Math.min(PER_STATE, q.capabilities.maxPeekWindow);
  const byId = new Map<string, QueueMessage>();
  const first = await adapter.peek(q.id, { limit, acceptSideEffects: true, ...(state === undefined ? {} : { state }) });
  const total = first.total;
  for (const m of first.messages) byId.set(m.id, m);
  if (q.capabilities.canPageFromCursor) {
    let cursor = first.nextCursor;
    while (cursor !== null && byId.size < PER_STATE) {
      const page = await adapter.peek(q.id, { limit: Math.min(limit, PER_STATE - byId.size), cursor, acceptSideEffects: true, ...(state === undefined ? {} : { state }) });
      for (const m of page.messages) byId.set(m.id, m);
      cursor = page.messages.length === 0 ? null : page.nextCursor;
    }
  } else if (q.broker === 'sqs') {
    const maxReceives = Math.min(...q.deadLetterTargets.map((t) => t.maxReceiveCount ?? Infinity));
    for (let round = 1; round < MAX_SQS_PEEKS; round++) {
      const highest = Math.max(0, ...[...byId.values()].map((m) => m.meta.receiveCount ?? 0));
      if (highest + 1 >= maxReceives - 1) break; // one more peek would bring a message near the DLQ
      if (byId.size >= (q.depth ?? 0)) break;
      const page = await adapter.peek(q.id, { limit, acceptSideEffects: true });
      let fresh = 0;
      for (const m of page.messages) {
        if (!byId.has(m.id)) fresh++;
        byId.set(m.id, m);
      }
      if (fresh === 0) break;
    }
  }
  const messages = [...byId.values()].map((m, i) => ({ ...m, position: i }));
  // What the queue had in this state: the state's count, or depth + in flight + delayed for the
  // whole queue (a stream's pending entries are part of its length, so there depth alone).
  const recorded =
    state !== undefined ? (q.counts[state] ?? null) : q.kind === 'redis-stream' ? (q.depth ?? 0) : (q.depth ?? 0) + (q.inFlight ?? 0) + (q.delayed ?? 0);
  const had = Math.max(recorded ?? 0, total ?? 0);
  if (messages.length >= had) return { messages, shortfall: null };
  const what = state !== undefined ? `${state} messages` : 'messages';
  const parts = state === undefined && q.depth !== null && q.kind !== 'redis-stream' ? ` (${q.depth} ready/visible, ${q.inFlight ?? 0} in flight, ${q.delayed ?? 0} delayed)` : '';
  return { messages, shortfall: `The demo holds ${messages.length} of ${had} ${what}${parts}.` };
}

/** Why a broker's read cannot hold every message, in words (leading space), for `partialReason`. */
function reasonFor(q: QueueSummary): string {
  if (q.broker === 'sqs') {
    const fifo = q.kind === 'sqs-fifo' ? ' FIFO queues return one message per message group per receive on this emulator (messages behind a group\'s head stay hidden until the head is deleted).' : '';
    return ` SQS peeks are receives: they return at most ${q.capabilities.maxPeekWindow} visible messages and cannot see in-flight or delayed ones.${fifo}`;
  }
  if (!q.capabilities.canPageFromCursor) return ` ${q.kind} queues cannot be paged: one peek reads at most ${q.capabilities.maxPeekWindow} messages.`;
  return ` The demo keeps at most ${PER_STATE} messages per state.`;
}

/**
 * Writes the bundled demo snapshot from the seeded local brokers: one section per seeded queue
 * (every peek state of it), read through the real adapters. Peeks on RabbitMQ and SQS are
 * accepted here (they are our own seeded demo queues).
 */
export async function buildDemoSnapshot(
  path: string,
  env: { redisUrl: string; amqpUrl: string; managementUrl: string; sqsEndpoint: string },
): Promise<string[]> {
  const configs: Array<[keyof typeof DEMO_QUEUES, ConnectionConfig]> = [
    ['redis', parseConnectionUrl(env.redisUrl)],
    ['rabbitmq', { ...parseConnectionUrl(env.amqpUrl), managementUrl: env.managementUrl } as ConnectionConfig],
    ['sqs', { kind: 'sqs', region: 'us-east-1', endpoint: env.sqsEndpoint }],
  ];
  const writer = await SnapshotWriter.create(path, { overwrite: true });
  const lines: string[] = [];
  try {
    for (const [kind, config] of configs) {
      const adapter: BrokerAdapter = createAdapter(config);
      try {
        const queues = await adapter.listQueues({});
        for (const name of DEMO_QUEUES[kind]) {
          const q = queues.find((x) => x.name === name);
          if (q === undefined) {
            lines.push(`${kind} ${name}: not found — run the seed first`);
            continue;
          }
          const exportedAt = Date.now();
          const states = q.capabilities.peekStates.length > 0 ? q.capabilities.peekStates.filter((s) => !s.startsWith('pending:') && s !== 'all') : [];
          const messages: QueueMessage[] = [];
          const shortfalls: string[] = [];
          for (const state of states.length > 0 ? states : [undefined]) {
            const got = await readState(adapter, q, state);
            messages.push(...got.messages);
            if (got.shortfall !== null) shortfalls.push(got.shortfall);
          }
          const partialReason = shortfalls.length > 0 ? `${shortfalls.join(' ')}${reasonFor(q)}` : null;
          // The header goes first in the file but is written once the section's messages are known,
          // so a section that holds less than the queue had says so.
          await writer.writeHeader({
            exportedAt,
            source: { broker: config.kind, connection: describeConnection(config), queue: q },
            selection: 'all',
            ...(partialReason !== null ? { partial: true, partialReason } : {}),
          });
          for (const m of messages) await writer.writeMessage(m);
          const n = messages.length;
          lines.push(`${kind} ${name}: ${n} messages${partialReason !== null ? ` (partial: ${partialReason})` : ''}`);
        }
      } finally {
        await adapter.close();
      }
    }
    const result = await writer.finish();
    lines.push(`wrote ${result.messages} messages in ${result.sections} sections, ${result.bytes} bytes`);
    return lines;
  } catch (e) {
    await writer.abort();
    throw e;
  }
}
