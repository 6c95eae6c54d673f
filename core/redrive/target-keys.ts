import type { KeyRule } from '../../shared/analysis/idempotency';
import { QueuescopeError, toErrorInfo, type QueueMessage, type QueueSummary } from '../../shared/domain';
import type { TargetKeysCheck } from '../../shared/redrive/types';
import type { BrokerAdapter } from '../adapters/types';
import { bullmqPartners } from '../inspect/inspect';
import { readQueue } from '../inspect/read';
import { redriveKeyOf } from './decider';

/**
 * The dry run's check for idempotency keys ALREADY WAITING in a redrive's target: a message the
 * producer re-sent after it dead-lettered, or a copy an earlier partial redrive moved, is run a
 * second time when the DLQ's copy is moved too — unless the target's consumer deduplicates on the
 * key. `planRedrive` collects the keys of the messages it would move per target
 * ({@link TargetKeyCollector}), then reads each target whose reads change nothing
 * ({@link checkTargetKeys}). Part of the plan only: a real run never reads its target.
 */

/** Idempotency keys of the messages a dry run would move kept in memory, over all targets; beyond it the check covers the first ones and says so. */
export const MAX_TARGET_KEYS_KEPT = 100_000;
/** Messages read per target by the check (over all its states, oldest first); beyond it the check covers the first ones and says so. */
export const MAX_TARGET_MESSAGES_READ = 10_000;
/** Key examples kept per target. */
export const MAX_TARGET_KEY_EXAMPLES = 5;

/** What {@link TargetKeyCollector} holds for one target. */
interface TargetKeys {
  /** Key → the first DLQ message id that carries it and how many of the messages to move carry it. */
  keys: Map<string, { dlqId: string; count: number }>;
  /** Messages to move that carry no key. */
  withoutKey: number;
  /** Messages with a key that was not kept ({@link MAX_TARGET_KEYS_KEPT} reached). */
  notKept: number;
}

/**
 * Collects the idempotency keys of the messages a dry run would move, per target. The dry run calls
 * {@link see} for each message decided `move` and {@link endBatch} after each batch with the ids
 * the mover refused (they cannot move, so their keys do not count). Holds at most `maxKeys` keys
 * over all targets; messages whose key is not kept are counted (`notKept`). Messages without a key
 * are counted (`withoutKey`) for every target, also one whose keys are not wanted (not read).
 */
export class TargetKeyCollector {
  private readonly perTarget = new Map<string, TargetKeys>();
  /** `keep`: the key is wanted (false: only whether the message has one counts). */
  private readonly pending: { id: string; targetId: string; key: string | null; keep: boolean }[] = [];
  private kept = 0;

  /**
   * @param rules the request's key rules.
   * @param wanted whether a target's keys are worth collecting (false for a target the check will
   *   not read, e.g. a RabbitMQ queue): its messages' keys are not kept, only those without one counted.
   */
  constructor(
    private readonly rules: readonly KeyRule[],
    private readonly wanted: (targetId: string) => boolean,
    private readonly maxKeys: number = MAX_TARGET_KEYS_KEPT,
  ) {}

  /** Records a message the dry run decided to move to `targetId` (counted at {@link endBatch}). */
  see(message: QueueMessage, targetId: string): void {
    this.pending.push({ id: message.id, targetId, key: redriveKeyOf(message, this.rules), keep: this.wanted(targetId) });
  }

  /** Counts the batch's messages but those in `refused` (ids the mover could not move). */
  endBatch(refused: ReadonlySet<string>): void {
    for (const p of this.pending) {
      if (refused.has(p.id)) continue;
      let t = this.perTarget.get(p.targetId);
      if (t === undefined) {
        t = { keys: new Map(), withoutKey: 0, notKept: 0 };
        this.perTarget.set(p.targetId, t);
      }
      if (p.key === null) {
        t.withoutKey++;
        continue;
      }
      if (!p.keep) continue;
      const k = t.keys.get(p.key);
      if (k !== undefined) k.count++;
      else if (this.kept < this.maxKeys) {
        t.keys.set(p.key, { dlqId: p.id, count: 1 });
        this.kept++;
      } else t.notKept++;
    }
    this.pending.length = 0;
  }

  /** What was collected for `targetId` (empty when nothing was). */
  of(targetId: string): Readonly<TargetKeys> {
    return this.perTarget.get(targetId) ?? { keys: new Map(), withoutKey: 0, notKept: 0 };
  }
}

/**
 * Why reading `q` for the check is not done, or null when its reads change nothing
 * (`canPeekNonDestructively` and no `peekSideEffects`: Redis lists, streams, BullMQ, RabbitMQ streams).
 */
