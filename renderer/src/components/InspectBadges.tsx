import { useEffect } from 'react';
import { analyzeMessage } from '../../../shared/analysis';
import type { AnalyzeOptions, KeyVerdictKind, MessageAnalysis, PayloadVerdictKind } from '../../../shared/analysis/types';
import type { QueueMessage } from '../../../shared/domain/message';
import { useStore } from '../store';
import { rulesForQueue } from '../store/inspect';
import './inspect.css';

/**
 * What the badges analyse one queue's messages with: the queue's rules (`AnalyzeOptions.rules`)
 * and, as `brokerVersion`, the broker version the connection reports (`AnalyzeOptions.brokerVersion`,
 * e.g. RabbitMQ `3.13.7`: picks the default size limit, 128 MiB before 4.0, 16 MiB since; absent or
 * null = unknown). One object so the message list can pass it down as is; its identity is stable
 * per settings, queue and version, so analyses are cached.
 */
export type QueueRules = NonNullable<AnalyzeOptions['rules']> & { readonly brokerVersion?: string | null };

/** Short badge texts for key verdicts. */
export const KEY_VERDICT_LABEL: Record<KeyVerdictKind, string> = {
  'business-derived': 'business key',
  'opaque-random': 'random key',
  'time-derived': 'time key',
  'period-key': 'period key',
  missing: 'no key',
};

/**
 * A key verdict's sentence without its leading verdict name: `KeyVerdict.reason` starts with it
 * ("opaque-random: …"), and the UI already shows the verdict as a label right before the sentence
 * ("random key: opaque-random: …" said it twice). Sentences without the prefix are returned as they are.
 */
export function keyReasonText(verdict: KeyVerdictKind, reason: string): string {
  const prefix = `${verdict}: `;
  return reason.startsWith(prefix) ? reason.slice(prefix.length) : reason;
}

/** Badge tone per key verdict: business-derived and period keys are fine; random/time keys need review; missing is a flag. */
export const KEY_VERDICT_TONE: Record<KeyVerdictKind, PayloadVerdictKind> = {
  'business-derived': 'ok',
  'period-key': 'ok',
  'opaque-random': 'review',
  'time-derived': 'review',
  missing: 'flag',
};

const cache = new WeakMap<QueueMessage, { rules: QueueRules; detail: 'full' | 'verdict'; a: MessageAnalysis }>();

/**
 * `analyzeMessage` for a message, computed once per message object and rules object (the list and
 * the message view share it; a `full` analysis also serves `verdict` requests).
 */
export function analysisOf(message: QueueMessage, rules: QueueRules, detail: 'full' | 'verdict' = 'verdict'): MessageAnalysis {
  const hit = cache.get(message);
  if (hit !== undefined && hit.rules === rules && (hit.detail === 'full' || detail === 'verdict')) return hit.a;
  const version = rules.brokerVersion;
  const a = analyzeMessage(message, { rules, detail, ...(version !== undefined && version !== null ? { brokerVersion: version } : {}) });
  cache.set(message, { rules, detail, a });
  return a;
}

const NO_RULES: QueueRules = { keyRules: [], snapshotFields: [], queueIsSnapshot: false };
const rulesMemo = new WeakMap<object, Map<string, { rules: QueueRules; match: string | null }>>();

/**
 * The rules for a queue from the connection's saved inspect settings (loads them on first use),
 * with the broker version the connection reports (`inspect.rules.get` → `brokerVersion`).
 * The returned `rules` object keeps its identity while the settings and version do not change, so analyses are cached.
 */
export function useQueueRules(connectionId: string, queue: { name: string; id: string } | null): { rules: QueueRules; match: string | null; persisted: boolean | null } {
  const entry = useStore((s) => s.inspectRules[connectionId]);
  const load = useStore((s) => s.loadInspectRules);
  const connectionName = useStore((s) => s.connections.find((c) => c.id === connectionId)?.name);
  useEffect(() => {
    if (entry === undefined) void load(connectionId);
  }, [entry, load, connectionId]);
  const settings = entry?.state?.settings;
  const brokerVersion = entry?.state?.brokerVersion ?? null;
  if (queue === null || settings === undefined) return { rules: NO_RULES, match: null, persisted: entry?.state?.persisted ?? null };
  let perSettings = rulesMemo.get(settings);
  if (perSettings === undefined) {
    perSettings = new Map();
    rulesMemo.set(settings, perSettings);
  }
  const k = `${queue.id}\u0000${queue.name}\u0000${brokerVersion ?? ''}`;
  let r = perSettings.get(k);
  if (r === undefined) {
    const found = rulesForQueue(settings, queue, connectionName);
    r = brokerVersion !== null ? { rules: { ...found.rules, brokerVersion }, match: found.match } : found;
    perSettings.set(k, r);
  }
  return { ...r, persisted: entry?.state?.persisted ?? null };
}

/** A key-verdict badge (`business key`, `random key`…) with the key and its reason as the tooltip. */
export function KeyBadge({ analysis }: { analysis: MessageAnalysis }) {
  const v = analysis.keyVerdict.verdict;
  const title = `${analysis.key !== null ? `key ${analysis.key.key} (${analysis.key.source})\n` : ''}${analysis.keyVerdict.reason}`;
  return (
    <span className={`inspect-badge tone-${KEY_VERDICT_TONE[v]}`} title={title} data-testid="key-badge" data-verdict={v}>
      {KEY_VERDICT_LABEL[v]}
    </span>
  );
}

/** The message verdict badge (`ok`, `review`, `flag`) with the top reasons as the tooltip. */
export function VerdictBadge({ analysis }: { analysis: MessageAnalysis }) {
  const v = analysis.verdict;
  const snapshot = analysis.payload.intentionalSnapshot.length > 0;
  return (
    <span className={`inspect-badge tone-${v}`} title={analysis.reasons.length > 0 ? analysis.reasons.join('\n') : analysis.payload.label} data-testid="verdict-badge" data-verdict={v}>
      {v}
      {snapshot ? ' (snapshot)' : ''}
    </span>
  );
}

/** The list cell: key badge, verdict badge. Never throws (the analysis does not). */
export function InspectCell({ message, rules }: { message: QueueMessage; rules: QueueRules }) {
  const a = analysisOf(message, rules);
  return (
    <>
      <KeyBadge analysis={a} />
      <VerdictBadge analysis={a} />
    </>
  );
}
