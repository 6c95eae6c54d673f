/**
 * The API's method names and IPC channel names, without the schemas, so the
 * preload (which must stay tiny and sandbox-safe) does not bundle zod.
 * `contract.ts` checks at compile time that this list matches its schemas.
 */
export const API_METHOD_NAMES = [
  'app.info',
  'connections.list',
  'connections.save',
  'connections.remove',
  'connections.test',
  'queues.list',
  'queues.get',
  'messages.peek',
  'snapshots.export',
  'snapshots.open',
  'operations.get',
  'operations.cancel',
  'operations.pause',
  'operations.resume',
  'inspect.queue',
  'inspect.rules.get',
  'inspect.rules.set',
  'tuning.sources',
  'tuning.measure',
  'tuning.apply',
  'redrive.plan',
  'redrive.analyse',
  'redrive.start',
  'redrive.history',
  'redrive.reinject',
  'audit.run',
  'audit.fix.preview',
  'audit.fix.apply',
  'watch.set',
  'watch.list',
  'watch.events',
] as const;

export type ApiMethodName = (typeof API_METHOD_NAMES)[number];

/** IPC channel name for a method (one channel per method, validated in main). */
export function channelFor(method: ApiMethodName): string {
  return `queuescope:${method}`;
}

/** True when `s` is one of the API's methods. */
export function isApiMethod(s: unknown): s is ApiMethodName {
  return typeof s === 'string' && (API_METHOD_NAMES as readonly string[]).includes(s);
}
