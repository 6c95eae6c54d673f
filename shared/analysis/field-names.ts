import { hashString } from './hash';

/**
 * What a JSON member name says about its value (rule F1–F14 in README.md). Names are compared
 * normalised: lower case, without `_`, `-`, spaces and dots, so `shipping_address`,
 * `shippingAddress` and `Shipping-Address` are one name. Pure; results are cached per name
 * (bounded), since real traffic repeats the same few hundred names.
 */

/**
 * Role of a member name, in the order the rules test them:
 * - `marker`: an event-time / snapshot-time sibling (`asOf`, `capturedAt`, `snapshotAt`, `occurredAt`, `eventTime`…):
 *   the object holding it is a point-in-time record;
 * - `snapshot`: a snapshot container (`snapshot`, `orderSnapshot`, `before`, `after`, `previous`, `previous_attributes`, `old`);
 * - `new-value`: a value a command sets on purpose (`newAddress`, `new_email`, `desiredState`, `targetStatus`, `changes`, `patch`);
 * - `id`: an identifier (`id`, `_id`, `uuid`, `…Id`, `…_id`, `…Ids`);
 * - `updated`: a modification stamp (`updatedAt`, `modified_at`, `lastModified`, `etag`, `revision`);
 * - `time`: an event fact time (`createdAt`, `sentAt`, `requestedAt`, `timestamp`…);
 * - `contact`: contact details (`email`, `phone`, `mobile`, `fax`);
 * - `address`: addresses and their parts (`shippingAddress`, `line1`, `city`, `postalCode`, `zip`);
 * - `state`: status / state / stage / phase, and state booleans (`active`, `archived`, `isBlocked`…);
 * - `items`: line items (`items`, `lineItems`, `cart`, `products`, `orderLines`);
 * - `quantity`: quantities and stock (`quantity`, `qty`, `stock`, `inventory`, `available`, `reserved`);
 * - `balance`: balances, points, credit (always current state);
 * - `name`: names, titles, descriptions;
 * - `amount`: money amounts (`amount`, `amountCents`, `total`, `price`, `fee`, `tax`, `discount`, `cost`);
 * - `currency`;
 * - `op`: the operation / event name (`type`, `event`, `eventType`, `operation`, `op`, `action`, `command`, `kind`, `task`);
 * - `ref`: other references (`sku`, `ref`, `reference`, `…Number`, `arn`, `urn`, `slug`, `…Key`);
 * - `version`: `version`, `rev` (state inside an entity, a schema version elsewhere);
 * - `per-send`: transport metadata that differs per send (`messageId`, `requestId`, `traceId`, `sentAt`,
 *   retry counters such as `attempt` / `retryCount` / `deliveryCount`, a `nonce`, `requestUuid`…), left out of the
 *   business hash and never evidence that an idempotency key is business-derived;
 * - `other`.
 */
export type NameRole =
  | 'marker'
  | 'snapshot'
  | 'new-value'
  | 'id'
  | 'updated'
  | 'time'
  | 'contact'
  | 'address'
  | 'state'
  | 'items'
  | 'quantity'
  | 'balance'
  | 'name'
  | 'amount'
  | 'currency'
  | 'op'
  | 'ref'
  | 'version'
  | 'other';

export interface NameInfo {
  role: NameRole;
  /** Normalised name. */
  norm: string;
  /** For `…Id` / `…_id` names: the entity it names, normalised (`orderId` → `order`). */
  entity: string | null;
  /** Transport metadata that differs per send (ids of the send, retry counters, nonces); excluded from the business hash and from a key's business evidence. */
  perSend: boolean;
  /** The name can be written in a dotted path as is (`[A-Za-z_$][\w$-]*`). */
  simple: boolean;
  /** {@link norm} in the singular (`orders` → `order`, `entries` → `entry`). */
  singular: string;
  /** Hash lanes of the name (for the business hash; names repeat, so they are hashed once). */
  ha: number;
  hb: number;
  /**
   * Memo of the payload walk: the field annotation text of an `id`/`ref` member with this name
   * ({@link leafWhyOf}), made on first use; null until then.
   */
  leafWhy: string | null;
  leafWhyOf: string | null;
  /** The member holds a message's or send's own key ({@link KEY_HOLDER_NAMES}): never evidence for a key verdict. */
  keyHolder: boolean;
  /**
   * Role classes, precomputed per name so the walk reads a field instead of looking the role up
   * in a set for every member: {@link ENTITY_STATE_ROLES}, {@link MUTABLE_ROLES} and
   * {@link LOOSE_STATE_ROLES} hold {@link role}.
   */
  entityState: boolean;
  mutableRole: boolean;
  looseState: boolean;
  /** What {@link norm} is in an email-send command: a content member ({@link EMAIL_CONTENT_NAMES}), a recipient member ({@link RECIPIENT_NAMES}) or neither. */
  email: 'content' | 'recipient' | null;
}

