import { useStore } from '../store';
import { Empty, Loading } from './common';

/** Start screen when no connection is open. */
export function Welcome() {
  const status = useStore((s) => s.connectionsStatus);
  const connections = useStore((s) => s.connections);
  const navigate = useStore((s) => s.navigate);
  const openSnapshot = useStore((s) => s.openSnapshot);
  if (status === 'idle' || status === 'loading') return <Loading label="Starting…" />;
  return (
    <section className="screen screen-welcome">
      <Empty title={connections.length === 0 ? 'Welcome to Queuescope' : 'Pick a connection'}>
        <p>Inspect Redis (BullMQ, streams, lists), RabbitMQ and Amazon SQS queues: depth, in-flight and dead-letter links, and the messages themselves.</p>
        <div className="welcome-actions">
          <button type="button" className="btn btn-primary" onClick={() => navigate({ screen: 'connection-form', editId: null })}>
            New connection
          </button>
          <button type="button" className="btn" onClick={() => void openSnapshot()}>
            Open snapshot…
          </button>
        </div>
      </Empty>
    </section>
  );
}
