import type { ErrorCode } from '../../shared/domain';

/** Process exit codes of the `queuescope` CLI (also listed in `--help`). */
export const EXIT = {
  OK: 0,
  /** A bug, or an operation the broker does not support. */
  UNEXPECTED: 1,
  /** Bad command line, URL, option or snapshot file. */
  USAGE: 2,
  /**
   * Could not connect, or the broker refused: unreachable, authentication, TLS, vhost, management API,
   * permission, timeout, an endpoint that is not the expected broker, or an error the broker reported.
   */
  CONNECTION: 3,
  QUEUE_NOT_FOUND: 4,
  /** A read (peek, export, inspect, redrive and its dry run) could dead-letter messages and `--accept-side-effects` was not given. */
  PEEK_REFUSED: 5,
  /** The command ran and found what `--fail-on` asks to fail on (e.g. `inspect --fail-on flag`: flagged payloads). For CI. */
  FINDINGS: 6,
  /**
   * A move (redrive / reinject) finished but some messages failed, may be duplicated, or were left in
   * the DLQ (held by a reader), or its reads — a dry run's too — made the broker move DLQ messages on
   * to another queue without redriving them (an SQS DLQ with its own RedrivePolicy read with
   * `--accept-side-effects`); they are listed or counted. Also an export that left out messages whose
   * line would be longer than a snapshot reader accepts (listed), or wrote bodies cut at its read
   * limit (`--max-body-bytes`; counted and named).
   */
  PARTIAL: 7,
  /** A change to a broker needs confirmation: no `--yes` and no terminal to ask on, or the answer was no. */
  NOT_CONFIRMED: 8,
  /**
   * The command ran, found nothing `--fail-on` names, but read only part of what it checks (e.g.
   * `inspect --fail-on flag` on a RabbitMQ queue deeper than one peek, or with `--limit`), so it
   * cannot vouch for the rest. Findings in the part read exit {@link EXIT.FINDINGS} instead. For CI.
   */
  INCOMPLETE: 9,
  /** SIGHUP (the terminal or SSH session closed): the command stopped as on Ctrl+C; 128 + 1 (core/cli/interrupts.ts). */
  HANGUP: 129,
  /** Ctrl+C (SIGINT): 128 + 2, as shells report it. */
  INTERRUPTED: 130,
  /** SIGTERM (`kill <pid>`, a service manager): the command stopped as on Ctrl+C; 128 + 15 (core/cli/interrupts.ts). */
  TERMINATED: 143,
} as const;

/** The exit code for an error code. */
export function exitCodeFor(code: ErrorCode): number {
  switch (code) {
    case 'INVALID_INPUT':
    case 'SNAPSHOT_INVALID':
      return EXIT.USAGE;
    case 'HOST_UNREACHABLE':
    case 'AUTH_FAILED':
    case 'TLS_ERROR':
    case 'UNKNOWN_VHOST':
    case 'MANAGEMENT_UNAVAILABLE':
    case 'PERMISSION_DENIED':
    case 'TIMEOUT':
    case 'BROKER_ERROR': // the broker (or a non-SQS endpoint) answered with an error: not a Queuescope bug
      return EXIT.CONNECTION;
    case 'QUEUE_NOT_FOUND':
      return EXIT.QUEUE_NOT_FOUND;
    case 'PEEK_REFUSED':
      return EXIT.PEEK_REFUSED;
    case 'CANCELLED':
      return EXIT.INTERRUPTED;
    case 'UNSUPPORTED':
    case 'INTERNAL':
      return EXIT.UNEXPECTED;
  }
}

/** The exit-code table printed by `--help`. */
export const EXIT_CODES_HELP = `
Exit codes:
  0    success
  1    unexpected error (a bug, or an operation the broker does not support)
  2    usage error or invalid input (command line, URL, option, snapshot file)
  3    connection failed or the broker refused (unreachable, authentication, TLS,
       vhost, management API, permission, timeout, an endpoint that is not the
       expected broker, an error reported by the broker)
  4    queue not found
  5    read refused: reading the queue (peek, export, inspect, or a redrive and
       its dry run) could move messages to a dead-letter queue; pass
       --accept-side-effects to read it anyway
  6    findings: the command ran and found what --fail-on names (e.g. inspect
       --fail-on flag: messages with flagged payloads)
  7    partial: a redrive/reinject finished but some messages failed (they stayed
       where they were) or may now be in both queues (possible duplicates), or
       nothing moved because the selected messages cannot move or have no target,
       or reading the DLQ (a dry run too) made SQS move messages on to the DLQ's
       own dead-letter queue instead of redriving them (--accept-side-effects),
       or an export left out messages whose line no snapshot reader accepts,
       or wrote message bodies cut at its read limit (--max-body-bytes)
  8    not confirmed: a redrive/reinject needs --yes without a terminal to ask on,
       or the answer was no; nothing was moved
  9    incomplete: --fail-on found nothing to fail on, but only part of the queue
       was read (e.g. inspect --fail-on on a RabbitMQ/SQS queue deeper than one
       peek, or with --limit); findings in the part read exit 6 instead
  129  hangup (SIGHUP: the terminal or SSH session closed): stopped as on Ctrl+C
  130  interrupted (Ctrl+C)
  143  terminated (SIGTERM, e.g. kill <pid>): stopped as on Ctrl+C`;
