import { Suspense, lazy, useEffect, useMemo, useState } from 'react';
import type { QueueSummary } from '../../../shared/domain';
import {
  buildReport,
  checkRetrySchedule,
  formatMs,
  smallSampleWarning,
  validateRetryPolicy,
  type Confidence,
  type DurationFormat,
  type RetryPolicy,
  type TuningReport,
  type TuningSource,
} from '../../../shared/tuning';
import { errorInfoOf } from '../api';
import { useStore } from '../store';
import { queueKey } from '../store/types';
import { ErrorState, Loading } from './common';
import type { ChartMark } from './TuningCharts';
// uPlot's stylesheet (1.5 kB) loads with the panel, not with the lazy chart chunk: the build emits a
// lazy chunk's CSS as a file of its own that nothing loads, so the charts were unstyled (canvas and
// cursor layer out of place, the legend drawn over the plot — ui-pass).
import 'uplot/dist/uPlot.min.css';
import './TuningPanel.css';

// uPlot's code loads only when a chart is shown: it touches window.matchMedia at import
// time, and most sessions never open the tuning panel.
const TuningHistogramChart = lazy(() => import('./TuningCharts').then((m) => ({ default: m.TuningHistogramChart })));
const RetryHerdChart = lazy(() => import('./TuningCharts').then((m) => ({ default: m.RetryHerdChart })));
const chartFallback = <Loading label="Loading chart…" />;

const CONFIDENCE_LABEL: Record<Confidence, string> = {
  exact: 'exact per-message times',
  bounded: 'bounded per-message times',
  'mean-only': 'mean only (no tail)',
  imported: 'imported',
};

/** Parses "30s", "500ms", "2m", "1h" (ms); null when empty; NaN when unreadable. */
function parseDurationInput(text: string): number | null {
  const t = text.trim();
  if (t === '') return null;
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)$/i.exec(t);
  if (!m) return Number.NaN;
  const unit = (m[2] ?? 'ms').toLowerCase();
  return Number(m[1]) * (unit === 'ms' ? 1 : unit === 's' ? 1000 : unit === 'h' ? 3_600_000 : 60_000);
}

function pct(x: number): string {
  return `${(x * 100).toFixed(x > 0 && x < 0.001 ? 3 : 1)}%`;
}

/**
 * The per-queue tuning panel (issue 5): pick a measurement source (with its confidence), measure
 * (progress, cancel), see the histogram/CDF with the current and recommended timeouts, the numbers
 * and the reasons, copy the snippet or apply it (SQS, after a before/after confirmation), and check
 * the retry schedule (100 messages failing together, with and without full jitter).
 * Durations are ms internally; everything shown carries its unit. Texts are rendered as text.
 */
