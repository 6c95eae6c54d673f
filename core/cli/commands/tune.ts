import { existsSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { Option, type Command } from 'commander';
import { QueuescopeError } from '../../../shared/domain';
import { DEFAULT_FACTOR, TUNING_SOURCES, formatMs, smallSampleWarning, type DurationStats, type HerdSimulation, type RetryPolicy, type TuningReport, type TuningSource } from '../../../shared/tuning';
import { findProjectConfig, loadProjectConfig } from '../../config/project-file';
import { AuditLog } from '../../services/audit-log';
import { defaultConfigDir } from '../../services/profile-store';
import { OperationManager } from '../../services/operations';
import { applyTimeout, startTuneOperation, type TuneOptions } from '../../tuning';
import type { DurationFormat, DurationUnit } from '../../../shared/tuning';
import { flagsOf, resolveQueue, splitPositionals, throwOperationFailure, waitWithProgress, type CliContext } from '../context';
import { EXIT, EXIT_CODES_HELP } from '../exit-codes';
import { cell, escapeForTerminal, toJson } from '../format';
import { projectFileNote } from '../resolve-config';

interface TuneOpts {
  source?: TuningSource;
  window: string;
  interval?: string;
  file?: string;
  format?: DurationFormat;
  unit: DurationUnit;
  field?: string;
  regex?: string;
  factor?: string;
  config?: string;
  current?: string;
  consumerOverride?: string;
  group?: string;
  attempts?: string;
  backoff?: 'fixed' | 'exponential';
  delay?: string;
  jitter?: string;
  cap?: string;
  peekReceiveCounts?: boolean;
  apply?: boolean;
  yes?: boolean;
  failOn?: 'risk';
  json?: boolean;
  profile?: string;
  managementUrl?: string;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000 };

/**
 * Parses a duration such as `500ms`, `60s`, `1.5s`, `2m`, `1h` into ms.
 * @param bareUnit unit of a bare number (null: a unit is required).
 * @throws QueuescopeError `INVALID_INPUT` naming the option.
 */
export function parseDuration(text: string, option: string, bareUnit: 'ms' | 's' | null): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*$/i.exec(text);
  const unit = m?.[2]?.toLowerCase() ?? bareUnit;
  if (!m || unit === null) {
    throw new QueuescopeError('INVALID_INPUT', `${option} must be a duration like 500ms, 30s, 5m or 1h${bareUnit === null ? ' (with its unit)' : ''}, got "${cell(text, 40)}".`);
  }
  return Number(m[1]) * (UNIT_MS[unit] ?? 1);
}

