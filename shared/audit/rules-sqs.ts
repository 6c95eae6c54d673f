/**
 * SQS audit rules. Facts come from `GetQueueAttributes(All)` of each queue and of the queue its
 * `RedrivePolicy` names (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_GetQueueAttributes.html).
 */
import { fmtMs, notApplicable, p99Text, notChecked, pass, type QueueRule } from './rule-kit';
import type { RuleOutcome, SqsQueueFacts } from './types';

const DLQ_DOC = 'https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html';
const ATTR_DOC = 'https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html';

type SqsRule = QueueRule<SqsQueueFacts>;

function needsDlq(q: SqsQueueFacts): boolean {
  return !q.isDeadLetterQueue;
}

/** The rules below only make sense when a RedrivePolicy points to an existing DLQ. */
function withDlq(q: SqsQueueFacts, fn: (dlq: NonNullable<SqsQueueFacts['deadLetterQueue']>, policy: NonNullable<SqsQueueFacts['redrivePolicy']>) => RuleOutcome): RuleOutcome {
  if (!q.redrivePolicy) return notApplicable;
  if (!q.deadLetterQueue) return notChecked(`the dead-letter queue ${q.redrivePolicy.deadLetterTargetArn} could not be read`);
  if (!q.deadLetterQueue.exists) return notApplicable; // reported by sqs.dead-letter-queue-missing
  return fn(q.deadLetterQueue, q.redrivePolicy);
}

export const sqsNoRedrivePolicy: SqsRule = {
  kind: 'sqs',
  meta: {
    id: 'sqs.no-redrive-policy',
    broker: 'sqs',
    scope: 'queue',
    severity: 'error',
    title: 'No RedrivePolicy',
    why: 'Without a RedrivePolicy a message that always fails is received again and again until its retention period ends, then deleted: poison messages loop and are lost instead of landing in a dead-letter queue.',
    fix: 'Create a dead-letter queue of the same type and set RedrivePolicy {"deadLetterTargetArn": "<DLQ ARN>", "maxReceiveCount": 5} on the queue.',
    docUrl: DLQ_DOC,
    thresholds: {},
  },
  check(q) {
    if (!needsDlq(q)) return notApplicable;
    if (q.redrivePolicyError !== null) return { status: 'fail', message: `RedrivePolicy cannot be read: ${q.redrivePolicyError}.`, evidence: { redrivePolicyError: q.redrivePolicyError } };
    if (q.redrivePolicy) return pass();
    const fix = q.dlqCandidate
      ? {
          fix: {
            kind: 'sqs.set-redrive-policy' as const,
            queueId: q.id,
            queueName: q.name,
            queueUrl: q.url,
            deadLetterTargetArn: q.dlqCandidate.arn,
            deadLetterQueueName: q.dlqCandidate.name,
            maxReceiveCount: 5,
          },
        }
      : {};
    return {
      status: 'fail',
      message: `${q.name} has no RedrivePolicy: failing messages are retried until MessageRetentionPeriod (${q.retentionS === null ? 'unknown' : fmtMs(q.retentionS * 1000)}) deletes them.${q.dlqCandidate ? ` ${q.dlqCandidate.name} exists and could be its DLQ.` : ''}`,
      evidence: { RedrivePolicy: null, MessageRetentionPeriod: q.retentionS },
      ...fix,
    };
  },
};

export const sqsDeadLetterQueueMissing: SqsRule = {
  kind: 'sqs',
  meta: {
    id: 'sqs.dead-letter-queue-missing',
    broker: 'sqs',
    scope: 'queue',
    severity: 'error',
    title: 'RedrivePolicy names a queue that does not exist',
    why: 'When the deadLetterTargetArn does not exist, SQS cannot move messages that reach maxReceiveCount: they stay in the source queue and loop until their retention ends.',
    fix: 'Create the dead-letter queue the RedrivePolicy names, or point deadLetterTargetArn at an existing queue of the same type.',
    docUrl: DLQ_DOC,
    thresholds: {},
  },
  check(q) {
    if (!q.redrivePolicy) return notApplicable;
    if (!q.deadLetterQueue) return notChecked(`the dead-letter queue ${q.redrivePolicy.deadLetterTargetArn} could not be read`);
    if (q.deadLetterQueue.exists) return pass();
    return { status: 'fail', message: `RedrivePolicy of ${q.name} names ${q.redrivePolicy.deadLetterTargetArn}, which does not exist.`, evidence: { deadLetterTargetArn: q.redrivePolicy.deadLetterTargetArn } };
  },
};

