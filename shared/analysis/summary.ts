import type { QueueMessage } from '../domain';
import { analyzeForSummary, analyzeMessage } from './analyze';
import { fmix, hashString, taggedHash, untagHash, type Hash2 } from './hash';
import type {
  AnalyzeOptions,
  CompareSide,
  DuplicateComparison,
  DuplicateGroup,
  KeyCollision,
  KeyVerdictKind,
  MessageAnalysis,
  PayloadRuleId,
  PayloadVerdictKind,
  QueueSummaryAccumulator,
  ReasonCount,
  RedeliverySummary,
  SamePayloadGroup,
  SharedGroup,
  SummaryOptions,
} from './types';

/**
 * Per-queue "redelivery safety" summaries and duplicate comparisons (rules D1–D4 in README.md).
 * Pure and streaming: messages are added one at a time and only bounded per-key state is kept.
 */

/** Default number of distinct keys (and of payload hashes) tracked for grouping. */
export const DEFAULT_MAX_TRACKED = 100_000;
const DEFAULT_MAX_GROUPS = 50;
const DEFAULT_EXAMPLES = 5;
/** Distinct keys remembered per payload hash. */
const KEYS_PER_PAYLOAD = 32;

/** Operations tracked per key (more are not counted). */
const MAX_OPERATIONS = 16;
/** Spellings remembered per operation of a key (a new name must match each to join it). */
const MAX_SPELLINGS = 8;

// Per-key and per-payload state is kept in parallel columns indexed through one table each (no
// object per key): with 100k distinct keys, per-key objects and example arrays were the main
// garbage-collector cost of a summary. Example lists start as the first id alone; further examples
// (duplicates, which are rare) live in sparse maps. A key gets a KeyOps only when a second,
// different spelling of an operation appears under it.

/**
 * One operation seen under a key: the spellings that name it (`order.charge`, `charge`,
 * `Charge`…; the first one is shown), how many messages carried it and example ids.
 */
interface OpGroup {
  operation: string;
  spellings: string[];
  count: number;
  examples: string[];
}

/** The operations of one key, and which group each spelling seen so far went to. */
interface KeyOps {
  groups: OpGroup[];
  bySpelling: Map<string, OpGroup>;
}

/** Entries per chunk of a {@link Column}. */
const CHUNK_BITS = 12;
const CHUNK = 1 << CHUNK_BITS;

/**
 * An append-only list stored in fixed chunks of {@link CHUNK} entries, for the summary's
 * per-key and per-payload columns. Growing it never copies: a plain array of 100k entries grows
 * by copying its backing store a dozen times, and every copy is a young object the garbage
 * collector first promotes to the old generation and later has to collect there (bench: ~100
 * bytes promoted per message for each side, keys and payloads, of the summary).
 */
class Column<T> {
  private readonly chunks: T[][] = [];
  private n = 0;

  get length(): number {
    return this.n;
  }

  /** Appends `x`; returns its index. */
  push(x: T): number {
    const i = this.n++;
    const c = i >>> CHUNK_BITS;
    let chunk = this.chunks[c];
    if (chunk === undefined) {
      chunk = new Array<T>(CHUNK);
      this.chunks.push(chunk);
    }
    chunk[i & (CHUNK - 1)] = x;
    return i;
  }

  /** The entry at `i` (0 ≤ i < length). */
  get(i: number): T {
    return (this.chunks[i >>> CHUNK_BITS] as T[])[i & (CHUNK - 1)] as T;
  }

  /** Replaces the entry at `i` (0 ≤ i < length). */
  set(i: number, x: T): void {
    (this.chunks[i >>> CHUNK_BITS] as T[])[i & (CHUNK - 1)] = x;
  }
}

/**
 * String → index table (insertion order = index order) for the summary's keys and payload hashes:
 * open addressing over one Int32Array of `[hash, index + 1]` pairs, linear probing. A lookup of a
 * new string (the common case: most keys are distinct) touches one slot, where a `Map` with 100k
 * entries took several cache misses per lookup (bucket, entry, the other key's header) — the
 * largest cost of `add()` itself. Strings are compared only when their 32-bit hashes are equal.
 */
