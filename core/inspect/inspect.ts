import { QueuescopeError, type QueueMessage, type QueueSummary } from '../../shared/domain';
import type { BrokerAdapter } from '../adapters/types';
import type { InspectComparison, InspectReport, InspectedMessage } from '../../shared/api/inspect';
import { inspectedStates } from '../../shared/api/inspect-scope';
import { analyzeMessage, compareDuplicates, createQueueSummary, type AnalyzeOptions, type KeyVerdictKind, type MessageAnalysis, type PayloadVerdictKind, type RedeliverySummary } from './analysis';
import { readQueue, type ReadQueueOptions, type ReadQueueResult } from './read';

export type { InspectComparison, InspectReport, InspectedMessage };

/** Per-message rows kept in a report by default (the summary always covers every message read). */
export const DEFAULT_ROW_LIMIT = 1000;
/** Analyses kept in memory for duplicate comparisons (DLQ vs source, snapshot vs snapshot); beyond it the comparison covers the first ones only and says so. */
export const MAX_COMPARED_MESSAGES = 200_000;

/** A queue to compare against (see {@link InspectQueueOptions.compareWith}). */
export interface CompareTarget {
  relation: InspectComparison['relation'];
  adapter: BrokerAdapter;
  /** Queue id on that adapter. */
  queueId: string;
  /** Shown in reasons; default the queue's name. */
  label?: string;
  /** Rules to analyse that side with (default: the inspected queue's). */
  rules?: AnalyzeOptions['rules'];
  /** States of that queue to read (`capabilities.peekStates`), together as one side; default the queue's default. */
  states?: string[];
}

/** BullMQ states whose jobs will still run (a failed job's key found there is run again by a retry). */
const BULLMQ_LIVE_STATES = ['waiting', 'prioritized', 'delayed', 'paused', 'active', 'waiting-children'];

/** Options of {@link inspectQueue}. */
export interface InspectQueueOptions {
  /**
   * State to read; absent = no filter (the adapter's default: a snapshot's every state, a live
   * BullMQ queue's `waiting`). Callers that take a user's input apply `defaultInspectState` first,
   * so the report names the state; `InspectReport.states` lists what was read.
   */
  state?: string;
  /** Most messages to analyse (default: the whole queue/state where it can be paged). */
  limit?: number;
  /** Needed where a peek may dead-letter messages (RabbitMQ quorum with a delivery limit, SQS with a redrive policy). Also applies to compared queues. */
  acceptSideEffects?: boolean;
  /** Rules for this queue (from `resolveInspectSettings`). */
  rules?: AnalyzeOptions['rules'];
  /** Shown as {@link InspectReport.rulesSource}. */
  rulesSource?: string;
  /** Per-message rows kept (default {@link DEFAULT_ROW_LIMIT}; 0 = only summary examples). */
  rowLimit?: number;
  /**
   * Compare duplicate keys with the queue's dead-letter partners (its DLQ, or the queues that
   * dead-letter into it), found through `deadLetterTargets` / `deadLetterSources` (default true).
   */
  compareDeadLetter?: boolean;
  /** More queues to compare with (e.g. the same queue in another snapshot). */
  compareWith?: CompareTarget[];
  /** Messages per peek. */
  pageSize?: number;
  /**
   * Bodies up to this many bytes are read whole and analysed (default `INSPECT_MAX_BODY_BYTES`,
   * 1 MiB + 1 KiB; at most `MAX_INSPECT_BODY_BYTES`, 256 MiB); longer ones are analysed as cut
   * (payload `review`). Also used for the compared queues. The CLI's `--max-body-bytes`.
   */
  maxBodyBytes?: number;
  /**
   * Broker version for the size limit (RabbitMQ's default `max_message_size` is 128 MiB on
   * 3.8–3.13, 16 MiB since 4.0). When absent, it is read from the adapter's `brokerVersion`
   * capability where it has one (see {@link readBrokerVersion}); null = unknown.
   */
  brokerVersion?: string | null;
}

/** The part of an operation context an inspection uses (all optional outside the OperationManager). */
export interface InspectContext {
  signal?: AbortSignal;
  report?: (p: { processed: number }) => void;
  setTotal?: (total: number | null) => void;
  checkpoint?: () => Promise<void>;
}

const SEVERITY: Record<PayloadVerdictKind, number> = { ok: 0, review: 1, flag: 2 };

/** True when `verdict` is at least as severe as `threshold` (`ok` < `review` < `flag`). */
export function atLeast(verdict: PayloadVerdictKind, threshold: PayloadVerdictKind): boolean {
  return SEVERITY[verdict] >= SEVERITY[threshold];
}

/** The row the CLI and the app show for one analysis. */
export function toInspectedMessage(m: QueueMessage, a: MessageAnalysis): InspectedMessage {
  return {
    id: m.id,
    position: m.position,
    state: m.meta.state ?? null,
    key: a.key?.key ?? null,
    keySource: a.key?.source ?? null,
    keyOrigin: a.key?.origin ?? null,
    keyVerdict: a.keyVerdict.verdict,
    keyReason: a.keyVerdict.reason,
    verdict: a.verdict,
    payloadLabel: a.payload.label,
    topReason: a.reasons[0] ?? null,
    reasons: a.reasons,
    operation: a.operation,
    bytes: m.body.sizeBytes,
  };
}

