/**
 * A queue's policy-set delivery limit and dead-letter exchange read from the vhost's policy
 * definitions themselves, not from the queue's management record. RabbitMQ 3.10 reports a quorum
 * queue's policy with its statistics, so for seconds after the queue is declared or a policy
 * changes, `GET /api/queues/<vhost>/<name>` lacks it (measured here: 8–9 s after a declare, ~6 s
 * after a policy change) while the broker already applies it. Callers whose safety depends on the
 * limit (the peek side-effect gate, the redrive mover's requeues) take the lower of the record's
 * limit and {@link readPolicyDeliveryLimit}; callers that say where dead letters go (the peek
 * refusal, getQueue's links and config, the audit) lay the policy's `dead-letter-exchange` /
 * `dead-letter-routing-key` over the record with {@link withPolicyDeadLetter}.
 */
import { throwIfAborted } from './errors';
import type { ManagementClient } from './management';
import type { EffectiveSettings, RawQueue } from './topology';

/** The lower of two delivery limits (null = none). */
export function lowerLimit(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.min(a, b);
}

/**
 * The `delivery-limit` of the policy (of one list from `GET /api/policies/<vhost>` or
 * `/api/operator-policies/<vhost>`) that RabbitMQ applies to queue `name`: the highest-priority
 * policy whose `pattern` (a regular expression) matches the name and whose `apply-to` is `queues`,
 * `all` or `quorum_queues`; on a priority tie, the lowest limit. Null when that policy sets none.
 * A pattern JavaScript cannot compile is skipped.
 */
export function appliedPolicyDeliveryLimit(name: string, policies: readonly unknown[]): number | null {
  let best: { priority: number; limit: number | null } | null = null;
  for (const p of matchingPolicies(name, policies, (applyTo) => applyTo === 'queues' || applyTo === 'all' || applyTo === 'quorum_queues')) {
    const v = p.definition['delivery-limit'];
    const limit = typeof v === 'number' && Number.isFinite(v) ? v : null;
    if (best === null || p.priority > best.priority) best = { priority: p.priority, limit };
    else if (p.priority === best.priority) best = { priority: p.priority, limit: lowerLimit(best.limit, limit) };
  }
  return best?.limit ?? null;
}

/** A policy that applies to a queue, as {@link matchingPolicies} yields it. */
interface MatchingPolicy {
  /** The policy's name; null when the entry has none. */
  name: string | null;
  /** Its `priority` (0 when absent). */
  priority: number;
  /** Its `definition` (empty when absent or not an object). */
  definition: Record<string, unknown>;
}

/**
 * The entries of a policy list (`GET /api/policies/<vhost>` or `/api/operator-policies/<vhost>`)
 * whose `pattern` (a regular expression) matches queue `name` and whose `apply-to` (default `all`)
 * `applies` accepts, in list order. Malformed entries and patterns JavaScript cannot compile are
 * skipped.
 */
function* matchingPolicies(name: string, policies: readonly unknown[], applies: (applyTo: unknown) => boolean): Generator<MatchingPolicy> {
  for (const raw of policies) {
    if (raw === null || typeof raw !== 'object') continue;
    const p = raw as { name?: unknown; pattern?: unknown; 'apply-to'?: unknown; priority?: unknown; definition?: unknown };
    if (typeof p.pattern !== 'string' || !applies(p['apply-to'] ?? 'all')) continue;
    let re: RegExp;
    try {
      re = new RegExp(p.pattern);
    } catch {
      continue;
    }
    if (!re.test(name)) continue;
    yield {
      name: typeof p.name === 'string' ? p.name : null,
      priority: typeof p.priority === 'number' ? p.priority : 0,
      definition: p.definition !== null && typeof p.definition === 'object' ? (p.definition as Record<string, unknown>) : {},
    };
  }
}

/**
 * The user policies (`GET /api/policies/<vhost>`) and operator policies
 * (`GET /api/operator-policies/<vhost>`) of one vhost, as the management API lists them; a list is
 * null when it could not be read (no answer, or a user without the policymaker/monitoring rights).
 */