class StringIndex {
  /** The strings, by index. */
  readonly strings = new Column<string>();
  private slots = new Int32Array(2 * 1024);
  private mask = 1024 - 1;
  /** Slot where the last {@link find} stopped (where {@link add} puts the string it did not find). */
  private probe = 0;
  private readonly h: Hash2 = { a: 0, b: 0 };

  get size(): number {
    return this.strings.length;
  }

  /** The index of `s`, or -1. Remembers where to {@link add} it. */
  find(s: string): number {
    const hash = hashString(s, 7, this.h).a | 0;
    const slots = this.slots;
    let i = hash & this.mask;
    for (;;) {
      const at = slots[2 * i + 1] as number;
      if (at === 0) break;
      if (slots[2 * i] === hash && this.strings.get(at - 1) === s) return at - 1;
      i = (i + 1) & this.mask;
    }
    slots[2 * i] = hash;
    this.probe = i;
    return -1;
  }

  /** Adds `s`, which the directly preceding {@link find} did not find; returns its index. */
  add(s: string): number {
    const index = this.strings.push(s);
    // find() already stored the hash in the slot it stopped at.
    this.slots[2 * this.probe + 1] = index + 1;
    if (2 * this.strings.length > this.mask + 1) this.grow();
    return index;
  }

  private grow(): void {
    this.mask = 2 * (this.mask + 1) - 1;
    this.slots = rehash(this.slots, this.mask);
  }
}

/**
 * One shared copy per distinct operation name (a queue has a handful: `charge`, `refund`…). The
 * summary keeps each key's first operation; keeping the name each message parsed instead made 100k
 * young strings survive into the old generation, and every surviving string is copied by the
 * garbage collector (bench: retaining keys, payload hashes and operations per message cost about a
 * third of the summary's time).
 */
class Interner {
  private readonly map = new Map<string, string>();

  intern(s: string): string {
    const hit = this.map.get(s);
    if (hit !== undefined) return hit;
    if (this.map.size < 1000 && s.length <= 200) this.map.set(s, s);
    return s;
  }
}

/**
 * Payload hash → index table. Hashes made by {@link taggedHash} (all of this module's) are kept as
 * three numbers (tag, lanes) in typed arrays and written back as text only for the groups a
 * summary reports: a retained string per payload cost the garbage collector more than the rest of
 * `add()` (every surviving young object is copied, then promoted). Any other text is kept as is.
 */
class HashIndex {
  private tags: Int32Array = new Int32Array(1024);
  private as: Int32Array = new Int32Array(1024);
  private bs: Int32Array = new Int32Array(1024);
  /** Hashes not in {@link taggedHash} form, by index (tag -1). */
  private readonly other = new Map<number, string>();
  private readonly otherIndex = new Map<string, number>();
  private slots = new Int32Array(2 * 1024);
  private mask = 1024 - 1;
  private probe = 0;
  private count = 0;
  private readonly t = { tag: 0, a: 0, b: 0 };
  private tagged = false;

  get size(): number {
    return this.count;
  }

  /** The index of hash `s`, or -1. Remembers where to {@link add} it. */
  find(s: string): number {
    const t = this.t;
    this.tagged = untagHash(s, t);
    if (!this.tagged) return this.otherIndex.get(s) ?? -1;
    const hash = fmix(t.a ^ Math.imul(t.b, 0x9e3779b1) ^ Math.imul(t.tag, 0x85ebca6b)) | 0;
    const slots = this.slots;
    let i = hash & this.mask;
    for (;;) {
      const at = slots[2 * i + 1] as number;
      if (at === 0) break;
      const j = at - 1;
      if (slots[2 * i] === hash && this.as[j] === t.a && this.bs[j] === t.b && this.tags[j] === t.tag) return j;
      i = (i + 1) & this.mask;
    }
    slots[2 * i] = hash;
    this.probe = i;
    return -1;
  }

  /** Adds hash `s`, which the directly preceding {@link find} did not find; returns its index. */
  add(s: string): number {
    const index = this.count++;
    if (index >= this.tags.length) this.growLanes();
    if (!this.tagged) {
      this.tags[index] = -1;
      this.other.set(index, s);
      this.otherIndex.set(s, index);
      return index;
    }
    this.tags[index] = this.t.tag;
    this.as[index] = this.t.a;
    this.bs[index] = this.t.b;
    this.slots[2 * this.probe + 1] = index + 1;
    if (2 * this.count > this.mask + 1) this.grow();
    return index;
  }