export const sqsMaxReceiveCountLow: SqsRule = {
  kind: 'sqs',
  meta: {
    id: 'sqs.max-receive-count-too-low',
    broker: 'sqs',
    scope: 'queue',
    severity: 'warning',
    title: 'maxReceiveCount too low',
    why: 'With maxReceiveCount 1 every transient hiccup (a timeout, a consumer restart, a visibility timeout that expires once) sends the message to the dead-letter queue without a single retry.',
    fix: 'Set maxReceiveCount to 3–10 in the RedrivePolicy, so transient failures are retried before dead-lettering.',
    docUrl: DLQ_DOC,
    thresholds: { max: { default: 1, min: 1, description: 'highest maxReceiveCount that is reported (receives)' } },
  },
  check(q, ctx) {
    if (!q.redrivePolicy) return notApplicable;
    const max = ctx.threshold('max');
    if (q.redrivePolicy.maxReceiveCount > max) return pass();
    return { status: 'fail', message: `maxReceiveCount is ${q.redrivePolicy.maxReceiveCount}: a message is dead-lettered after ${q.redrivePolicy.maxReceiveCount === 1 ? 'its first failed receive' : `${q.redrivePolicy.maxReceiveCount} receives`}, with no retry.`, evidence: { maxReceiveCount: q.redrivePolicy.maxReceiveCount, threshold: max } };
  },
};

export const sqsMaxReceiveCountHigh: SqsRule = {
  kind: 'sqs',
  meta: {
    id: 'sqs.max-receive-count-too-high',
    broker: 'sqs',
    scope: 'queue',
    severity: 'warning',
    title: 'maxReceiveCount very high',
    why: 'A very high maxReceiveCount keeps a poison message looping through consumers (each failure waits a visibility timeout) for a long time before it is dead-lettered, wasting work and hiding the failure.',
    fix: 'Lower maxReceiveCount to 3–10; send non-retryable failures straight to the DLQ from the consumer.',
    docUrl: DLQ_DOC,
    thresholds: { max: { default: 20, min: 1, description: 'largest maxReceiveCount that passes (receives)' } },
  },
  check(q, ctx) {
    if (!q.redrivePolicy) return notApplicable;
    const max = ctx.threshold('max');
    if (q.redrivePolicy.maxReceiveCount <= max) return pass();
    const loop = q.visibilityTimeoutS === null ? null : q.redrivePolicy.maxReceiveCount * q.visibilityTimeoutS * 1000;
    return {
      status: 'fail',
      message: `maxReceiveCount is ${q.redrivePolicy.maxReceiveCount} (more than ${max})${loop === null ? '' : `: a message that always fails loops for at least ${fmtMs(loop)} before it is dead-lettered`}.`,
      evidence: { maxReceiveCount: q.redrivePolicy.maxReceiveCount, VisibilityTimeout: q.visibilityTimeoutS, threshold: max },
    };
  },
};

