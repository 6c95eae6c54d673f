import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChangeMessageVisibilityBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { main } from '../../core/cli/main';
import { EXIT } from '../../core/cli/exit-codes';
import { startRedrive, type RedriveEnv } from '../../core/redrive/engine';
import { AuditLog } from '../../core/services/audit-log';
import { OperationManager } from '../../core/services/operations';
import type { RedrivePlan, RedriveResult } from '../../shared/redrive/types';
import { SQS_ALT_ENDPOINT, SQS_ENDPOINT, SQS_REGION, SQS_TEST_CREDENTIALS, uniqueName } from './env';
import { sqsResources } from './fixtures/sqs-resources';

/**
 * Redrive of a chained SQS DLQ (dlq → final: the DLQ has its own RedrivePolicy), read with the side
 * effects accepted, when its messages are already at the DLQ's own maxReceiveCount: every receive —
 * the dry run's too — makes SQS move them on to `final` instead of returning them. Old code said
 * "Nothing to move" and exited 0 (or moved the rest and exited 0) although the messages had left
 * the DLQ without being redriven. Now the dry run, the result and the exit code (7) say how many
 * went where.
 */

const { client, adapterFor, createQueue } = sqsResources();

/** Runs the CLI in-process in `dir` (config dir `<dir>/home`); stdout and stderr apart. */
async function cli(dir: string, argv: string[]): Promise<{ code: number; out: string; err: string }> {
  // The SDK's credential chain reads process.env, not the CLI's io.env.
  process.env.AWS_ACCESS_KEY_ID ??= SQS_TEST_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY ??= SQS_TEST_CREDENTIALS.secretAccessKey;
  let out = '';
  let err = '';
  const code = await main(argv, { stdout: { write: (x: string) => (out += x) }, stderr: { write: (x: string) => (err += x) }, cwd: dir, env: { QUEUESCOPE_HOME: join(dir, 'home') } });
  return { code, out, err };
}

async function depth(c: SQSClient, url: string): Promise<number> {
  const a = (await c.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }))).Attributes ?? {};
  return Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesNotVisible ?? 0);
}

/**
 * Receives the `n` messages of a standard queue once (hidden meanwhile, so none twice), then makes
 * them visible again (fauxqs: a receive with VisibilityTimeout 0 leaves them hidden for a while).
 * Each gets ApproximateReceiveCount +1.
 */
async function receiveOnce(c: SQSClient, url: string, n: number): Promise<Message[]> {
  const out: Message[] = [];
  for (let empty = 0; empty < 2 && out.length < n; ) {
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    const got = (await c.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 300, WaitTimeSeconds: 1, AttributeNames: ['All'], MessageSystemAttributeNames: ['All'] }))).Messages ?? [];
    if (got.length === 0) empty++;
    out.push(...got);
  }
  expect(out).toHaveLength(n);
  for (let i = 0; i < out.length; i += 10) {
    await c.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: url, Entries: out.slice(i, i + 10).map((m, j) => ({ Id: `v${j}`, ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: 0 })) }));
  }
  return out;
}

/** A chained DLQ (`<base>-dlq`, maxReceiveCount `max` → `<base>-final`), its source and a separate target, on `endpoint`. */
async function chain(c: SQSClient, label: string, max: number) {
  const base = uniqueName(label);
  const final = await createQueue(c, `${base}-final`);
  const dlq = await createQueue(c, `${base}-dlq`, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: final.arn, maxReceiveCount: max }) });
  const src = await createQueue(c, base, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 5 }) });
  const target = await createQueue(c, `${base}-target`);
  return { base, final, dlq, src, target };
}

async function send(c: SQSClient, url: string, bodies: string[]): Promise<void> {
  for (const b of bodies) await c.send(new SendMessageCommand({ QueueUrl: url, MessageBody: b }));
}