  /** The hash text of index `i`. */
  text(i: number): string {
    const tag = this.tags[i] as number;
    return tag < 0 ? (this.other.get(i) ?? '') : taggedHash(String.fromCharCode(tag), this.as[i] as number, this.bs[i] as number);
  }

  private growLanes(): void {
    const n = 2 * this.tags.length;
    const grow = (x: Int32Array): Int32Array => {
      const y = new Int32Array(n);
      y.set(x);
      return y;
    };
    this.tags = grow(this.tags);
    this.as = grow(this.as);
    this.bs = grow(this.bs);
  }

  private grow(): void {
    this.mask = 2 * (this.mask + 1) - 1;
    this.slots = rehash(this.slots, this.mask);
  }
}

/** Word sets of operation names (a queue has a handful of names; bounded anyway). */
const wordSets = new Map<string, ReadonlySet<string>>();

/** Lower-case words of an operation name: split on anything but letters and digits, and on camelCase (`OrderCharge`, `HTTPRetry`). */
function operationWordSet(op: string): ReadonlySet<string> {
  const hit = wordSets.get(op);
  if (hit !== undefined) return hit;
  const words = op
    .slice(0, 200)
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0);
  const set: ReadonlySet<string> = new Set(words);
  if (op.length <= 200) {
    if (wordSets.size >= 1000) wordSets.clear();
    wordSets.set(op, set);
  }
  return set;
}

/**
 * Whether two operation names name the same operation, as the key-collision rule (D2) decides it:
 * equal ignoring case, or the words of one (split on `.`, `:`, `/`, `_`, `-`, spaces and camelCase)
 * are all among the other's — `order.charge` and `charge`, `OrderCharge` and `order_charge` are one
 * operation; `order.charge` and `order.refund` are two. Not transitive: `charge` matches both
 * `order.charge` and `refund.charge`, which do not match each other. Names without any letter or
 * digit match only themselves (ignoring case).
 */
export function sameOperation(a: string, b: string): boolean {
  if (a === b || a.toLowerCase() === b.toLowerCase()) return true;
  const x = operationWordSet(a);
  const y = operationWordSet(b);
  const small = x.size <= y.size ? x : y;
  const large = small === x ? y : x;
  if (small.size === 0) return false;
  for (const w of small) if (!large.has(w)) return false;
  return true;
}

/**
 * Counts one message with operation `op` under a key that has seen more than one spelling: into
 * the first group whose every spelling is {@link sameOperation} as `op`, else a new group (at most
 * {@link MAX_OPERATIONS}; beyond, the message is not counted for collisions).
 */
function addOperation(ops: KeyOps, op: string, id: string, examples: number, names: Interner): void {
  let g = ops.bySpelling.get(op);
  if (g === undefined) {
    const name = names.intern(op);
    g = ops.groups.find((x) => x.spellings.every((s) => sameOperation(s, op)));
    if (g === undefined) {
      if (ops.groups.length < MAX_OPERATIONS) ops.groups.push((g = { operation: name, spellings: [name], count: 0, examples: [] }));
    } else if (g.spellings.length < MAX_SPELLINGS && !g.spellings.includes(name)) g.spellings.push(name);
    if (g !== undefined && ops.bySpelling.size < 4 * MAX_OPERATIONS) ops.bySpelling.set(name, g);
  }
  if (g === undefined) return;
  g.count++;
  if (g.examples.length < examples) g.examples.push(id);
}

function isAnalysis(x: QueueMessage | MessageAnalysis): x is MessageAnalysis {
  return typeof (x as MessageAnalysis).keyVerdict === 'object' && typeof (x as MessageAnalysis).payload === 'object';
}

const code = (s: string): string => `\`${s.length > 80 ? `${s.slice(0, 79)}…` : s}\``;
const plural = (n: number, one: string, many = `${one}s`): string => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;
/** The verb for a subject of `n` things: `n === 1 ? one : many` (`carries` / `carry`). */
const verb = (n: number, one: string, many: string): string => (n === 1 ? one : many);

