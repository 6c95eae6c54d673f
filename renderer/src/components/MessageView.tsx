import type { ReactNode } from 'react';
import type { HeaderValue, MessageMeta, QueueMessage } from '../../../shared/domain/message';
import { absoluteTime, count, duration, headerValueText } from '../lib/format';
import { useEscapeKey } from '../lib/hooks';
import { BodyViewer } from './BodyViewer';
import { Time } from './common';
import { InspectMessagePanel, keyRuleText, markText, useMessageAnalysis } from './InspectMessagePanel';
import { Revealed } from './TextViews';

/** One message: body viewer, broker metadata (x-death, BullMQ failure, stream pending info), headers and properties. Esc closes it (not while a dialog is open). */
export function MessageView({ message, onClose }: { message: QueueMessage; onClose: () => void }) {
  useEscapeKey(onClose);
  const meta = message.meta;
  const rows = metaRows(meta);
  const headers = Object.entries(message.headers);
  const properties = Object.entries(message.properties);
  const { analysis, match } = useMessageAnalysis(message);
  const keyMark: KeyMark | null = analysis.key !== null ? { fields: new Set(analysis.key.fields), key: analysis.key.key, label: `idempotency key · ${analysis.key.source}${keyRuleText(analysis.key, match)}` } : null;
  return (
    <article className="message-view" aria-label={`Message ${message.id}`} data-testid="message-view">
      <header className="message-header">
        <div className="title-block">
          <h2 className="mono ellipsis" title={message.id}>
            {message.id}
          </h2>
          <div className="subtitle">
            {meta.state !== undefined && <span className={`msg-state msg-state-${meta.state}`}>{meta.state}</span>}
            {message.position !== null && <span className="muted">position {count(message.position)}</span>}
            {meta.jobName !== undefined && <span className="muted">job “{meta.jobName}”</span>}
            {meta.enqueuedAt != null && (
              <span className="muted">
                enqueued <Time ms={meta.enqueuedAt} />
              </span>
            )}
          </div>
        </div>
        <button type="button" className="btn btn-ghost btn-icon" aria-label="Close message" onClick={onClose}>
          ×
        </button>
      </header>

      {(meta.failedReason != null || (meta.stacktrace !== undefined && meta.stacktrace.length > 0)) && (
        <section className="panel panel-danger" aria-label="Failure">
          <h3>Failure{meta.attemptsMade !== undefined ? ` after ${meta.attemptsMade} attempt${meta.attemptsMade === 1 ? '' : 's'}` : ''}</h3>
          {meta.failedReason != null && <pre className="failed-reason">{meta.failedReason}</pre>}
          {meta.stacktrace !== undefined && meta.stacktrace.length > 0 && (
            <details>
              <summary>Stack traces ({meta.stacktrace.length})</summary>
              {meta.stacktrace.map((s, i) => (
                <pre key={i} className="stacktrace">
                  {s}
                </pre>
              ))}
            </details>
          )}
        </section>
      )}

      <section className="panel" aria-label="Body">
        <BodyViewer key={`${message.queueId}\u0000${message.id}\u0000${message.position ?? ''}`} message={message} />
      </section>
      <InspectMessagePanel message={message} />

      {meta.xDeath !== undefined && meta.xDeath.length > 0 && (
        <section className="panel" aria-label="Dead-letter history">
          <h3>Dead-letter history (x-death)</h3>
          <table className="kv-table x-death">
            <thead>
              <tr>
                <th className="num">Count</th>
                <th>Reason</th>
                <th>Queue</th>
                <th>Exchange</th>
                <th>Routing keys</th>
                <th>Time</th>
              </tr>
            </thead>
            <tbody>
              {meta.xDeath.map((d, i) => (
                <tr key={i}>
                  <td className="num">{count(d.count)}</td>
                  <td>
                    <span className={`reason-badge reason-${d.reason}`}>{d.reason}</span>
                  </td>
                  <td className="mono">{d.queue}</td>
                  <td className="mono">{d.exchange === '' ? <span className="muted">(default)</span> : d.exchange}</td>
                  <td className="mono">{d.routingKeys.join(', ')}</td>
                  <td title={absoluteTime(d.time)}>{d.time === null ? '—' : absoluteTime(d.time)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}

      {rows.length > 0 && (
        <section className="panel" aria-label="Broker metadata">
          <h3>Broker metadata</h3>
          <dl className="meta-grid">
            {rows.map(([k, v]) => (
              <div key={k} className="meta-item">
                <dt>{k}</dt>
                <dd>{v}</dd>
              </div>
            ))}
          </dl>
        </section>
      )}

      <KeyValueSection title="Headers / attributes" entries={headers} empty="No headers." pathPrefix="headers." keyMark={keyMark} />
      <KeyValueSection title="Properties" entries={properties} empty="No properties." pathPrefix="properties." keyMark={keyMark} />
    </article>
  );
}

/** The idempotency key's source fields (`headers.Idempotency-Key`…), its text, and the label naming the rule that found it. */
interface KeyMark {
  fields: ReadonlySet<string>;
  key: string;
  label: string;
}

/** Name/value table; the row the idempotency key was read from is highlighted like the key's body line, with the rule that found it. */
function KeyValueSection({ title, entries, empty, pathPrefix, keyMark }: { title: string; entries: [string, HeaderValue][]; empty: string; pathPrefix: string; keyMark: KeyMark | null }) {
  return (
    <section className="panel" aria-label={title}>
      <h3>
        {title} <span className="muted">({entries.length})</span>
      </h3>
      {entries.length === 0 ? (
        <div className="muted">{empty}</div>
      ) : (
        <table className="kv-table">
          <tbody>
            {entries.map(([k, v]) => {
              const text = headerValueText(v);
              if (keyMark === null || !keyMark.fields.has(`${pathPrefix}${k}`)) {
                return (
                  <tr key={k}>
                    <th className="mono">
                      <Revealed text={k} />
                    </th>
                    <td className="mono wrap-anywhere">
                      <Revealed text={text} />
                    </td>
                  </tr>
                );
              }
              // A key composed from several fields (CloudEvents source + id) contains this value rather than equals it: mark the whole value then.
              return (
                <tr key={k} className="key-row" data-testid="key-row">
                  <th className="mono">
                    <Revealed text={k} />
                  </th>
                  <td className="mono wrap-anywhere">
                    {text.includes(keyMark.key) ? markText(text, keyMark.key) : <mark>{text}</mark>}
                    <span className="anno">
                      <span className="field-class fc-identifier" data-testid="key-row-rule">
                        {keyMark.label}
                      </span>
                    </span>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** The metadata the broker gave, as label/value rows, in a fixed order; absent fields are skipped. */
function metaRows(m: MessageMeta): [string, ReactNode][] {
  const rows: [string, ReactNode][] = [];
  const time = (label: string, v: number | null | undefined): void => {
    if (v != null)
      rows.push([
        label,
        <>
          {absoluteTime(v)} <span className="muted">(<Time ms={v} />)</span>
        </>,
      ]);
  };
  if (m.state !== undefined) rows.push(['State', m.state]);
  time('Enqueued', m.enqueuedAt);
  time('First received', m.firstReceivedAt);
  if (m.receiveCount != null) rows.push(['Receive / delivery count', count(m.receiveCount)]);
  if (m.redelivered != null) rows.push(['Redelivered', m.redelivered ? 'yes' : 'no']);
  if (m.attemptsMade !== undefined) rows.push(['Attempts made', m.attemptsLimit != null ? `${m.attemptsMade} of ${m.attemptsLimit}` : count(m.attemptsMade)]);
  if (m.delayMs != null && m.delayMs > 0) rows.push(['Delay', duration(m.delayMs)]);
  time('Processed on', m.processedOn);
  time('Finished on', m.finishedOn);
  if (m.idleMs != null) rows.push(['Idle (pending)', duration(m.idleMs)]);
  if (m.consumerGroup != null) rows.push(['Consumer group', m.consumerGroup]);
  if (m.consumer != null) rows.push(['Consumer', m.consumer]);
  if (m.exchange != null) rows.push(['Exchange', m.exchange === '' ? '(default)' : m.exchange]);
  if (m.routingKey != null) rows.push(['Routing key', m.routingKey]);
  if (m.firstDeathReason != null) rows.push(['First death reason', m.firstDeathReason]);
  if (m.firstDeathQueue != null) rows.push(['First death queue', m.firstDeathQueue]);
  if (m.firstDeathExchange != null) rows.push(['First death exchange', m.firstDeathExchange === '' ? '(default)' : m.firstDeathExchange]);
  if (m.messageGroupId != null) rows.push(['Message group', m.messageGroupId]);
  if (m.messageDeduplicationId != null) rows.push([m.deduplicationIdSource === 'content' ? 'Deduplication id (content-based: SHA-256 of the body)' : 'Deduplication id', m.messageDeduplicationId]);
  if (m.sequenceNumber != null) rows.push(['Sequence number', m.sequenceNumber]);
  return rows;
}
