import {
  ChangeMessageVisibilityBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListDeadLetterSourceQueuesCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import {
  QueuescopeError,
  type ConnectionCheck,
  type ConnectionTestResult,
  type DeadLetterTarget,
  type PeekOptions,
  type PeekPage,
  type QueueMessage,
  type QueueSummary,
  type SqsConnectionConfig,
} from '../../../shared/domain';
import type { BrokerAdapter, ListQueuesOptions } from '../types';
import {
  PEEK_VISIBILITY_TIMEOUT_S,
  SQS_MAX_PEEK_WINDOW,
  globMatcher,
  intAttr,
  literalPrefix,
  looksLikeDeadLetterQueue,
  parseArn,
  parseRedriveAllowPolicy,
  parseRedrivePolicy,
  queueConfigFromAttributes,
  queueCounts,
  queueKind,
  queueNameFromUrl,
  sqsCapabilities,
  type RedrivePolicy,
} from './attributes';
import { DEFAULT_CLIENT_OPTIONS, TEST_CLIENT_OPTIONS, createSqsClient, credentialConfigProblem, describeCredentialSource, effectiveEndpoint } from './client';
import { mapWithConcurrency } from './concurrency';
import { withCallSignal } from '../../lib/abort';
import { mapSqsError } from './errors';
import { parseSqsQueueUrl, sqsQueueUrlMismatch } from '../../../shared/domain/sqs-queue-url';
import { DEFAULT_MAX_BODY_BYTES, toQueueMessage } from './message';
import { createSqsAuditCollector } from './audit';
import { SqsRedriveMover } from './redrive';
import { createSqsTuning } from './tuning';

/** Parallel `GetQueueAttributes` / `ListDeadLetterSourceQueues` calls while listing. */
const ATTRIBUTE_CONCURRENCY = 16;
/** Default and hard upper bound on queues one `listQueues` returns. */
const DEFAULT_LIST_LIMIT = 10_000;
/** `ListDeadLetterSourceQueues` pages (of 1,000) read per DLQ at most. */
const MAX_SOURCE_PAGES = 10;
/** Long-poll retries (WaitTimeSeconds 1) per peek when short polling came back empty but the queue reports messages. */
const MAX_LONG_POLL_RETRIES = 1;

/** Errors after which continuing a listing is pointless: they would hit every queue. */
const FATAL_CODES = new Set(['CANCELLED', 'HOST_UNREACHABLE', 'AUTH_FAILED', 'TLS_ERROR', 'TIMEOUT', 'INVALID_INPUT']);

interface AttributeRow {
  url: string;
  name: string;
  /** null when the attributes could not be read (then `error` says why). */
  attrs: Record<string, string> | null;
  error?: QueuescopeError;
}

/** A queue a RedrivePolicy points to, resolved outside the listed queues. */
interface ResolvedTarget {
  url: string | null;
  name: string;
  retentionSeconds: number | null;
  fifo: boolean;
  /** Why it could not be resolved, when `url` is null. */
  problem?: string;
}

function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted === true) throw new QueuescopeError('CANCELLED', `${what} was cancelled.`);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function formatDuration(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400} d`;
  if (seconds % 3_600 === 0) return `${seconds / 3_600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/**
 * {@link BrokerAdapter} for Amazon SQS and SQS-compatible emulators, over AWS SDK v3
 * (`@aws-sdk/client-sqs`, JSON protocol). Queue ids are `sqs:<QueueUrl>` as `ListQueues` returns it
 * (`sqs:<name>` is also accepted and resolved with `GetQueueUrl`).
 *
 * Broker documentation followed: the Amazon SQS API Reference (ListQueues, GetQueueAttributes,
 * ListDeadLetterSourceQueues, ReceiveMessage, ChangeMessageVisibilityBatch, GetQueueUrl) and the SQS
 * Developer Guide sections on dead-letter queues, visibility timeout and short/long polling.
 */
export class SqsAdapter implements BrokerAdapter {
  readonly broker = 'sqs' as const;
  private client: SQSClient | null = null;
  private testClient: SQSClient | null = null;
  private readonly endpoint: string;
  /** Whether the server implements ListDeadLetterSourceQueues: null until tried (fauxqs does not). */
  private sourcesApiSupported: boolean | null = null;
  readonly audit = createSqsAuditCollector(() => this.config);
  /** DLQ redrive (issue 4): client-side moves with SendMessageBatch/DeleteMessageBatch, native StartMessageMoveTask. See {@link SqsRedriveMover}. */
  readonly redrive: SqsRedriveMover = new SqsRedriveMover({
    endpoint: () => this.endpoint,
    call: (action, queueName, run, signal) => this.call(action, queueName, run, signal),
    resolveQueueUrl: (queueId, signal) => this.resolveQueueUrl(queueId, signal),
  });
  readonly tuning = createSqsTuning({ call: this.call.bind(this), resolveQueueUrl: this.resolveQueueUrl.bind(this), config: () => this.config });

  constructor(private readonly config: SqsConnectionConfig) {
    this.endpoint = effectiveEndpoint(config);
  }

  // ---------------------------------------------------------------- plumbing

  private sqs(): SQSClient {
    const problem = credentialConfigProblem(this.config);
    if (problem) throw problem;
    this.client ??= createSqsClient(this.config, DEFAULT_CLIENT_OPTIONS);
    return this.client;
  }

  /** Runs one SDK call, mapping whatever it throws. `signal` aborts the HTTP request. */
  private async call<T>(action: string, queueName: string | undefined, run: (client: SQSClient, abortSignal: AbortSignal | undefined) => Promise<T>, signal?: AbortSignal): Promise<T> {
    throwIfAborted(signal, action);
    const client = this.sqs();
    try {
      // One abort listener on `signal` however many calls run at once (listQueues runs 16).
      return await withCallSignal(signal, (s) => run(client, s));
    } catch (e) {
      if (signal?.aborted === true) throw new QueuescopeError('CANCELLED', `${action} was cancelled.`, undefined, { cause: e });
      throw mapSqsError(e, { action, endpoint: this.endpoint, region: this.config.region, ...(queueName !== undefined ? { queueName } : {}) });
    }
  }

  /**
   * `sqs:<QueueUrl>` → the URL; `sqs:<name>` → resolved with GetQueueUrl. A plain queue URL as AWS or
   * an emulator prints it (`https://sqs.<region>.amazonaws.com/<account>/<name>`,
   * `http://127.0.0.1:4566/<account>/<name>`, see {@link parseSqsQueueUrl}) is taken too: it is
   * resolved with GetQueueUrl (name and owner account) to the URL this endpoint itself uses, so the
   * queue's id is the one the listing gives it (fauxqs answers `http://sqs.<region>.127.0.0.1:4566/…`
   * for a queue the user addresses as `http://127.0.0.1:4566/…`); when GetQueueUrl is not allowed,
   * the URL as given. A plain URL of another region or server than this connection is refused
   * ({@link sqsQueueUrlMismatch}): resolving it by name here would pick a namesake.
   * @throws QueuescopeError INVALID_INPUT (neither form, or a URL of another region/server), QUEUE_NOT_FOUND, connection codes.
   */
  private async resolveQueueUrl(queueId: string, signal?: AbortSignal): Promise<string> {
    const plain = parseSqsQueueUrl(queueId);
    if (plain !== null) {
      // Resolved by name on this connection: a URL of another region or server would pick a namesake here.
      const mismatch = sqsQueueUrlMismatch(plain, this.endpoint, this.config.region);
      if (mismatch !== null) {
        throw new QueuescopeError(
          'INVALID_INPUT',
          `The queue URL ${plain.url.slice(0, 300)} is not on this connection: ${mismatch}. Nothing was read. Give the URL alone (it is then the connection too), or the connection it belongs to before it.`,
          { queueId: plain.url.slice(0, 300) },
        );
      }
      try {
        const out = await this.call('GetQueueUrl', plain.name, (c, s) => c.send(new GetQueueUrlCommand({ QueueName: plain.name, QueueOwnerAWSAccountId: plain.accountId }), { abortSignal: s }), signal);
        return out.QueueUrl ?? plain.url;
      } catch (e) {
        if (e instanceof QueuescopeError && (e.code === 'QUEUE_NOT_FOUND' || e.code === 'CANCELLED' || e.code === 'HOST_UNREACHABLE' || e.code === 'AUTH_FAILED')) throw e;
        return plain.url;
      }
    }
    if (!queueId.startsWith('sqs:') || queueId.length === 4) {
      throw new QueuescopeError('INVALID_INPUT', `"${queueId.slice(0, 200)}" is not an SQS queue id: expected sqs:<QueueUrl>.`, { queueId: queueId.slice(0, 200) });
    }
    const rest = queueId.slice(4);
    if (/^https?:\/\//i.test(rest)) return rest;
    const out = await this.call('GetQueueUrl', rest, (c, s) => c.send(new GetQueueUrlCommand({ QueueName: rest }), { abortSignal: s }), signal);
    if (out.QueueUrl === undefined) throw new QueuescopeError('QUEUE_NOT_FOUND', `The SQS queue "${rest}" does not exist at ${this.endpoint}.`, { queue: rest });
    return out.QueueUrl;
  }

  private async attributesOf(url: string, signal?: AbortSignal): Promise<Record<string, string>> {
    const name = queueNameFromUrl(url);
    const out = await this.call('GetQueueAttributes', name, (c, s) => c.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }), { abortSignal: s }), signal);
    return out.Attributes ?? {};
  }

  /** Attributes for many queues (bounded concurrency). Queues deleted meanwhile are dropped; other per-queue errors are kept in the row. */
  private async attributeRows(urls: string[], signal?: AbortSignal): Promise<AttributeRow[]> {
    const rows = await mapWithConcurrency(
      urls,
      ATTRIBUTE_CONCURRENCY,
      async (url): Promise<AttributeRow | null> => {
        const name = queueNameFromUrl(url);
        try {
          return { url, name, attrs: await this.attributesOf(url, signal) };
        } catch (e) {
          const err = e instanceof QueuescopeError ? e : mapSqsError(e, { action: 'GetQueueAttributes', endpoint: this.endpoint, region: this.config.region, queueName: name });
          if (err.code === 'QUEUE_NOT_FOUND') return null; // deleted between ListQueues and now
          if (FATAL_CODES.has(err.code)) throw err;
          return { url, name, attrs: null, error: err };
        }
      },
      signal,
    );
    throwIfAborted(signal, 'Listing SQS queues');
    return rows.filter((r): r is AttributeRow => r !== null);
  }

  /**
   * Source queues of one DLQ via ListDeadLetterSourceQueues (paged). Returns null when the server
   * does not implement it (remembered for this adapter) or the credentials may not call it.
   */
  private async sourcesFromApi(url: string, signal?: AbortSignal): Promise<string[] | null> {
    if (this.sourcesApiSupported === false) return null;
    const name = queueNameFromUrl(url);
    const out: string[] = [];
    let token: string | undefined;
    try {
      for (let page = 0; page < MAX_SOURCE_PAGES; page++) {
        const r = await this.call(
          'ListDeadLetterSourceQueues',
          name,
          (c, s) => c.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: url, MaxResults: 1000, ...(token !== undefined ? { NextToken: token } : {}) }), { abortSignal: s }),
          signal,
        );
        out.push(...(r.queueUrls ?? []));
        token = r.NextToken;
        if (token === undefined || token === '') break;
      }
      this.sourcesApiSupported = true;
      return out;
    } catch (e) {
      if (!(e instanceof QueuescopeError)) throw e;
      if (e.code === 'UNSUPPORTED') {
        this.sourcesApiSupported = false;
        return null;
      }
      if (e.code === 'PERMISSION_DENIED' || e.code === 'QUEUE_NOT_FOUND') return null;
      throw e;
    }
  }

  /** Resolves RedrivePolicy targets that are not among `known` (GetQueueUrl by name and account, then its retention). */
  private async resolveTargets(arns: string[], signal?: AbortSignal): Promise<Map<string, ResolvedTarget>> {
    const out = new Map<string, ResolvedTarget>();
    const results = await mapWithConcurrency(
      arns,
      ATTRIBUTE_CONCURRENCY,
      async (arn): Promise<ResolvedTarget> => {
        const parsed = parseArn(arn);
        if (parsed === null || parsed.service !== 'sqs') return { url: null, name: arn, retentionSeconds: null, fifo: false, problem: `deadLetterTargetArn "${arn}" is not an SQS queue ARN` };
        const name = parsed.resource;
        const fifo = name.endsWith('.fifo');
        if (parsed.region !== '' && parsed.region !== this.config.region) {
          return { url: null, name, retentionSeconds: null, fifo, problem: `the dead-letter queue ${name} is in region ${parsed.region}, but SQS needs it in the source's region ${this.config.region}` };
        }
        try {
          const r = await this.call(
            'GetQueueUrl',
            name,
            (c, s) => c.send(new GetQueueUrlCommand({ QueueName: name, ...(parsed.accountId !== '' ? { QueueOwnerAWSAccountId: parsed.accountId } : {}) }), { abortSignal: s }),
            signal,
          );
          if (r.QueueUrl === undefined) return { url: null, name, retentionSeconds: null, fifo, problem: `the dead-letter queue ${name} (${arn}) does not exist` };
          let retention: number | null = null;
          try {
            retention = intAttr(await this.attributesOf(r.QueueUrl, signal), 'MessageRetentionPeriod');
          } catch (e) {
            if (e instanceof QueuescopeError && FATAL_CODES.has(e.code)) throw e;
          }
          return { url: r.QueueUrl, name, retentionSeconds: retention, fifo };
        } catch (e) {
          if (e instanceof QueuescopeError && e.code === 'QUEUE_NOT_FOUND') {
            return { url: null, name, retentionSeconds: null, fifo, problem: `the dead-letter queue ${name} (${arn}) does not exist: the redrive has nowhere to go` };
          }
          if (e instanceof QueuescopeError && !FATAL_CODES.has(e.code)) {
            return { url: null, name, retentionSeconds: null, fifo, problem: `the dead-letter queue ${name} could not be checked (${e.code}: ${e.message})` };
          }
          throw e;
        }
      },
      signal,
    );
    throwIfAborted(signal, 'Resolving dead-letter queues');
    arns.forEach((arn, i) => {
      const r = results[i];
      if (r !== undefined) out.set(arn, r);
    });
    return out;
  }

  /**
   * Builds summaries for attribute rows: dead-letter links by matching each RedrivePolicy's
   * `deadLetterTargetArn` against the rows' `QueueArn` (others resolved with GetQueueUrl), sources by
   * inverting the RedrivePolicies, plus ListDeadLetterSourceQueues for `sourceApiFor` queues.
   */
  private async summarize(rows: AttributeRow[], sourceApiFor: (row: AttributeRow, invertedSources: string[]) => boolean, signal?: AbortSignal): Promise<QueueSummary[]> {
    const byArn = new Map<string, AttributeRow>();
    const inverted = new Map<string, string[]>();
    const policies = new Map<string, RedrivePolicy | { error: string } | null>();
    for (const r of rows) if (r.attrs?.QueueArn !== undefined) byArn.set(r.attrs.QueueArn, r);
    for (const r of rows) {
      const p = parseRedrivePolicy(r.attrs?.RedrivePolicy);
      policies.set(r.url, p);
      if (p !== null && !('error' in p)) {
        const list = inverted.get(p.deadLetterTargetArn) ?? [];
        list.push(`sqs:${r.url}`);
        inverted.set(p.deadLetterTargetArn, list);
      }
    }
    const unresolved = [...new Set([...policies.values()].flatMap((p) => (p !== null && !('error' in p) && !byArn.has(p.deadLetterTargetArn) ? [p.deadLetterTargetArn] : [])))];
    const external = unresolved.length > 0 ? await this.resolveTargets(unresolved, signal) : new Map<string, ResolvedTarget>();

    const apiSources = new Map<string, string[]>();
    const askApi = rows.filter((r) => r.attrs !== null && sourceApiFor(r, r.attrs.QueueArn !== undefined ? (inverted.get(r.attrs.QueueArn) ?? []) : []));
    if (askApi.length > 0 && this.sourcesApiSupported !== false) {
      // The first call tells whether the server has the API; only then fan out.
      const [first, ...others] = askApi;
      const firstResult = first ? await this.sourcesFromApi(first.url, signal) : null;
      if (first && firstResult !== null) apiSources.set(first.url, firstResult);
      if (this.sourcesApiSupported === true && others.length > 0) {
        const results = await mapWithConcurrency(others, ATTRIBUTE_CONCURRENCY, (r) => this.sourcesFromApi(r.url, signal), signal);
        throwIfAborted(signal, 'Listing dead-letter sources');
        others.forEach((r, i) => {
          const v = results[i];
          if (v !== null && v !== undefined) apiSources.set(r.url, v);
        });
      }
    }

    return rows.map((row) => this.toSummary(row, policies.get(row.url) ?? null, byArn, external, inverted, apiSources));
  }

  private toSummary(
    row: AttributeRow,
    policy: RedrivePolicy | { error: string } | null,
    byArn: Map<string, AttributeRow>,
    external: Map<string, ResolvedTarget>,
    inverted: Map<string, string[]>,
    apiSources: Map<string, string[]>,
  ): QueueSummary {
    const { url, name, attrs } = row;
    const id = `sqs:${url}`;
    const kind = queueKind(name, attrs);
    const targets: DeadLetterTarget[] = [];
    let dlqName: string | null = null;
    if (policy !== null && 'error' in policy) {
      targets.push({ queueId: null, queueName: null, via: 'RedrivePolicy', problem: `${policy.error}: messages are never dead-lettered` });
    } else if (policy !== null) {
      const via = `RedrivePolicy (maxReceiveCount ${policy.maxReceiveCount})`;
      const listed = byArn.get(policy.deadLetterTargetArn);
      const ext = external.get(policy.deadLetterTargetArn);
      const targetName = listed?.name ?? ext?.name ?? parseArn(policy.deadLetterTargetArn)?.resource ?? policy.deadLetterTargetArn;
      dlqName = targetName;
      const targetUrl = listed?.url ?? ext?.url ?? null;
      const problems: string[] = [];
      if (targetUrl === null) problems.push(ext?.problem ?? `the dead-letter queue ${policy.deadLetterTargetArn} was not found`);
      const targetFifo = listed ? queueKind(listed.name, listed.attrs) === 'sqs-fifo' : (ext?.fifo ?? targetName.endsWith('.fifo'));
      if (targetUrl !== null && targetFifo !== (kind === 'sqs-fifo')) {
        problems.push(`${name} is a ${kind === 'sqs-fifo' ? 'FIFO' : 'standard'} queue but its dead-letter queue ${targetName} is ${targetFifo ? 'FIFO' : 'standard'}: SQS requires the same type`);
      }
      // Standard queues: a dead-lettered message keeps its original enqueue timestamp, so the DLQ's
      // retention should exceed the source's (SQS Developer Guide, DLQs). Shorter is a broken link:
      // a message dead-lettered late expires from the DLQ at once. (Equal — the default — is left to audits.)
      const srcRetention = intAttr(attrs, 'MessageRetentionPeriod');
      const dlqRetention = listed ? intAttr(listed.attrs, 'MessageRetentionPeriod') : (ext?.retentionSeconds ?? null);
      if (kind === 'sqs-standard' && srcRetention !== null && dlqRetention !== null && dlqRetention < srcRetention) {
        problems.push(
          `${targetName} keeps messages ${formatDuration(dlqRetention)} (${dlqRetention} s) and ${name} ${formatDuration(srcRetention)} (${srcRetention} s): dead letters keep their original enqueue time, so they can expire from the DLQ early or at once; make the DLQ's retention longer`,
        );
      }
      targets.push({
        queueId: targetUrl !== null ? `sqs:${targetUrl}` : null,
        queueName: targetName,
        via,
        maxReceiveCount: policy.maxReceiveCount,
        ...(problems.length > 0 ? { problem: problems.join('; ') } : {}),
      });
    }

    const arn = attrs?.QueueArn;
    const sources = [...new Set([...(arn !== undefined ? (inverted.get(arn) ?? []) : []), ...(apiSources.get(url) ?? []).map((u) => `sqs:${u}`)])].sort();
    const allow = parseRedriveAllowPolicy(attrs?.RedriveAllowPolicy);
    const isDlq = sources.length > 0 || looksLikeDeadLetterQueue(name) || allow?.redrivePermission === 'byQueue';

    const config: Record<string, unknown> = attrs !== null ? queueConfigFromAttributes(url, attrs) : { queueUrl: url };
    if (row.error) config.attributesError = row.error.toInfo();
    if (isDlq && !apiSources.has(url)) {
      config.deadLetterSourcesFrom = this.sourcesApiSupported === false ? 'RedrivePolicies of the listed queues (this server has no ListDeadLetterSourceQueues)' : 'RedrivePolicies of the listed queues';
    } else if (apiSources.has(url)) {
      config.deadLetterSourcesFrom = 'ListDeadLetterSourceQueues and RedrivePolicies of the listed queues';
    }

    return {
      id,
      name,
      broker: 'sqs',
      kind,
      depth: intAttr(attrs, 'ApproximateNumberOfMessages'),
      inFlight: intAttr(attrs, 'ApproximateNumberOfMessagesNotVisible'),
      delayed: intAttr(attrs, 'ApproximateNumberOfMessagesDelayed'),
      consumers: null,
      counts: queueCounts(attrs),
      deadLetterTargets: targets,
      deadLetterSources: sources,
      isDeadLetterQueue: isDlq,
      capabilities: sqsCapabilities(attrs, dlqName),
      config,
    };
  }

  // ---------------------------------------------------------------- BrokerAdapter

  /**
   * Checks, in order: the connection settings, that credentials resolve (static keys, the profile, or
   * the default chain), and that `ListQueues` (MaxResults 1) at the endpoint succeeds — which proves
   * the endpoint is reachable and, on AWS, that the credentials are accepted. One attempt, 5 s to
   * connect. Never throws: failures are in the result (CANCELLED too).
   *
   * Note: the npm SQS emulators (fauxqs, local-aws-sqs) accept any credentials.
   */
  async testConnection(signal?: AbortSignal): Promise<ConnectionTestResult> {
    const checks: ConnectionCheck[] = [];
    const server = this.config.endpoint !== undefined ? `SQS-compatible endpoint ${this.endpoint} (region ${this.config.region})` : `Amazon SQS ${this.config.region} (${this.endpoint})`;
    const fail = (name: string, t0: number, e: unknown, action: string): ConnectionTestResult => {
      const err = signal?.aborted === true ? new QueuescopeError('CANCELLED', 'Test connection was cancelled.') : mapSqsError(e, { action, endpoint: this.endpoint, region: this.config.region });
      checks.push({ name, ok: false, detail: err.message, ms: Date.now() - t0 });
      return { ok: false, server: null, checks, error: err.toInfo() };
    };
    let t0 = Date.now();
    const problem = credentialConfigProblem(this.config);
    if (problem) return fail('Connection settings', t0, problem, 'settings');
    try {
      this.testClient ??= createSqsClient(this.config, TEST_CLIENT_OPTIONS);
      const client = this.testClient;
      const credName = `AWS credentials: ${describeCredentialSource(this.config)}`;
      t0 = Date.now();
      try {
        throwIfAborted(signal, 'Test connection');
        await client.config.credentials();
        checks.push({ name: credName, ok: true, detail: 'credentials resolved (not yet verified by the server)', ms: Date.now() - t0 });
      } catch (e) {
        return fail(credName, t0, e, 'resolve credentials');
      }
      const listName = `ListQueues at ${this.endpoint} (region ${this.config.region})`;
      t0 = Date.now();
      try {
        throwIfAborted(signal, 'Test connection');
        const r = await client.send(new ListQueuesCommand({ MaxResults: 1 }), { abortSignal: signal });
        const some = (r.QueueUrls?.length ?? 0) > 0;
        checks.push({ name: listName, ok: true, detail: `endpoint reachable, request accepted; ${some ? 'queues found' : 'no queues yet'}`, ms: Date.now() - t0 });
      } catch (e) {
        return fail(listName, t0, e, 'ListQueues');
      }
      return { ok: true, server, checks, error: null };
    } catch (e) {
      return fail('Test connection', t0, e, 'testConnection');
    }
  }

  /**
   * Lists queues: `ListQueues` (MaxResults 1000, NextToken paging, `QueueNamePrefix` = the pattern's
   * literal prefix), then `GetQueueAttributes(All)` per queue, 16 at a time. Counts are SQS's
   * approximate numbers: depth = ApproximateNumberOfMessages, inFlight = …NotVisible, delayed =
   * …Delayed; consumers are unknown (null). Dead-letter sources come from inverting the listed
   * queues' RedrivePolicies — complete when the listing is (no pattern, under the limit), because SQS
   * requires a DLQ in the same account and region as its sources. When a pattern or the limit hides
   * queues, `ListDeadLetterSourceQueues` is called for the listed queues that look like DLQs (already
   * have sources, are named like one, or have a `byQueue` RedriveAllowPolicy); on servers without it
   * (fauxqs) the inverted RedrivePolicies are all there is. Sorted by name.
   * @throws QueuescopeError HOST_UNREACHABLE, AUTH_FAILED, PERMISSION_DENIED (ListQueues), TLS_ERROR, TIMEOUT, CANCELLED.
   */
  async listQueues(options: ListQueuesOptions, signal?: AbortSignal): Promise<QueueSummary[]> {
    throwIfAborted(signal, 'Listing SQS queues');
    const limit = Math.max(1, Math.min(options.limit ?? DEFAULT_LIST_LIMIT, DEFAULT_LIST_LIMIT));
    const match = globMatcher(options.pattern);
    const prefix = literalPrefix(options.pattern);
    const urls: string[] = [];
    const seen = new Set<string>();
    let truncated = false;
    let token: string | undefined;
    do {
      throwIfAborted(signal, 'Listing SQS queues');
      const page = await this.call(
        'ListQueues',
        undefined,
        (c, s) => c.send(new ListQueuesCommand({ MaxResults: 1000, ...(prefix !== '' ? { QueueNamePrefix: prefix } : {}), ...(token !== undefined ? { NextToken: token } : {}) }), { abortSignal: s }),
        signal,
      );
      for (const url of page.QueueUrls ?? []) {
        if (seen.has(url) || !match(queueNameFromUrl(url))) continue;
        if (urls.length >= limit) {
          truncated = true;
          break;
        }
        seen.add(url);
        urls.push(url);
      }
      token = page.NextToken === '' ? undefined : page.NextToken;
    } while (token !== undefined && !truncated);

    const rows = await this.attributeRows(urls, signal);
    const filtered = (options.pattern ?? '') !== '' && options.pattern !== '*';
    const complete = !truncated && !filtered && rows.every((r) => r.attrs !== null);
    const summaries = await this.summarize(rows, (r, inv) => !complete && (inv.length > 0 || looksLikeDeadLetterQueue(r.name) || r.attrs?.RedriveAllowPolicy !== undefined), signal);
    return summaries.sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  }

  /**
   * Fresh summary of one queue (`GetQueueAttributes(All)`), its DLQ link resolved with `GetQueueUrl`,
   * and its sources from `ListDeadLetterSourceQueues` (one call). On servers without that API (fauxqs)
   * a queue that looks like a DLQ gets its sources by listing all queues' RedrivePolicies instead.
   * @throws QueuescopeError QUEUE_NOT_FOUND (also when deleted while open), INVALID_INPUT (not an sqs: id), and the listQueues errors.
   */
  async getQueue(queueId: string, signal?: AbortSignal): Promise<QueueSummary> {
    throwIfAborted(signal, 'Reading the queue');
    const url = await this.resolveQueueUrl(queueId, signal);
    const row: AttributeRow = { url, name: queueNameFromUrl(url), attrs: await this.attributesOf(url, signal) };
    const [summary] = await this.summarize([row], () => true, signal);
    if (summary === undefined) throw new QueuescopeError('INTERNAL', 'Building the queue summary produced nothing.');
    const allow = parseRedriveAllowPolicy(row.attrs?.RedriveAllowPolicy);
    if (this.sourcesApiSupported === false && (looksLikeDeadLetterQueue(row.name) || allow !== null)) {
      // Emulator without ListDeadLetterSourceQueues: invert the RedrivePolicies of every queue instead.
      const all = await this.listQueues({}, signal);
      const fromList = all.find((q) => q.id === summary.id);
      if (fromList !== undefined) {
        summary.deadLetterSources = fromList.deadLetterSources;
        summary.isDeadLetterQueue = summary.isDeadLetterQueue || fromList.isDeadLetterQueue;
        summary.config.deadLetterSourcesFrom = 'RedrivePolicies of all queues (this server has no ListDeadLetterSourceQueues)';
      }
    }
    return summary;
  }

  /**
   * Reads up to `min(limit, 100)` messages from the head with `ReceiveMessage` and makes them visible
   * again at once. SQS has no read without receive, so:
   * - on a queue with a RedrivePolicy (or one whose attributes cannot be read) the call throws
   *   `PEEK_REFUSED` before any receive unless `options.acceptSideEffects` is true;
   * - each message read gets ApproximateReceiveCount +1 (`meta.receiveCount` includes this peek);
   *   a message already at maxReceiveCount is moved to the DLQ by the receive instead of returned;
   * - messages are hidden for at most {@link PEEK_VISIBILITY_TIMEOUT_S} s: after reading (and in a
   *   `finally` when a call fails midway or the signal aborts) `ChangeMessageVisibilityBatch` sets
   *   their visibility timeout to 0. Per-entry failures are listed in `sideEffects`.
   *
   * Receives: MaxNumberOfMessages ≤ 10, VisibilityTimeout 30 s, WaitTimeSeconds 0 — and WaitTimeSeconds
   * 1 (once per peek) when short polling returns nothing while the queue reports more visible messages
   * (short polling samples a subset of servers; for FIFO only before the first message). Stops at the
   * limit, an empty receive, or a receive with no new MessageId. Deduplicated by MessageId. FIFO: messages of a group behind ones in flight are not returned (AWS
   * returns up to 10 per group per receive; fauxqs returns 1), so a peek sees the heads of groups.
   * Not pageable (`nextCursor` null); `total` = ApproximateNumberOfMessages before the peek.
   * @throws QueuescopeError QUEUE_NOT_FOUND, PEEK_REFUSED, INVALID_INPUT (cursor, state, direction, limit), CANCELLED.
   */
  async peek(queueId: string, options: PeekOptions, signal?: AbortSignal): Promise<PeekPage> {
    throwIfAborted(signal, 'Peek');
    if (options.cursor !== undefined && options.cursor !== null) {
      throw new QueuescopeError('INVALID_INPUT', 'SQS queues cannot be paged from a cursor: peek again without one (each peek reads from the head).');
    }
    if (options.state !== undefined && options.state !== '') {
      throw new QueuescopeError('INVALID_INPUT', `SQS queues have no separate message states to peek; got state "${options.state.slice(0, 50)}".`);
    }
    if (options.direction === 'newest') throw new QueuescopeError('INVALID_INPUT', 'SQS can only be read from the head (oldest first); direction "newest" is not possible.');
    if (!Number.isInteger(options.limit) || options.limit < 1) throw new QueuescopeError('INVALID_INPUT', `Peek limit must be a whole number of at least 1, got ${String(options.limit)}.`);
    const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 0) throw new QueuescopeError('INVALID_INPUT', `maxBodyBytes must be a whole number of bytes ≥ 0, got ${String(options.maxBodyBytes)}.`);

    const url = await this.resolveQueueUrl(queueId, signal);
    const name = queueNameFromUrl(url);
    const id = `sqs:${url}`;
    const attrs = await this.attributesOf(url, signal);
    const policy = parseRedrivePolicy(attrs.RedrivePolicy);
    const dlqName = policy !== null && !('error' in policy) ? (parseArn(policy.deadLetterTargetArn)?.resource ?? policy.deadLetterTargetArn) : null;
    if (policy !== null && options.acceptSideEffects !== true) {
      const why =
        'error' in policy
          ? `${name} has a RedrivePolicy that cannot be read (${policy.error}), so a peek might move messages to a dead-letter queue`
          : `${name} has a RedrivePolicy (maxReceiveCount ${policy.maxReceiveCount} → ${dlqName ?? '?'}): every peek is a receive that adds 1 to ApproximateReceiveCount, and a message already received ${plural(policy.maxReceiveCount, 'time')} is moved to ${dlqName ?? 'the DLQ'} by it`;
      throw new QueuescopeError('PEEK_REFUSED', `Peek refused: ${why}. Nothing was read; pass acceptSideEffects to peek anyway.`, {
        queue: name,
        ...(!('error' in policy) ? { maxReceiveCount: policy.maxReceiveCount, deadLetterQueue: dlqName } : {}),
      });
    }
    const want = Math.min(options.limit, SQS_MAX_PEEK_WINDOW);
    const visibleBefore = intAttr(attrs, 'ApproximateNumberOfMessages');
    const fifo = queueKind(name, attrs) === 'sqs-fifo';

    const received = new Map<string, Message>();
    /** Latest receipt handle per MessageId (an older handle may no longer be valid for ChangeMessageVisibility). */
    const handles = new Map<string, string>();
    const started = Date.now();
    let restore: { restored: number; failures: string[] };
    try {
      let longPolls = 0;
      let wait = 0;
      while (received.size < want) {
        throwIfAborted(signal, 'Peek');
        // No abortSignal here: aborting a receive in flight could hide messages we never get handles for.
        const r = await this.call('ReceiveMessage', name, (c) =>
          c.send(
            new ReceiveMessageCommand({
              QueueUrl: url,
              MaxNumberOfMessages: Math.min(10, want - received.size),
              VisibilityTimeout: PEEK_VISIBILITY_TIMEOUT_S,
              WaitTimeSeconds: wait,
              MessageSystemAttributeNames: ['All'],
              // Deprecated in favour of MessageSystemAttributeNames, but local-aws-sqs reads only this one.
              // eslint-disable-next-line @typescript-eslint/no-deprecated
              AttributeNames: ['All'],
              MessageAttributeNames: ['All'],
            }),
          ),
        );
        const msgs = r.Messages ?? [];
        let fresh = 0;
        for (const m of msgs) {
          const mid = m.MessageId ?? m.ReceiptHandle ?? '';
          if (m.ReceiptHandle !== undefined) handles.set(mid, m.ReceiptHandle);
          if (received.has(mid)) received.set(mid, m);
          else if (received.size < want) {
            received.set(mid, m);
            fresh++;
          }
        }
        if (msgs.length === 0) {
          // Short polling samples a subset of SQS servers: long-poll briefly if the queue says it has more.
          // (Not for FIFO once something was read: messages behind in-flight ones of a group are counted
          // as visible but cannot be received, so waiting would only add a second.)
          if (longPolls < MAX_LONG_POLL_RETRIES && (visibleBefore ?? 0) > received.size && (received.size === 0 || !fifo)) {
            longPolls++;
            wait = 1;
            continue;
          }
          break;
        }
        wait = 0;
        if (fresh === 0) break;
      }
    } finally {
      restore = await this.makeVisible(url, name, [...handles.entries()]);
    }
    const hiddenMs = Date.now() - started;

    const messages: QueueMessage[] = [...received.values()].map((m, i) => toQueueMessage(m, { queueId: id, queueName: name, position: i, maxBodyBytes }));
    const sideEffects: string[] = [];
    if (messages.length > 0) {
      const counts = messages.map((m) => m.meta.receiveCount).filter((n): n is number => typeof n === 'number');
      const range = counts.length > 0 ? (Math.min(...counts) === Math.max(...counts) ? `${Math.min(...counts)}` : `${Math.min(...counts)}–${Math.max(...counts)}`) : '?';
      sideEffects.push(`Received ${plural(messages.length, 'message')}: ApproximateReceiveCount +1 each (now ${range}).`);
      sideEffects.push(
        restore.failures.length === 0
          ? `Hidden from consumers for ${hiddenMs} ms while read, then made visible again.`
          : `Hidden from consumers while read; ${restore.restored} made visible again after ${hiddenMs} ms.`,
      );
    }
    sideEffects.push(...restore.failures);
    if (policy !== null && !('error' in policy)) {
      const atLimit = messages.filter((m) => (m.meta.receiveCount ?? 0) >= policy.maxReceiveCount).length;
      if (atLimit > 0) sideEffects.push(`${plural(atLimit, 'message')} now ${atLimit === 1 ? 'has' : 'have'} been received ${plural(policy.maxReceiveCount, 'time')}: the next receive (a consumer's or a peek) moves ${atLimit === 1 ? 'it' : 'them'} to ${dlqName ?? 'the DLQ'}.`);
      sideEffects.push(`Any message already received ${plural(policy.maxReceiveCount, 'time')} before this peek was moved to ${dlqName ?? 'the DLQ'} by its receive instead of being returned (SQS does not report which).`);
    }
    return { messages, nextCursor: null, total: visibleBefore, sideEffects };
  }

  /**
   * ChangeMessageVisibilityBatch → 0 s for every `[MessageId, ReceiptHandle]`, 10 per call (the SQS batch
   * maximum). Never throws; returns failures in words, naming the MessageId.
   */
  private async makeVisible(url: string, name: string, handles: [string, string][]): Promise<{ restored: number; failures: string[] }> {
    const failures: string[] = [];
    let restored = 0;
    for (let i = 0; i < handles.length; i += 10) {
      const chunk = handles.slice(i, i + 10);
      try {
        const r = await this.call('ChangeMessageVisibilityBatch', name, (c) =>
          c.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: chunk.map(([, h], j) => ({ Id: `m${j}`, ReceiptHandle: h, VisibilityTimeout: 0 })) })),
        );
        restored += r.Successful?.length ?? 0;
        for (const f of r.Failed ?? []) {
          const mid = chunk[Number((f.Id ?? '').slice(1))]?.[0] ?? f.Id ?? '?';
          failures.push(`Could not make message ${mid} visible again (${f.Code ?? 'error'}: ${f.Message ?? 'no reason given'}); it stays hidden until the ${PEEK_VISIBILITY_TIMEOUT_S} s peek visibility timeout ends.`);
        }
      } catch (e) {
        const err = e instanceof QueuescopeError ? e : mapSqsError(e, { action: 'ChangeMessageVisibilityBatch', endpoint: this.endpoint, region: this.config.region, queueName: name });
        failures.push(`Could not make ${plural(chunk.length, 'message')} visible again (${err.code}: ${err.message}); they stay hidden until the ${PEEK_VISIBILITY_TIMEOUT_S} s peek visibility timeout ends.`);
      }
    }
    return { restored, failures };
  }

  /** Destroys the SDK clients (closing pooled sockets). Idempotent; a later call creates new clients. */
  close(): Promise<void> {
    this.client?.destroy();
    this.testClient?.destroy();
    this.client = null;
    this.testClient = null;
    return Promise.resolve();
  }
}
