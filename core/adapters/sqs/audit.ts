/**
 * Audit fact collector for SQS: `ListQueues` + `GetQueueAttributes(All)` of every queue
 * (RedrivePolicy, RedriveAllowPolicy, MessageRetentionPeriod, VisibilityTimeout,
 * ReceiveMessageWaitTimeSeconds, MaximumMessageSize, FifoQueue, ContentBasedDeduplication,
 * ApproximateNumberOfMessages*), so dead-letter links and their sources resolve across the
 * account (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_GetQueueAttributes.html).
 * Optional message sampling (ReceiveMessage, then ChangeMessageVisibility 0) for payload sizes and
 * MessageDeduplicationId — opt-in, because a receive counts toward maxReceiveCount.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { QueuescopeError, type SqsConnectionConfig } from '../../../shared/domain';
import { matchesQueuePattern } from '../../../shared/config/project-config';
import type { AuditFacts, AuditFix, FixPreview, SqsQueueFacts, SqsSampleFacts } from '../../../shared/audit/types';
import type { AuditCollectOptions, AuditCollector } from '../audit-types';
import { throwIfAborted, withCallSignal } from '../../lib/abort';
import { DEFAULT_CLIENT_OPTIONS, createSqsClient, credentialConfigProblem, effectiveEndpoint } from './client';
import { mapWithConcurrency } from './concurrency';
import { mapSqsError } from './errors';
import { intAttr, looksLikeDeadLetterQueue, parseRedriveAllowPolicy, parseRedrivePolicy, queueNameFromUrl } from './attributes';

/** Queues read at most (all of them are read, to resolve dead-letter sources across the account). */
export const AUDIT_QUEUE_CAP = 5_000;
const CONCURRENCY = 8;
/** Largest sample per queue (messages). */
export const MAX_SAMPLE = 100;

interface Row {
  url: string;
  name: string;
  attrs: Record<string, string>;
}

/** Names a dead-letter queue of `name` would have (`orders-dlq`, `orders_dlq`, `orders.dlq`; FIFO: `payments-dlq.fifo`). */
export function sqsDlqCandidateNames(name: string): string[] {
  const fifo = name.endsWith('.fifo');
  const base = fifo ? name.slice(0, -5) : name;
  return ['-dlq', '_dlq', '.dlq', '-dead-letter', '-deadletter'].map((s) => `${base}${s}${fifo ? '.fifo' : ''}`);
}

/** Bytes a message counts toward MaximumMessageSize: body plus each attribute's name, type and value (UTF-8). */
export function messageSize(body: string | undefined, attributes: Record<string, { DataType?: string; StringValue?: string; BinaryValue?: Uint8Array }> | undefined): number {
  let n = Buffer.byteLength(body ?? '', 'utf8');
  for (const [k, v] of Object.entries(attributes ?? {})) {
    n += Buffer.byteLength(k, 'utf8') + Buffer.byteLength(v.DataType ?? '', 'utf8');
    n += v.StringValue !== undefined ? Buffer.byteLength(v.StringValue, 'utf8') : (v.BinaryValue?.byteLength ?? 0);
  }
  return n;
}

class SqsAuditCollector implements AuditCollector {
  private client: SQSClient | null = null;
  constructor(private readonly config: () => SqsConnectionConfig) {}

  private sqs(): SQSClient {
    const problem = credentialConfigProblem(this.config());
    if (problem) throw problem;
    this.client ??= createSqsClient(this.config(), DEFAULT_CLIENT_OPTIONS);
    return this.client;
  }

