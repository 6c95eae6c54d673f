import type { HeaderValue, QueueMessage } from '../domain';
import * as jsonBody from './json-body';
import * as fieldNames from './field-names';
import type { NameInfo, NameRole } from './field-names';
import * as hashModule from './hash';
import type { Hash2 } from './hash';
import * as rulesModule from './rules';
import type { SnapshotPattern } from './rules';
import * as sort from './sort';
import type { FieldAnnotation, FieldClass, Finding, InspectRules, KeyExtraction, PayloadAnalysis, PayloadVerdictKind } from './types';
import * as idempotency from './idempotency';
import type { KeyEvidence } from './idempotency';

// Imported functions bound to module-local constants once: TypeScript run as CommonJS (tsx, ts-node,
// vitest's SSR transform) turns every call of a named import into a getter call on the exporting
// module's exports object, which the per-node hot paths below paid for (~8 % of the analysis in
// bench/analysis.ts). Bundlers (electron-vite) produce plain calls either way.
const { bodyView, hasOwnKeys, indexSeg, isRecord, own } = jsonBody;
const { ROLE_PRIORITY, SET_VERBS, nameInfo, normalizeName, operationWords } = fieldNames;
const { fmix, hashString, mixOrdered, taggedHash } = hashModule;
const { compileSnapshotPattern, matchesPrefix } = rulesModule;
const { sortSmall } = sort;
const { evidenceAt, evidenceKeyHolder, keyBodyFinding, keyHeadersFinding } = idempotency;

/**
 * Payload field classification and the payload verdict (rules P1–P10 in README.md). Pure; never
 * throws; bounded by {@link MAX_WALK_NODES}, {@link MAX_WALK_DEPTH}, {@link MAX_ARRAY_ITEMS},
 * {@link MAX_OBJECT_MEMBERS} and {@link MAX_JSON_IN_STRING}: a bound that leaves fields
 * unclassified gives an `analysis-limit` finding (review, rule P10), never a plain ok. Object members are read with `Object.keys` + own-property access,
 * so `__proto__` / `constructor` members are plain data and nothing is ever assigned into
 * caller-visible objects keyed by body text.
 */

/** At most this many {@link FieldAnnotation}s per message (`fieldsTruncated` says when more existed). */
export const MAX_FIELD_ANNOTATIONS = 500;
/** At most this many reasons per payload verdict (the most severe first). */
export const MAX_REASONS = 3;
/** JSON is walked at most this many levels deep (deeper values are not classified; `fieldsTruncated`). */
export const MAX_WALK_DEPTH = 24;
/** At most this many JSON values are visited per message. */
export const MAX_WALK_NODES = 5000;
/** At most this many elements are visited per array. */
export const MAX_ARRAY_ITEMS = 100;
/** At most this many members are visited per object. */
export const MAX_OBJECT_MEMBERS = 1000;
/** At most this many string fields holding JSON are decoded per message. */
export const MAX_JSON_IN_STRING = 8;
/** String fields longer than this (characters) are not decoded as JSON. */
export const MAX_JSON_STRING_CHARS = 1 << 20;

/** Result of {@link analyzePayload}: the payload verdict plus facts the summary needs. */
export interface PayloadResult {
  payload: PayloadAnalysis;
  /** See {@link MessageAnalysis.businessHash}. */
  businessHash: string | null;
  operation: string | null;
  operationSource: string | null;
}

// ---------------------------------------------------------------------------------------------
// Envelopes (rule P2)

interface MetaField {
  cls: FieldClass;
  why: string;
  /** Differs per send: left out of the business hash. */
  perSend?: boolean;
}

interface Envelope {
  name: string;
  /** Paths (segments below the document root) of the argument containers. */
  args: string[][];
  /** Classification of the envelope's own root members. */
  meta: Record<string, MetaField>;
  /** A point-in-time marker that covers the arguments (event time / documented snapshot). */
  snapshot: { label: string; why: string } | null;
  operation: { value: string; source: string } | null;
}

const ID_META = (what: string, perSend = false): MetaField => ({ cls: 'identifier', why: `${what} (envelope metadata)`, perSend });
const TIME_META = (what: string): MetaField => ({ cls: 'immutable-snapshot', why: `${what}: an event fact (envelope metadata)`, perSend: true });
const FACT_META = (what: string, perSend = false): MetaField => ({ cls: 'immutable-snapshot', why: `${what} (envelope metadata)`, perSend });
const OTHER_META = (what: string, perSend = true): MetaField => ({ cls: 'unknown', why: `${what} (envelope metadata)`, perSend });

const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v.slice(0, 200) : null);

function headerText(headers: Record<string, HeaderValue> | undefined, names: readonly string[]): { name: string; value: string } | null {
  if (!isRecord(headers) || !hasOwnKeys(headers)) return null;
  let seen = 0;
  for (const k of Object.keys(headers)) {
    if (++seen > 200) break;
    const lower = k.toLowerCase();
    if (!names.includes(lower)) continue;
    const v = own(headers, k);
    const text = typeof v === 'string' ? v : isRecord(v) ? (str(own(v, 'StringValue')) ?? str(own(v, 'stringValue'))) : null;
    if (text !== null && text.length > 0) return { name: k, value: text.slice(0, 200) };
  }
  return null;
}

// Envelope metadata tables (constant; read only).
const SNS_META: Record<string, MetaField> = {
  Type: FACT_META('SNS message type'),
  MessageId: ID_META('SNS MessageId, new per publish', true),
  TopicArn: ID_META('SNS topic'),
  Subject: FACT_META('SNS subject'),
  Timestamp: TIME_META('SNS publish time'),
  SignatureVersion: OTHER_META('SNS signature version'),
  Signature: OTHER_META('SNS signature'),
  SigningCertURL: OTHER_META('SNS signing certificate'),
  UnsubscribeURL: OTHER_META('SNS unsubscribe URL'),
  MessageAttributes: OTHER_META('SNS message attributes', false),
};
const EVENTBRIDGE_META: Record<string, MetaField> = { version: FACT_META('EventBridge schema version'), id: ID_META('EventBridge event id, new per event', true), 'detail-type': FACT_META('event type'), source: FACT_META('event source'), account: ID_META('AWS account'), time: TIME_META('event time'), region: FACT_META('AWS region'), resources: ID_META('affected resources') };
const CLOUDEVENTS_META: Record<string, MetaField> = {
  specversion: FACT_META('CloudEvents spec version'),
  id: ID_META('CloudEvents id (with source, identifies the event)'),
  source: ID_META('CloudEvents source (with id, identifies the event)'),
  type: FACT_META('event type'),
  subject: ID_META('event subject'),
  time: TIME_META('event time'),
  datacontenttype: FACT_META('content type'),
  dataschema: FACT_META('data schema'),
  data_base64: OTHER_META('binary event data', false),
};
const STRIPE_META: Record<string, MetaField> = {
  id: ID_META('Stripe event id'),
  object: FACT_META('object kind'),
  type: FACT_META('event type'),
  created: TIME_META('event creation time'),
  api_version: FACT_META('API version'),
  livemode: FACT_META('live or test mode'),
  pending_webhooks: OTHER_META('pending deliveries'),
  request: OTHER_META('originating request'),
};
const SIDEKIQ_META: Record<string, MetaField> = {
  class: FACT_META('job class'),
  wrapped: FACT_META('wrapped job class'),
  jid: ID_META('Sidekiq job id, new per enqueue', true),
  queue: FACT_META('queue name'),
  retry: FACT_META('retry setting'),
  created_at: TIME_META('enqueue time'),
  enqueued_at: TIME_META('enqueue time'),
  retry_count: OTHER_META('retry count'),
  retried_at: OTHER_META('last retry time'),
  failed_at: OTHER_META('failure time'),
  error_message: OTHER_META('last error'),
  error_class: OTHER_META('last error class'),
  bid: ID_META('batch id'),
  tags: FACT_META('job tags'),
};
const CELERY_META: Record<string, MetaField> = {
  task: FACT_META('task name'),
  id: ID_META('Celery task id, new per send', true),
  eta: OTHER_META('scheduled time', false),
  expires: OTHER_META('expiry', false),
  retries: OTHER_META('retry count'),
  utc: OTHER_META('UTC flag', false),
  callbacks: OTHER_META('callbacks', false),
  errbacks: OTHER_META('error callbacks', false),
  timelimit: OTHER_META('time limit', false),
  taskset: ID_META('group id'),
  chord: OTHER_META('chord', false),
};
const BULLMQ_META: Record<string, MetaField> = { name: FACT_META('job name'), opts: OTHER_META('job options', false), id: ID_META('job id'), timestamp: TIME_META('job creation time'), attemptsMade: OTHER_META('attempts made'), stacktrace: OTHER_META('stack traces'), returnvalue: OTHER_META('return value'), failedReason: OTHER_META('failure reason'), processedOn: OTHER_META('processing time'), finishedOn: OTHER_META('finish time'), progress: OTHER_META('progress') };

const GITHUB_EVENT_HEADER = ['x-github-event'];
const GENERIC_WRAPPERS = ['payload', 'data', 'detail', 'body', 'message', 'args', 'arguments', 'params', 'job'];

