/**
 * RabbitMQ audit rules. Facts come from the management API: queue arguments and the effective
 * policy definition (queue arguments win for the dead-letter exchange and routing key; the lower
 * value wins for TTL, max length and delivery limit — https://www.rabbitmq.com/docs/dlx,
 * https://www.rabbitmq.com/docs/parameters#policies), exchanges and bindings. With management
 * statistics off the consumer-less-DLQ rule reads the AMQP counts instead (ready and consumers from
 * a passive queue.declare; see `RabbitQueueFacts.amqpCounts`).
 */
import { DEFAULT_FACTOR } from '../tuning/recommend';
import { fmtMs, notApplicable, p99Text, notChecked, pass, type QueueRule, type RuleContext } from './rule-kit';
import type { AuditFix, RabbitQueueFacts, RuleOutcome, SourcedValue } from './types';

type RabbitRule = QueueRule<RabbitQueueFacts>;
const DLX_DOC = 'https://www.rabbitmq.com/docs/dlx';

function src<T>(s: SourcedValue<T> | null): string {
  if (!s) return 'unset';
  return `${String(s.value)} (${s.source === 'argument' ? 'queue argument' : s.source === 'policy' ? 'policy' : s.source === 'node' ? 'node setting' : 'default'})`;
}

/** Queues that are transient by design (exclusive, auto-delete, server-named reply queues) or streams: no dead-lettering expected. */
function transient(q: RabbitQueueFacts): boolean {
  return q.exclusive === true || q.autoDelete === true || q.name.startsWith('amq.');
}

/** Messages can be dropped by expiry or by the default overflow behaviour (drop-head) of a max length. */
function dropsByTtlOrLength(q: RabbitQueueFacts): boolean {
  return q.messageTtlMs !== null || ((q.maxLength !== null || q.maxLengthBytes !== null) && q.overflow === null);
}

function dlxFix(q: RabbitQueueFacts): { fix?: AuditFix } {
  if (!q.dlqCandidate) return {};
  return {
    fix: {
      kind: 'rabbitmq.add-dlx-policy',
      queueId: q.id,
      vhost: q.vhost,
      queueName: q.name,
      policyName: `qs-dlx-${q.name}`.slice(0, 255),
      deadLetterExchange: q.dlqCandidate.exchange,
      deadLetterRoutingKey: q.dlqCandidate.routingKey,
      deadLetterQueue: q.dlqCandidate.queue,
    },
  };
}

export const rabbitNoDlx: RabbitRule = {
  kind: 'rabbitmq',
  meta: {
    id: 'rabbitmq.no-dead-letter-exchange',
    broker: 'rabbitmq',
    scope: 'queue',
    severity: 'warning',
    title: 'No dead-letter exchange',
    why: 'Without a dead-letter exchange (queue argument or policy), a message a consumer rejects without requeue — or one that hits the delivery limit — is discarded instead of kept for inspection and redrive.',
    fix: 'Add a policy with "dead-letter-exchange" (and "dead-letter-routing-key") matching the queue, pointing at an exchange bound to a DLQ; policies can be changed later without redeclaring the queue.',
    docUrl: DLX_DOC,
    thresholds: {},
  },
  check(q, ctx) {
    if (q.type === 'stream' || transient(q) || q.isDeadLetterQueue) return notApplicable;
    if (q.deadLetterExchange) return pass();
    // The more specific rules report a missing DLX on a queue that drops by TTL, length or drop-head — unless
    // they are turned off or suppressed for it (expiry on purpose): rejected messages are still discarded, so say it here.
    const specific = [
      ...(dropsByTtlOrLength(q) ? ['rabbitmq.ttl-or-max-length-without-dlx'] : []),
      ...(q.overflow?.value === 'drop-head' ? ['rabbitmq.drop-head-without-dlx'] : []),
    ];
    if (specific.some((id) => ctx.reports(id, q))) return notApplicable;
    return {
      status: 'fail',
      message: `${q.name} has no dead-letter exchange (no x-dead-letter-exchange argument, no policy key): rejected messages are discarded.${specific.length > 0 ? ` (${specific.join(' / ')} is off or suppressed for it, but that covers only expiry and overflow.)` : ''}${q.dlqCandidate ? ` ${q.dlqCandidate.queue} exists and could receive them.` : ''}`,
      evidence: { arguments: q.arguments, policy: q.policy, effectivePolicyDefinition: q.policyDefinition },
      ...dlxFix(q),
    };
  },
};