/** `queuescope tune <connection> <queue>`: measures processing time and recommends the visibility timeout (or the broker's equivalent). */
export function register(program: Command, ctx: CliContext): void {
  program
    .command('tune')
    .description("measure processing time and recommend the visibility timeout (or the broker's equivalent); check the retry schedule")
    .argument('[connection]', 'broker URL or saved connection (default: from the environment)')
    .argument('[queue]', 'queue name or id')
    .addOption(new Option('--source <source>', 'where processing times come from (default: the first available for the queue)').choices([...TUNING_SOURCES]))
    .option('--window <duration>', 'sampling window for pel / littles-law (e.g. 60s, 5m; a bare number is seconds)', '60s')
    .option('--interval <duration>', 'time between two samples (default: pel 100ms, littles-law SQS 1s / RabbitMQ 5s)')
    .option('--file <path>', 'durations file for --source file (CSV, JSONL, or a log with --regex)')
    .addOption(new Option('--format <format>', 'durations file format (default: from the extension)').choices(['csv', 'jsonl', 'log']))
    .addOption(new Option('--unit <unit>', 'unit of the numbers in the durations file').choices(['ms', 's']).default('ms'))
    .option('--field <name>', 'CSV column (name or 1-based number) / JSONL field (dotted path) holding the duration')
    .option('--regex <regex>', 'log lines: a regex with one capture group around the duration, e.g. "took (\\d+)ms"')
    .option('--factor <n>', 'safety factor applied to p99 (default: tune.safetyFactor of the project file, else 3)')
    .option('--config <file>', 'project file (default: queuescope.config.json/.yaml found upward) for tune.safetyFactor')
    .option('--current <duration>', "the timeout in force when the broker cannot tell (BullMQ lockDuration, a stream claimer's min-idle-time, RabbitMQ consumer_timeout), e.g. 30s")
    .option('--consumer-override <duration>', 'SQS: the VisibilityTimeout your consumer passes to ReceiveMessage (the effective value), e.g. 60s')
    .option('--group <name>', 'Redis Streams: the consumer group to sample (default: the first)')
    .option('--attempts <n>', 'retry check: deliveries including the first (BullMQ attempts)')
    .addOption(new Option('--backoff <type>', 'retry check: backoff type').choices(['fixed', 'exponential']))
    .option('--delay <duration>', 'retry check: base backoff delay, e.g. 1s')
    .option('--jitter <fraction>', "retry check: jitter 0-1 (BullMQ's meaning; 1 = full jitter)")
    .option('--cap <duration>', 'retry check: largest single wait')
    .option('--peek-receive-counts', 'SQS: receive up to 10 messages (VisibilityTimeout 0) to read ApproximateReceiveCount — each counts as a receive, so it can move messages at maxReceiveCount to the DLQ')
    .option('--apply', 'change the timeout on the broker (SQS VisibilityTimeout); without --yes only shows the change and exits 8 (not confirmed)')
    .option('--yes', 'confirm --apply')
    .addOption(new Option('--fail-on <what>', 'exit 6 when the current timeout (SQS: --consumer-override wins over the queue attribute) is below the recommendation (for CI); 9 when it cannot tell (nothing measured, or the current timeout unknown: pass --current)').choices(['risk']))
    .option('--profile <name>', 'use a connection saved in the app (name or id)')
    .option('--management-url <url>', 'RabbitMQ management API base URL (default: derived from the AMQP URL)')
    .option('--json', 'print the report as JSON (durations in ms)')
    .addHelpText(
      'after',
      `
All durations in the report are milliseconds internally; the text shows units. The recommendation is
p99 × factor, rounded up, within the broker's limits (SQS 0 s – 12 h). Sources: bullmq (exact job
times), pel (Redis Streams pending entries, bounded), littles-law (RabbitMQ management API / SQS
attributes while draining: a mean only), cloudwatch (SQS on AWS), file (imported durations).
Only SQS can be changed (--apply --yes: SetQueueAttributes, logged to the audit log in the config
folder); other brokers get a copyable snippet.
${EXIT_CODES_HELP}
  tune: 6 with --fail-on risk when the current timeout is below the recommendation;
  9 (incomplete) when it cannot tell: no recommendation (nothing measured), or the
  current timeout unknown (a stream claimer's min-idle-time: pass --current).
`,
    )
    .action(async (a1: string | undefined, a2: string | undefined, opts: TuneOpts) => {
      const { connection, queue } = splitPositionals(a1, a2, opts.profile !== undefined ? { profile: opts.profile } : {});
      // Before loading: a file that does not load should still say which one was picked.
      const fileNote = opts.factor === undefined && opts.config === undefined ? projectFileNote(findProjectConfig(ctx.cwd), existsSync) : null;
      if (fileNote !== null) ctx.err(`${escapeForTerminal(fileNote)}\n`);
      const project = opts.factor === undefined ? await loadProjectConfig({ cwd: ctx.cwd, ...(opts.config !== undefined ? { explicitPath: opts.config } : {}) }) : null;
      const factor = opts.factor !== undefined ? Number(opts.factor) : (project?.config.tune.safetyFactor ?? DEFAULT_FACTOR);
      if (!Number.isFinite(factor) || factor < 1 || factor > 100) throw new QueuescopeError('INVALID_INPUT', `--factor must be a number from 1 to 100, got "${cell(opts.factor ?? String(factor), 40)}".`);
      if (opts.source === 'file' && opts.file === undefined) throw new QueuescopeError('INVALID_INPUT', '--source file needs --file <path>.');
      if (opts.yes === true && opts.apply !== true) throw new QueuescopeError('INVALID_INPUT', '--yes confirms --apply; pass both.');
      const options: TuneOptions = {
        windowMs: parseDuration(opts.window, '--window', 's'),
        factor,
        ...(opts.source !== undefined ? { source: opts.source } : opts.file !== undefined ? { source: 'file' as const } : {}),
        ...(opts.interval !== undefined ? { intervalMs: parseDuration(opts.interval, '--interval', null) } : {}),
        ...(opts.current !== undefined ? { currentTimeoutMs: parseDuration(opts.current, '--current', null) } : {}),
        ...(opts.consumerOverride !== undefined ? { consumerOverrideMs: parseDuration(opts.consumerOverride, '--consumer-override', null) } : {}),
        ...(opts.group !== undefined ? { group: opts.group } : {}),
        ...(opts.peekReceiveCounts === true ? { acceptSideEffects: true } : {}),
        ...(opts.file !== undefined
          ? {
              file: {
                path: resolvePath(ctx.cwd, opts.file),
                unit: opts.unit,
                ...(opts.format !== undefined ? { format: opts.format } : {}),
                ...(opts.field !== undefined ? { field: opts.field } : {}),
                ...(opts.regex !== undefined ? { regex: opts.regex } : {}),
              },
            }
          : {}),
      };
      const policy = retryPolicyFromOpts(opts);
      if (policy) options.retryPolicy = policy;

      await ctx.withAdapter(flagsOf(connection, { ...(opts.profile !== undefined ? { profile: opts.profile } : {}), ...(opts.managementUrl !== undefined ? { managementUrl: opts.managementUrl } : {}) }), async (adapter, resolved) => {
        if (resolved.config.kind === 'snapshot') throw new QueuescopeError('INVALID_INPUT', 'tune needs a live broker connection, not a snapshot file.');
        const q = await resolveQueue(adapter, queue, resolved, ctx.signal);
        const ops = new OperationManager();
        const op = startTuneOperation(ops, `Tune ${q.name}`, adapter, q.id, options);
        const final = await waitWithProgress(ctx, ops, op.id, { label: 'measuring', unit: '‰ of window', jsonLines: false, ...(opts.json === true ? { json: true } : {}) });
        if (final.status === 'cancelled') throw new QueuescopeError('CANCELLED', 'The measurement was cancelled.');
        if (final.status === 'failed') throwOperationFailure(final, 'The measurement failed.');
        const report = (final.result as { report: TuningReport }).report;
        const rec = report.recommendation;
        let applied: { before: Record<string, string>; after: Record<string, string> } | null = null;
        if (opts.apply === true) {
          if (!rec) throw new QueuescopeError('INVALID_INPUT', `Nothing to apply: ${report.noRecommendationReason ?? 'no recommendation'}`);
          if (rec.target !== 'sqs') throw new QueuescopeError('UNSUPPORTED', `${rec.setting} is not a queue attribute Queuescope can change on this broker: copy the snippet from the report.`);
          const diff = `VisibilityTimeout of ${q.name}: ${report.current?.timeoutMs === null || report.current?.timeoutMs === undefined ? '?' : String(report.current.timeoutMs / 1000)} s → ${String(rec.recommendedMs / 1000)} s`;
          if (opts.yes !== true) {
            ctx.err(`would change ${escapeForTerminal(diff)}\nnothing changed: pass --apply --yes to apply it.\n`);
            ctx.setExitCode(EXIT.NOT_CONFIRMED);
          } else {
            const log = new AuditLog({ configDir: defaultConfigDir(ctx.io.env) });
            applied = await applyTimeout(adapter, q.id, rec.recommendedMs, log, { actor: 'cli', connection: resolved.label, reason: `queuescope tune: p99 × ${factor}` }, ctx.signal);
          }
        }
        if (opts.json === true) ctx.out(toJson({ ...report, applied }));
        else {
          ctx.out(renderReport(report, ctx.width));
          if (applied) ctx.out(`\nApplied: VisibilityTimeout ${cell(applied.before.VisibilityTimeout)} s → ${cell(applied.after.VisibilityTimeout)} s (logged in the audit log).\n`);
        }
        if (opts.failOn === 'risk') {
          // A gate that cannot compare must not pass: no recommendation, or no current timeout to compare with, is incomplete (9).
          // The effective timeout is compared: a consumer's ReceiveMessage override wins over the queue attribute, also over one just applied.
          const overrideMs = rec?.target === 'sqs' ? (options.consumerOverrideMs ?? null) : null;
          const cur = overrideMs ?? (applied && rec ? rec.recommendedMs : (report.current?.timeoutMs ?? null));
          const what = overrideMs !== null ? `the consumer's ReceiveMessage VisibilityTimeout (--consumer-override, which wins over the queue attribute${applied ? ' just applied' : ''})` : `the current ${escapeForTerminal(rec?.setting ?? 'timeout')}`;
          if (!rec) {
            ctx.err(`fail-on risk: nothing checked — no recommendation (${escapeForTerminal(report.noRecommendationReason ?? 'no processing times were measured')}). Exit ${String(EXIT.INCOMPLETE)} (incomplete).\n`);
            ctx.setExitCode(EXIT.INCOMPLETE);
          } else if (cur === null) {
            ctx.err(`fail-on risk: nothing checked — the current ${escapeForTerminal(rec.setting)} is unknown (not stored on the broker): pass --current with the value your code uses (e.g. --current 30s). Exit ${String(EXIT.INCOMPLETE)} (incomplete).\n`);
            ctx.setExitCode(EXIT.INCOMPLETE);
          } else if (cur < rec.recommendedMs) {
            ctx.err(`fail-on risk: ${what} ${formatMs(cur)} is below the recommended ${formatMs(rec.recommendedMs)}; exit ${String(EXIT.FINDINGS)}.\n`);
            ctx.setExitCode(EXIT.FINDINGS);
          }
        }
      });
    });
}