/** Recognises the job / event envelope of a document root; null when none. */
function detectEnvelope(root: unknown, message: QueueMessage, nested: boolean): Envelope | null {
  if (Array.isArray(root)) {
    // Celery protocol 2 body: [args, kwargs, embed]; the task name is the `task` header.
    if (root.length === 3 && Array.isArray(root[0]) && isRecord(root[1]) && isRecord(root[2]) && ['callbacks', 'errbacks', 'chain', 'chord'].some((k) => own(root[2], k) !== undefined)) {
      const task = headerText(message.headers, ['task']);
      return { name: 'Celery task (protocol 2)', args: [['[0]'], ['[1]']], meta: {}, snapshot: null, operation: task ? { value: task.value, source: `headers.${task.name}` } : null };
    }
    return null;
  }
  if (!isRecord(root)) return null;
  // SNS notification delivered to SQS (raw message delivery off): the publisher's message is the `Message` string.
  if (own(root, 'Type') === 'Notification' && typeof own(root, 'Message') === 'string' && (own(root, 'TopicArn') !== undefined || own(root, 'MessageId') !== undefined)) {
    return {
      name: 'SNS notification',
      args: [['Message']],
      meta: SNS_META,
      snapshot: null,
      operation: str(own(root, 'Subject')) !== null ? { value: str(own(root, 'Subject')) ?? '', source: 'body.Subject' } : null,
    };
  }
  // Amazon EventBridge event: `detail` holds the event; `time` is when it occurred.
  if (own(root, 'detail-type') !== undefined && own(root, 'detail') !== undefined && own(root, 'source') !== undefined) {
    const time = str(own(root, 'time'));
    const dt = str(own(root, 'detail-type'));
    return {
      name: 'EventBridge event',
      args: [['detail']],
      meta: EVENTBRIDGE_META,
      snapshot: time !== null ? { label: `EventBridge event time ${time}`, why: 'the event as it was at its `time`' } : null,
      operation: dt !== null ? { value: dt, source: 'body.detail-type' } : null,
    };
  }
  // CloudEvents 1.0, structured mode: `data` holds the event data; `time` is when the occurrence happened.
  if (own(root, 'specversion') !== undefined && (own(root, 'data') !== undefined || own(root, 'data_base64') !== undefined || own(root, 'type') !== undefined)) {
    const time = str(own(root, 'time'));
    const type = str(own(root, 'type'));
    return {
      name: 'CloudEvents',
      args: [['data']],
      meta: CLOUDEVENTS_META,
      snapshot: time !== null ? { label: `CloudEvents time ${time}`, why: 'the event data as it was at the event `time`' } : null,
      operation: type !== null ? { value: type, source: 'body.type' } : null,
    };
  }
  // Stripe event: `data.object` is the object as it was when the event occurred (documented).
  const stripeData = own(root, 'data');
  if (own(root, 'object') === 'event' && isRecord(stripeData) && isRecord(own(stripeData, 'object'))) {
    const type = str(own(root, 'type'));
    const created = own(root, 'created');
    return {
      name: 'Stripe event',
      args: [['data', 'object']],
      meta: STRIPE_META,
      snapshot: { label: `Stripe event${typeof created === 'number' ? ` created ${created}` : ''}`, why: "Stripe's documented point-in-time copy of the object" },
      operation: type !== null ? { value: type, source: 'body.type' } : null,
    };
  }
  // GitHub webhook: the objects are copies taken when the event fired.
  const ghEvent = headerText(message.headers, GITHUB_EVENT_HEADER);
  const sender = own(root, 'sender');
  if (ghEvent !== null || (isRecord(sender) && own(sender, 'login') !== undefined && (own(root, 'repository') !== undefined || own(root, 'organization') !== undefined || own(root, 'installation') !== undefined))) {
    const action = str(own(root, 'action'));
    const op = [ghEvent?.value, action].filter((x): x is string => x !== null && x !== undefined).join('.');
    return {
      name: 'GitHub webhook',
      args: [[]],
      meta: {},
      snapshot: { label: 'GitHub webhook payload', why: 'the webhook payload as it was when the event fired' },
      operation: op.length > 0 ? { value: op, source: ghEvent !== null ? `headers.${ghEvent.name}` : 'body.action' } : null,
    };
  }
  // Sidekiq job (and ActiveJob wrapped in it).
  const sqArgs = own(root, 'args');
  if (typeof own(root, 'class') === 'string' && Array.isArray(sqArgs)) {
    const first: unknown = sqArgs[0];
    const activeJob = isRecord(first) && typeof own(first, 'job_class') === 'string' && Array.isArray(own(first, 'arguments'));
    const cls = activeJob ? (str(own(first, 'job_class')) ?? '') : (str(own(root, 'class')) ?? '');
    return {
      name: activeJob ? 'Sidekiq job (ActiveJob)' : 'Sidekiq job',
      args: activeJob ? [['args', '[0]', 'arguments']] : [['args']],
      meta: SIDEKIQ_META,
      snapshot: null,
      operation: cls.length > 0 ? { value: cls, source: activeJob ? 'body.args[0].job_class' : 'body.class' } : null,
    };
  }
  // Celery protocol 1 message.
  if (typeof own(root, 'task') === 'string' && (Array.isArray(own(root, 'args')) || isRecord(own(root, 'kwargs')))) {
    return {
      name: 'Celery task',
      args: [['args'], ['kwargs']],
      meta: CELERY_META,
      snapshot: null,
      operation: { value: str(own(root, 'task')) ?? '', source: 'body.task' },
    };
  }
  // A BullMQ job as exported (name, data, opts).
  if (typeof own(root, 'name') === 'string' && isRecord(own(root, 'data')) && isRecord(own(root, 'opts'))) {
    return {
      name: 'BullMQ job',
      args: [['data']],
      meta: BULLMQ_META,
      snapshot: null,
      operation: { value: str(own(root, 'name')) ?? '', source: 'body.name' },
    };
  }
  if (nested) return null;
  // Generic wrapper: one argument container beside metadata only. (The wrapper is looked for
  // before the members are listed: most bodies have none, and listing them allocates.)
  let wrapper: string | null = null;
  for (const w of GENERIC_WRAPPERS) {
    const v = own(root, w);
    if (isRecord(v) || (Array.isArray(v) && w.startsWith('arg')) || (typeof v === 'string' && looksLikeJson(v))) {
      if (wrapper !== null) return null;
      wrapper = w;
    }
  }
  if (wrapper === null) return null;
  const keys = Object.keys(root);
  if (keys.length > 12) return null;
  for (const k of keys) {
    if (k === wrapper) continue;
    const ki = nameInfo(k);
    const role = ki.role;
    const metaLike = role === 'id' || role === 'time' || role === 'op' || role === 'version' || role === 'ref' || role === 'marker' || ki.perSend || WRAPPER_META_NAMES.has(normalizeName(k));
    if (!metaLike) return null;
  }
  let operation: Envelope['operation'] = null;
  for (const k of WRAPPER_OP_KEYS) {
    const v = str(own(root, k));
    if (v !== null) {
      operation = { value: v, source: `body.${k}` };
      break;
    }
  }
  return { name: `"${wrapper}" wrapper`, args: [[wrapper]], meta: {}, snapshot: null, operation };
}

/** Normalised names of members that may sit beside a generic wrapper as metadata. */
const WRAPPER_META_NAMES: ReadonlySet<string> = new Set(['meta', 'metadata', 'headers', 'context', 'source', 'attributes', 'specversion', 'schema', 'tenant', 'tenantid', 'origin', 'producer', 'app', 'appid', 'env', 'environment']);
/** Members naming a generic wrapper's operation, first present wins. */
const WRAPPER_OP_KEYS = ['type', 'event', 'eventType', 'event_type', 'operation', 'command', 'action', 'name'];

function looksLikeJson(s: string): boolean {
  if (s.length < 2 || s.length > MAX_JSON_STRING_CHARS) return false;
  let i = 0;
  while (i < s.length && i < 64 && (s.charCodeAt(i) === 32 || s.charCodeAt(i) === 10 || s.charCodeAt(i) === 13 || s.charCodeAt(i) === 9)) i++;
  const c = s.charCodeAt(i);
  if (c !== 123 && c !== 91) return false;
  let j = s.length - 1;
  while (j > i && (s.charCodeAt(j) === 32 || s.charCodeAt(j) === 10 || s.charCodeAt(j) === 13 || s.charCodeAt(j) === 9)) j--;
  const e = s.charCodeAt(j);
  return (c === 123 && e === 125) || (c === 91 && e === 93);
}

// ---------------------------------------------------------------------------------------------
// Walk state

/** A point-in-time / intentional-value context covering a subtree (rules P5–P7). */
interface Snap {
  kind: 'marker' | 'envelope' | 'user' | 'command';
  /** What established it: the marker path, envelope name, user pattern or command name. */
  label: string;
  /** Completes "…, but <why>" in field annotations. */
  why: string;
  /** Display paths of fields that would have been mutable state (first few). */
  suppressed: string[];
  count: number;
  /** The snapshot cites its container (e.g. `newAddress`), not the members below it. */
  fixed?: boolean;
}

/** A cited field; its path strings are built only if the reason shows it. */
interface Cite {
  segs: string[];
  argsStart: number;
  prio: number;
  order: number;
}

const citeDisplay = (c: Cite): string => pathOf(c.segs, c.argsStart, '') || 'body';
const citePath = (c: Cite): string => pathOf(c.segs, 0, 'body');

/** An embedded entity (rule P4). */
interface Entity {
  /** Display path of the entity object ('' for the arguments root). */
  display: string;
  /** Display path with indices replaced by `[]`, to merge the entities of one array. */
  shape: string;
  suggestion: string;
  cites: Cite[];
  count: number;
}

interface Scope {
  snap: Snap | null;
  /** Inside an entity (`entity` set) or inside loose state such as an address / line items outside entities. */
  stateful: { entity: Entity | null } | null;
  /** A container (address, items…) is already cited: do not cite its members. */
  citeDone: boolean;
  /** Member name of the containing object, normalised and singular (for `orderId` ↔ `order`). */
  parentNorm: string;
}

/** A {@link Scope} literal (one hidden class; object spread is several times slower in the walk). */
function mkScope(snap: Snap | null, stateful: Scope['stateful'], citeDone: boolean, parentNorm: string): Scope {
  return { snap, stateful, citeDone, parentNorm };
}