export function targetReadSideEffects(q: QueueSummary): string | null {
  const caps = q.capabilities;
  if (caps.canPeekNonDestructively && caps.peekSideEffects.length === 0) return null;
  const effects = caps.peekSideEffects.map((e) => e.description.replace(/\.$/, ''));
  return effects.length > 0 ? effects.join('; ') : `reading ${q.kind} queues is not free of side effects`;
}

/** The adapter members the check reads a target with (`readQueue` uses `peek` and `broker`). */
export type TargetReader = Pick<BrokerAdapter, 'getQueue'> & Partial<Pick<BrokerAdapter, 'peek' | 'broker'>>;

/** A target the dry run would move messages to. */
export interface TargetToCheck {
  queueId: string;
  queueName: string;
  /** Messages the dry run would move there. */
  count: number;
}

/** Options of {@link checkTargetKeys}. */
export interface CheckTargetKeysOptions {
  /** The DLQ (a target that is the DLQ itself, without states, is not read: its keys are the DLQ's own). */
  dlq: QueueSummary;
  /** The peek state the run redrives (BullMQ `failed`), to leave out when the target is the DLQ's own queue. */
  state?: string;
  rules: readonly KeyRule[];
  /** Body read limit per message, bytes (the run's `maxBodyBytes`: keys in longer bodies are read the same as in the DLQ). */
  maxBodyBytes: number;
  /** Messages read per target (default {@link MAX_TARGET_MESSAGES_READ}). */
  maxRead?: number;
  /** How the CLI names the inspect command in notes ("queuescope inspect <connection> <dlq>"). */
  inspectHint?: string;
  signal?: AbortSignal;
}

/** {@link checkTargetKeys}' answer: one check per target, and the plan's warnings and notes from them. */
export interface TargetKeysOutcome {
  checks: TargetKeysCheck[];
  warnings: string[];
  notes: string[];
}

const plural = (n: number, one: string, many: string): string => `${String(n)} ${n === 1 ? one : many}`;
const short = (s: string, n = 120): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/**
 * For each target, compares the keys of the messages the dry run would move there (from
 * `collector`) with the keys of the messages already waiting there — read only where that changes
 * nothing ({@link targetReadSideEffects}); at most `maxRead` messages, oldest first. A BullMQ
 * queue's waiting messages are its jobs that will still run (waiting, prioritized, delayed, paused,
 * active, waiting-children, as `inspect` compares them); other queues are read in their default
 * state. Never fails the plan: a target that cannot be read gets a note saying why.
 * @throws QueuescopeError `CANCELLED` only.
 */
export async function checkTargetKeys(adapter: TargetReader, targets: readonly TargetToCheck[], collector: TargetKeyCollector, o: CheckTargetKeysOptions): Promise<TargetKeysOutcome> {
  const out: TargetKeysOutcome = { checks: [], warnings: [], notes: [] };
  for (const t of targets) {
    if (t.count <= 0) continue;
    const c = await checkOne(adapter, t, collector, o);
    out.checks.push(c.check);
    if (c.warning !== null) out.warnings.push(c.warning);
    if (c.check.note !== null) out.notes.push(c.check.note);
  }
  return out;
}

function rethrowCancel(e: unknown): void {
  if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
}

