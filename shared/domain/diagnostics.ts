import type { ErrorInfo } from './errors';

/** One check performed by "Test connection", in the order performed. */
export interface ConnectionCheck {
  /** e.g. "TCP connect 127.0.0.1:5672", "AMQP login as guest", "Management API /api/overview", "vhost '/' exists". */
  name: string;
  ok: boolean;
  /** What was found ("RabbitMQ 3.10.8", "Redis 7.0.15, maxmemory-policy noeviction") or why it failed. */
  detail: string;
  /** Duration of the check in ms. */
  ms: number;
}

/** Result of testing a connection: overall status plus the checks, and the first error's code in words. */
export interface ConnectionTestResult {
  ok: boolean;
  /** Broker product and version when learned, e.g. "Redis 7.0.15". */
  server: string | null;
  checks: ConnectionCheck[];
  /** The error that failed the test, already mapped to a cause (HOST_UNREACHABLE, AUTH_FAILED, …). */
  error: ErrorInfo | null;
}
