/**
 * Pure RabbitMQ topology logic: effective queue settings (arguments vs policy), AMQP topic
 * matching, dead-letter link resolution through exchanges and bindings, and per-queue peek
 * capabilities. No I/O: the adapter feeds it what the management API returned.
 */
import type { DeadLetterTarget, PeekSideEffect, QueueCapabilities, QueueKind } from '../../../shared/domain';
import { encodeQueueId } from './queue-id';

/** Largest number of messages one peek holds (classic/quorum) or returns (streams). */
export const MAX_PEEK_WINDOW = 500;

/** A queue as read from `GET /api/queues/<vhost>` (fields missing there are null). */
export interface RawQueue {
  name: string;
  /** `classic`, `quorum`, `stream` (null when the API did not say). */
  type: string | null;
  durable: boolean | null;
  autoDelete: boolean | null;
  exclusive: boolean | null;
  state: string | null;
  /** Name of the applied user policy, null when none. */
  policy: string | null;
  arguments: Record<string, unknown>;
  /** `effective_policy_definition`: the merged definition of the applied policy / operator policy. */
  policyDefinition: Record<string, unknown>;
  messagesReady: number | null;
  messagesUnacknowledged: number | null;
  messages: number | null;
  consumers: number | null;
}

/** An exchange from `GET /api/exchanges/<vhost>`. */
export interface RawExchange {
  name: string;
  type: string;
  arguments: Record<string, unknown>;
}

/** A binding from `GET /api/bindings/<vhost>`. */
export interface RawBinding {
  source: string;
  destination: string;
  destinationType: 'queue' | 'exchange';
  routingKey: string;
  arguments: Record<string, unknown>;
}

/** Where an effective setting comes from. */
export type SettingSource = 'argument' | 'policy';

/** One effective queue setting and where it comes from. */
export interface Setting<T> {
  value: T;
  source: SettingSource;
}

/**
 * A queue's effective settings. RabbitMQ combines a queue argument and a policy key in one of two
 * ways (rabbit_amqqueue_process / rabbit_quorum_queue `args_policy_lookup` in 3.10):
 * - the argument wins: dead-letter exchange and routing key (https://www.rabbitmq.com/docs/dlx:
 *   "the one specified in arguments overrules the one specified in policy"), dead-letter strategy,
 *   overflow, queue mode, max age;
 * - the lower value wins: message TTL, expires, max length, max length bytes, delivery limit
 *   (https://www.rabbitmq.com/docs/ttl, https://www.rabbitmq.com/docs/maxlength).
 * Durations are ms; `null` = not set.
 */
export interface EffectiveSettings {
  deadLetterExchange: Setting<string> | null;
  deadLetterRoutingKey: Setting<string> | null;
  deadLetterStrategy: Setting<string> | null;
  overflow: Setting<string> | null;
  queueMode: Setting<string> | null;
  maxAge: Setting<string> | null;
  messageTtlMs: Setting<number> | null;
  expiresMs: Setting<number> | null;
  maxLength: Setting<number> | null;
  maxLengthBytes: Setting<number> | null;
  deliveryLimit: Setting<number> | null;
  /** `x-single-active-consumer` (argument only). */
  singleActiveConsumer: boolean;
  /** `x-max-priority` (argument only). */
  maxPriority: number | null;
}

