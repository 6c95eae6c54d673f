import { useEffect } from 'react';
import { useStore } from '../store';
import { AuditPage } from './AuditPage';
import { ErrorBanner } from './common';
import { ConnectionForm } from './ConnectionForm';
import { OpenSnapshotDialog } from './OpenSnapshotDialog';
import { OperationsDock } from './OperationsDock';
import { QueueList } from './QueueList';
import { QueueView } from './QueueView';
import { Sidebar } from './Sidebar';
import { WatchBanner } from './WatchBanner';
import { Welcome } from './Welcome';

/** The window: sidebar, error banner, the current screen, operations. */
export function App() {
  const view = useStore((s) => s.view);
  const banner = useStore((s) => s.banner);
  const dismissBanner = useStore((s) => s.dismissBanner);
  const init = useStore((s) => s.init);
  const snapshotPromptOpen = useStore((s) => s.snapshotPromptOpen);

  useEffect(() => {
    void init();
  }, [init]);

  return (
    <div className="app">
      <Sidebar />
      <main className="main">
        {banner !== null && <ErrorBanner error={banner} onDismiss={dismissBanner} />}
        <WatchBanner />
        {view.screen === 'welcome' && <Welcome />}
        {view.screen === 'connection-form' && <ConnectionForm key={view.editId ?? 'new'} editId={view.editId} />}
        {view.screen === 'queues' && <QueueList key={view.connectionId} connectionId={view.connectionId} />}
        {view.screen === 'queue' && <QueueView key={`${view.connectionId}\u0000${view.queueId}`} connectionId={view.connectionId} queueId={view.queueId} />}
        {view.screen === 'audit' && <AuditPage key={view.connectionId} connectionId={view.connectionId} />}
      </main>
      <OperationsDock />
      {snapshotPromptOpen && <OpenSnapshotDialog />}
    </div>
  );
}