/**
 * A streaming accumulator for one queue's {@link RedeliverySummary}: `add()` each message (or an
 * analysis made earlier), `result()` at any time. Memory is bounded by `maxTracked` distinct keys
 * and payload hashes (plus `examplesPerGroup` ids each); beyond it, messages are still counted but
 * new keys are not grouped, and `bounds.capped` / `bounds.note` say so.
 *
 * `add()` returns the analysis it used: an analysis passed in, as it is; for a raw message, what
 * {@link analyzeMessage} gives, or with `sentences: false` the same without the sentences the
 * summary does not read (see {@link SummaryOptions.sentences} for exactly what is left out) —
 * the summary is the same either way.
 *
 * @param options analysis options for raw messages (default `detail: 'verdict'`, which skips field
 *   annotations), `sentences`, and the bounds.
 */
export function createQueueSummary(options: SummaryOptions = {}): QueueSummaryAccumulator {
  return makeSummary(options, options.sentences === false);
}

/**
 * {@link createQueueSummary}; with `lean`, raw messages are analysed by {@link analyzeForSummary}
 * (no sentences the summary drops), for callers that discard what `add()` returns or asked for
 * `sentences: false`.
 */
function makeSummary(options: SummaryOptions, lean: boolean): QueueSummaryAccumulator {
  const maxTracked = clampInt(options.maxTracked, DEFAULT_MAX_TRACKED, 1, 10_000_000);
  const maxGroups = clampInt(options.maxGroups, DEFAULT_MAX_GROUPS, 1, 10_000);
  const examples = clampInt(options.examplesPerGroup, DEFAULT_EXAMPLES, 1, 100);
  const analyzeOptions: AnalyzeOptions = { ...options, detail: options.detail ?? 'verdict' };
  const keyVerdicts: Record<KeyVerdictKind, number> = { 'business-derived': 0, 'opaque-random': 0, 'time-derived': 0, 'period-key': 0, missing: 0 };
  const verdicts: Record<PayloadVerdictKind, number> = { ok: 0, review: 0, flag: 0 };
  const reasons = new Map<PayloadRuleId, ReasonCount>();
  // Keys: index in the columns below, insertion order = first seen.
  const keys = new StringIndex();
  const kCount = new Column<number>();
  const kFirst = new Column<string>();
  /** Example ids after the first, for keys seen more than once. */
  const kMore = new Map<number, string[]>();
  /** First operation seen; `kOps` gets an entry when a second, different spelling appears. */
  const kOp = new Column<string | null>();
  const kOps = new Map<number, KeyOps>();
  const opNames = new Interner();
  // Payload hashes: count, example ids, distinct keys (at most KEYS_PER_PAYLOAD). Messages without
  // a key are grouped too: `''` (never a key) stands for "no key" in pFirstKey, and later ones are
  // counted in pNoKeyMore (sparse: only payloads seen twice).
  const payloads = new HashIndex();
  const pCount = new Column<number>();
  const pFirstId = new Column<string>();
  const pMoreIds = new Map<number, string[]>();
  const pFirstKey = new Column<string>();
  const pMoreKeys = new Map<number, string[]>();
  const pNoKeyMore = new Map<number, number>();
  const withMore = (first: string, more: string[] | undefined): string[] => (more === undefined ? [first] : [first, ...more]);
  const keyExamples = (i: number): string[] => withMore(kFirst.get(i), kMore.get(i));
  const payloadExamples = (i: number): string[] => withMore(pFirstId.get(i), pMoreIds.get(i));
  const payloadKeys = (i: number): string[] => withMore(pFirstKey.get(i), pMoreKeys.get(i));
  let total = 0;
  let large = 0;
  let cappedKeys = 0;
  let cappedPayloads = 0;

  const addReason = (rule: PayloadRuleId, severity: PayloadVerdictKind, text: string, id: string): void => {
    const r = reasons.get(rule);
    if (r === undefined) reasons.set(rule, { rule, severity, count: 1, example: text, exampleIds: [id] });
    else {
      r.count++;
      if (r.exampleIds.length < examples) r.exampleIds.push(id);
    }
  };

  return {
    add(item) {
      // `add()` returns the analysis (the app and CLI show it): full sentences unless the caller discards it.
      const a = isAnalysis(item) ? item : lean ? analyzeForSummary(item, analyzeOptions) : analyzeMessage(item, analyzeOptions);
      total++;
      keyVerdicts[a.keyVerdict.verdict]++;
      verdicts[a.verdict]++;
      const id = a.messageId;
      for (const f of a.payload.findings) if (f.severity !== 'ok') addReason(f.rule, f.severity, f.text, id);
      if (a.size.verdict !== 'ok') {
        large++;
        addReason(a.size.verdict === 'over-limit' ? 'over-limit' : 'large-payload', a.size.verdict === 'over-limit' ? 'flag' : 'review', a.size.reason ?? 'large payload', id);
      }
      const key = a.key?.key;
      const hasKey = key !== undefined && key.length > 0;
      if (hasKey) {
        const found = keys.find(key);
        let e: number | undefined = found >= 0 ? found : undefined;
        if (e === undefined) {
          if (keys.size >= maxTracked) cappedKeys++;
          else {
            e = keys.add(key);
            kCount.push(1);
            kFirst.push(id);
            kOp.push(a.operation === null ? null : opNames.intern(a.operation));
          }
        } else {
          const n = kCount.get(e) + 1;
          kCount.set(e, n);
          if (n <= examples) {
            const more = kMore.get(e);
            if (more === undefined) kMore.set(e, [id]);
            else more.push(id);
          }
        }
        const op = a.operation;
        if (e !== undefined && op !== null) {
          let first = kOp.get(e);
          if (first === null) kOp.set(e, (first = opNames.intern(op)));
          let ops = kOps.get(e);
          // The hot path: the key's first spelling again (or a first message). A different spelling
          // (rare: the key repeats) starts grouping this key's operations by sameOperation.
          if (ops === undefined && op !== first) {
            const before = kCount.get(e) - 1;
            const g: OpGroup = { operation: first, spellings: [first], count: before, examples: keyExamples(e).slice(0, Math.min(examples, before)) };
            ops = { groups: [g], bySpelling: new Map([[first, g]]) };
            kOps.set(e, ops);
          }
          if (ops !== undefined) addOperation(ops, op, id, examples, opNames);
        }
      }
      const h = a.businessHash;
      if (h !== null) {
        const k = hasKey ? key : '';
        const found = payloads.find(h);
        const p: number | undefined = found >= 0 ? found : undefined;
        if (p === undefined) {
          if (payloads.size >= maxTracked) cappedPayloads++;
          else {
            payloads.add(h);
            pCount.push(1);
            pFirstId.push(id);
            pFirstKey.push(k);
          }
        } else {
          const n = pCount.get(p) + 1;
          pCount.set(p, n);
          if (n <= examples) {
            const more = pMoreIds.get(p);
            if (more === undefined) pMoreIds.set(p, [id]);
            else more.push(id);
          }
          const firstKey = pFirstKey.get(p);
          if (k === '') pNoKeyMore.set(p, (pNoKeyMore.get(p) ?? 0) + 1);
          else if (firstKey !== k) {
            const mk = pMoreKeys.get(p);
            if (mk === undefined) pMoreKeys.set(p, [k]);
            else if (mk.length + (firstKey === '' ? 0 : 1) < KEYS_PER_PAYLOAD && !mk.includes(k)) mk.push(k);
          }
        }
      }
      return a;
    },

    result(): RedeliverySummary {
      const dup: DuplicateGroup[] = [];
      const collisions: KeyCollision[] = [];
      let duplicateMessages = 0;
      for (let e = 0; e < keys.strings.length; e++) {
        const key = keys.strings.get(e);
        const count = kCount.get(e);
        if (count > 1) {
          dup.push({ key, count, exampleIds: keyExamples(e) });
          duplicateMessages += count - 1;
        }
        const ops = kOps.get(e);
        if (ops !== undefined && ops.groups.length > 1) {
          const operations = ops.groups.map((g) => ({ operation: g.operation, count: g.count, exampleIds: g.examples.slice() })).sort((x, y) => y.count - x.count);
          const named = operations.slice(0, 3).map((o) => `${code(o.operation)} (${o.count})`);
          const more = operations.length > 3 ? ` and ${operations.length - 3} more` : '';
          collisions.push({
            key,
            operations,
            reason: `key ${code(key)} is used for ${named.slice(0, -1).join(', ')}${named.length > 1 ? ' and ' : ''}${named[named.length - 1] ?? ''}${more}: a consumer that deduplicates on it skips all but the first as duplicates; put the operation into the key.`,
          });
        }
      }
      const same: SamePayloadGroup[] = [];
      for (let p = 0; p < payloads.size; p++) {
        const count = pCount.get(p);
        if (count < 2) continue;
        const firstKey = pFirstKey.get(p);
        const withoutKey = (firstKey === '' ? 1 : 0) + (pNoKeyMore.get(p) ?? 0);
        // Copies under one key only are a duplicate group (D1), not this.
        if (withoutKey === 0 && !pMoreKeys.has(p)) continue;
        const pkeys = firstKey === '' ? (pMoreKeys.get(p)?.slice() ?? []) : payloadKeys(p);
        same.push({
          hash: payloads.text(p),
          count,
          keys: pkeys.slice(0, examples),
          distinctKeys: pkeys.length,
          withoutKey,
          exampleIds: payloadExamples(p),
          reason: samePayloadReason(count, pkeys.length, withoutKey),
        });
      }
      dup.sort((x, y) => y.count - x.count || (x.key < y.key ? -1 : 1));
      collisions.sort((x, y) => sumCounts(y) - sumCounts(x) || (x.key < y.key ? -1 : 1));
      same.sort((x, y) => y.count - x.count || (x.hash < y.hash ? -1 : 1));
      const capped = cappedKeys > 0 || cappedPayloads > 0;
      return {
        total,
        keyVerdicts: { ...keyVerdicts },
        businessDerivedShare: total === 0 ? 0 : keyVerdicts['business-derived'] / total,
        verdicts: { ...verdicts },
        flagged: verdicts.flag,
        review: verdicts.review,
        largePayloads: large,
        reasons: [...reasons.values()].map((r) => ({ ...r, exampleIds: r.exampleIds.slice() })).sort((x, y) => sevRank(y.severity) - sevRank(x.severity) || y.count - x.count),
        duplicateGroups: dup.slice(0, maxGroups),
        duplicateGroupCount: dup.length,
        duplicateMessages,
        keyCollisions: collisions.slice(0, maxGroups),
        keyCollisionCount: collisions.length,
        samePayloadDifferentKeys: same.slice(0, maxGroups),
        samePayloadDifferentKeysCount: same.length,
        bounds: {
          maxTracked,
          trackedKeys: keys.size,
          trackedPayloads: payloads.size,
          capped,
          note: capped ? capNote(maxTracked, cappedKeys, cappedPayloads) : null,
        },
      };
    },
  };
}