const MARKERS = new Set(['asof', 'asofdate', 'asoftime', 'capturedat', 'capturedon', 'snapshotat', 'snapshottakenat', 'snapshottime', 'snapshotdate', 'occurredat', 'occurredon', 'occurrencetime', 'eventtime', 'eventtimestamp', 'eventdate', 'recordedat', 'effectiveat', 'pointintime']);
const SNAPSHOT_EXACT = new Set(['before', 'after', 'previous', 'previousattributes', 'previousvalues', 'old', 'oldvalues', 'original', 'prior']);
const NEW_VALUE_EXACT = new Set(['changes', 'patch', 'updates', 'newvalues', 'desired', 'target', 'replacement']);
const ID_EXACT = new Set(['id', 'uuid', 'guid', 'oid', 'pk']);
const UPDATED = new Set(['updatedat', 'updatedon', 'updated', 'modifiedat', 'modifiedon', 'modified', 'lastmodified', 'lastmodifiedat', 'lastupdated', 'lastupdatedat', 'etag', 'revision', 'lockversion', 'changedat', 'lastchangedat']);
const TIME_EXACT = new Set(['timestamp', 'ts', 'time', 'created', 'date', 'datetime', 'createdon', 'senttime', 'sentdate', 'eventts', 'tsms']);
const ADDRESS_EXACT = new Set(['line1', 'line2', 'line3', 'street', 'street1', 'street2', 'streetaddress', 'city', 'town', 'postalcode', 'postcode', 'zip', 'zipcode', 'province', 'county', 'district', 'country', 'countrycode', 'building', 'apartment', 'suite']);
const STATE_EXACT = new Set(['status', 'state', 'stage', 'phase', 'lifecycle', 'lifecyclestate', 'active', 'enabled', 'disabled', 'archived', 'deleted', 'blocked', 'suspended', 'verified', 'locked', 'paused', 'cancelled', 'canceled', 'closed', 'open', 'paid', 'shipped', 'fulfilled', 'assignee', 'owner', 'priority']);
const ITEMS_EXACT = new Set(['items', 'lineitems', 'cartitems', 'cart', 'products', 'orderlines', 'lines', 'positions', 'basket', 'entries']);
const QUANTITY_EXACT = new Set(['quantity', 'qty', 'stock', 'inventory', 'stocklevel', 'onhand', 'available', 'reserved', 'backordered', 'count', 'units']);
const BALANCE_EXACT = new Set(['balance', 'points', 'credit', 'credits', 'availablebalance', 'creditlimit', 'score', 'rating']);
const NAME_EXACT = new Set(['name', 'firstname', 'lastname', 'fullname', 'displayname', 'givenname', 'familyname', 'surname', 'nickname', 'companyname', 'title', 'description', 'username', 'label', 'notes', 'note', 'tags', 'avatar', 'avatarurl', 'bio']);
const CURRENCY_EXACT = new Set(['currency', 'currencycode', 'curr']);
const OP_EXACT = new Set(['type', 'event', 'eventtype', 'eventname', 'operation', 'op', 'action', 'command', 'cmd', 'commandtype', 'commandname', 'kind', 'task', 'jobname', 'jobclass', 'detailtype', 'topic', 'intent', 'verb']);
const REF_EXACT = new Set(['sku', 'upc', 'ean', 'gtin', 'isbn', 'ref', 'reference', 'arn', 'urn', 'slug', 'key', 'jid', 'jti', 'code', 'handle', 'topicarn', 'subscriptionarn']);
const VERSION_EXACT = new Set(['version', 'rev', 'v', 'seq', 'sequence']);
const PER_SEND = new Set(['messageid', 'requestid', 'traceid', 'spanid', 'traceparent', 'tracestate', 'correlationid', 'causationid', 'sentat', 'publishedat', 'enqueuedat', 'senttime', 'deliveryattempt', 'attempt', 'attempts', 'attemptcount', 'attemptnumber', 'attemptno', 'retrycount', 'retries', 'retrynumber', 'retryattempt', 'tries', 'trycount', 'receivecount', 'approximatereceivecount', 'deliverycount', 'redeliverycount', 'nonce', 'cnonce', 'requestuuid', 'requestguid', 'messageuuid', 'signature', 'signatureversion', 'signingcerturl', 'unsubscribeurl', 'jid']);

