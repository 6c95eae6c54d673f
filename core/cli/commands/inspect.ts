import type { Command } from 'commander';
import Table from 'cli-table3';
import { QueuescopeError, describeConnection } from '../../../shared/domain';
import { loadProjectConfig } from '../../config/project-file';
import { inspectQueue, type CompareTarget, type InspectReport } from '../../inspect/inspect';
import type { InspectedMessage } from '../../../shared/api/inspect';
import { resolveInspectSettings, type InspectSettingsSource } from '../../inspect/settings';
import { OperationManager } from '../../services/operations';
import { ProfileStore, defaultConfigDir } from '../../services/profile-store';
import { connectionOptions, flagsOf, resolveQueue, splitPositionals, throwOperationFailure, waitWithProgress, type CliContext, type CommonOpts } from '../context';
import { EXIT } from '../exit-codes';
import { cell, escapeForTerminal, toJson } from '../format';

interface InspectOpts extends CommonOpts {
  state?: string;
  limit?: string;
  rows: string;
  config?: string;
  failOn?: string;
  compare?: string;
  deadLetter: boolean;
  acceptSideEffects?: boolean;
}

const HELP = `
What it reports (rules: shared/analysis/README.md):
  per message   the idempotency key, where it was found (rule/source), the key verdict
                (business-derived, opaque-random, time-derived, period-key, missing) and the
                payload verdict (ok, review, flag) with its top reason
  per queue     share of business-derived keys, flagged/review payloads, large payloads,
                duplicate key groups, keys used for different operations, the same payload
                under different keys; duplicates shared with the queue's DLQ or source queue
                (and with --compare, with the same queue in another snapshot)

Rules come from --config FILE, else the project file found upward from here
(queuescope.config.json/.yaml, section "inspect"), else the rules saved with the app's
connection (--profile); otherwise the built-in ones.

Examples:
  queuescope inspect amqp://guest:guest@127.0.0.1:5672 orders.work --accept-side-effects
  queuescope inspect resources/demo-snapshot.jsonl orders.dlq --fail-on flag
  queuescope inspect --file today.jsonl orders --compare yesterday.jsonl --json`;

