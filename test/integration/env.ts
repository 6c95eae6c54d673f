import { randomBytes } from 'node:crypto';

/** Where the integration tests find the real brokers. Override with the usual env vars. */
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const RABBITMQ_MANAGEMENT_URL = process.env.RABBITMQ_MANAGEMENT_URL ?? 'http://127.0.0.1:15672';
/** fauxqs: the faithful SQS emulator (no ListDeadLetterSourceQueues). */
export const SQS_ENDPOINT = process.env.QUEUESCOPE_SQS_ENDPOINT ?? 'http://127.0.0.1:4566';
/** local-aws-sqs: has ListDeadLetterSourceQueues and message-move tasks, quirky elsewhere. */
export const SQS_ALT_ENDPOINT = process.env.QUEUESCOPE_SQS_ALT_ENDPOINT ?? 'http://127.0.0.1:4577';
export const SQS_REGION = 'us-east-1';
/** Static test credentials accepted by both emulators. */
export const SQS_TEST_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };

/** A unique, broker-safe name for one test's queue: `qs-test-<label>-<random>`. */
export function uniqueName(label: string): string {
  return `qs-test-${label}-${randomBytes(4).toString('hex')}`;
}