function retryPolicyFromOpts(opts: TuneOpts): RetryPolicy | null {
  if (opts.attempts === undefined && opts.backoff === undefined && opts.delay === undefined && opts.jitter === undefined && opts.cap === undefined) return null;
  const attempts = Number(opts.attempts ?? '1');
  if (!Number.isInteger(attempts) || attempts < 1 || attempts > 50) throw new QueuescopeError('INVALID_INPUT', `--attempts must be a whole number from 1 to 50, got "${cell(opts.attempts ?? '', 40)}".`);
  const jitter = Number(opts.jitter ?? '0');
  if (!Number.isFinite(jitter) || jitter < 0 || jitter > 1) throw new QueuescopeError('INVALID_INPUT', `--jitter must be a fraction from 0 to 1, got "${cell(opts.jitter ?? '', 40)}".`);
  return {
    attempts,
    type: opts.backoff ?? 'fixed',
    delayMs: opts.delay === undefined ? 0 : parseDuration(opts.delay, '--delay', null),
    jitter,
    capMs: opts.cap === undefined ? null : parseDuration(opts.cap, '--cap', null),
  };
}

const BAR = '█';

function pct(x: number): string {
  return `${(x * 100).toFixed(x < 0.001 && x > 0 ? 3 : 1)}%`;
}