const NO_STRINGS: string[] = [];
const DROPPED_PAYLOAD: Record<PayloadVerdictKind, MessageAnalysis['payload']> = {
  ok: { verdict: 'ok', label: 'ok', reasons: NO_STRINGS, findings: [], fields: [], fieldsTruncated: false, envelope: null, argumentsPath: 'body', format: 'json', intentionalSnapshot: NO_STRINGS },
  review: { verdict: 'review', label: 'review', reasons: NO_STRINGS, findings: [], fields: [], fieldsTruncated: false, envelope: null, argumentsPath: 'body', format: 'json', intentionalSnapshot: NO_STRINGS },
  flag: { verdict: 'flag', label: 'flag', reasons: NO_STRINGS, findings: [], fields: [], fieldsTruncated: false, envelope: null, argumentsPath: 'body', format: 'json', intentionalSnapshot: NO_STRINGS },
};
const DROPPED_SIZE: MessageAnalysis['size'] = { bytes: 0, limitBytes: null, limitSource: 'not kept for comparisons', verdict: 'ok', reason: null };
const DROPPED_KEY_VERDICT: Record<KeyVerdictKind, MessageAnalysis['keyVerdict']> = {
  'business-derived': { verdict: 'business-derived', reason: '' },
  'opaque-random': { verdict: 'opaque-random', reason: '' },
  'time-derived': { verdict: 'time-derived', reason: '' },
  'period-key': { verdict: 'period-key', reason: '' },
  missing: { verdict: 'missing', reason: '' },
};

/**
 * What an inspection keeps of one analysis for duplicate comparisons (rule D4 groups by the
 * idempotency key and the business hash and names message ids): the analysis with its key
 * verdict's sentence, payload findings, reasons and size check replaced by shared stand-ins (the key
 * and payload verdicts themselves are kept), which are most of its memory. Holding 100k full analyses for a comparison cost about a
 * third of an inspection's CPU time, mostly garbage collection. `compareDuplicates` gives the same
 * result for these as for the full analyses (pinned by inspect.test.ts).
 */
export function forComparison(a: MessageAnalysis): MessageAnalysis {
  return {
    messageId: a.messageId,
    key: a.key,
    keyVerdict: DROPPED_KEY_VERDICT[a.keyVerdict.verdict],
    payload: DROPPED_PAYLOAD[a.payload.verdict],
    size: DROPPED_SIZE,
    verdict: a.verdict,
    reasons: NO_STRINGS,
    operation: a.operation,
    operationSource: a.operationSource,
    businessHash: a.businessHash,
  };
}

/** Most messages beyond `rowLimit` remembered as possible example rows. */
const MAX_LATE_ROWS = 50_000;
/** Off-heap bytes a {@link RowStore} may use for bodies (UTF-8), in chunks of {@link ROW_CHUNK_BYTES}; beyond it, it keeps rows. */
const ROW_BODY_BUDGET_BYTES = 64 * 1024 * 1024;
const ROW_CHUNK_BYTES = 4 * 1024 * 1024;
/** Bodies longer than this (UTF-16 code units) are never copied off-heap: their row is smaller. */
const ROW_MAX_BODY_CHARS = 16 * 1024;

/** A message a {@link RowStore} can analyse again: every field but the body, which sits in `chunk`. */
interface StoredMessage {
  message: Omit<QueueMessage, 'body'>;
  encoding: QueueMessage['body']['encoding'];
  sizeBytes: number;
  truncated: boolean;
  chunk: Buffer;
  start: number;
  end: number;
}

/** What a {@link RowStore} keeps for one row: the row itself, or the message to make it from. */
type KeptRow = InspectedMessage | StoredMessage;

/** ES2024 `String.prototype.isWellFormed` (Node 20+; the node tsconfig's lib is ES2023). */
const isWellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

/**
 * Keeps what the report's rows are made from until the end of an inspection: the first `rowLimit`
 * messages, and up to {@link MAX_LATE_ROWS} later ones that may turn out to be examples the
 * summary names (a message whose key has not repeated yet may still become one).
 *
 * Holding those as rows (about 1 KB of on-heap sentences each, 51,000 of them for 100k messages)
 * cost about a quarter of the app's inspection time in garbage collection, and the analyses of the
 * first rows outliving the page taught V8 to allocate every later analysis in the old generation.
 * So a message with a small, well-formed body is kept as its other fields plus its body copied as
 * UTF-8 into off-heap chunks (which the collector neither copies nor scans), and its row is made
 * only when the report needs it, by analysing it again with the same options: `analyzeMessage` is
 * pure, and a well-formed string survives the UTF-8 round trip exactly, so the row is the one the
 * first analysis gave (inspect.test.ts pins it). Large or ill-formed bodies, and any beyond
 * {@link ROW_BODY_BUDGET_BYTES}, keep the row itself.
 */
class RowStore {
  private chunk: Buffer | null = null;
  private used = 0;
  private budget = ROW_BODY_BUDGET_BYTES;

  constructor(private readonly options: AnalyzeOptions) {}