async function checkOne(adapter: TargetReader, t: TargetToCheck, collector: TargetKeyCollector, o: CheckTargetKeysOptions): Promise<{ check: TargetKeysCheck; warning: string | null }> {
  const name = t.queueName;
  const mine = collector.of(t.queueId);
  const keyless = mine.withoutKey > 0 ? ` ${String(mine.withoutKey)} of the ${plural(t.count, 'message', 'messages')} to move there ${mine.withoutKey === 1 ? 'carries' : 'carry'} no idempotency key and could not be compared.` : '';
  const base: TargetKeysCheck = { queueId: t.queueId, queueName: name, checked: false, read: 0, partial: false, moving: t.count, withoutKey: mine.withoutKey, duplicates: 0, examples: [], note: null };
  const notChecked = (why: string): { check: TargetKeysCheck; warning: null } => ({
    check: { ...base, note: `Idempotency keys already waiting in ${name} were not checked: ${why}.${keyless}` },
    warning: null,
  });
  let q: QueueSummary;
  try {
    q = await adapter.getQueue(t.queueId, o.signal);
  } catch (e) {
    rethrowCancel(e);
    // A Redis list or stream is absent while empty (the move creates it): nothing waits there.
    if (e instanceof QueuescopeError && e.code === 'QUEUE_NOT_FOUND') return { check: { ...base, checked: true, note: null }, warning: null };
    return notChecked(`the check could not run: ${toErrorInfo(e).message}`);
  }
  const sideEffects = targetReadSideEffects(q);
  if (sideEffects !== null) {
    const hint = o.inspectHint ?? `queuescope inspect <connection> ${o.dlq.name}`;
    return notChecked(`reading ${name} has side effects (${sideEffects}), and a dry run changes nothing there. \`${hint}\` compares the DLQ's keys with the queues that dead-letter into it (with those side effects)`);
  }
  if (mine.keys.size === 0) {
    return mine.withoutKey > 0 ? notChecked(`none of the ${plural(t.count, 'message', 'messages')} this run would move there carries an idempotency key`) : { check: base, warning: null };
  }
  let states: (string | undefined)[] = [undefined];
  if (q.kind === 'bullmq') {
    // The jobs that will still run; when the target is the DLQ's own queue, not the state redriven.
    const live = adapter.broker !== undefined ? (bullmqPartners(adapter as BrokerAdapter, q, 'failed')[0]?.states ?? []) : [];
    states = live.filter((s) => !(q.id === o.dlq.id && s === o.state));
  } else if (q.id === o.dlq.id) return notChecked(`${name} is the dead-letter queue itself`);
  if (adapter.peek === undefined || adapter.broker === undefined) return notChecked('this connection cannot read messages');
  // readQueue uses only `peek` and `broker` of the adapter.
  const reader = adapter as BrokerAdapter;
  const maxRead = o.maxRead ?? MAX_TARGET_MESSAGES_READ;
  const matched = new Set<string>();
  const examples: TargetKeysCheck['examples'] = [];
  let duplicates = 0;
  let read = 0;
  const partial: string[] = [];
  try {
    for (const state of states) {
      const room = maxRead - read;
      if (room <= 0) {
        partial.push(`${state ?? 'the rest'} not read`);
        continue;
      }
      const r = await readQueue(reader, q, { limit: room, maxBodyBytes: o.maxBodyBytes, ...(state !== undefined ? { state } : {}), ...(o.signal !== undefined ? { signal: o.signal } : {}) }, (messages) => {
        for (const m of messages) {
          const key = redriveKeyOf(m, o.rules);
          if (key === null || matched.has(key)) continue;
          const hit = mine.keys.get(key);
          if (hit === undefined) continue;
          matched.add(key);
          duplicates += hit.count;
          if (examples.length < MAX_TARGET_KEY_EXAMPLES) examples.push({ key: short(key, 200), dlqId: hit.dlqId, targetId: m.id });
        }
      });
      read += r.read;
      if (r.partial) partial.push(`${state !== undefined && q.kind === 'bullmq' ? `${state}: ` : ''}${r.partialReason ?? 'not every message was read'}`);
    }
  } catch (e) {
    rethrowCancel(e);
    return notChecked(`the check could not run: reading ${name} failed (${toErrorInfo(e).message})`);
  }
  const notKept = mine.notKept > 0 ? ` Only the first ${String(MAX_TARGET_KEYS_KEPT)} keys were compared: ${plural(mine.notKept, 'message', 'messages')} to move with another key ${mine.notKept === 1 ? 'was' : 'were'} not.` : '';
  const what = q.kind === 'bullmq' ? `${plural(read, 'job', 'jobs')} of ${name} that will still run${states.length > 0 ? ` (${states.join(', ')})` : ''}` : `${plural(read, 'message', 'messages')} read from ${name}`;
  const cut = partial.length > 0 ? ` The check covered the first ${String(read)}: ${partial.join(' ')}` : '';
  const noteText = `Idempotency keys: ${plural(t.count, 'message', 'messages')} to move to ${name}, ${what}: ${matched.size === 0 ? 'no key in both' : `${plural(matched.size, 'key', 'keys')} in both`}.${keyless}${notKept}${cut}`;
  const check: TargetKeysCheck = { ...base, checked: true, read, partial: partial.length > 0 || mine.notKept > 0, duplicates, examples, note: keyless !== '' || notKept !== '' || cut !== '' ? noteText : null };
  if (duplicates === 0) return { check, warning: null };
  const ex = examples[0];
  const eg = ex !== undefined ? ` (e.g. ${short(ex.key)}: DLQ ${short(ex.dlqId, 80)}, waiting as ${short(ex.targetId, 80)})` : '';
  const where = q.kind === 'redis-stream' ? `already in ${name}` : q.kind === 'bullmq' ? `already waiting to run in ${name}` : `already waiting in ${name}`;
  const warning =
    `${String(duplicates)} of the ${plural(t.count, 'message', 'messages')} this run would move to ${name} ${duplicates === 1 ? 'carries' : 'carry'} an idempotency key ${where}${eg}: moving ${duplicates === 1 ? 'it runs its operation' : 'them runs each operation'} twice unless ${name}'s consumer deduplicates on the key. --dedupe-by-key keeps one per key within the DLQ only.` +
    (partial.length > 0 ? ` (The check read the first ${String(read)} messages of ${name}: those after them were not compared, and may share keys too.)` : '');
  return { check, warning };
}