function histogramText(stats: DurationStats, marks: { label: string; ms: number }[], width: number): string {
  const buckets = stats.histogram;
  const max = Math.max(1, ...buckets.map((b) => b.count));
  const barWidth = Math.max(10, Math.min(50, width - 40));
  const lines: string[] = [];
  for (const b of buckets) {
    const here = marks.filter((m) => m.ms >= b.fromMs && m.ms < b.toMs).map((m) => `← ${m.label}`);
    const len = Math.round((b.count / max) * barWidth);
    lines.push(`  ${`${formatMs(b.fromMs)}–${formatMs(b.toMs)}`.padStart(20)} │${BAR.repeat(len)}${' '.repeat(barWidth - len)} ${String(b.count).padStart(6)}  ${(b.cumulative * 100).toFixed(1).padStart(5)}%${here.length > 0 ? `  ${here.join(' ')}` : ''}`);
  }
  const beyond = marks.filter((m) => m.ms >= (buckets[buckets.length - 1]?.toMs ?? 0));
  for (const m of beyond) lines.push(`  ${m.label} at ${formatMs(m.ms)} is beyond the slowest sample (${formatMs(stats.maxMs)})`);
  return `${lines.join('\n')}\n`;
}

const SPARK = ' ▁▂▃▄▅▆▇█';

