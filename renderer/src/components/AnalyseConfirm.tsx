import { useEffect, useId, useRef, useState } from 'react';
import type { QueueSummary } from '../../../shared/domain/queue';
import { call, errorInfoOf } from '../api';
import { useStore } from '../store';
import { useDialogClose } from '../lib/hooks';

/**
 * A queue the redelivery-safety analysis also reads to compare duplicate keys: the inspected
 * queue's dead-letter queue (`deadLetterTargets` with a queue id) or a queue that dead-letters
 * into it (`deadLetterSources`) — the partners `deadLetterPartners` in core/inspect/inspect.ts
 * reads. `summary` is null when it could not be looked up (`error` says why).
 */
export interface ComparedQueue {
  queueId: string;
  /** The queue's name (from its summary, else the dead-letter target's name, else the id). */
  name: string;
  relation: 'dead-letter-target' | 'dead-letter-source';
  summary: QueueSummary | null;
  error: string | null;
}

/** The compared queues of a queue while they are being looked up, then with their summaries. */
export type ComparedQueues = { status: 'loading'; queues: [] } | { status: 'ready'; queues: ComparedQueue[] };

/**
 * The ids of the queues `inspect.queue` reads besides `queue` for the duplicate comparison (the
 * same choice as core `deadLetterPartners`): the source queues first, then the dead-letter
 * targets that resolve to a queue id; the queue itself and repeats left out. A BullMQ queue's
 * partner is the same queue in other states (no other queue) and a dead-letter target known only
 * by name is not read, so neither is listed.
 */
export function comparedQueueIds(queue: QueueSummary): { queueId: string; name: string | null; relation: ComparedQueue['relation'] }[] {
  const seen = new Set<string>([queue.id]);
  const out: { queueId: string; name: string | null; relation: ComparedQueue['relation'] }[] = [];
  for (const id of queue.deadLetterSources) {
    if (seen.has(id)) continue;
    seen.add(id);
    out.push({ queueId: id, name: null, relation: 'dead-letter-source' });
  }
  for (const t of queue.deadLetterTargets) {
    if (t.queueId === null || seen.has(t.queueId)) continue;
    seen.add(t.queueId);
    out.push({ queueId: t.queueId, name: t.queueName, relation: 'dead-letter-target' });
  }
  return out;
}

/**
 * Looks up the summaries (with their peek capabilities) of the queues the analysis of `queue`
 * also reads: from the connection's loaded queue list where it holds them, else with `queues.get`
 * (a failed look-up is kept as `error`, not thrown). Looked up again when the queue's dead-letter
 * partners change.
 */