type Combine = 'argument-wins' | 'lower-wins';
const STRING_SETTINGS: [keyof EffectiveSettings, string, string][] = [
  ['deadLetterExchange', 'x-dead-letter-exchange', 'dead-letter-exchange'],
  ['deadLetterRoutingKey', 'x-dead-letter-routing-key', 'dead-letter-routing-key'],
  ['deadLetterStrategy', 'x-dead-letter-strategy', 'dead-letter-strategy'],
  ['overflow', 'x-overflow', 'overflow'],
  ['queueMode', 'x-queue-mode', 'queue-mode'],
  ['maxAge', 'x-max-age', 'max-age'],
];
const NUMBER_SETTINGS: [keyof EffectiveSettings, string, string, Combine][] = [
  ['messageTtlMs', 'x-message-ttl', 'message-ttl', 'lower-wins'],
  ['expiresMs', 'x-expires', 'expires', 'lower-wins'],
  ['maxLength', 'x-max-length', 'max-length', 'lower-wins'],
  ['maxLengthBytes', 'x-max-length-bytes', 'max-length-bytes', 'lower-wins'],
  ['deliveryLimit', 'x-delivery-limit', 'delivery-limit', 'lower-wins'],
];

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}
function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** Computes a queue's {@link EffectiveSettings} from its arguments and effective policy definition. */
export function effectiveSettings(q: Pick<RawQueue, 'arguments' | 'policyDefinition'>): EffectiveSettings {
  const out: Record<string, unknown> = {};
  for (const [key, arg, pol] of STRING_SETTINGS) {
    const a = str(q.arguments[arg]);
    const p = str(q.policyDefinition[pol]);
    out[key] = a !== null ? { value: a, source: 'argument' } : p !== null ? { value: p, source: 'policy' } : null;
  }
  for (const [key, arg, pol] of NUMBER_SETTINGS) {
    const a = num(q.arguments[arg]);
    const p = num(q.policyDefinition[pol]);
    if (a === null && p === null) out[key] = null;
    else if (p === null || (a !== null && a <= p)) out[key] = { value: a, source: 'argument' };
    else out[key] = { value: p, source: 'policy' };
  }
  out.singleActiveConsumer = q.arguments['x-single-active-consumer'] === true;
  out.maxPriority = num(q.arguments['x-max-priority']);
  return out as unknown as EffectiveSettings;
}

/** The badge kind for a management API queue `type`. Unknown types show as classic. */
export function queueKind(type: string | null): QueueKind {
  if (type === 'quorum') return 'rabbitmq-quorum';
  if (type === 'stream') return 'rabbitmq-stream';
  return 'rabbitmq-classic';
}

/**
 * AMQP 0-9-1 topic matching as RabbitMQ implements it (rabbit_exchange_type_topic): routing keys
 * and binding keys are split on `.` into words (the empty key has no words); `*` matches exactly
 * one word, `#` matches zero or more words; every other word must be equal.
 */
export function topicMatches(bindingKey: string, routingKey: string): boolean {
  const p = bindingKey === '' ? [] : bindingKey.split('.');
  const k = routingKey === '' ? [] : routingKey.split('.');
  // reach[j]: the first i pattern words can match the first j key words.
  let reach: boolean[] = new Array<boolean>(k.length + 1).fill(false);
  reach[0] = true;
  for (const word of p) {
    const next: boolean[] = new Array<boolean>(k.length + 1).fill(false);
    if (word === '#') {
      let any = false;
      for (let j = 0; j <= k.length; j++) {
        any = any || reach[j] === true;
        next[j] = any;
      }
    } else {
      for (let j = 1; j <= k.length; j++) next[j] = reach[j - 1] === true && (word === '*' || word === k[j - 1]);
    }
    reach = next;
  }
  return reach[k.length] === true;
}

/** Everything dead-letter resolution needs about one vhost, indexed. Build with {@link buildTopology}. */
export interface Topology {
  vhost: string;
  queues: Map<string, RawQueue>;
  exchanges: Map<string, RawExchange>;
  /** Bindings by source exchange. */
  bySource: Map<string, RawBinding[]>;
  /** Bindings whose destination is a queue, by queue name. */
  byQueue: Map<string, RawBinding[]>;
}

/** Indexes one vhost's queues, exchanges and bindings for {@link resolveDeadLetterTargets}. */
export function buildTopology(vhost: string, queues: Iterable<RawQueue>, exchanges: Iterable<RawExchange>, bindings: Iterable<RawBinding>): Topology {
  const bySource = new Map<string, RawBinding[]>();
  const byQueue = new Map<string, RawBinding[]>();
  const push = (m: Map<string, RawBinding[]>, k: string, b: RawBinding): void => {
    const l = m.get(k);
    if (l) l.push(b);
    else m.set(k, [b]);
  };
  for (const b of bindings) {
    push(bySource, b.source, b);
    if (b.destinationType === 'queue') push(byQueue, b.destination, b);
  }
  return {
    vhost,
    queues: new Map([...queues].map((q) => [q.name, q])),
    exchanges: new Map([...exchanges].map((e) => [e.name, e])),
    bySource,
    byQueue,
  };
}

interface RouteResult {
  queues: Set<string>;
  /** Why part of the routing could not be resolved statically. */
  unresolved: string[];
  notes: string[];
}

