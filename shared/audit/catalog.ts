/** The audit rule catalog: every rule's metadata and its check, in report order. */
import type { AnyRule } from './rule-kit';
import { RABBITMQ_RULES } from './rules-rabbitmq';
import { BULLMQ_RULES, REDIS_SERVER_RULES, STREAM_RULES } from './rules-redis';
import { SQS_RULES } from './rules-sqs';
import type { AuditRuleMeta } from './types';

/** Every rule (SQS, RabbitMQ, Redis). */
export const AUDIT_RULES: readonly AnyRule[] = [...SQS_RULES, ...RABBITMQ_RULES, ...REDIS_SERVER_RULES, ...BULLMQ_RULES, ...STREAM_RULES] as unknown as AnyRule[];

/** Metadata of every rule, by id. */
export const RULE_CATALOG: ReadonlyMap<string, AuditRuleMeta> = new Map(AUDIT_RULES.map((r) => [r.meta.id, r.meta]));

/** The metadata of a rule, or undefined for an unknown id. */
export function ruleMeta(id: string): AuditRuleMeta | undefined {
  return RULE_CATALOG.get(id);
}