describe('redrive of a chained SQS DLQ whose messages are at its own maxReceiveCount (fauxqs, CLI)', () => {
    // fauxqs, like AWS, keeps a message at the limit in the DLQ until its next receive moves it on.
    const c = client(SQS_ENDPOINT);
    const conn = `sqs://${SQS_REGION}?endpoint=${SQS_ENDPOINT}`;

    it('run with --yes --accept-side-effects, every message at the limit: says how many the reads moved on to which queue, exit 7 (old code: "Nothing to move", exit 0)', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'qs-sqs-chained-'));
      try {
        const q = await chain(c, 'chained-all', 1);
        await send(c, q.dlq.url, ['{"orderId":"E-1"}', '{"orderId":"E-2"}', '{"orderId":"E-3"}', '{"orderId":"E-4"}']);
        // One receive each: ApproximateReceiveCount 1 = the DLQ's own maxReceiveCount. The next receive moves them on.
        expect((await receiveOnce(c, q.dlq.url, 4)).map((m) => m.Attributes?.ApproximateReceiveCount)).toEqual(['1', '1', '1', '1']);
        const run = await cli(dir, ['redrive', conn, `${q.base}-dlq`, '--to', `${q.base}-target`, '--yes', '--accept-side-effects']);
        expect(run.out).toContain(`Nothing redriven: the dry run's receives moved 4 messages of ${q.base}-dlq on to ${q.base}-final (at the maxReceiveCount 1 of ${q.base}-dlq's own RedrivePolicy) instead of returning them`);
        expect(run.out).toContain(`in ${q.base}-final now, not lost — redrive ${q.base}-final to move them`);
        expect(run.out).not.toContain('Nothing to move');
        expect(run.err).toContain(`MOVED ON, NOT REDRIVEN: This dry run's receives moved 4 messages`);
        expect(run.code).toBe(EXIT.PARTIAL);
        expect(await depth(c, q.dlq.url)).toBe(0);
        expect(await depth(c, q.final.url)).toBe(4);
        expect(await depth(c, q.target.url)).toBe(0);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('the whole DLQ at the limit: dry run in words exits 7 and names the count and queue (old code: exit 0)', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'qs-sqs-chained-'));
      try {
        const q = await chain(c, 'chained-dry', 2);
        await send(c, q.dlq.url, ['a', 'b', 'c']);
        await receiveOnce(c, q.dlq.url, 3);
        await receiveOnce(c, q.dlq.url, 3);
        const dry = await cli(dir, ['redrive', conn, `${q.base}-dlq`, '--to', `${q.base}-target`, '--dry-run', '--accept-side-effects']);
        expect(dry.out).toContain(`Dry run of ${q.base}-dlq: 0 messages examined`);
        expect(dry.out).toContain(`MOVED ON, NOT REDRIVEN: This dry run's receives moved 3 messages of ${q.base}-dlq on to ${q.base}-final (at the maxReceiveCount 2 of ${q.base}-dlq's own RedrivePolicy) instead of returning them`);
        expect(dry.out).toContain('0 → 3');
        expect(dry.code).toBe(EXIT.PARTIAL);
        expect(await depth(c, q.final.url)).toBe(3);
        expect(await depth(c, q.dlq.url)).toBe(0);
        // --json: the plan carries the count, the queue and how it was measured; nothing left to move on now.
        await send(c, q.dlq.url, ['d']);
        await receiveOnce(c, q.dlq.url, 1);
        await receiveOnce(c, q.dlq.url, 1);
        const json = await cli(dir, ['redrive', conn, `${q.base}-dlq`, '--to', `${q.base}-target`, '--dry-run', '--json', '--accept-side-effects']);
        const plan = JSON.parse(json.out) as RedrivePlan;
        expect(plan).toMatchObject({ examined: 0, toMove: 0, movedOn: { queue: `${q.base}-final`, maxReceiveCount: 2, count: 1 } });
        expect(plan.movedOn?.measuredBy).toContain(`measured as the growth of ${q.base}-final's visible + in-flight + delayed messages from before the first receive to after the last, 3 → 4`);
        expect(json.code).toBe(EXIT.PARTIAL);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('some at the limit, some below: the run moves the others and still exits 7, counting those the dry run moved on (old code: exit 0)', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'qs-sqs-chained-'));
      try {
        const q = await chain(c, 'chained-mix', 2);
        await send(c, q.dlq.url, ['old-1', 'old-2']);
        await receiveOnce(c, q.dlq.url, 2);
        await receiveOnce(c, q.dlq.url, 2); // old-1, old-2 at 2 = the limit
        await send(c, q.dlq.url, ['new-1', 'new-2', 'new-3']); // 0: the dry run brings them to 1, the run to 2 (returned)
        const run = await cli(dir, ['redrive', conn, `${q.base}-dlq`, '--to', `${q.base}-target`, '--yes', '--accept-side-effects']);
        expect(run.out).toContain('3 moved, 0 stayed, 0 failed, 0 possible duplicates of 3 examined');
        expect(run.out).toContain(`Before this run, its dry run's receives moved 2 messages of ${q.base}-dlq on to ${q.base}-final`);
        expect(run.code).toBe(EXIT.PARTIAL);
        expect(await depth(c, q.target.url)).toBe(3);
        expect(await depth(c, q.final.url)).toBe(2);
        expect(await depth(c, q.dlq.url)).toBe(0);
        const json = await cli(dir, ['history', '--json', '--limit', '1']);
        expect(JSON.parse(json.out)).toMatchObject({ entries: [{ action: 'redrive', counts: { moved: 3, movedOnByReading: 0 } }] });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
});