function route(topo: Topology, exchange: string, key: string, out: RouteResult, seen: Set<string>): void {
  const mark = `${exchange}\u0000${key}`;
  if (seen.has(mark)) return;
  seen.add(mark);
  if (exchange === '') {
    if (topo.queues.has(key)) out.queues.add(key);
    return;
  }
  const ex = topo.exchanges.get(exchange);
  if (!ex) {
    out.notes.push(`exchange '${exchange}' does not exist`);
    return;
  }
  let matcher: (b: RawBinding) => boolean;
  switch (ex.type) {
    case 'direct':
      matcher = (b) => b.routingKey === key;
      break;
    case 'fanout':
      matcher = () => true;
      break;
    case 'topic':
      matcher = (b) => topicMatches(b.routingKey, key);
      break;
    case 'headers':
      out.unresolved.push(`headers exchange '${exchange}' routes by message headers, which cannot be resolved statically`);
      return;
    default:
      out.unresolved.push(`exchange '${exchange}' has type '${ex.type}', whose routing cannot be resolved statically`);
      return;
  }
  let matched = 0;
  for (const b of topo.bySource.get(exchange) ?? []) {
    if (!matcher(b)) continue;
    matched++;
    if (b.destinationType === 'queue') out.queues.add(b.destination);
    else route(topo, b.destination, key, out, seen);
  }
  const ae = str(ex.arguments['alternate-exchange']);
  if (matched === 0 && ae !== null) {
    out.notes.push(`unroutable at '${exchange}', so sent to its alternate exchange '${ae}'`);
    route(topo, ae, key, out, seen);
  }
}

/**
 * Routing keys a queue's messages can arrive with, for dead-lettering without a dead-letter
 * routing key (RabbitMQ then keeps each message's original routing key): the queue's name (the
 * default exchange) and the keys of its direct/topic bindings without wildcards. `partial` is true
 * when the queue also has bindings (fanout, headers, wildcard topic) whose keys cannot be known.
 */
