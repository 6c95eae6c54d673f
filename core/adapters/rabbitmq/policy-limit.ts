/**
 * A quorum queue's delivery limit read from the vhost's policy definitions themselves, not from the
 * queue's management record. RabbitMQ 3.10 reports a quorum queue's policy with its statistics, so
 * for seconds after the queue is declared or a policy changes, `GET /api/queues/<vhost>/<name>`
 * lacks it (measured here: 8–9 s after a declare, ~6 s after a policy change) while the broker
 * already applies it. Callers whose safety depends on the limit (the peek side-effect gate, the
 * redrive mover's requeues) take the lower of the record's limit and {@link readPolicyDeliveryLimit}.
 */
import { throwIfAborted } from './errors';
import type { ManagementClient } from './management';
import type { EffectiveSettings } from './topology';

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
  for (const raw of policies) {
    if (raw === null || typeof raw !== 'object') continue;
    const p = raw as { pattern?: unknown; 'apply-to'?: unknown; priority?: unknown; definition?: unknown };
    const applyTo = p['apply-to'] ?? 'all';
    if (typeof p.pattern !== 'string' || (applyTo !== 'queues' && applyTo !== 'all' && applyTo !== 'quorum_queues')) continue;
    let re: RegExp;
    try {
      re = new RegExp(p.pattern);
    } catch {
      continue;
    }
    if (!re.test(name)) continue;
    const priority = typeof p.priority === 'number' ? p.priority : 0;
    const v = (p.definition as Record<string, unknown> | null | undefined)?.['delivery-limit'];
    const limit = typeof v === 'number' && Number.isFinite(v) ? v : null;
    if (best === null || priority > best.priority) best = { priority, limit };
    else if (priority === best.priority) best = { priority, limit: lowerLimit(best.limit, limit) };
  }
  return best?.limit ?? null;
}

/**
 * The `delivery-limit` the policies of `vhost` give queue `name` now: reads
 * `GET /api/policies/<vhost>` and `GET /api/operator-policies/<vhost>` (two requests, each
 * bounded by the management client's timeout) and follows RabbitMQ's choice (rabbit_policy):
 * one user policy and one operator policy apply (see {@link appliedPolicyDeliveryLimit}); the
 * lower of their limits wins. Null when none sets a limit or the policies cannot be read (no
 * answer, or a user without the policymaker/monitoring rights): the caller's record value stands.
 * @throws QueuescopeError CANCELLED when `signal` aborts.
 */
export async function readPolicyDeliveryLimit(mgmt: Pick<ManagementClient, 'get'>, vhost: string, name: string, signal?: AbortSignal): Promise<number | null> {
  const v = encodeURIComponent(vhost);
  const limits: number[] = [];
  for (const path of [`/api/policies/${v}`, `/api/operator-policies/${v}`]) {
    const res = await mgmt.get(path, signal).catch(() => {
      throwIfAborted(signal);
      return null;
    });
    if (res?.status !== 200 || !Array.isArray(res.body)) continue;
    const limit = appliedPolicyDeliveryLimit(name, res.body as unknown[]);
    if (limit !== null) limits.push(limit);
  }
  return limits.length === 0 ? null : Math.min(...limits);
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
