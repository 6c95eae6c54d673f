import { connectionConfigSchema, QueuescopeError, type BrokerKind, type ConnectionConfig } from '../../shared/domain';
import { createRabbitmqAdapter } from './rabbitmq';
import { createRedisAdapter } from './redis';
import { createSnapshotAdapter } from './snapshot';
import { createSqsAdapter } from './sqs';
import type { BrokerAdapter } from './types';

export type { BrokerAdapter, ListQueuesOptions } from './types';

/** One factory per connection kind. */
export type AdapterFactories = { [K in BrokerKind]: (config: Extract<ConnectionConfig, { kind: K }>) => BrokerAdapter };

/** The built-in adapters, keyed by `config.kind`. */
export const ADAPTER_FACTORIES: AdapterFactories = {
  redis: createRedisAdapter,
  rabbitmq: createRabbitmqAdapter,
  sqs: createSqsAdapter,
  snapshot: createSnapshotAdapter,
};

/**
 * Creates the adapter for a connection config (validated with `connectionConfigSchema` first, so
 * configs from files or IPC cannot reach an adapter malformed). Creating connects nothing:
 * adapters connect lazily on their first call.
 * @throws QueuescopeError `INVALID_INPUT` for an invalid config or unknown kind.
 */
export function createAdapter(config: ConnectionConfig, factories: AdapterFactories = ADAPTER_FACTORIES): BrokerAdapter {
  const parsed = connectionConfigSchema.safeParse(config);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || 'config'}: ${i.message}`).join('; ');
    throw new QueuescopeError('INVALID_INPUT', `Invalid connection settings: ${issues}.`);
  }
  const c = parsed.data;
  switch (c.kind) {
    case 'redis':
      return factories.redis(c);
    case 'rabbitmq':
      return factories.rabbitmq(c);
    case 'sqs':
      return factories.sqs(c);
    case 'snapshot':
      return factories.snapshot(c);
  }
}