function sparkline(sim: HerdSimulation, spanMs: number, columns: number): string {
  const counts = new Array<number>(columns).fill(0);
  for (const r of sim.retries) {
    for (const t of r) {
      const i = Math.min(columns - 1, Math.floor((t / Math.max(1, spanMs)) * columns));
      counts[i] = (counts[i] ?? 0) + 1;
    }
  }
  const max = Math.max(1, ...counts);
  return counts.map((c) => (c === 0 ? ' ' : SPARK[Math.max(1, Math.round((c / max) * 8))] ?? '█')).join('');
}

/** The text report: stats, ASCII histogram, recommendation and why, snippets, retry schedule. */
export function renderReport(r: TuningReport, width: number): string {
  const e = escapeForTerminal;
  const out: string[] = [];
  const m = r.measurement;
  out.push(`Tuning ${e(r.queueName)} (${e(r.queueId)})`);
  out.push(`Source: ${m.source} — ${e(m.measures)}`);
  out.push(`Confidence: ${m.confidence} — ${e(m.confidenceNote)}`);
  if (m.startedAt !== null && m.endedAt !== null) out.push(`Window: ${formatMs(m.endedAt - m.startedAt)}, ${m.polls} poll(s)`);
  const s = r.stats;
  if (s) {
    out.push('');
    out.push(`Processing time (${s.n.toLocaleString('en-US')} samples${m.sampleErrorMs ? `, each ± ${formatMs(m.sampleErrorMs)}` : ''}):`);
    out.push(`  mean ${formatMs(s.meanMs)}   p50 ${formatMs(s.p50Ms)}   p90 ${formatMs(s.p90Ms)}   p95 ${formatMs(s.p95Ms)}   p99 ${formatMs(s.p99Ms)}   max ${formatMs(s.maxMs)}`);
    if (s.longTail) out.push(`  WARNING: long tail — p99/p50 = ${s.tailRatio?.toFixed(1) ?? '?'} (> 5)`);
    const rough = smallSampleWarning(s.n);
    if (rough !== null) out.push(`  WARNING: ${rough}`);
    const marks: { label: string; ms: number }[] = [];
    if (r.recommendation?.current) marks.push({ label: 'current', ms: r.recommendation.current.timeoutMs });
    if (r.recommendation) marks.push({ label: 'recommended', ms: r.recommendation.recommendedMs });
    out.push('');
    out.push(`  ${'bucket'.padStart(20)}  count, cumulative %`);
    out.push(histogramText(s, marks, width).replace(/\n$/, ''));
  } else if (m.meanMs !== null) {
    out.push('');
    out.push(`Mean time in flight: ${formatMs(m.meanMs)} (Little's law: a mean, not a tail)`);
  }
  if (m.redeliveries) {
    const rd = m.redeliveries;
    out.push('');
    out.push(`Redeliveries: ${rd.redelivered} of ${rd.observed} observed${rd.ratePerSecond !== null ? ` (${rd.ratePerSecond.toFixed(2)}/s)` : ''} — ${e(rd.note)}`);
    if (rd.histogram.length > 0) out.push(`  ${rd.histogram.map((h) => `${h.count}: ${h.messages}`).join('   ')}`);
  }
  out.push('');
  const c = r.current;
  if (c) out.push(`Current: ${c.timeoutMs === null ? 'unknown' : formatMs(c.timeoutMs)} — ${e(c.timeoutSource)}`);
  for (const n of c?.notes ?? []) out.push(`  note: ${e(n)}`);
  const rec = r.recommendation;
  if (!rec) out.push(`No recommendation: ${e(r.noRecommendationReason ?? '')}`);
  else {
    if (rec.current) out.push(`  ${e(rec.current.verdict)}`);
    out.push('');
    out.push(`Recommended ${e(rec.setting)}: ${formatMs(rec.recommendedMs)}${rec.unit === 's' ? ` (${rec.recommendedMs / 1000} s)` : ` (${rec.recommendedMs} ms)`}`);
    for (const why of rec.reasons) out.push(`  - ${e(why)}`);
    out.push(`  If processing outlives it: ${e(rec.whatHappens)}.`);
    for (const n of rec.brokerNotes) out.push(`  note: ${e(n)}`);
    out.push('');
    out.push(`Lease extension: ${rec.leaseExtension.advised ? 'ADVISED' : 'optional'} — ${e(rec.leaseExtension.why)}`);
    if (rec.leaseExtension.advised) {
      out.push(`  ${e(rec.leaseExtension.how)}`);
      out.push(indent(rec.leaseExtension.snippet.text));
    }
    out.push('');
    out.push('Snippet:');
    for (const sn of rec.snippets) out.push(`  [${sn.language}]\n${indent(sn.text)}`);
  }
  const rt = r.retry;
  if (rt) {
    out.push('');
    const p = rt.policy;
    out.push(`Retry schedule (${p.attempts} deliveries, ${p.type}${p.type === 'visibility-timeout' ? '' : ` delay ${formatMs(p.delayMs)}, jitter ${p.jitter}${p.capMs !== null ? `, cap ${formatMs(p.capMs)}` : ', no cap'}`}):`);
    for (const st of rt.steps) out.push(`  delivery ${String(st.attempt).padStart(2)}: wait ${st.minDelayMs !== st.delayMs ? `${formatMs(st.minDelayMs)}–` : ''}${formatMs(st.delayMs)}, at ${formatMs(st.atMs)}`);
    out.push(`  Time to DLQ (no jitter): ${formatMs(rt.totalToDlqMs)}`);
    const span = Math.max(1, ...rt.asConfigured.retries.flat(), ...rt.fullJitter.retries.flat());
    const cols = Math.max(20, Math.min(80, width - 24));
    out.push(`  100 messages failing together, retries over 0–${formatMs(span)}:`);
    out.push(`    as configured │${sparkline(rt.asConfigured, span, cols)}│ peak ${rt.asConfigured.peakPerBin}/bin`);
    out.push(`    full jitter   │${sparkline(rt.fullJitter, span, cols)}│ peak ${rt.fullJitter.peakPerBin}/bin`);
    for (const f of rt.flags) out.push(`  FLAG ${f.code}: ${e(f.message)}`);
  }
  if (m.notes.length > 0) {
    out.push('');
    for (const n of m.notes) out.push(`note: ${e(n)}`);
  }
  out.push('');
  out.push(`(durations are measured in ms; duplicate share = ${rec?.current?.duplicateShare !== null && rec?.current?.duplicateShare !== undefined ? pct(rec.current.duplicateShare) : 'n/a'})`);
  return `${out.join('\n')}\n`;
}

/** Escapes each line of a multi-line text (snippets) and indents it. */
function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `    ${escapeForTerminal(l)}`)
    .join('\n');
}