export function TuningPanel({ connectionId, summary }: { connectionId: string; summary: QueueSummary }) {
  const key = queueKey(connectionId, summary.id);
  const entry = useStore((s) => s.tuning[key]);
  const loadSources = useStore((s) => s.loadTuningSources);
  const runTuning = useStore((s) => s.runTuning);
  const cancelTuning = useStore((s) => s.cancelTuning);
  const applyTuning = useStore((s) => s.applyTuning);
  const [open, setOpen] = useState(false);
  const [source, setSource] = useState<TuningSource | null>(null);
  const [windowS, setWindowS] = useState('30');
  const [factor, setFactor] = useState('3');
  const [current, setCurrent] = useState('');
  const [override, setOverride] = useState('');
  const [fileText, setFileText] = useState('');
  const [fileLabel, setFileLabel] = useState<string | null>(null);
  const [format, setFormat] = useState<DurationFormat>('csv');
  const [unit, setUnit] = useState<'ms' | 's'>('ms');
  const [regex, setRegex] = useState('');
  const [field, setField] = useState('');
  const [inputError, setInputError] = useState<string | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [applyError, setApplyError] = useState<string | null>(null);
  const [applying, setApplying] = useState(false);
  const [copied, setCopied] = useState<number | null>(null);
  const [peekCounts, setPeekCounts] = useState(false);
  const [group, setGroup] = useState('');

  useEffect(() => {
    if (open && entry === undefined) void loadSources(connectionId, summary.id);
  }, [open, entry, loadSources, connectionId, summary.id]);

  const sources = entry?.sources?.sources ?? [];
  const chosen = sources.find((s) => s.source === source) ?? sources.find((s) => s.available) ?? null;
  const factorNum = Number(factor);
  const factorOk = Number.isFinite(factorNum) && factorNum >= 1 && factorNum <= 100;

  // The report for the factor shown (recomputed here: the measurement does not change).
  const report: TuningReport | null = useMemo(() => {
    const r = entry?.report ?? null;
    if (r === null || !factorOk) return r;
    try {
      const overrideMs = parseDurationInput(override);
      return buildReport({ queueId: r.queueId, queueName: r.queueName, target: r.target, measurement: r.measurement, current: r.current }, { factor: factorNum, consumerOverrideMs: overrideMs !== null && Number.isFinite(overrideMs) ? overrideMs : null });
    } catch {
      return r;
    }
  }, [entry?.report, factorNum, factorOk, override]);

  const start = (): void => {
    setInputError(null);
    if (chosen === null) return;
    const windowMs = Math.round(Number(windowS) * 1000);
    const currentMs = parseDurationInput(current);
    const overrideMs = parseDurationInput(override);
    if (chosen.needsWindow && (!Number.isFinite(windowMs) || windowMs < 1000 || windowMs > 3_600_000)) return setInputError('The window must be from 1 to 3600 seconds.');
    if (!factorOk) return setInputError('The safety factor must be a number from 1 to 100.');
    if (currentMs !== null && Number.isNaN(currentMs)) return setInputError('Current timeout: write a duration with its unit, e.g. 30s or 500ms.');
    if (overrideMs !== null && Number.isNaN(overrideMs)) return setInputError('Consumer override: write a duration with its unit, e.g. 60s.');
    if (chosen.source === 'file' && fileText.trim() === '') return setInputError('Choose a durations file or paste durations first.');
    void runTuning({
      connectionId,
      queueId: summary.id,
      source: chosen.source,
      factor: factorNum,
      ...(chosen.needsWindow ? { windowMs } : {}),
      ...(currentMs !== null ? { currentTimeoutMs: currentMs } : {}),
      ...(overrideMs !== null ? { consumerOverrideMs: overrideMs } : {}),
      ...(peekCounts && chosen.source === 'littles-law' ? { acceptSideEffects: true } : {}),
      ...(chosen.source === 'pel' && group.trim() !== '' ? { group: group.trim() } : {}),
      ...(chosen.source === 'file'
        ? { durations: { text: fileText, format, unit, ...(regex !== '' ? { regex } : {}), ...(field !== '' ? { field } : {}), ...(fileLabel !== null ? { label: fileLabel } : {}) } }
        : {}),
    });
  };

  const onFile = (file: File | undefined): void => {
    if (file === undefined) return;
    if (file.size > 16 * 1024 * 1024) {
      setInputError('The file is larger than 16 MiB.');
      return;
    }
    const lower = file.name.toLowerCase();
    if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson') || lower.endsWith('.json')) setFormat('jsonl');
    else if (lower.endsWith('.log') || lower.endsWith('.txt')) setFormat('log');
    else setFormat('csv');
    setFileLabel(file.name);
    void file.text().then(setFileText, (e: unknown) => setInputError(errorInfoOf(e).message));
  };

  const rec = report?.recommendation ?? null;
  const settings = entry?.sources?.settings ?? null;
  const canApply = entry?.sources?.canApply === true && rec?.target === 'sqs';
  const running = entry?.runStatus === 'measuring';
  const progress = entry?.operation?.processed ?? 0;

  const marks: ChartMark[] = [];
  if (rec?.current) marks.push({ label: 'current', ms: rec.current.timeoutMs, color: '#c92a2a' });
  if (rec) marks.push({ label: 'recommended', ms: rec.recommendedMs, color: '#1f8a4c' });

  const doApply = async (): Promise<void> => {
    if (!rec) return;
    setApplying(true);
    setApplyError(null);
    try {
      await applyTuning(connectionId, summary.id, rec.recommendedMs);
      setConfirming(false);
    } catch (e) {
      setApplyError(errorInfoOf(e).message);
    } finally {
      setApplying(false);
    }
  };

  const copy = (text: string, i: number): void => {
    void navigator.clipboard.writeText(text).then(() => setCopied(i), () => setCopied(null));
  };

  return (
    <details className="tuning" data-testid="tuning-panel" open={open} onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>
        <strong>Visibility timeout</strong> — measure processing time, get a recommended timeout, check retries
      </summary>
      {open && entry?.sourcesStatus === 'loading' && <Loading label="Reading the queue's settings…" />}
      {open && entry?.sourcesStatus === 'error' && entry.sourcesError !== null && <ErrorState error={entry.sourcesError} compact onRetry={() => void loadSources(connectionId, summary.id)} />}
      {open && entry?.sources && (
        <div className="tuning-body">
          {settings && (
            <p className="tuning-current" data-testid="tuning-settings">
              Current: <strong>{settings.timeoutMs === null ? 'unknown' : formatMs(settings.timeoutMs)}</strong> — {settings.timeoutSource}
              {settings.maxReceiveCount !== null && <> · dead-letters after {settings.maxReceiveCount} deliveries{settings.deadLetterTarget !== null ? ` (to ${settings.deadLetterTarget})` : ''}</>}
              {settings.brokerVersion !== null && <> · RabbitMQ {settings.brokerVersion}</>}
            </p>
          )}
          {settings?.notes.map((n, i) => (
            <p key={i} className="notice notice-info">
              {n}
            </p>
          ))}
          <div className="tuning-form">
            <label>
              Source{' '}
              <select aria-label="Measurement source" value={chosen?.source ?? ''} onChange={(e) => setSource(e.target.value as TuningSource)} data-testid="tuning-source">
                {sources.map((s) => (
                  <option key={s.source} value={s.source} disabled={!s.available}>
                    {s.source} — {CONFIDENCE_LABEL[s.confidence]}
                    {!s.available ? ' (unavailable)' : ''}
                  </option>
                ))}
              </select>
            </label>
            {chosen?.needsWindow === true && (
              <label>
                Window (s) <input className="tuning-num" aria-label="Window in seconds" value={windowS} onChange={(e) => setWindowS(e.target.value)} inputMode="numeric" />
              </label>
            )}
            {chosen?.source === 'pel' && (
              <label>
                Consumer group <input className="tuning-dur" aria-label="Consumer group" placeholder={settings?.group ?? 'first group'} value={group} onChange={(e) => setGroup(e.target.value)} />
              </label>
            )}
            <label>
              Safety factor × <input className="tuning-num" aria-label="Safety factor" value={factor} onChange={(e) => setFactor(e.target.value)} inputMode="decimal" />
            </label>
            <label title="The timeout in force when the broker cannot tell (BullMQ lockDuration, a stream claimer's min-idle-time, RabbitMQ consumer_timeout)">
              Current timeout <input aria-label="Current timeout" placeholder={settings?.timeoutMs !== null && settings?.timeoutMs !== undefined ? formatMs(settings.timeoutMs) : 'e.g. 30s'} value={current} onChange={(e) => setCurrent(e.target.value)} className="tuning-dur" />
            </label>
            {settings?.target === 'sqs' && (
              <label title="A VisibilityTimeout your consumer passes to ReceiveMessage overrides the queue's">
                Consumer override <input aria-label="Consumer override" placeholder="none" value={override} onChange={(e) => setOverride(e.target.value)} className="tuning-dur" />
              </label>
            )}
            {running ? (
              <button type="button" className="btn" onClick={() => void cancelTuning(connectionId, summary.id)}>
                Cancel
              </button>
            ) : (
              <button type="button" className="btn btn-primary" onClick={start} disabled={chosen === null} data-testid="tuning-measure">
                Measure
              </button>
            )}
          </div>
          {settings?.target === 'sqs' && chosen?.source === 'littles-law' && (
            <label className="tuning-peek">
              <input type="checkbox" checked={peekCounts} onChange={(e) => setPeekCounts(e.target.checked)} /> Also read the ApproximateReceiveCount of up to 10 messages (redelivery signal). Each read counts as a receive
              {settings.maxReceiveCount !== null ? `: a message at maxReceiveCount ${settings.maxReceiveCount} would move to the DLQ` : ''}.
            </label>
          )}
          {chosen && (
            <p className="tuning-source-note" data-testid="tuning-confidence">
              <span className={`chip tuning-conf-${chosen.confidence}`}>{CONFIDENCE_LABEL[chosen.confidence]}</span> {chosen.measures}. {chosen.confidenceNote}
              {!chosen.available && chosen.unavailableReason !== undefined && <> Unavailable: {chosen.unavailableReason}</>}
            </p>
          )}
          {chosen?.source === 'file' && (
            <div className="tuning-file">
              <label>
                Durations file <input type="file" aria-label="Durations file" accept=".csv,.tsv,.jsonl,.ndjson,.json,.log,.txt" onChange={(e) => onFile(e.target.files?.[0])} />
              </label>
              <label>
                Format{' '}
                <select aria-label="Durations format" value={format} onChange={(e) => setFormat(e.target.value as DurationFormat)}>
                  <option value="csv">CSV</option>
                  <option value="jsonl">JSON Lines</option>
                  <option value="log">log lines + regex</option>
                </select>
              </label>
              <label>
                Unit{' '}
                <select aria-label="Durations unit" value={unit} onChange={(e) => setUnit(e.target.value as 'ms' | 's')}>
                  <option value="ms">ms</option>
                  <option value="s">s</option>
                </select>
              </label>
              {format === 'log' ? (
                <label>
                  Regex <input aria-label="Regex" placeholder="took (\d+)ms" value={regex} onChange={(e) => setRegex(e.target.value)} />
                </label>
              ) : (
                <label>
                  Field <input aria-label="Field" placeholder="auto (duration_ms, duration…)" value={field} onChange={(e) => setField(e.target.value)} />
                </label>
              )}
              <textarea aria-label="Durations" placeholder="…or paste durations here" value={fileText} onChange={(e) => {
                setFileText(e.target.value);
                setFileLabel(null);
              }} rows={3} />
            </div>
          )}
          {inputError !== null && (
            <p className="notice notice-warn" role="alert">
              {inputError}
            </p>
          )}
          {running && (
            <div className="tuning-progress" data-testid="tuning-progress">
              <progress max={1000} value={progress} /> measuring… {Math.round(progress / 10)}%
            </div>
          )}
          {entry.runStatus === 'error' && entry.runError !== null && <ErrorState error={entry.runError} compact />}
          {entry.runStatus === 'cancelled' && <p className="notice notice-info">Measurement cancelled.</p>}
          {report && entry.runStatus === 'ready' && <TuningReportView report={report} marks={marks} copied={copied} onCopy={copy} />}
          {rec && canApply && entry.runStatus === 'ready' && (
            <div className="tuning-apply">
              {!confirming ? (
                <button type="button" className="btn btn-warning" onClick={() => setConfirming(true)} data-testid="tuning-apply">
                  Apply to the queue…
                </button>
              ) : (
                <div className="tuning-confirm" role="dialog" aria-label="Confirm the change" data-testid="tuning-confirm">
                  <p>
                    Change <code>VisibilityTimeout</code> of <strong>{summary.name}</strong>:
                  </p>
                  <p className="tuning-diff" data-testid="tuning-diff">
                    <span className="tuning-before">{settings?.timeoutMs !== null && settings?.timeoutMs !== undefined ? `${settings.timeoutMs / 1000} s` : '?'}</span> → <span className="tuning-after">{rec.recommendedMs / 1000} s</span>
                  </p>
                  <p className="muted">SetQueueAttributes on the broker; recorded in the audit log. Consumers that pass their own VisibilityTimeout to ReceiveMessage are not affected.</p>
                  {applyError !== null && (
                    <p className="notice notice-warn" role="alert">
                      {applyError}
                    </p>
                  )}
                  <button type="button" className="btn btn-primary" onClick={() => void doApply()} disabled={applying} data-testid="tuning-confirm-apply">
                    {applying ? 'Applying…' : 'Apply'}
                  </button>{' '}
                  <button type="button" className="btn" onClick={() => setConfirming(false)} disabled={applying}>
                    Cancel
                  </button>
                </div>
              )}
            </div>
          )}
          {entry.applied && (
            <p className="notice notice-info" data-testid="tuning-applied">
              Applied: {entry.applied.setting} {entry.applied.before[entry.applied.setting] ?? '?'} s → {entry.applied.after[entry.applied.setting] ?? '?'} s (logged in {entry.applied.auditLog}).
            </p>
          )}
          <RetryCheck key={`${report?.retry?.policy.type ?? ''}${settings?.retryPolicy?.delayMs ?? ''}`} initial={report?.retry?.policy ?? settings?.retryPolicy ?? null} />
        </div>
      )}
    </details>
  );
}