interface Ctx {
  message: QueueMessage;
  detail: boolean;
  fields: FieldAnnotation[];
  truncated: boolean;
  hashExact: boolean;
  nodes: number;
  jsonParses: number;
  segs: string[];
  /**
   * `paths[i]` is the full path (`body.…`) of `segs[0..i]`, valid for `i < pathsValid`: made on
   * demand by {@link fullPath}, each from its parent's, so annotating the members of an object does
   * not rebuild the object's path once per member. Every pop of `segs` goes through {@link popSeg},
   * which lowers `pathsValid`; a push needs nothing (`pathsValid <= segs.length` holds).
   */
  paths: string[];
  pathsValid: number;
  /** Index in `segs` where display paths start (the arguments root). */
  argsStart: number;
  jsonIn: string | undefined;
  patterns: SnapshotPattern[];
  /** Created on the first user snapshot pattern that matches. */
  userSnaps: Map<string, Snap> | null;
  snaps: Snap[];
  entities: Entity[];
  loose: Cite[];
  ids: string[];
  fixed: string[];
  order: number;
  hashExclude: string[][];
  setCommand: string | null;
  /** The arguments are an email-send command (a subject/template plus a recipient member): see {@link emailCommand}. */
  emailCmd: boolean;
  /** The recipient snapshot of an email command, made on first use. */
  emailSnap: Snap | null;
  /** Envelope nesting (SNS → CloudEvents…), at most 2. */
  envelopeDepth: number;
  /** Depth of the current envelope's root object; -1 when none. */
  envDepth0: number;
  envMeta: Record<string, MetaField> | null;
  argsRoots: string[][];
  envelope: { name: string; argsPath: string; snapshot: Envelope['snapshot']; operation: Envelope['operation'] } | null;
  /** Second hash lane of the last walk() call (avoids an allocation per node). */
  h2: number;
  /** > 0 while walking a member left out of the business hash (its hashes are discarded, so not computed). */
  noHash: number;
  /** Body values for the key verdict, gathered on the way (see {@link KeyEvidence}); null when not wanted. */
  ev: KeyEvidence | null;
  /** > 0 while walking values below which the key verdict gathers no evidence. */
  evOff: number;
  /** The first walk bound hit that left fields unclassified (rule P10); null when none. */
  limit: WalkLimit | null;
  /** > 0 while hashing envelope metadata, which is never classified (its bounds leave nothing unclassified). */
  metaOnly: number;
  infoPool: NameInfo[][];
}

const LEAF_H: Hash2 = { a: 0, b: 0 };

function pathOf(segs: readonly string[], from: number, prefix: string): string {
  let p = prefix;
  for (let i = from; i < segs.length; i++) {
    const s = segs[i] ?? '';
    if (s.startsWith('[')) p += s;
    else if (nameInfo(s).simple) p += p.length === 0 ? s : `.${s}`;
    else p += `[${JSON.stringify(s.slice(0, 100))}]`;
  }
  return p;
}

/** The path segment `s` appended to path `p` (the step {@link pathOf} makes). */
function appendSeg(p: string, s: string): string {
  if (s.startsWith('[')) return p + s;
  if (nameInfo(s).simple) return p.length === 0 ? s : `${p}.${s}`;
  return `${p}[${JSON.stringify(s.slice(0, 100))}]`;
}

/** `pathOf(ctx.segs, 0, 'body')`, from the longest still valid cached prefix (see {@link Ctx.paths}). */
function fullPath(ctx: Ctx): string {
  const segs = ctx.segs;
  const paths = ctx.paths;
  let i = ctx.pathsValid;
  let p = i === 0 ? 'body' : (paths[i - 1] as string);
  for (; i < segs.length; i++) {
    p = appendSeg(p, segs[i] as string);
    paths[i] = p;
  }
  ctx.pathsValid = segs.length;
  return p;
}

/** Pops the last path segment (keeping {@link Ctx.pathsValid} true). */
function popSeg(ctx: Ctx): void {
  ctx.segs.pop();
  if (ctx.pathsValid > ctx.segs.length) ctx.pathsValid = ctx.segs.length;
}
const displayPath = (ctx: Ctx): string => {
  const p = pathOf(ctx.segs, ctx.argsStart, '');
  return p.length > 0 ? p : 'body';
};

function annotate(ctx: Ctx, cls: FieldClass, why: string): void {
  if (!ctx.detail) return;
  if (ctx.fields.length >= MAX_FIELD_ANNOTATIONS) {
    ctx.truncated = true;
    return;
  }
  const a: FieldAnnotation = { path: fullPath(ctx), class: cls, why };
  if (ctx.jsonIn !== undefined) a.jsonIn = ctx.jsonIn;
  ctx.fields.push(a);
}

function userSnapFor(ctx: Ctx, scope: Scope): Snap | null {
  if (ctx.patterns.length === 0 || scope.snap?.kind === 'user') return null;
  for (const p of ctx.patterns) {
    if (matchesPrefix(p.segs, ctx.segs, 0) || (ctx.argsStart > 0 && matchesPrefix(p.segs, ctx.segs, ctx.argsStart))) {
      ctx.userSnaps ??= new Map();
      let s = ctx.userSnaps.get(p.source);
      if (s === undefined) {
        s = { kind: 'user', label: p.source, why: `marked as an intentional snapshot (\`${p.source}\`)`, suppressed: [], count: 0 };
        ctx.userSnaps.set(p.source, s);
        ctx.snaps.push(s);
      }
      return s;
    }
  }
  return null;
}

function sameSegs(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The current path is one of the key's fields (left out of the business hash). */
function hashExcluded(ctx: Ctx): boolean {
  const ex = ctx.hashExclude;
  for (let i = 0; i < ex.length; i++) if (sameSegs(ex[i] as string[], ctx.segs)) return true;
  return false;
}

function isArgsRoot(ctx: Ctx): boolean {
  const roots = ctx.argsRoots;
  for (let i = 0; i < roots.length; i++) if (sameSegs(roots[i] as string[], ctx.segs)) return true;
  return false;
}

const ROLE_WORDS: Partial<Record<NameRole, string>> = {
  state: 'status/state',
  address: 'address',
  contact: 'contact detail',
  items: 'line items',
  quantity: 'quantity',
  balance: 'balance',
  updated: 'modification stamp',
  name: 'name/label',
  amount: "the entity's current amount",
  currency: "the entity's currency",
  version: 'entity version',
  'new-value': 'new value',
};

/**
 * Annotation texts made from a role and a context (a snapshot's reason, an entity's path), cached
 * per role: the same few texts repeat in every message of a queue, and building each per field
 * was a large part of the garbage of a full-detail analysis. Bounded; cleared when full.
 */
type WhyCache = Map<NameRole, Map<string, string>>;
const SNAP_WHY: WhyCache = new Map();
const ENTITY_WHY: WhyCache = new Map();
const LOOSE_WHY: WhyCache = new Map();
const ARGUMENT_WHY: WhyCache = new Map();
const WHY_CACHE_MAX = 2000;

function cachedWhy(cache: WhyCache, role: NameRole, context: string, make: (role: NameRole, context: string) => string): string {
  let byContext = cache.get(role);
  if (byContext === undefined) {
    byContext = new Map();
    cache.set(role, byContext);
  }
  let text = byContext.get(context);
  if (text === undefined) {
    text = make(role, context);
    if (context.length <= 300) {
      if (byContext.size >= WHY_CACHE_MAX) byContext.clear();
      byContext.set(context, text);
    }
  }
  return text;
}

const snapWhy = (role: NameRole, why: string): string => `${ROLE_WORDS[role] ?? 'state'}, but ${why}`;
const entityWhy = (role: NameRole, display: string): string => `${ROLE_WORDS[role] ?? 'state'} of the embedded entity${display.length > 0 ? ` \`${display}\`` : ''}: can change before a retry`;
const looseWhy = (role: NameRole): string => `${ROLE_WORDS[role] ?? 'state'} outside any entity: can change before a retry`;
const argumentWhy = (role: NameRole): string => `${ROLE_WORDS[role] ?? role} outside an entity: an argument of the operation`;

/**
 * A value that would be mutable state here: inside a snapshot it is immutable (and remembered for
 * the snapshot's reason); otherwise it is cited for the entity / loose-state reason.
 */
function mutable(ctx: Ctx, scope: Scope, role: NameRole, cite: boolean): void {
  if (scope.snap !== null) {
    const s = scope.snap;
    if (s.fixed !== true && !scope.citeDone) {
      s.count++;
      if (s.suppressed.length < 4 && cite) s.suppressed.push(displayPath(ctx));
    }
    if (ctx.detail) annotate(ctx, 'immutable-snapshot', cachedWhy(SNAP_WHY, role, s.why, snapWhy));
    return;
  }
  const entity = scope.stateful?.entity ?? null;
  if (ctx.detail) annotate(ctx, 'mutable-state', entity !== null ? cachedWhy(ENTITY_WHY, role, entity.display, entityWhy) : cachedWhy(LOOSE_WHY, role, '', looseWhy));
  if (!cite || scope.citeDone) return;
  const c: Cite = { segs: ctx.segs.slice(), argsStart: ctx.argsStart, prio: ROLE_PRIORITY[role] ?? 20, order: ctx.order++ };
  if (entity !== null) {
    if (entity.cites.length < 64) entity.cites.push(c);
  } else if (ctx.loose.length < 64) ctx.loose.push(c);
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ULID_RE = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

/**
 * The annotation text of an `id` / `ref` member (`` `orderId` identifies an entity or operation ``),
 * kept on its {@link NameInfo} (one per name, cached), so it is made once per name, not per field.
 */
function identifierWhy(info: NameInfo, name: string): string {
  if (info.leafWhy !== null && info.leafWhyOf === name) return info.leafWhy;
  const text = info.role === 'id' ? `\`${clip(name)}\` identifies an entity or operation` : `\`${clip(name)}\` is a reference`;
  info.leafWhy = text;
  info.leafWhyOf = name;
  return text;
}