  /** What to keep for the row of `m` (analysed as `a` with this store's options). */
  keep(m: QueueMessage, a: MessageAnalysis): KeptRow {
    return this.store(m) ?? toInspectedMessage(m, a);
  }

  /** The message id of a kept row. */
  static id(k: KeptRow): string {
    return 'chunk' in k ? k.message.id : k.id;
  }

  /** The row of a kept message. */
  row(k: KeptRow): InspectedMessage {
    if (!('chunk' in k)) return k;
    const m: QueueMessage = { ...k.message, body: { encoding: k.encoding, data: k.chunk.toString('utf8', k.start, k.end), sizeBytes: k.sizeBytes, truncated: k.truncated } };
    return toInspectedMessage(m, analyzeMessage(m, this.options));
  }

  private store(m: QueueMessage): StoredMessage | null {
    const data = m.body.data;
    if (data.length > ROW_MAX_BODY_CHARS || !isWellFormed(data)) return null;
    const worst = data.length * 3; // UTF-8 bytes per UTF-16 code unit, at most
    let chunk = this.chunk;
    if (chunk === null || this.used + worst > chunk.length) {
      if (this.budget < ROW_CHUNK_BYTES) return null;
      this.budget -= ROW_CHUNK_BYTES;
      chunk = this.chunk = Buffer.allocUnsafe(ROW_CHUNK_BYTES);
      this.used = 0;
    }
    const start = this.used;
    const end = start + chunk.write(data, start, 'utf8');
    this.used = end;
    return {
      message: { id: m.id, queueId: m.queueId, queueName: m.queueName, position: m.position, headers: m.headers, properties: m.properties, meta: m.meta },
      encoding: m.body.encoding,
      sizeBytes: m.body.sizeBytes,
      truncated: m.body.truncated,
      chunk,
      start,
      end,
    };
  }
}

/**
 * Whether an analysis can end up named as an example by the summary: it has a key (duplicate
 * groups, collisions), a payload hash (the same payload under other keys or without one, also for a
 * keyless message with an ok payload) or a reason (non-ok payload findings, size).
 */
function mayBeExample(a: MessageAnalysis): boolean {
  return a.key !== null || a.businessHash !== null || a.verdict !== 'ok' || a.size.verdict !== 'ok';
}

/** True when reading `queue` again changes nothing and pages from a cursor (Redis, snapshot files). */
function canReadAgain(queue: QueueSummary): boolean {
  const caps = queue.capabilities;
  return caps.canPeekNonDestructively && caps.peekSideEffects.length === 0 && caps.canPageFromCursor;
}

/** Stops {@link readExamplesAgain}'s read once every id is found. */
class FoundAll extends Error {}

/**
 * Reads `queue` again (same state, limit and paging) and hands each message whose id is in `ids`
 * to `keep`, deleting it from `ids`; stops at the first page boundary where none is left. Ids
 * still in `ids` afterwards were not found (the queue changed meanwhile).
 */
async function readExamplesAgain(adapter: BrokerAdapter, queue: QueueSummary, options: Omit<ReadQueueOptions, 'checkpoint' | 'onTotal'>, ids: Set<string>, keep: (m: QueueMessage) => void): Promise<void> {
  try {
    await readQueue(
      adapter,
      queue,
      {
        ...options,
        checkpoint: () => (ids.size === 0 ? Promise.reject(new FoundAll('every example was found')) : Promise.resolve()),
      },
      (messages) => {
        for (const m of messages) {
          if (!ids.has(m.id)) continue;
          ids.delete(m.id);
          keep(m);
        }
      },
    );
  } catch (e) {
    if (!(e instanceof FoundAll)) throw e;
  }
}

/** Every message id a summary names as an example (so the drill-down can show those rows). */
function exampleIds(s: RedeliverySummary): Set<string> {
  const ids = new Set<string>();
  for (const g of s.duplicateGroups) for (const id of g.exampleIds) ids.add(id);
  for (const c of s.keyCollisions) for (const o of c.operations) for (const id of o.exampleIds) ids.add(id);
  for (const g of s.samePayloadDifferentKeys) for (const id of g.exampleIds) ids.add(id);
  for (const r of s.reasons) for (const id of r.exampleIds) ids.add(id);
  return ids;
}

/**
 * Inspects a queue for redelivery safety: reads it page by page through the adapter (the same
 * side-effect gate and paging as export: see `readQueue`), analyses each message
 * (`shared/analysis`: idempotency key + verdict, payload verdict, size) into a streaming
 * per-queue summary, and compares duplicate keys with its dead-letter partners and any
 * `compareWith` targets.
 *
 * Memory: the summary is bounded by the analysis (`maxTracked`); per-message rows by `rowLimit`
 * (+ the summary's example ids); analyses for comparisons by {@link MAX_COMPARED_MESSAGES}.
 * Every message the summary names as an example gets its row: up to {@link MAX_LATE_ROWS} messages
 * after the first `rowLimit` are kept while reading; examples beyond those are found by reading the
 * queue again (same state and limit, stopping once all are found) where that changes nothing
 * (non-destructive, pageable: Redis, snapshot files); any still missing are named in `notes`.
 * Progress: `setTotal` once known, `report({ processed })` after each page.
 *
 * A compared queue that cannot be read (its peek may dead-letter and side effects were not
 * accepted, it is gone, the broker refuses) does not fail the inspection: the comparison carries
 * a `note` saying why.
 *
 * @throws QueuescopeError `PEEK_REFUSED` (the inspected queue's peek may dead-letter messages and
 *   `acceptSideEffects` is not true; nothing is read), `QUEUE_NOT_FOUND`, `INVALID_INPUT` (bad
 *   state or limit), `CANCELLED`, or the adapter's connection errors.
 */
