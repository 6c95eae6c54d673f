import type { QueueMessage } from '../domain';
import { classifyKeyWithEvidence, extractIdempotencyKey, keyEvidence } from './idempotency';
import { bodyView } from './json-body';
import { analyzePayloadWithEvidence } from './payload';
import { normalizeRules } from './rules';
import { brokerOf, checkSize } from './size';
import type { AnalyzeOptions, InspectRules, MessageAnalysis, PayloadVerdictKind } from './types';

/**
 * One message's redelivery safety: idempotency key and its verdict, payload field classes and
 * verdict, size check, operation and business hash. Pure; never throws (a message that is not a
 * {@link QueueMessage} at all yields a `review` verdict saying so).
 *
 * Rules are applied in the order listed in shared/analysis/README.md.
 *
 * @param message a message from any adapter or snapshot.
 * @param options per-queue rules, broker (default: from the queue id), broker version, detail.
 */
export function analyzeMessage(message: QueueMessage, options: AnalyzeOptions = {}): MessageAnalysis {
  return analyzeOrFallback(message, options, true);
}

/**
 * {@link analyzeMessage} for `summarizeQueue` and `compareDuplicates`, which discard the analyses
 * after reading the verdicts, the key, the business hash, the operation, the size check and the
 * texts of flag/review findings, never the other sentences: `keyVerdict.reason` is `''` (fixed
 * sentences such as the `missing` one stay), `ok` findings have no text, `payload.reasons` and
 * `reasons` are `[]`. Every verdict, key, hash and flag/review finding is the same as
 * analyzeMessage gives (shared/analysis/summary.test.ts compares them). Never throws.
 *
 * @internal for shared/analysis/summary.ts; results must not reach callers of the public API
 *   (`createQueueSummary().add()` returns its analyses, so it uses analyzeMessage).
 */
export function analyzeForSummary(message: QueueMessage, options: AnalyzeOptions): MessageAnalysis {
  return analyzeOrFallback(message, options, false);
}

function analyzeOrFallback(message: QueueMessage, options: AnalyzeOptions, sentences: boolean): MessageAnalysis {
  const rules = resolvedRules(options);
  try {
    return analyze(message, rules, options, sentences);
  } catch (e) {
    const id = typeof (message as { id?: unknown } | null)?.id === 'string' ? message.id : '';
    const why = e instanceof Error ? e.message.slice(0, 200) : 'unknown error';
    return {
      messageId: id,
      key: null,
      keyVerdict: { verdict: 'missing', reason: 'missing: the message could not be analysed, so no idempotency key was found.' },
      payload: { verdict: 'review', label: 'review', reasons: [`the message could not be analysed (${why}); look at it by hand.`], findings: [{ rule: 'not-json', severity: 'review', text: `the message could not be analysed (${why}); look at it by hand.`, fields: [] }], fields: [], fieldsTruncated: false, envelope: null, argumentsPath: 'body', format: 'empty', intentionalSnapshot: [] },
      size: { bytes: 0, limitBytes: null, limitSource: 'unknown', verdict: 'ok', reason: null },
      verdict: 'review',
      reasons: [`the message could not be analysed (${why}); look at it by hand.`],
      operation: null,
      operationSource: null,
      businessHash: null,
    };
  }
}

const rulesCache = new WeakMap<object, InspectRules>();
/** The rules used when none are given (read only: never returned to callers). */
const NO_RULES: InspectRules = normalizeRules(undefined);

function resolvedRules(options: AnalyzeOptions): InspectRules {
  const r = options.rules as unknown;
  if (r === null || typeof r !== 'object') return NO_RULES;
  const hit = rulesCache.get(r);
  if (hit) return hit;
  const n = normalizeRules(r);
  rulesCache.set(r, n);
  return n;
}

const SEVERITY: Record<PayloadVerdictKind, number> = { ok: 0, review: 1, flag: 2 };
/** `reasons` of {@link analyzeForSummary} results (never handed out to public callers). */
const NO_REASONS: string[] = [];

function analyze(message: QueueMessage, rules: InspectRules, options: AnalyzeOptions, sentences: boolean): MessageAnalysis {
  // Parsed once, first: key extraction then finds a body key field beside a header key (rule
  // K1c) without scanning the text, and the payload reads the same parse.
  bodyView(message);
  const key = extractIdempotencyKey(message, rules.keyRules);
  // One walk over the body: the payload walk also gathers the values the key verdict matches.
  const evidence = keyEvidence(key, message);
  const p = analyzePayloadWithEvidence(message, rules, key, options.detail ?? 'full', sentences, evidence);
  const keyVerdict = classifyKeyWithEvidence(key?.key ?? '', message, key ?? undefined, sentences, evidence);
  const broker = options.broker ?? brokerOf(message.queueId);
  const size = checkSize(message, broker, rules.maxMessageBytes, options.brokerVersion);
  const sizeVerdict: PayloadVerdictKind = size.verdict === 'over-limit' ? 'flag' : size.verdict === 'large' ? 'review' : 'ok';
  const verdict = SEVERITY[sizeVerdict] > SEVERITY[p.payload.verdict] ? sizeVerdict : p.payload.verdict;
  const reasons = !sentences ? NO_REASONS : size.reason !== null ? withSizeReason(p.payload, size.reason, sizeVerdict) : p.payload.reasons;
  return {
    messageId: typeof message.id === 'string' ? message.id : String(message.id),
    key,
    keyVerdict,
    payload: p.payload,
    size,
    verdict,
    reasons,
    operation: p.operation,
    operationSource: p.operationSource,
    businessHash: p.businessHash,
  };
}

/**
 * The payload reasons with the size reason placed by severity (rule P9: most severe first, so
 * `reasons[0]` explains the verdict): before the first payload reason less severe than the size
 * verdict, after those as severe or more (stable). `payload.reasons[i]` is `payload.findings[i].text`.
 */
function withSizeReason(payload: MessageAnalysis['payload'], sizeReason: string, sizeVerdict: PayloadVerdictKind): string[] {
  const texts = payload.reasons;
  const rank = SEVERITY[sizeVerdict];
  let at = 0;
  while (at < texts.length && SEVERITY[payload.findings[at]?.severity ?? 'ok'] >= rank) at++;
  const out = texts.slice(0, at);
  out.push(sizeReason);
  for (let i = at; i < texts.length; i++) out.push(texts[i] as string);
  return out;
}
