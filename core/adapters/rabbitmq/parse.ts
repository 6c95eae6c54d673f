/**
 * Defensive readers for management API JSON (https://www.rabbitmq.com/docs/management#http-api):
 * fields can be missing (stats lag ~5 s; a new queue has no `messages` yet), `[]` where an empty
 * object is meant, or of an unexpected type. Missing numbers are null, never 0.
 */
import type { RawBinding, RawExchange, RawQueue } from './topology';

function rec(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}
function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}
function bool(v: unknown): boolean | null {
  return typeof v === 'boolean' ? v : null;
}

/** One item of `GET /api/queues/<vhost>` or `GET /api/queues/<vhost>/<name>`, or null when it has no name. */
export function parseQueue(v: unknown): RawQueue | null {
  const o = rec(v);
  const name = str(o.name);
  if (name === null || name === '') return null;
  return {
    name,
    type: str(o.type),
    durable: bool(o.durable),
    autoDelete: bool(o.auto_delete),
    exclusive: bool(o.exclusive),
    state: str(o.state),
    policy: str(o.policy),
    arguments: rec(o.arguments),
    policyDefinition: rec(o.effective_policy_definition),
    messagesReady: num(o.messages_ready),
    messagesUnacknowledged: num(o.messages_unacknowledged),
    messages: num(o.messages),
    consumers: num(o.consumers),
  };
}

/** One item of `GET /api/exchanges/<vhost>` (the default exchange has the name ""), or null. */
export function parseExchange(v: unknown): RawExchange | null {
  const o = rec(v);
  const name = str(o.name);
  const type = str(o.type);
  if (name === null || type === null) return null;
  return { name, type, arguments: rec(o.arguments) };
}

/** One item of `GET /api/bindings/<vhost>`, or null. */
export function parseBinding(v: unknown): RawBinding | null {
  const o = rec(v);
  const source = str(o.source);
  const destination = str(o.destination);
  const dt = str(o.destination_type);
  if (source === null || destination === null || (dt !== 'queue' && dt !== 'exchange')) return null;
  return { source, destination, destinationType: dt, routingKey: str(o.routing_key) ?? '', arguments: rec(o.arguments) };
}

/** A paged listing: `{ items, page, page_count, total_count, filtered_count }`. */
export interface Page {
  items: unknown[];
  pageCount: number;
  filteredCount: number | null;
}

/** Reads a paged answer; an unpaged array (older servers) is one page. */
export function parsePage(v: unknown): Page | null {
  if (Array.isArray(v)) return { items: v, pageCount: 1, filteredCount: v.length };
  const o = rec(v);
  if (!Array.isArray(o.items)) return null;
  return { items: o.items, pageCount: num(o.page_count) ?? 1, filteredCount: num(o.filtered_count) };
}

/** Reads an array answer (exchanges, bindings). */
export function parseArray(v: unknown): unknown[] | null {
  return Array.isArray(v) ? v : null;
}

/** `rabbitmq_version` / `product_name` etc. of `GET /api/overview`. */
export function parseOverview(v: unknown): { product: string; version: string | null; erlang: string | null; cluster: string | null; management: string | null; statsDisabled: boolean } | null {
  const o = rec(v);
  const version = str(o.product_version) ?? str(o.rabbitmq_version);
  if (version === null && str(o.management_version) === null) return null;
  return {
    product: str(o.product_name) ?? 'RabbitMQ',
    version,
    erlang: str(o.erlang_version),
    cluster: str(o.cluster_name),
    management: str(o.management_version),
    // `disable_stats: true` when `management_agent.disable_metrics_collector = true` (the default of
    // the official Docker image without the management tag): queues then come without counts,
    // consumers or message_stats.
    statsDisabled: o.disable_stats === true,
  };
}

/**
 * What a broker with management statistics off (`GET /api/overview` → `disable_stats: true`) means
 * for Queuescope, in words for notes and "not checked" reasons.
 */
export const STATS_DISABLED_NOTE =
  "the broker's management statistics are off (management_agent.disable_metrics_collector = true, the default of the official Docker image without the management tag): the management API gives no message or consumer counts and no ack statistics";