/** Classifies a scalar member by its name's role in context (rules F1–F14 of README.md). */
function classifyLeaf(ctx: Ctx, scope: Scope, info: NameInfo, value: unknown, name: string): void {
  const role = info.role;
  const inState = scope.stateful !== null;
  switch (role) {
    case 'id':
    case 'ref':
      if (ctx.detail) annotate(ctx, 'identifier', identifierWhy(info, name));
      if (ctx.ids.length < 2 && !inState) ctx.ids.push(displayPath(ctx));
      return;
    case 'marker':
      if (ctx.detail) annotate(ctx, 'immutable-snapshot', 'event/snapshot time: marks its object as a point-in-time record');
      return;
    case 'time':
      if (ctx.detail) annotate(ctx, 'immutable-snapshot', 'when something happened: an event fact that does not change');
      return;
    case 'op':
      if (ctx.detail) annotate(ctx, 'immutable-snapshot', 'names the operation or event: a fact of the message');
      return;
    case 'new-value':
      if (ctx.detail) annotate(ctx, 'immutable-snapshot', 'a new value the message sets on purpose');
      noteNewValue(ctx, scope, name);
      return;
    case 'snapshot':
      if (ctx.detail) annotate(ctx, 'immutable-snapshot', 'a snapshot value');
      return;
    default:
      break;
  }
  if (inState && info.mutableRole) {
    mutable(ctx, scope, role, true);
    return;
  }
  if (!inState && info.looseState && value !== null && value !== '' && typeof value !== 'boolean') {
    mutable(ctx, scope, role, true);
    return;
  }
  if (!inState && role === 'updated') {
    mutable(ctx, scope, role, false);
    return;
  }
  if (role === 'amount' || role === 'currency') {
    if (ctx.detail) annotate(ctx, 'immutable-snapshot', role === 'amount' ? 'an amount the sender fixed for this operation (a confirmed amount)' : 'the currency of a fixed amount');
    if (ctx.fixed.length < 2) ctx.fixed.push(displayPath(ctx));
    return;
  }
  // What remains only annotates.
  if (!ctx.detail) return;
  if (typeof value === 'string' && (UUID_RE.test(value) || ULID_RE.test(value))) {
    annotate(ctx, 'identifier', 'the value is a UUID/ULID');
    return;
  }
  if (role !== 'other') {
    annotate(ctx, 'unknown', cachedWhy(ARGUMENT_WHY, role, '', argumentWhy));
    return;
  }
  annotate(ctx, 'unknown', 'no rule applies');
}

const clip = (s: string, n = 60): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

function noteNewValue(ctx: Ctx, scope: Scope, name: string): void {
  if (scope.snap !== null) return;
  const d = displayPath(ctx);
  ctx.snaps.push({ kind: 'command', label: clip(name), why: `a new value sent on purpose (\`${d}\`)`, suppressed: [d], count: 1 });
}

// ---------------------------------------------------------------------------------------------
// The walk

function walk(ctx: Ctx, v: unknown, scope: Scope, depth: number, info: NameInfo | null, name: string): number {
  if (++ctx.nodes > MAX_WALK_NODES || depth > MAX_WALK_DEPTH) {
    ctx.truncated = true;
    ctx.hashExact = false;
    ctx.h2 = 0;
    if (ctx.ev !== null) ctx.ev.exact = false;
    // The node bound also ends the walk of every later sibling, whatever this value's scope.
    if (ctx.nodes > MAX_WALK_NODES) {
      if (ctx.nodes === MAX_WALK_NODES + 1) noteLimit(ctx, 'nodes', MAX_WALK_NODES + 1);
    } else if (scope.snap === null && ctx.metaOnly === 0) noteLimit(ctx, 'depth', depth);
    return 0;
  }
  const ev = ctx.ev !== null && ctx.evOff === 0 ? ctx.ev : null;
  if (v === null || typeof v !== 'object') {
    // A scalar has nothing below it for the key verdict's evidence (JSON inside a string is not looked into).
    if (ev !== null) evidenceAt(ev, ctx.segs, v);
    if (typeof v === 'string' && ctx.jsonParses < MAX_JSON_IN_STRING && looksLikeJson(v)) {
      const parsed = tryParse(ctx, v);
      if (parsed !== undefined) {
        annotate(ctx, 'unknown', 'JSON carried in a string field: its members are classified below');
        ctx.evOff++;
        const h = walkJsonString(ctx, parsed, scope, depth, info, name);
        ctx.evOff--;
        return h;
      }
    } else if (ctx.jsonParses >= MAX_JSON_IN_STRING && ctx.limit === null && typeof v === 'string' && scope.snap === null && ctx.metaOnly === 0 && looksLikeJson(v)) {
      noteLimit(ctx, 'json-strings', MAX_JSON_IN_STRING + 1);
    }
    if (info !== null) classifyLeaf(ctx, scope, info, v, name);
    if (ctx.noHash > 0) {
      ctx.h2 = 0;
      return 0;
    }
    if (typeof v === 'string') hashString(v, 1, LEAF_H);
    else if (typeof v === 'number') hashString(String(v), 2, LEAF_H);
    else {
      LEAF_H.a = v === true ? 0x1b873593 : v === false ? 0x2f3a8c11 : 0x5c2d8e17;
      LEAF_H.b = LEAF_H.a ^ 0x68e31da4;
    }
    ctx.h2 = LEAF_H.b;
    return LEAF_H.a;
  }
  if (ev !== null && !evidenceAt(ev, ctx.segs, v)) {
    ctx.evOff++;
    const h = Array.isArray(v) ? walkArray(ctx, v, scope, depth, info, name) : walkObject(ctx, v as Record<string, unknown>, scope, depth, info);
    ctx.evOff--;
    return h;
  }
  if (Array.isArray(v)) return walkArray(ctx, v, scope, depth, info, name);
  return walkObject(ctx, v as Record<string, unknown>, scope, depth, info);
}

function tryParse(ctx: Ctx, s: string): unknown {
  ctx.jsonParses++;
  try {
    const p = JSON.parse(s) as unknown;
    return p !== null && typeof p === 'object' ? p : undefined;
  } catch {
    return undefined;
  }
}

function walkJsonString(ctx: Ctx, parsed: unknown, scope: Scope, depth: number, info: NameInfo | null, name: string): number {
  const prevJsonIn = ctx.jsonIn;
  ctx.jsonIn ??= fullPath(ctx);
  let h: number;
  if (ctx.envelopeDepth < 2 && scope.stateful === null && isArgsRoot(ctx)) h = walkDocument(ctx, parsed, scope, depth + 1, undefined);
  else h = walk(ctx, parsed, scope, depth + 1, info, name);
  ctx.jsonIn = prevJsonIn;
  return h;
}

function walkArray(ctx: Ctx, arr: unknown[], scope: Scope, depth: number, info: NameInfo | null, name: string): number {
  const role = info?.role ?? 'other';
  let childScope = scope;
  const n = Math.min(arr.length, MAX_ARRAY_ITEMS);
  if (arr.length > MAX_ARRAY_ITEMS) {
    ctx.truncated = true;
    ctx.hashExact = false;
    // The key verdict's own walk would see elements this one skips.
    if (ctx.ev !== null && ctx.evOff === 0) ctx.ev.exact = false;
  }
  let scalars = n > 0;
  for (let i = 0; i < n && scalars; i++) {
    const x: unknown = arr[i];
    if (x !== null && typeof x === 'object') scalars = false;
  }
  if (info !== null) {
    if (role === 'items' || role === 'address' || role === 'contact') {
      if (n > 0 || scope.stateful !== null) mutable(ctx, scope, role, true);
      childScope = mkScope(scope.snap, scope.stateful ?? { entity: null }, true, scope.parentNorm);
    } else if (role === 'snapshot' && scope.snap === null) {
      annotate(ctx, 'immutable-snapshot', 'a snapshot container');
      childScope = mkScope(containerSnap(ctx, 'marker'), scope.stateful, scope.citeDone, scope.parentNorm);
    } else if (role === 'new-value' && scope.snap === null) {
      annotate(ctx, 'immutable-snapshot', 'new values the message sets on purpose');
      childScope = mkScope(containerSnap(ctx, 'command'), scope.stateful, scope.citeDone, scope.parentNorm);
    } else if (scalars) {
      // An array of scalars is annotated once, by its name.
      classifyLeaf(ctx, scope, info, arr[0], name);
    }
  }
  // Skipped scalars would be classified as the visited ones are (by the array's name); skipped
  // objects and arrays could hold anything (rule P10). Inside a snapshot nothing could be flagged.
  if (n < arr.length && ctx.limit === null && childScope.snap === null && ctx.metaOnly === 0 && skipsContainers(arr, n)) noteLimit(ctx, 'items', arr.length);
  const parentNorm = info !== null ? info.singular : scope.parentNorm;
  const prevStart = ctx.argsStart;
  if (isArgsRoot(ctx)) ctx.argsStart = Math.max(0, ctx.segs.length - 1);
  let h = 0x3c6ef372;
  let h2 = 0x1f83d9ab;
  const elScope: Scope = mkScope(childScope.snap, childScope.stateful, childScope.citeDone, parentNorm);
  const detail = ctx.detail;
  if (scalars) ctx.detail = false; // elements of a scalar array are not annotated one by one
  for (let i = 0; i < n; i++) {
    ctx.segs.push(indexSeg(i));
    const el: unknown = arr[i];
    const x = walk(ctx, el, elScope, depth + 1, scalars ? null : info, name);
    h = mixOrdered(h, x);
    h2 = mixOrdered(h2, ctx.h2);
    popSeg(ctx);
    if (ctx.nodes > MAX_WALK_NODES) break;
  }
  ctx.detail = detail;
  ctx.argsStart = prevStart;
  ctx.h2 = fmix(h2 ^ arr.length);
  return fmix(h ^ arr.length);
}

/** True when an element of `arr` from index `from` on is an object or an array. */
function skipsContainers(arr: readonly unknown[], from: number): boolean {
  for (let i = from; i < arr.length; i++) {
    const x: unknown = arr[i];
    if (x !== null && typeof x === 'object') return true;
  }
  return false;
}

/** Which walk bound left fields unclassified (rule P10), where, and the count that exceeded it. */
interface WalkLimit {
  kind: 'nodes' | 'depth' | 'members' | 'items' | 'json-strings';
  /** Full path (`body.…`) of the value not walked (`nodes`, `depth`, `json-strings`) or of the cut object / array. */
  path: string;
  /** Members / elements of the cut container; the depth of the value not walked. */
  count: number;
}

/**
 * Records the first walk bound that left fields unclassified (rule P10), at the current path,
 * unless every field is an intentional snapshot (`queueIsSnapshot` or a `**` pattern): then
 * nothing unread could change the verdict.
 */
function noteLimit(ctx: Ctx, kind: WalkLimit['kind'], count: number): void {
  if (ctx.limit !== null) return;
  for (const p of ctx.patterns) if (p.segs.length === 1 && p.segs[0] === '**') return;
  ctx.limit = { kind, path: fullPath(ctx), count };
}