export function useComparedQueues(connectionId: string, queue: QueueSummary): ComparedQueues {
  const listed = useStore((s) => s.queueLists[connectionId]?.queues);
  const ids = comparedQueueIds(queue);
  const signature = ids.map((p) => `${p.relation}:${p.queueId}`).join('\n');
  const [found, setFound] = useState<{ signature: string; queues: ComparedQueue[] } | null>(null);
  useEffect(() => {
    let live = true;
    if (signature === '') return;
    const partners = signature.split('\n').map((line) => {
      const i = line.indexOf(':');
      return { relation: line.slice(0, i) as ComparedQueue['relation'], queueId: line.slice(i + 1) };
    });
    const names = new Map(queue.deadLetterTargets.map((t) => [t.queueId, t.queueName]));
    void Promise.all(
      partners.map(async (p): Promise<ComparedQueue> => {
        const fallback = names.get(p.queueId) ?? p.queueId;
        const known = listed?.find((q) => q.id === p.queueId);
        if (known !== undefined) return { ...p, name: known.name, summary: known, error: null };
        try {
          const s = await call('queues.get', { connectionId, queueId: p.queueId });
          return { ...p, name: s.name, summary: s, error: null };
        } catch (e) {
          return { ...p, name: fallback, summary: null, error: errorInfoOf(e).message };
        }
      }),
    ).then((queues) => {
      if (live) setFound({ signature, queues });
    });
    return () => {
      live = false;
    };
    // The list is read when the partners change, not on every refresh of it.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [connectionId, signature]);
  if (signature === '') return { status: 'ready', queues: [] };
  return found !== null && found.signature === signature ? { status: 'ready', queues: found.queues } : { status: 'loading', queues: [] };
}

/** True when reading this compared queue changes it, or when that is not known (not looked up). */
export function comparedReadChanges(q: ComparedQueue): boolean {
  return q.summary === null || q.summary.capabilities.peekSideEffects.length > 0;
}

/** `peekMayDeadLetter` of a compared queue; null (unknown) when it could not be looked up. */
function mayDeadLetter(q: ComparedQueue): boolean | null {
  return q.summary === null ? null : q.summary.capabilities.peekMayDeadLetter;
}

/**
 * Asks before the redelivery-safety analysis ("Analyse…") where reading changes a queue. Names the
 * side effects of every queue the analysis reads: the queue itself (its `peekSideEffects`) and the
 * dead-letter partners it reads to compare duplicate keys (each partner's own `peekSideEffects`:
 * on RabbitMQ the DLQ's messages are held and requeued with redelivered = true; on SQS each DLQ
 * message's receive count goes up by one, and a DLQ with its own redrive policy can move messages
 * on to the next queue). Each read that can (or might) move messages to a dead-letter queue has a
 * checkbox that must be ticked. Where a compared read changes its queue, "Analyse without the
 * comparison" reads only this queue (`compareDeadLetter: false`).
 */
export function AnalyseConfirm({
  queue,
  compared,
  onConfirm,
  onCancel,
}: {
  queue: QueueSummary;
  /** From {@link useComparedQueues}; must be ready. */
  compared: ComparedQueue[];
  /** `compare` false: analyse without reading the dead-letter partners. */
  onConfirm: (compare: boolean) => void;
  onCancel: () => void;
}) {
  const titleId = useId();
  const cancelRef = useRef<HTMLButtonElement>(null);
  const [accepted, setAccepted] = useState<Record<string, boolean>>({});
  useDialogClose(onCancel, cancelRef);

  const caps = queue.capabilities;
  const ownChanges = caps.peekSideEffects.length > 0;
  const changing = compared.filter(comparedReadChanges);
  const unchanged = compared.filter((q) => !comparedReadChanges(q));
  const checks: { id: string; name: string; may: boolean | null; own: boolean }[] = [
    ...(ownChanges && caps.peekMayDeadLetter !== false ? [{ id: queue.id, name: queue.name, may: caps.peekMayDeadLetter, own: true }] : []),
    ...changing.filter((q) => mayDeadLetter(q) !== false).map((q) => ({ id: q.queueId, name: q.name, may: mayDeadLetter(q), own: false })),
  ];
  const ownAccepted = checks.every((c) => !c.own || accepted[c.id] === true);
  const allAccepted = checks.every((c) => accepted[c.id] === true);
  const relationText = (q: ComparedQueue): string => (q.relation === 'dead-letter-target' ? `the dead-letter queue of ${queue.name}` : `a queue that dead-letters into ${queue.name}`);

  return (
    <div className="modal-backdrop">
      <div className="modal" role="dialog" aria-modal="true" aria-labelledby={titleId}>
        <h2 id={titleId}>{ownChanges ? 'Analysing this queue changes it' : 'Analysing this queue changes the queues compared with it'}</h2>
        {ownChanges && (
          <>
            <p>
              Reading messages from <strong className="mono">{queue.name}</strong> is a delivery on this broker:
            </p>
            <ul className="side-effects" data-testid="analyse-effects-own">
              {caps.peekSideEffects.map((s, i) => (
                <li key={i} className={s.kind === 'may-dead-letter' ? 'danger-text' : undefined}>
                  {s.description}
                </li>
              ))}
            </ul>
          </>
        )}
        {changing.map((q) => (
          <div key={q.queueId} data-testid="analyse-effects-compared">
            <p>
              To compare duplicate keys, the analysis also reads <strong className="mono">{q.name}</strong> ({relationText(q)}){q.summary === null ? '' : ', which changes it:'}
            </p>
            {q.summary === null ? (
              <p className="danger-text">Its side effects could not be looked up ({q.error}); if it can be read, reading it may change it.</p>
            ) : (
              <ul className="side-effects">
                {q.summary.capabilities.peekSideEffects.map((s, i) => (
                  <li key={i} className={s.kind === 'may-dead-letter' ? 'danger-text' : undefined}>
                    {s.description}
                  </li>
                ))}
              </ul>
            )}
          </div>
        ))}
        {unchanged.length > 0 && (
          <p className="muted" data-testid="analyse-compared-unchanged">
            Also read to compare duplicate keys, without changing {unchanged.length === 1 ? 'it' : 'them'}: {unchanged.map((q) => q.name).join(', ')}.
          </p>
        )}
        {checks.map((c) => (
          <label key={c.id} className="check check-danger">
            <input type="checkbox" checked={accepted[c.id] === true} onChange={(e) => setAccepted((a) => ({ ...a, [c.id]: e.target.checked }))} />{' '}
            {c.may === null
              ? `I understand reading ${c.name} might move messages to a dead-letter queue (${c.own ? 'the broker does not say whether it can' : 'not known'}).`
              : `I understand reading ${c.name} can move messages to a dead-letter queue.`}
          </label>
        ))}
        <div className="modal-actions">
          <button type="button" className="btn" ref={cancelRef} onClick={onCancel}>
            Cancel
          </button>
          {changing.length > 0 && (
            <button type="button" className={ownChanges ? 'btn btn-warning' : 'btn'} disabled={!ownAccepted} onClick={() => onConfirm(false)}>
              Analyse without the comparison
            </button>
          )}
          <button type="button" className="btn btn-warning" disabled={!allAccepted} onClick={() => onConfirm(true)}>
            Analyse all messages
          </button>
        </div>
      </div>
    </div>
  );
}
