import type { Command } from 'commander';
import Table from 'cli-table3';
import { QueuescopeError } from '../../../shared/domain';
import { DEFAULT_ROW_LIMIT, inspectQueue, snapshotPartialReason, type CompareTarget, type InspectReport } from '../../inspect/inspect';
import { HELD_BACK, INSPECT_MAX_BODY_BYTES, MAX_INSPECT_BODY_BYTES } from '../../inspect/read';
import type { InspectedMessage } from '../../../shared/api/inspect';
import { defaultInspectState, describeInspectScope } from '../../../shared/api/inspect-scope';
import { OperationManager } from '../../services/operations';
import { connectionOptions, flagsOf, resolveQueue, splitPositionals, throwOperationFailure, waitWithProgress, type CliContext, type CommonOpts } from '../context';
import { EXIT } from '../exit-codes';
import { loadCliProjectConfig, resolveCliInspectSettings } from '../inspect-rules';
import { cell, escapeForTerminal, NOTE_MAX, toJson } from '../format';

interface InspectOpts extends CommonOpts {
  state?: string;
  limit?: string;
  rows?: string;
  maxBodyBytes?: string;
  why?: boolean;
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

States read: --state, else a snapshot file's every state (the header says "all states in the
snapshot: waiting, delayed, failed", as the app's analysis of the file reads it), a live BullMQ
queue's waiting jobs (header "state waiting"; stderr names its delayed, prioritized… jobs left out).

Rules come from --config FILE, else the project file found upward from here
(queuescope.config.json/.yaml, section "inspect"; the first entry whose "match" fits the queue
gives all its rules), else the rules saved with the app's connection (--profile); otherwise the
built-in ones.

Partial reads: RabbitMQ classic/quorum and SQS queues cannot be paged: one peek reads at most
500 (RabbitMQ) or 100 (SQS) messages, and --limit cannot go beyond that. A Redis list that
workers pop or push during the read is followed page by page (a note on stderr); when a page
cannot find the entries read before it, entries may be skipped or read twice and the read is
partial too. So is a snapshot file that holds only part of its queue (one peek window, export
--ids, a redrive backup), or not what its writer recorded in its header: an export, and a
redrive writing its backup, record there how many messages they wrote, so a file cut short
(fewer messages than recorded), holding more than recorded, or never finished (no count: an
export that stopped, the backup of a redrive that was killed or is still running) is partial.
A file from an older Queuescope has no such record: a note says a cut cannot be checked. The
report then says "Partial", and with --fail-on a partial read that found nothing to fail on
exits 9, not 0 (findings in the part read still exit 6).

Examples:
  queuescope inspect amqp://guest:guest@127.0.0.1:5672 orders.work --accept-side-effects
  queuescope inspect resources/demo-snapshot.jsonl orders.dlq --fail-on flag
  queuescope inspect resources/demo-snapshot.jsonl orders.work --why --rows 10
  queuescope inspect --file today.jsonl orders --compare yesterday.jsonl --json`;

/** `queuescope inspect [connection] [queue]`: redelivery safety of a queue — idempotency keys and mutable-payload flags. */
export function register(program: Command, ctx: CliContext): void {
  connectionOptions(
    program
      .command('inspect')
      .description('tell per message and per queue whether redelivery is safe: idempotency keys and mutable-payload flags')
      .argument('[connection]', 'URL, snapshot file or saved connection (default: from the environment)')
      .argument('[queue]', 'queue name or id (optional for a snapshot with one queue)')
      .option('--state <state>', 'message state to read (e.g. BullMQ failed; by default a snapshot file is read in every state it holds, as the app analyses it, and a live BullMQ queue in state waiting, with stderr naming its other live jobs left out)')
      .option('--limit <n>', 'analyse at most N messages (default: the whole queue where it can be paged)')
      .option('--rows <n>', `per-message rows (0-100000; default 50 in the table, ${String(DEFAULT_ROW_LIMIT)} with --json, which also lists the messages the summary names as examples)`)
      .option('--why', "print each listed message's key verdict reason and payload reasons under its row")
      .option('--max-body-bytes <n>', `read bodies up to N bytes whole (default ${String(INSPECT_MAX_BODY_BYTES)}, from a snapshot file every body; at most ${String(MAX_INSPECT_BODY_BYTES)}); longer ones are analysed as cut (review)`)
      .option('--config <file>', 'project file with inspect rules (default: queuescope.config.json/.yaml found upward)')
      .option('--fail-on <verdict>', 'exit 6 when any message read is at least this bad (flag or review); exit 9 when none is but not every message was read')
      .option('--compare <snapshot>', 'also compare duplicate keys with the same queue in another snapshot file')
      .option('--no-dead-letter', "do not compare with the queue's DLQ / dead-letter source queues (BullMQ: failed jobs / live jobs of the same queue)")
      .option('--accept-side-effects', 'read even where a peek can move messages to a dead-letter queue (also for compared queues)')
      .addHelpText('after', HELP),
  ).action(async (a1: string | undefined, a2: string | undefined, opts: InspectOpts) => {
    const limit = opts.limit === undefined ? undefined : Number(opts.limit);
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 10_000_000)) throw new QueuescopeError('INVALID_INPUT', `--limit must be a whole number from 1 to 10000000, got "${cell(opts.limit, 40)}".`);
    const rows = opts.rows === undefined ? (opts.json === true ? DEFAULT_ROW_LIMIT : 50) : Number(opts.rows);
    if (!Number.isInteger(rows) || rows < 0 || rows > 100_000) throw new QueuescopeError('INVALID_INPUT', `--rows must be a whole number from 0 to 100000, got "${cell(opts.rows, 40)}".`);
    const maxBodyBytes = opts.maxBodyBytes === undefined ? undefined : Number(opts.maxBodyBytes);
    if (maxBodyBytes !== undefined && (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 1 || maxBodyBytes > MAX_INSPECT_BODY_BYTES)) {
      throw new QueuescopeError('INVALID_INPUT', `--max-body-bytes must be a whole number of bytes from 1 to ${String(MAX_INSPECT_BODY_BYTES)} (256 MiB), got "${cell(opts.maxBodyBytes, 40)}".`);
    }
    const failOn = opts.failOn;
    if (failOn !== undefined && failOn !== 'flag' && failOn !== 'review') throw new QueuescopeError('INVALID_INPUT', `--fail-on must be "flag" or "review", got "${cell(failOn, 40)}".`);
    const project = await loadCliProjectConfig(ctx, opts.config);
    const { connection, queue } = splitPositionals(a1, a2, opts);

    await ctx.withAdapter(flagsOf(connection, opts), async (adapter, resolved) => {
      const q = await resolveQueue(adapter, queue, resolved, ctx.signal);
      const settings = await resolveCliInspectSettings(ctx, project, resolved, q);
      const window = Math.min(1000, q.capabilities.maxPeekWindow);
      if (!q.capabilities.canPageFromCursor && limit !== undefined && limit > window) {
        ctx.err(`note: --limit ${String(limit)} is more than one peek of ${cell(q.name)} can read: ${q.kind} queues cannot be paged, so at most ${String(window)} messages are analysed.\n`);
      }
      if (!q.capabilities.canPeekNonDestructively && q.capabilities.peekSideEffects.length > 0) {
        ctx.err(`note: reading ${cell(q.name)} changes it:\n${q.capabilities.peekSideEffects.map((s) => `  - ${escapeForTerminal(s.description)}\n`).join('')}`);
      }

      // No --state: the default the app's analysis applies too (defaultInspectState): a snapshot is
      // read in every state its file holds; a live BullMQ queue in `waiting` (the adapter's
      // default), and stderr names the jobs of its other states that will still run, left out.
      const state = opts.state ?? defaultInspectState(q);
      const bullmqDefault = opts.state === undefined && state === 'waiting' && q.kind === 'bullmq';
      const unreadLive = bullmqDefault ? bullmqUnreadLiveJobs(q.name, q.counts) : null;

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
              // The table needs only `rows`, but the summary's examples are kept beyond them either way.
              rowLimit: opts.json === true ? rows : Math.max(rows, DEFAULT_ROW_LIMIT),
              compareDeadLetter: opts.deadLetter,
              compareWith,
              ...(state !== undefined ? { state } : {}),
              ...(limit !== undefined ? { limit } : {}),
              ...(maxBodyBytes !== undefined ? { maxBodyBytes } : {}),
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
        else ctx.out(formatInspectReport(report, { rows, width: ctx.width, note: settings.note, why: opts.why === true }));
        // The queue moved while it was read (a Redis list popped/pushed between pages): re-aligned, or entries may be skipped or doubled.
        if (opts.json !== true) for (const n of report.notes ?? []) ctx.err(`note: ${escapeForTerminal(n)}\n`);
        if (unreadLive !== null && opts.json !== true) ctx.err(`note: ${escapeForTerminal(unreadLive)}\n`);
        if (report.sideEffects.length > 0 && opts.json !== true) ctx.err(`side effects of reading:\n${report.sideEffects.map((e) => `  - ${escapeForTerminal(e)}\n`).join('')}`);
        if (failOn !== undefined) {
          const bad = report.summary.verdicts.flag + (failOn === 'review' ? report.summary.verdicts.review : 0);
          if (bad > 0) {
            ctx.setExitCode(EXIT.FINDINGS);
            if (opts.json !== true) ctx.err(`fail-on ${failOn}: ${String(bad)} message${bad === 1 ? '' : 's'} ${failOn === 'flag' ? 'flagged' : 'flagged or to review'}; exit ${String(EXIT.FINDINGS)}.\n`);
          } else if (report.partial) {
            // Nothing found in the part read says nothing about the rest: a CI gate must not pass.
            ctx.setExitCode(EXIT.INCOMPLETE);
            const snapshotPartial = snapshotPartialReason(adapter, q) !== null;
            ctx.err(`${incompleteMessage(report, { failOn, limit, pageable: q.capabilities.canPageFromCursor, window, snapshotPartial })}\n`);
          }
        }
      } finally {
        await extra?.adapter.close().catch(() => undefined);
      }
    });
  });
}

/** BullMQ states besides `waiting` whose jobs will still run (read only with `--state`). */
const BULLMQ_OTHER_LIVE_STATES = ['prioritized', 'delayed', 'paused', 'active', 'waiting-children'] as const;

/**
 * The note for a live BullMQ queue `queueName` inspected without `--state` (its `waiting` jobs are read): the
 * jobs in the other states that will still run — prioritized, delayed, paused, active,
 * waiting-children, from `QueueSummary.counts` (BullMQ `getJobCounts`) — and the `--state` that
 * reads each; null when there are none.
 */
export function bullmqUnreadLiveJobs(queueName: string, counts: Record<string, number>): string | null {
  const held = BULLMQ_OTHER_LIVE_STATES.filter((s) => (counts[s] ?? 0) > 0);
  if (held.length === 0) return null;
  const n = held.reduce((sum, s) => sum + (counts[s] ?? 0), 0);
  return `${cell(queueName, 120)}: read its waiting jobs (the default --state); ${held.map((s) => `${String(counts[s] ?? 0)} ${s}`).join(', ')} ${n === 1 ? 'job was' : 'jobs were'} not read and will run too: ${held.map((s) => `--state ${s}`).join(', ')} ${held.length === 1 ? 'checks' : 'check'} ${n === 1 ? 'it' : 'them'}.`;
}

/**
 * The stderr line of `--fail-on` when nothing to fail on was found but the read was partial (exit
 * {@link EXIT.INCOMPLETE}): how many messages were read of how many, why (the report's
 * `partialReason`), and how to read the rest — a larger or no `--limit`, or, for a queue that
 * cannot be paged (RabbitMQ classic/quorum, SQS: one peek of at most `window` messages), that the
 * rest cannot be read without consuming messages; a snapshot file that holds only part of its
 * queue (`snapshotPartial`): the export's reason; a queue that changed while it was read: run again.
 */
export function incompleteMessage(
  r: Pick<InspectReport, 'analysed' | 'total' | 'partialReason' | 'queue'>,
  o: { failOn: 'flag' | 'review'; limit: number | undefined; pageable: boolean; window: number; snapshotPartial?: boolean },
): string {
  const none = o.failOn === 'flag' ? 'nothing flagged' : 'nothing flagged or to review';
  const name = cell(r.queue.name, 120);
  const holds = r.total !== null && r.total > r.analysed ? `${name} holds about ${String(r.total)}` : `${name} may hold more`;
  const byLimit = o.limit !== undefined && r.analysed >= o.limit && (o.pageable || o.limit < o.window);
  let but: string;
  if (byLimit) {
    but = `${holds}: --limit ${String(o.limit)} stopped the read. ${o.pageable ? 'Drop --limit (or raise it) to check every message.' : `Raise --limit (up to ${String(o.window)}, one peek) or drop it.`}`;
  } else if (o.snapshotPartial === true) {
    // partialReason starts with "The snapshot holds only part of <queue>: …" (snapshotPartialReason).
    const reason = cell(r.partialReason ?? 'The snapshot holds only part of the queue.', 400);
    but = `${reason.charAt(0).toLowerCase()}${reason.slice(1)} Check the queue itself, or a snapshot that holds all of it.`;
  } else if (!o.pageable && r.analysed < o.window && r.total !== null && r.total > r.analysed) {
    // Fewer than one peek can read: the broker held the rest back, the window did not cut them.
    but = `${holds}: a ${r.queue.kind} queue cannot be paged, and one peek returned these ${String(r.analysed)}, fewer than the ${String(o.window)} it can read: the broker held the others back (${HELD_BACK}). Check again later, or gate on a queue that can be read whole.`;
  } else if (!o.pageable) {
    but = `${holds}: a ${r.queue.kind} queue cannot be paged: one peek returns at most ${String(o.window)} messages, and the rest cannot be read without consuming them (export has the same limit). Check again once these are consumed, or gate on a queue that can be read whole.`;
  } else {
    but = `${holds}: ${cell(r.partialReason ?? 'not every message was read', 300)} Run it again.`;
  }
  return `fail-on ${o.failOn}: ${none} in the ${plural(r.analysed, 'message')} read, but ${but} Exit ${String(EXIT.INCOMPLETE)} (incomplete).`;
}

const pct = (x: number): string => `${(x * 100).toFixed(x > 0 && x < 0.1 ? 1 : 0)}%`;
const plural = (n: number, one: string, many = `${one}s`): string => `${String(n)} ${n === 1 ? one : many}`;
const ids = (xs: string[], more: number): string => `${xs.map((x) => cell(x, 40)).join(', ')}${more > xs.length ? ', …' : ''}`;

/**
 * The human report: a summary block (counts, shares, duplicate groups, collisions, same payload
 * under different keys, DLQ/snapshot comparisons) then a table of per-message verdicts (id, key,
 * rule/source, key verdict, payload verdict, top reason). Every value from the broker is escaped.
 */
export function formatInspectReport(r: InspectReport, options: { rows: number; width: number; note?: string | null; why?: boolean }): string {
  const s = r.summary;
  const out: string[] = [];
  const of = r.total !== null && r.total !== r.analysed ? ` of ${String(r.total)}` : '';
  const scope = describeInspectScope(r);
  out.push(`Redelivery safety of ${cell(r.queue.name, 120)} (${r.queue.kind}${scope !== null ? `, ${cell(scope, 200)}` : ''}): ${plural(r.analysed, 'message')} analysed${of} in ${String(r.elapsedMs)} ms`);
  out.push(`Rules: ${cell(r.rulesSource, 200)}${options.note != null ? ` (${cell(options.note, 200)})` : ''}`);
  if (r.partial) out.push(`Partial: ${cell(r.partialReason ?? 'not every message was read', 400)}`);
  out.push('');
  const kv = s.keyVerdicts;
  if (s.total === 0) out.push('Idempotency keys and payloads: no messages were analysed.');
  else {
    out.push(`Idempotency keys: ${pct(s.businessDerivedShare)} business-derived (${String(kv['business-derived'])}), ${String(kv['opaque-random'])} opaque random, ${String(kv['time-derived'])} time-derived, ${plural(kv['period-key'], 'period key')}, ${String(kv.missing)} missing`);
    out.push(`Payloads: ${String(s.verdicts.flag)} flag, ${String(s.verdicts.review)} review, ${String(s.verdicts.ok)} ok; ${plural(s.largePayloads, 'large payload')}`);
  }
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
    out.push(`Same payload under different keys or without a key: ${plural(s.samePayloadDifferentKeysCount, 'group')}`);
    for (const g of s.samePayloadDifferentKeys.slice(0, 10)) out.push(`  ${cell(g.reason, 200)} e.g. ${ids(g.exampleIds, g.count)}`);
  }
  if (s.bounds.note !== null) out.push(`Note: ${cell(s.bounds.note, NOTE_MAX)}`);
  for (const c of r.comparisons) {
    const rel = c.relation === 'dead-letter-source' ? 'dead-letter source' : c.relation === 'dead-letter-target' ? 'dead-letter queue' : 'other snapshot';
    if (c.result === null) {
      out.push(`Compared with ${rel} ${cell(c.label, 100)}: not compared. ${cell(c.note ?? '', NOTE_MAX)}`);
      continue;
    }
    const res = c.result;
    // A partial side can hide shared keys: said on the heading line, not only in the note below.
    out.push(`Compared with ${rel} ${cell(c.label, 100)} (${plural(c.read, 'message')}${c.partial ? ', PARTIAL: see the note' : ''}): ${plural(res.sharedKeyCount, 'shared key')}, ${plural(res.samePayloadDifferentKeysCount, 'payload')} under different keys${c.partial ? ' in the messages read' : ''}`);
    for (const reason of res.reasons.slice(0, 5)) out.push(`  ${cell(reason, 300)}`);
    for (const g of res.sharedKeys.slice(0, 10)) out.push(`  ${cell(g.key, 60)}: ${String(g.countA)} here (${ids(g.exampleIdsA, g.countA)}), ${String(g.countB)} there (${ids(g.exampleIdsB, g.countB)})`);
    if (c.note !== null) out.push(`  note: ${cell(c.note, NOTE_MAX)}`);
  }
  if (options.rows > 0 && r.messages.length > 0) {
    out.push('');
    const keyMax = options.width >= 160 ? 40 : 28;
    const reasonMax = Math.max(30, Math.min(140, options.width - 120));
    const t = tableOf([]);
    const listed = r.messages.slice(0, options.rows);
    const cells = listed.map((m) => [cell(m.id, 24), cell(m.key ?? '-', keyMax), cell(m.keySource ?? '-', 24), m.keyVerdict, cell(verdictCell(m), 34), cell(m.topReason ?? '-', reasonMax)]);
    // The reasons span the whole row, wrapped to the table's inner width (its top border without the corners and padding).
    const whyWidth = options.why === true ? Math.max(40, Array.from(tableOf(cells).toString().split('\n', 1)[0] ?? '').length - 4) : 0;
    for (const [i, row] of cells.entries()) {
      t.push(row);
      const m = listed[i];
      if (options.why === true && m !== undefined) t.push([{ colSpan: 6, content: whyLines(m, whyWidth).join('\n') }]);
    }
    out.push(t.toString());
    const shown = Math.min(options.rows, r.messages.length);
    const hints = [shown < r.analysed ? '--rows N for more' : null, options.why === true ? null : "--why for each message's reasons", '--json for all fields'].filter((x): x is string => x !== null);
    out.push(`${shown < r.analysed ? `${String(shown)} of ${String(r.analysed)} messages listed` : `${plural(shown, 'message')} listed`} (${hints.join(', ')})`);
  }
  return `${out.join('\n')}\n`;
}

/** The per-message table (compact, no colours, no wrapping) with `rows`. */
function tableOf(rows: string[][]): InstanceType<typeof Table> {
  const t = new Table({ head: ['id', 'key', 'rule / source', 'key verdict', 'verdict', 'top reason'], style: { head: [], border: [], compact: true }, wordWrap: false });
  for (const r of rows) t.push(r);
  return t;
}

/** Most characters of one reason `--why` prints (reasons are sentences; this only bounds a hostile body's). */
const WHY_MAX_CHARS = 600;

/**
 * The `--why` lines under a message's row: the key verdict's sentence (which fields it cites,
 * why it is business-derived / random / missing…) then the payload's reasons, most severe first
 * (at most 3, then how many more), each escaped, cut to {@link WHY_MAX_CHARS} and wrapped at
 * spaces to `width` characters with a hanging indent.
 */
export function whyLines(m: Pick<InspectedMessage, 'keyReason' | 'reasons'>, width: number): string[] {
  const lines = wrap('  key: ', m.keyReason === '' ? '-' : m.keyReason, width);
  const shown = m.reasons.slice(0, 3);
  for (const [i, reason] of shown.entries()) lines.push(...wrap(i === 0 ? '  why: ' : '       ', reason, width));
  if (m.reasons.length > shown.length) lines.push(`       (+${String(m.reasons.length - shown.length)} more: --json)`);
  return lines;
}

/** `text` (escaped, cut) after `lead`, wrapped at spaces to `width` code points; continuation lines are indented like the text. */
function wrap(lead: string, text: string, width: number): string[] {
  const indent = ' '.repeat(lead.length);
  const room = Math.max(20, width - lead.length);
  const out: string[] = [];
  let line = '';
  for (const word of cell(text, WHY_MAX_CHARS).split(' ')) {
    let w = word;
    while (Array.from(w).length > room) {
      // A word longer than the line (a long key, a URL): split it.
      if (line !== '') out.push(line);
      const chars = Array.from(w);
      out.push(chars.slice(0, room).join(''));
      w = chars.slice(room).join('');
      line = '';
    }
    if (line === '') line = w;
    else if (Array.from(line).length + 1 + Array.from(w).length <= room) line += ` ${w}`;
    else {
      out.push(line);
      line = w;
    }
  }
  if (line !== '' || out.length === 0) out.push(line);
  return out.map((l, i) => `${i === 0 ? lead : indent}${l}`);
}

/**
 * The verdict column: the message's overall verdict (what the summary counts and `--fail-on`
 * uses), with the payload's own label when the size made it worse (`review (size; payload ok)`).
 */
export function verdictCell(m: Pick<InspectedMessage, 'verdict' | 'payloadLabel'>): string {
  return m.payloadLabel === m.verdict || m.payloadLabel.startsWith(`${m.verdict} `) ? m.payloadLabel : `${m.verdict} (size; payload ${m.payloadLabel})`;
}
