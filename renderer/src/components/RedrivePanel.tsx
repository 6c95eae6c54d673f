import { useEffect, useId, useMemo, useRef, useState } from 'react';
import type { ApiInput } from '../../../shared/api/contract';
import { TERMINAL_STATUSES, type OperationSnapshot, type QueueSummary } from '../../../shared/domain';
import { DEFAULT_PENDING_MIN_IDLE_MS, describeMovedOn, formatIdleThreshold, MAX_PENDING_MIN_IDLE_MS, type FailureGroup, type MovedOnByReading, type RedrivePlan, type RedriveResult } from '../../../shared/redrive/types';
import { count, duration } from '../lib/format';
import { useStore } from '../store';
import { queueKey } from '../store/types';
import { ErrorState, Loading } from './common';
import { RedriveHistory } from './RedriveHistory';
import { escapeHidden } from '../lib/visible-text';
import { useDialogClose } from '../lib/hooks';
import './redrive.css';

/** True when the queue is something to redrive from: a DLQ, or a queue with failed jobs (BullMQ). */
export function isRedriveSource(q: QueueSummary): boolean {
  return q.isDeadLetterQueue || (q.capabilities.peekStates.includes('failed') && (q.counts.failed ?? 0) > 0);
}

const CLASS_TEXT: Record<FailureGroup['class'], string> = { 'non-retryable': 'non-retryable', transient: 'transient', unknown: 'unknown' };

/**
 * The DLQ view's redrive section: messages grouped by failure class and reason (a dry run of the
 * whole DLQ), a selection (groups, or the messages checked in the list), options (target, one per
 * idempotency key, rate, batch), a dry-run preview, a confirm dialog with counts, target and loop
 * warning, the run's progress with rate and ETA, pause / resume / cancel, and the result. Message
 * text is rendered as text only.
 */