export function arrivalKeys(q: RawQueue, topo: Topology): { keys: string[]; partial: boolean } {
  const keys = new Set<string>([q.name]);
  let partial = false;
  for (const b of topo.byQueue.get(q.name) ?? []) {
    if (b.source === '') continue;
    const ex = topo.exchanges.get(b.source);
    if ((ex?.type === 'direct' || ex?.type === 'topic') && !/(^|\.)[*#](\.|$)/.test(b.routingKey)) keys.add(b.routingKey);
    else partial = true;
  }
  return { keys: [...keys], partial };
}

function describeLink(q: RawQueue, s: EffectiveSettings): string {
  const dlx = s.deadLetterExchange;
  if (!dlx) return '';
  const ex = dlx.value === '' ? 'the default exchange' : `'${dlx.value}'`;
  const parts: string[] = [];
  const rk = s.deadLetterRoutingKey;
  const overrides = (arg: string, pol: string): string => (Object.hasOwn(q.policyDefinition, pol) && Object.hasOwn(q.arguments, arg) ? '; queue arguments override the policy' : '');
  if (dlx.source === 'argument') parts.push(`x-dead-letter-exchange ${ex} (queue argument${overrides('x-dead-letter-exchange', 'dead-letter-exchange')})`);
  else parts.push(`policy '${q.policy ?? '?'}' dead-letter-exchange ${ex}`);
  if (rk) {
    if (rk.source === 'argument') parts.push(`routing key '${rk.value}' (x-dead-letter-routing-key argument${overrides('x-dead-letter-routing-key', 'dead-letter-routing-key')})`);
    else parts.push(`routing key '${rk.value}' (policy '${q.policy ?? '?'}')`);
  }
  return parts.join(', ');
}

/**
 * Resolves a queue's dead-letter links (https://www.rabbitmq.com/docs/dlx) through its dead-letter
 * exchange and the vhost's bindings to the queues dead letters reach. Returns no links when the
 * queue has no dead-letter exchange; otherwise one link per reached queue, plus a link with
 * `queueId: null` when part of the routing cannot be resolved statically (headers exchanges), or a
 * single link with a `problem` when dead letters are dropped (missing exchange, no matching binding).
 * `maxReceiveCount` is the effective delivery limit (quorum queues), else null.
 */
export function resolveDeadLetterTargets(q: RawQueue, topo: Topology): DeadLetterTarget[] {
  const s = effectiveSettings(q);
  const dlx = s.deadLetterExchange;
  if (!dlx) return [];
  let via = describeLink(q, s);
  const limit = s.deliveryLimit?.value ?? null;
  const base = { maxReceiveCount: limit };
  if (dlx.value !== '' && !topo.exchanges.has(dlx.value)) {
    return [{ queueId: null, queueName: null, via, problem: `exchange '${dlx.value}' does not exist in vhost '${topo.vhost}': dead letters are dropped`, ...base }];
  }
  const out: RouteResult = { queues: new Set(), unresolved: [], notes: [] };
  let keysText: string;
  if (s.deadLetterRoutingKey) {
    route(topo, dlx.value, s.deadLetterRoutingKey.value, out, new Set());
    keysText = `routing key '${s.deadLetterRoutingKey.value}'`;
  } else {
    const { keys, partial } = arrivalKeys(q, topo);
    for (const k of keys) route(topo, dlx.value, k, out, new Set());
    keysText = `the routing keys its messages arrive with (${keys.map((k) => `'${k}'`).join(', ')})`;
    via += `; no dead-letter routing key is set, so each message keeps its original routing key (resolved for ${keys.map((k) => `'${k}'`).join(', ')}${partial ? '; messages arriving through fanout, headers or wildcard bindings may route elsewhere' : ''})`;
  }
  const notes = [...new Set(out.notes)].filter((n) => !n.startsWith(`exchange '${dlx.value}'`));
  if (notes.length > 0) via += `; ${notes.join('; ')}`;
  const targets: DeadLetterTarget[] = [];
  for (const name of [...out.queues].sort()) {
    const t: DeadLetterTarget = { queueId: encodeQueueId({ vhost: topo.vhost, name }), queueName: name, via, ...base };
    if (name === q.name) t.problem = 'dead letters are routed back into this same queue (a cycle); RabbitMQ drops a message that completes a cycle without being rejected';
    targets.push(t);
  }
  for (const u of [...new Set(out.unresolved)]) targets.push({ queueId: null, queueName: null, via: `${via}; ${u}`, ...base });
  if (targets.length === 0) {
    const ex = dlx.value === '' ? undefined : topo.exchanges.get(dlx.value);
    const problem =
      dlx.value === ''
        ? `the default exchange has no queue named by ${keysText}: dead letters are dropped`
        : `exchange '${dlx.value}' (${ex?.type ?? 'unknown type'}) has no binding that matches ${keysText}: dead letters are dropped`;
    targets.push({ queueId: null, queueName: null, via, problem, ...base });
  }
  return targets;
}

/** Whether a queue name reads like a dead-letter queue (`orders.dlq`, `orders-dead-letter`, `dlq.x`). */
export function looksLikeDeadLetterQueue(name: string): boolean {
  return /(^|[^a-z0-9])(dlq|dlx|dead[-_. ]?letters?|deadletters?)([^a-z0-9]|$)/i.test(name);
}

const CLASSIC_EFFECTS: PeekSideEffect[] = [
  { kind: 'temporarily-invisible', description: 'While a peek runs (usually well under a second) the peeked messages are held unacknowledged, so other consumers cannot receive them.' },
  { kind: 'redelivered-flag', description: 'Peeked messages are requeued with redelivered=true, so consumers see them as redeliveries.' },
  { kind: 'reorders', description: 'Requeued messages go back to their positions, but a consumer active during the peek can receive later messages first.' },
];

/**
 * What RabbitMQ does with a message a queue dead-letters, for sentences ("a message … is <fate>"):
 * `dead-lettered to exchange 'x'` (with `, routing key 'k'` when a dead-letter routing key is set;
 * `the default exchange` for `''`) when `settings` have a dead-letter exchange, from an argument
 * or a policy; `dropped (no dead-letter exchange is configured)` only when they have none
 * (https://www.rabbitmq.com/docs/dlx). Whether the exchange then routes the message to a queue is
 * not checked here (see {@link resolveDeadLetterTargets}).
 */
export function deadLetterFate(settings: Pick<EffectiveSettings, 'deadLetterExchange' | 'deadLetterRoutingKey'> | null): string {
  const dlx = settings?.deadLetterExchange?.value;
  if (dlx === undefined) return 'dropped (no dead-letter exchange is configured)';
  const rk = settings?.deadLetterRoutingKey?.value;
  return `dead-lettered to ${dlx === '' ? 'the default exchange' : `exchange '${dlx}'`}${rk === undefined ? '' : `, routing key '${rk}'`}`;
}

/**
 * Peek capabilities of a queue. Classic and quorum queues have no non-destructive read, so a peek
 * gets messages unacknowledged and requeues them (side effects declared); quorum queues also count
 * each peek as a delivery, and with a delivery limit a peek can dead-letter a message (so
 * `peekMayDeadLetter` is true). Streams are read non-destructively from an offset and page with
 * offset cursors. `kind === null` (type unknown, e.g. the management API is unavailable) declares
 * the worst case and `peekMayDeadLetter: null`.
 */
export function capabilitiesFor(kind: QueueKind | null, settings: EffectiveSettings | null): QueueCapabilities {
  if (kind === 'rabbitmq-stream') {
    return { canPeekNonDestructively: true, peekSideEffects: [], peekMayDeadLetter: false, canPageFromCursor: true, maxPeekWindow: MAX_PEEK_WINDOW, peekStates: [] };
  }
  const effects = [...CLASSIC_EFFECTS];
  let mayDeadLetter: boolean | null = false;
  if (kind === 'rabbitmq-quorum' || kind === null) {
    effects.push({ kind: 'delivery-count', description: 'Each peek counts as a delivery on a quorum queue: x-delivery-count +1.' });
    effects[2] = { kind: 'reorders', description: 'Quorum queues (RabbitMQ 3.10) can put requeued messages behind later ones, so a peek can change the order.' };
  }
  if (kind === 'rabbitmq-quorum') {
    const limit = settings?.deliveryLimit?.value ?? null;
    if (limit !== null) {
      effects.push({
        kind: 'may-dead-letter',
        description: `A message at the delivery limit is ${deadLetterFate(settings)} when a peek requeues it (x-delivery-limit=${limit} allows ${limit + 1} deliver${limit === 0 ? 'y' : 'ies'}).`,
      });
      mayDeadLetter = true;
    }
  } else if (kind === null) {
    effects.push({ kind: 'may-dead-letter', description: 'The queue type is unknown (the management API did not answer): if it is a quorum queue with a delivery limit, a peek can dead-letter messages.' });
    mayDeadLetter = null;
  }
  return { canPeekNonDestructively: false, peekSideEffects: effects, peekMayDeadLetter: mayDeadLetter, canPageFromCursor: false, maxPeekWindow: MAX_PEEK_WINDOW, peekStates: [], heldByConsumers: 'unacknowledged' };
}

/**
 * The plain-JSON `config` shown in the detail panel and read by audit rules: type, durability,
 * state, the applied policy, raw arguments and policy definition, and every effective setting
 * with its source (`sources.<field>` = `argument` | `policy`). Durations are ms.
 */
export function queueConfig(q: RawQueue, s: EffectiveSettings): Record<string, unknown> {
  const sources: Record<string, SettingSource> = {};
  const val = <T>(k: keyof EffectiveSettings, st: Setting<T> | null): T | null => {
    if (st) sources[k] = st.source;
    return st ? st.value : null;
  };
  return {
    type: q.type,
    durable: q.durable,
    autoDelete: q.autoDelete,
    exclusive: q.exclusive,
    state: q.state,
    policy: q.policy,
    arguments: q.arguments,
    effectivePolicyDefinition: q.policyDefinition,
    deadLetterExchange: val('deadLetterExchange', s.deadLetterExchange),
    deadLetterRoutingKey: val('deadLetterRoutingKey', s.deadLetterRoutingKey),
    deadLetterStrategy: val('deadLetterStrategy', s.deadLetterStrategy),
    messageTtlMs: val('messageTtlMs', s.messageTtlMs),
    expiresMs: val('expiresMs', s.expiresMs),
    maxLength: val('maxLength', s.maxLength),
    maxLengthBytes: val('maxLengthBytes', s.maxLengthBytes),
    overflow: val('overflow', s.overflow),
    deliveryLimit: val('deliveryLimit', s.deliveryLimit),
    queueMode: val('queueMode', s.queueMode),
    maxAge: val('maxAge', s.maxAge),
    singleActiveConsumer: s.singleActiveConsumer,
    maxPriority: s.maxPriority,
    sources,
  };
}