/** `1,100`: thousands grouped the same in every locale. */
const grouped = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** The `analysis-limit` finding (rule P10, review) for the first bound the walk hit. */
function limitFinding(l: WalkLimit): Finding {
  const at = code(clip(l.path, 120));
  let text: string;
  switch (l.kind) {
    case 'members':
      text = `the payload has ${grouped(l.count)} members at ${at} (the analysis reads ${grouped(MAX_OBJECT_MEMBERS)} per object): the members beyond were not classified; look at it by hand.`;
      break;
    case 'items':
      text = `the payload has ${grouped(l.count)} elements at ${at} (the analysis reads ${grouped(MAX_ARRAY_ITEMS)} per array): the elements beyond were not classified; look at it by hand.`;
      break;
    case 'depth':
      text = `the payload nests deeper than ${grouped(MAX_WALK_DEPTH)} levels at ${at} (the analysis reads ${grouped(MAX_WALK_DEPTH)}): the values below were not classified; look at it by hand.`;
      break;
    case 'nodes':
      text = `the payload has more than ${grouped(MAX_WALK_NODES)} values (the analysis reads ${grouped(MAX_WALK_NODES)}): the values from ${at} on were not classified; look at it by hand.`;
      break;
    case 'json-strings':
      text = `the payload has more than ${grouped(MAX_JSON_IN_STRING)} string fields holding JSON (the analysis decodes ${grouped(MAX_JSON_IN_STRING)}): ${at} and the ones after it were not classified; look at it by hand.`;
      break;
  }
  return { rule: 'analysis-limit', severity: 'review', text, fields: [l.path] };
}

/** A snapshot / command context opened by a container name (`snapshot`, `before`, `newAddress`…). */
function containerSnap(ctx: Ctx, kind: 'marker' | 'command'): Snap {
  const d = displayPath(ctx);
  const s: Snap =
    kind === 'marker'
      ? { kind, label: d, why: `a point-in-time snapshot (\`${d}\`)`, suppressed: [], count: 0 }
      : { kind, label: d, why: `a new value sent on purpose (\`${d}\`)`, suppressed: [d], count: 1, fixed: true };
  ctx.snaps.push(s);
  return s;
}

/** A reusable array per depth for the members' {@link NameInfo}s (avoids an allocation per object). */
function infoScratch(ctx: Ctx, depth: number, m: number): NameInfo[] {
  let a = ctx.infoPool[depth];
  if (a === undefined) {
    a = [];
    ctx.infoPool[depth] = a;
  }
  // Only the first `m` entries are read; not truncating avoids reallocating the backing store.
  if (a.length < m) a.length = m;
  return a;
}

function walkObject(ctx: Ctx, o: Record<string, unknown>, scope: Scope, depth: number, info: NameInfo | null): number {
  const keys = Object.keys(o);
  const m = Math.min(keys.length, MAX_OBJECT_MEMBERS);
  if (keys.length > MAX_OBJECT_MEMBERS) {
    ctx.truncated = true;
    ctx.hashExact = false;
    if (ctx.ev !== null && ctx.evOff === 0) ctx.ev.exact = false;
  }
  const argsHere = isArgsRoot(ctx);
  const prevStart = ctx.argsStart;
  // With several argument containers (Celery `args` + `kwargs`), paths keep the container's name.
  if (argsHere) ctx.argsStart = ctx.argsRoots.length > 1 ? Math.max(0, ctx.segs.length - 1) : ctx.segs.length;
  const isEnvRoot = depth === ctx.envDepth0 && ctx.envMeta !== null;
  let childScope = scope;
  const role = info?.role ?? 'other';

  // Containers named as snapshots or new values (rules P5, P6).
  if (info !== null && scope.snap === null && role === 'snapshot') {
    annotate(ctx, 'immutable-snapshot', 'a snapshot container');
    childScope = mkScope(containerSnap(ctx, 'marker'), childScope.stateful, childScope.citeDone, childScope.parentNorm);
  } else if (info !== null && scope.snap === null && role === 'new-value') {
    annotate(ctx, 'immutable-snapshot', 'new values the message sets on purpose');
    childScope = mkScope(containerSnap(ctx, 'command'), childScope.stateful, childScope.citeDone, childScope.parentNorm);
  }

  // Pass 1: markers, the command test and the entity test.
  let idKey: string | null = null;
  let hasState = false;
  let marker: string | null = null;
  let cmd: string | null = null;
  const infos = infoScratch(ctx, depth, m);
  const ownNorm = info !== null ? info.singular : scope.parentNorm;
  for (let i = 0; i < m; i++) {
    const k = keys[i] ?? '';
    const ki = nameInfo(k);
    infos[i] = ki;
    if (isEnvRoot) continue;
    const r = ki.role;
    if (r === 'marker') marker ??= k;
    else if (r === 'id') {
      if (ki.entity === null || (ki.entity.length > 0 && ki.entity === ownNorm)) idKey ??= k;
    } else if (ki.entityState) {
      const v = o[k];
      if (v !== null && v !== '' && v !== undefined && !(Array.isArray(v) && v.length === 0)) hasState = true;
    } else if (argsHere && r === 'op') {
      const v = o[k];
      if (typeof v === 'string' && operationWords(v).some((w) => SET_VERBS.has(w))) cmd ??= clip(v, 80);
    }
  }

  if (childScope.snap === null && marker !== null) {
    ctx.segs.push(marker);
    const d = displayPath(ctx);
    popSeg(ctx);
    const s: Snap = { kind: 'marker', label: d, why: `a point-in-time record (marked by \`${d}\`)`, suppressed: [], count: 0 };
    ctx.snaps.push(s);
    childScope = mkScope(s, childScope.stateful, childScope.citeDone, childScope.parentNorm);
  }
  if (argsHere && childScope.snap === null && (cmd !== null || ctx.setCommand !== null)) {
    const label = cmd ?? ctx.setCommand ?? '';
    const s: Snap = { kind: 'command', label, why: `a value the command \`${label}\` sets on purpose`, suppressed: [], count: 0 };
    ctx.snaps.push(s);
    childScope = mkScope(s, childScope.stateful, childScope.citeDone, childScope.parentNorm);
  }

  // Rule P4: an object with its own id plus state that can change is an embedded entity.
  if (childScope.stateful === null && idKey !== null && hasState) {
    const display = argsHere ? '' : displayPath(ctx);
    const shape = display.replace(/\[\d+\]/g, '[]');
    let entity = ctx.entities.find((e) => e.shape === shape) ?? null;
    if (entity === null) {
      entity = { display, shape, suggestion: suggestion(ctx, idKey, argsHere), cites: [], count: 0 };
      if (ctx.entities.length < 16) ctx.entities.push(entity);
    }
    entity.count++;
    if (!argsHere && ctx.detail) annotate(ctx, childScope.snap ? 'immutable-snapshot' : 'mutable-state', childScope.snap ? `embedded entity, but ${childScope.snap.why}` : 'embedded entity: an object with an id plus fields that can change');
    childScope = mkScope(childScope.snap, { entity }, childScope.citeDone, childScope.parentNorm);
  } else if (info !== null && (role === 'address' || role === 'contact' || (role === 'new-value' && scope.snap !== null))) {
    mutable(ctx, childScope, role, true);
    childScope = mkScope(childScope.snap, childScope.stateful ?? { entity: null }, true, childScope.parentNorm);
  }

  // Members beyond the bound are not walked (rule P10); inside a snapshot none could be flagged.
  if (m < keys.length && ctx.limit === null && childScope.snap === null && ctx.metaOnly === 0) noteLimit(ctx, 'members', keys.length);

  // Pass 2: members.
  let ha = 0x6a09e667;
  let hb = 0xbb67ae85;
  const memberScope: Scope = childScope.parentNorm === ownNorm ? childScope : mkScope(childScope.snap, childScope.stateful, childScope.citeDone, ownNorm);
  const envMeta = isEnvRoot ? ctx.envMeta : null;
  for (let i = 0; i < m; i++) {
    const k = keys[i] ?? '';
    const ki = infos[i] as NameInfo;
    const v = o[k];
    ctx.segs.push(k);
    // A member holding the key itself: the key verdict notes the copy and looks no further inside.
    const holder = ctx.ev !== null && ctx.evOff === 0 && evidenceKeyHolder(ctx.ev, ctx.segs, ki, k, v);
    if (holder) ctx.evOff++;
    let x: number;
    const meta = envMeta !== null && Object.prototype.hasOwnProperty.call(envMeta, k) ? envMeta[k] : undefined;
    const isMeta = meta !== undefined && !isArgsRoot(ctx);
    const perSend = isMeta ? meta.perSend === true : ki.perSend && ctx.segs.length - ctx.argsStart <= 1;
    // Left out of the business hash: its values need no hashing (they are still classified).
    const excluded = perSend || (ctx.hashExclude.length > 0 && hashExcluded(ctx));
    if (excluded) ctx.noHash++;
    if (isMeta) {
      annotate(ctx, meta.cls, meta.why);
      x = hashOnly(ctx, v, depth + 1);
    } else if (argsHere && ctx.emailCmd && memberScope.snap === null && ki.email === 'recipient' && !hasIdMember(v)) {
      // The addresses an email command sends to are values it carries on purpose (not an entity copy).
      ctx.emailSnap ??= { kind: 'command', label: 'email', why: 'the recipient the email command addresses on purpose', suppressed: [], count: 0 };
      if (ctx.emailSnap.count === 0 && !ctx.snaps.includes(ctx.emailSnap)) ctx.snaps.push(ctx.emailSnap);
      x = walk(ctx, v, mkScope(ctx.emailSnap, memberScope.stateful, memberScope.citeDone, memberScope.parentNorm), depth + 1, ki, k);
    } else {
      const user = userSnapFor(ctx, memberScope);
      x = walk(ctx, v, user !== null ? mkScope(user, memberScope.stateful, memberScope.citeDone, memberScope.parentNorm) : memberScope, depth + 1, ki, k);
    }
    if (excluded) ctx.noHash--;
    if (holder) ctx.evOff--;
    const x2 = ctx.h2;
    popSeg(ctx);
    if (!excluded) {
      ha = (ha + mixOrdered(ki.ha, x)) >>> 0;
      hb = (hb + mixOrdered(ki.hb, x2)) >>> 0;
    }
    if (ctx.nodes > MAX_WALK_NODES) break;
  }
  ctx.argsStart = prevStart;
  ctx.h2 = fmix(hb ^ 0x510e527f);
  return fmix(ha ^ 0x9b05688c);
}