export const rabbitDlxMissing: RabbitRule = {
  kind: 'rabbitmq',
  meta: {
    id: 'rabbitmq.dead-letter-exchange-missing',
    broker: 'rabbitmq',
    scope: 'queue',
    severity: 'error',
    title: 'Dead-letter exchange does not exist',
    why: 'RabbitMQ does not check that the dead-letter exchange exists: when it does not, dead letters are silently dropped.',
    fix: 'Declare the exchange the queue names (x-dead-letter-exchange / policy dead-letter-exchange) and bind a DLQ to it.',
    docUrl: DLX_DOC,
    thresholds: {},
  },
  check(q) {
    if (!q.deadLetterExchange) return notApplicable;
    if (!q.deadLetterRouting) return notChecked('exchanges and bindings could not be read');
    if (q.deadLetterRouting.exchangeExists) return pass();
    return {
      status: 'fail',
      message: `${q.name} dead-letters to exchange '${q.deadLetterExchange.value}' (${src(q.deadLetterExchange)}), which does not exist in vhost '${q.vhost}': dead letters are dropped.`,
      evidence: { deadLetterExchange: q.deadLetterExchange, vhost: q.vhost },
    };
  },
};

export const rabbitDlxUnroutable: RabbitRule = {
  kind: 'rabbitmq',
  meta: {
    id: 'rabbitmq.dead-letters-unroutable',
    broker: 'rabbitmq',
    scope: 'queue',
    severity: 'error',
    title: 'No binding routes the dead letters',
    why: 'When no binding of the dead-letter exchange matches the dead-letter routing key (or, without one, the keys messages arrive with), dead letters are silently dropped.',
    fix: 'Bind the DLQ to the dead-letter exchange with the dead-letter routing key (or set x-dead-letter-routing-key to a key that is bound).',
    docUrl: DLX_DOC,
    thresholds: {},
  },
  check(q) {
    if (!q.deadLetterExchange) return notApplicable;
    if (!q.deadLetterRouting) return notChecked('exchanges and bindings could not be read');
    const r = q.deadLetterRouting;
    if (!r.exchangeExists) return notApplicable; // rabbitmq.dead-letter-exchange-missing
    if (r.reachedQueues.length > 0) return pass(`dead letters reach ${r.reachedQueues.join(', ')}`);
    if (r.unresolved.length > 0 && r.problem === null) return notChecked(r.unresolved.join('; '));
    return {
      status: 'fail',
      message: `${r.problem ?? `no binding of '${r.exchange}' matches ${r.routingKeys.map((k) => `'${k}'`).join(', ')}: dead letters are dropped`}.`,
      evidence: { deadLetterExchange: q.deadLetterExchange, deadLetterRoutingKey: q.deadLetterRoutingKey, routingKeys: r.routingKeys },
    };
  },
};

export const rabbitQuorumNoDeliveryLimit: RabbitRule = {
  kind: 'rabbitmq',
  meta: {
    id: 'rabbitmq.quorum-no-delivery-limit',
    broker: 'rabbitmq',
    scope: 'queue',
    severity: 'warning',
    title: 'Quorum queue without a delivery limit',
    why: 'A quorum queue without a delivery limit (before RabbitMQ 4.0, which defaults to 20) redelivers a poison message that crashes its consumer forever.',
    fix: 'Set "delivery-limit" in a policy (or x-delivery-limit) to a small number such as 5, with a dead-letter exchange.',
    docUrl: 'https://www.rabbitmq.com/docs/quorum-queues#poison-message-handling',
    thresholds: {},
  },
  check(q, ctx) {
    if (q.type !== 'quorum' || q.isDeadLetterQueue) return notApplicable;
    if (q.deliveryLimit) return pass();
    const major = Number((ctx.rabbitServer?.version ?? '').split('.')[0]);
    if (Number.isFinite(major) && major >= 4) return pass('RabbitMQ 4.x applies a default delivery limit of 20');
    return { status: 'fail', message: `${q.name} is a quorum queue with no delivery limit${ctx.rabbitServer?.version ? ` on RabbitMQ ${ctx.rabbitServer.version}` : ''}: a poison message is redelivered forever.`, evidence: { deliveryLimit: null, version: ctx.rabbitServer?.version ?? null } };
  },
};

