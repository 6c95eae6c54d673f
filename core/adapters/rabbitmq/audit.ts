/**
 * Audit fact collector for RabbitMQ (management HTTP API, https://www.rabbitmq.com/docs/management#http-api):
 * `/api/overview` (version), `/api/queues/<vhost>` (arguments, effective policy definition,
 * durability, consumers, message counts and rates), `/api/exchanges`, `/api/bindings` (dead-letter
 * routing resolved with the adapter's topology logic), `/api/policies` and `/api/operator-policies`
 * (the dead-letter keys a policy set seconds ago, which RabbitMQ 3.10's queue records show late —
 * `withPolicyDeadLetter` in policy-limit.ts — and the one-click fix).
 * With management statistics off (`/api/overview` `disable_stats`) the queues come without counts:
 * dead-letter queues then get ready and consumer counts over AMQP (passive `queue.declare`, at most
 * the adapter's AMQP count cap per audit; unacknowledged messages and rates stay unknown).
 *
 * Dead-letter settings: a queue argument wins over a policy key for the dead-letter exchange and
 * routing key; the lower value wins for TTL, max length and delivery limit
 * (https://www.rabbitmq.com/docs/dlx, https://www.rabbitmq.com/docs/parameters#policies) — see
 * `effectiveSettings` in topology.ts.
 */
import http from 'node:http';
import https from 'node:https';
import { QueuescopeError } from '../../../shared/domain';
import { matchesQueuePattern } from '../../../shared/config/project-config';
import type { AuditFacts, AuditFix, FixPreview, RabbitQueueFacts, RabbitServerFacts, SourcedValue } from '../../../shared/audit/types';
import type { AuditCollectOptions, AuditCollector } from '../audit-types';
import { throwIfAborted } from '../../lib/abort';
import { ManagementClient, ManagementNetworkError, readAllPages, type ManagementGuard } from './management';
import { parseArray, parseBinding, parseExchange, parseOverview, parsePage, parseQueue, STATS_DISABLED_NOTE } from './parse';
import { readPolicyLists, withPolicyDeadLetter } from './policy-limit';
import type { RabbitmqSettings } from './settings';
import { buildTopology, effectiveSettings, looksLikeDeadLetterQueue, resolveDeadLetterTargets, arrivalKeys, type RawBinding, type RawExchange, type RawQueue, type Setting, type Topology } from './topology';
import { encodeQueueId } from './queue-id';

const COLUMNS = 'name,type,durable,auto_delete,exclusive,state,policy,arguments,effective_policy_definition,messages,messages_ready,messages_unacknowledged,consumers,messages_details';
const PAGE_SIZE = 500;
const QUEUE_CAP = 20_000;
const TIMEOUT_MS = 30_000;
/** RabbitMQ's default `consumer_timeout` (ms) since 3.8.15. */
export const DEFAULT_CONSUMER_TIMEOUT_MS = 1_800_000;