describe('redrive engine result of a chained SQS DLQ (fauxqs): what the app shows', () => {
  const c = client(SQS_ENDPOINT);

  it("a run (no dry run first) whose receives move every message on reports movedOn with the count and queue, and the audit log counts it (old code: no trace but a note)", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'qs-sqs-chained-'));
    try {
      const q = await chain(c, 'chained-engine', 1);
      await send(c, q.dlq.url, ['x', 'y', 'z', 'w', 'v']);
      await receiveOnce(c, q.dlq.url, 5);
      const adapter = adapterFor(SQS_ENDPOINT);
      const auditLog = new AuditLog({ path: join(dir, 'audit.jsonl') });
      const env: RedriveEnv = { adapter, connectionLabel: SQS_ENDPOINT, actor: 'app', auditLog, configDir: dir };
      const ops = new OperationManager();
      const snap = startRedrive(ops, env, { dlqId: q.dlq.id, selection: { kind: 'all' }, targetQueueId: q.target.id, acceptSideEffects: true, native: 'never', backupPath: join(dir, 'b.jsonl') });
      const final = await ops.wait(snap.id);
      expect(final.status).toBe('completed');
      const result = final.result as RedriveResult;
      expect(result).toMatchObject({ examined: 0, moved: 0, movedOn: { queue: `${q.base}-final`, maxReceiveCount: 1, count: 5 } });
      expect(await depth(c, q.final.url)).toBe(5);
      const entries = (await auditLog.read({ limit: 1 })).entries;
      expect(entries[0]?.counts).toMatchObject({ moved: 0, movedOnByReading: 5 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('redrive engine result of a chained SQS DLQ, cancelled (fauxqs)', () => {
  const c = client(SQS_ENDPOINT);

  it('a cancelled run still reports what its reads moved on (old code: the count was lost with the cancel)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'qs-sqs-chained-'));
    try {
      const q = await chain(c, 'chained-cancel', 1);
      await send(c, q.dlq.url, ['at-1', 'at-2', 'at-3']);
      await receiveOnce(c, q.dlq.url, 3); // at the limit: the first receive that meets them moves them on
      await send(c, q.dlq.url, Array.from({ length: 12 }, (_, i) => `fresh-${i}`));
      const adapter = adapterFor(SQS_ENDPOINT);
      const env: RedriveEnv = { adapter, connectionLabel: SQS_ENDPOINT, actor: 'app', auditLog: new AuditLog({ path: join(dir, 'audit.jsonl') }), configDir: dir };
      const ops = new OperationManager();
      // 2 messages per second: slow enough to cancel after the first batches.
      const snap = startRedrive(ops, env, { dlqId: q.dlq.id, selection: { kind: 'all' }, targetQueueId: q.target.id, acceptSideEffects: true, native: 'never', ratePerSecond: 2, backupPath: join(dir, 'b.jsonl') });
      for (let i = 0; i < 200 && ops.get(snap.id).moved < 2; i++) await new Promise((r) => setTimeout(r, 50));
      ops.cancel(snap.id);
      const final = await ops.wait(snap.id);
      expect(final.status).toBe('cancelled');
      const result = final.errors.at(-1)?.details?.result as RedriveResult | undefined;
      expect(result?.moved).toBeGreaterThanOrEqual(2);
      expect(result?.movedOn).toMatchObject({ queue: `${q.base}-final`, count: 3 });
      expect(await depth(c, q.final.url)).toBe(3);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('redrive of a chained SQS DLQ (local-aws-sqs, CLI)', () => {
  const c = client(SQS_ALT_ENDPOINT);
  const conn = `sqs://${SQS_REGION}?endpoint=${SQS_ALT_ENDPOINT}`;

  it("local-aws-sqs moves a message on as soon as it is visible again at the limit: the dry run's own visibility reset moves them, and it says so (old code: exit 0 and 'cannot move')", async () => {
    // Measured: local-aws-sqs, unlike AWS and fauxqs, moves a message whose receive count reached
    // the DLQ's maxReceiveCount when it becomes visible again (and counts the visibility change as
    // a receive), so the dry run's putting back moved every message it had brought to the limit.
    const dir = await mkdtemp(join(tmpdir(), 'qs-sqs-chained-'));
    try {
      const q = await chain(c, 'chained-local', 1);
      await send(c, q.dlq.url, ['a', 'b', 'c']);
      const dry = await cli(dir, ['redrive', conn, `${q.base}-dlq`, '--to', `${q.base}-target`, '--dry-run', '--json', '--accept-side-effects']);
      const plan = JSON.parse(dry.out) as RedrivePlan;
      expect(plan).toMatchObject({ examined: 3, toMove: 0, failed: 3, movedOn: { queue: `${q.base}-final`, maxReceiveCount: 1, count: 3 } });
      // The emulator moves them in a timer after the visibility reset: the count is read until it holds still.
      expect(plan.movedOn?.measuredBy).toMatch(/readings over .* until it held still/);
      expect(dry.code).toBe(EXIT.PARTIAL);
      expect(await depth(c, q.dlq.url)).toBe(0);
      expect(await depth(c, q.final.url)).toBe(3);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