/** The sentence of a {@link SamePayloadGroup} of `count` (≥ 2) messages: `distinct` keys, `withoutKey` messages without one. */
function samePayloadReason(count: number, distinct: number, withoutKey: number): string {
  const messages = `${plural(count, 'message')} ${verb(count, 'carries', 'carry')} the same payload`;
  const keys = distinct >= KEYS_PER_PAYLOAD ? `${String(KEYS_PER_PAYLOAD)}+ different keys` : distinct === 1 ? 'one key' : `${String(distinct)} different keys`;
  if (withoutKey === 0) return `${messages} under ${keys}: the key is not derived from the business data, so a re-send of the same operation is not recognised as a duplicate.`;
  if (distinct === 0) return `${messages} without an idempotency key: a consumer cannot tell a redelivered or re-sent copy from a new operation; send a key derived from the business data.`;
  const copies = withoutKey === 1 ? 'the copy without a key is not recognised as a duplicate' : 'the copies without a key are not recognised as duplicates';
  return `${messages}, ${withoutKey.toLocaleString('en')} without an idempotency key and ${(count - withoutKey).toLocaleString('en')} under ${keys}: ${copies}${distinct > 1 ? ', nor are those under different keys' : ''}.`;
}

/** `bounds.note` of a capped summary; names only the kinds of message that were not grouped. */
function capNote(maxTracked: number, cappedKeys: number, cappedPayloads: number): string {
  const parts: string[] = [];
  if (cappedKeys > 0) parts.push(`${plural(cappedKeys, 'message')} with ${cappedKeys === 1 ? 'a new key' : 'new keys'}`);
  if (cappedPayloads > 0) parts.push(`${plural(cappedPayloads, 'message')} with ${cappedPayloads === 1 ? 'a new payload' : 'new payloads'}`);
  const one = parts.length === 1 && cappedKeys + cappedPayloads === 1;
  return `Only the first ${maxTracked.toLocaleString('en')} distinct keys and payloads were grouped; ${parts.join(' and ')} after that ${one ? 'was' : 'were'} counted but not grouped, so duplicate counts are lower bounds.`;
}