export async function inspectQueue(adapter: BrokerAdapter, queueId: string, options: InspectQueueOptions = {}, ctx: InspectContext = {}): Promise<InspectReport> {
  const t0 = performance.now();
  const queue = await adapter.getQueue(queueId, ctx.signal);
  const rules = withQueueSizeLimit(options.rules ?? {}, queue);
  const brokerVersion = options.brokerVersion !== undefined ? options.brokerVersion : await readBrokerVersion(adapter, ctx.signal);
  const analyzeOptions: AnalyzeOptions = { rules, detail: 'verdict', ...(brokerVersion !== null ? { brokerVersion } : {}) };
  const acc = createQueueSummary(analyzeOptions);
  const rowLimit = Math.max(0, options.rowLimit ?? DEFAULT_ROW_LIMIT);
  const store = new RowStore(analyzeOptions);
  const first: KeptRow[] = [];
  // Rows beyond rowLimit are kept only for messages the summary names as examples, decided at the
  // end: per message id, the last message read with that id.
  const late = new Map<string, KeptRow>();
  const compared: MessageAnalysis[] = [];
  // Analyses are kept for comparisons only when there is something to compare with: holding 100k
  // of them for a queue without dead-letter partners cost about a third of the app's inspection time.
  const targets: CompareTarget[] = [];
  const notCompared: InspectComparison[] = [];
  if (options.compareDeadLetter ?? true) {
    const partners = deadLetterPartners(adapter, queue, options.state);
    targets.push(...partners.targets);
    notCompared.push(...partners.absent);
    const fromFile = await bullmqSnapshotPartners(adapter, queue, options.state, ctx.signal);
    targets.push(...fromFile.targets);
    notCompared.push(...fromFile.absent);
  }
  targets.push(...(options.compareWith ?? []));
  const wantCompare = targets.length > 0;
  let analysed = 0;

  const readOptions = {
    ...(options.state !== undefined ? { state: options.state } : {}),
    ...(options.limit !== undefined ? { limit: options.limit } : {}),
    ...(options.acceptSideEffects !== undefined ? { acceptSideEffects: options.acceptSideEffects } : {}),
    ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
    ...(options.maxBodyBytes !== undefined ? { maxBodyBytes: options.maxBodyBytes } : {}),
    ...(ctx.signal !== undefined ? { signal: ctx.signal } : {}),
  };
  const read = await readQueue(
    adapter,
    queue,
    {
      ...readOptions,
      ...(ctx.checkpoint !== undefined ? { checkpoint: ctx.checkpoint } : {}),
      onTotal: (t) => ctx.setTotal?.(t),
    },
    (messages) => {
      for (const m of messages) {
        const a = acc.add(m);
        analysed++;
        if (first.length < rowLimit) first.push(store.keep(m, a));
        // Any message may become an example: a keyless one with an ok payload too, as a copy of
        // another's payload (samePayloadDifferentKeys); only one without key, payload hash and
        // reasons cannot.
        else if (late.size < MAX_LATE_ROWS && mayBeExample(a)) late.set(m.id, store.keep(m, a));
        if (wantCompare && compared.length < MAX_COMPARED_MESSAGES) compared.push(forComparison(a));
      }
      ctx.report?.({ processed: analysed });
    },
  );
  const summary = acc.result();
  const rows = first.map((k) => store.row(k));
  let messagesTruncated = analysed > rows.length;
  const have = new Set(first.map((k) => RowStore.id(k)));
  const unkept = new Set([...exampleIds(summary)].filter((id) => !have.has(id) && !late.has(id)));
  // Examples beyond what was kept (more than MAX_LATE_ROWS later messages): read the queue again
  // for them where reading changes nothing, so every id the drill-down names opens.
  if (unkept.size > 0 && canReadAgain(queue)) {
    await ctx.checkpoint?.();
    await readExamplesAgain(adapter, queue, readOptions, unkept, (m) => late.set(m.id, store.keep(m, analyzeMessage(m, analyzeOptions))));
  }
  if (late.size > 0) {
    for (const id of exampleIds(summary)) {
      const k = late.get(id);
      if (k !== undefined && !have.has(id)) rows.push(store.row(k));
    }
    rows.sort((x, y) => (x.position ?? 0) - (y.position ?? 0));
    messagesTruncated = analysed > rows.length;
  }
  const unopened = unkept.size > 0 ? `${String(unkept.size)} message${unkept.size === 1 ? '' : 's'} the summary names as example${unkept.size === 1 ? '' : 's'} could not be kept for opening (${canReadAgain(queue) ? 'not found when the queue was read again: consumed or moved meanwhile' : 'reading the queue again would change it'}): ${[...unkept].slice(0, 5).join(', ')}${unkept.size > 5 ? ', …' : ''}.` : null;

  const comparisons: InspectComparison[] = [...notCompared];
  // Reading a compared queue (the DLQ of a RabbitMQ/SQS queue) changes it as reading this one does:
  // its side effects are reported with the queue named, not left out.
  const comparedSideEffects: string[] = [];
  if (wantCompare) {
    const ownSide = { label: queue.name, messages: compared, options: analyzeOptions };
    const capNote = compared.length < analysed ? `Only the first ${String(compared.length)} messages of ${queue.name} were compared.` : null;
    for (const t of targets) {
      await ctx.checkpoint?.();
      const c = await compareWithTarget(ownSide, t, options, analyzeOptions, capNote, ctx.signal);
      comparisons.push(c.comparison);
      for (const s of c.sideEffects) comparedSideEffects.push(`${c.comparison.label} (read for the duplicate comparison): ${s}`);
    }
  }

  return {
    queue: { id: queue.id, name: queue.name, kind: queue.kind, broker: queue.broker, isDeadLetterQueue: queue.isDeadLetterQueue },
    state: options.state ?? null,
    ...withStates(inspectedStates(queue, options.state)),
    rulesSource: options.rulesSource ?? 'built-in rules',
    rules,
    analysed,
    total: read.total,
    ...withSnapshotPartial(read, snapshotPartialReason(adapter, queue)),
    ...withNotes([snapshotCompletenessNote(adapter, queue), ...(read.notes ?? []), unopened]),
    sideEffects: [...read.sideEffects, ...comparedSideEffects],
    summary,
    messages: rows,
    messagesTruncated,
    comparisons,
    elapsedMs: Math.round(performance.now() - t0),
  };
}

