import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRabbitmqAdapter } from '../../core/adapters/rabbitmq';
import type { BrokerAdapter } from '../../core/adapters/types';
import { planRedrive, type RedriveEnv } from '../../core/redrive/engine';
import { AuditLog } from '../../core/services/audit-log';
import type { RedrivePlan } from '../../shared/redrive/types';
import { AMQP_URL, RABBITMQ_MANAGEMENT_URL, uniqueName } from './env';
import { idOf, makeDeadLettered, waitCount } from './fixtures/redrive-rabbitmq-util';
import { runCli } from './fixtures/run-cli';
import { closeNative, nativeChannel, nativeConnection, nativeCount, nativeDeleteQueue } from './rabbitmq-native';

/**
 * The dry run's `keysInTarget[].withoutKey` counts the messages to move that carry no idempotency
 * key for every target, also one it does not read (a RabbitMQ queue: its reads requeue messages).
 * Before, such a target's messages were not looked at at all, so it said 0 while they had none.
 */

const adapters: BrokerAdapter[] = [];
const queues: string[] = [];
let dir = '';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'qs-redrive-keyrules-rmq-'));
});

afterAll(async () => {
  for (const a of adapters) await a.close();
  for (const q of queues) await nativeDeleteQueue(q);
  await closeNative();
  rmSync(dir, { recursive: true, force: true });
});

function envOf(a: BrokerAdapter): RedriveEnv {
  return { adapter: a, connectionLabel: 'test', actor: 'cli', auditLog: new AuditLog({ configDir: dir }), configDir: dir };
}

/** `work` dead-lettering into `dlq`, the DLQ holding 1 message with a key (AMQP message id m-k-0) and `keyless` without one. */
async function fill(label: string, keyless: number): Promise<{ work: string; dlq: string }> {
  const work = uniqueName(`${label}-work`);
  const dlq = uniqueName(`${label}-dlq`);
  queues.push(work, dlq);
  await makeDeadLettered(await nativeConnection(), work, dlq, 1);
  const ch = await nativeChannel();
  // No message id, no key field in the body: no built-in rule finds a key.
  for (let i = 0; i < keyless; i++) ch.sendToQueue(dlq, Buffer.from(JSON.stringify({ note: `no key ${String(i)}` })), { persistent: true, contentType: 'application/json' });
  await ch.waitForConfirms();
  await ch.close();
  await waitCount(await nativeConnection(), dlq, 1 + keyless);
  return { work, dlq };
}

describe('dry run into a RabbitMQ target (not read): messages without a key are counted', () => {
  it('planRedrive: withoutKey is 2 of the 3 moving, and the note says they could not be compared', async () => {
    const rabbit = createRabbitmqAdapter({ kind: 'rabbitmq', url: AMQP_URL, managementUrl: RABBITMQ_MANAGEMENT_URL });
    adapters.push(rabbit);
    const { work, dlq } = await fill('rk-wk', 2);
    const plan = await planRedrive(envOf(rabbit), { dlqId: idOf(dlq), selection: { kind: 'all' }, targetQueueId: idOf(work) });
    expect(plan.toMove).toBe(3);
    expect(plan.keysInTarget).toHaveLength(1);
    expect(plan.keysInTarget?.[0]).toMatchObject({ queueId: idOf(work), checked: false, read: 0, moving: 3, withoutKey: 2, duplicates: 0 });
    const note = plan.keysInTarget?.[0]?.note ?? '';
    expect(note).toContain(`Idempotency keys already waiting in ${work} were not checked: reading ${work} has side effects`);
    expect(note).toContain('2 of the 3 messages to move there carry no idempotency key and could not be compared.');
    // The target was not touched, the DLQ still holds all three.
    expect(await nativeCount(work)).toBe(0);
    expect(await nativeCount(dlq)).toBe(3);
  });

  it('CLI --dry-run --json: a project rule that finds a key in the keyless bodies (body.note) leaves none without a key', async () => {
    const { work, dlq } = await fill('rk-wk-cli', 2);
    // The rule takes body.note: the two messages without a built-in key have one by it; the other
    // keeps its built-in key (AMQP message id m-k-0: user rules come first, the built-in ones after).
    writeFileSync(join(dir, 'queuescope.config.json'), JSON.stringify({ inspect: { queues: [{ match: dlq, keyRules: [{ kind: 'jsonPath', path: 'body.note' }] }] } }));
    try {
      const r = await runCli(dir, ['redrive', AMQP_URL, dlq, '--to', work, '--dry-run', '--json']);
      expect(r.code).toBe(0);
      const plan = JSON.parse(r.stdout) as RedrivePlan & { keyRulesSource?: string };
      expect(plan.keyRulesSource).toBe(`"${dlq}" in ${join(dir, 'queuescope.config.json')}`);
      expect(plan.keysInTarget?.[0]).toMatchObject({ checked: false, moving: 3, withoutKey: 0 });
      // Without the file: the built-in rules, 2 without a key.
      rmSync(join(dir, 'queuescope.config.json'), { force: true });
      const bare = JSON.parse((await runCli(dir, ['redrive', AMQP_URL, dlq, '--to', work, '--dry-run', '--json'])).stdout) as RedrivePlan & { keyRulesSource?: string };
      expect(bare.keyRulesSource).toBe('built-in rules');
      expect(bare.keysInTarget?.[0]).toMatchObject({ checked: false, moving: 3, withoutKey: 2 });
    } finally {
      rmSync(join(dir, 'queuescope.config.json'), { force: true });
    }
  });
});