/** `queuescope inspect [connection] [queue]`: redelivery safety of a queue — idempotency keys and mutable-payload flags. */
export function register(program: Command, ctx: CliContext): void {
  connectionOptions(
    program
      .command('inspect')
      .description('tell per message and per queue whether redelivery is safe: idempotency keys and mutable-payload flags')
      .argument('[connection]', 'URL, snapshot file or saved connection (default: from the environment)')
      .argument('[queue]', 'queue name or id (optional for a snapshot with one queue)')
      .option('--state <state>', 'message state to read (e.g. BullMQ failed)')
      .option('--limit <n>', 'analyse at most N messages (default: the whole queue where it can be paged)')
      .option('--rows <n>', 'per-message rows to print (0-100000; --json lists up to 1000 or N)', '50')
      .option('--config <file>', 'project file with inspect rules (default: queuescope.config.json/.yaml found upward)')
      .option('--fail-on <verdict>', 'exit 6 when any message is at least this bad: flag or review')
      .option('--compare <snapshot>', 'also compare duplicate keys with the same queue in another snapshot file')
      .option('--no-dead-letter', "do not compare with the queue's DLQ / dead-letter source queues")
      .option('--accept-side-effects', 'read even where a peek can move messages to a dead-letter queue (also for compared queues)')
      .addHelpText('after', HELP),
  ).action(async (a1: string | undefined, a2: string | undefined, opts: InspectOpts) => {
    const limit = opts.limit === undefined ? undefined : Number(opts.limit);
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 10_000_000)) throw new QueuescopeError('INVALID_INPUT', `--limit must be a whole number from 1 to 10000000, got "${cell(opts.limit, 40)}".`);
    const rows = Number(opts.rows);
    if (!Number.isInteger(rows) || rows < 0 || rows > 100_000) throw new QueuescopeError('INVALID_INPUT', `--rows must be a whole number from 0 to 100000, got "${cell(opts.rows, 40)}".`);
    const failOn = opts.failOn;
    if (failOn !== undefined && failOn !== 'flag' && failOn !== 'review') throw new QueuescopeError('INVALID_INPUT', `--fail-on must be "flag" or "review", got "${cell(failOn, 40)}".`);
    const project = await loadProjectConfig({ cwd: ctx.cwd, ...(opts.config !== undefined ? { explicitPath: opts.config } : {}) });
    const { connection, queue } = splitPositionals(a1, a2, opts);

    await ctx.withAdapter(flagsOf(connection, opts), async (adapter, resolved) => {
      const q = await resolveQueue(adapter, queue, resolved, ctx.signal);
      const sources: InspectSettingsSource[] = [{ label: project.path ?? 'project file', inspect: project.path === null ? null : project.config.inspect }];
      if (resolved.profile !== undefined) {
        const store = await ProfileStore.open({ configDir: defaultConfigDir(ctx.io.env), readOnly: true });
        const saved = store.inspectSettings(resolved.profile.id);
        if (saved.problem !== null) ctx.err(`warning: ${escapeForTerminal(saved.problem)}\n`);
        sources.push({ label: `connection "${resolved.profile.name}"`, inspect: saved.settings });
      }
      const connectionName = resolved.profile?.name ?? describeConnection(resolved.config);
      const settings = resolveInspectSettings(sources, q, connectionName);
      if (!q.capabilities.canPeekNonDestructively && q.capabilities.peekSideEffects.length > 0) {
        ctx.err(`note: reading ${cell(q.name)} changes it:\n${q.capabilities.peekSideEffects.map((s) => `  - ${escapeForTerminal(s.description)}\n`).join('')}`);
      }

      const extra = opts.compare !== undefined ? await ctx.connect({ file: opts.compare }) : null;
      try {
        const compareWith: CompareTarget[] = [];
        if (extra !== null) {
          const other = await resolveQueue(extra.adapter, q.name, extra.resolved, ctx.signal);
          compareWith.push({ relation: 'snapshot', adapter: extra.adapter, queueId: other.id, label: `${other.name} in ${opts.compare ?? ''}` });
        }
        const ops = new OperationManager();
        const op = ops.start('inspect', `Inspect ${q.name}`, async (opCtx) => {
          const report = await inspectQueue(
            adapter,
            q.id,
            {
              rules: settings.rules,
              rulesSource: settings.source,
              rowLimit: Math.max(rows, 1000),
              compareDeadLetter: opts.deadLetter,
              compareWith,
              ...(opts.state !== undefined ? { state: opts.state } : {}),
              ...(limit !== undefined ? { limit } : {}),
              ...(opts.acceptSideEffects === true ? { acceptSideEffects: true } : {}),
            },
            opCtx,
          );
          return { report };
        });
        const final = await waitWithProgress(ctx, ops, op.id, { label: 'inspect', ...(opts.json === true ? { json: true } : {}), jsonLines: false });
        if (final.status === 'cancelled') throw new QueuescopeError('CANCELLED', 'Inspection cancelled.');
        if (final.status === 'failed') throwOperationFailure(final, 'The inspection failed.');
        const report = (final.result as { report: InspectReport } | null)?.report;
        if (report === undefined) throw new QueuescopeError('INTERNAL', 'The inspection returned no report.');
        if (opts.json === true) ctx.out(toJson({ ...report, ...(settings.note !== null ? { rulesNote: settings.note } : {}) }));
        else ctx.out(formatInspectReport(report, { rows, width: ctx.width, note: settings.note }));
        if (report.sideEffects.length > 0 && opts.json !== true) ctx.err(`side effects of reading:\n${report.sideEffects.map((e) => `  - ${escapeForTerminal(e)}\n`).join('')}`);
        if (failOn !== undefined) {
          const bad = report.summary.verdicts.flag + (failOn === 'review' ? report.summary.verdicts.review : 0);
          if (bad > 0) {
            ctx.setExitCode(EXIT.FINDINGS);
            if (opts.json !== true) ctx.err(`fail-on ${failOn}: ${String(bad)} message${bad === 1 ? '' : 's'} ${failOn === 'flag' ? 'flagged' : 'flagged or to review'}; exit ${String(EXIT.FINDINGS)}.\n`);
          }
        }
      } finally {
        await extra?.adapter.close().catch(() => undefined);
      }
    });
  });
}

const pct = (x: number): string => `${(x * 100).toFixed(x > 0 && x < 0.1 ? 1 : 0)}%`;
const plural = (n: number, one: string, many = `${one}s`): string => `${String(n)} ${n === 1 ? one : many}`;
const ids = (xs: string[], more: number): string => `${xs.map((x) => cell(x, 40)).join(', ')}${more > xs.length ? ', …' : ''}`;

/**
 * The human report: a summary block (counts, shares, duplicate groups, collisions, same payload
 * under different keys, DLQ/snapshot comparisons) then a table of per-message verdicts (id, key,
 * rule/source, key verdict, payload verdict, top reason). Every value from the broker is escaped.
 */