/**
 * The rules with `maxMessageBytes` from the queue's own configuration when the rules do not set
 * one: SQS `MaximumMessageSize` (`QueueSummary.config.maximumMessageSizeBytes`, bytes, 1,024 –
 * 1,048,576). A user rule's `maxMessageBytes` wins (an explicit override).
 */
export function withQueueSizeLimit(rules: NonNullable<AnalyzeOptions['rules']>, queue: QueueSummary): NonNullable<AnalyzeOptions['rules']> {
  if (rules.maxMessageBytes !== undefined) return rules;
  const max = (queue.config as Record<string, unknown> | undefined)?.maximumMessageSizeBytes;
  return typeof max === 'number' && Number.isFinite(max) && max >= 1 ? { ...rules, maxMessageBytes: max } : rules;
}

/**
 * The broker version the adapter reports through its optional `brokerVersion` capability (RabbitMQ:
 * the management API `/api/overview`, e.g. `3.10.8`), for the default `max_message_size`; null
 * where the adapter reports none (snapshots, Redis, SQS) or it cannot be read (the size check then
 * names both defaults). Throws only `CANCELLED`.
 */
export async function readBrokerVersion(adapter: BrokerAdapter, signal?: AbortSignal): Promise<string | null> {
  if (adapter.brokerVersion === undefined) return null;
  try {
    const v = await adapter.brokerVersion(signal);
    return typeof v === 'string' && v.length > 0 ? v : null;
  } catch (e) {
    if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
    return null;
  }
}

/**
 * The queues a queue dead-letters to, or that dead-letter into it: `targets` for those that resolve
 * to a queue id on `adapter`, and `absent` — comparisons with `result: null` and a `note` saying
 * why — for partners that are known but cannot be read from this source:
 * - a dead-letter target known by name (`queueName`) without a queue id: on a snapshot, the DLQ
 *   was not exported into the same file (the snapshot adapter maps ids to the sections it holds);
 *   on a broker, the adapter did not find it;
 * - on a snapshot, a dead-letter queue (`isDeadLetterQueue`) with no source queue in the file:
 *   the snapshot adapter drops source ids it holds no section for, so their names are not known.
 * Targets without a name (RabbitMQ routes that cannot be resolved statically, dead letters that
 * are dropped) are not partners and are left out.
 */
export function deadLetterPartners(adapter: BrokerAdapter, queue: QueueSummary, state?: string): { targets: CompareTarget[]; absent: InspectComparison[] } {
  const out: CompareTarget[] = [];
  const absent: InspectComparison[] = [];
  out.push(...bullmqPartners(adapter, queue, state));
  const seen = new Set<string>([queue.id]);
  const snapshotFile = snapshotFileOf(adapter, queue);
  const where = snapshotFile !== null ? `is not in this snapshot (${snapshotFile}): export it into the same file to compare duplicate keys with it.` : 'was not found on this connection, so duplicate keys shared with it were not compared.';
  for (const id of queue.deadLetterSources) {
    if (seen.has(id)) continue;
    seen.add(id);
    out.push({ relation: 'dead-letter-source', adapter, queueId: id });
  }
  const absentNames = new Set<string>();
  for (const t of queue.deadLetterTargets) {
    if (t.queueId === null) {
      if (t.queueName === null || absentNames.has(t.queueName)) continue;
      absentNames.add(t.queueName);
      absent.push({
        relation: 'dead-letter-target',
        label: t.queueName,
        queueId: null,
        result: null,
        read: 0,
        partial: false,
        note: `${t.queueName} (the dead-letter queue of ${queue.name}) ${where}`,
      });
      continue;
    }
    if (seen.has(t.queueId)) continue;
    seen.add(t.queueId);
    out.push({ relation: 'dead-letter-target', adapter, queueId: t.queueId, ...(t.queueName !== null ? { label: t.queueName } : {}) });
  }
  if (snapshotFile !== null && queue.isDeadLetterQueue && queue.deadLetterSources.length === 0) {
    absent.push({
      relation: 'dead-letter-source',
      label: `queues that dead-letter into ${queue.name}`,
      queueId: null,
      result: null,
      read: 0,
      partial: false,
      note: `${queue.name} is a dead-letter queue, but no queue that dead-letters into it is in this snapshot (${snapshotFile}); export its source queue into the same file to compare duplicate keys with it.`,
    });
  }
  return { targets: out, absent };
}

