/**
 * RabbitMQ adapter: AMQP 0-9-1 (amqplib, `noDelay: true`) for reads and existence checks, the
 * management HTTP API for listing, types, policies and topology.
 */
export { createRabbitmqAdapter, RabbitmqAdapter } from './adapter';
export { decodeQueueId, encodeQueueId, type QueueRef } from './queue-id';
export { resolveRabbitmqSettings, type RabbitmqSettings } from './settings';
export { topicMatches, effectiveSettings, resolveDeadLetterTargets, capabilitiesFor, type EffectiveSettings } from './topology';
