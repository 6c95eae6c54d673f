/**
 * `npm run seed`: fills the local brokers with demo data through the real mechanisms
 * (BullMQ workers that fail, RabbitMQ dead-lettering, SQS maxReceiveCount), then, with
 * `--demo-snapshot PATH`, exports the seeded queues into the demo snapshot the app opens
 * when no connection exists.
 *
 * Env: REDIS_URL, AMQP_URL, RABBITMQ_MANAGEMENT_URL, QUEUESCOPE_SQS_ENDPOINT (default fauxqs on 4566).
 * Flags: --only redis|rabbitmq|sqs (repeatable), --demo-snapshot PATH.
 */
import { parseArgs } from 'node:util';
import { seedRedis } from './seed/redis';
import { seedRabbitmq } from './seed/rabbitmq';
import { seedSqs } from './seed/sqs';
import { buildDemoSnapshot } from './seed/demo-snapshot';
import { seedMisconfig } from './seed/misconfig';
import { seedInspectCases } from './seed/inspect-cases';

const { values } = parseArgs({
  options: { only: { type: 'string', multiple: true }, 'demo-snapshot': { type: 'string' } },
});
const only = new Set(values.only ?? ['redis', 'rabbitmq', 'sqs']);
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const amqpUrl = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const managementUrl = process.env.RABBITMQ_MANAGEMENT_URL ?? 'http://127.0.0.1:15672';
const sqsEndpoint = process.env.QUEUESCOPE_SQS_ENDPOINT ?? 'http://127.0.0.1:4566';
process.env.AWS_ACCESS_KEY_ID ??= 'test';
process.env.AWS_SECRET_ACCESS_KEY ??= 'test';

async function step(name: string, fn: () => Promise<string[]>): Promise<void> {
  const t0 = Date.now();
  process.stdout.write(`seeding ${name}…\n`);
  const lines = await fn();
  for (const l of lines) process.stdout.write(`  ${l}\n`);
  process.stdout.write(`  done in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
}

async function main(): Promise<void> {
  if (only.has('redis')) await step(`Redis (${redisUrl})`, () => seedRedis(redisUrl));
  if (only.has('rabbitmq')) await step(`RabbitMQ (${amqpUrl.replace(/:[^:@/]*@/, ':***@')})`, () => seedRabbitmq(amqpUrl, managementUrl));
  if (only.has('rabbitmq')) await step('inspect cases (re-sent orders sharing keys with orders.dlq)', () => seedInspectCases(amqpUrl, managementUrl));
  if (only.has('sqs')) await step(`SQS (${sqsEndpoint})`, () => seedSqs(sqsEndpoint, 'us-east-1'));
  await step('deliberate misconfigurations (for queuescope audit)', () => seedMisconfig({ only, redisUrl, amqpUrl, sqsEndpoint }));
  const demo = values['demo-snapshot'];
  if (demo !== undefined) await step(`demo snapshot ${demo}`, () => buildDemoSnapshot(demo, { redisUrl, amqpUrl, managementUrl, sqsEndpoint }));
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`seed failed: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