/**
 * A BullMQ queue keeps its dead letters itself: a job that exhausts its attempts moves to the
 * queue's `failed` set (BullMQ docs, "Retrying failing jobs"). So its dead-letter partner is the same
 * queue in other states:
 * - inspecting `failed`: the jobs that will still run ({@link BULLMQ_LIVE_STATES} that the queue
 *   has, and holds jobs in, by `counts`), read together (relation `dead-letter-source`);
 * - inspecting a live state (default `waiting`): the `failed` set, when it holds jobs
 *   (relation `dead-letter-target`).
 * Other states (completed…), and queues that are not BullMQ, have none.
 */
export function bullmqPartners(adapter: BrokerAdapter, queue: QueueSummary, state: string | undefined): CompareTarget[] {
  const states = queue.capabilities.peekStates;
  // Snapshot sections: bullmqSnapshotPartners (the partner may be another section of the file).
  if (queue.kind !== 'bullmq' || adapter.broker === 'snapshot' || !states.includes('failed')) return [];
  const partner = bullmqPartnerStates(state ?? 'waiting');
  if (partner === null) return [];
  const held = partner.states.filter((s) => states.includes(s) && (queue.counts[s] === undefined || (queue.counts[s] ?? 0) > 0));
  return held.length === 0 ? [] : [{ relation: partner.relation, adapter, queueId: queue.id, label: `${queue.name} (${held.join(', ')} jobs)`, states: held }];
}

/**
 * The BullMQ states that hold the dead-letter partner of an inspected state, and the relation:
 * `failed` → the live states (`dead-letter-source`); a live state → `failed`
 * (`dead-letter-target`); any other state (completed…) → null.
 */
function bullmqPartnerStates(inspected: string): { states: readonly string[]; relation: InspectComparison['relation'] } | null {
  if (inspected === 'failed') return { states: BULLMQ_LIVE_STATES, relation: 'dead-letter-source' };
  if (BULLMQ_LIVE_STATES.includes(inspected)) return { states: ['failed'], relation: 'dead-letter-target' };
  return null;
}

/** The `meta.state`s a snapshot section holds (from `config.snapshot.states`). */
function sectionStates(q: QueueSummary): string[] {
  const info = (q.config as Record<string, unknown> | undefined)?.snapshot as { states?: unknown } | undefined;
  return info?.states !== null && typeof info?.states === 'object' ? Object.keys(info.states) : [];
}

/**
 * {@link bullmqPartners} for a BullMQ queue read from a snapshot file, where the failed jobs and the
 * live ones may sit in one section (an export of several states) or in sections of their own (one
 * export per state into the same file: the same original queue id). The partners are found in both;
 * when the file holds none, the comparison is listed as not made, with how to make it.
 * The inspected state: `state`, else the section's only state. A section mixing states inspected
 * without `state` has no partner (its failed and live jobs are already compared as one set).
 */
export async function bullmqSnapshotPartners(adapter: BrokerAdapter, queue: QueueSummary, state: string | undefined, signal?: AbortSignal): Promise<{ targets: CompareTarget[]; absent: InspectComparison[] }> {
  const none = { targets: [], absent: [] };
  if (adapter.broker !== 'snapshot' || queue.kind !== 'bullmq') return none;
  const own = sectionStates(queue);
  const inspected = state ?? (own.length === 1 ? own[0] : undefined);
  if (inspected === undefined) return none;
  const partner = bullmqPartnerStates(inspected);
  if (partner === null) return none;
  const failed = inspected === 'failed';
  const relation = partner.relation;
  const targets: CompareTarget[] = [];
  const add = (q: QueueSummary, sameSection: boolean): void => {
    const held = sectionStates(q).filter((x) => partner.states.includes(x));
    if (held.length === 0) return;
    const states = sameSection || sectionStates(q).length > 1 ? held : undefined;
    targets.push({ relation, adapter, queueId: q.id, label: `${q.name} (${held.join(', ')} jobs)`, ...(states !== undefined ? { states } : {}) });
  };
  add(queue, true);
  const originalId = (queue.config as { snapshot?: { originalId?: unknown } }).snapshot?.originalId;
  for (const q of await adapter.listQueues({}, signal)) {
    if (q.id !== queue.id && q.kind === 'bullmq' && (q.config as { snapshot?: { originalId?: unknown } }).snapshot?.originalId === originalId) add(q, false);
  }
  if (targets.length > 0) return { targets, absent: [] };
  const what = failed ? 'live jobs' : 'failed jobs';
  return {
    targets: [],
    absent: [
      {
        relation,
        label: `${queue.name} (${what})`,
        queueId: null,
        result: null,
        read: 0,
        partial: false,
        note: joinHint(adapter, queue, failed ? 'live jobs (waiting, delayed…)' : what, failed ? 'failed' : inspected, failed ? 'waiting' : 'failed'),
      },
    ],
  };
}

