import type { ErrorCode, ErrorInfo } from '../../../shared/domain/errors';

/** A short title per error code, and what a person can do about it. */
const WORDS: Record<ErrorCode, { title: string; hint: string }> = {
  HOST_UNREACHABLE: { title: 'Host unreachable', hint: 'Check the host name and port, and that the broker is running and reachable from this machine.' },
  AUTH_FAILED: { title: 'Authentication failed', hint: 'Check the user name and password (or the AWS keys / profile).' },
  TLS_ERROR: { title: 'TLS problem', hint: 'Check whether the server expects TLS, and its certificate.' },
  UNKNOWN_VHOST: { title: 'Unknown virtual host', hint: 'Check the vhost name (the URL path; "/" is written %2F).' },
  MANAGEMENT_UNAVAILABLE: { title: 'Management API unavailable', hint: 'Enable the rabbitmq_management plugin or set the management URL.' },
  PERMISSION_DENIED: { title: 'Permission denied', hint: 'The user is authenticated but not allowed to do this (tags, vhost permissions, IAM).' },
  QUEUE_NOT_FOUND: { title: 'Queue not found', hint: 'It may have been deleted. Refresh the queue list.' },
  PEEK_REFUSED: { title: 'Peek refused', hint: 'Peeking this queue changes it; confirm the side effects to continue.' },
  INVALID_INPUT: { title: 'Invalid input', hint: '' },
  SNAPSHOT_INVALID: { title: 'Snapshot cannot be read', hint: 'The file is not a Queuescope JSONL snapshot, or it is damaged.' },
  TIMEOUT: { title: 'Timed out', hint: 'The broker did not answer in time. Try again.' },
  CANCELLED: { title: 'Cancelled', hint: '' },
  UNSUPPORTED: { title: 'Not supported', hint: 'This broker or emulator does not implement the operation.' },
  BROKER_ERROR: { title: 'Broker error', hint: '' },
  INTERNAL: { title: 'Unexpected error', hint: 'This is a bug in Queuescope.' },
};

/** Title for an error banner, e.g. "Host unreachable". Unknown codes read "Error". */
export function errorTitle(info: Pick<ErrorInfo, 'code'>): string {
  return (WORDS as Partial<Record<string, { title: string }>>)[info.code]?.title ?? 'Error';
}

/** What to try next, or '' when the message says it all. */
export function errorHint(info: Pick<ErrorInfo, 'code'>): string {
  return (WORDS as Partial<Record<string, { hint: string }>>)[info.code]?.hint ?? '';
}
