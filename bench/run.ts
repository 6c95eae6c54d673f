/**
 * `npm run bench`: the performance targets of the foundation, measured against the real
 * local brokers, printed as a table. Not a test: it prints numbers and the targets beside them.
 *
 * Targets: read 100k Redis stream entries and 100k failed BullMQ jobs into the message model at
 * ≥ 50k messages/s end to end with bounded peak RSS; list 1,000 RabbitMQ queues in < 2 s.
 */
import Table from 'cli-table3';
import { benchRedisRead } from './redis-read';
import { benchRabbitmqList } from './rabbitmq-list';
import { benchRedriveSqs, targetCell as sqsTargetCell } from './redrive-sqs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { AnalysisBenchResult } from './analysis';
import { machineNote, type InspectSummaryResult } from './inspect-summary';

async function main(): Promise<void> {
  const table = new Table({ head: ['benchmark', 'items', 'seconds', 'items/s', 'peak RSS MB', 'target', 'met'] });
  // The pure-CPU analysis rows first, in a process of their own: run after the broker rows, they
  // shared the two cores with a Redis and a RabbitMQ still busy with the messages those rows wrote
  // (load 2+ here), and their CPU time per message rose with it; in this process, the 210k messages
  // they hold would have raised the peak RSS of the rows after them. The table keeps its order.
  const analysisRows = benchInChild<AnalysisBenchResult>('analysis.ts');
  // The app-summary rows likewise, right after (they read a Redis list, but Redis is idle then).
  const inspectRows = benchInChild<InspectSummaryResult>('inspect-summary.ts');
  for (const r of await benchRedisRead()) {
    table.push([r.name, r.messages.toLocaleString('en'), r.seconds.toFixed(2), Math.round(r.perSecond).toLocaleString('en'), r.peakRssMb.toFixed(0), '≥ 50,000 msg/s', r.perSecond >= 50_000 ? 'yes' : 'NO']);
  }
  for (const r of await benchRabbitmqList()) {
    table.push([r.name, r.queues.toLocaleString('en'), r.seconds.toFixed(2), Math.round(r.queues / r.seconds).toLocaleString('en'), '', '< 2 s', r.seconds < 2 ? 'yes' : 'NO']);
  }
  for (const r of analysisRows) {
    if (r.reference === true) {
      table.push([r.name, r.messages.toLocaleString('en'), r.seconds.toFixed(2), Math.round(r.perSecond).toLocaleString('en'), r.peakRssMb.toFixed(0), `machine reference, no target; here ${Math.round(r.cpuPerSecond).toLocaleString('en')}/s CPU`, '—']);
      continue;
    }
    table.push([r.name, r.messages.toLocaleString('en'), r.seconds.toFixed(2), Math.round(r.perSecond).toLocaleString('en'), r.peakRssMb.toFixed(0), `≥ 100,000 msg/s by CPU time, one core (1 KiB JSON); here ${Math.round(r.cpuPerSecond).toLocaleString('en')}/s CPU (median run; fastest ${Math.round(r.messages / r.minCpuSeconds).toLocaleString('en')}/s)`, r.cpuPerSecond >= 100_000 ? 'yes' : 'NO']);
  }
  for (const r of await benchRedriveSqs()) table.push([`SQS redrive ${r.name} (${r.callsPerMessage.toFixed(3)} API calls/msg moved, floor ${r.floorPerMessage.toFixed(3)}; ${r.callsPerExamined.toFixed(3)}/msg examined; ${r.vsRaw.toFixed(2)}× raw loop)`, r.moved.toLocaleString('en'), r.seconds.toFixed(2), Math.round(r.perSecond).toLocaleString('en'), '', r.name.includes('raw') ? 'baseline' : '≤ 0.35 API calls/msg moved', sqsTargetCell(r)]);
  for (const r of inspectRows) table.push([r.name, r.messages.toLocaleString('en'), r.seconds.toFixed(2), Math.round(r.perSecond).toLocaleString('en'), r.peakRssMb.toFixed(0), `< 2 s CPU for 100k (app summary); here ${r.cpuSeconds.toFixed(2)} s CPU (median run; runs ${r.cpuRuns.map((c) => c.toFixed(2)).join(', ')}; ${r.seconds.toFixed(2)} s wall; ${machineNote(r)})`, r.cpuSeconds < 2 ? 'yes' : 'NO']);
  for (const r of await (await import('./redrive-redis')).benchRedisRedrive()) table.push([`Redis ${r.name}`, r.items.toLocaleString('en'), r.seconds.toFixed(2), Math.round(r.perSecond).toLocaleString('en'), r.peakRssMb?.toFixed(0) ?? '', r.target, r.met]);
  for (const r of await (await import('./redrive-rabbitmq')).benchRabbitmqRedrive()) table.push([r.name, r.messages.toLocaleString('en'), r.seconds.toFixed(2), Math.round(r.perSecond).toLocaleString('en'), r.peakRssMb ? r.peakRssMb.toFixed(0) : '', r.target, r.met]);
  for (const r of await (await import('./tuning')).benchTuning()) table.push([r.name, r.items.toLocaleString('en'), r.seconds.toFixed(2), Math.round(r.perSecond).toLocaleString('en'), '', r.target, r.met]);
  for (const r of await (await import('./redrive-engine')).benchRedriveEngine()) table.push([r.name, r.messages.toLocaleString('en'), r.seconds.toFixed(2), Math.round(r.perSecond).toLocaleString('en'), r.peakRssMb !== null ? r.peakRssMb.toFixed(0) : '', r.target, r.met]);
  process.stdout.write(`${table.toString()}\n`);
}

/** Runs `bench/<file>` in a fresh Node process (`--json`) and returns its rows. Throws when it fails. */
function benchInChild<T>(file: string): T[] {
  const out = execFileSync(process.execPath, ['--import', 'tsx', join(__dirname, file), '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1024 * 1024 });
  return JSON.parse(out) as T[];
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