/**
 * The note of a BullMQ snapshot section whose partner jobs (`what`: failed or live) are not in the
 * file: their keys were not compared with the `inspected` jobs; export them too (`--state
 * exportState`), join the two files with `cat`, and inspect the joined file by queue id — it holds
 * two sections of the queue, `<original id>` and `<original id>#2` (a name alone names both, exit 2),
 * and each is compared with the other.
 */
function joinHint(adapter: BrokerAdapter, queue: QueueSummary, what: string, inspected: string, exportState: string): string {
  const originalId = (queue.config as { snapshot?: { originalId?: unknown } }).snapshot?.originalId;
  const id = typeof originalId === 'string' ? originalId : queue.id;
  return (
    `The ${what} of ${queue.name} are not in this snapshot (${snapshotFileOf(adapter, queue) ?? 'the file'}), so their keys were not compared with the ${inspected} jobs: ` +
    `export them too (export --state ${exportState} --out b.jsonl), join the two files (cat a.jsonl b.jsonl > both.jsonl) and inspect the joined file by queue id: ` +
    `it holds ${queue.name} twice, as ${id} (a.jsonl) and ${id}#2 (b.jsonl; queues both.jsonl lists them), and each is compared with the other.`
  );
}

/**
 * Why a snapshot section does not hold the whole queue it was exported from (its header's
 * `partial` / `partialReason`, in `config.snapshot`: e.g. a RabbitMQ queue deeper than one peek;
 * or more messages than its writer recorded — "does not hold <queue> as it was written";
 * or `selection: 'ids'`, an export of picked messages), or null when it holds all of it or the
 * adapter is not a snapshot.
 */
export function snapshotPartialReason(adapter: BrokerAdapter, queue: QueueSummary): string | null {
  if (adapter.broker !== 'snapshot') return null;
  const info = (queue.config as Record<string, unknown> | undefined)?.snapshot as { partial?: unknown; partialReason?: unknown; selection?: unknown; messages?: unknown; writtenMessages?: unknown; cutReason?: unknown; redriveBackup?: unknown } | undefined;
  if (info?.selection === 'ids') {
    // Exported with --ids (or a redrive backup): the picked messages, whatever else the queue held; and a cut file says so.
    const n = typeof info.messages === 'number' ? info.messages : null;
    const cut = typeof info.cutReason === 'string' && info.cutReason !== '' ? ` ${info.cutReason}` : '';
    const these = `${n === null ? 'the' : `the ${String(n)}`} message${n === 1 ? '' : 's'}`;
    if (info.redriveBackup === true) return `The snapshot is a redrive backup of ${queue.name}: it holds ${these} that redrive moved (or tried to), not the whole queue.${cut}`;
    return `The snapshot holds only ${these} picked by id from ${queue.name} (export --ids), not the whole queue.${cut}`;
  }
  if (info?.partial !== true) return null;
  const reason = typeof info.partialReason === 'string' && info.partialReason !== '' ? info.partialReason : 'the export did not read every message.';
  // More messages than its writer recorded (edited, or two files joined wrongly): not "only part", but not the queue as exported either.
  if (typeof info.messages === 'number' && typeof info.writtenMessages === 'number' && info.messages > info.writtenMessages) return `The snapshot does not hold ${queue.name} as it was written: ${reason}`;
  return `The snapshot holds only part of ${queue.name}: ${reason}`;
}

/**
 * What a snapshot section says about its own completeness beyond `partialReason`
 * (`config.snapshot.completenessNote` of the snapshot adapter): that an older file records no
 * message count, so a cut at a line boundary cannot be detected, or that the file lacks queue
 * sections the same export wrote; null otherwise, and for a broker.
 */
export function snapshotCompletenessNote(adapter: BrokerAdapter, queue: QueueSummary): string | null {
  if (adapter.broker !== 'snapshot') return null;
  const info = (queue.config as Record<string, unknown> | undefined)?.snapshot as { completenessNote?: unknown } | undefined;
  return typeof info?.completenessNote === 'string' && info.completenessNote !== '' ? info.completenessNote : null;
}

/**
 * Why a snapshot section does not hold what its writer (an export, or a redrive writing its backup)
 * recorded in the header's `written` (`config.snapshot.cutReason` of the snapshot adapter, which
 * makes that check): cut at a line boundary, more messages than recorded, or never finished; null
 * when it holds what was written, when the file records no count (see
 * {@link snapshotCompletenessNote}), and for a broker. Unlike {@link snapshotPartialReason} it says
 * nothing of a section that was written whole but holds only part of its queue (one peek window, `--ids`).
 */
export function snapshotCutReason(adapter: BrokerAdapter, queue: QueueSummary): string | null {
  if (adapter.broker !== 'snapshot') return null;
  const info = (queue.config as Record<string, unknown> | undefined)?.snapshot as { cutReason?: unknown } | undefined;
  return typeof info?.cutReason === 'string' && info.cutReason !== '' ? info.cutReason : null;
}