export interface PolicyLists {
  policies: readonly unknown[] | null;
  operatorPolicies: readonly unknown[] | null;
}

/**
 * Reads {@link PolicyLists} of `vhost`: two requests, each bounded by the management client's
 * timeout. A list that cannot be read is null (the caller's record values then stand).
 * @throws QueuescopeError CANCELLED when `signal` aborts.
 */
export async function readPolicyLists(mgmt: Pick<ManagementClient, 'get'>, vhost: string, signal?: AbortSignal): Promise<PolicyLists> {
  const v = encodeURIComponent(vhost);
  const one = async (path: string): Promise<readonly unknown[] | null> => {
    const res = await mgmt.get(path, signal).catch(() => {
      throwIfAborted(signal);
      return null;
    });
    return res?.status === 200 && Array.isArray(res.body) ? (res.body as unknown[]) : null;
  };
  const [policies, operatorPolicies] = await Promise.all([one(`/api/policies/${v}`), one(`/api/operator-policies/${v}`)]);
  return { policies, operatorPolicies };
}

/**
 * The `delivery-limit` the policies in `lists` give queue `name`, following RabbitMQ's choice
 * (rabbit_policy): one user policy and one operator policy apply (see
 * {@link appliedPolicyDeliveryLimit}); the lower of their limits wins. Null when none sets a limit
 * or neither list could be read.
 */
export function policyDeliveryLimit(name: string, lists: PolicyLists): number | null {
  const limits: number[] = [];
  for (const list of [lists.policies, lists.operatorPolicies]) {
    const limit = list === null ? null : appliedPolicyDeliveryLimit(name, list);
    if (limit !== null) limits.push(limit);
  }
  return limits.length === 0 ? null : Math.min(...limits);
}

/**
 * The `delivery-limit` the policies of `vhost` give queue `name` now: {@link readPolicyLists} then
 * {@link policyDeliveryLimit}. Null when none sets a limit or the policies cannot be read: the
 * caller's record value stands.
 * @throws QueuescopeError CANCELLED when `signal` aborts.
 */
export async function readPolicyDeliveryLimit(mgmt: Pick<ManagementClient, 'get'>, vhost: string, name: string, signal?: AbortSignal): Promise<number | null> {
  return policyDeliveryLimit(name, await readPolicyLists(mgmt, vhost, signal));
}

/** The dead-letter keys of the user policy RabbitMQ applies to a queue (see {@link appliedPolicyDeadLetter}). */
export interface PolicyDeadLetter {
  /** The policy's name. */
  policy: string;
  /** Its `dead-letter-exchange` (`''` = the default exchange); null when it sets none. */
  exchange: string | null;
  /** Its `dead-letter-routing-key`; null when it sets none. */
  routingKey: string | null;
}

/** Whether a policy's `apply-to` covers a queue of management API `type` (`classic`, `quorum`, `stream`; null = unknown). */
function appliesToQueue(applyTo: unknown, type: string | null): boolean {
  if (applyTo === 'queues' || applyTo === 'all') return true;
  // 3.12+: apply-to a queue type (rabbit_policy matches_queue_type: the type's policy_apply_to_name).
  if (applyTo === 'quorum_queues') return type === 'quorum';
  if (applyTo === 'classic_queues') return type === 'classic' || type === null;
  if (applyTo === 'streams') return type === 'stream';
  return false;
}

/**
 * The dead-letter exchange and routing key of the user policy (one list from
 * `GET /api/policies/<vhost>`) that RabbitMQ applies to queue `name` of `type`: the
 * highest-priority policy whose `pattern` (a regular expression) matches the name and whose
 * `apply-to` covers the queue (`queues`, `all`, or its type's `classic_queues` / `quorum_queues` /
 * `streams`). Only user policies carry these keys: RabbitMQ refuses `dead-letter-exchange` and
 * `dead-letter-routing-key` in an operator policy ("are not recognised policy settings", checked
 * on 3.10), so operator policies are not read here.
 *
 * Returns null when no policy applies, or when it sets neither key. Returns `'ambiguous'` when
 * several policies share the highest priority and set different dead-letter keys: RabbitMQ then
 * applies whichever its parameter store lists first, which the API does not tell. A pattern
 * JavaScript cannot compile is skipped.
 */
