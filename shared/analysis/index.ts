/**
 * Redelivery-safety analysis (issue 3): idempotency keys, payload field classes, size checks,
 * queue summaries and duplicate comparisons. Pure: no I/O. Rules: shared/analysis/README.md.
 */
export * from './types';
export { analyzeMessage } from './analyze';
export { createQueueSummary, summarizeQueue, compareDuplicates, DEFAULT_MAX_TRACKED } from './summary';
export { DEFAULT_INSPECT_RULES, normalizeRules, resolveInspectRules, inspectRulesSchema, keyRuleSchema, queueRulesEntrySchema, compileSnapshotPattern, type QueueRulesEntry } from './rules';
export { checkSize, sizeLimit, brokerOf, formatBytes, LARGE_SHARE, LARGE_ABSOLUTE_BYTES, SQS_DEFAULT_MAX_BYTES, SQS_MAX_BYTES, RABBITMQ_3_DEFAULT_MAX_BYTES, RABBITMQ_4_DEFAULT_MAX_BYTES } from './size';
export { analyzePayload, MAX_FIELD_ANNOTATIONS, MAX_REASONS, MAX_WALK_DEPTH, MAX_WALK_NODES } from './payload';
export { extractIdempotencyKey, classifyKey, readMessagePath, MAX_KEY_LENGTH } from './idempotency';
