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

/**
 * Per-key and per-payload state is kept in parallel columns indexed through one table each (no
 * object per key): with 100k distinct keys, per-key objects and example arrays were the main
 * garbage-collector cost of a summary. Example lists start as the first id alone; further examples
 * (duplicates, which are rare) live in sparse maps.
 */
interface OpEntry {
  count: number;
  examples: string[];
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

function isAnalysis(x: QueueMessage | MessageAnalysis): x is MessageAnalysis {
  return typeof (x as MessageAnalysis).keyVerdict === 'object' && typeof (x as MessageAnalysis).payload === 'object';
}

const code = (s: string): string => `\`${s.length > 80 ? `${s.slice(0, 79)}…` : s}\``;
const plural = (n: number, one: string, many = `${one}s`): string => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;

/**
 * A streaming accumulator for one queue's {@link RedeliverySummary}: `add()` each message (or an
 * analysis made earlier), `result()` at any time. Memory is bounded by `maxTracked` distinct keys
 * and payload hashes (plus `examplesPerGroup` ids each); beyond it, messages are still counted but
 * new keys are not grouped, and `bounds.capped` / `bounds.note` say so.
 *
 * @param options analysis options for raw messages (default `detail: 'verdict'`, which skips field
 *   annotations) and the bounds.
 */
export function createQueueSummary(options: SummaryOptions = {}): QueueSummaryAccumulator {
  return makeSummary(options, false);
}

/**
 * {@link createQueueSummary}; with `lean`, raw messages are analysed by {@link analyzeForSummary}
 * (no sentences the summary drops), for callers that discard what `add()` returns.
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
  /** First operation seen; `kOps` gets an entry when a second one appears. */
  const kOp = new Column<string | null>();
  const kOps = new Map<number, Map<string, OpEntry>>();
  const opNames = new Interner();
  // Payload hashes: count, example ids, distinct keys (at most KEYS_PER_PAYLOAD).
  const payloads = new HashIndex();
  const pCount = new Column<number>();
  const pFirstId = new Column<string>();
  const pMoreIds = new Map<number, string[]>();
  const pFirstKey = new Column<string>();
  const pMoreKeys = new Map<number, string[]>();
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
      if (key !== undefined && key.length > 0) {
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
          const count = kCount.get(e);
          let first = kOp.get(e);
          if (first === null) kOp.set(e, (first = opNames.intern(op)));
          let ops = kOps.get(e);
          if (ops === undefined && op !== first) {
            ops = new Map([[first, { count: count - 1, examples: keyExamples(e).slice(0, Math.min(examples, count - 1)) }]]);
            kOps.set(e, ops);
          }
          if (ops !== undefined) {
            const o = ops.get(op);
            if (o === undefined) {
              if (ops.size < 16) ops.set(op, { count: 1, examples: [id] });
            } else {
              o.count++;
              if (o.examples.length < examples) o.examples.push(id);
            }
          }
        }
        const h = a.businessHash;
        if (h !== null) {
          const found = payloads.find(h);
          const p: number | undefined = found >= 0 ? found : undefined;
          if (p === undefined) {
            if (payloads.size >= maxTracked) cappedPayloads++;
            else {
              payloads.add(h);
              pCount.push(1);
              pFirstId.push(id);
              pFirstKey.push(key);
            }
          } else {
            const n = pCount.get(p) + 1;
            pCount.set(p, n);
            if (n <= examples) {
              const more = pMoreIds.get(p);
              if (more === undefined) pMoreIds.set(p, [id]);
              else more.push(id);
            }
            if (pFirstKey.get(p) !== key) {
              const mk = pMoreKeys.get(p);
              if (mk === undefined) pMoreKeys.set(p, [key]);
              else if (mk.length + 1 < KEYS_PER_PAYLOAD && !mk.includes(key)) mk.push(key);
            }
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
        if (ops !== undefined && ops.size > 1) {
          const operations = [...ops].map(([operation, o]) => ({ operation, count: o.count, exampleIds: o.examples.slice() })).sort((x, y) => y.count - x.count);
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
        if (!pMoreKeys.has(p)) continue;
        const pkeys = payloadKeys(p);
        const distinct = pkeys.length;
        const count = pCount.get(p);
        same.push({
          hash: payloads.text(p),
          count,
          keys: pkeys.slice(0, examples),
          distinctKeys: distinct,
          exampleIds: payloadExamples(p),
          reason: `${plural(count, 'message')} carry the same payload under ${distinct >= KEYS_PER_PAYLOAD ? `${KEYS_PER_PAYLOAD}+` : distinct} different keys: the key is not derived from the business data, so a re-send of the same operation is not recognised as a duplicate.`,
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
          note: capped
            ? `Only the first ${maxTracked.toLocaleString('en')} distinct keys and payloads were grouped; ${plural(cappedKeys, 'message')} with new keys and ${plural(cappedPayloads, 'message')} with new payloads after that were counted but not grouped, so duplicate counts are lower bounds.`
            : null,
        },
      };
    },
  };
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
  if (bInA > 0) {
    reasons.push(
      `${plural(bInA, 'message')} in ${code(b.label)} share${bInA === 1 ? 's' : ''} a key with ${code(a.label)} (${plural(shared.size, 'key')}): replaying them (redrive, re-send) repeats operations the other side already carries; safe only if the consumer checks the key.`,
    );
  }
  const sameCount = sameList.reduce((s, g) => s + g.countB, 0);
  if (sameCount > 0) {
    reasons.push(`${plural(sameCount, 'message')} in ${code(b.label)} carry the same payload as messages in ${code(a.label)} under different keys: the keys are not derived from the business data, so these copies are not recognised as duplicates.`);
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