const sevRank = (s: PayloadVerdictKind): number => (s === 'flag' ? 2 : s === 'review' ? 1 : 0);
const sumCounts = (c: KeyCollision): number => c.operations.reduce((s, o) => s + o.count, 0);

function clampInt(v: number | undefined, dflt: number, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) return dflt;
  return Math.min(max, Math.max(min, Math.floor(v)));
}

/**
 * Summarises a whole set of messages (see {@link createQueueSummary}).
 *
 * @param messages any iterable: an array, or a generator reading a snapshot line by line.
 */
export function summarizeQueue(messages: Iterable<QueueMessage | MessageAnalysis>, options: SummaryOptions = {}): RedeliverySummary {
  // The analyses add() returns are discarded here, so they need no sentences.
  const acc = makeSummary(options, true);
  for (const m of messages) acc.add(m);
  return acc.result();
}

/**
 * Duplicates between two message sets: a DLQ and its source queue, or two snapshots of one queue
 * (rule D4). Side A is indexed (bounded by `maxTracked` keys and payload hashes), side B streamed.
 *
 * - shared keys: a key on both sides. For DLQ → source this is what redrive would replay into a
 *   queue that already holds (or held) the same operation;
 * - same payload, different keys: the same business payload on both sides under keys that differ,
 *   so the consumer cannot recognise the copy.
 *
 * @returns counts, the largest groups (at most `maxGroups`) with example ids, and sentences. Never throws.
 */