export function RedrivePanel({ connectionId, summary, queues, checkedIds }: { connectionId: string; summary: QueueSummary; queues: readonly QueueSummary[]; checkedIds: readonly string[] }) {
  const key = queueKey(connectionId, summary.id);
  const st = useStore((s) => s.redrive[key]);
  const analyse = useStore((s) => s.analyseDlq);
  const cancelAnalysis = useStore((s) => s.cancelAnalysis);
  const preview = useStore((s) => s.previewRedrive);
  const clearPreview = useStore((s) => s.clearPreview);
  const start = useStore((s) => s.startRedrive);
  const pause = useStore((s) => s.pauseRedrive);
  const resume = useStore((s) => s.resumeRedrive);
  const cancel = useStore((s) => s.cancelRedrive);
  const dismiss = useStore((s) => s.dismissRedrive);
  const titleId = useId();

  const state = summary.capabilities.peekStates.includes('failed') ? 'failed' : undefined;
  const analysis = st?.analysis ?? null;
  // Choices per failure group, for the analysis they were made on (a new analysis starts over).
  const [choices, setChoices] = useState<{ of: RedrivePlan | null; checked: Record<string, boolean> }>({ of: null, checked: {} });
  const [target, setTarget] = useState<string>('');
  const [dedupe, setDedupe] = useState(false);
  const [includePending, setIncludePending] = useState(false);
  // Seconds a pending entry must have been idle to move without "Include pending entries" (the CLI's --pending-min-idle).
  const [pendingIdle, setPendingIdle] = useState(String(DEFAULT_PENDING_MIN_IDLE_MS / 1000));
  // A DLQ with consumer groups (a Redis stream) can have entries a consumer is processing right now.
  const hasPendingStates = summary.capabilities.peekStates.some((s) => s.startsWith('pending:'));
  const [rate, setRate] = useState('');
  const [batch, setBatch] = useState('100');
  const [usePicked, setUsePicked] = useState(false);
  const [confirmLoop, setConfirmLoop] = useState(false);
  // Reading this DLQ can make the broker move messages on (an SQS DLQ with its own RedrivePolicy): refused until accepted.
  const [acceptSideEffects, setAcceptSideEffects] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [showHistory, setShowHistory] = useState(false);

  const groups = analysis?.groups ?? [];
  // Non-retryable groups start unchecked (they stay in the DLQ unless chosen).
  const isChecked = (g: FailureGroup): boolean => (choices.of === analysis ? choices.checked[g.groupKey] : undefined) ?? g.class !== 'non-retryable';
  const setChecked = (g: FailureGroup, v: boolean): void => setChoices((c) => ({ of: analysis, checked: { ...(c.of === analysis ? c.checked : {}), [g.groupKey]: v } }));
  const chosen = groups.filter(isChecked);
  const includeNonRetryable = chosen.some((g) => g.class === 'non-retryable');
  const complete = groups.length > 0 && !groups.some((g) => g.groupKey === 'other');
  // Everything, or everything but exactly the non-retryable groups: the whole DLQ (the engine leaves
  // non-retryable messages behind with their reason, and the native move stays possible).
  const allChosen = complete && groups.every((g) => isChecked(g) || (g.class === 'non-retryable' && !includeNonRetryable));
  const rateNum = rate.trim() === '' ? null : Number(rate);
  const batchNum = Number(batch);
  const usesPendingIdle = hasPendingStates && !includePending;
  const pendingIdleMs = pendingIdle.trim() === '' ? NaN : Math.round(Number(pendingIdle) * 1000);
  const optionsError =
    rateNum !== null && (!Number.isFinite(rateNum) || rateNum <= 0)
      ? 'Rate must be a number above 0 (or empty for no limit).'
      : !Number.isInteger(batchNum) || batchNum < 1 || batchNum > 1000
        ? 'Batch size must be a whole number from 1 to 1000.'
        : usesPendingIdle && (!Number.isSafeInteger(pendingIdleMs) || pendingIdleMs < 1 || pendingIdleMs > MAX_PENDING_MIN_IDLE_MS)
          ? `Pending entries idle time must be a number of seconds from 0.001 to ${String(MAX_PENDING_MIN_IDLE_MS / 1000)} (7 days).`
          : null;
  const pendingMinIdleMs = usesPendingIdle && Number.isSafeInteger(pendingIdleMs) && pendingIdleMs !== DEFAULT_PENDING_MIN_IDLE_MS ? pendingIdleMs : null;

  const base = useMemo(() => {
    const selection: ApiInput<'redrive.plan'>['selection'] =
      usePicked && checkedIds.length > 0 ? { kind: 'ids', ids: [...checkedIds] } : allChosen ? { kind: 'all' } : { kind: 'filter', filter: { groupKeys: chosen.map((g) => g.groupKey) } };
    return {
      connectionId,
      dlqId: summary.id,
      ...(state !== undefined ? { state } : {}),
      selection,
      includeNonRetryable: usePicked ? true : includeNonRetryable,
      dedupeByKey: dedupe,
      ...(hasPendingStates && includePending ? { includePending: true } : {}),
      ...(pendingMinIdleMs !== null ? { pendingMinIdleMs } : {}),
      targetQueueId: target === '' ? null : target,
      confirmLoop,
      ...(acceptSideEffects ? { acceptSideEffects: true } : {}),
    };
  }, [usePicked, checkedIds, allChosen, chosen, connectionId, summary.id, state, includeNonRetryable, dedupe, hasPendingStates, includePending, pendingMinIdleMs, target, confirmLoop, acceptSideEffects]);

  // Any change of selection or options invalidates the preview.
  const baseJson = JSON.stringify(base);
  const lastPreviewed = useRef<string | null>(null);
  useEffect(() => {
    if (lastPreviewed.current !== null && lastPreviewed.current !== baseJson) clearPreview(connectionId, summary.id);
  }, [baseJson, clearPreview, connectionId, summary.id]);

  const runPreview = (): void => {
    lastPreviewed.current = baseJson;
    void preview({ ...base, samples: 10 });
  };
  const op = st?.operation ?? null;
  const plan = st?.preview ?? null;
  const runStart = (): void => {
    setConfirming(false);
    void start({ ...base, ...startLimit(plan, base.selection.kind), ratePerSecond: rateNum, batchSize: batchNum });
  };
  const loopError = st?.error?.details?.loop === true;
  const sideEffectsError = st?.error?.code === 'PEEK_REFUSED';
  const analyseAll = (): void => {
    void analyse({ connectionId, dlqId: summary.id, ...(state !== undefined ? { state } : {}), selection: { kind: 'all' }, includeNonRetryable: true, samples: 0, ...(acceptSideEffects ? { acceptSideEffects: true } : {}) });
  };

  return (
    <section className="redrive" aria-labelledby={titleId} data-testid="redrive-panel">
      <div className="redrive-head">
        <h2 id={titleId}>Redrive</h2>
        <span className="spacer" />
        <button type="button" className="btn btn-small btn-ghost" onClick={() => setShowHistory((v) => !v)} aria-expanded={showHistory}>
          {showHistory ? 'Hide history' : 'History'}
        </button>
      </div>
      {showHistory && <RedriveHistory connectionId={connectionId} queues={queues.filter((q) => q.broker === summary.broker)} />}
      {st?.error != null && !loopError && !sideEffectsError && <ErrorState error={st.error} compact />}
      {(sideEffectsError || acceptSideEffects) && (
        <div className="notice notice-warn" role="alert" data-testid="redrive-side-effects">
          {sideEffectsError && st.error != null && <p>{st.error.message}</p>}
          <label>
            <input type="checkbox" checked={acceptSideEffects} onChange={(e) => setAcceptSideEffects(e.target.checked)} /> Accept side effects: read this DLQ anyway (messages at its
            own limit are moved on to the next queue by the broker, not to the target)
          </label>
        </div>
      )}

      {op !== null ? (
        <RedriveProgress
          op={op}
          onPause={() => void pause(connectionId, summary.id)}
          onResume={() => void resume(connectionId, summary.id)}
          onCancel={() => void cancel(connectionId, summary.id)}
          onDismiss={() => dismiss(connectionId, summary.id)}
        />
      ) : analysis === null ? (
        <div className="redrive-start">
          {st?.analysing === true ? (
            <AnalysisProgress op={st.analysisOp} onCancel={() => void cancelAnalysis(connectionId, summary.id)} />
          ) : (
            <>
              <p className="muted">
                Groups the messages by why they failed and shows what a redrive would move where. This is a dry run: nothing is moved
                {summary.capabilities.canPeekNonDestructively ? '' : '; messages are read and put back'}.
              </p>
              <button type="button" className="btn btn-primary" onClick={analyseAll}>
                Analyse for redrive
              </button>
            </>
          )}
        </div>
      ) : (
        <>
          <MovedOnNotice movedOn={analysis.movedOn} who="This analysis's receives" dlq={analysis.dlq.name} />
          {analysis.unseen !== undefined && (
            <div className="notice notice-warn" data-testid="redrive-analysis-unseen">
              <strong>Not seen{analysis.unseen.count !== null ? `: ${count(analysis.unseen.count)}` : ''}</strong> — the groups below cover only the {count(analysis.examined)} examined. {escapeHidden(analysis.unseen.reason)}
            </div>
          )}
          <div className="redrive-summary" data-testid="redrive-analysis">
            {count(analysis.examined)} message{analysis.examined === 1 ? '' : 's'} in {groups.length} group{groups.length === 1 ? '' : 's'}
            {analysis.wastedRetries > 0 && (
              <span className="danger-text">
                {' '}
                · {count(analysis.wastedRetries)} used all their retries on a non-retryable error (wasted retries)
              </span>
            )}
          </div>
          <table className="redrive-groups" aria-label="Failure groups">
            <thead>
              <tr>
                <th scope="col">Redrive</th>
                <th scope="col">Class</th>
                <th scope="col">Error</th>
                <th scope="col">Reason</th>
                <th scope="col" className="num">
                  Messages
                </th>
              </tr>
            </thead>
            <tbody>
              {groups.map((g) => (
                <tr key={g.groupKey} data-testid="redrive-group" data-class={g.class}>
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`Redrive ${g.label} (${g.class})`}
                      checked={isChecked(g)}
                      disabled={usePicked}
                      onChange={(e) => setChecked(g, e.target.checked)}
                    />
                  </td>
                  <td>
                    <span className={`badge badge-${g.class}`}>{CLASS_TEXT[g.class]}</span>
                  </td>
                  <td className="mono">{g.label}</td>
                  <td className="reason" title={g.reason ?? ''}>
                    {g.reason ?? '—'}
                    {g.class === 'non-retryable' && !isChecked(g) && <span className="muted"> · stays in the DLQ (non-retryable)</span>}
                    {g.wastedRetries > 0 && <span className="danger-text"> · {count(g.wastedRetries)} wasted retries</span>}
                  </td>
                  <td className="num">{count(g.count)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <div className="redrive-options">
            {checkedIds.length > 0 && (
              <label>
                <input type="checkbox" checked={usePicked} onChange={(e) => setUsePicked(e.target.checked)} /> Only the {count(checkedIds.length)} message{checkedIds.length === 1 ? '' : 's'} selected in the list
              </label>
            )}
            <label>
              Target{' '}
              <select value={target} onChange={(e) => setTarget(e.target.value)} aria-label="Target queue">
                <option value="">Original source (automatic)</option>
                {queues
                  .filter((q) => q.broker === summary.broker)
                  .map((q) => (
                    <option key={q.id} value={q.id}>
                      {escapeHidden(q.name)}
                      {q.id === summary.id ? ' (this DLQ)' : ''}
                    </option>
                  ))}
              </select>
            </label>
            <label>
              <input type="checkbox" checked={dedupe} onChange={(e) => setDedupe(e.target.checked)} /> One message per idempotency key
            </label>
            {hasPendingStates && (
              <label
                title={`Entries of a consumer group's pending list delivered less than ${usesPendingIdle && Number.isSafeInteger(pendingIdleMs) && pendingIdleMs >= 1 ? formatIdleThreshold(pendingIdleMs) : formatIdleThreshold(DEFAULT_PENDING_MIN_IDLE_MS)} ago are likely being processed now: by default they stay in the DLQ.`}
              >
                <input type="checkbox" checked={includePending} onChange={(e) => setIncludePending(e.target.checked)} /> Include pending entries
              </label>
            )}
            {usesPendingIdle && (
              <label title="A pending entry idle (since its last delivery) for at least this long is taken as left by a consumer that stopped, and moves; one idle for less stays. Raise it for consumers that take longer per entry.">
                Pending entries move after{' '}
                <input className="input-narrow" value={pendingIdle} onChange={(e) => setPendingIdle(e.target.value)} aria-label="Pending entries idle time (seconds)" inputMode="decimal" /> s idle
              </label>
            )}
            <label>
              Rate{' '}
              <input className="input-narrow" value={rate} onChange={(e) => setRate(e.target.value)} placeholder="no limit" aria-label="Rate (messages per second)" inputMode="decimal" /> msg/s
            </label>
            <label>
              Batch <input className="input-narrow" value={batch} onChange={(e) => setBatch(e.target.value)} aria-label="Batch size" inputMode="numeric" />
            </label>
            {(loopError || (plan?.loops.length ?? 0) > 0) && (
              <label className="danger-text">
                <input type="checkbox" checked={confirmLoop} onChange={(e) => setConfirmLoop(e.target.checked)} /> Allow a target that dead-letters straight back into this DLQ
              </label>
            )}
          </div>
          {loopError && st.error != null && <div className="notice notice-warn">{st.error.message}</div>}
          {optionsError !== null && <div className="notice notice-warn">{optionsError}</div>}
          <div className="redrive-actions">
            <button type="button" className="btn" onClick={runPreview} disabled={st?.previewing === true || optionsError !== null || (!usePicked && chosen.length === 0)}>
              {st?.previewing === true ? 'Previewing…' : 'Preview (dry run)'}
            </button>
            <button
              type="button"
              className="btn btn-primary"
              onClick={() => setConfirming(true)}
              disabled={plan === null || plan.toMove === 0 || optionsError !== null || st?.previewing === true}
              title={plan === null ? 'Preview first: the dry run shows exactly what moves where' : undefined}
            >
              {plan === null ? 'Redrive…' : `Redrive ${count(plan.toMove)}…`}
            </button>
            <button type="button" className="btn btn-ghost" onClick={analyseAll}>
              Re-analyse
            </button>
          </div>
          {plan !== null && <PlanView plan={plan} />}
        </>
      )}
      {confirming && plan !== null && (
        <RedriveConfirm plan={plan} dlqName={escapeHidden(summary.name)} rate={rateNum} loopConfirmed={confirmLoop} onConfirm={runStart} onCancel={() => setConfirming(false)} />
      )}
    </section>
  );
}

/** The analysis (a dry run of the whole DLQ) in progress, with Cancel. */
function AnalysisProgress({ op, onCancel }: { op: OperationSnapshot | null; onCancel: () => void }) {
  if (op === null) return <Loading label="Reading the dead-letter queue (dry run)…" />;
  const pct = op.total !== null && op.total > 0 ? Math.min(100, (op.processed / op.total) * 100) : null;
  return (
    <div className="redrive-run" data-testid="redrive-analysing">
      <div className="op-meta">
        Reading the dead-letter queue (dry run): {count(op.processed)}
        {op.total !== null ? ` of ${count(op.total)}` : ''} messages
        {op.rate !== null ? ` · ${Math.round(op.rate)}/s` : ''}
        {op.etaMs !== null ? ` · ${duration(op.etaMs)} left` : ''}
      </div>
      <div className="progress" role="progressbar" aria-label="Analysis progress" aria-valuemin={0} aria-valuemax={op.total ?? undefined} aria-valuenow={op.processed}>
        <div className={pct === null ? 'progress-bar indeterminate' : 'progress-bar'} style={{ width: `${pct ?? 0}%` }} />
      </div>
      <div className="op-actions">
        <button type="button" className="btn btn-small" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </div>
  );
}

/**
 * Warns about messages that were selected but cannot move (e.g. a body over the read limit): their
 * count, ids (first 20) and why. They stay in the DLQ. Ids and reasons are untrusted: rendered as text.
 */
export function CannotMoveNotice({ plan }: { plan: RedrivePlan }) {
  if (plan.failed === 0) return null;
  const shown = plan.cannotMove.slice(0, 20);
  const overLimit = plan.cannotMove.some((c) => c.reason.includes('read limit'));
  return (
    <div className="notice notice-warn" role="alert" data-testid="redrive-cannot-move">
      <strong>
        {count(plan.failed)} message{plan.failed === 1 ? '' : 's'} cannot be moved
      </strong>{' '}
      and will stay in the dead-letter queue:
      <ul>
        {shown.map((c) => (
          <li key={c.id}>
            <span className="mono">{c.id}</span> — {c.reason}
          </li>
        ))}
        {plan.failed > shown.length && <li>… and {count(plan.failed - shown.length)} more</li>}
      </ul>
      {overLimit && (
        <span className="muted">
          Bodies larger than the {count(plan.maxBodyBytes)}-byte read limit are never moved (they could not be backed up whole). The CLI moves them with --max-body-bytes
          (up to 128 MiB; memory grows with it).
        </span>
      )}
    </div>
  );
}

/** The dry run's counts per target and per reason for staying. */
/**
 * Messages the reads moved on to another queue instead of returning them (an SQS DLQ with its own
 * RedrivePolicy, read with the side effects accepted): how many, where to, how measured. Nothing
 * when none were.
 */
export function MovedOnNotice({ movedOn, who, dlq }: { movedOn: MovedOnByReading | undefined; who: string; dlq: string }) {
  const text = describeMovedOn(movedOn, who, dlq);
  if (text === null) return null;
  return (
    <div className="notice notice-warn" role="alert" data-testid="redrive-moved-on">
      <strong>Moved on, not redriven:</strong> {escapeHidden(text)}
    </div>
  );
}

/**
 * The notes of the dry run's check of the targets for idempotency keys already waiting there
 * (`plan.keysInTarget`): a target not checked (its reads have side effects, or the check could not
 * run) or checked only in part. Its findings are `plan.warnings`, shown with the others.
 */
export function TargetKeysNotes({ plan }: { plan: RedrivePlan }) {
  const notes = (plan.keysInTarget ?? []).map((k) => k.note).filter((n): n is string => n !== null);
  if (notes.length === 0) return null;
  return (
    <div data-testid="redrive-target-keys">
      {notes.map((n) => (
        <div key={n} className="muted">
          {escapeHidden(n)}
        </div>
      ))}
    </div>
  );
}

function PlanView({ plan }: { plan: RedrivePlan }) {
  return (
    <div className="redrive-plan" data-testid="redrive-preview">
      <div>
        <strong>Would move {count(plan.toMove)}</strong> of {count(plan.examined)} examined
        {plan.targets.length > 0 ? ':' : '.'}
      </div>
      <ul>
        {plan.targets.map((t) => (
          <li key={t.queueId}>
            {count(t.count)} → <span className="mono">{escapeHidden(t.queueName)}</span> <span className="muted">({t.via})</span>
          </li>
        ))}
      </ul>
      {plan.toSkip > 0 && (
        <>
          <div>
            <strong>Would stay {count(plan.toSkip)}</strong>:
          </div>
          <ul>
            {plan.skipped.map((s) => (
              <li key={s.reason}>
                {count(s.count)} · {s.reason}
              </li>
            ))}
          </ul>
        </>
      )}
      <CannotMoveNotice plan={plan} />
      <MovedOnNotice movedOn={plan.movedOn} who="This preview's receives" dlq={plan.dlq.name} />
      {plan.unseen !== undefined && (
        <div className="notice notice-warn" data-testid="redrive-unseen">
          <strong>Not seen{plan.unseen.count !== null ? `: ${count(plan.unseen.count)}` : ''}</strong> — these counts cover only the {count(plan.examined)} examined. {escapeHidden(plan.unseen.reason)}
        </div>
      )}
      {plan.loops.map((l) => (
        <div key={l.queueId} className="notice notice-warn" role="alert">
          Loop: {l.loop}
        </div>
      ))}
      {plan.warnings.map((w) => (
        <div key={w} className="notice notice-info">
          {w}
        </div>
      ))}
      <TargetKeysNotes plan={plan} />
      <div className="muted">Native move: {plan.native.wouldUse ? `yes — ${plan.native.why}` : `no — ${plan.native.why}`}</div>
    </div>
  );
}

/**
 * The `limit` a confirmed run starts with: the number of messages its dry run examined, so the run
 * does what the confirm dialog says ("Redrive 6 messages") instead of also sweeping in messages that
 * reached the DLQ between the dry run and the click (unseen, uncounted). Empty for picked ids (the
 * ids bound the run) and when the dry run chose the broker's native move, which always moves the
 * whole DLQ and cannot be limited (the dialog says so).
 */
export function startLimit(plan: RedrivePlan | null, selection: 'all' | 'filter' | 'ids'): { limit?: number } {
  if (plan === null || selection === 'ids' || plan.native.wouldUse || plan.examined < 1) return {};
  return { limit: plan.examined };
}

/** Confirm dialog: counts, targets, loop warning (must be confirmed), backup note. */
export function RedriveConfirm({ plan, dlqName, rate, loopConfirmed, onConfirm, onCancel }: { plan: RedrivePlan; dlqName: string; rate: number | null; loopConfirmed: boolean; onConfirm: () => void; onCancel: () => void }) {
  const titleId = useId();
  const cancelRef = useRef<HTMLButtonElement>(null);
  useDialogClose(onCancel, cancelRef);
  const blocked = plan.loops.length > 0 && !loopConfirmed;
  return (
    <div className="modal-backdrop">
      <div className="modal" role="dialog" aria-modal="true" aria-labelledby={titleId}>
        <h2 id={titleId}>
          Redrive {count(plan.toMove)} message{plan.toMove === 1 ? '' : 's'} from {dlqName}?
        </h2>
        <ul>
          {plan.targets.map((t) => (
            <li key={t.queueId}>
              {count(t.count)} → <span className="mono">{escapeHidden(t.queueName)}</span>
            </li>
          ))}
        </ul>
        {plan.toSkip > 0 && <p>{count(plan.toSkip)} stay in the dead-letter queue (non-retryable, not selected, or no target).</p>}
        <CannotMoveNotice plan={plan} />
        {plan.loops.map((l) => (
          <div key={l.queueId} className="notice notice-warn" role="alert">
            Loop: {l.loop}
            {blocked && ' — tick "Allow a target that dead-letters straight back" first.'}
          </div>
        ))}
        {/* What the preview warned about (e.g. keys already waiting in the target: the operation would run twice), before the run is confirmed. */}
        {plan.warnings.map((w) => (
          <div key={w} className="notice notice-warn" data-testid="redrive-confirm-warning">
            {escapeHidden(w)}
          </div>
        ))}
        <TargetKeysNotes plan={plan} />
        <p className="muted">
          Each message is published and confirmed before it is removed from the DLQ; the messages are first written to a backup snapshot, and the run is added to the audit log.
          {rate !== null ? ` At most ${rate} messages per second.` : ''}
        </p>
        <p className="muted" data-testid="redrive-scope">
          {plan.native.wouldUse
            ? "The broker's native move takes every message in the DLQ when it runs, including any that arrived after the dry run."
            : `The run reads at most the ${count(plan.examined)} message${plan.examined === 1 ? '' : 's'} the dry run examined; messages that reached the DLQ after it stay there (preview again to include them).`}
        </p>
        <div className="modal-actions">
          <button type="button" className="btn" ref={cancelRef} onClick={onCancel}>
            Cancel
          </button>
          <button type="button" className="btn btn-primary" onClick={onConfirm} disabled={blocked}>
            Redrive
          </button>
        </div>
      </div>
    </div>
  );
}

/** The running redrive: progress with rate and ETA, pause / resume / cancel, then the result. */
function RedriveProgress({ op, onPause, onResume, onCancel, onDismiss }: { op: OperationSnapshot; onPause: () => void; onResume: () => void; onCancel: () => void; onDismiss: () => void }) {
  const done = TERMINAL_STATUSES.includes(op.status);
  const pct = op.total !== null && op.total > 0 ? Math.min(100, (op.processed / op.total) * 100) : null;
  const lastError = op.errors.at(-1);
  const result = (op.result ?? (lastError?.details?.result as Record<string, unknown> | undefined) ?? null) as RedriveResult | null;
  // A cancelled run's last error is its summary ("Cancelled after 3 moved, …", carrying the result):
  // the result block below says the same, so the line is not repeated above it.
  const shownError = done && result !== null && lastError?.code === 'CANCELLED' && lastError.details?.result !== undefined ? undefined : lastError;
  return (
    <div className="redrive-run" data-testid="redrive-run" data-status={op.status}>
      <div className="op-head">
        <span className="op-label">{op.label}</span>
        <span className={`op-status op-status-${op.status}`}>{op.status}</span>
      </div>
      <div className="progress" role="progressbar" aria-label="Redrive progress" aria-valuemin={0} aria-valuemax={op.total ?? undefined} aria-valuenow={op.processed}>
        <div className={pct === null && !done ? 'progress-bar indeterminate' : 'progress-bar'} style={{ width: `${op.status === 'completed' ? 100 : (pct ?? 0)}%` }} />
      </div>
      <div className="op-meta" data-testid="redrive-counts">
        {count(op.processed)}
        {op.total !== null ? ` of ${count(op.total)}` : ''} examined · {count(op.moved)} moved · {count(op.skipped)} stayed
        {op.failed > 0 && <span className="danger-text"> · {count(op.failed)} failed</span>}
        {(op.possibleDuplicates ?? 0) > 0 && <span className="danger-text"> · {count(op.possibleDuplicates ?? 0)} possible duplicates</span>}
        {!done && op.rate !== null && ` · ${Math.round(op.rate)}/s`}
        {!done && op.etaMs !== null && ` · ${duration(op.etaMs)} left`}
      </div>
      {shownError !== undefined && <div className="op-error danger-text">{shownError.message}</div>}
      {done && result !== null && (
        <div className="redrive-result" data-testid="redrive-result">
          <div>
            {op.status === 'completed' ? 'Done' : op.status === 'cancelled' ? 'Cancelled' : 'Failed'} ({result.mode}
            {result.mechanism !== null ? `: ${result.mechanism}` : ''}): {count(result.moved)} moved, {count(result.skipped)} stayed, {count(result.failed)} failed, {count(result.possibleDuplicates)} possible duplicates.
          </div>
          <ul>
            {result.targets.map((t) => (
              <li key={t.queueId}>
                {count(t.count)} → <span className="mono">{escapeHidden(t.queueName)}</span>
              </li>
            ))}
            {result.skipReasons.slice(0, 8).map((s) => (
              <li key={s.reason}>
                {count(s.count)} stayed: {s.reason}
              </li>
            ))}
          </ul>
          <MovedOnNotice movedOn={result.movedOn} who="This run's receives" dlq={result.dlqName} />
          {(result.warnings ?? []).map((w) => (
            <div key={w} className="notice notice-info">
              {w}
            </div>
          ))}
          {result.backupPath !== null && (
            <div className="muted">
              Backup: <span className="mono">{result.backupPath}</span>
            </div>
          )}
        </div>
      )}
      <div className="op-actions">
        {!done && op.status !== 'paused' && (
          <button type="button" className="btn btn-small" onClick={onPause}>
            Pause
          </button>
        )}
        {op.status === 'paused' && (
          <button type="button" className="btn btn-small" onClick={onResume}>
            Resume
          </button>
        )}
        {!done && (
          <button type="button" className="btn btn-small" onClick={onCancel}>
            Cancel
          </button>
        )}
        {done && (
          <button type="button" className="btn btn-small btn-ghost" onClick={onDismiss}>
            Done
          </button>
        )}
      </div>
    </div>
  );
}