export function formatInspectReport(r: InspectReport, options: { rows: number; width: number; note?: string | null }): string {
  const s = r.summary;
  const out: string[] = [];
  const of = r.total !== null && r.total !== r.analysed ? ` of ${String(r.total)}` : '';
  out.push(`Redelivery safety of ${cell(r.queue.name, 120)} (${r.queue.kind}${r.state !== null ? `, state ${cell(r.state, 30)}` : ''}): ${plural(r.analysed, 'message')} analysed${of} in ${String(r.elapsedMs)} ms`);
  out.push(`Rules: ${cell(r.rulesSource, 200)}${options.note != null ? ` (${cell(options.note, 200)})` : ''}`);
  if (r.partial) out.push(`Partial: ${cell(r.partialReason ?? 'not every message was read', 400)}`);
  out.push('');
  const kv = s.keyVerdicts;
  out.push(`Idempotency keys: ${pct(s.businessDerivedShare)} business-derived (${String(kv['business-derived'])}), ${String(kv['opaque-random'])} opaque random, ${String(kv['time-derived'])} time-derived, ${String(kv['period-key'])} period keys, ${String(kv.missing)} missing`);
  out.push(`Payloads: ${String(s.verdicts.flag)} flag, ${String(s.verdicts.review)} review, ${String(s.verdicts.ok)} ok; ${plural(s.largePayloads, 'large payload')}`);
  // The sentence is the first message's (its size, its fields); the others share the rule, not the numbers.
  for (const reason of s.reasons.slice(0, 6)) {
    const worded = reason.count > 1 && reason.exampleIds[0] !== undefined ? ` (worded for ${cell(reason.exampleIds[0], 40)})` : '';
    out.push(`  ${reason.severity.padEnd(6)} ×${String(reason.count)}  ${cell(reason.example, 160)}${worded}  e.g. ${ids(reason.exampleIds.slice(0, 3), reason.count)}`);
  }
  out.push(`Duplicate keys: ${plural(s.duplicateGroupCount, 'group')}, ${plural(s.duplicateMessages, 'redundant copy', 'redundant copies')}`);
  for (const g of s.duplicateGroups.slice(0, 10)) out.push(`  ${cell(g.key, 60)} ×${String(g.count)}: ${ids(g.exampleIds, g.count)}`);
  if (s.keyCollisionCount > 0) {
    out.push(`Keys used for different operations: ${String(s.keyCollisionCount)}`);
    for (const c of s.keyCollisions.slice(0, 10)) out.push(`  ${cell(c.reason, 200)}`);
  }
  if (s.samePayloadDifferentKeysCount > 0) {
    out.push(`Same payload under different keys: ${plural(s.samePayloadDifferentKeysCount, 'group')}`);
    for (const g of s.samePayloadDifferentKeys.slice(0, 10)) out.push(`  ${cell(g.reason, 200)} e.g. ${ids(g.exampleIds, g.count)}`);
  }
  if (s.bounds.note !== null) out.push(`Note: ${cell(s.bounds.note, 300)}`);
  for (const c of r.comparisons) {
    const rel = c.relation === 'dead-letter-source' ? 'dead-letter source' : c.relation === 'dead-letter-target' ? 'dead-letter queue' : 'other snapshot';
    if (c.result === null) {
      out.push(`Compared with ${rel} ${cell(c.label, 100)}: not compared. ${cell(c.note ?? '', 400)}`);
      continue;
    }
    const res = c.result;
    out.push(`Compared with ${rel} ${cell(c.label, 100)} (${plural(c.read, 'message')}): ${plural(res.sharedKeyCount, 'shared key')}, ${plural(res.samePayloadDifferentKeysCount, 'payload')} under different keys`);
    for (const reason of res.reasons.slice(0, 5)) out.push(`  ${cell(reason, 300)}`);
    for (const g of res.sharedKeys.slice(0, 10)) out.push(`  ${cell(g.key, 60)}: ${String(g.countA)} here (${ids(g.exampleIdsA, g.countA)}), ${String(g.countB)} there (${ids(g.exampleIdsB, g.countB)})`);
    if (c.note !== null) out.push(`  note: ${cell(c.note, 300)}`);
  }
  if (options.rows > 0 && r.messages.length > 0) {
    out.push('');
    const keyMax = options.width >= 160 ? 40 : 28;
    const reasonMax = Math.max(30, Math.min(140, options.width - 120));
    const t = new Table({ head: ['id', 'key', 'rule / source', 'key verdict', 'verdict', 'top reason'], style: { head: [], border: [], compact: true }, wordWrap: false });
    for (const m of r.messages.slice(0, options.rows)) {
      t.push([cell(m.id, 24), cell(m.key ?? '-', keyMax), cell(m.keySource ?? '-', 24), m.keyVerdict, cell(verdictCell(m), 34), cell(m.topReason ?? '-', reasonMax)]);
    }
    out.push(t.toString());
    const shown = Math.min(options.rows, r.messages.length);
    if (shown < r.analysed) out.push(`${String(shown)} of ${String(r.analysed)} messages listed (--rows N for more, --json for all fields)`);
  }
  return `${out.join('\n')}\n`;
}

/**
 * The verdict column: the message's overall verdict (what the summary counts and `--fail-on`
 * uses), with the payload's own label when the size made it worse (`review (size; payload ok)`).
 */
export function verdictCell(m: Pick<InspectedMessage, 'verdict' | 'payloadLabel'>): string {
  return m.payloadLabel === m.verdict || m.payloadLabel.startsWith(`${m.verdict} `) ? m.payloadLabel : `${m.verdict} (size; payload ${m.payloadLabel})`;
}