function TuningReportView({ report, marks, copied, onCopy }: { report: TuningReport; marks: ChartMark[]; copied: number | null; onCopy: (text: string, i: number) => void }) {
  const s = report.stats;
  const m = report.measurement;
  const rec = report.recommendation;
  return (
    <div className="tuning-report" data-testid="tuning-report">
      {s ? (
        <>
          <dl className="tuning-stats" data-testid="tuning-stats">
            <div>
              <dt>samples</dt>
              <dd>{s.n.toLocaleString('en-US')}</dd>
            </div>
            {(
              [
                ['mean', s.meanMs],
                ['p50', s.p50Ms],
                ['p90', s.p90Ms],
                ['p95', s.p95Ms],
                ['p99', s.p99Ms],
                ['max', s.maxMs],
              ] as const
            ).map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd data-testid={`tuning-${k}`}>{formatMs(v)}</dd>
              </div>
            ))}
          </dl>
          <p className="muted" data-testid="tuning-samples-used">
            Samples used: {s.n.toLocaleString('en-US')} — {m.measures}
            {m.endedAt !== null ? `, read at ${new Date(m.endedAt).toLocaleTimeString()}` : ''}. <code>queuescope tune</code> with the same source reads the same samples with the same defaults; its numbers differ only when jobs finished (or were removed) in between.
          </p>
          {smallSampleWarning(s.n) !== null && (
            <p className="notice notice-warn" data-testid="tuning-small-sample">
              {smallSampleWarning(s.n)}
            </p>
          )}
          {m.sampleErrorMs !== null && m.sampleErrorMs > 0 && <p className="muted">Each sample ± {formatMs(m.sampleErrorMs)} (sampling interval).</p>}
          {s.longTail && (
            <p className="notice notice-warn" data-testid="tuning-long-tail">
              Long tail: p99/p50 = {s.tailRatio?.toFixed(1)} (&gt; 5). Prefer lease extension over one huge timeout.
            </p>
          )}
          <Suspense fallback={chartFallback}>
            <TuningHistogramChart stats={s} marks={marks} />
          </Suspense>
        </>
      ) : m.meanMs !== null ? (
        <p data-testid="tuning-mean">
          Mean time in flight: <strong>{formatMs(m.meanMs)}</strong> — Little&apos;s law gives a mean, not a tail; no histogram.
        </p>
      ) : null}
      {m.redeliveries && (
        <p className="muted" data-testid="tuning-redeliveries">
          Redeliveries: {m.redeliveries.redelivered} of {m.redeliveries.observed} observed{m.redeliveries.ratePerSecond !== null ? ` (${m.redeliveries.ratePerSecond.toFixed(2)}/s)` : ''}. {m.redeliveries.note}
        </p>
      )}
      {rec ? (
        <div className="tuning-rec" data-testid="tuning-recommendation">
          <h4>
            Recommended <code>{rec.setting}</code>: <span data-testid="tuning-recommended">{rec.unit === 's' ? `${rec.recommendedMs / 1000} s` : formatMs(rec.recommendedMs)}</span>
          </h4>
          <ul>
            {rec.reasons.map((r, i) => (
              <li key={i}>{r}</li>
            ))}
          </ul>
          {rec.current && (
            <p className={rec.current.duplicateShare !== null && rec.current.duplicateShare > 0 ? 'notice notice-warn' : 'notice notice-info'} data-testid="tuning-current-risk">
              {rec.current.verdict}
              {rec.current.duplicateShare !== null && <> (duplicate share {pct(rec.current.duplicateShare)})</>}
            </p>
          )}
          <p className="muted">If processing outlives it: {rec.whatHappens}.</p>
          {rec.brokerNotes.map((n, i) => (
            <p key={i} className="muted">
              {n}
            </p>
          ))}
          <p data-testid="tuning-lease">
            <strong>Lease extension: {rec.leaseExtension.advised ? 'advised' : 'optional'}.</strong> {rec.leaseExtension.why} {rec.leaseExtension.advised ? rec.leaseExtension.how : ''}
          </p>
          {[...rec.snippets, ...(rec.leaseExtension.advised ? [rec.leaseExtension.snippet] : [])].map((sn, i) => (
            <div key={i} className="tuning-snippet">
              <pre className="body-pre" data-testid="tuning-snippet">
                {sn.text}
              </pre>
              <button type="button" className="btn btn-small" onClick={() => onCopy(sn.text, i)}>
                {copied === i ? 'Copied' : 'Copy'}
              </button>
            </div>
          ))}
        </div>
      ) : (
        <p className="notice notice-warn">No recommendation: {report.noRecommendationReason}</p>
      )}
      {m.notes.map((n, i) => (
        <p key={i} className="muted">
          {n}
        </p>
      ))}
    </div>
  );
}

