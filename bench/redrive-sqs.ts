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
 *   and made visible again, which costs calls per skipped message: calls are divided by messages MOVED).
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

function hooks(targetId: string, filtered: boolean): MoveHooks {
  return {
    gate: () => Promise.resolve(),
    decide: (m) => ((JSON.parse(m.body.data) as { n: number }).n % 3 === 0 && filtered ? { action: 'skip', reason: 'not selected' } : { action: 'move', targetQueueId: targetId }),
    beforeMove: () => Promise.resolve(),
    onBatch: () => undefined,
  };
}

/** Runs the three measurements on each emulator. */
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
      rows.push({ name: `${label}: raw loop (baseline)`, moved: r.moved, calls: r.calls, seconds: rawSeconds, callsPerMessage: r.calls / r.moved, callsPerExamined: r.calls / r.moved, perSecond: rawRate, vsRaw: 1 });
      for (const filtered of [false, true]) {
        const q = { dlq: await mk(`${base}-${filtered ? 'f' : 'w'}-dlq`), target: await mk(`${base}-${filtered ? 'f' : 'w'}`) };
        await seed(c, q.dlq, n);
        t = performance.now();
        const s = await adapter.redrive.moveClientSide({ sourceQueueId: `sqs:${q.dlq}`, batchSize: 100, cutoffMs: Date.now(), maxMessages: null, dryRun: false }, hooks(`sqs:${q.target}`, filtered));
        const seconds = (performance.now() - t) / 1000;
        const calls = s.apiCalls ?? NaN;
        rows.push({
          name: `${label}: mover, ${filtered ? 'filtered 2/3' : 'whole DLQ'}`,
          moved: s.moved,
          calls,
          seconds,
          callsPerMessage: calls / s.moved,
          callsPerExamined: calls / s.examined,
          perSecond: s.moved / seconds,
          vsRaw: s.moved / seconds / rawRate,
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

if (require.main === module) {
  void (async () => {
    const { default: Table } = await import('cli-table3');
    const table = new Table({ head: ['SQS redrive', 'moved', 'API calls', 'calls/msg moved', 'calls/msg examined', 'seconds', 'msg/s', '× raw', 'target ≤ 0.35 calls/msg'] });
    for (const r of await benchRedriveSqs()) {
      table.push([r.name, r.moved, r.calls, r.callsPerMessage.toFixed(3), r.callsPerExamined.toFixed(3), r.seconds.toFixed(1), Math.round(r.perSecond), r.vsRaw.toFixed(2), r.name.includes('raw') ? '' : r.callsPerMessage <= 0.35 ? 'yes' : 'NO']);
    }
    process.stdout.write(`${table.toString()}\n`);
  })();
}
