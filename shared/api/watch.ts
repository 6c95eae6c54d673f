import { z } from 'zod';
import type { ErrorInfo } from '../domain';
import type { FailureClass } from '../redrive/failure-class';

/**
 * API shapes of DLQ alerts (issue 4): `watch.set` (choose the DLQs of a connection to watch),
 * `watch.list` (what is watched, with the last depth), `watch.events` (events since a cursor, for
 * polling). The events are those of `core/services/dlq-watch.ts`; pure types and zod schemas here.
 */

/** Event types; see `core/services/dlq-watch.ts`. `status` is the starting depth, not an alert. */
export type DlqWatchEventType = 'status' | 'first-message' | 'grew' | 'drained' | 'error' | 'recovered';

/** Event types that call for attention (banner, desktop notification). */
export const ALERT_EVENT_TYPES: readonly DlqWatchEventType[] = ['first-message', 'grew', 'error'];

/** The newest message's failure, when it could be read without side effects. */
export interface DlqWatchFailure {
  /** Id of the message classified (the newest one). */
  messageId: string;
  class: FailureClass;
  /** What decided the class, e.g. `HTTP 422`, `timeout`, `x-death rejected`. */
  label: string;
  /** The recorded error text (first line, ≤ 500 chars), null when none. */
  reason: string | null;
  /** Where the text came from (`failedReason`, `header x-last-error`, `x-death`…). */
  source: string | null;
}

/** One watch event. Plain JSON (crosses IPC and is printed by `queuescope watch --json`). */
export interface DlqWatchEvent {
  type: DlqWatchEventType;
  /** When the poll that raised it finished, ms since epoch. */
  at: number;
  /** Queue id as given to the watch. */
  queueId: string;
  /** Display name (the id until the queue was read once). */
  queueName: string;
  /** Depth now (messages); null when unknown (`error`, or the broker did not say). */
  depth: number | null;
  /** Depth at the previous successful poll; null at the first poll or when unknown. */
  previousDepth: number | null;
  /** `depth - previousDepth` when both are known, else null. */
  delta: number | null;
  /** Queue ids that dead-letter into this DLQ (as resolved from broker configuration; empty when none are known). */
  deadLetterSources: string[];
  /** Newest message's failure (first-message / grew on non-destructively peekable queues), else null. */
  failure: DlqWatchFailure | null;
  /** Why `failure` is null where one could be expected (peek has side effects, read failed), else null. */
  failureNote: string | null;
  /** `error`: what went wrong; null otherwise. */
  error: ErrorInfo | null;
  /** `error`: ms until the next attempt; null otherwise. */
  retryInMs: number | null;
}

/** An event as the app sees it: numbered (the cursor) and tagged with its connection. */
export interface WatchEventView extends DlqWatchEvent {
  /** Increasing from 1 for the life of the process; `watch.events` returns events with `seq > since`. */
  seq: number;
  connectionId: string;
}

/** One watched DLQ with what the last poll found. */
export interface WatchedDlqView {
  connectionId: string;
  queueId: string;
  /** Display name (the id until the first successful poll). */
  queueName: string;
  /** Poll interval, ms. */
  intervalMs: number;
  /** `starting` until the first poll ends; `error` while the DLQ cannot be read. */
  status: 'starting' | 'ok' | 'error';
  /** Last depth read (kept through errors); null before the first successful poll. */
  depth: number | null;
  error: ErrorInfo | null;
  /** The last event other than `status`, null when none yet. */
  lastEvent: WatchEventView | null;
}

/** Output of `watch.list` and `watch.set`. */
export interface WatchListView {
  watched: WatchedDlqView[];
}

/** Output of `watch.events`. */
export interface WatchEventsPage {
  /** Oldest first; at most `limit`. Events older than the last 500 are forgotten. */
  events: WatchEventView[];
  /** Pass as `since` next time: the `seq` of the last event returned (or the input when none). */
  cursor: number;
}

const id = z.string().min(1).max(512);

/** Input of `watch.set`: replaces the watched DLQs of one connection (an empty list stops watching it). */
export const watchSetInputSchema = z
  .object({
    connectionId: id,
    queueIds: z.array(z.string().min(1).max(2048)).max(100),
    /** Poll interval, ms (default 5,000; at least 1,000). */
    intervalMs: z.number().int().min(1_000).max(3_600_000).optional(),
  })
  .strict();

export const watchListInputSchema = z.object({}).strict();

/** Input of `watch.events`. */
export const watchEventsInputSchema = z
  .object({
    /** Cursor from the previous page; 0 / absent = every event still kept. */
    since: z.number().int().min(0).optional(),
    limit: z.number().int().min(1).max(500).optional(),
  })
  .strict();

/** Control, bidi-override and markup characters removed from notification text (queue names and reasons are untrusted). */
const UNSAFE_TEXT = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

function plain(text: string, max: number): string {
  const t = text.replace(UNSAFE_TEXT, ' ').replace(/</g, '‹').replace(/>/g, '›').replace(/&/g, '+');
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/**
 * Title and body of the alert for an event (the desktop notification and the in-app banner), or
 * null for events that are not alerts (`status`, `drained`, `recovered`). Plain text: control,
 * bidi and markup characters (`<`, `>`, `&`) from broker data are replaced.
 */
export function watchAlertText(e: DlqWatchEvent): { title: string; body: string } | null {
  const name = plain(e.queueName, 120);
  const n = (x: number | null): string => (x === null ? '?' : String(x));
  const plural = (x: number | null): string => (x === 1 ? '' : 's');
  const why = e.failure === null ? '' : ` Newest: ${e.failure.class} (${plain(e.failure.label, 60)})${e.failure.reason !== null ? ` — ${plain(e.failure.reason, 200)}` : ''}.`;
  const from = e.deadLetterSources.length === 0 ? '' : ` From ${plain(e.deadLetterSources.join(', '), 200)}.`;
  switch (e.type) {
    case 'first-message':
      return { title: `Dead letters in ${name}`, body: `${name} received its first message${e.depth !== null && e.depth > 1 ? `s (${e.depth})` : ''}.${from}${why}` };
    case 'grew':
      return { title: `${name} grew by ${n(e.delta)}`, body: `${name} holds ${n(e.depth)} message${plural(e.depth)} (+${n(e.delta)}).${from}${why}` };
    case 'error':
      return { title: `Cannot watch ${name}`, body: plain(e.error?.message ?? 'The DLQ could not be read.', 300) };
    default:
      return null;
  }
}