export const sqsDlqRetention: SqsRule = {
  kind: 'sqs',
  meta: {
    id: 'sqs.dlq-retention-too-short',
    broker: 'sqs',
    scope: 'queue',
    severity: 'error',
    title: 'DLQ retention not longer than the source',
    why: "A standard queue's dead letters keep their original enqueue time, so a DLQ whose MessageRetentionPeriod is not longer than the source's deletes them soon after (or at once after) they arrive.",
    fix: "Set the DLQ's MessageRetentionPeriod longer than the source's (e.g. 14 days, 1209600 s).",
    docUrl: DLQ_DOC,
    thresholds: {},
  },
  check(q) {
    if (q.fifo) return notApplicable; // FIFO: the enqueue timestamp resets when a message moves to the DLQ
    return withDlq(q, (dlq) => {
      if (q.retentionS === null || dlq.retentionS === null) return notChecked('MessageRetentionPeriod could not be read');
      if (dlq.retentionS > q.retentionS) return pass();
      return {
        status: 'fail',
        message: `${dlq.name} keeps messages ${fmtMs(dlq.retentionS * 1000)}, not longer than ${q.name}'s ${fmtMs(q.retentionS * 1000)}: a message dead-lettered near the end of its life in ${q.name} is deleted from ${dlq.name} at once.`,
        evidence: { sourceRetentionS: q.retentionS, dlqRetentionS: dlq.retentionS, dlq: dlq.name },
      };
    });
  },
};

export const sqsDlqTypeMismatch: SqsRule = {
  kind: 'sqs',
  meta: {
    id: 'sqs.dlq-type-mismatch',
    broker: 'sqs',
    scope: 'queue',
    severity: 'error',
    title: 'DLQ type differs from the source (FIFO vs standard)',
    why: 'The dead-letter queue of a FIFO queue must be FIFO and that of a standard queue standard; with a mismatch SQS cannot move the messages.',
    fix: 'Create a DLQ of the same type (FIFO names end in .fifo) and point the RedrivePolicy at it.',
    docUrl: DLQ_DOC,
    thresholds: {},
  },
  check(q) {
    return withDlq(q, (dlq) => {
      if (dlq.fifo === null) return notChecked(`the type of ${dlq.name} could not be read`);
      if (dlq.fifo === q.fifo) return pass();
      return { status: 'fail', message: `${q.name} is ${q.fifo ? 'FIFO' : 'standard'} but its DLQ ${dlq.name} is ${dlq.fifo ? 'FIFO' : 'standard'}.`, evidence: { sourceFifo: q.fifo, dlqFifo: dlq.fifo, dlq: dlq.name } };
    });
  },
};

export const sqsRedriveAllowDenies: SqsRule = {
  kind: 'sqs',
  meta: {
    id: 'sqs.redrive-allow-policy-denies-source',
    broker: 'sqs',
    scope: 'queue',
    severity: 'error',
    title: "DLQ's RedriveAllowPolicy denies this source",
    why: "A DLQ whose RedriveAllowPolicy is denyAll, or byQueue without this queue's ARN, does not accept this queue's dead letters.",
    fix: 'Set the DLQ\'s RedriveAllowPolicy to {"redrivePermission":"byQueue","sourceQueueArns":["<source ARN>"]} (or allowAll).',
    docUrl: ATTR_DOC,
    thresholds: {},
  },
  check(q) {
    return withDlq(q, (dlq) => {
      const p = dlq.redriveAllowPolicy;
      if (!p || p.redrivePermission === 'allowAll') return pass();
      if (p.redrivePermission === 'denyAll') return { status: 'fail', message: `${dlq.name} has RedriveAllowPolicy denyAll: it refuses ${q.name}'s dead letters.`, evidence: { redriveAllowPolicy: p, dlq: dlq.name } };
      if (p.redrivePermission === 'byQueue') {
        if (q.arn === null) return notChecked(`the ARN of ${q.name} could not be read`);
        if (p.sourceQueueArns.includes(q.arn)) return pass();
        return { status: 'fail', message: `${dlq.name} has RedriveAllowPolicy byQueue without ${q.name} (${q.arn}) in sourceQueueArns.`, evidence: { redriveAllowPolicy: p, sourceArn: q.arn, dlq: dlq.name } };
      }
      return { status: 'fail', message: `${dlq.name} has an unknown redrivePermission "${p.redrivePermission}".`, evidence: { redriveAllowPolicy: p } };
    });
  },
};

