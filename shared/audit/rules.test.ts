import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { defaultProjectConfig, type AuditConfig } from '../config/project-config';
import { AUDIT_RULES, RULE_CATALOG } from './catalog';
import { checkAuditConfig, evaluateAudit, failsThreshold } from './evaluate';
import { parseMeasurements } from './measurements';
import type { AuditFacts, BullmqQueueFacts, Measurements, QueueFacts, RabbitQueueFacts, RedisServerFacts, SqsQueueFacts, StreamFacts } from './types';

function sqs(over: Partial<SqsQueueFacts> = {}): SqsQueueFacts {
  return {
    kind: 'sqs',
    id: 'sqs:http://x/000/work',
    name: 'work',
    url: 'http://x/000/work',
    arn: 'arn:aws:sqs:us-east-1:000:work',
    fifo: false,
    contentBasedDeduplication: null,
    visibilityTimeoutS: 30,
    retentionS: 345_600,
    receiveWaitTimeS: 20,
    maximumMessageSize: 262_144,
    depth: 0,
    inFlight: 0,
    redrivePolicy: { deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000:work-dlq', maxReceiveCount: 5 },
    redrivePolicyError: null,
    redriveAllowPolicy: null,
    deadLetterQueue: { arn: 'arn:aws:sqs:us-east-1:000:work-dlq', name: 'work-dlq', exists: true, fifo: false, retentionS: 1_209_600, redriveAllowPolicy: null, depth: 0 },
    deadLetterSources: [],
    isDeadLetterQueue: false,
    sample: null,
    sampleNote: 'message sampling is off',
    dlqCandidate: null,
    ...over,
  };
}

function rabbit(over: Partial<RabbitQueueFacts> = {}): RabbitQueueFacts {
  return {
    kind: 'rabbitmq',
    id: 'rabbitmq:%2F/work',
    vhost: '/',
    name: 'work',
    type: 'classic',
    durable: true,
    autoDelete: false,
    exclusive: false,
    policy: null,
    arguments: {},
    policyDefinition: {},
    deadLetterExchange: { value: 'dlx', source: 'argument' },
    deadLetterRoutingKey: { value: 'work.dlq', source: 'argument' },
    messageTtlMs: null,
    maxLength: null,
    maxLengthBytes: null,
    overflow: null,
    deliveryLimit: null,
    consumerTimeoutMs: { value: 1_800_000, source: 'default' },
    deadLetterRouting: { exchange: 'dlx', exchangeExists: true, routingKeys: ['work.dlq'], reachedQueues: ['work.dlq'], unresolved: [], problem: null },
    consumers: 1,
    messages: 0,
    messagesGrowthPerS: 0,
    deadLetterSources: [],
    isDeadLetterQueue: false,
    dlqCandidate: null,
    ...over,
  };
}

function redisServer(over: Partial<RedisServerFacts> = {}): RedisServerFacts {
  return { kind: 'redis-server', label: 'redis://127.0.0.1:6379', version: '7.0.15', holdsQueues: true, maxmemoryPolicy: 'noeviction', save: '3600 1', appendonly: 'yes', configError: null, ...over };
}

function bull(over: Partial<BullmqQueueFacts> = {}): BullmqQueueFacts {
  return { kind: 'bullmq', id: 'bullmq:bull:jobs', name: 'jobs', prefix: 'bull', jobsRead: 10, removeOnFail: [{ value: null, jobs: 10, exampleJobId: '1' }], failedCount: 0, ...over };
}

function stream(over: Partial<StreamFacts> = {}): StreamFacts {
  return {
    kind: 'redis-stream',
    id: 'stream:events',
    name: 'events',
    length: 10,
    entriesAdded: 10,
    maxDeletedEntryId: '0-0',
    firstEntryId: '1-0',
    groups: [{ name: 'g', pending: 1, consumers: 1, pendingSample: [{ id: '5-0', consumer: 'c1', idleMs: 1000, deliveries: 1 }], pendingDeleted: [] }],
    ...over,
  };
}

function run(queues: QueueFacts[], opts: { config?: Partial<AuditConfig>; measurements?: Measurements; servers?: AuditFacts['servers'] } = {}): ReturnType<typeof evaluateAudit> {
  const config = { ...defaultProjectConfig().audit, ...opts.config };
  const broker = queues[0]?.kind === 'sqs' ? 'sqs' : queues[0]?.kind === 'rabbitmq' ? 'rabbitmq' : 'redis';
  return evaluateAudit([{ broker, label: 'test', servers: opts.servers ?? [], queues, notes: [] }], { config, measurements: opts.measurements ?? new Map(), now: 0 });
}

const ids = (r: ReturnType<typeof evaluateAudit>): string[] => r.findings.map((f) => `${f.target}:${f.ruleId}`).sort();
const m = (name: string, p99Ms: number): Measurements => new Map([[name, { p99Ms, p99Basis: 'measured', meanMs: p99Ms / 3, source: 'file' }]]);

describe('rule catalog', () => {
  it('every rule has id, broker, severity, why, fix and an https doc link; ids are unique', () => {
    const seen = new Set<string>();
    for (const r of AUDIT_RULES) {
      expect(r.meta.id).toMatch(new RegExp(`^${r.meta.broker}\\.[a-z0-9-]+$`));
      expect(seen.has(r.meta.id)).toBe(false);
      seen.add(r.meta.id);
      expect(['error', 'warning', 'info']).toContain(r.meta.severity);
      expect(r.meta.why.length).toBeGreaterThan(40);
      expect(r.meta.fix.length).toBeGreaterThan(20);
      expect(r.meta.docUrl).toMatch(/^https:\/\//);
    }
    expect(seen.size).toBe(27);
  });
});

describe('SQS rules', () => {
  it('a well-configured queue passes every rule it can check', () => {
    const r = run([sqs()]);
    expect(r.findings).toEqual([]);
    expect(r.checks.filter((c) => c.status === 'not-checked').map((c) => c.ruleId)).toEqual(['sqs.visibility-timeout-below-processing-time', 'sqs.payload-near-max-size']);
    expect(r.checks.find((c) => c.ruleId === 'sqs.visibility-timeout-below-processing-time')?.note).toBe('not checked: no measurement');
  });

  it('no RedrivePolicy: error, with a one-click fix when a DLQ candidate exists', () => {
    const r = run([sqs({ redrivePolicy: null, deadLetterQueue: null, dlqCandidate: { name: 'work-dlq', url: 'http://x/000/work-dlq', arn: 'arn:dlq' } })]);
    expect(ids(r)).toEqual(['work:sqs.no-redrive-policy']);
    expect(r.findings[0]?.severity).toBe('error');
    expect(r.findings[0]?.autoFix).toMatchObject({ kind: 'sqs.set-redrive-policy', deadLetterTargetArn: 'arn:dlq', maxReceiveCount: 5 });
  });

  it('a DLQ itself does not need a RedrivePolicy, but is reported when not empty', () => {
    const r = run([sqs({ name: 'work-dlq', redrivePolicy: null, deadLetterQueue: null, isDeadLetterQueue: true, deadLetterSources: ['work'], depth: 3 })]);
    expect(ids(r)).toEqual(['work-dlq:sqs.dlq-not-empty']);
    expect(r.findings[0]?.message).toContain('3 dead letters');
  });

  it('maxReceiveCount 1 and 100 are reported; 5 passes', () => {
    const dlq = sqs().deadLetterQueue;
    expect(ids(run([sqs({ redrivePolicy: { deadLetterTargetArn: 'a', maxReceiveCount: 1 }, deadLetterQueue: dlq })]))).toEqual(['work:sqs.max-receive-count-too-low']);
    expect(ids(run([sqs({ redrivePolicy: { deadLetterTargetArn: 'a', maxReceiveCount: 100 }, deadLetterQueue: dlq })]))).toEqual(['work:sqs.max-receive-count-too-high']);
    expect(ids(run([sqs({ redrivePolicy: { deadLetterTargetArn: 'a', maxReceiveCount: 100 }, deadLetterQueue: dlq })], { config: { thresholds: { 'sqs.max-receive-count-too-high': { max: 200 } } } }))).toEqual([]);
  });

  it('standard DLQ retention must exceed the source; FIFO is exempt', () => {
    const short = sqs({ deadLetterQueue: { ...sqs().deadLetterQueue!, retentionS: 345_600 } });
    expect(ids(run([short]))).toEqual(['work:sqs.dlq-retention-too-short']);
    expect(ids(run([{ ...short, fifo: true, contentBasedDeduplication: true, deadLetterQueue: { ...short.deadLetterQueue!, fifo: true } }]))).toEqual([]);
  });

  it('type mismatch, missing DLQ and a denying RedriveAllowPolicy', () => {
    expect(ids(run([sqs({ fifo: true, contentBasedDeduplication: true })]))).toEqual(['work:sqs.dlq-type-mismatch']);
    expect(ids(run([sqs({ deadLetterQueue: { ...sqs().deadLetterQueue!, exists: false } })]))).toEqual(['work:sqs.dead-letter-queue-missing']);
    expect(ids(run([sqs({ deadLetterQueue: { ...sqs().deadLetterQueue!, redriveAllowPolicy: { redrivePermission: 'denyAll', sourceQueueArns: [] } } })]))).toEqual(['work:sqs.redrive-allow-policy-denies-source']);
    expect(ids(run([sqs({ deadLetterQueue: { ...sqs().deadLetterQueue!, redriveAllowPolicy: { redrivePermission: 'byQueue', sourceQueueArns: ['arn:other'] } } })]))).toEqual(['work:sqs.redrive-allow-policy-denies-source']);
    expect(ids(run([sqs({ deadLetterQueue: { ...sqs().deadLetterQueue!, redriveAllowPolicy: { redrivePermission: 'byQueue', sourceQueueArns: ['arn:aws:sqs:us-east-1:000:work'] } } })]))).toEqual([]);
  });

  it('visibility timeout vs safety × measured p99', () => {
    expect(ids(run([sqs({ visibilityTimeoutS: 30 })], { measurements: m('work', 12_000) }))).toEqual(['work:sqs.visibility-timeout-below-processing-time']);
    expect(ids(run([sqs({ visibilityTimeoutS: 36 })], { measurements: m('work', 12_000) }))).toEqual([]);
    expect(ids(run([sqs({ visibilityTimeoutS: 30 })], { measurements: m('work', 12_000), config: { thresholds: { 'sqs.visibility-timeout-below-processing-time': { safetyFactor: 2 } } } }))).toEqual([]);
  });

  it('short polling, payload size and FIFO deduplication (sampled)', () => {
    expect(ids(run([sqs({ receiveWaitTimeS: 0 })]))).toEqual(['work:sqs.short-polling']);
    expect(run([sqs({ receiveWaitTimeS: 0 })]).findings[0]?.severity).toBe('info');
    expect(ids(run([sqs({ sample: { messages: 4, largestBytes: 250_000, withoutDeduplicationId: 0 } })]))).toEqual(['work:sqs.payload-near-max-size']);
    expect(ids(run([sqs({ sample: { messages: 4, largestBytes: 2_000, withoutDeduplicationId: 0 } })]))).toEqual([]);
    const fifo = sqs({ fifo: true, contentBasedDeduplication: false, deadLetterQueue: { ...sqs().deadLetterQueue!, fifo: true } });
    expect(ids(run([{ ...fifo, sample: { messages: 4, largestBytes: 10, withoutDeduplicationId: 2 } }]))).toEqual(['work:sqs.fifo-messages-without-deduplication-id']);
    expect(ids(run([{ ...fifo, sample: { messages: 4, largestBytes: 10, withoutDeduplicationId: 0 } }]))).toEqual([]);
    expect(run([fifo]).checks.find((c) => c.ruleId === 'sqs.fifo-messages-without-deduplication-id')?.note).toBe('not checked: message sampling is off');
  });
});

describe('RabbitMQ rules', () => {
  it('a queue dead-lettering to a bound DLQ passes', () => {
    expect(ids(run([rabbit()]))).toEqual([]);
  });

  it('no DLX: warning with a fix to an existing DLQ candidate', () => {
    const r = run([rabbit({ deadLetterExchange: null, deadLetterRoutingKey: null, deadLetterRouting: null, dlqCandidate: { queue: 'work.dlq', exchange: '', routingKey: 'work.dlq' } })]);
    expect(ids(r)).toEqual(['work:rabbitmq.no-dead-letter-exchange']);
    expect(r.findings[0]?.autoFix).toMatchObject({ kind: 'rabbitmq.add-dlx-policy', deadLetterExchange: '', deadLetterRoutingKey: 'work.dlq', deadLetterQueue: 'work.dlq' });
  });

  it('missing DLX and unroutable dead letters are errors', () => {
    expect(ids(run([rabbit({ deadLetterRouting: { exchange: 'dlx', exchangeExists: false, routingKeys: ['x'], reachedQueues: [], unresolved: [], problem: 'gone' } })]))).toEqual(['work:rabbitmq.dead-letter-exchange-missing']);
    const r = run([rabbit({ deadLetterRouting: { exchange: 'dlx', exchangeExists: true, routingKeys: ['x'], reachedQueues: [], unresolved: [], problem: "exchange 'dlx' (direct) has no binding that matches routing key 'x': dead letters are dropped" } })]);
    expect(ids(r)).toEqual(['work:rabbitmq.dead-letters-unroutable']);
    expect(r.findings[0]?.message).toContain("no binding that matches routing key 'x'");
  });

  it('quorum without a delivery limit (3.x) fails, 4.x passes, DLQs are exempt', () => {
    const q = rabbit({ type: 'quorum' });
    const s = (version: string): AuditFacts['servers'] => [{ kind: 'rabbitmq-server', label: 'r', version, consumerTimeoutMs: null }];
    expect(ids(run([q], { servers: s('3.10.8') }))).toEqual(['work:rabbitmq.quorum-no-delivery-limit']);
    expect(ids(run([q], { servers: s('4.0.1') }))).toEqual([]);
    expect(ids(run([{ ...q, deliveryLimit: { value: 5, source: 'policy' } }], { servers: s('3.10.8') }))).toEqual([]);
  });

  it('TTL / max length / drop-head without DLX are errors; reject-publish max length is fine', () => {
    const none = { deadLetterExchange: null, deadLetterRoutingKey: null, deadLetterRouting: null };
    expect(ids(run([rabbit({ ...none, messageTtlMs: { value: 60_000, source: 'argument' } })]))).toEqual(['work:rabbitmq.ttl-or-max-length-without-dlx']);
    expect(ids(run([rabbit({ ...none, maxLength: { value: 10, source: 'policy' } })]))).toEqual(['work:rabbitmq.ttl-or-max-length-without-dlx']);
    expect(ids(run([rabbit({ ...none, maxLength: { value: 10, source: 'policy' }, overflow: { value: 'drop-head', source: 'argument' } })]))).toEqual(['work:rabbitmq.drop-head-without-dlx']);
    expect(ids(run([rabbit({ ...none, maxLength: { value: 10, source: 'policy' }, overflow: { value: 'reject-publish', source: 'argument' } })]))).toEqual(['work:rabbitmq.no-dead-letter-exchange']);
  });

  it('a TTL queue without DLX whose TTL finding is suppressed or off still reports the missing DLX (rejected messages are discarded too)', () => {
    const ttl = rabbit({ deadLetterExchange: null, deadLetterRoutingKey: null, deadLetterRouting: null, messageTtlMs: { value: 3_600_000, source: 'argument' } });
    const suppressed = run([ttl], { config: { suppress: [{ rule: 'rabbitmq.ttl-or-max-length-without-dlx', queue: 'work', reason: 'notifications expire on purpose' }] } });
    expect(suppressed.findings.map((f) => [f.ruleId, f.suppressed !== null]).sort()).toEqual([
      ['rabbitmq.no-dead-letter-exchange', false],
      ['rabbitmq.ttl-or-max-length-without-dlx', true],
    ]);
    expect(suppressed.findings.find((f) => f.ruleId === 'rabbitmq.no-dead-letter-exchange')?.message).toContain('rejected messages are discarded. (rabbitmq.ttl-or-max-length-without-dlx is off or suppressed for it, but that covers only expiry and overflow.)');
    const off = run([ttl], { config: { severity: { 'rabbitmq.ttl-or-max-length-without-dlx': 'off' } } });
    expect(ids(off)).toEqual(['work:rabbitmq.no-dead-letter-exchange']);
    // A suppression of another queue changes nothing here.
    expect(ids(run([ttl], { config: { suppress: [{ rule: 'rabbitmq.ttl-or-max-length-without-dlx', queue: 'other', reason: 'not this one' }] } }))).toEqual(['work:rabbitmq.ttl-or-max-length-without-dlx']);
  });

  it('consumer timeout vs measured p99; non-durable; consumer-less growing DLQ', () => {
    expect(ids(run([rabbit()], { measurements: m('work', 2_000_000) }))).toEqual(['work:rabbitmq.consumer-timeout-below-processing-time']);
    expect(ids(run([rabbit()], { measurements: m('work', 2_000) }))).toEqual([]);
    // A p99 of 20 min against the 30 min default: below 3 × p99, as tune --fail-on risk says.
    const slow = run([rabbit()], { measurements: m('work', 1_200_000) });
    expect(ids(slow)).toEqual(['work:rabbitmq.consumer-timeout-below-processing-time']);
    expect(slow.findings[0]?.message).toBe('Consumer timeout 30 min (default) is below 3 × measured p99 20 min = 60 min.');
    expect(ids(run([rabbit()], { measurements: m('work', 1_200_000), config: { thresholds: { 'rabbitmq.consumer-timeout-below-processing-time': { safetyFactor: 1 } } } }))).toEqual([]);
    expect(ids(run([rabbit({ durable: false })]))).toEqual(['work:rabbitmq.non-durable-queue']);
    expect(ids(run([rabbit({ durable: false, exclusive: true })]))).toEqual([]);
    const dlq = rabbit({ name: 'work.dlq', isDeadLetterQueue: true, deadLetterExchange: null, deadLetterRouting: null, deadLetterRoutingKey: null, consumers: 0, messages: 200 });
    expect(ids(run([{ ...dlq, messagesGrowthPerS: 0.5 }]))).toEqual(['work.dlq:rabbitmq.dlq-growing-without-consumers']);
    expect(ids(run([{ ...dlq, messages: 20, messagesGrowthPerS: 0.5 }]))).toEqual([]);
    expect(ids(run([{ ...dlq, messagesGrowthPerS: 0 }]))).toEqual([]);
    expect(ids(run([{ ...dlq, messagesGrowthPerS: 0, messages: 5000 }]))).toEqual(['work.dlq:rabbitmq.dlq-growing-without-consumers']);
  });

  it('consumer-less DLQ with statistics off: judged from the AMQP counts (ready only), said so; growth and past-the-cap are not checked', () => {
    const off = rabbit({ name: 'work.dlq', isDeadLetterQueue: true, deadLetterExchange: null, deadLetterRouting: null, deadLetterRoutingKey: null, consumers: null, messages: null, messagesGrowthPerS: null, statsDisabled: true });
    const check = (q: RabbitQueueFacts, thresholds: Record<string, number> = {}): { status: string; note: string | undefined; finding: string | undefined } => {
      const config: AuditConfig = { ...defaultProjectConfig().audit, thresholds: { 'rabbitmq.dlq-growing-without-consumers': thresholds } };
      const r = run([q], { config });
      const c = r.checks.find((x) => x.ruleId === 'rabbitmq.dlq-growing-without-consumers');
      const finding = r.findings.find((f) => f.ruleId === 'rabbitmq.dlq-growing-without-consumers')?.message;
      return { status: finding !== undefined ? 'fail' : (c?.status ?? 'missing'), note: c?.note ?? undefined, finding };
    };
    const big = check({ ...off, amqpCounts: { ready: 1500, consumers: 0 } });
    expect(big.status).toBe('fail');
    expect(big.finding).toBe("work.dlq has no consumers and holds 1500 ready messages (at least 1000); counts from AMQP (passive queue.declare), as the broker's management statistics are off (management_agent.disable_metrics_collector = true): ready messages only, unacknowledged unknown, no growth rate.");
    expect(check({ ...off, amqpCounts: { ready: 1500, consumers: 2 } })).toMatchObject({ status: 'pass', note: expect.stringContaining('2 consumers; counts from AMQP') as unknown });
    expect(check({ ...off, amqpCounts: { ready: 0, consumers: 0 } }, { maxMessages: 0 }).status).toBe('pass');
    expect(check({ ...off, amqpCounts: { ready: 20, consumers: 0 } })).toMatchObject({ status: 'pass', note: expect.stringContaining('unacknowledged unknown') as unknown });
    // Between the thresholds only the rate (statistics) tells whether it grows.
    expect(check({ ...off, amqpCounts: { ready: 200, consumers: 0 } })).toMatchObject({ status: 'not-checked', note: expect.stringContaining('whether it is growing needs the management statistics') as unknown });
    expect(check({ ...off, amqpCounts: { ready: 200, consumers: 0 } }, { maxMessages: 150 }).status).toBe('fail');
    const capped = check({ ...off, amqpCounts: null, amqpCountsNote: 'past the cap' });
    expect(capped.status).toBe('not-checked');
    expect(capped.note).toContain('management statistics are off');
    expect(capped.note).toContain('past the cap');
  });
});

describe('Redis rules', () => {
  it('server: eviction policy and persistence; CONFIG disabled is not checked', () => {
    const r = run([bull()], { servers: [redisServer({ maxmemoryPolicy: 'allkeys-lru', save: '', appendonly: 'no' })] });
    expect(ids(r)).toEqual(['redis://127.0.0.1:6379:redis.maxmemory-policy', 'redis://127.0.0.1:6379:redis.no-persistence']);
    expect(ids(run([bull()], { servers: [redisServer()] }))).toEqual([]);
    const off = run([bull()], { servers: [redisServer({ configError: "ERR unknown command 'CONFIG'", maxmemoryPolicy: null, save: null, appendonly: null })] });
    expect(off.findings).toEqual([]);
    expect(off.checks.filter((c) => c.status === 'not-checked').map((c) => c.note)).toContain("not checked: CONFIG GET is not available: ERR unknown command 'CONFIG'");
  });

  it('BullMQ removeOnFail true / small counts / short ages', () => {
    expect(ids(run([bull({ removeOnFail: [{ value: true, jobs: 3, exampleJobId: '7' }] })]))).toEqual(['jobs:redis.bullmq-remove-on-fail']);
    expect(ids(run([bull({ removeOnFail: [{ value: 10, jobs: 3, exampleJobId: '7' }] })]))).toEqual(['jobs:redis.bullmq-remove-on-fail']);
    expect(ids(run([bull({ removeOnFail: [{ value: { age: 60 }, jobs: 3, exampleJobId: '7' }] })]))).toEqual(['jobs:redis.bullmq-remove-on-fail']);
    expect(ids(run([bull({ removeOnFail: [{ value: { count: 5000 }, jobs: 3, exampleJobId: '7' }, { value: false, jobs: 1, exampleJobId: '8' }] })]))).toEqual([]);
    expect(run([bull({ jobsRead: 0, removeOnFail: [] })]).checks.find((c) => c.ruleId === 'redis.bullmq-remove-on-fail')?.status).toBe('not-checked');
  });

  it('lockDuration vs measured p99', () => {
    expect(ids(run([bull()], { measurements: m('jobs', 45_000) }))).toEqual(['jobs:redis.bullmq-lock-duration-below-processing-time']);
    const lock = (t: Record<string, number>): { config: { thresholds: Record<string, Record<string, number>> } } => ({ config: { thresholds: { 'redis.bullmq-lock-duration-below-processing-time': t } } });
    expect(ids(run([bull()], { measurements: m('jobs', 45_000), ...lock({ lockDurationMs: 135_000 }) }))).toEqual([]);
    // Several times the p99, as tune recommends (3 ×): 120 s is above the p99 but below 3 × 45 s.
    const below = run([bull()], { measurements: m('jobs', 45_000), ...lock({ lockDurationMs: 120_000 }) });
    expect(ids(below)).toEqual(['jobs:redis.bullmq-lock-duration-below-processing-time']);
    expect(below.findings[0]?.message).toBe('lockDuration 2 min of jobs is below 3 × measured p99 45 s = 2.3 min.');
    // A p99 of 15 s against the 30 s default: tune recommends 45 s, so the audit fails it too.
    expect(ids(run([bull()], { measurements: m('jobs', 15_000) }))).toEqual(['jobs:redis.bullmq-lock-duration-below-processing-time']);
    expect(ids(run([bull()], { measurements: m('jobs', 15_000), ...lock({ safetyFactor: 1 }) }))).toEqual([]);
  });

  it('streams: pending entries pointing at trimmed entries; stranded pending entries', () => {
    const g = stream().groups[0]!;
    expect(ids(run([stream({ groups: [{ ...g, pendingDeleted: ['5-0'] }] })]))).toEqual(['events:redis.stream-trimmed-while-pending']);
    expect(ids(run([stream({ groups: [{ ...g, pendingSample: [{ id: '5-0', consumer: 'c1', idleMs: 3_600_000, deliveries: 1 }] }] })]))).toEqual(['events:redis.stream-stranded-pending-entries']);
    expect(ids(run([stream()]))).toEqual([]);
  });
});

describe('configuration', () => {
  it('severity override, off, suppression with reason and queue patterns', () => {
    const q = sqs({ receiveWaitTimeS: 0, redrivePolicy: null, deadLetterQueue: null });
    const r = run([q], { config: { severity: { 'sqs.short-polling': 'error', 'sqs.no-redrive-policy': 'off' } } });
    expect(ids(r)).toEqual(['work:sqs.short-polling']);
    expect(r.findings[0]?.severity).toBe('error');
    expect(r.disabledRules).toEqual(['sqs.no-redrive-policy']);
    const s = run([q], { config: { suppress: [{ rule: 'sqs.no-redrive-policy', queue: 'wo*', reason: 'fire-and-forget' }] } });
    expect(s.findings.find((f) => f.ruleId === 'sqs.no-redrive-policy')?.suppressed).toEqual({ reason: 'fire-and-forget' });
    expect(s.counts).toMatchObject({ error: 0, info: 1, suppressed: 1 });
    expect(failsThreshold(s, 'error')).toBe(false);
    expect(failsThreshold(run([q]), 'error')).toBe(true);
    expect(run([q], { config: { queues: ['other*'] } }).queues).toEqual([]);
  });

  it('checkAuditConfig names unknown rules, unknown thresholds and bad values by path', () => {
    const c: AuditConfig = { ...defaultProjectConfig().audit, severity: { 'sqs.nope': 'off' }, thresholds: { 'sqs.max-receive-count-too-high': { maxx: 3, max: 0 } }, suppress: [{ rule: 'x.y', queue: '*', reason: 'because' }] };
    expect(checkAuditConfig(c)).toEqual([
      { path: 'audit.severity.sqs.nope', message: 'unknown audit rule "sqs.nope" (see `queuescope audit --list-rules`)' },
      { path: 'audit.thresholds.sqs.max-receive-count-too-high.maxx', message: 'rule sqs.max-receive-count-too-high has no threshold "maxx" (it has: max)' },
      { path: 'audit.thresholds.sqs.max-receive-count-too-high.max', message: 'must be between 1 and ∞ (largest maxReceiveCount that passes (receives)), got 0' },
      { path: 'audit.suppress[0].rule', message: 'unknown audit rule "x.y" (see `queuescope audit --list-rules`)' },
    ]);
    expect(checkAuditConfig(defaultProjectConfig().audit)).toEqual([]);
    expect(RULE_CATALOG.get('sqs.no-redrive-policy')?.severity).toBe('error');
  });
});

describe('parseMeasurements', () => {
  it('reads the simple file and tune reports', () => {
    expect(parseMeasurements({ queues: { work: { p99Ms: 1200, meanMs: 300 } } }).measurements.get('work')).toEqual({ p99Ms: 1200, p99Basis: 'measured', meanMs: 300, source: 'file' });
    const tune = { queueId: 'sqs:u', queueName: 'orders', stats: { p99Ms: 900, meanMs: 100 }, measurement: { source: 'bullmq', meanMs: null }, units: 'ms' };
    const r = parseMeasurements([tune]);
    expect(r.measurements.get('orders')).toEqual({ p99Ms: 900, p99Basis: 'measured', meanMs: 100, source: 'tune (bullmq)' });
    expect(r.measurements.get('sqs:u')?.p99Ms).toBe(900);
    expect(parseMeasurements({ queues: { bad: { p99Ms: 'x' } } }).problems).toEqual(['queues["bad"] has neither p99Ms nor meanMs (numbers of ms ≥ 0)']);
  });

  it('a mean without a p99 (Little\'s law, a simple file with meanMs only) gives p99 ≈ 4.6 × mean, as tune estimates it — not the mean', () => {
    // tune --json of a RabbitMQ/SQS queue measured by Little's law: stats null, a mean of 5 s.
    const littles = parseMeasurements({ reports: [{ queueName: 'q', stats: null, measurement: { meanMs: 5_000, source: 'littles-law' } }] }).measurements.get('q');
    expect(littles).toEqual({ p99Ms: 5_000 * Math.log(100), p99Basis: 'mean-exponential', meanMs: 5_000, source: 'tune (littles-law)' });
    const simple = parseMeasurements({ queues: { work: { meanMs: 5_000 } } }).measurements;
    expect(simple.get('work')?.p99Ms).toBeCloseTo(23_026, 0);
    // SQS VisibilityTimeout 30 s with a mean of 5 s: tune recommends 3 × 23 s = 69 s (and --fail-on risk exits 6), so
    // the audit must not pass it as "30 s ≥ 3 × p99 5 s".
    const vt = run([sqs({ visibilityTimeoutS: 30 })], { measurements: simple });
    expect(ids(vt)).toEqual(['work:sqs.visibility-timeout-below-processing-time']);
    expect(vt.findings[0]?.message).toBe(
      'VisibilityTimeout is 30 s, below 3 × estimated p99 23 s (4.6 × the measured mean 5 s, as if times were exponential; measure per-message times for a real p99) = 69.1 s.',
    );
    expect(ids(run([sqs({ visibilityTimeoutS: 70 })], { measurements: simple }))).toEqual([]);
    // RabbitMQ consumer_timeout 30 min, mean 10 min: estimated p99 46 min.
    const rabbitMean = parseMeasurements({ queues: { work: { meanMs: 600_000 } } }).measurements;
    expect(ids(run([rabbit()], { measurements: rabbitMean }))).toEqual(['work:rabbitmq.consumer-timeout-below-processing-time']);
    // BullMQ lockDuration 30 s, mean 10 s: estimated p99 46 s.
    const bullMean = parseMeasurements({ queues: { jobs: { meanMs: 10_000 } } }).measurements;
    expect(run([bull()], { measurements: bullMean }).findings.map((f) => f.message)).toEqual([
      'lockDuration 30 s of jobs is below 3 × estimated p99 46.1 s (4.6 × the measured mean 10 s, as if times were exponential; measure per-message times for a real p99) = 2.3 min.',
    ]);
  });

  it('never throws on arbitrary JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const r = parseMeasurements(v);
        for (const x of r.measurements.values()) expect(x.p99Ms === null || x.p99Ms >= 0).toBe(true);
      }),
    );
  });
});