export function compareDuplicates(a: CompareSide, b: CompareSide, options: Pick<SummaryOptions, 'maxTracked' | 'maxGroups' | 'examplesPerGroup'> = {}): DuplicateComparison {
  const maxTracked = clampInt(options.maxTracked, DEFAULT_MAX_TRACKED, 1, 10_000_000);
  const maxGroups = clampInt(options.maxGroups, DEFAULT_MAX_GROUPS, 1, 10_000);
  const examples = clampInt(options.examplesPerGroup, DEFAULT_EXAMPLES, 1, 100);
  const optsA: AnalyzeOptions = { ...(a.options ?? {}), detail: 'verdict' };
  const optsB: AnalyzeOptions = { ...(b.options ?? {}), detail: 'verdict' };
  const keysA = new Map<string, { count: number; examples: string[] }>();
  const payA = new Map<string, { count: number; keys: string[]; examples: string[] }>();
  let capped = false;
  let totalA = 0;
  let withKeyA = 0;
  for (const item of a.messages) {
    const x = isAnalysis(item) ? item : analyzeForSummary(item, optsA);
    totalA++;
    const key = x.key?.key;
    if (key === undefined || key.length === 0) continue;
    withKeyA++;
    const e = keysA.get(key);
    if (e !== undefined) {
      e.count++;
      if (e.examples.length < examples) e.examples.push(x.messageId);
    } else if (keysA.size < maxTracked) keysA.set(key, { count: 1, examples: [x.messageId] });
    else capped = true;
    if (x.businessHash !== null) {
      const p = payA.get(x.businessHash);
      if (p !== undefined) {
        p.count++;
        if (p.examples.length < examples) p.examples.push(x.messageId);
        if (p.keys.length < KEYS_PER_PAYLOAD && !p.keys.includes(key)) p.keys.push(key);
      } else if (payA.size < maxTracked) payA.set(x.businessHash, { count: 1, keys: [key], examples: [x.messageId] });
      else capped = true;
    }
  }
  const shared = new Map<string, SharedGroup>();
  const samePayload = new Map<string, SharedGroup & { keysA: string[]; keysB: string[] }>();
  let totalB = 0;
  let withKeyB = 0;
  let bInA = 0;
  for (const item of b.messages) {
    const x = isAnalysis(item) ? item : analyzeForSummary(item, optsB);
    totalB++;
    const key = x.key?.key;
    if (key === undefined || key.length === 0) continue;
    withKeyB++;
    const inA = keysA.get(key);
    if (inA !== undefined) {
      bInA++;
      const g = shared.get(key);
      if (g !== undefined) {
        g.countB++;
        if (g.exampleIdsB.length < examples) g.exampleIdsB.push(x.messageId);
      } else if (shared.size < maxTracked) shared.set(key, { key, countA: inA.count, countB: 1, exampleIdsA: inA.examples.slice(), exampleIdsB: [x.messageId] });
      else capped = true;
    }
    const h = x.businessHash;
    const p = h !== null ? payA.get(h) : undefined;
    if (h !== null && p !== undefined && !p.keys.includes(key)) {
      const g = samePayload.get(h);
      if (g !== undefined) {
        g.countB++;
        if (g.exampleIdsB.length < examples) g.exampleIdsB.push(x.messageId);
        if (g.keysB.length < examples && !g.keysB.includes(key)) g.keysB.push(key);
      } else if (samePayload.size < maxTracked) samePayload.set(h, { key: h, countA: p.count, countB: 1, exampleIdsA: p.examples.slice(), exampleIdsB: [x.messageId], keysA: p.keys.slice(0, examples), keysB: [key] });
      else capped = true;
    }
  }
  const sharedList = [...shared.values()].sort((x, y) => y.countA + y.countB - (x.countA + x.countB) || (x.key < y.key ? -1 : 1));
  const sameList = [...samePayload.values()].sort((x, y) => y.countB - x.countB || (x.key < y.key ? -1 : 1));
  const reasons: string[] = [];
  if (totalB === 0) reasons.push(`${code(b.label)} has no messages to compare with ${code(a.label)}.`);
  else if (totalA === 0) reasons.push(`${code(a.label)} has no messages: nothing in ${code(b.label)} can repeat one of its keys or payloads.`);
  if (bInA > 0) {
    reasons.push(
      `${plural(bInA, 'message')} in ${code(b.label)} share${bInA === 1 ? 's' : ''} a key with ${code(a.label)} (${plural(shared.size, 'key')}): replaying ${verb(bInA, 'it', 'them')} (redrive, re-send) repeats operations the other side already carries; safe only if the consumer checks the key.`,
    );
  }
  const sameCount = sameList.reduce((s, g) => s + g.countB, 0);
  if (sameCount > 0) {
    const sameA = sameList.reduce((s, g) => s + g.countA, 0);
    reasons.push(
      `${plural(sameCount, 'message')} in ${code(b.label)} ${verb(sameCount, 'carries', 'carry')} the same payload as ${sameA === 1 ? 'a message' : 'messages'} in ${code(a.label)} under ${verb(sameCount, 'a different key', 'different keys')}: the keys are not derived from the business data, so ${verb(sameCount, 'this copy is', 'these copies are')} not recognised as ${verb(sameCount, 'a duplicate', 'duplicates')}.`,
    );
  }
  if (reasons.length === 0) reasons.push(`No message in ${code(b.label)} shares a key or a business payload with ${code(a.label)}.`);
  return {
    a: { label: a.label, total: totalA, withKey: withKeyA },
    b: { label: b.label, total: totalB, withKey: withKeyB },
    sharedKeys: sharedList.slice(0, maxGroups),
    sharedKeyCount: sharedList.length,
    messagesBWithKeyInA: bInA,
    samePayloadDifferentKeys: sameList.slice(0, maxGroups),
    samePayloadDifferentKeysCount: sameList.length,
    reasons,
    bounds: { maxTracked, capped, note: capped ? `More than ${maxTracked.toLocaleString('en')} distinct keys or payloads: only the first were compared, so the counts are lower bounds.` : null },
  };
}

/**
 * The slots of an open-addressing table (pairs `[hash, index + 1]`, 0 = empty) re-placed into a
 * table of `mask + 1` pairs by linear probing. Shared by the summary's string indexes.
 */
function rehash(old: Int32Array, mask: number): Int32Array<ArrayBuffer> {
  const slots = new Int32Array(2 * (mask + 1));
  for (let j = 0; j < old.length; j += 2) {
    const at = old[j + 1] as number;
    if (at === 0) continue;
    const hash = old[j] as number;
    let i = hash & mask;
    while (slots[2 * i + 1] !== 0) i = (i + 1) & mask;
    slots[2 * i] = hash;
    slots[2 * i + 1] = at;
  }
  return slots;
}