export const sqsVisibilityTimeout: SqsRule = {
  kind: 'sqs',
  meta: {
    id: 'sqs.visibility-timeout-below-processing-time',
    broker: 'sqs',
    scope: 'queue',
    severity: 'error',
    title: 'Visibility timeout below safety × measured p99',
    why: 'A message whose processing outlives the visibility timeout becomes visible again and is delivered to a second consumer while the first is still working on it: duplicates, and eventually a spurious dead-letter.',
    fix: 'Set VisibilityTimeout to several times the measured p99 processing time (`queuescope tune`), and extend it with ChangeMessageVisibility (a heartbeat) for long jobs.',
    docUrl: 'https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html',
    thresholds: { safetyFactor: { default: 3, min: 1, max: 100, description: 'VisibilityTimeout must be at least this many times the measured p99' } },
    needsMeasurement: true,
  },
  check(q, ctx) {
    if (q.visibilityTimeoutS === null) return notChecked('VisibilityTimeout could not be read');
    const m = ctx.measurement(q);
    if (!m || m.p99Ms === null) return notChecked('no measurement');
    const factor = ctx.threshold('safetyFactor');
    const need = m.p99Ms * factor;
    const vt = q.visibilityTimeoutS * 1000;
    if (vt >= need) return pass(`VisibilityTimeout ${fmtMs(vt)} ≥ ${factor} × ${p99Text({ ...m, p99Ms: m.p99Ms })}`);
    return {
      status: 'fail',
      message: `VisibilityTimeout is ${fmtMs(vt)}, below ${factor} × ${p99Text({ ...m, p99Ms: m.p99Ms })} = ${fmtMs(need)}${vt < m.p99Ms ? ': more than 1% of messages are delivered again while still being processed' : ''}.`,
      evidence: { visibilityTimeoutS: q.visibilityTimeoutS, p99Ms: m.p99Ms, p99Basis: m.p99Basis, meanMs: m.meanMs, safetyFactor: factor, measurementSource: m.source },
    };
  },
};

export const sqsShortPolling: SqsRule = {
  kind: 'sqs',
  meta: {
    id: 'sqs.short-polling',
    broker: 'sqs',
    scope: 'queue',
    severity: 'info',
    title: 'Short polling (ReceiveMessageWaitTimeSeconds = 0)',
    why: 'Short polling queries a subset of SQS servers, so receives come back empty (or miss messages) while the queue holds some, and every empty receive is billed.',
    fix: 'Set ReceiveMessageWaitTimeSeconds to 20 (or pass WaitTimeSeconds on ReceiveMessage).',
    docUrl: 'https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-short-and-long-polling.html',
    thresholds: {},
  },
  check(q) {
    if (q.isDeadLetterQueue) return notApplicable; // read by people and redrive tools, not by polling consumers
    if (q.receiveWaitTimeS === null) return notChecked('ReceiveMessageWaitTimeSeconds could not be read');
    if (q.receiveWaitTimeS > 0) return pass();
    return { status: 'fail', message: `ReceiveMessageWaitTimeSeconds is 0 on ${q.name}: consumers short-poll unless they pass WaitTimeSeconds.`, evidence: { receiveMessageWaitTimeSeconds: 0 } };
  },
};

export const sqsDlqNotEmpty: SqsRule = {
  kind: 'sqs',
  meta: {
    id: 'sqs.dlq-not-empty',
    broker: 'sqs',
    scope: 'queue',
    severity: 'warning',
    title: 'Dead-letter queue is not empty',
    why: 'Messages in a dead-letter queue are work that never happened; releasing with them unexamined hides a failure (and they expire with the DLQ retention).',
    fix: 'Inspect the dead letters (queuescope peek), fix the cause, then redrive them (their handlers must be idempotent) or delete them on purpose.',
    docUrl: DLQ_DOC,
    thresholds: { max: { default: 0, min: 0, description: 'messages tolerated in a DLQ' } },
  },
  check(q, ctx) {
    if (!q.isDeadLetterQueue) return notApplicable;
    if (q.depth === null) return notChecked('ApproximateNumberOfMessages could not be read');
    const max = ctx.threshold('max');
    const total = q.depth + (q.inFlight ?? 0);
    if (total <= max) return pass();
    return { status: 'fail', message: `${q.name} holds ${total} dead letter${total === 1 ? '' : 's'}${q.deadLetterSources.length > 0 ? ` (from ${q.deadLetterSources.join(', ')})` : ''}.`, evidence: { approximateNumberOfMessages: q.depth, notVisible: q.inFlight, threshold: max } };
  },
};

