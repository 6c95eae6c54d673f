import type { BrokerKind } from '../../../shared/domain/connection';
import type { ErrorCode, ErrorInfo } from '../../../shared/domain/errors';

/** A short title per error code, and what a person can do about it. */
const WORDS: Record<ErrorCode, { title: string; hint: string }> = {
  HOST_UNREACHABLE: { title: 'Host unreachable', hint: 'Check the host name and port, and that the broker is running and reachable from this machine.' },
  AUTH_FAILED: { title: 'Authentication failed', hint: 'Check the user name and password.' },
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

/** Login hints that depend on how the broker authenticates. */
const AUTH_HINTS: Partial<Record<BrokerKind, string>> = {
  rabbitmq: 'Check the user name and password.',
  redis: 'Check the user name (ACL user) and password.',
  sqs: 'Check the access key ID and secret access key, or the AWS profile.',
};

/**
 * The broker an error came from when the caller does not say: SQS errors carry the AWS `region`
 * (and `action`) in their details; RabbitMQ and Redis errors never do. Null when unknown.
 */
function brokerOf(info: Pick<ErrorInfo, 'details'>): BrokerKind | null {
  const d = info.details;
  if (d === undefined) return null;
  if (typeof d.region === 'string' || typeof d.awsCode === 'string') return 'sqs';
  if (typeof d.vhost === 'string' || typeof d.managementUrl === 'string') return 'rabbitmq';
  return null;
}

/**
 * What to try next, or '' when the message says it all. `broker` (the kind of the connection
 * being used or tested) picks the wording where brokers differ — how to fix a failed login; when
 * it is omitted the broker is inferred from `info.details`, else the RabbitMQ/Redis wording is used.
 */
export function errorHint(info: Pick<ErrorInfo, 'code'> & Partial<Pick<ErrorInfo, 'details'>>, broker?: BrokerKind): string {
  if (info.code === 'AUTH_FAILED') {
    const kind = broker ?? brokerOf(info);
    const hint = kind !== null ? AUTH_HINTS[kind] : undefined;
    if (hint !== undefined) return hint;
  }
  return (WORDS as Partial<Record<string, { hint: string }>>)[info.code]?.hint ?? '';
}
