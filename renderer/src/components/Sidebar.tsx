import { describeConnection } from '../../../shared/domain/connection';
import { useStore } from '../store';
import { BrokerBadge, ErrorState, Loading } from './common';
import { WatchConnectionBadge } from './WatchBadge';

/** Left column: saved connections, the demo/opened snapshots, "New connection" and "Open snapshot…". */
export function Sidebar() {
  const connections = useStore((s) => s.connections);
  const status = useStore((s) => s.connectionsStatus);
  const error = useStore((s) => s.connectionsError);
  const view = useStore((s) => s.view);
  const navigate = useStore((s) => s.navigate);
  const loadConnections = useStore((s) => s.loadConnections);
  const openSnapshot = useStore((s) => s.openSnapshot);
  const version = useStore((s) => s.appInfo?.version);
  const activeId = view.screen === 'queues' || view.screen === 'queue' || view.screen === 'audit' ? view.connectionId : view.screen === 'connection-form' ? view.editId : null;

  return (
    <nav className="sidebar" aria-label="Connections">
      <div className="brand">
        <span className="brand-mark" aria-hidden="true">◧</span> Queuescope
      </div>
      <div className="sidebar-actions">
        <button type="button" className="btn btn-primary btn-block" onClick={() => navigate({ screen: 'connection-form', editId: null })}>
          + New connection
        </button>
        <button type="button" className="btn btn-block" onClick={() => void openSnapshot()}>
          Open snapshot…
        </button>
      </div>
      <div className="sidebar-heading">Connections</div>
      <div className="sidebar-list">
        {status === 'loading' && connections.length === 0 && <Loading />}
        {status === 'error' && error !== null && <ErrorState error={error} compact onRetry={() => void loadConnections()} />}
        {status === 'ready' && connections.length === 0 && <div className="sidebar-empty">No connections yet. Create one to inspect your queues.</div>}
        <ul>
          {connections.map((c) => (
            <li key={c.id}>
              <button
                type="button"
                className={c.id === activeId ? 'conn-item active' : 'conn-item'}
                aria-current={c.id === activeId ? 'page' : undefined}
                onClick={() => navigate({ screen: 'queues', connectionId: c.id })}
                title={describeConnection(c.config)}
              >
                <span className="conn-name">
                  <span className="conn-name-text">{c.name}</span>
                  {c.builtIn && <span className="conn-tag">demo</span>}
                  <WatchConnectionBadge connectionId={c.id} />
                </span>
                <BrokerBadge broker={c.config.kind} />
                <span className="conn-desc">{describeConnection(c.config)}</span>
              </button>
              {c.id === activeId && c.config.kind !== 'snapshot' && (
                <button type="button" className={view.screen === 'audit' ? 'btn btn-small btn-block audit-nav active' : 'btn btn-small btn-block audit-nav'} aria-current={view.screen === 'audit' ? 'page' : undefined} onClick={() => navigate({ screen: 'audit', connectionId: c.id })}>
                  Audit configuration
                </button>
              )}
            </li>
          ))}
        </ul>
      </div>
      {version !== undefined && <div className="sidebar-footer">v{version}</div>}
    </nav>
  );
}