/** `{ notes }` with the non-null ones, or nothing when there are none. */
function withStates(states: string[] | undefined): { states?: string[] } {
  return states !== undefined ? { states } : {};
}

function withNotes(notes: (string | null)[]): { notes?: string[] } {
  const kept = notes.filter((n): n is string => n !== null);
  return kept.length > 0 ? { notes: kept } : {};
}

/** The report's `partial` / `partialReason`: the read's, and the snapshot's own when the file holds only part of the queue. */
function withSnapshotPartial(read: ReadQueueResult, snapshotReason: string | null): { partial: boolean; partialReason: string | null } {
  const reasons = [snapshotReason, read.partialReason].filter((x): x is string => x !== null);
  return { partial: read.partial || snapshotReason !== null, partialReason: reasons.length > 0 ? reasons.join(' ') : null };
}

/** The snapshot file a queue was read from (`config.snapshot.file` of the snapshot adapter), or null for a broker. */
function snapshotFileOf(adapter: BrokerAdapter, queue: QueueSummary): string | null {
  if (adapter.broker !== 'snapshot') return null;
  const info = (queue.config as Record<string, unknown> | undefined)?.snapshot;
  const file = typeof info === 'object' && info !== null ? (info as Record<string, unknown>).file : undefined;
  return typeof file === 'string' ? file : 'the file';
}

/** A comparison and the side effects its reads of the other queue caused on the broker (`ReadQueueResult.sideEffects`). */
interface ComparisonRead {
  comparison: InspectComparison;
  sideEffects: string[];
}

async function compareWithTarget(
  own: { label: string; messages: MessageAnalysis[]; options: AnalyzeOptions },
  t: CompareTarget,
  options: InspectQueueOptions,
  analyzeOptions: AnalyzeOptions,
  capNote: string | null,
  signal: AbortSignal | undefined,
): Promise<ComparisonRead> {
  const base = { relation: t.relation, label: t.label ?? t.queueId, queueId: t.queueId };
  const sideEffects = new Set<string>();
  let other: QueueSummary;
  try {
    other = await t.adapter.getQueue(t.queueId, signal);
  } catch (e) {
    if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
    return { comparison: { ...base, result: null, read: 0, partial: false, note: `${base.label} could not be read: ${e instanceof Error ? e.message : String(e)}` }, sideEffects: [] };
  }
  const label = t.label ?? other.name;
  const otherMessages: QueueMessage[] = [];
  // Not the inspection's `limit`: that bounds the messages inspected, and a partner cut to as few
  // would hide the keys they share (10 failed jobs against the first 10 waiting ones: "no shared keys").
  const limit = MAX_COMPARED_MESSAGES;
  let readCount = 0;
  const partialReasons: string[] = [];
  try {
    // Each state in turn (one side: e.g. a BullMQ queue's waiting and delayed jobs), within one limit.
    for (const state of t.states ?? [undefined]) {
      const room = limit - otherMessages.length;
      if (room <= 0) {
        partialReasons.push(`${state ?? 'the rest'} not read: the first ${String(limit)} messages were compared.`);
        continue;
      }
      const r: ReadQueueResult = await readQueue(
        t.adapter,
        other,
        {
          limit: room,
          ...(state !== undefined ? { state } : {}),
          ...(options.acceptSideEffects !== undefined ? { acceptSideEffects: options.acceptSideEffects } : {}),
          ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
          ...(options.maxBodyBytes !== undefined ? { maxBodyBytes: options.maxBodyBytes } : {}),
          ...(signal !== undefined ? { signal } : {}),
        },
        (msgs) => {
          for (const m of msgs) otherMessages.push(m);
        },
      );
      readCount += r.read;
      for (const x of r.sideEffects) sideEffects.add(x);
      if (r.partial) partialReasons.push(`${t.states !== undefined && state !== undefined ? `${state}: ` : ''}${r.partialReason ?? 'not every message was read'}`);
    }
  } catch (e) {
    if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
    const why = e instanceof QueuescopeError && e.code === 'PEEK_REFUSED' ? `${e.message} (the comparison with ${label} was skipped)` : `${label} could not be read: ${e instanceof Error ? e.message : String(e)}`;
    return { comparison: { ...base, label, queueId: other.id, result: null, read: 0, partial: false, note: why }, sideEffects: [...sideEffects] };
  }
  // A snapshot section that holds only part of its queue (cut short, one peek window, picked ids): its keys are not all there.
  const held = snapshotPartialReason(t.adapter, other);
  if (held !== null) partialReasons.unshift(held);
  const result = compareDuplicates(own, { label, messages: otherMessages, options: { ...analyzeOptions, ...(t.rules !== undefined ? { rules: t.rules } : {}) } });
  const notes = [capNote, partialReasons.length > 0 ? `${label}: ${partialReasons.join(' ')}` : null].filter((x): x is string => x !== null);
  return {
    comparison: { ...base, label, queueId: other.id, result, read: readCount, partial: partialReasons.length > 0 || capNote !== null, note: notes.length > 0 ? notes.join(' ') : null },
    sideEffects: [...sideEffects],
  };
}
