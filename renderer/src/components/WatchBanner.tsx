import { useEffect } from 'react';
import { watchAlertText } from '../../../shared/api/watch';
import { useStore } from '../store';
import { useWatchStore } from '../store/watch';
import './Watch.css';

/** Most alerts shown at once; the rest are counted. */
const SHOWN = 3;

/**
 * The in-app DLQ alert banner (and the poller behind the watch badges): the newest undismissed
 * alerts — a DLQ's first message, growth, or a DLQ that cannot be read — with Open and Dismiss.
 * Text only: names and reasons come from the broker.
 */
export function WatchBanner() {
  const alerts = useWatchStore((s) => s.alerts);
  const startPolling = useWatchStore((s) => s.startPolling);
  const dismissAlert = useWatchStore((s) => s.dismissAlert);
  const dismissAll = useWatchStore((s) => s.dismissAll);
  const navigate = useStore((s) => s.navigate);

  useEffect(() => startPolling(), [startPolling]);

  if (alerts.length === 0) return null;
  const shown = alerts.slice(-SHOWN).reverse();
  return (
    <div className="watch-banner" role="alert" aria-label="DLQ alerts" data-testid="watch-banner">
      {shown.map((a) => {
        const text = watchAlertText(a);
        if (text === null) return null;
        return (
          <div key={a.seq} className={a.type === 'error' ? 'watch-banner-row error' : 'watch-banner-row'} data-testid="watch-alert" data-event={a.type} data-queue-id={a.queueId}>
            <strong>{text.title}</strong>
            <span className="watch-banner-body">{text.body}</span>
            <span className="watch-banner-actions">
              <button
                type="button"
                className="btn btn-small"
                onClick={() => {
                  dismissAlert(a.seq);
                  navigate({ screen: 'queue', connectionId: a.connectionId, queueId: a.queueId });
                }}
              >
                Open
              </button>
              <button type="button" className="btn btn-small btn-ghost" onClick={() => dismissAlert(a.seq)}>
                Dismiss
              </button>
            </span>
          </div>
        );
      })}
      {alerts.length > SHOWN && (
        <div className="watch-banner-row watch-banner-more">
          and {alerts.length - SHOWN} earlier alert{alerts.length - SHOWN === 1 ? '' : 's'}
          <button type="button" className="link" onClick={dismissAll}>
            Dismiss all
          </button>
        </div>
      )}
    </div>
  );
}