export const sqsPayloadNearMax: SqsRule = {
  kind: 'sqs',
  meta: {
    id: 'sqs.payload-near-max-size',
    broker: 'sqs',
    scope: 'queue',
    severity: 'warning',
    title: 'Payloads near MaximumMessageSize',
    why: 'Messages close to MaximumMessageSize mean the next bigger one is rejected at send time; it usually means entity data is embedded where an ID would do.',
    fix: 'Send IDs (or an S3 pointer, the extended client library) instead of large payloads; raise MaximumMessageSize only as a stopgap (max 1 MiB).',
    docUrl: 'https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html',
    thresholds: { ratio: { default: 0.8, min: 0.01, max: 1, description: 'share of MaximumMessageSize at which a sampled message is reported' } },
    needsSample: true,
  },
  check(q, ctx) {
    if (q.maximumMessageSize === null) return notChecked('MaximumMessageSize could not be read');
    if (!q.sample) return notChecked(q.sampleNote ?? 'no messages sampled');
    if (q.sample.messages === 0) return notChecked('the queue had no messages to sample');
    const ratio = ctx.threshold('ratio');
    if (q.sample.largestBytes < ratio * q.maximumMessageSize) return pass();
    return {
      status: 'fail',
      message: `The largest of ${q.sample.messages} sampled messages is ${q.sample.largestBytes} bytes, ${Math.round((q.sample.largestBytes / q.maximumMessageSize) * 100)}% of MaximumMessageSize ${q.maximumMessageSize}.`,
      evidence: { largestBytes: q.sample.largestBytes, maximumMessageSize: q.maximumMessageSize, sampled: q.sample.messages, ratio },
    };
  },
};

export const sqsFifoNoDedup: SqsRule = {
  kind: 'sqs',
  meta: {
    id: 'sqs.fifo-messages-without-deduplication-id',
    broker: 'sqs',
    scope: 'queue',
    severity: 'warning',
    title: 'FIFO queue without content-based deduplication; messages lack MessageDeduplicationId',
    why: 'A FIFO queue deduplicates only by MessageDeduplicationId or, with ContentBasedDeduplication, by body hash; messages without either are not protected against a producer retry sending them twice.',
    fix: 'Send a MessageDeduplicationId derived from the business operation (the idempotency key, e.g. A-1001:charge), or enable ContentBasedDeduplication.',
    docUrl: 'https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/using-messagededuplicationid-property.html',
    thresholds: {},
    needsSample: true,
  },
  check(q) {
    if (!q.fifo) return notApplicable;
    if (q.contentBasedDeduplication === true) return pass();
    if (!q.sample) return notChecked(q.sampleNote ?? 'no messages sampled');
    if (q.sample.messages === 0) return notChecked('the queue had no messages to sample');
    if (q.sample.withoutDeduplicationId === 0) return pass(`all ${q.sample.messages} sampled messages carry a MessageDeduplicationId`);
    return {
      status: 'fail',
      message: `${q.sample.withoutDeduplicationId} of ${q.sample.messages} sampled messages have no MessageDeduplicationId and ContentBasedDeduplication is off.`,
      evidence: { contentBasedDeduplication: q.contentBasedDeduplication, sampled: q.sample.messages, withoutDeduplicationId: q.sample.withoutDeduplicationId },
    };
  },
};

/** Every SQS rule, in report order. */
export const SQS_RULES: SqsRule[] = [
  sqsNoRedrivePolicy,
  sqsDeadLetterQueueMissing,
  sqsMaxReceiveCountLow,
  sqsMaxReceiveCountHigh,
  sqsDlqRetention,
  sqsDlqTypeMismatch,
  sqsRedriveAllowDenies,
  sqsVisibilityTimeout,
  sqsShortPolling,
  sqsDlqNotEmpty,
  sqsPayloadNearMax,
  sqsFifoNoDedup,
];