/** The scope of envelope metadata values (scopes are never modified, so one serves every call). */
const HASH_ONLY_SCOPE: Scope = mkScope(null, null, true, '');

/** Hashes an envelope metadata value without classifying it. */
function hashOnly(ctx: Ctx, v: unknown, depth: number): number {
  const detail = ctx.detail;
  ctx.detail = false;
  ctx.metaOnly++;
  const h = walk(ctx, v, HASH_ONLY_SCOPE, depth, null, '');
  ctx.metaOnly--;
  ctx.detail = detail;
  return h;
}


/**
 * An email-send command: arguments with a subject or template member and a recipient member
 * (`to`, `cc`, `recipients`, `toEmail`, `Destination`…). Its recipients are values the command
 * carries on purpose; embedded entities in it are still flagged (rule P4).
 */
function emailCommand(args: unknown): boolean {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return false;
  let content = false;
  let recipient = false;
  let n = 0;
  for (const k in args) {
    if (!Object.prototype.hasOwnProperty.call(args, k)) continue;
    if (++n > 64) break;
    const email = nameInfo(k).email;
    if (email === 'content') content = true;
    else if (email === 'recipient') recipient = true;
  }
  return content && recipient;
}

/** A recipient value that is an entity copy (an object, or objects in an array, with an id member). */
function hasIdMember(v: unknown): boolean {
  const one = (o: unknown): boolean => o !== null && typeof o === 'object' && !Array.isArray(o) && Object.keys(o).slice(0, 64).some((k) => nameInfo(k).role === 'id');
  return Array.isArray(v) ? v.slice(0, 100).some(one) : one(v);
}

function suggestion(ctx: Ctx, idKey: string, argsHere: boolean): string {
  if (argsHere) return `its \`${clip(idKey)}\``;
  const idInfo = nameInfo(idKey);
  if (idInfo.entity !== null && idInfo.entity.length > 0) return `\`${clip(idKey)}\``;
  let key = ctx.segs[ctx.segs.length - 1] ?? '';
  let plural = false;
  if (key.startsWith('[')) {
    key = ctx.segs[ctx.segs.length - 2] ?? '';
    plural = true;
  }
  if (key.length === 0 || key.startsWith('[') || key.length > 60) return `its \`${clip(idKey)}\``;
  const base = plural ? singularWord(key) : key;
  const name = base.includes('_') ? `${base}_id${plural ? 's' : ''}` : `${base}${plural ? 'Ids' : 'Id'}`;
  return `\`${name}\``;
}