/** The retry-schedule check: policy inputs (prefilled from the broker), schedule, flags and the herd plot. */
function RetryCheck({ initial }: { initial: RetryPolicy | null }) {
  const [policy, setPolicy] = useState<RetryPolicy>(initial ?? { attempts: 5, type: 'exponential', delayMs: 1000, jitter: 0, capMs: null });
  const problem = validateRetryPolicy(policy);
  const schedule = useMemo(() => (problem === null ? checkRetrySchedule(policy) : null), [policy, problem]);
  const num = (v: string): number => (v.trim() === '' ? Number.NaN : Number(v));
  return (
    <div className="tuning-retry" data-testid="retry-check">
      <h4>Retry schedule</h4>
      {initial === null && (
        <p className="muted" data-testid="retry-example">
          No retry policy was found on the broker (BullMQ job options, or an SQS RedrivePolicy): this is an example — enter yours.
        </p>
      )}
      <div className="tuning-form">
        <label>
          Deliveries <input className="tuning-num" aria-label="Deliveries (attempts)" value={String(policy.attempts)} onChange={(e) => setPolicy({ ...policy, attempts: num(e.target.value) })} />
        </label>
        <label>
          Backoff{' '}
          <select aria-label="Backoff type" value={policy.type} onChange={(e) => setPolicy({ ...policy, type: e.target.value as RetryPolicy['type'] })}>
            <option value="fixed">fixed</option>
            <option value="exponential">exponential</option>
            <option value="visibility-timeout">SQS visibility timeout</option>
          </select>
        </label>
        <label>
          Delay (ms) <input className="tuning-num" aria-label="Delay in ms" value={String(policy.delayMs)} onChange={(e) => setPolicy({ ...policy, delayMs: num(e.target.value) })} />
        </label>
        <label>
          Jitter (0–1) <input className="tuning-num" aria-label="Jitter" value={String(policy.jitter)} onChange={(e) => setPolicy({ ...policy, jitter: num(e.target.value) })} />
        </label>
        <label>
          Cap (ms) <input className="tuning-num" aria-label="Cap in ms" placeholder="none" value={policy.capMs === null ? '' : String(policy.capMs)} onChange={(e) => setPolicy({ ...policy, capMs: e.target.value.trim() === '' ? null : num(e.target.value) })} />
        </label>
      </div>
      {problem !== null && <p className="notice notice-warn">{problem}.</p>}
      {schedule && (
        <>
          <p data-testid="retry-summary">
            Waits: {schedule.steps.map((s) => formatMs(s.delayMs)).join(', ') || 'none'} · time to DLQ (no jitter): <strong>{formatMs(schedule.totalToDlqMs)}</strong>
          </p>
          {schedule.flags.map((f) => (
            <p key={f.code} className="notice notice-warn" data-testid="retry-flag" data-code={f.code}>
              {f.message}
            </p>
          ))}
          {schedule.steps.length > 0 && (
            <Suspense fallback={chartFallback}>
              <RetryHerdChart schedule={schedule} />
            </Suspense>
          )}
        </>
      )}
    </div>
  );
}
