import { useMemo, type ReactNode } from 'react';
import type { FieldAnnotation, KeyExtraction, MessageAnalysis } from '../../../shared/analysis/types';
import type { QueueMessage } from '../../../shared/domain/message';
import { decodedOf } from '../lib/decoded-cache';
import { bytes as formatBytes } from '../lib/format';
import { useStore } from '../store';
import { KEY_VERDICT_LABEL, KeyBadge, VerdictBadge, analysisOf, keyReasonText, useQueueRules } from './InspectBadges';
import { Revealed } from './TextViews';

/** Lines of the annotated body at most; beyond it the view says so. */
export const MAX_ANNOTATED_LINES = 2000;
/** Deeper values are printed on one line (no per-field annotation below). */
const MAX_ANNOTATED_DEPTH = 40;

/** One line of {@link annotatedLines}: the text, the member path it prints, and its annotation. */
export interface AnnotatedLine {
  text: string;
  /** Path in `readMessagePath` syntax (`body.order.status`, `body.items[0].sku`); null for closing brackets. */
  path: string | null;
  annotation: FieldAnnotation | null;
  /** True when the line prints one of the fields the idempotency key was read from. */
  isKey: boolean;
}

/**
 * Pretty-prints a parsed JSON body (2-space indent, like `JSON.stringify(v, null, 2)`) line by line,
 * tagging each member line with its path, its field annotation (exact path match) and whether the
 * key came from it. Bounded: at most `maxLines` lines (`truncated` then true) and
 * {@link MAX_ANNOTATED_DEPTH} levels. Pure; never throws for JSON values.
 */
export function annotatedLines(json: unknown, annotations: readonly FieldAnnotation[], keyFields: readonly string[], maxLines = MAX_ANNOTATED_LINES): { lines: AnnotatedLine[]; truncated: boolean } {
  const byPath = new Map<string, FieldAnnotation>();
  for (const a of annotations) if (a.jsonIn === undefined && !byPath.has(a.path)) byPath.set(a.path, a);
  const keys = new Set(keyFields);
  const lines: AnnotatedLine[] = [];
  let truncated = false;
  const push = (text: string, path: string | null): boolean => {
    if (lines.length >= maxLines) {
      truncated = true;
      return false;
    }
    lines.push({ text, path, annotation: path === null ? null : (byPath.get(path) ?? null), isKey: path !== null && keys.has(path) });
    return true;
  };
  const scalar = (v: unknown): string => {
    try {
      const t = JSON.stringify(v) as string | undefined; // undefined for values JSON cannot hold
      return t ?? 'null';
    } catch {
      return '"…"';
    }
  };
  const walk = (v: unknown, path: string, indent: string, prefix: string, suffix: string, depth: number): boolean => {
    if (v === null || typeof v !== 'object' || depth >= MAX_ANNOTATED_DEPTH) return push(`${indent}${prefix}${scalar(v)}${suffix}`, path);
    const isArr = Array.isArray(v);
    const entries: [string, unknown, string][] = isArr ? (v as unknown[]).map((x, i) => [String(i), x, `${path}[${String(i)}]`]) : Object.keys(v).map((k) => [k, (v as Record<string, unknown>)[k], `${path}.${k}`]);
    if (entries.length === 0) return push(`${indent}${prefix}${isArr ? '[]' : '{}'}${suffix}`, path);
    if (!push(`${indent}${prefix}${isArr ? '[' : '{'}`, path)) return false;
    const inner = `${indent}  `;
    for (let i = 0; i < entries.length; i++) {
      const [k, x, p] = entries[i] as [string, unknown, string];
      if (!walk(x, p, inner, isArr ? '' : `${JSON.stringify(k)}: `, i < entries.length - 1 ? ',' : '', depth + 1)) return false;
    }
    return push(`${indent}${isArr ? ']' : '}'}${suffix}`, null);
  };
  walk(json, 'body', '', '', '', 0);
  return { lines, truncated };
}

/** `text` with every occurrence of `needle` wrapped in <mark> (React text nodes only, never HTML). */
export function markText(text: string, needle: string | null): ReactNode {
  if (needle === null || needle.length < 2 || !text.includes(needle)) return <Revealed text={text} />;
  const parts = text.split(needle);
  return parts.map((p, i) => (
    <span key={i}>
      <Revealed text={p} />
      {i < parts.length - 1 && (
        <mark>
          <Revealed text={needle} />
        </mark>
      )}
    </span>
  ));
}

const CLASS_LABEL: Record<FieldAnnotation['class'], string> = {
  identifier: 'identifier',
  'mutable-state': 'mutable state',
  'immutable-snapshot': 'snapshot',
  unknown: 'unknown',
};

/**
 * The full analysis of the open message with the open queue's rules (cached per message and rules,
 * so the message view's sections share one), and the rule pattern that matched the queue (null = built-in rules).
 */
