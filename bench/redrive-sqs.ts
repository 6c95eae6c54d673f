/**
 * SQS redrive benchmark (`npm run bench` prints it through bench/run.ts; `npx tsx bench/redrive-sqs.ts`
 * alone prints its own table).
 *
 * Target (issue 4): a client-side SQS redrive makes ≤ 0.35 API calls per message moved. Measured on
 * each emulator (fauxqs :4566, local-aws-sqs :4577) with `QS_BENCH_SQS_REDRIVE_N` messages (default
 * 5,000 so the bench stays under 2 minutes here; 40,000 for the scenario):
 * - "raw loop": the baseline in the same run — one ReceiveMessage(10) → SendMessageBatch →
 *   DeleteMessageBatch after another, no checks (0.3 calls/message by construction);
 * - "whole DLQ": the mover moving everything (batch 100);
 * - "filtered 2/3": the mover moving 2 of 3 messages (the skipped third is received, held out of sight
 *   and made visible again, which costs calls per skipped message: calls are divided by messages MOVED);
 * - "filtered 9/10": the same with every 10th message skipped.
 * Each row also prints the FLOOR: the fewest calls any receive → send → delete redrive needs for the
 * same messages, with every call full (10 entries): ⌈examined/10⌉ ReceiveMessage + 2 × ⌈moved/10⌉
 * (SendMessageBatch, DeleteMessageBatch) + ⌈left/10⌉ ChangeMessageVisibilityBatch (making the
 * messages left in the DLQ visible again) + 1 GetQueueAttributes of the DLQ (its depth bounds the
 * run) + 1 per target (FIFO or not, size limit). Per message moved that is (0.2 + 0.1·f) / f for a
 * moved fraction f: 0.30 for the whole DLQ, 0.40 for 2/3 — so ≤ 0.35 is reachable only when at
 * least 80 % of the examined messages move, and the filtered row says so instead of "NO" alone.
 * Messages are ~300-byte JSON bodies with 3 message attributes. Queues are created and deleted here.
 */
import { randomBytes } from 'node:crypto';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SQSClient,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
} from '@aws-sdk/client-sqs';
import { SqsAdapter } from '../core/adapters/sqs';
import type { MoveHooks } from '../core/adapters/redrive-types';

/** One row: `calls` SQS requests for `moved` messages in `seconds`. */
export interface SqsRedriveBenchRow {
  name: string;
  moved: number;
  calls: number;
  seconds: number;
  callsPerMessage: number;
  /** Calls per message examined (moved + skipped): what a filtered run costs per message read. */
  callsPerExamined: number;
  perSecond: number;
  /** msgs/s relative to the raw loop on the same emulator (1 for the raw loop itself). */
  vsRaw: number;
  /** The fewest calls per message moved any redrive of the same messages needs (see the file comment). */
  floorPerMessage: number;
}

/** Fewest SQS calls for a receive → send → delete redrive examining `examined` and moving `moved` (full batches of 10; see the file comment). */
export function callFloor(examined: number, moved: number, setupCalls: number): number {
  const c = (x: number): number => Math.ceil(x / 10);
  return c(examined) + 2 * c(moved) + c(examined - moved) + setupCalls;
}

const CREDS = { accessKeyId: 'test', secretAccessKey: 'test' };
const EMULATORS = [
  { label: 'fauxqs', endpoint: process.env.QUEUESCOPE_SQS_ENDPOINT ?? 'http://127.0.0.1:4566' },
  { label: 'local-aws-sqs', endpoint: process.env.QUEUESCOPE_SQS_ALT_ENDPOINT ?? 'http://127.0.0.1:4577' },
];

function entries(n: number, from: number): Omit<SendMessageBatchRequestEntry, 'Id'>[] {
  return Array.from({ length: n }, (_, i) => ({
    MessageBody: JSON.stringify({ n: from + i, orderId: `A-${from + i}`, error: { status: 503, message: 'upstream timeout' }, pad: 'x'.repeat(180) }),
    MessageAttributes: {
      errorClass: { DataType: 'String', StringValue: 'transient' },
      attempt: { DataType: 'Number', StringValue: '3' },
      tenant: { DataType: 'String', StringValue: 't-1' },
    },
  }));
}

async function seed(c: SQSClient, url: string, n: number): Promise<void> {
  const all = entries(n, 0);
  const chunks: Omit<SendMessageBatchRequestEntry, 'Id'>[][] = [];
  for (let i = 0; i < all.length; i += 10) chunks.push(all.slice(i, i + 10));
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let ch = chunks.shift(); ch !== undefined; ch = chunks.shift()) {
        await c.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: ch.map((e, j) => ({ ...e, Id: `s${j}` })) }));
      }
    }),
  );
}

/** The baseline: receive 10 → send them → delete them, one call at a time, until a receive is empty twice. */
async function rawLoop(c: SQSClient, from: string, to: string): Promise<{ moved: number; calls: number }> {
  let moved = 0;
  let calls = 0;
  let empty = 0;
  while (empty < 2) {
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    const r = await c.send(new ReceiveMessageCommand({ QueueUrl: from, MaxNumberOfMessages: 10, VisibilityTimeout: 60, AttributeNames: ['All'], MessageAttributeNames: ['All'] }));
    calls++;
    const ms = r.Messages ?? [];
    if (ms.length === 0) {
      empty++;
      continue;
    }
    empty = 0;
    await c.send(new SendMessageBatchCommand({ QueueUrl: to, Entries: ms.map((m, j) => ({ Id: `e${j}`, MessageBody: m.Body ?? '', MessageAttributes: m.MessageAttributes ?? {} })) }));
    await c.send(new DeleteMessageBatchCommand({ QueueUrl: from, Entries: ms.map((m, j) => ({ Id: `d${j}`, ReceiptHandle: m.ReceiptHandle ?? '' })) }));
    calls += 2;
    moved += ms.length;
  }
  return { moved, calls };
}

