/**
 * Analysis benchmark (`npm run bench` prints it through bench/run.ts; `npx tsx bench/analysis.ts`
 * prints it alone). Pure CPU, one core, no broker.
 *
 * Builds a realistic mix of ~1 KiB JSON bodies (ID-only commands with business keys, embedded
 * orders, CloudEvents, SNS-wrapped events, BullMQ jobs with random keys, duplicates), then times
 * the per-queue summary (`createQueueSummary().add()` for every message: key extraction, key
 * verdict, payload verdict, size check, grouping) over 10k and 100k messages, and
 * `analyzeMessage(detail: 'full')` (with field annotations, what the message view uses) over 100k.
 * Messages are built before timing; each timed run follows an untimed warm-up of 5k messages.
 *
 * Target (issue 3): ≥ 100,000 messages/s, time linear in message count (100k/10k time ≈ 10).
 */
import { analyzeMessage, createQueueSummary } from '../shared/analysis';
import type { QueueMessage } from '../shared/domain';

export interface AnalysisBenchResult {
  name: string;
  messages: number;
  seconds: number;
  perSecond: number;
  peakRssMb: number;
  avgBodyBytes: number;
  /** Process CPU time of the timed run (user + system), s: on a shared machine the steadier number. */
  cpuSeconds: number;
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const hex = (r: () => number, n: number): string => Array.from({ length: n }, () => Math.floor(r() * 16).toString(16)).join('');
const uuid = (r: () => number): string => `${hex(r, 8)}-${hex(r, 4)}-4${hex(r, 3)}-a${hex(r, 3)}-${hex(r, 12)}`;

function pad(o: Record<string, unknown>, target: number): Record<string, unknown> {
  const len = JSON.stringify(o).length;
  if (len < target - 20) o.note = 'x'.repeat(target - len - 12);
  return o;
}

/** One message of the mix (index i decides the style, so runs are reproducible). */
export function benchMessage(i: number, r: () => number): QueueMessage {
  const orderId = `A-${100000 + (i % 90000)}`;
  const customer = { id: `C-${i % 977}`, email: `buyer${i % 977}@example.com`, name: 'Ana Souza', shippingAddress: { line1: 'Rua das Flores 12', city: 'Lisboa', postalCode: '1200-195', country: 'PT' } };
  const items = Array.from({ length: 3 }, (_, k) => ({ sku: `SKU-${100 + ((i + k) % 900)}`, quantity: 1 + k, unitPriceCents: 500 + k * 250 }));
  let body: Record<string, unknown>;
  let headers: Record<string, string> = {};
  let queueId = 'rabbitmq:%2F/orders';
  let id = `m-${i}`;
  let meta: QueueMessage['meta'] = {};
  switch (i % 6) {
    case 0:
      body = pad({ orderId, operation: 'charge', idempotencyKey: `${orderId}:charge`, amountCents: 1000 + (i % 5000), currency: 'EUR', customerId: customer.id, requestedAt: new Date(1_790_000_000_000 + i * 1000).toISOString() }, 1024);
      break;
    case 1:
      body = pad({ type: 'order.updated', order: { id: orderId, status: 'paid', customer, items, totalCents: 4200, updatedAt: '2026-06-01T10:00:00Z' } }, 1024);
      break;
    case 2:
      body = pad({ specversion: '1.0', id: uuid(r), source: '/shop/orders', type: 'com.shop.order.created', time: '2026-06-01T10:00:00Z', data: { orderId, amountCents: 4200, items } }, 1024);
      break;
    case 3: {
      const inner = JSON.stringify({ orderId, event: 'shipped', carrier: 'DHL', trackingNumber: `TRK${i}` });
      body = pad({ Type: 'Notification', MessageId: uuid(r), TopicArn: 'arn:aws:sns:us-east-1:000000000000:orders', Message: inner, Timestamp: '2026-06-01T10:00:00.000Z', SignatureVersion: '1', Signature: hex(r, 64) }, 1024);
      queueId = 'sqs:http://127.0.0.1:4566/000000000000/orders';
      break;
    }
    case 4:
      body = pad({ orderId, operation: 'refund', amountCents: 990, idempotencyKey: uuid(r) }, 1024);
      queueId = 'bullmq:payments';
      id = String(i);
      meta = { jobName: 'refund' };
      break;
    default:
      headers = { 'Idempotency-Key': `${orderId}:ship` };
      body = pad({ orderId, warehouse: 'LIS-1' }, 1024);
  }
  const data = JSON.stringify(body);
  return { id, queueId, queueName: 'orders', position: i, body: { encoding: 'utf8', data, sizeBytes: data.length, truncated: false }, headers, properties: {}, meta };
}

function build(n: number, seed: number): QueueMessage[] {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => benchMessage(i, r));
}

function timed(name: string, messages: QueueMessage[], run: (ms: QueueMessage[]) => void): AnalysisBenchResult {
  run(build(5000, 99)); // warm-up: JIT, caches
  let peak = process.memoryUsage().rss;
  const cpu0 = process.cpuUsage();
  const started = process.hrtime.bigint();
  run(messages);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  peak = Math.max(peak, process.memoryUsage().rss);
  const avg = messages.reduce((s, m) => s + m.body.sizeBytes, 0) / Math.max(1, messages.length);
  return { name, messages: messages.length, seconds, perSecond: messages.length / seconds, peakRssMb: peak / 1024 / 1024, avgBodyBytes: avg, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

const summarize = (ms: QueueMessage[]): void => {
  const acc = createQueueSummary();
  for (const m of ms) acc.add(m);
  acc.result();
};

const analyzeFull = (ms: QueueMessage[]): void => {
  for (const m of ms) analyzeMessage(m);
};

/** Runs the analysis benchmark rows. */
export function benchAnalysis(): AnalysisBenchResult[] {
  const small = timed('analysis: queue summary, 10k msgs', build(10_000, 1), summarize);
  const large = timed('analysis: queue summary, 100k msgs', build(100_000, 2), summarize);
  const full = timed('analysis: analyzeMessage full detail, 100k', build(100_000, 3), analyzeFull);
  const cpuRate = (r: AnalysisBenchResult): string => `CPU ${Math.round(r.messages / r.cpuSeconds / 1000)}k/s`;
  small.name += ` (${cpuRate(small)})`;
  large.name += ` (${cpuRate(large)}; ${(large.seconds / small.seconds).toFixed(1)}× the 10k time, 10 = linear)`;
  full.name += ` (${cpuRate(full)})`;
  return [small, large, full];
}

if (require.main === module) {
  const rows = benchAnalysis();
  for (const r of rows) process.stdout.write(`${r.name.padEnd(96)} ${r.messages.toLocaleString('en').padStart(8)} msgs  ${r.seconds.toFixed(3)} s  ${Math.round(r.perSecond).toLocaleString('en').padStart(9)} msg/s  body ${Math.round(r.avgBodyBytes)} B  RSS ${r.peakRssMb.toFixed(0)} MB\n`);
}