export const rabbitTtlOrLengthWithoutDlx: RabbitRule = {
  kind: 'rabbitmq',
  meta: {
    id: 'rabbitmq.ttl-or-max-length-without-dlx',
    broker: 'rabbitmq',
    scope: 'queue',
    severity: 'error',
    title: 'Message TTL or max length without a dead-letter exchange',
    why: 'Messages that expire (message TTL) or are pushed out by a max length (default overflow drop-head) are discarded silently when the queue has no dead-letter exchange.',
    fix: 'Add a dead-letter exchange (policy "dead-letter-exchange") bound to a DLQ, or set overflow "reject-publish" so publishers are told, or remove the TTL/limit.',
    docUrl: 'https://www.rabbitmq.com/docs/ttl',
    thresholds: {},
  },
  check(q) {
    if (q.type === 'stream' || transient(q)) return notApplicable;
    if (!dropsByTtlOrLength(q)) return notApplicable;
    if (q.deadLetterExchange) return pass();
    const parts: string[] = [];
    if (q.messageTtlMs) parts.push(`message TTL ${fmtMs(q.messageTtlMs.value)} (${q.messageTtlMs.source})`);
    if (q.maxLength) parts.push(`max length ${q.maxLength.value} (${q.maxLength.source})`);
    if (q.maxLengthBytes) parts.push(`max length ${q.maxLengthBytes.value} bytes (${q.maxLengthBytes.source})`);
    return {
      status: 'fail',
      message: `${q.name} has ${parts.join(' and ')} but no dead-letter exchange: ${q.messageTtlMs ? 'expired' : 'overflowing'} messages are dropped silently.`,
      evidence: { messageTtlMs: q.messageTtlMs, maxLength: q.maxLength, maxLengthBytes: q.maxLengthBytes, overflow: q.overflow },
      ...dlxFix(q),
    };
  },
};

export const rabbitDropHeadWithoutDlx: RabbitRule = {
  kind: 'rabbitmq',
  meta: {
    id: 'rabbitmq.drop-head-without-dlx',
    broker: 'rabbitmq',
    scope: 'queue',
    severity: 'error',
    title: 'overflow drop-head without a dead-letter exchange',
    why: 'With overflow drop-head the oldest messages are removed when the queue is full; without a dead-letter exchange they are lost silently.',
    fix: 'Add a dead-letter exchange bound to a DLQ, or use overflow "reject-publish" (publishers with confirms then see a nack).',
    docUrl: 'https://www.rabbitmq.com/docs/maxlength',
    thresholds: {},
  },
  check(q) {
    if (q.overflow?.value !== 'drop-head' || transient(q)) return notApplicable;
    if (q.deadLetterExchange) return pass();
    return {
      status: 'fail',
      message: `${q.name} has overflow drop-head (${q.overflow.source})${q.maxLength ? ` with max length ${q.maxLength.value}` : q.maxLengthBytes ? ` with max length ${q.maxLengthBytes.value} bytes` : ''} and no dead-letter exchange: the oldest messages are dropped silently when it is full.`,
      evidence: { overflow: q.overflow, maxLength: q.maxLength, maxLengthBytes: q.maxLengthBytes },
      ...dlxFix(q),
    };
  },
};

