import type { ReactNode } from 'react';
import type { ErrorInfo } from '../../../shared/domain/errors';
import type { QueueKind } from '../../../shared/domain/queue';
import type { BrokerKind } from '../../../shared/domain/connection';
import { errorHint, errorTitle } from '../lib/errors';
import { ago, absoluteTime, relativeTime } from '../lib/format';
import { useNow } from '../lib/hooks';

/** Spinner + label for a loading state. */
export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <div className="state state-loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      {label}
    </div>
  );
}

/** Empty state: a title, optional explanation and an action. */
export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="state state-empty">
      <div className="state-title">{title}</div>
      {children !== undefined && <div className="state-body">{children}</div>}
    </div>
  );
}

/** Inline error state for a screen or panel: the message in words, a hint, and optional retry. */
export function ErrorState({ error, onRetry, compact = false }: { error: ErrorInfo; onRetry?: () => void; compact?: boolean }) {
  const hint = errorHint(error);
  return (
    <div className={compact ? 'error-box compact' : 'error-box'} role="alert">
      <div className="error-title">{errorTitle(error)}</div>
      <div className="error-message">{error.message}</div>
      {hint !== '' && <div className="error-hint">{hint}</div>}
      {onRetry && (
        <button type="button" className="btn btn-small" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** The app-wide error banner. */
export function ErrorBanner({ error, onDismiss }: { error: ErrorInfo; onDismiss: () => void }) {
  const hint = errorHint(error);
  return (
    <div className="banner banner-error" role="alert" data-testid="error-banner">
      <strong>{errorTitle(error)}:</strong>&nbsp;<span className="banner-message">{error.message}</span>
      {hint !== '' && <span className="banner-hint"> {hint}</span>}
      <button type="button" className="banner-close" aria-label="Dismiss" onClick={onDismiss}>
        ×
      </button>
    </div>
  );
}

const KIND_LABEL: Record<QueueKind, string> = {
  bullmq: 'BullMQ',
  'redis-stream': 'Stream',
  'redis-list': 'List',
  'rabbitmq-classic': 'Classic',
  'rabbitmq-quorum': 'Quorum',
  'rabbitmq-stream': 'RMQ stream',
  'sqs-standard': 'SQS',
  'sqs-fifo': 'SQS FIFO',
  snapshot: 'Snapshot',
};

/** Queue kind badge ("BullMQ", "Quorum", "SQS FIFO"…). */
export function KindBadge({ kind }: { kind: QueueKind }) {
  return <span className={`badge badge-kind badge-${kind}`}>{KIND_LABEL[kind]}</span>;
}

const BROKER_LABEL: Record<BrokerKind, string> = { redis: 'Redis', rabbitmq: 'RabbitMQ', sqs: 'SQS', snapshot: 'Snapshot' };

/** Broker badge for connections. */
export function BrokerBadge({ broker }: { broker: BrokerKind }) {
  return <span className={`badge badge-broker badge-broker-${broker}`}>{BROKER_LABEL[broker]}</span>;
}

/** Relative time with the absolute time (UTC) as tooltip. */
export function Time({ ms }: { ms: number | null | undefined }) {
  if (ms === null || ms === undefined) return <span className="muted">—</span>;
  return (
    <time dateTime={new Date(ms).toISOString()} title={absoluteTime(ms)}>
      {relativeTime(ms)}
    </time>
  );
}

/**
 * When shown data was read: "read 12 s ago", aging every second, with the absolute time (UTC) as
 * tooltip (`title`, or `absoluteTitle` for a read window). Nothing when `ms` is null (never read).
 */
export function ReadAgo({ ms, absoluteTitle, testId }: { ms: number | null | undefined; absoluteTitle?: string | undefined; testId?: string | undefined }) {
  const now = useNow(1000);
  if (ms === null || ms === undefined) return null;
  return (
    <time className="read-ago muted" dateTime={new Date(ms).toISOString()} title={absoluteTitle ?? `Read at ${absoluteTime(ms)}`} data-testid={testId}>
      read {ago(ms, now)}
    </time>
  );
}