export function useMessageAnalysis(message: QueueMessage): { analysis: MessageAnalysis; match: string | null } {
  const view = useStore((s) => s.view);
  const connectionId = view.screen === 'queue' ? view.connectionId : '';
  const queue = useMemo(() => ({ id: message.queueId, name: message.queueName }), [message.queueId, message.queueName]);
  const { rules, match } = useQueueRules(connectionId, connectionId === '' ? null : queue);
  return { analysis: analysisOf(message, rules, 'full'), match };
}

/** Which rule found a key, in words: " (built-in rule)", " (your rule for “orders.*”)". */
export function keyRuleText(key: KeyExtraction, match: string | null): string {
  return key.origin === 'user' ? ` (your rule${match !== null ? ` for “${match}”` : ''})` : ' (built-in rule)';
}

/**
 * "Redelivery safety" section of the message view: the idempotency key highlighted with the rule
 * that found it and its verdict sentence; the payload verdict with its reasons; the body with each
 * classified field annotated (identifier / mutable state / snapshot) and the key's fields marked.
 */
export function InspectMessagePanel({ message }: { message: QueueMessage }) {
  const { analysis: a, match } = useMessageAnalysis(message);
  const decoded = decodedOf(message);
  const body = useMemo(
    () => (decoded.format === 'json' ? annotatedLines(decoded.json, a.payload.fields, a.key?.fields ?? []) : null),
    [decoded, a],
  );
  const keyText = a.key?.key ?? null;

  return (
    <section className="panel inspect-panel" aria-label="Redelivery safety" data-testid="inspect-panel">
      <h3>
        Redelivery safety <KeyBadge analysis={a} /> <VerdictBadge analysis={a} />
      </h3>
      <div className="inspect-reason" data-testid="inspect-key">
        <strong>Idempotency key:</strong>{' '}
        {a.key !== null ? (
          <>
            <mark className="inspect-key" data-testid="highlighted-key">
              <Revealed text={a.key.key} />
            </mark>{' '}
            <span className="muted">
              from <span data-testid="key-source">{a.key.source}</span>
              {keyRuleText(a.key, match)}
            </span>
          </>
        ) : (
          <span className="muted">none found</span>
        )}
      </div>
      <div className="inspect-reason">
        <strong>{KEY_VERDICT_LABEL[a.keyVerdict.verdict]}:</strong> <span data-testid="key-reason">{keyReasonText(a.keyVerdict.verdict, a.keyVerdict.reason)}</span>
      </div>
      <div className="inspect-reason">
        <strong>Payload: {a.payload.label}</strong>
        {a.payload.envelope !== null && <span className="muted"> · envelope {a.payload.envelope} (arguments at {a.payload.argumentsPath})</span>}
        <span className="muted">
          {' '}
          · {formatBytes(a.size.bytes)}
          {a.size.limitBytes !== null ? ` of at most ${formatBytes(a.size.limitBytes)} (${a.size.limitSource})` : ''}
        </span>
      </div>
      {a.reasons.length > 0 && (
        <ul className="inspect-reasons" data-testid="inspect-reasons">
          {a.reasons.map((r, i) => (
            <li key={i}>{r}</li>
          ))}
        </ul>
      )}
      {body !== null && body.lines.length > 0 && (
        <details open={a.verdict !== 'ok' || a.key !== null}>
          <summary>Body with field annotations ({a.payload.fields.length} field{a.payload.fields.length === 1 ? '' : 's'} classified{a.payload.fieldsTruncated ? ', more not shown' : ''})</summary>
          <div className="annotated-body" role="document" aria-label="Annotated body" data-testid="annotated-body">
            {body.lines.map((l, i) => (
              <div key={i} className={l.isKey ? 'aline key-line' : 'aline'} data-path={l.path ?? undefined} data-class={l.annotation?.class}>
                {l.isKey ? markText(l.text, keyText) : <Revealed text={l.text} />}
                {l.annotation !== null && (
                  <span className="anno">
                    <span className={`field-class fc-${l.annotation.class}`} title={l.annotation.why}>
                      {CLASS_LABEL[l.annotation.class]}
                    </span>
                  </span>
                )}
                {l.isKey && (
                  <span className="anno">
                    <span className="field-class fc-identifier">idempotency key</span>
                  </span>
                )}
              </div>
            ))}
            {body.truncated && <div className="muted">… the rest of the body is not annotated here (see the body viewer).</div>}
          </div>
        </details>
      )}
      {a.payload.fields.some((f) => f.jsonIn !== undefined) && (
        <details>
          <summary>Fields inside JSON strings</summary>
          <table className="kv-table inspect-fields">
            <tbody>
              {a.payload.fields
                .filter((f) => f.jsonIn !== undefined)
                .map((f) => (
                  <tr key={f.path}>
                    <th className="mono">{f.path}</th>
                    <td>
                      <span className={`field-class fc-${f.class}`}>{CLASS_LABEL[f.class]}</span> {f.why}
                    </td>
                  </tr>
                ))}
            </tbody>
          </table>
        </details>
      )}
    </section>
  );
}