function singularWord(word: string): string {
  if (word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

const NO_SEGS: string[] = [];
/** The arguments root of a document without envelope at the message root (read only). */
const ROOT_ARGS: string[][] = [NO_SEGS];

/** Walks one document (the body, or JSON inside an SNS `Message`), recognising its envelope (rule P2). */
function walkDocument(ctx: Ctx, root: unknown, scope: Scope, depth: number, known: Envelope | null | undefined): number {
  const env = known !== undefined ? known : detectEnvelope(root, ctx.message, ctx.envelopeDepth > 0);
  const prevArgs = ctx.argsRoots;
  const prevMeta = ctx.envMeta;
  const prevDepth0 = ctx.envDepth0;
  // At the root (the usual case) the envelope's own argument paths serve as they are (read only).
  const base = ctx.segs.length === 0 ? NO_SEGS : ctx.segs.slice();
  ctx.envelopeDepth++;
  let docScope = scope;
  if (env !== null) {
    ctx.argsRoots = base.length === 0 ? env.args : env.args.map((a) => [...base, ...a]);
    ctx.envMeta = env.meta;
    ctx.envDepth0 = depth;
    const argsPath = pathOf(ctx.argsRoots[0] ?? base, 0, 'body');
    const prev = ctx.envelope;
    ctx.envelope = prev === null ? { name: env.name, argsPath, snapshot: env.snapshot, operation: env.operation } : { name: `${prev.name} → ${env.name}`, argsPath, snapshot: env.snapshot ?? prev.snapshot, operation: env.operation ?? prev.operation };
    if (env.snapshot !== null && docScope.snap === null) {
      const s: Snap = { kind: 'envelope', label: env.snapshot.label, why: env.snapshot.why, suppressed: [], count: 0 };
      ctx.snaps.push(s);
      docScope = mkScope(s, docScope.stateful, docScope.citeDone, docScope.parentNorm);
    }
  } else {
    ctx.argsRoots = base.length === 0 ? ROOT_ARGS : [base];
    ctx.envMeta = null;
    ctx.envDepth0 = -1;
  }
  const h = walk(ctx, root, docScope, depth, null, '');
  ctx.argsRoots = prevArgs;
  ctx.envMeta = prevMeta;
  ctx.envDepth0 = prevDepth0;
  ctx.envelopeDepth--;
  return h;
}

// ---------------------------------------------------------------------------------------------
// Operation (rule O1)

const OP_HEADERS = ['type', 'event', 'event-type', 'eventtype', 'x-event-type', 'task', 'ce-type', 'ce_type', 'operation', 'command'];
const OP_BODY_KEYS = ['command', 'cmd', 'operation', 'op', 'type', 'eventType', 'event_type', 'event', 'eventName', 'action', 'task'];

/** The message-level operation: BullMQ job name, AMQP `type`, a type/event/task header. */
function messageOperation(message: QueueMessage): { value: string; source: string } | null {
  const job = message.meta.jobName;
  if (typeof job === 'string' && job.length > 0) return { value: job.slice(0, 200), source: 'meta.jobName' };
  const t = own(message.properties, 'type');
  if (typeof t === 'string' && t.length > 0) return { value: t.slice(0, 200), source: 'properties.type' };
  const h = headerText(message.headers, OP_HEADERS);
  return h !== null ? { value: h.value, source: `headers.${h.name}` } : null;
}

function bodyOperation(args: unknown, argsPath: string): { value: string; source: string } | null {
  if (!isRecord(args)) return null;
  for (const k of OP_BODY_KEYS) {
    const v = str(own(args, k));
    if (v !== null) return { value: v, source: `${argsPath}.${k}` };
  }
  return null;
}

function argsValue(root: unknown, env: Envelope | null): { value: unknown; path: string } {
  if (env === null) return { value: root, path: 'body' };
  const first = env.args[0] ?? [];
  let cur: unknown = root;
  for (const seg of first) {
    if (seg.startsWith('[')) cur = Array.isArray(cur) ? (cur as unknown[])[Number(seg.slice(1, -1))] : undefined;
    else cur = own(cur, seg);
  }
  return { value: cur, path: pathOf(first, 0, 'body') };
}

// ---------------------------------------------------------------------------------------------
// Entry point

/** `body.data.idempotencyKey` → `['data', 'idempotencyKey']`; null for paths outside the body. */
function bodySegs(path: string): string[] | null {
  if (!path.startsWith('body')) return null;
  const out: string[] = [];
  const re = /\.([^.[\]]+)|\[(\d{1,6})\]/gy;
  re.lastIndex = 4;
  let m: RegExpExecArray | null;
  while ((m = re.exec(path)) !== null) out.push(m[1] !== undefined ? m[1] : `[${m[2] ?? ''}]`);
  return out;
}

const bodySegsCache = new Map<string, string[] | null>();

/** {@link bodySegs}, cached (the same few key fields come with every message). Callers must not modify the result. */
function cachedBodySegs(path: string): string[] | null {
  const hit = bodySegsCache.get(path);
  if (hit !== undefined) return hit;
  const segs = bodySegs(path);
  if (path.length <= 200) {
    if (bodySegsCache.size >= 1000) bodySegsCache.clear();
    bodySegsCache.set(path, segs);
  }
  return segs;
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;
const code = (s: string): string => `\`${s}\``;
/** "`a` and `b`", "`a`, `b` and `c`", plus " (and 4 more fields)". */
function list(xs: string[], more = 0): string {
  const head = xs.length <= 1 ? (xs[0] ?? '') : `${xs.slice(0, -1).join(', ')} and ${xs[xs.length - 1] ?? ''}`;
  return more > 0 ? `${head} (and ${plural(more, 'more field')})` : head;
}

/** A JSON `content-type` (`application/json`, `application/cloudevents+json`…; parameters such as `; charset=utf-8` allowed). */
const JSON_CONTENT_TYPE = /^\s*application\/(?:[\w.!#$&^-]+\+)?json\s*(?:;.*)?$/i;

/**
 * Rule P1b (`invalid-json`, review): a whole (not cut) UTF-8 text body that should be JSON but does not
 * parse — its content type says JSON (AMQP `content_type`, a `content-type` header or attribute),
 * or it opens like a JSON object (`{`) or array (`[` then `{`, `[`, `"` or `]`). A consumer that
 * parses it fails on every redelivery, and its fields could not be classified. The sentence names
 * the parser's error; null when the body is plain text.
 */
function brokenJson(message: QueueMessage, data: string): string | null {
  let i = 0;
  while (i < data.length && (data[i] === ' ' || data[i] === '\t' || data[i] === '\n' || data[i] === '\r' || data[i] === '\uFEFF')) i++;
  let j = i + 1;
  while (j < data.length && (data[j] === ' ' || data[j] === '\t' || data[j] === '\n' || data[j] === '\r')) j++;
  const opens = data[i] === '{' || (data[i] === '[' && (data[j] === '{' || data[j] === '[' || data[j] === '"' || data[j] === ']'));
  const ct = declaredContentType(message);
  const declared = ct !== null && JSON_CONTENT_TYPE.test(ct);
  if (!opens && !declared) return null;
  let why = 'it does not parse';
  try {
    JSON.parse(data.slice(i));
    return null;
  } catch (e) {
    if (e instanceof Error && e.message.length > 0) why = e.message.length > 120 ? `${e.message.slice(0, 119)}…` : e.message;
  }
  const what = declared ? `the body is declared ${ct.trim().slice(0, 60)} but is not valid JSON` : 'the body looks like JSON but is not valid JSON';
  return `${what} (${why}): a consumer that parses it fails on every redelivery, and its fields were not classified; look at it by hand.`;
}

/** The message's content type: AMQP `properties.contentType`, else a `content-type` header / attribute (any case); null when none. */
function declaredContentType(message: QueueMessage): string | null {
  const props = (message as { properties?: unknown }).properties;
  if (props !== null && typeof props === 'object') {
    const ct = (props as Record<string, unknown>).contentType;
    if (typeof ct === 'string') return ct;
  }
  const headers = (message as { headers?: unknown }).headers;
  if (headers !== null && typeof headers === 'object') {
    for (const k of Object.keys(headers)) {
      if (k.toLowerCase() !== 'content-type') continue;
      const v = (headers as Record<string, unknown>)[k];
      if (typeof v === 'string') return v;
    }
  }
  return null;
}

/** The result for a body that is not classified (empty, text, binary, truncated). */
function emptyResult(msgOp: { value: string; source: string } | null, format: PayloadAnalysis['format'], finding: Finding | null, hash: string | null): PayloadResult {
  const findings = finding ? [finding] : [];
  const verdict = finding?.severity ?? 'ok';
  return {
    payload: { verdict, label: verdict, reasons: findings.map((f) => f.text), findings, fields: [], fieldsTruncated: false, envelope: null, argumentsPath: 'body', format, intentionalSnapshot: [] },
    businessHash: hash,
    operation: msgOp?.value ?? null,
    operationSource: msgOp?.source ?? null,
  };
}

const FINDING_RANK: Record<PayloadVerdictKind, number> = { flag: 0, review: 1, ok: 2 };
const byFindingRank = (a: Finding, b: Finding): number => FINDING_RANK[a.severity] - FINDING_RANK[b.severity];
const byCitePriority = (a: Cite, b: Cite): number => a.prio - b.prio || a.order - b.order;

/** The texts of the first {@link MAX_REASONS} findings. */
function reasonTexts(findings: readonly Finding[]): string[] {
  const n = Math.min(findings.length, MAX_REASONS);
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push((findings[i] as Finding).text);
  return out;
}

/** True when the operation name's words contain a set verb (rule P3). */
function isSetCommand(op: string | undefined): op is string {
  if (typeof op !== 'string') return false;
  for (const w of operationWords(op)) if (SET_VERBS.has(w)) return true;
  return false;
}

/** The last compiled snapshot patterns and what they were compiled from: a summary analyses every message with the same rules. */
let patternsWhole = false;
let patternsFields: readonly string[] = [];
let patternsOf: SnapshotPattern[] = [];

/** The compiled snapshot patterns of `rules` (`queueIsSnapshot` first); the result is shared, callers must not modify it. */
function snapshotPatterns(rules: InspectRules): SnapshotPattern[] {
  const fields = rules.snapshotFields;
  if (rules.queueIsSnapshot === patternsWhole && sameStrings(fields, patternsFields)) return patternsOf;
  const patterns: SnapshotPattern[] = [];
  if (rules.queueIsSnapshot) patterns.push({ source: 'whole queue', segs: ['**'] });
  for (const p of fields) {
    const c = compileSnapshotPattern(p);
    if (c !== null) patterns.push(c);
  }
  patternsWhole = rules.queueIsSnapshot;
  // A copy: the caller may change its array later.
  patternsFields = fields.slice();
  patternsOf = patterns;
  return patterns;
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// Shared scratch arrays (one per depth); analysis is synchronous, so one set suffices.
const INFO_POOL: NameInfo[][] = [];

/**
 * Classifies the body's fields and gives the payload verdict (rules P1–P9, README.md).
 *
 * @param message the message; its body is decoded with the shared JSON cache.
 * @param rules the queue's resolved rules (snapshot fields, queue-is-snapshot).
 * @param key the extracted idempotency key: its body fields (unless composed by a template) are
 *   left out of the business hash.
 * @param detail `full` builds field annotations; `verdict` only the verdict and reasons.
 * Never throws.
 */
export function analyzePayload(message: QueueMessage, rules: InspectRules, key: KeyExtraction | null, detail: 'full' | 'verdict' = 'full'): PayloadResult {
  return payloadResult(message, rules, key, detail, true, null);
}

/**
 * {@link analyzePayload} (`sentences`) or {@link analyzePayloadForSummary} that also gathers the
 * body values the key verdict needs into `evidence` (see {@link KeyEvidence}), so the body is
 * walked once for both. The payload result is the same as without evidence. Never throws.
 *
 * @internal for shared/analysis/analyze.ts.
 */
export function analyzePayloadWithEvidence(message: QueueMessage, rules: InspectRules, key: KeyExtraction | null, detail: 'full' | 'verdict', sentences: boolean, evidence: KeyEvidence | null): PayloadResult {
  return payloadResult(message, rules, key, detail, sentences, evidence);
}

/**
 * {@link analyzePayload} for the queue summary, which reads the verdict, the findings' rules and
 * severities, the texts of flag/review findings, the business hash and the operation, and nothing
 * else: the sentences of `ok` findings are left empty (`''`) and `payload.reasons` is `[]`, so no
 * reason text is built that the summary would drop. Everything else is as {@link analyzePayload}
 * makes it. Never throws.
 *
 * @internal for shared/analysis/summary.ts; results must not reach callers of the public API.
 */
export function analyzePayloadForSummary(message: QueueMessage, rules: InspectRules, key: KeyExtraction | null, detail: 'full' | 'verdict'): PayloadResult {
  return payloadResult(message, rules, key, detail, false, null);
}

function payloadResult(message: QueueMessage, rules: InspectRules, key: KeyExtraction | null, detail: 'full' | 'verdict', sentences: boolean, evidence: KeyEvidence | null): PayloadResult {
  const r = bodyResult(message, rules, key, detail, sentences, evidence);
  // Rare: the key's header rule matched several headers (rule K1b), or a body key field beside a
  // header key (K1c); two property reads otherwise.
  return key === null || (key.headers === undefined && key.bodyKey === undefined) ? r : withKeyFindings(r, key, sentences);
}

/**
 * `r` with the key-headers finding (rule K1b, {@link keyHeadersFinding}) and the key-header-body
 * finding (K1c, {@link keyBodyFinding}) added, in that order: a `review` one (the key is
 * ambiguous) goes after the flags and before the other review findings and raises an `ok` verdict
 * to `review` (the label too); an `ok` one (the values agree) goes last and changes neither
 * verdict nor label. Reasons are rebuilt as {@link finish} builds them (none without `sentences`
 * for a JSON body, whose reasons are then empty).
 */
function withKeyFindings(r: PayloadResult, key: KeyExtraction, sentences: boolean): PayloadResult {
  const kh = keyHeadersFinding(key, sentences);
  const kb = keyBodyFinding(key, sentences);
  if (kh === null && kb === null) return r;
  const p = r.payload;
  const findings = p.findings.slice();
  let at = 0;
  while (at < findings.length && (findings[at] as Finding).severity === 'flag') at++;
  for (const f of [kh, kb]) {
    if (f === null) continue;
    if (f.severity === 'ok') findings.push(f);
    else findings.splice(at++, 0, f);
  }
  const verdict: PayloadVerdictKind = (findings[0] as Finding).severity;
  const label = verdict === p.verdict ? p.label : verdict;
  const reasons = sentences || p.reasons.length > 0 ? reasonTexts(findings).filter((t) => t !== '') : p.reasons;
  return { ...r, payload: { ...p, verdict, label, findings, reasons } };
}

function bodyResult(message: QueueMessage, rules: InspectRules, key: KeyExtraction | null, detail: 'full' | 'verdict', sentences: boolean, evidence: KeyEvidence | null): PayloadResult {
  const view = bodyView(message);
  const msgOp = messageOperation(message);
  const body = (message as { body?: QueueMessage['body'] }).body;
  const data = typeof body?.data === 'string' ? body.data : '';
  if (view.format !== 'json') {
    const empty = (format: PayloadAnalysis['format'], finding: Finding | null, hash: string | null): PayloadResult => emptyResult(msgOp, format, finding, hash);
    if (view.format === 'empty') {
      // A Redis stream pending entry whose entry was deleted (trimmed) while it was pending: the
      // adapter returns it with no body. Its data is gone; a retry has nothing to process.
      if ((message.properties as Record<string, unknown> | undefined)?.entryDeleted === true) {
        return empty('empty', { rule: 'entry-deleted', severity: 'flag', text: 'the stream entry was deleted (trimmed) while it was pending: its data is lost and a redelivery has nothing to process; acknowledge it, and find the data elsewhere if it mattered.', fields: [] }, null);
      }
      return empty('empty', { rule: 'not-json', severity: 'ok', text: 'the body is empty: nothing in the payload can go stale.', fields: [] }, null);
    }
    const h = hashString(data, view.format === 'text' ? 11 : 12, LEAF_H);
    if (body?.truncated === true) return empty(view.format, { rule: 'truncated', severity: 'review', text: 'the body was cut at the read limit, so its fields could not be classified; read the full message.', fields: [] }, taggedHash('r', h.a, h.b));
    const tag = taggedHash(view.format === 'text' ? 't' : 'b', h.a, h.b);
    if (view.format === 'text' && body?.encoding === 'utf8') {
      const broken = brokenJson(message, data);
      if (broken !== null) return empty('text', { rule: 'invalid-json', severity: 'review', text: broken, fields: [] }, tag);
    }
    const text = view.format === 'binary' ? `the body is binary (${plural(typeof body?.sizeBytes === 'number' ? body.sizeBytes : 0, 'byte')}): its fields were not classified.` : 'the body is text, not JSON: its fields were not classified.';
    return empty(view.format, { rule: 'not-json', severity: 'ok', text, fields: [] }, tag);
  }

  const patterns = snapshotPatterns(rules);
  const hashExclude: string[][] = [];
  if (key !== null && key.composed !== true) for (const f of key.fields) {
    const s = cachedBodySegs(f);
    if (s !== null && s.length > 0) hashExclude.push(s);
  }
  const root = view.json;
  const env = detectEnvelope(root, message, false);
  const args = argsValue(root, env);
  const op = msgOp ?? env?.operation ?? bodyOperation(args.value, args.path);
  const msgOpValue = msgOp?.value;
  const envOpValue = env?.operation?.value;
  const setCommand = isSetCommand(msgOpValue) ? msgOpValue : isSetCommand(envOpValue) ? envOpValue : null;

  const ctx = CTX_BUSY ? newCtx() : SHARED_CTX;
  CTX_BUSY = true;
  try {
    resetCtx(ctx, message, detail === 'full', patterns, hashExclude, setCommand, emailCommand(args.value), evidence);
    return finish(ctx, root, env, data, op, sentences);
  } finally {
    if (ctx === SHARED_CTX) {
      CTX_BUSY = false;
      // Do not keep the last message or its result's field list alive through the shared context.
      ctx.message = EMPTY_MESSAGE;
      ctx.fields = NO_FIELDS;
      ctx.ev = null;
    }
  }
}

/** A fresh walk context (see {@link resetCtx}). */
function newCtx(): Ctx {
  return {
    message: EMPTY_MESSAGE,
    detail: false,
    fields: [],
    truncated: false,
    hashExact: true,
    nodes: 0,
    jsonParses: 0,
    segs: [],
    paths: [],
    pathsValid: 0,
    argsStart: 0,
    jsonIn: undefined,
    patterns: [],
    userSnaps: null,
    snaps: [],
    entities: [],
    loose: [],
    ids: [],
    fixed: [],
    order: 0,
    hashExclude: [],
    setCommand: null,
    emailCmd: false,
    emailSnap: null,
    envelopeDepth: 0,
    envDepth0: -1,
    envMeta: null,
    argsRoots: [],
    envelope: null,
    h2: 0,
    noHash: 0,
    ev: null,
    evOff: 0,
    limit: null,
    metaOnly: 0,
    infoPool: INFO_POOL,
  };
}

/**
 * One context serves every message (analysis is synchronous): its internal lists are emptied, not
 * reallocated. `fields` is new each time, since the result hands it out.
 */
function resetCtx(ctx: Ctx, message: QueueMessage, detail: boolean, patterns: SnapshotPattern[], hashExclude: string[][], setCommand: string | null, emailCmd: boolean, evidence: KeyEvidence | null): void {
  ctx.message = message;
  ctx.detail = detail;
  ctx.fields = [];
  ctx.truncated = false;
  ctx.hashExact = true;
  ctx.nodes = 0;
  ctx.jsonParses = 0;
  if (ctx.segs.length !== 0) ctx.segs.length = 0;
  ctx.pathsValid = 0;
  ctx.argsStart = 0;
  ctx.jsonIn = undefined;
  ctx.patterns = patterns;
  ctx.userSnaps = null;
  if (ctx.snaps.length !== 0) ctx.snaps.length = 0;
  if (ctx.entities.length !== 0) ctx.entities.length = 0;
  if (ctx.loose.length !== 0) ctx.loose.length = 0;
  if (ctx.ids.length !== 0) ctx.ids.length = 0;
  if (ctx.fixed.length !== 0) ctx.fixed.length = 0;
  ctx.order = 0;
  ctx.hashExclude = hashExclude;
  ctx.setCommand = setCommand;
  ctx.emailCmd = emailCmd;
  ctx.emailSnap = null;
  ctx.envelopeDepth = 0;
  ctx.envDepth0 = -1;
  ctx.envMeta = null;
  ctx.argsRoots = NO_ARGS_ROOTS;
  ctx.envelope = null;
  ctx.h2 = 0;
  ctx.noHash = 0;
  ctx.ev = evidence;
  ctx.evOff = 0;
  ctx.limit = null;
  ctx.metaOnly = 0;
}

const EMPTY_MESSAGE: QueueMessage = { id: '', queueId: '', queueName: '', position: 0, body: { encoding: 'utf8', data: '', sizeBytes: 0, truncated: false }, headers: {}, properties: {}, meta: {} };
const NO_ARGS_ROOTS: string[][] = [];
/** Placeholder between calls (replaced by a new list at the start of each). */
const NO_FIELDS: FieldAnnotation[] = [];
const SCOPE_ROOT: Scope = mkScope(null, null, false, '');
const SHARED_CTX: Ctx = newCtx();
/** True while {@link SHARED_CTX} is in use (never re-entered today; a nested call would get its own). */
let CTX_BUSY = false;

/** Walks the document and turns the context into the payload result (rules P4–P9). */
/** @param sentences false: `ok` findings get no text and `payload.reasons` is empty (see {@link analyzePayloadForSummary}). */
function finish(ctx: Ctx, root: unknown, env: Envelope | null, data: string, op: { value: string; source: string } | null, sentences: boolean): PayloadResult {
  const h1 = walkDocument(ctx, root, SCOPE_ROOT, 0, env);
  if (ctx.ev !== null) ctx.ev.done = true;
  let businessHash: string;
  if (ctx.hashExact) businessHash = taggedHash('j', h1, ctx.h2);
  else {
    const raw = hashString(data, 13, LEAF_H);
    businessHash = taggedHash('r', raw.a, raw.b);
  }

  // Findings (rules P4–P9), most severe first.
  const findings: Finding[] = [];
  for (const e of ctx.entities) {
    if (e.cites.length === 0) continue;
    // Sorted in place: the entity is discarded after this.
    const cites = e.cites.length > 1 ? sortSmall(e.cites, byCitePriority) : e.cites;
    const shown = cites.slice(0, 2).map((c) => code(citeDisplay(c)));
    const more = cites.length - shown.length;
    const verb = shown.length === 1 && more === 0 ? 'embeds' : 'embed';
    const self = e.display.length === 0 ? ' (the message is the entity itself)' : e.count > 1 ? ` (in ${plural(e.count, 'entity', 'entities')})` : '';
    findings.push({
      rule: 'embedded-entity',
      severity: 'flag',
      text: `${list(shown, more)} ${verb} state that can change before a retry${self}; send ${e.suggestion} and read current state${ctx.emailCmd && e.display.length > 0 ? ` (an email command carries its recipient, subject and template on purpose, but ${code(e.display.replace(/\[\d+\]/g, '[]'))} is a copy of the entity, not such a value)` : ''}.`,
      fields: cites.slice(0, 8).map(citePath),
    });
  }
  if (ctx.loose.length > 0) {
    const cites = ctx.loose.length > 1 ? sortSmall(ctx.loose, byCitePriority) : ctx.loose;
    const shown = cites.slice(0, 2).map((c) => code(citeDisplay(c)));
    const more = cites.length - shown.length;
    findings.push({
      rule: 'loose-state',
      severity: 'review',
      text: `${list(shown, more)} ${shown.length === 1 && more === 0 ? 'carries' : 'carry'} state that can change before a retry; read it when processing, or mark it as an intentional snapshot if the copy is meant.`,
      fields: cites.slice(0, 8).map(citePath),
    });
  }
  if (ctx.limit !== null) findings.push(limitFinding(ctx.limit));
  const intentional: string[] = [];
  for (const s of ctx.snaps) {
    if (s.count === 0) continue;
    if (!sentences) {
      // Same findings (rule and severity) as below, without their sentences.
      if (s.kind === 'user') intentional.push(s.label);
      findings.push({ rule: s.kind === 'user' ? 'user-snapshot' : s.kind === 'command' ? 'command-values' : 'event-snapshot', severity: 'ok', text: '', fields: [] });
      continue;
    }
    const fields = s.suppressed.length > 0 ? s.suppressed : [];
    const what = fields.length > 0 ? list(fields.slice(0, 2).map(code), Math.max(0, s.count - Math.min(2, fields.length))) : plural(s.count, 'field');
    if (s.kind === 'user') {
      intentional.push(s.label);
      findings.push({ rule: 'user-snapshot', severity: 'ok', text: `${what} ${s.count === 1 ? 'is' : 'are'} marked as an intentional snapshot (${code(s.label)}): sent as they were on purpose.`, fields: [] });
    } else if (s.kind === 'command' && s === ctx.emailSnap) {
      findings.push({ rule: 'command-values', severity: 'ok', text: `${what} ${s.count === 1 ? 'is the recipient' : 'are the recipients'} the email command addresses on purpose, not stale state.`, fields: [] });
    } else if (s.kind === 'command') {
      findings.push({ rule: 'command-values', severity: 'ok', text: `${what} ${s.count === 1 ? 'is a value' : 'are values'} ${s.why.startsWith('a value the command') ? `the command ${code(s.label)} sets` : 'sent'} on purpose, not stale state.`, fields: [] });
    } else {
      const by = s.kind === 'envelope' ? `the ${s.label}` : `marked by ${code(s.label)}`;
      findings.push({ rule: 'event-snapshot', severity: 'ok', text: `${what} ${s.count === 1 ? 'is' : 'are'} a point-in-time snapshot (${by}): fine as a record of what happened; read current state before acting on ${s.count === 1 ? 'it' : 'them'}.`, fields: [] });
    }
  }
  // Nothing flagged, nothing to review and no snapshot noted (the findings above are all one of those).
  if (findings.length === 0 && !sentences) findings.push({ rule: 'no-mutable-state', severity: 'ok', text: '', fields: [] });
  else if (findings.length === 0) {
    const cited: string[] = [];
    for (const x of ctx.ids) if (cited.length < 3) cited.push(code(x));
    for (const x of ctx.fixed) if (cited.length < 3) cited.push(code(x));
    findings.push({ rule: 'no-mutable-state', severity: 'ok', text: cited.length > 0 ? `only identifiers and fixed values (${cited.join(', ')}): nothing in the payload can go stale before a retry.` : 'no entity state found in the payload: nothing can go stale before a retry.', fields: [] });
  }
  if (findings.length > 1) sortSmall(findings, byFindingRank);
  const verdict: PayloadVerdictKind = findings[0]?.severity ?? 'ok';
  const label = verdict === 'ok' && intentional.length > 0 ? `ok (intentional snapshot: ${intentional.slice(0, 3).join(', ')})` : verdict;
  return {
    payload: {
      verdict,
      label,
      reasons: sentences ? reasonTexts(findings) : [],
      findings,
      fields: ctx.fields,
      fieldsTruncated: ctx.truncated,
      envelope: ctx.envelope?.name ?? null,
      argumentsPath: ctx.envelope?.argsPath ?? 'body',
      format: 'json',
      intentionalSnapshot: intentional,
    },
    businessHash,
    operation: op?.value ?? null,
    operationSource: op?.source ?? null,
  };
}