/** The runs of the mover: every message, 2 of 3 (every 3rd skipped), 9 of 10 (every 10th skipped). */
const RUNS = [
  { key: 'w', label: 'whole DLQ', skipEvery: 0 },
  { key: 'f', label: 'filtered 2/3', skipEvery: 3 },
  { key: 'g', label: 'filtered 9/10', skipEvery: 10 },
] as const;

function hooks(targetId: string, skipEvery: number): MoveHooks {
  return {
    gate: () => Promise.resolve(),
    decide: (m) => (skipEvery > 0 && (JSON.parse(m.body.data) as { n: number }).n % skipEvery === 0 ? { action: 'skip', reason: 'not selected' } : { action: 'move', targetQueueId: targetId }),
    beforeMove: () => Promise.resolve(),
    onBatch: () => undefined,
  };
}

/** Runs the raw loop and the mover's runs ({@link RUNS}) on each emulator. */
export async function benchRedriveSqs(n = Number(process.env.QS_BENCH_SQS_REDRIVE_N ?? 5_000)): Promise<SqsRedriveBenchRow[]> {
  const rows: SqsRedriveBenchRow[] = [];
  for (const { label, endpoint } of EMULATORS) {
    const c = new SQSClient({ region: 'us-east-1', endpoint, credentials: CREDS });
    const adapter = new SqsAdapter({ kind: 'sqs', region: 'us-east-1', endpoint, ...CREDS });
    const base = `qs-bench-redrive-${randomBytes(4).toString('hex')}`;
    const urls: string[] = [];
    const mk = async (name: string): Promise<string> => {
      const url = (await c.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl ?? '';
      urls.push(url);
      return url;
    };
    try {
      const raw = { dlq: await mk(`${base}-raw-dlq`), target: await mk(`${base}-raw`) };
      await seed(c, raw.dlq, n);
      let t = performance.now();
      const r = await rawLoop(c, raw.dlq, raw.target);
      const rawSeconds = (performance.now() - t) / 1000;
      const rawRate = r.moved / rawSeconds;
      // The raw loop's setup calls: its two closing empty receives.
      rows.push({ name: `${label}: raw loop (baseline)`, moved: r.moved, calls: r.calls, seconds: rawSeconds, callsPerMessage: r.calls / r.moved, callsPerExamined: r.calls / r.moved, perSecond: rawRate, vsRaw: 1, floorPerMessage: callFloor(r.moved, r.moved, 2) / r.moved });
      for (const run of RUNS) {
        const q = { dlq: await mk(`${base}-${run.key}-dlq`), target: await mk(`${base}-${run.key}`) };
        await seed(c, q.dlq, n);
        t = performance.now();
        const s = await adapter.redrive.moveClientSide({ sourceQueueId: `sqs:${q.dlq}`, batchSize: 100, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, hooks(`sqs:${q.target}`, run.skipEvery));
        const seconds = (performance.now() - t) / 1000;
        const calls = s.apiCalls ?? NaN;
        rows.push({
          name: `${label}: mover, ${run.label}`,
          moved: s.moved,
          calls,
          seconds,
          callsPerMessage: calls / s.moved,
          callsPerExamined: calls / s.examined,
          perSecond: s.moved / seconds,
          vsRaw: s.moved / seconds / rawRate,
          floorPerMessage: callFloor(s.examined, s.moved, 2) / s.moved,
        });
      }
    } finally {
      for (const url of urls) await c.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
      await adapter.close();
      c.destroy();
    }
  }
  return rows;
}

/** The target column: met, missed, or unreachable because the floor itself is above 0.35. */
export function targetCell(r: SqsRedriveBenchRow): string {
  if (r.name.includes('raw')) return '';
  if (r.callsPerMessage <= 0.35) return 'yes';
  return r.floorPerMessage > 0.35 ? `NO — unreachable at this filter ratio (floor ${r.floorPerMessage.toFixed(3)}; ≤ 0.35 needs ≥ 80 % moved)` : 'NO';
}

if (require.main === module) {
  void (async () => {
    const { default: Table } = await import('cli-table3');
    const table = new Table({ head: ['SQS redrive', 'moved', 'API calls', 'calls/msg moved', 'floor calls/msg moved', 'calls/msg examined', 'seconds', 'msg/s', '× raw', 'target ≤ 0.35 calls/msg'] });
    for (const r of await benchRedriveSqs()) {
      table.push([r.name, r.moved, r.calls, r.callsPerMessage.toFixed(3), r.floorPerMessage.toFixed(3), r.callsPerExamined.toFixed(3), r.seconds.toFixed(1), Math.round(r.perSecond), r.vsRaw.toFixed(2), targetCell(r)]);
    }
    process.stdout.write(`${table.toString()}\n`);
  })();
}
