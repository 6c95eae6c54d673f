import { summarizeQueue } from '../../../shared/analysis/summary';
import type { InspectReport } from '../../../shared/api/inspect';
import type { OperationSnapshot, QueueCapabilities, QueueMessage, QueueSummary } from '../../../shared/domain';

/** A queue summary for component tests; override what the test is about. */
export function summary(over: Omit<Partial<QueueSummary>, 'capabilities'> & { capabilities?: Partial<QueueCapabilities> } = {}): QueueSummary {
  const { capabilities, ...rest } = over;
  return {
    id: 'rabbitmq:%2F/orders',
    name: 'orders',
    broker: 'rabbitmq',
    kind: 'rabbitmq-quorum',
    depth: 3,
    inFlight: 0,
    delayed: null,
    consumers: 0,
    counts: {},
    deadLetterTargets: [],
    deadLetterSources: [],
    isDeadLetterQueue: false,
    config: { arguments: { 'x-queue-type': 'quorum' } },
    ...rest,
    capabilities: {
      canPeekNonDestructively: true,
      peekSideEffects: [],
      peekMayDeadLetter: false,
      canPageFromCursor: true,
      maxPeekWindow: 1000,
      peekStates: [],
      ...capabilities,
    },
  };
}

/** A message with a UTF-8 body. */
export function message(id: string, body: string, over: Partial<QueueMessage> = {}): QueueMessage {
  return {
    id,
    queueId: 'rabbitmq:%2F/orders',
    queueName: 'orders',
    position: 0,
    body: { encoding: 'utf8', data: body, sizeBytes: new TextEncoder().encode(body).length, truncated: false },
    headers: {},
    properties: {},
    meta: {},
    ...over,
  };
}

/** An operation snapshot for component tests (a completed inspection of 0 messages by default); override what the test is about. */
export function operationSnapshot(over: Partial<OperationSnapshot> = {}): OperationSnapshot {
  return { id: 'op-1', type: 'inspect', label: 'Inspect orders', status: 'completed', total: 0, processed: 0, moved: 0, skipped: 0, failed: 0, errors: [], rate: null, etaMs: null, startedAt: 0, finishedAt: 0, result: null, ...over };
}

/** An inspect report of `q` that analysed no message (summary of nothing, built-in rules); override what the test is about. */
export function emptyInspectReport(q: QueueSummary, over: Partial<InspectReport> = {}): InspectReport {
  return {
    queue: { id: q.id, name: q.name, kind: q.kind, broker: q.broker, isDeadLetterQueue: q.isDeadLetterQueue },
    state: null,
    rulesSource: 'built-in rules',
    rules: { keyRules: [], snapshotFields: [], queueIsSnapshot: false },
    analysed: 0,
    total: 0,
    partial: false,
    partialReason: null,
    sideEffects: [],
    summary: summarizeQueue([]),
    messages: [],
    messagesTruncated: false,
    comparisons: [],
    elapsedMs: 1,
    ...over,
  };
}
