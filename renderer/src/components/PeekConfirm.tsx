import { useId, useRef, useState } from 'react';
import type { QueueCapabilities } from '../../../shared/domain/queue';
import { useDialogClose } from '../lib/hooks';

/**
 * Asks before an action that reads a queue whose peek changes it (RabbitMQ requeue, quorum
 * delivery count, SQS receive count). Lists the declared side effects. When
 * `peekMayDeadLetter !== false` (true or unknown) an extra checkbox must be ticked: the read can
 * move messages to the dead-letter queue.
 */
export function PeekConfirm({
  queueName,
  capabilities,
  action,
  onConfirm,
  onCancel,
}: {
  queueName: string;
  capabilities: Pick<QueueCapabilities, 'peekSideEffects' | 'peekMayDeadLetter'>;
  /** Button label, e.g. "Peek 50 messages" or "Export". */
  action: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const titleId = useId();
  const mayDeadLetter = capabilities.peekMayDeadLetter !== false;
  const [accepted, setAccepted] = useState(false);
  const cancelRef = useRef<HTMLButtonElement>(null);
  useDialogClose(onCancel, cancelRef);

  return (
    <div className="modal-backdrop">
      <div className="modal" role="dialog" aria-modal="true" aria-labelledby={titleId}>
        <h2 id={titleId}>Peeking this queue changes it</h2>
        <p>
          Reading messages from <strong className="mono">{queueName}</strong> is a delivery on this broker:
        </p>
        <ul className="side-effects">
          {capabilities.peekSideEffects.map((s, i) => (
            <li key={i} className={s.kind === 'may-dead-letter' ? 'danger-text' : undefined}>
              {s.description}
            </li>
          ))}
        </ul>
        {mayDeadLetter && (
          <label className="check check-danger">
            <input type="checkbox" checked={accepted} onChange={(e) => setAccepted(e.target.checked)} />{' '}
            {capabilities.peekMayDeadLetter === null
              ? 'I understand this read might move messages to the dead-letter queue (the broker does not say whether it can).'
              : 'I understand this read can move messages to the dead-letter queue.'}
          </label>
        )}
        <div className="modal-actions">
          <button type="button" className="btn" ref={cancelRef} onClick={onCancel}>
            Cancel
          </button>
          <button type="button" className="btn btn-warning" disabled={mayDeadLetter && !accepted} onClick={onConfirm}>
            {action}
          </button>
        </div>
      </div>
    </div>
  );
}