function rec(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function sourced<T>(s: Setting<T> | null): SourcedValue<T> | null {
  return s ? { value: s.value, source: s.source } : null;
}

/** True when the version (e.g. `3.12.1`) supports a per-queue consumer timeout (x-consumer-timeout / consumer-timeout policy, 3.12+). */
export function perQueueConsumerTimeout(version: string | null): boolean {
  const m = /^(\d+)\.(\d+)/.exec(version ?? '');
  if (!m) return false;
  const major = Number(m[1]);
  return major > 3 || (major === 3 && Number(m[2]) >= 12);
}

/** Names a dead-letter queue of `name` would have: `<name>.dlq`, `<name>-dlq`, `<base>.dlq` for `<base>.work`… */
export function dlqCandidateNames(name: string): string[] {
  const bases = [name];
  const m = /^(.*?)[._-](work|queue|q|jobs|tasks)$/i.exec(name);
  if (m?.[1]) bases.push(m[1]);
  const out: string[] = [];
  for (const b of bases) for (const suffix of ['.dlq', '-dlq', '_dlq', '.dead-letter', '-dead-letter']) out.push(`${b}${suffix}`);
  return out;
}

/**
 * Reads ready and consumer counts over AMQP (passive `queue.declare`, one per queue) — the
 * adapter's reader. `read` resolves with an entry per queue it could declare (a queue deleted
 * meanwhile or another connection's exclusive queue gets none); `cap()` is the most queues read
 * per audit.
 */
export interface AmqpCountReader {
  read(names: readonly string[], signal?: AbortSignal): Promise<Map<string, { messageCount: number; consumerCount: number }>>;
  cap(): number;
}

class RabbitmqAuditCollector implements AuditCollector {
  /**
   * @param guard checked before the first management request of each client (the adapter's same-broker check).
   * @param counts with statistics off, where dead-letter queues' counts come from.
   */
  constructor(
    private readonly settings: () => RabbitmqSettings,
    private readonly guard?: ManagementGuard,
    private readonly counts?: AmqpCountReader,
  ) {}

  private get s(): RabbitmqSettings {
    return this.settings();
  }

  private async withClient<T>(fn: (c: ManagementClient) => Promise<T>): Promise<T> {
    const c = new ManagementClient(this.s);
    if (this.guard !== undefined) c.setGuard(this.guard);
    try {
      return await fn(c);
    } finally {
      c.close();
    }
  }

  private async getJson(c: ManagementClient, path: string, signal?: AbortSignal): Promise<unknown> {
    const res = await c.get(path, signal, TIMEOUT_MS);
    if (res.status >= 200 && res.status < 300 && res.body !== null) return res.body;
    if (res.status === 401) throw new QueuescopeError('AUTH_FAILED', `The RabbitMQ management API at ${c.base} refused the login (HTTP 401).`, { managementUrl: c.base });
    if (res.status === 403) throw new QueuescopeError('PERMISSION_DENIED', `The RabbitMQ management API at ${c.base} refused ${path.split('?')[0] ?? path}: the user needs the monitoring (or management) tag${res.reason ? ` (${res.reason})` : ''}.`, { managementUrl: c.base });
    if (res.status === 404) throw new QueuescopeError(path.startsWith('/api/queues/') ? 'UNKNOWN_VHOST' : 'MANAGEMENT_UNAVAILABLE', `${c.base}${path.split('?')[0] ?? ''} was not found${path.startsWith('/api/queues/') ? `: does virtual host '${this.s.vhost}' exist?` : ''}.`, { managementUrl: c.base });
    throw new QueuescopeError('MANAGEMENT_UNAVAILABLE', `The RabbitMQ management API at ${c.base} answered HTTP ${String(res.status)} for ${path.split('?')[0] ?? path}${res.reason ? `: ${res.reason}` : ''}.`, { managementUrl: c.base, status: res.status, reason: res.reason });
  }

  private async readAll(c: ManagementClient, signal?: AbortSignal): Promise<{ queues: { raw: RawQueue; growth: number | null }[]; exchanges: RawExchange[]; bindings: RawBinding[]; version: string | null; statsDisabled: boolean; notes: string[] }> {
    const v = encodeURIComponent(this.s.vhost);
    const notes: string[] = [];
    const overview = parseOverview(await this.getJson(c, '/api/overview', signal));
    const queues: { raw: RawQueue; growth: number | null }[] = [];
    const seen = new Set<string>();
    await readAllPages(
      (page) => this.getJson(c, `/api/queues/${v}?page=${String(page)}&page_size=${String(PAGE_SIZE)}&columns=${COLUMNS}`, signal),
      (body) => {
        const p = parsePage(body);
        if (!p) throw new QueuescopeError('MANAGEMENT_UNAVAILABLE', `${c.base}/api/queues returned an unexpected answer: this is not the RabbitMQ management API.`);
        for (const item of p.items) {
          const raw = parseQueue(item);
          const rate = rec(rec(item).messages_details).rate;
          // Items shifted between pages of a changing listing can come twice.
          if (raw && !seen.has(raw.name) && queues.length < QUEUE_CAP) {
            seen.add(raw.name);
            queues.push({ raw, growth: typeof rate === 'number' && Number.isFinite(rate) ? rate : null });
          }
        }
        return p.pageCount;
      },
      () => queues.length >= QUEUE_CAP,
      () => {
        queues.length = 0;
        seen.clear();
      },
      1,
      signal,
    );
    if (queues.length >= QUEUE_CAP) notes.push(`Only the first ${String(QUEUE_CAP)} queues of vhost '${this.s.vhost}' were read.`);
    const [ex, bi, policies] = await Promise.all([this.getJson(c, `/api/exchanges/${v}?columns=name,type,arguments`, signal), this.getJson(c, `/api/bindings/${v}`, signal), readPolicyLists(c, this.s.vhost, signal)]);
    return {
      // A queue's record shows a policy's dead-letter keys seconds late (3.10): the policies themselves fill them in.
      queues: queues.map(({ raw, growth }) => ({ raw: withPolicyDeadLetter(raw, policies), growth })),
      exchanges: (parseArray(ex) ?? []).map(parseExchange).filter((x): x is RawExchange => x !== null),
      bindings: (parseArray(bi) ?? []).map(parseBinding).filter((x): x is RawBinding => x !== null),
      version: overview?.version ?? null,
      statsDisabled: overview?.statsDisabled ?? false,
      notes,
    };
  }

  private queueFacts(q: RawQueue, growth: number | null, topo: Topology, sources: Map<string, string[]>, version: string | null): RabbitQueueFacts {
    const s = effectiveSettings(q);
    let routing: RabbitQueueFacts['deadLetterRouting'] = null;
    if (s.deadLetterExchange) {
      const targets = resolveDeadLetterTargets(q, topo);
      const exchange = s.deadLetterExchange.value;
      const keys = s.deadLetterRoutingKey ? [s.deadLetterRoutingKey.value] : arrivalKeys(q, topo).keys;
      routing = {
        exchange,
        exchangeExists: exchange === '' || topo.exchanges.has(exchange),
        routingKeys: keys,
        reachedQueues: targets.filter((t) => t.queueName !== null && t.problem === undefined).map((t) => t.queueName ?? ''),
        unresolved: targets.filter((t) => t.queueName === null && t.problem === undefined).map((t) => t.via),
        // Any target's problem: a missing route (queueName null), or dead letters routed back into this same queue (a cycle).
        problem: targets.find((t) => t.problem !== undefined)?.problem ?? null,
      };
    }
    let consumerTimeout: SourcedValue<number> | null = null;
    if (perQueueConsumerTimeout(version)) {
      const a = q.arguments['x-consumer-timeout'];
      const p = q.policyDefinition['consumer-timeout'];
      if (typeof a === 'number') consumerTimeout = { value: a, source: 'argument' };
      else if (typeof p === 'number') consumerTimeout = { value: p, source: 'policy' };
    }
    const srcs = sources.get(q.name) ?? [];
    let dlqCandidate: RabbitQueueFacts['dlqCandidate'] = null;
    if (!s.deadLetterExchange) {
      const found = dlqCandidateNames(q.name).find((n) => topo.queues.has(n));
      if (found !== undefined) dlqCandidate = { queue: found, exchange: '', routingKey: found };
    }
    return {
      kind: 'rabbitmq',
      id: encodeQueueId({ vhost: this.s.vhost, name: q.name }),
      vhost: this.s.vhost,
      name: q.name,
      type: q.type,
      durable: q.durable,
      autoDelete: q.autoDelete,
      exclusive: q.exclusive,
      policy: q.policy,
      arguments: q.arguments,
      policyDefinition: q.policyDefinition,
      deadLetterExchange: sourced(s.deadLetterExchange),
      deadLetterRoutingKey: sourced(s.deadLetterRoutingKey),
      messageTtlMs: sourced(s.messageTtlMs),
      maxLength: sourced(s.maxLength),
      maxLengthBytes: sourced(s.maxLengthBytes),
      overflow: sourced(s.overflow),
      deliveryLimit: sourced(s.deliveryLimit),
      consumerTimeoutMs: consumerTimeout,
      deadLetterRouting: routing,
      consumers: q.consumers,
      messages: q.messages,
      messagesGrowthPerS: growth,
      deadLetterSources: srcs,
      isDeadLetterQueue: srcs.length > 0 || looksLikeDeadLetterQueue(q.name),
      dlqCandidate,
    };
  }

  async collect(options: AuditCollectOptions, signal?: AbortSignal): Promise<AuditFacts> {
    return this.withClient(async (c) => {
      const all = await this.readAll(c, signal);
      const topo = buildTopology(this.s.vhost, all.queues.map((q) => q.raw), all.exchanges, all.bindings);
      const sources = new Map<string, string[]>();
      for (const { raw } of all.queues) {
        for (const t of resolveDeadLetterTargets(raw, topo)) {
          if (t.queueName === null || t.queueName === raw.name) continue;
          const l = sources.get(t.queueName) ?? [];
          l.push(raw.name);
          sources.set(t.queueName, l);
        }
      }
      const pattern = options.pattern;
      const queues = all.queues
        .filter(({ raw }) => pattern === undefined || pattern === '' || matchesQueuePattern(pattern, raw.name))
        .map(({ raw, growth }): RabbitQueueFacts => ({ ...this.queueFacts(raw, growth, topo, sources, all.version), ...(all.statsDisabled ? { statsDisabled: true } : {}) }))
        .sort((a, b) => a.name.localeCompare(b.name));
      const notes = [...all.notes];
      if (all.statsDisabled) notes.unshift(await this.addAmqpCounts(queues, signal));
      const server: RabbitServerFacts = {
        kind: 'rabbitmq-server',
        label: this.s.label,
        version: all.version,
        // Not exposed by the management API: the default is assumed (override with the rule's threshold).
        consumerTimeoutMs: null,
      };
      return { broker: 'rabbitmq', label: this.s.label, servers: [server], queues, notes };
    });
  }

  /**
   * Statistics off: sets `amqpCounts` (or `amqpCountsNote`) on the dead-letter queues among
   * `queues` — the only facts a count-based rule can use then — reading at most `cap()` of them
   * in name order over AMQP. Returns the collector note saying where counts came from and what
   * stays unknown. An AMQP failure leaves the counts null with the reason (the audit still runs).
   * @throws QueuescopeError `CANCELLED`.
   */
  private async addAmqpCounts(queues: RabbitQueueFacts[], signal?: AbortSignal): Promise<string> {
    const dlqs = queues.filter((q) => q.isDeadLetterQueue);
    const countable = dlqs.filter((q) => q.type !== 'stream');
    const cap = this.counts?.cap() ?? 0;
    let read = new Map<string, { messageCount: number; consumerCount: number }>();
    let failure: string | null = null;
    if (this.counts && countable.length > 0 && cap > 0) {
      try {
        read = await this.counts.read(countable.slice(0, cap).map((q) => q.name), signal);
      } catch (e) {
        throwIfAborted(signal);
        if (e instanceof QueuescopeError && e.code === 'CANCELLED') throw e;
        failure = e instanceof Error ? e.message : String(e);
      }
    }
    const beyond = Math.max(0, countable.length - cap);
    countable.forEach((q, i) => {
      const c = i < cap ? read.get(q.name) : undefined;
      if (c) {
        q.amqpCounts = { ready: c.messageCount, consumers: c.consumerCount };
        return;
      }
      q.amqpCounts = null;
      q.amqpCountsNote =
        i >= cap
          ? `they were not read over AMQP either: counts over AMQP are read for the first ${String(cap)} dead-letter queues of an audit (this is one of ${String(beyond)} past that cap; audit fewer queues with a name pattern, --queues in the CLI)`
          : failure !== null
            ? `reading them over AMQP failed: ${failure}`
            : 'the passive queue.declare over AMQP failed (the queue was deleted meanwhile, or it is an exclusive queue of another connection)';
    });
    for (const q of dlqs) {
      if (q.type !== 'stream') continue;
      q.amqpCounts = null;
      q.amqpCountsNote = 'AMQP gives no message count for a stream';
    }
    const stats = `${STATS_DISABLED_NOTE.charAt(0).toUpperCase()}${STATS_DISABLED_NOTE.slice(1)}`;
    const got = countable.filter((q) => q.amqpCounts).length;
    const via =
      countable.length === 0
        ? 'the checks that need them are not checked'
        : `consumer and ready counts of ${got === countable.length ? String(got) : `${String(got)} of ${String(countable.length)}`} dead-letter queue${countable.length === 1 ? '' : 's'} were read over AMQP instead (passive queue.declare: exact at that moment, but ready messages only — unacknowledged unknown — and no rates), so the consumer-less-DLQ check uses them; checks that need rates or unacknowledged counts are not checked${beyond > 0 ? `. Only the first ${String(cap)} dead-letter queues are counted over AMQP: ${String(beyond)} more are not checked (audit fewer queues with a name pattern, --queues in the CLI)` : ''}${failure !== null ? `. Reading the counts over AMQP failed (${failure}): those checks are not checked` : ''}`;
    return `${stats}; ${via}.`;
  }

  private async currentQueue(c: ManagementClient, name: string, signal?: AbortSignal): Promise<RawQueue> {
    const res = await c.get(`/api/queues/${encodeURIComponent(this.s.vhost)}/${encodeURIComponent(name)}`, signal, TIMEOUT_MS);
    if (res.status === 404) throw new QueuescopeError('QUEUE_NOT_FOUND', `Queue '${name}' does not exist in vhost '${this.s.vhost}'.`, { queue: name, vhost: this.s.vhost });
    const q = res.status === 200 ? parseQueue(res.body) : null;
    if (!q) throw new QueuescopeError('MANAGEMENT_UNAVAILABLE', `The management API answered HTTP ${String(res.status)} for queue '${name}'.`);
    return q;
  }

  private async plan(c: ManagementClient, fix: AuditFix, signal?: AbortSignal): Promise<{ preview: FixPreview; body: Record<string, unknown> }> {
    if (fix.kind !== 'rabbitmq.add-dlx-policy') throw new QueuescopeError('INVALID_INPUT', `A ${fix.kind} fix cannot be applied to RabbitMQ.`);
    if (fix.vhost !== this.s.vhost) throw new QueuescopeError('INVALID_INPUT', `The fix is for vhost '${fix.vhost}', but this connection is to '${this.s.vhost}'.`);
    const [record, lists] = await Promise.all([this.currentQueue(c, fix.queueName, signal), readPolicyLists(c, this.s.vhost, signal)]);
    // A dead-letter exchange from a policy set seconds ago counts (the record shows it late on 3.10).
    const q = withPolicyDeadLetter(record, lists);
    const s = effectiveSettings(q);
    if (s.deadLetterExchange) throw new QueuescopeError('INVALID_INPUT', `Queue '${fix.queueName}' already has a dead-letter exchange ('${s.deadLetterExchange.value}', ${s.deadLetterExchange.source}); nothing to fix.`);
    await this.currentQueue(c, fix.deadLetterQueue, signal); // the DLQ must exist
    const current = (lists.policies ?? []).map(rec).find((p) => p.name === q.policy);
    const notes: string[] = [];
    const definition: Record<string, unknown> = { ...(current ? rec(current.definition) : {}), 'dead-letter-exchange': fix.deadLetterExchange };
    if (fix.deadLetterRoutingKey !== null) definition['dead-letter-routing-key'] = fix.deadLetterRoutingKey;
    const priority = (current && typeof current.priority === 'number' ? current.priority : 0) + 1;
    if (current) notes.push(`Only one policy applies to a queue: the new policy (priority ${String(priority)}) keeps the keys of its current policy '${String(current.name)}' and adds the dead-letter keys.`);
    else if (q.policy !== null) notes.push(`The queue's current policy '${q.policy}' could not be read; the new policy replaces it for this queue.`);
    notes.push(`Dead letters go ${fix.deadLetterExchange === '' ? `through the default exchange straight to queue '${fix.deadLetterQueue}'` : `to exchange '${fix.deadLetterExchange}'`}.`);
    const pattern = `^${fix.queueName.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
    const body = { pattern, definition, priority, 'apply-to': 'queues' };
    const preview: FixPreview = {
      fix,
      summary: `Add policy '${fix.policyName}' to queue '${fix.queueName}' so its dead letters go to '${fix.deadLetterQueue}'.`,
      before: { policy: q.policy, effectivePolicyDefinition: q.policyDefinition, policyPattern: current ? String(current.pattern) : null, policyPriority: current && typeof current.priority === 'number' ? current.priority : null },
      after: { policy: fix.policyName, effectivePolicyDefinition: definition, policyPattern: pattern, policyPriority: priority },
      notes,
    };
    return { preview, body };
  }

  async previewFix(fix: AuditFix, signal?: AbortSignal): Promise<FixPreview> {
    return this.withClient(async (c) => (await this.plan(c, fix, signal)).preview);
  }

  async applyFix(fix: AuditFix, signal?: AbortSignal): Promise<FixPreview> {
    return this.withClient(async (c) => {
      const { preview, body } = await this.plan(c, fix, signal);
      if (fix.kind !== 'rabbitmq.add-dlx-policy') throw new QueuescopeError('INVALID_INPUT', 'Not a RabbitMQ fix.');
      await this.put(`/api/policies/${encodeURIComponent(this.s.vhost)}/${encodeURIComponent(fix.policyName)}`, body, signal);
      // Policies apply asynchronously, and the management API shows a queue's policy from its
      // statistics (refreshed every collect_statistics_interval, 5 s by default; later under load):
      // read the queue back until it shows the policy, for at most APPLY_WAIT_MS.
      const deadline = Date.now() + APPLY_WAIT_MS;
      let after = await this.currentQueue(c, fix.queueName, signal);
      for (let wait = 250; after.policy !== fix.policyName && Date.now() < deadline; wait = Math.min(wait * 2, 1000)) {
        await sleep(Math.min(wait, Math.max(0, deadline - Date.now())), signal);
        after = await this.currentQueue(c, fix.queueName, signal);
      }
      const notes = [...preview.notes];
      if (after.policy !== fix.policyName) notes.push(`RabbitMQ accepted policy '${fix.policyName}', but after ${String(APPLY_WAIT_MS / 1000)} s the management API still shows ${after.policy === null ? 'no policy' : `policy '${after.policy}'`} on queue '${fix.queueName}' (statistics lag under load, or a policy of higher priority). Run the audit again in a moment.`);
      return { ...preview, notes, after: { policy: after.policy, effectivePolicyDefinition: after.policyDefinition } };
    });
  }

  /** PUT with a JSON body. @throws QueuescopeError PERMISSION_DENIED (needs the policymaker tag), BROKER_ERROR. */
  private put(path: string, body: unknown, signal?: AbortSignal): Promise<void> {
    const s = this.s;
    const url = new URL(s.managementBase.toString().replace(/\/$/, '') + path);
    const mod = url.protocol === 'https:' ? https : http;
    const data = JSON.stringify(body);
    const auth = `Basic ${Buffer.from(`${s.managementUser}:${s.managementPassword}`).toString('base64')}`;
    const timeout = AbortSignal.timeout(TIMEOUT_MS);
    return new Promise<void>((resolve, reject) => {
      const req = mod.request(
        url,
        { method: 'PUT', headers: { authorization: auth, 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) }, signal: signal ? AbortSignal.any([signal, timeout]) : timeout, ...(url.protocol === 'https:' ? s.managementTls : {}) },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (ch: Buffer) => chunks.push(ch));
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) return resolve();
            const text = Buffer.concat(chunks).toString('utf8').slice(0, 300);
            if (status === 401 || status === 403) return reject(new QueuescopeError('PERMISSION_DENIED', `RabbitMQ refused to create the policy (HTTP ${String(status)}): the user needs the policymaker (or administrator) tag.`, { status }));
            reject(new QueuescopeError('BROKER_ERROR', `RabbitMQ refused the policy (HTTP ${String(status)}): ${text}`, { status }));
          });
        },
      );
      req.on('error', (e) => {
        reject(signal?.aborted === true ? new QueuescopeError('CANCELLED', 'Applying the fix was cancelled.') : new ManagementNetworkError('HOST_UNREACHABLE', `The RabbitMQ management API could not be reached: ${e.message}`));
      });
      req.end(data);
    });
  }
}

/** How long {@link RabbitmqAuditCollector.applyFix} waits for the queue to show a new policy, ms. */
export const APPLY_WAIT_MS = 30_000;

/** Waits `ms` milliseconds. @throws QueuescopeError `CANCELLED` when `signal` aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) return reject(new QueuescopeError('CANCELLED', 'Applying the fix was cancelled.'));
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(new QueuescopeError('CANCELLED', 'Applying the fix was cancelled.'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Creates the RabbitMQ audit collector. `settings` is read at each call (the adapter resolves
 * them in its constructor). `counts` reads dead-letter queues' ready and consumer counts over AMQP
 * when the broker's management statistics are off (without it they stay unknown).
 */
export function createRabbitmqAuditCollector(settings: () => RabbitmqSettings, guard?: ManagementGuard, counts?: AmqpCountReader): AuditCollector {
  return new RabbitmqAuditCollector(settings, guard, counts);
}