export const rabbitConsumerTimeout: RabbitRule = {
  kind: 'rabbitmq',
  meta: {
    id: 'rabbitmq.consumer-timeout-below-processing-time',
    broker: 'rabbitmq',
    scope: 'queue',
    severity: 'error',
    title: 'consumer_timeout below measured processing time',
    why: 'When a delivery stays unacknowledged longer than the consumer timeout, RabbitMQ closes the channel and requeues the message while the consumer may still be processing it: a duplicate, and a crash loop for slow jobs.',
    fix: 'Raise consumer_timeout (rabbitmq.conf, ms; per queue with x-consumer-timeout / a consumer-timeout policy on RabbitMQ ≥ 3.12) above several times the measured p99, or make processing faster.',
    docUrl: 'https://www.rabbitmq.com/docs/consumers#acknowledgement-timeout',
    thresholds: {
      // The factor `queuescope tune` recommends with (DEFAULT_FACTOR): with 1 a p99 of 20 min passed against
      // the 30 min default while tune --fail-on risk failed the same data.
      safetyFactor: { default: DEFAULT_FACTOR, min: 1, max: 100, description: 'the timeout must be at least this many times the measured p99 (default 3, the factor queuescope tune recommends with)' },
      nodeConsumerTimeoutMs: { default: 1_800_000, min: 1, description: "the node's consumer_timeout from rabbitmq.conf, ms (the management API does not expose it; default 1800000)" },
    },
    needsMeasurement: true,
  },
  check(q, ctx) {
    if (q.type === 'stream') return notApplicable;
    const m = ctx.measurement(q);
    if (!m || m.p99Ms === null) return notChecked('no measurement');
    const t: SourcedValue<number> = q.consumerTimeoutMs ?? ctx.rabbitServer?.consumerTimeoutMs ?? { value: ctx.threshold('nodeConsumerTimeoutMs'), source: 'node' };
    const factor = ctx.threshold('safetyFactor');
    const need = m.p99Ms * factor;
    const p99 = p99Text({ ...m, p99Ms: m.p99Ms });
    if (t.value >= need) return pass(`consumer timeout ${fmtMs(t.value)} (${t.source}) ≥ ${factor === 1 ? `the ${p99}` : `${String(factor)} × ${p99}`}`);
    return {
      status: 'fail',
      message: `Consumer timeout ${fmtMs(t.value)} (${t.source}) is below ${factor === 1 ? `the ${p99}` : `${String(factor)} × ${p99} = ${fmtMs(need)}`}${t.value < m.p99Ms ? ': more than 1% of deliveries outlive it, and RabbitMQ closes the channel and requeues them while they are still being processed' : ''}.`,
      evidence: { consumerTimeoutMs: t, p99Ms: m.p99Ms, p99Basis: m.p99Basis, meanMs: m.meanMs, safetyFactor: factor, measurementSource: m.source },
    };
  },
};

export const rabbitNonDurable: RabbitRule = {
  kind: 'rabbitmq',
  meta: {
    id: 'rabbitmq.non-durable-queue',
    broker: 'rabbitmq',
    scope: 'queue',
    severity: 'warning',
    title: 'Non-durable work queue',
    why: 'A non-durable queue and all its messages disappear when the broker restarts.',
    fix: 'Declare work queues durable (and publish persistent messages); quorum queues are always durable. A queue cannot be made durable in place: declare a new one and move the messages.',
    docUrl: 'https://www.rabbitmq.com/docs/queues#durability',
    thresholds: {},
  },
  check(q) {
    if (transient(q)) return notApplicable;
    if (q.durable === null) return notChecked('durability could not be read');
    if (q.durable) return pass();
    return { status: 'fail', message: `${q.name} is not durable: it and its ${q.messages ?? 'unknown number of'} messages are lost on a broker restart.`, evidence: { durable: false, exclusive: q.exclusive, autoDelete: q.autoDelete } };
  },
};

const STATS_OFF = "the broker's management statistics are off (management_agent.disable_metrics_collector = true)";
/** Where the counts came from, for notes and messages. */
const FROM_AMQP = `counts from AMQP (passive queue.declare), as ${STATS_OFF}: ready messages only, unacknowledged unknown, no growth rate`;

/**
 * {@link rabbitDlqNoConsumers} on a broker with statistics off, from the AMQP counts: the consumer
 * count and the ready count are exact at collection time, but unacknowledged messages and the
 * growth rate are unknown. So: a consumer or no ready message → pass; ready ≥ maxMessages →
 * finding (ready is a lower bound of the total); ready below minGrowingMessages → pass (the growth
 * branch could only be reached through unacknowledged messages, which the note says are unknown);
 * in between → not checked, because only the statistics' rate tells whether the DLQ is growing.
 */