export function appliedPolicyDeadLetter(name: string, type: string | null, policies: readonly unknown[]): PolicyDeadLetter | null | 'ambiguous' {
  let best: { priority: number; choices: (PolicyDeadLetter | null)[] } | null = null;
  for (const p of matchingPolicies(name, policies, (applyTo) => appliesToQueue(applyTo, type))) {
    const def = p.definition;
    const exchange = typeof def['dead-letter-exchange'] === 'string' ? def['dead-letter-exchange'] : null;
    const routingKey = typeof def['dead-letter-routing-key'] === 'string' ? def['dead-letter-routing-key'] : null;
    const choice = exchange === null && routingKey === null ? null : { policy: p.name ?? '?', exchange, routingKey };
    if (best === null || p.priority > best.priority) best = { priority: p.priority, choices: [choice] };
    else if (p.priority === best.priority) best.choices.push(choice);
  }
  if (best === null) return null;
  const [first, ...rest] = best.choices;
  const key = (c: PolicyDeadLetter | null | undefined): string => JSON.stringify(c ? [c.exchange, c.routingKey] : null);
  return rest.every((c) => key(c) === key(first)) ? (first ?? null) : 'ambiguous';
}

/**
 * `q` with the dead-letter keys of the user policy RabbitMQ applies to it now (from `lists`, see
 * {@link appliedPolicyDeadLetter}) laid over its record: when that policy sets
 * `dead-letter-exchange` or `dead-letter-routing-key`, both keys of `q.policyDefinition` are
 * replaced by the policy's (a key it does not set is removed) and `q.policy` becomes its name.
 * Queue arguments are untouched, so `x-dead-letter-exchange` / `x-dead-letter-routing-key` still
 * overrule the policy in `effectiveSettings` (topology.ts; https://www.rabbitmq.com/docs/dlx: "the one
 * specified in arguments overrules the one specified in policy").
 *
 * Otherwise `q` itself: the policies could not be read, no policy applies or it sets neither key,
 * the choice is ambiguous, or `q` is a stream (no dead-lettering). This only adds what the record
 * does not show yet (RabbitMQ 3.10 reports a policy seconds late): a dead-letter exchange removed
 * from the policies seconds ago still shows from the record for those seconds.
 */
export function withPolicyDeadLetter(q: RawQueue, lists: PolicyLists): RawQueue {
  if (lists.policies === null || q.type === 'stream') return q;
  const applied = appliedPolicyDeadLetter(q.name, q.type, lists.policies);
  if (applied === null || applied === 'ambiguous') return q;
  const def = q.policyDefinition;
  if (def['dead-letter-exchange'] === (applied.exchange ?? undefined) && def['dead-letter-routing-key'] === (applied.routingKey ?? undefined)) return q;
  const definition: Record<string, unknown> = { ...def };
  delete definition['dead-letter-exchange'];
  delete definition['dead-letter-routing-key'];
  if (applied.exchange !== null) definition['dead-letter-exchange'] = applied.exchange;
  if (applied.routingKey !== null) definition['dead-letter-routing-key'] = applied.routingKey;
  return { ...q, policy: applied.policy, policyDefinition: definition };
}

/**
 * `settings` with its delivery limit lowered to `policyLimit` (source `policy`) when that is set
 * and lower than the limit the queue's record gave (or the record gave none); otherwise `settings`
 * itself. Only the delivery limit changes: other policy keys still come from the record.
 */
export function withPolicyDeliveryLimit(settings: EffectiveSettings, policyLimit: number | null): EffectiveSettings {
  const current = settings.deliveryLimit?.value ?? null;
  if (policyLimit === null || (current !== null && current <= policyLimit)) return settings;
  return { ...settings, deliveryLimit: { value: policyLimit, source: 'policy' } };
}