  /** Runs `fn` and then destroys the client, so no keep-alive socket outlives the call. */
  private async session<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } finally {
      this.client?.destroy();
      this.client = null;
    }
  }

  private async call<T>(action: string, queueName: string | undefined, run: (c: SQSClient, s: AbortSignal | undefined) => Promise<T>, signal?: AbortSignal): Promise<T> {
    throwIfAborted(signal);
    try {
      // One abort listener on `signal` however many calls run at once.
      const client = this.sqs();
      return await withCallSignal(signal, (s) => run(client, s));
    } catch (e) {
      if (e instanceof QueuescopeError) throw e;
      if (signal?.aborted === true) throw new QueuescopeError('CANCELLED', `${action} was cancelled.`);
      const cfg = this.config();
      throw mapSqsError(e, { action, endpoint: effectiveEndpoint(cfg), region: cfg.region, ...(queueName !== undefined ? { queueName } : {}) });
    }
  }

  private async listAll(signal?: AbortSignal): Promise<{ urls: string[]; truncated: boolean }> {
    const urls: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.call('ListQueues', undefined, (c, s) => c.send(new ListQueuesCommand({ MaxResults: 1000, ...(token !== undefined ? { NextToken: token } : {}) }), { abortSignal: s }), signal);
      urls.push(...(page.QueueUrls ?? []));
      token = page.NextToken === '' ? undefined : page.NextToken;
    } while (token !== undefined && urls.length < AUDIT_QUEUE_CAP);
    return { urls: [...new Set(urls)].slice(0, AUDIT_QUEUE_CAP), truncated: token !== undefined };
  }

  private async attributes(url: string, signal?: AbortSignal): Promise<Record<string, string>> {
    const out = await this.call('GetQueueAttributes', queueNameFromUrl(url), (c, s) => c.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }), { abortSignal: s }), signal);
    return out.Attributes ?? {};
  }

  private async sample(url: string, name: string, fifo: boolean, max: number, signal?: AbortSignal): Promise<SqsSampleFacts> {
    const seen = new Set<string>();
    let largest = 0;
    let withoutDedup = 0;
    for (let round = 0; round < Math.ceil(max / 10) && seen.size < max; round++) {
      const out = await this.call(
        'ReceiveMessage',
        name,
        (c, s) =>
          c.send(
            new ReceiveMessageCommand({
              QueueUrl: url,
              MaxNumberOfMessages: Math.min(10, max - seen.size),
              VisibilityTimeout: 30,
              WaitTimeSeconds: 0,
              MessageAttributeNames: ['All'],
              MessageSystemAttributeNames: ['All'],
              // Deprecated in favour of MessageSystemAttributeNames, but local-aws-sqs reads only this one.
              // eslint-disable-next-line @typescript-eslint/no-deprecated
              AttributeNames: ['All'],
            }),
            { abortSignal: s },
          ),
        signal,
      );
      const msgs = (out.Messages ?? []).filter((m) => m.MessageId !== undefined && !seen.has(m.MessageId));
      if (msgs.length === 0) break;
      for (const m of msgs) {
        seen.add(m.MessageId ?? '');
        largest = Math.max(largest, messageSize(m.Body, m.MessageAttributes));
        if (fifo && (m.Attributes?.MessageDeduplicationId ?? '') === '') withoutDedup++;
      }
      const entries = msgs.filter((m) => m.ReceiptHandle !== undefined).map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '', VisibilityTimeout: 0 }));
      if (entries.length > 0) await this.call('ChangeMessageVisibilityBatch', name, (c, s) => c.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: entries }), { abortSignal: s }), signal);
    }
    return { messages: seen.size, largestBytes: largest, withoutDeduplicationId: withoutDedup };
  }

  collect(options: AuditCollectOptions, signal?: AbortSignal): Promise<AuditFacts> {
    return this.session(() => this.collectFacts(options, signal));
  }

  private async collectFacts(options: AuditCollectOptions, signal?: AbortSignal): Promise<AuditFacts> {
    const cfg = this.config();
    const label = `sqs://${cfg.region}${cfg.endpoint !== undefined ? `?endpoint=${cfg.endpoint}` : ''}`;
    const notes: string[] = [];
    const { urls, truncated } = await this.listAll(signal);
    if (truncated) notes.push(`Only the first ${String(AUDIT_QUEUE_CAP)} queues were read; dead-letter sources may be incomplete.`);
    const rows = (
      await mapWithConcurrency(
        urls,
        CONCURRENCY,
        async (url): Promise<Row | null> => {
          try {
            return { url, name: queueNameFromUrl(url), attrs: await this.attributes(url, signal) };
          } catch (e) {
            if (e instanceof QueuescopeError && e.code === 'QUEUE_NOT_FOUND') return null;
            throw e;
          }
        },
        signal,
      )
    ).filter((r): r is Row => r !== null);
    const byArn = new Map(rows.filter((r) => r.attrs.QueueArn !== undefined).map((r) => [r.attrs.QueueArn ?? '', r]));
    const byName = new Map(rows.map((r) => [r.name, r]));
    const sources = new Map<string, string[]>();
    for (const r of rows) {
      const p = parseRedrivePolicy(r.attrs.RedrivePolicy);
      if (p && !('error' in p)) {
        const target = byArn.get(p.deadLetterTargetArn);
        if (target) sources.set(target.name, [...(sources.get(target.name) ?? []), r.name]);
      }
    }
    const pattern = options.pattern;
    const selected = rows.filter((r) => pattern === undefined || pattern === '' || matchesQueuePattern(pattern, r.name) || matchesQueuePattern(pattern, r.url));
    const sampleMax = Math.max(0, Math.min(MAX_SAMPLE, Math.floor(options.sampleMessages ?? 0)));
    const queues: SqsQueueFacts[] = [];
    for (const r of selected) {
      throwIfAborted(signal);
      const a = r.attrs;
      const fifo = a.FifoQueue === 'true' || r.name.endsWith('.fifo');
      const p = parseRedrivePolicy(a.RedrivePolicy);
      const policy = p && !('error' in p) ? p : null;
      let dlq: SqsQueueFacts['deadLetterQueue'] = null;
      if (policy) {
        const t = byArn.get(policy.deadLetterTargetArn);
        const tname = policy.deadLetterTargetArn.slice(policy.deadLetterTargetArn.lastIndexOf(':') + 1);
        dlq = t
          ? { arn: policy.deadLetterTargetArn, name: t.name, exists: true, fifo: t.attrs.FifoQueue === 'true' || t.name.endsWith('.fifo'), retentionS: intAttr(t.attrs, 'MessageRetentionPeriod'), redriveAllowPolicy: parseRedriveAllowPolicy(t.attrs.RedriveAllowPolicy), depth: intAttr(t.attrs, 'ApproximateNumberOfMessages') }
          : truncated
            ? null
            : { arn: policy.deadLetterTargetArn, name: tname, exists: false, fifo: null, retentionS: null, redriveAllowPolicy: null, depth: null };
      }
      const srcs = sources.get(r.name) ?? [];
      const isDlq = srcs.length > 0 || looksLikeDeadLetterQueue(r.name);
      let candidate: SqsQueueFacts['dlqCandidate'] = null;
      if (!policy && !isDlq) {
        const c = sqsDlqCandidateNames(r.name)
          .map((n) => byName.get(n))
          .find((x) => x !== undefined && x.attrs.QueueArn !== undefined);
        if (c) candidate = { name: c.name, url: c.url, arn: c.attrs.QueueArn ?? '' };
      }
      let sample: SqsSampleFacts | null = null;
      let sampleNote: string | null = 'message sampling is off (--sample-messages N receives messages, which counts toward maxReceiveCount)';
      if (sampleMax > 0) {
        if (policy && policy.maxReceiveCount <= 1) sampleNote = 'not sampled: with maxReceiveCount 1 a receive could dead-letter a message';
        else {
          sample = await this.sample(r.url, r.name, fifo, sampleMax, signal);
          sampleNote = null;
        }
      }
      queues.push({
        kind: 'sqs',
        id: `sqs:${r.url}`,
        name: r.name,
        url: r.url,
        arn: a.QueueArn ?? null,
        fifo,
        contentBasedDeduplication: fifo ? a.ContentBasedDeduplication === 'true' : null,
        visibilityTimeoutS: intAttr(a, 'VisibilityTimeout'),
        retentionS: intAttr(a, 'MessageRetentionPeriod'),
        receiveWaitTimeS: intAttr(a, 'ReceiveMessageWaitTimeSeconds'),
        maximumMessageSize: intAttr(a, 'MaximumMessageSize'),
        depth: intAttr(a, 'ApproximateNumberOfMessages'),
        inFlight: intAttr(a, 'ApproximateNumberOfMessagesNotVisible'),
        redrivePolicy: policy,
        redrivePolicyError: p && 'error' in p ? p.error : null,
        redriveAllowPolicy: parseRedriveAllowPolicy(a.RedriveAllowPolicy),
        deadLetterQueue: dlq,
        deadLetterSources: srcs,
        isDeadLetterQueue: isDlq,
        sample,
        sampleNote,
        dlqCandidate: candidate,
      });
    }
    queues.sort((x, y) => x.name.localeCompare(y.name));
    return { broker: 'sqs', label, servers: [], queues, notes };
  }

  private async plan(fix: AuditFix, signal?: AbortSignal): Promise<{ preview: FixPreview; policy: string }> {
    if (fix.kind !== 'sqs.set-redrive-policy') throw new QueuescopeError('INVALID_INPUT', `A ${fix.kind} fix cannot be applied to SQS.`);
    if (!Number.isInteger(fix.maxReceiveCount) || fix.maxReceiveCount < 1 || fix.maxReceiveCount > 1000) throw new QueuescopeError('INVALID_INPUT', `maxReceiveCount must be a whole number from 1 to 1000, got ${String(fix.maxReceiveCount)}.`);
    const src = await this.attributes(fix.queueUrl, signal);
    if ((src.RedrivePolicy ?? '').trim() !== '') throw new QueuescopeError('INVALID_INPUT', `${fix.queueName} already has a RedrivePolicy (${src.RedrivePolicy ?? ''}); nothing to fix.`);
    const dlqUrl = (await this.call('GetQueueUrl', fix.deadLetterQueueName, (c, s) => c.send(new GetQueueUrlCommand({ QueueName: fix.deadLetterQueueName }), { abortSignal: s }), signal)).QueueUrl;
    if (dlqUrl === undefined) throw new QueuescopeError('QUEUE_NOT_FOUND', `The dead-letter queue ${fix.deadLetterQueueName} does not exist.`);
    const dlq = await this.attributes(dlqUrl, signal);
    if (dlq.QueueArn !== fix.deadLetterTargetArn) throw new QueuescopeError('INVALID_INPUT', `${fix.deadLetterQueueName} has ARN ${dlq.QueueArn ?? '?'}, not ${fix.deadLetterTargetArn}.`);
    const srcFifo = src.FifoQueue === 'true';
    if (srcFifo !== (dlq.FifoQueue === 'true')) throw new QueuescopeError('INVALID_INPUT', `${fix.queueName} and ${fix.deadLetterQueueName} are of different types (FIFO vs standard).`);
    const notes: string[] = [];
    const allow = parseRedriveAllowPolicy(dlq.RedriveAllowPolicy);
    if (allow && (allow.redrivePermission === 'denyAll' || (allow.redrivePermission === 'byQueue' && !allow.sourceQueueArns.includes(src.QueueArn ?? '')))) {
      throw new QueuescopeError('INVALID_INPUT', `${fix.deadLetterQueueName}'s RedriveAllowPolicy does not allow ${fix.queueName} as a source.`);
    }
    const srcRet = intAttr(src, 'MessageRetentionPeriod');
    const dlqRet = intAttr(dlq, 'MessageRetentionPeriod');
    if (!srcFifo && srcRet !== null && dlqRet !== null && dlqRet <= srcRet) notes.push(`${fix.deadLetterQueueName} keeps messages ${String(dlqRet)} s, not longer than ${fix.queueName}'s ${String(srcRet)} s: raise its MessageRetentionPeriod too.`);
    notes.push(`A message received ${String(fix.maxReceiveCount)} time${fix.maxReceiveCount === 1 ? '' : 's'} without being deleted is moved to ${fix.deadLetterQueueName}.`);
    const policy = JSON.stringify({ deadLetterTargetArn: fix.deadLetterTargetArn, maxReceiveCount: fix.maxReceiveCount });
    return {
      policy,
      preview: {
        fix,
        summary: `Set RedrivePolicy on ${fix.queueName}: dead letters go to ${fix.deadLetterQueueName} after ${String(fix.maxReceiveCount)} receives.`,
        before: { RedrivePolicy: null },
        after: { RedrivePolicy: { deadLetterTargetArn: fix.deadLetterTargetArn, maxReceiveCount: fix.maxReceiveCount } },
        notes,
      },
    };
  }

  previewFix(fix: AuditFix, signal?: AbortSignal): Promise<FixPreview> {
    return this.session(async () => (await this.plan(fix, signal)).preview);
  }

  applyFix(fix: AuditFix, signal?: AbortSignal): Promise<FixPreview> {
    return this.session(() => this.apply(fix, signal));
  }

  private async apply(fix: AuditFix, signal?: AbortSignal): Promise<FixPreview> {
    const { preview, policy } = await this.plan(fix, signal);
    if (fix.kind !== 'sqs.set-redrive-policy') throw new QueuescopeError('INVALID_INPUT', 'Not an SQS fix.');
    await this.call('SetQueueAttributes', fix.queueName, (c, s) => c.send(new SetQueueAttributesCommand({ QueueUrl: fix.queueUrl, Attributes: { RedrivePolicy: policy } }), { abortSignal: s }), signal);
    const after = await this.attributes(fix.queueUrl, signal);
    const read = parseRedrivePolicy(after.RedrivePolicy);
    return { ...preview, after: { RedrivePolicy: read && !('error' in read) ? read : (after.RedrivePolicy ?? null) } };
  }
}

/** Creates the SQS audit collector; `config` is read at each call. */
export function createSqsAuditCollector(config: () => SqsConnectionConfig): AuditCollector {
  return new SqsAuditCollector(config);
}