function dlqCheckFromAmqp(q: RabbitQueueFacts, ctx: RuleContext): RuleOutcome {
  const c = q.amqpCounts;
  if (!c) {
    return notChecked(`${STATS_OFF}, so the management API gives no message or consumer counts, and ${q.amqpCountsNote ?? 'they were not read over AMQP'}; watch the DLQ with \`queuescope watch\` (it counts over AMQP) or turn the statistics on`);
  }
  const max = ctx.threshold('maxMessages');
  const minGrowing = ctx.threshold('minGrowingMessages');
  const ready = `${c.ready} ready message${c.ready === 1 ? '' : 's'}`;
  if (c.consumers > 0) return pass(`${c.consumers} consumer${c.consumers === 1 ? '' : 's'}; ${FROM_AMQP}`);
  if (c.ready === 0) return pass(`no consumers, 0 ready messages; ${FROM_AMQP}`);
  if (c.ready >= max) {
    return {
      status: 'fail',
      message: `${q.name} has no consumers and holds ${ready} (at least ${max}); ${FROM_AMQP}.`,
      evidence: { consumers: c.consumers, messagesReady: c.ready, messagesUnacknowledged: null, growthPerS: null, threshold: max, countsSource: 'amqp' },
    };
  }
  if (c.ready < minGrowing) return pass(`no consumers, ${ready}, below both thresholds; ${FROM_AMQP}`);
  return notChecked(`no consumers and ${ready}, below maxMessages ${max} but at least minGrowingMessages ${minGrowing}: whether it is growing needs the management statistics' rate; ${FROM_AMQP}`);
}

export const rabbitDlqNoConsumers: RabbitRule = {
  kind: 'rabbitmq',
  meta: {
    id: 'rabbitmq.dlq-growing-without-consumers',
    broker: 'rabbitmq',
    scope: 'queue',
    severity: 'warning',
    title: 'DLQ with no consumers keeps growing',
    why: 'A dead-letter queue nobody consumes or watches grows until memory or disk alarms block publishers, and the failures it holds go unnoticed.',
    fix: 'Alert on the first dead letter, inspect and redrive or discard them; cap the DLQ (max-length with overflow reject-publish) or give it a consumer that parks failures elsewhere.',
    docUrl: DLX_DOC,
    thresholds: {
      maxMessages: { default: 1000, min: 0, description: 'messages in a consumer-less DLQ at which it is reported even without growth' },
      minGrowingMessages: { default: 100, min: 0, description: 'messages from which a consumer-less DLQ that is growing (messages_details.rate > 0) is reported' },
    },
  },
  check(q, ctx) {
    if (!q.isDeadLetterQueue) return notApplicable;
    if (q.statsDisabled === true && (q.consumers === null || q.messages === null)) return dlqCheckFromAmqp(q, ctx);
    if (q.consumers === null || q.messages === null) return notChecked('queue statistics are not available yet (management API stats lag a few seconds)');
    if (q.consumers > 0 || q.messages === 0) return pass();
    const max = ctx.threshold('maxMessages');
    const growing = q.messagesGrowthPerS !== null && q.messagesGrowthPerS > 0 && q.messages >= ctx.threshold('minGrowingMessages');
    if (!growing && q.messages < max) return pass(`${q.messages} messages${q.messagesGrowthPerS !== null && q.messagesGrowthPerS > 0 ? '' : ', not growing'}`);
    return {
      status: 'fail',
      message: `${q.name} has no consumers and holds ${q.messages} messages${growing ? `, growing by ${q.messagesGrowthPerS?.toFixed(2) ?? '?'} per second` : ` (at least ${max})`}.`,
      evidence: { consumers: q.consumers, messages: q.messages, growthPerS: q.messagesGrowthPerS, threshold: max },
    };
  },
};

/** Every RabbitMQ rule, in report order. */
export const RABBITMQ_RULES: RabbitRule[] = [
  rabbitNoDlx,
  rabbitDlxMissing,
  rabbitDlxUnroutable,
  rabbitQuorumNoDeliveryLimit,
  rabbitTtlOrLengthWithoutDlx,
  rabbitDropHeadWithoutDlx,
  rabbitConsumerTimeout,
  rabbitNonDurable,
  rabbitDlqNoConsumers,
];