/**
 * Body members that hold a message's or a send's own key rather than a business value
 * (normalised names: `idempotencyKey`, `idempotency_key`, `dedupKey`, `requestId`, `messageId`,
 * `eventId`, `correlationId`…). A copy of the key in one of them is the key itself, not evidence
 * that it was built from business data: a random UUID copied into `body.idempotencyKey` stays
 * opaque random. Business identifiers (`orderId`, `paymentId`…) are not in this set.
 */
export const KEY_HOLDER_NAMES: ReadonlySet<string> = new Set([
  'idempotencykey',
  'idempotencytoken',
  'idempotencyid',
  'dedupkey',
  'dedupid',
  'deduplicationkey',
  'deduplicationid',
  'messagededuplicationid',
  'requestid',
  'messageid',
  'msgid',
  'eventid',
  'deliveryid',
  'correlationid',
  'causationid',
  'traceid',
  'spanid',
  'jobid',
  'jid',
]);

const cache = new Map<string, NameInfo>();
const CACHE_MAX = 20_000;

/** Normalises a member name: lower case without `_ - . space`. */
export function normalizeName(name: string): string {
  // Fast path: plain lowercase ASCII names need no work.
  let plain = true;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (!(c >= 97 && c <= 122) && !(c >= 48 && c <= 57)) {
      plain = false;
      break;
    }
  }
  return plain ? name : name.toLowerCase().replace(/[_\-. ]+/g, '');
}

/** The {@link NameInfo} of a member name (cached). */
export function nameInfo(name: string): NameInfo {
  const hit = cache.get(name);
  if (hit !== undefined) return hit;
  const info = compute(name);
  if (name.length <= 64) {
    if (cache.size >= CACHE_MAX) cache.clear();
    cache.set(name, info);
  }
  return info;
}

function compute(name: string): NameInfo {
  const norm = normalizeName(name);
  const perSend = PER_SEND.has(norm);
  const keyHolder = KEY_HOLDER_NAMES.has(norm);
  const simple = /^[A-Za-z_$][\w$-]*$/.test(name);
  const h = hashString(name, 3, { a: 0, b: 0 });
  const singular = norm.endsWith('ies') ? `${norm.slice(0, -3)}y` : norm.endsWith('s') && !norm.endsWith('ss') ? norm.slice(0, -1) : norm;
  const email = EMAIL_CONTENT_NAMES.has(norm) ? 'content' : RECIPIENT_NAMES.has(norm) ? 'recipient' : null;
  const r = (role: NameRole, entity: string | null = null): NameInfo => ({
    role,
    norm,
    entity,
    perSend,
    simple,
    singular,
    ha: h.a,
    hb: h.b,
    leafWhy: null,
    leafWhyOf: null,
    keyHolder,
    entityState: ENTITY_STATE_ROLES.has(role),
    mutableRole: MUTABLE_ROLES.has(role),
    looseState: LOOSE_STATE_ROLES.has(role),
    email,
  });
  if (MARKERS.has(norm)) return r('marker');
  if (SNAPSHOT_EXACT.has(norm) || norm.startsWith('snapshot') || (norm.endsWith('snapshot') && norm.length > 8)) return r('snapshot');
  if (NEW_VALUE_EXACT.has(norm) || /^(?:new|desired|target|proposed)[A-Z_-]/.test(name) || /^(?:new|desired|target|proposed)_/.test(name)) {
    // `newId`/`targetId` are still identifiers; `requestedAt`/`updatedAt` are times (checked below).
    if (!/(?:Id|ID|Ids|IDs|_id|_ids|At|_at)$/.test(name)) return r('new-value');
  }
  if (ID_EXACT.has(norm) || name === '_id') return r('id');
  const idSuffix = /^(.*?[a-z0-9])(?:Id|ID|Ids|IDs|Uuid|UUID)$/.exec(name) ?? /^(.+?)[_-](?:id|ids|uuid)$/i.exec(name);
  if (idSuffix) return r('id', normalizeName(idSuffix[1] ?? ''));
  if (UPDATED.has(norm)) return r('updated');
  if (TIME_EXACT.has(norm) || /[a-z0-9](?:At|On)$/.test(name) || /[_-](?:at|on|time|ts)$/i.test(name) || /(?:Time|Timestamp|Date)$/.test(name)) return r('time');
  if (norm.includes('email') || norm.includes('phone') || norm === 'mobile' || norm === 'fax' || norm === 'contact' || norm === 'contacts') return r('contact');
  if (norm.endsWith('address') || norm.endsWith('addresses') || ADDRESS_EXACT.has(norm)) return r('address');
  if (STATE_EXACT.has(norm) || norm.endsWith('status') || norm.endsWith('state') || norm.endsWith('stage') || /^is[A-Z]/.test(name) || /^is_/.test(name)) return r('state');
  if (ITEMS_EXACT.has(norm) || norm.endsWith('lineitems') || norm.endsWith('items')) return r('items');
  if (QUANTITY_EXACT.has(norm) || norm.startsWith('quantity') || norm.endsWith('quantity') || norm.endsWith('qty') || norm.endsWith('stock')) return r('quantity');
  if (BALANCE_EXACT.has(norm) || norm.endsWith('balance')) return r('balance');
  if (NAME_EXACT.has(norm) || (norm.endsWith('name') && !norm.endsWith('jobname') && !norm.endsWith('eventname') && !norm.endsWith('queuename'))) return r('name');
  if (norm.includes('amount') || norm.startsWith('total') || norm.startsWith('subtotal') || norm.includes('price') || norm.endsWith('cost') || norm.endsWith('fee') || norm.endsWith('fees') || norm.startsWith('tax') || norm.startsWith('discount') || norm.endsWith('cents')) return r('amount');
  if (CURRENCY_EXACT.has(norm)) return r('currency');
  if (OP_EXACT.has(norm)) return r('op');
  if (REF_EXACT.has(norm) || norm.endsWith('ref') || norm.endsWith('reference') || norm.endsWith('number') || norm.endsWith('arn') || norm.endsWith('urn') || norm.endsWith('key') || norm.endsWith('sku') || norm.endsWith('code')) return r('ref');
  if (VERSION_EXACT.has(norm)) return r('version');
  return r('other');
}

/** Roles that, inside an object with an id, make it an entity whose state can change (rule P4). Names alone do not: `{ id, name }` is a labelled reference. */
export const ENTITY_STATE_ROLES: ReadonlySet<NameRole> = new Set<NameRole>(['state', 'address', 'contact', 'items', 'quantity', 'updated', 'balance']);
/** Roles classified `mutable-state` inside an entity. */
export const MUTABLE_ROLES: ReadonlySet<NameRole> = new Set<NameRole>(['state', 'address', 'contact', 'items', 'quantity', 'updated', 'balance', 'name', 'amount', 'currency', 'version']);
/** Roles that, outside any entity and not fixed on purpose, still carry state that can go stale (rule P-loose). */
export const LOOSE_STATE_ROLES: ReadonlySet<NameRole> = new Set<NameRole>(['state', 'address', 'contact', 'items', 'balance']);
/** Citation priority in reasons: most telling first. */
export const ROLE_PRIORITY: Readonly<Partial<Record<NameRole, number>>> = { state: 0, address: 1, items: 2, contact: 3, quantity: 4, balance: 5, updated: 6, name: 7, amount: 8, version: 9, currency: 10 };

/** Normalised member names of an email command's addressing (rule P3, email commands). */
export const RECIPIENT_NAMES: ReadonlySet<string> = new Set(['to', 'cc', 'bcc', 'recipient', 'recipients', 'toemail', 'toaddress', 'toaddresses', 'destination', 'replyto', 'from', 'fromaddress', 'fromemail']);
/** Normalised member names of an email command's content (rule P3, email commands). */
export const EMAIL_CONTENT_NAMES: ReadonlySet<string> = new Set(['subject', 'template', 'templateid', 'templatename', 'templatealias']);

/** Words of an operation name (`UpdateAddress`, `customer.update-address`, `set_status` → lower-case words). */
export function operationWords(op: string): string[] {
  const hit = opCache.get(op);
  if (hit !== undefined) return hit;
  const words = splitWords(op);
  if (op.length <= 128) {
    if (opCache.size >= 5000) opCache.clear();
    opCache.set(op, words);
  }
  return words;
}
const opCache = new Map<string, string[]>();

function splitWords(op: string): string[] {
  return op
    .slice(0, 128)
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);
}

/** Verbs of commands that carry new values on purpose (rule P-command). Past tense (`updated`) does not count. */
export const SET_VERBS: ReadonlySet<string> = new Set(['update', 'set', 'change', 'replace', 'rename', 'correct', 'patch', 'upsert', 'assign', 'edit', 'modify', 'move', 'reassign', 'overwrite']);
