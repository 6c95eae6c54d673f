import { createInterface } from 'node:readline/promises';
import { resolve as resolvePath } from 'node:path';
import type { Command } from 'commander';
import { QueuescopeError, type OperationSnapshot, type QueueSummary } from '../../../shared/domain';
import { parseFilter } from '../../../shared/redrive/filter';
import { checkRemainderPath } from '../../redrive/remainder';
import { inspectSourceLock, sourceLockedError, staleLockNote } from '../../redrive/source-lock';
import { checkRate, heldBackNote, olderSnapshotCheck, planRedrive, priorUsesOfBackup, publishLossCheck, reinjectSelection, remainderOf, resolveReinjectTarget, startRedrive, startReinject, type RedriveEnv, type RedrivePlan, type RedriveRequest, type RedriveResult, type ReinjectResult } from '../../redrive/engine';
import { readSnapshot } from '../../snapshot/reader';
import { isRedriveBackupHeader, type SnapshotHeaderLine } from '../../snapshot/format';
import { AuditLog, type AuditEntry } from '../../services/audit-log';
import { OperationManager } from '../../services/operations';
import { defaultConfigDir } from '../../services/profile-store';
import { brokerConnectionOptions, flagsOf, refuseSnapshot, resolveQueue, splitPositionals, waitWithProgress, type CliContext, type CommonOpts } from '../context';
import { MAX_SNAPSHOT_LINE_BYTES } from '../../snapshot/format';
import { EXIT, exitCodeFor } from '../exit-codes';
import { cell, escapeForTerminal, formatTime, NOTE_MAX, toJson } from '../format';
import type { ResolvedConnection } from '../resolve-config';
import type { BrokerAdapter } from '../../adapters/types';
import { checkPendingMinIdle, DEFAULT_PENDING_MIN_IDLE_MS, DEFAULT_REDRIVE_MAX_BODY_BYTES, describeMovedOn, formatIdleThreshold, MAX_REDRIVE_MAX_BODY_BYTES, movedOnByReading } from '../../../shared/redrive/types';
import { parseDuration } from './tune';
import { loadCliProjectConfig, resolveCliInspectSettings } from '../inspect-rules';

const REDRIVE_HELP = `
Selection (--filter, repeatable; terms are ANDed, commas are OR):
  class:non-retryable,transient,unknown    failure class of the last error
  label:"HTTP 503",timeout                 failure label (as the dry run shows it)
  reason:TEXT                              TEXT in the last error
  group:KEY                                failure group (as the app's DLQ view groups messages)
  key:business-derived,missing             idempotency-key verdict
  text:TEXT                                TEXT in the body or a header
  age>1h  age<2d                           time since the message was dead-lettered
Non-retryable messages (HTTP 400/401/403/404/422, validation, not found…) stay in the DLQ
unless --include-non-retryable. Before anything moves, the messages are written to a backup
snapshot (default: <config dir>/backups/), and every run is added to the audit log
(queuescope history). Without --yes the dry-run counts are shown and you are asked; without a
terminal, --yes is required (exit 8).
Body read limit: a message whose body is larger than --max-body-bytes (default ${DEFAULT_REDRIVE_MAX_BODY_BYTES},
1 MiB + 1 KiB) cannot be moved (it could not be backed up whole); the dry run lists each one with its
id. Raise the limit up to ${MAX_REDRIVE_MAX_BODY_BYTES} (128 MiB, RabbitMQ's largest message) to move them:
memory grows with it (a batch holds up to batch × limit bytes; lower --batch for big bodies).
A message whose backup line (JSON, base64 for binary bodies) would be longer than ${MAX_SNAPSHOT_LINE_BYTES}
bytes (256 MiB, the longest line a snapshot reader accepts) cannot be moved either: it stays in the DLQ.
Redis stream DLQ: entries pending in one of its consumer groups (read with XREADGROUP, not yet
XACKed) that were delivered less than 60 s ago stay in the DLQ (a consumer is likely processing
them) unless --include-pending; the dry run and the result warn per group and consumer with counts
and idle times, also for long-idle entries, which move (and are XACKed in their group).
--pending-min-idle sets that 60 s (e.g. 10m for consumers that take minutes per entry, 5s for fast
ones; 1ms to 168h, a bare number is seconds): only entries idle at least that long move.
An SQS DLQ that has its own RedrivePolicy (dlq → dlq2) is refused before anything is read (exit 5):
every receive, the dry run's too, counts toward its maxReceiveCount, and SQS moves a message at that
limit on to the next queue instead of returning it. --accept-side-effects reads it anyway: the dry
run and the result then say how many messages the reads moved on to which queue (measured as that
queue's growth during the reads: SQS returns nothing for a message it moves on), and such a run or
dry run exits 7 — those messages left the DLQ without being redriven.
Idempotency keys (--dedupe-by-key, key: filters, and the dry run's check for keys already waiting in
the target) are found with the rules inspect uses for the DLQ: --config FILE, else the project file
found upward from here (section "inspect"), else the rules saved with a --profile connection, else the
built-in rules; the dry run prints which ("Rules: …"). Targets that reading changes (RabbitMQ, SQS)
are not checked for waiting keys: the dry run says so.
Picked --ids that are not in the DLQ are listed and make the exit code 7 (a dry run too), as do
messages selected that cannot move (a dry run too: the run would report them failed), and a run that examined
fewer messages than its dry run (the others were held by another reader, or left the DLQ another way).`;

const REINJECT_HELP = `
A redrive backup holds every message its redrive was about to move, written before the move. Those
the redrive then did not move — their move failed (they stayed in the DLQ), another client took them
from the DLQ between the read and the move (a Redis list popped by a consumer), or their outcome is
unknown — are recorded in the redrive's audit-log entry. reinject leaves them out (publishing them
would duplicate what is still in the DLQ or what the other client has) and warns before asking,
with how many, why and their ids; --include-not-moved publishes them too. A backup whose redrive
reported failures without recording which (a native move that ended partly) is published whole,
with a warning giving the count. reinject also warns when the redrive moved messages (they are in the
target already), has no end recorded, or the backup was re-injected before.

A backup names the redrive run that wrote it (header redriveRun.id, the run's operation id in the
audit log), and reinject finds the run's record by that id: a copied, renamed or moved backup is
treated as the original (backups written before this are found by their path). When the file is a
redrive backup but this profile's audit log has no record of its run (written on another machine or
with another QUEUESCOPE_HOME, or the log was moved or cleared), reinject warns that the messages the
redrive did not move cannot be told apart and may be published again, naming the run's id and start,
and asks before publishing all of them (--yes skips the question; --json has the warning in
result.notes). A remainder file (below) is not a redrive backup: it is published whole.

Into another broker's queue, what the target cannot carry is a warning before asking, and a note in
the result: a Redis list element is the bare body, so every header is dropped (the warning counts the
messages, names the headers, and names an idempotency-key header specially: the consumer loses its
dedupe key); SQS rejects empty attribute values, so headers with an empty value (RabbitMQ's
x-first-death-exchange) are left out of the attributes, not the message refused. Into a Redis stream,
a message from another broker becomes an entry with its body under "body" and its headers as fields.

Into an SQS FIFO queue, a message that is not published (refused, or its outcome unknown) stops its
message group for the rest of the run, across --batch boundaries: the group's later messages are
held back, not sent, so none overtakes it; each is named with the message it waits for (exit 7).

Remainder: when any message is not published — refused, held back, outcome unknown, or not reached
because the run was cancelled or failed — those messages are written, in their order and exactly as
the file holds them, to a new remainder file: --remainder <file>, or by default next to the file,
<name>.remainder-<time>.jsonl (in <config dir>/backups when that folder cannot be written). The
summary, --json (result.remainder.path) and the audit log (queuescope history) name it; publish only
them with reinject --from <remainder>. Publishing the original file again publishes the messages
already published a second time. Messages left out as not moved by the redrive are not in it. An
existing file is never overwritten: --remainder naming one is refused before anything is published
(exit 2). If the remainder cannot be written, the summary says so; the original file still holds
every message.

One re-inject of a file at a time: a re-inject holds an exclusive lock on its --from file (by its
device and inode: any path, symlink or hard link to it) for the whole run, in <config dir>/locks/
(pid, host, start time, operation id, target). A second re-inject of the same file while one runs —
another terminal, or the app's Put back… — is refused before connecting or publishing anything
(exit 2), naming the run in progress (pid, host, start, target): wait for it to end, or cancel it.
The lock is released when the run ends (done, failed, cancelled). A lock left by a killed or
crashed run (its pid is gone, or on Linux now belongs to a process started after the lock) is taken
over, with a warning: that run may have published part of the file, and logged nothing, so a run
that took it over exits 7 (possible duplicates) when it publishes anything.

SIGTERM and SIGHUP (kill, a closed terminal or SSH session) stop a re-inject as Ctrl+C does:
remainder file, audit entry, lock released; exit 143 / 129.`;

interface RedriveOpts extends CommonOpts {
  to?: string;
  filter?: string[];
  includeNonRetryable?: boolean;
  ids?: string;
  state?: string;
  rate?: string;
  batch?: string;
  limit?: string;
  dryRun?: boolean;
  dedupeByKey?: boolean;
  includePending?: boolean;
  pendingMinIdle?: string;
  native?: boolean;
  backup?: string;
  yes?: boolean;
  confirmLoop?: boolean;
  acceptSideEffects?: boolean;
  maxBodyBytes?: string;
  file?: string;
  config?: string;
}

/**
 * The connection options of commands that change a broker: like `connectionOptions` (../context) but
 * `--file` (a read-only snapshot as the connection) is hidden and refused with a usage error.
 */
/** Why redrive and reinject refuse a snapshot file as their connection. */
const SNAPSHOT_WHY = {
  redrive: 'a snapshot file is read-only. Give a broker connection; to publish a snapshot (e.g. a backup) into a queue, use: queuescope reinject <connection> <queue> --from <snapshot>.',
  reinject: 'the snapshot to publish is given with --from <snapshot>, and the connection must be a broker.',
} as const;

function positiveNumber(v: string | undefined, name: string, opts: { integer?: boolean; max?: number } = {}): number | null {
  if (v === undefined) return null;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || (opts.integer === true && !Number.isInteger(n)) || (opts.max !== undefined && n > opts.max)) {
    throw new QueuescopeError('INVALID_INPUT', `${name} must be ${opts.integer === true ? 'a whole number' : 'a number'} above 0${opts.max !== undefined ? ` and at most ${opts.max}` : ''}, got "${cell(v, 40)}".`);
  }
  return n;
}

function collect(v: string, prev: string[] | undefined): string[] {
  return [...(prev ?? []), v];
}

/** Asks a yes/no question on the terminal; false without one. */
async function confirm(ctx: CliContext, question: string): Promise<boolean | null> {
  if (!process.stdin.isTTY || ctx.io.stderr.isTTY !== true) return null;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(`${question} [y/N] `, { signal: ctx.signal });
    return /^y(es)?$/i.test(answer.trim());
  } catch {
    return false;
  } finally {
    rl.close();
  }
}

function envFor(ctx: CliContext, adapter: BrokerAdapter, resolved: ResolvedConnection): RedriveEnv {
  const configDir = defaultConfigDir(ctx.io.env);
  return { adapter, connectionLabel: resolved.label, actor: 'cli', auditLog: new AuditLog({ configDir }), configDir };
}

/** Where the key rules of a CLI redrive came from (as `inspect` prints them): the matching entry and its file or connection, or "built-in rules"; the entry's note. */
export interface PlanRules {
  source: string;
  note: string | null;
}

/**
 * The dry run in words (untrusted names and reasons escaped). `rules`, when given, is printed as a
 * "Rules:" line under the heading: which idempotency-key rules `--dedupe-by-key`, `--filter key:…`
 * and the check of keys waiting in the target used. `loopConfirmed`: `--confirm-loop` was given,
 * so a loop is listed as confirmed instead of asking for the flag.
 */
export function formatPlan(plan: RedrivePlan, rules?: PlanRules, loopConfirmed = false): string {
  const lines: string[] = [];
  lines.push(`Dry run of ${cell(plan.dlq.name, 200)}: ${plan.examined} message${plan.examined === 1 ? '' : 's'} examined (selection: ${cell(plan.filter, 300)})`);
  if (rules !== undefined) lines.push(`  Rules: ${cell(rules.source, 200)}${rules.note !== null ? ` (${cell(rules.note, 200)})` : ''}`);
  // A FIFO DLQ's dry run sees only the first message(s) of each group: say so before its counts.
  if (plan.unseen !== undefined) lines.push(`  NOT SEEN${plan.unseen.count !== null ? ` ${plan.unseen.count}` : ''}, the counts below cover only the ${plan.examined} examined: ${cell(plan.unseen.reason, NOTE_MAX)}`);
  lines.push(`  would move ${plan.toMove}:`);
  for (const t of plan.targets) lines.push(`    ${String(t.count).padStart(7)} → ${cell(t.queueName, 120)}  (${cell(t.via, 120)})`);
  lines.push(`  would stay ${plan.toSkip}:`);
  for (const s of plan.skipped) lines.push(`    ${String(s.count).padStart(7)}   ${cell(s.reason, 160)}`);
  if (plan.failed > 0) {
    lines.push(`  cannot move ${plan.failed}:`);
    for (const c of plan.cannotMove.slice(0, 50)) lines.push(`    ${cell(c.id, 120)}: ${cell(c.reason, 200)}`);
    if (plan.cannotMove.length < plan.failed || plan.cannotMove.length > 50) lines.push(`    … ${plan.failed - Math.min(50, plan.cannotMove.length)} more (--json lists up to 1000)`);
    if (plan.cannotMove.some((c) => /read limit/.test(c.reason))) {
      lines.push(`    bodies over the ${plan.maxBodyBytes}-byte read limit move with --max-body-bytes N (up to ${MAX_REDRIVE_MAX_BODY_BYTES}, 128 MiB; memory grows with it)`);
    }
  }
  if (plan.notFoundCount > 0) lines.push(`  warning: ${notFoundLine(plan.notFoundCount, plan.notFoundIds)}`);
  const movedOn = describeMovedOn(plan.movedOn, "This dry run's receives", plan.dlq.name);
  if (movedOn !== null) lines.push(`  MOVED ON, NOT REDRIVEN: ${cell(movedOn, NOTE_MAX)}`);
  if (plan.groups.length > 0) {
    lines.push('  failure groups (class, label, count, first reason):');
    for (const g of plan.groups.slice(0, 15)) {
      lines.push(`    ${g.class.padEnd(13)} ${cell(g.label, 24).padEnd(24)} ${String(g.count).padStart(7)}  ${cell(g.reason ?? '', 80)}${g.wastedRetries > 0 ? `  [${g.wastedRetries} wasted retries]` : ''}`);
    }
    if (plan.groups.length > 15) lines.push(`    … ${plan.groups.length - 15} more groups`);
  }
  if (plan.wastedRetries > 0) lines.push(`  wasted retries: ${plan.wastedRetries} non-retryable message${plan.wastedRetries === 1 ? ' used all its attempts' : 's used all their attempts'}`);
  for (const l of plan.loops) lines.push(`  LOOP: ${cell(l.loop ?? '', NOTE_MAX)} — ${loopConfirmed ? 'confirmed with --confirm-loop: messages move there anyway' : 'pass --confirm-loop to move there anyway'}`);
  for (const w of plan.warnings) lines.push(`  warning: ${cell(w, NOTE_MAX)}`);
  // The idempotency-key check of a target that found nothing to say (findings are warnings and notes).
  for (const k of plan.keysInTarget ?? []) {
    if (!k.checked || k.duplicates > 0 || k.note !== null) continue;
    lines.push(`  idempotency keys: ${k.read === 0 ? `${cell(k.queueName, 120)} holds no waiting message` : `none of the ${k.moving} to move to ${cell(k.queueName, 120)} is already waiting there (${k.read} read)`}`);
  }
  lines.push(`  native move: ${plan.native.wouldUse ? 'yes' : 'no'} — ${cell(plan.native.why, NOTE_MAX)}`);
  for (const n of plan.notes) lines.push(`  note: ${cell(n, NOTE_MAX)}`);
  return `${lines.join('\n')}\n`;
}

/** "N picked ids were not found in the DLQ: a, b, … (first 50 listed)". */
function notFoundLine(count: number, ids: readonly string[]): string {
  const shown = ids.slice(0, 50);
  return `${count} picked id${count === 1 ? ' was' : 's were'} not found in the DLQ: ${cell(shown.join(', '), 2000)}${count > shown.length ? ` (first ${shown.length} listed)` : ''}`;
}

/** The final summary in words. */
export function formatResult(r: RedriveResult, status: string): string {
  const lines: string[] = [];
  const head = status === 'completed' ? 'Redrive finished' : `Redrive ${status}`;
  lines.push(`${head} (${r.mode}${r.mechanism !== null ? `: ${cell(r.mechanism, 80)}` : ''}): ${r.moved} moved, ${r.skipped} stayed, ${r.failed} failed, ${r.possibleDuplicates} possible duplicates of ${r.examined} examined in ${cell(r.dlqName, 120)}.`);
  for (const t of r.targets) lines.push(`  ${String(t.count).padStart(7)} → ${cell(t.queueName, 120)}`);
  for (const s of r.skipReasons.slice(0, 10)) lines.push(`  ${String(s.count).padStart(7)} stayed: ${cell(s.reason, 160)}`);
  if (r.notFoundCount > 0) lines.push(`warning: ${notFoundLine(r.notFoundCount, r.notFoundIds)}`);
  const movedOn = describeMovedOn(r.movedOn, "This run's receives", r.dlqName);
  if (movedOn !== null) lines.push(`MOVED ON, NOT REDRIVEN: ${cell(movedOn, NOTE_MAX)}`);
  if (r.backupPath !== null) lines.push(`Backup: ${cell(r.backupPath, 400)} (put back with: queuescope reinject <connection> <queue> --from <backup>)`);
  if (r.auditId !== null) lines.push(`Audit log: entry ${r.auditId} (queuescope history)`);
  for (const w of r.warnings ?? []) lines.push(`warning: ${cell(w, NOTE_MAX)}`);
  for (const n of r.notes) lines.push(`note: ${cell(n, NOTE_MAX)}`);
  return `${lines.join('\n')}\n`;
}

/**
 * The `--to` queue: an existing queue ({@link resolveQueue}), or — when none matches and the
 * broker creates the queue on the first write (Redis lists and streams, see
 * {@link RedriveMover.absentTarget}) — the queue `name` would be (the plan then warns that it
 * does not exist now).
 * @throws QueuescopeError `QUEUE_NOT_FOUND` when the queue does not exist and cannot be created by
 *   the move; others as {@link resolveQueue}.
 */
async function resolveTarget(adapter: BrokerAdapter, dlq: QueueSummary, name: string, resolved: ResolvedConnection, signal: AbortSignal): Promise<{ id: string }> {
  try {
    return { id: (await resolveQueue(adapter, name, resolved, signal)).id };
  } catch (e) {
    const absent = e instanceof QueuescopeError && e.code === 'QUEUE_NOT_FOUND' ? (adapter.redrive?.absentTarget?.(dlq, name) ?? null) : null;
    if (absent === null) throw e;
    return { id: absent.queueId };
  }
}

async function runRedriveCommand(ctx: CliContext, a1: string | undefined, a2: string | undefined, opts: RedriveOpts): Promise<void> {
  const rate = positiveNumber(opts.rate, '--rate');
  checkRate(rate, '--rate');
  const batch = positiveNumber(opts.batch, '--batch', { integer: true, max: 1000 });
  const limit = positiveNumber(opts.limit, '--limit', { integer: true });
  const filter = parseFilter(opts.filter ?? []);
  refuseSnapshot('redrive', SNAPSHOT_WHY.redrive, opts, 'redrive');
  const maxBodyBytes = positiveNumber(opts.maxBodyBytes, '--max-body-bytes', { integer: true, max: MAX_REDRIVE_MAX_BODY_BYTES });
  const pendingMinIdleMs = opts.pendingMinIdle === undefined ? undefined : parseDuration(opts.pendingMinIdle, '--pending-min-idle', 's');
  checkPendingMinIdle(pendingMinIdleMs, '--pending-min-idle');
  const ids = opts.ids?.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (ids !== undefined && opts.filter !== undefined) throw new QueuescopeError('INVALID_INPUT', 'Give either --ids or --filter, not both.');
  if (ids?.length === 0) throw new QueuescopeError('INVALID_INPUT', '--ids needs at least one message id.');
  if (opts.native === true && (ids !== undefined || opts.filter !== undefined || opts.dedupeByKey === true || limit !== null)) {
    throw new QueuescopeError('INVALID_INPUT', `--native moves the whole DLQ inside the broker; ${ids !== undefined ? '--ids' : opts.filter !== undefined ? '--filter' : opts.dedupeByKey === true ? '--dedupe-by-key' : '--limit'} needs the client-side move: drop --native.`);
  }
  // The idempotency-key rules: found as `inspect` finds them for the DLQ (project file, then --profile's saved settings).
  const project = await loadCliProjectConfig(ctx, opts.config);
  const { connection, queue } = splitPositionals(a1, a2, opts);
  await ctx.withAdapter(flagsOf(connection, opts), async (adapter, resolved) => {
    refuseSnapshot('redrive', SNAPSHOT_WHY.redrive, adapter, 'redrive');
    const dlq = await resolveQueue(adapter, queue, resolved, ctx.signal);
    const settings = await resolveCliInspectSettings(ctx, project, resolved, dlq);
    const rules: PlanRules = { source: settings.source, note: settings.note };
    let target: { id: string } | null = null;
    if (opts.to !== undefined) target = await resolveTarget(adapter, dlq, opts.to, resolved, ctx.signal);
    const env = envFor(ctx, adapter, resolved);
    const state = opts.state ?? (dlq.capabilities.peekStates.includes('failed') ? 'failed' : undefined);
    const request: RedriveRequest = {
      dlqId: dlq.id,
      ...(state !== undefined ? { state } : {}),
      selection: ids !== undefined ? { kind: 'ids', ids } : opts.filter !== undefined ? { kind: 'filter', filter } : { kind: 'all' },
      includeNonRetryable: opts.includeNonRetryable === true,
      dedupeByKey: opts.dedupeByKey === true,
      keyRules: settings.rules.keyRules,
      ...(opts.includePending === true ? { includePending: true } : {}),
      ...(pendingMinIdleMs !== undefined ? { pendingMinIdleMs } : {}),
      targetQueueId: target?.id ?? null,
      confirmLoop: opts.confirmLoop === true,
      ...(opts.acceptSideEffects === true ? { acceptSideEffects: true } : {}),
      ratePerSecond: rate,
      ...(batch !== null ? { batchSize: batch } : {}),
      limit,
      native: opts.native === true ? 'require' : opts.native === false ? 'never' : 'auto',
      backupPath: opts.backup !== undefined ? resolvePath(ctx.cwd, opts.backup) : null,
      ...(maxBodyBytes !== null ? { maxBodyBytes } : {}),
    };
    const plan = await planRedrive(env, request, ctx.signal);
    if (request.native === 'require' && !plan.native.wouldUse && plan.toMove > 0) {
      if (opts.dryRun === true && opts.json !== true) ctx.err(formatPlan(plan, rules, opts.confirmLoop === true));
      throw new QueuescopeError('INVALID_INPUT', `--native: the broker's native move cannot do this run (${plan.native.why}); drop --native to move client-side.`);
    }
    // Picked ids that are not in the DLQ: exit 7, for a dry run too (a script checks it first).
    if (plan.notFoundIds.length > 0) ctx.setExitCode(EXIT.PARTIAL);
    // The dry run's own receives moved messages on (an SQS DLQ with its own RedrivePolicy, read with
    // --accept-side-effects): they left the DLQ without being redriven — not "done", for a dry run too.
    if (movedOnByReading(plan.movedOn)) ctx.setExitCode(EXIT.PARTIAL);
    // Selected messages that cannot move (a body over the read limit, a target of the wrong kind…):
    // the run would report them failed and exit 7, so the dry run a script checks first does too.
    if (opts.dryRun === true && plan.failed > 0) ctx.setExitCode(EXIT.PARTIAL);
    if (opts.dryRun === true) {
      ctx.out(opts.json === true ? toJson({ ...plan, keyRulesSource: rules.source, ...(rules.note !== null ? { keyRulesNote: rules.note } : {}) }) : formatPlan(plan, rules, opts.confirmLoop === true));
      return;
    }
    if (opts.json !== true) ctx.err(formatPlan(plan, rules, opts.confirmLoop === true));
    if (plan.toMove === 0) {
      // Selected messages that cannot go anywhere (no target, a missing target, a loop, a body over
      // the read limit) are not "done": exit 7, like a run in which some of them failed.
      const unroutable = plan.skipped.filter((g) => g.category === 'no target' || g.category === 'target missing' || g.category === 'loop').reduce((n, g) => n + g.count, 0);
      const movedOn = describeMovedOn(plan.movedOn, "the dry run's receives", plan.dlq.name);
      if (opts.json === true) ctx.out(toJson({ moved: 0, notFoundIds: plan.notFoundIds, plan }));
      else if (movedOn !== null) ctx.out(`Nothing redriven: ${movedOn}${plan.failed + unroutable > 0 ? ` Of the messages read, ${plan.failed + unroutable} cannot move (see above).` : ''}\n`);
      else if (plan.failed + unroutable === 0) {
        const held = plan.skipped.filter((g) => g.category === 'held').reduce((n, g) => n + g.count, 0);
        ctx.out(held > 0 ? `Nothing to move: ${held} stay because a consumer received ${held === 1 ? 'it' : 'them'} less than ${formatIdleThreshold(pendingMinIdleMs ?? DEFAULT_PENDING_MIN_IDLE_MS)} ago (see the warning above; --include-pending moves ${held === 1 ? 'it' : 'them'}).\n` : 'Nothing to move.\n');
      } else {
        const parts = [...(plan.failed > 0 ? [`${plan.failed} cannot move`] : []), ...(unroutable > 0 ? [`${unroutable} have no usable target${request.targetQueueId === null ? ' (pass --to QUEUE to choose one)' : ''}`] : [])];
        ctx.out(`Nothing moved: ${parts.join(', ')} — see above; they stay in the DLQ.\n`);
      }
      if (plan.failed + unroutable > 0) ctx.setExitCode(EXIT.PARTIAL);
      return;
    }
    const guessed = request.targetQueueId === null ? plan.targets.filter((t) => t.guessed === true && t.count > 0) : [];
    if (opts.yes === true && guessed.length > 0) {
      throw new QueuescopeError(
        'INVALID_INPUT',
        `The target ${guessed.map((t) => cell(t.queueName, 80)).join(', ')} is only guessed from the DLQ's name (Redis streams and lists record no source), so --yes alone does not move there: pass --to <queue> to name the target.`,
      );
    }
    if (opts.yes !== true) {
      const where = plan.targets.map((t) => `${cell(t.queueName, 80)} (${t.count}${t.guessed === true ? ', guessed from the name' : ''})`).join(', ');
      const cannot = plan.failed > 0 ? ` (${plan.failed} cannot move and stay: see above)` : '';
      const unseen = plan.unseen !== undefined && limit === null ? `, and those of the ${plan.unseen.count ?? 'other'} the dry run could not see that the selection takes (see above)` : '';
      const ok = await confirm(ctx, `Move ${plan.toMove} message${plan.toMove === 1 ? '' : 's'} from ${cell(dlq.name, 80)} to ${where}${cannot}${unseen}?`);
      if (ok !== true) {
        ctx.err(ok === null ? 'error: not moving anything without confirmation: pass --yes (no terminal to ask on).\n' : 'Nothing was moved.\n');
        ctx.setExitCode(EXIT.NOT_CONFIRMED);
        return;
      }
    }
    const ops = new OperationManager();
    const op = startRedrive(ops, env, request, `Redrive ${dlq.name}`);
    const final = await waitWithProgress(ctx, ops, op.id, { label: 'redrive', ...(opts.json === true ? { json: true } : {}) });
    const r = final.result as RedriveResult | null;
    if (final.status === 'completed' && r !== null && r.mode === 'client-side' && limit === null && r.examined < plan.examined) {
      // Brokers count "messages at the start" as ready ones: messages held by a reader (e.g. on
      // RabbitMQ the dry run's requeue, not yet back) are left for the next run — never lost. They
      // may also have left the DLQ meanwhile (consumed, trimmed, expired, purged): the DLQ's depth
      // now tells the user which.
      const now = await adapter.getQueue(dlq.id, ctx.signal).then((q) => q.depth, () => null);
      const left = plan.examined - r.examined;
      const note = `the run examined ${r.examined} messages, the dry run ${plan.examined}: the other ${left} were gone before the run reached them — held or consumed by another reader (before or during the run), or trimmed, expired or purged${now === null ? '' : `; the DLQ holds ${now} message${now === 1 ? '' : 's'} now`}${now === 0 ? ', so they left it another way' : '; run the command again to move any still in it'}`;
      r.notes.push(note);
      if (opts.json !== true) ctx.err(`warning: ${note}.\n`);
      // Not "done": a script that redrives and then trusts exit 0 would leave these behind.
      ctx.setExitCode(EXIT.PARTIAL);
    }
    const dryMovedOn = describeMovedOn(plan.movedOn, "Before this run, its dry run's receives", dlq.name);
    if (r !== null && dryMovedOn !== null) r.notes.unshift(dryMovedOn);
    finish(ctx, final, opts.json === true, (x) => formatResult(x as RedriveResult, final.status));
  });
}

/**
 * Prints the outcome and sets the exit code: completed cleanly → 0; completed with failed or
 * possibly duplicated messages, or with messages its reads moved on without redriving them → 7; cancelled → 130 (`cancelledNote` says what stays); failed → the error's code (counts printed
 * first). With `--json` exactly one JSON document goes to stdout, with `error` when it failed.
 */
function finish(ctx: CliContext, final: OperationSnapshot, json: boolean, text: (r: Record<string, unknown>) => string, cancelledNote = 'Cancelled; messages moved so far stay moved, the rest are still in the DLQ (see the counts above).'): void {
  const last = final.errors.at(-1);
  const result = final.result ?? (last?.details?.result as Record<string, unknown> | undefined) ?? null;
  const error = final.status === 'failed' ? (last ?? { code: 'INTERNAL' as const, message: 'The operation failed.' }) : null;
  if (json) {
    // One JSON document on stdout, also on failure (with `error`); the exit code says what happened.
    const errors = final.errors.map((e) => ({ code: e.code, message: e.message }));
    ctx.out(toJson({ status: final.status, result, errors, ...(error !== null ? { error: { code: error.code, message: error.message } } : {}) }));
    if (final.status === 'cancelled') ctx.setExitCode(EXIT.INTERRUPTED);
    if (error !== null) ctx.setExitCode(exitCodeFor(error.code));
    if (final.status !== 'completed') return;
  } else if (result !== null) ctx.out(text(result));
  if (final.status === 'cancelled') throw new QueuescopeError('CANCELLED', cancelledNote);
  if (error !== null) throw new QueuescopeError(error.code, error.message);
  const failed = typeof result?.failed === 'number' ? result.failed : 0;
  const dups = typeof result?.possibleDuplicates === 'number' ? result.possibleDuplicates : 0;
  const notFound = Array.isArray(result?.notFoundIds) ? result.notFoundIds.length : 0;
  if (notFound > 0) ctx.setExitCode(EXIT.PARTIAL);
  // The run's reads moved DLQ messages on without redriving them (an SQS DLQ with its own RedrivePolicy).
  if (movedOnByReading(result?.movedOn as RedriveResult['movedOn'])) ctx.setExitCode(EXIT.PARTIAL);
  if (failed > 0 || dups > 0) {
    if (!json) {
      for (const e of final.errors) ctx.err(`  ${escapeForTerminal(e.message)}\n`);
      // An operation keeps its last MAX_OPERATION_ERRORS errors: say how many messages are not listed.
      const unlisted = failed + dups - final.errors.length;
      if (unlisted > 0) ctx.err(`  … and ${String(unlisted)} more message${unlisted === 1 ? '' : 's'} not listed (the last ${String(final.errors.length)} are shown; the counts above include all)\n`);
    }
    ctx.setExitCode(EXIT.PARTIAL);
  }
}

/** A re-inject's remainder file in the history table (`details.remainder`), or ''. */
function remainderLine(e: AuditEntry): string {
  const r = e.action === 'reinject' ? remainderOf(e.details) : null;
  return r === null ? '' : `\n      remainder: ${cell(r.path, 300)} (${r.messages} not published)`;
}

function historyTable(entries: readonly AuditEntry[]): string {
  const rows = entries.map((e) => {
    const counts = Object.entries(e.counts)
      .filter(([, v]) => v !== 0)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    // Why a run failed (kept in the entry's details), so the table alone explains it.
    const err = (e.details as { error?: { code?: unknown; message?: unknown } }).error;
    const why = e.status === 'failed' && err !== undefined && typeof err.message === 'string' ? `\n      error: ${typeof err.code === 'string' ? `${err.code}: ` : ''}${cell(err.message, 300)}` : '';
    return `${formatTime(e.time)}  ${e.actor.padEnd(3)}  ${cell(e.action, 24).padEnd(12)}  ${cell(e.status ?? '', 12).padEnd(10)}  ${cell(e.source ?? '', 60)} → ${cell(e.target ?? '', 60)}  ${cell(counts === '' && e.status !== 'started' ? 'nothing moved' : counts, 120)}${why}${e.backupPath !== null ? `\n      backup: ${cell(e.backupPath, 300)}` : ''}${remainderLine(e)}${e.filter !== null ? `\n      filter: ${cell(e.filter, 200)}` : ''}${e.status === 'started' ? '\n      no end recorded: the process stopped during the run (counts unknown: check the queues; the backup holds what it was about to move)' : ''}`;
  });
  return rows.length === 0 ? 'The audit log is empty.\n' : `${rows.join('\n')}\n`;
}

/** `queuescope redrive`, `queuescope reinject` and `queuescope history`. */
export function register(program: Command, ctx: CliContext): void {
  brokerConnectionOptions(
    program
      .command('redrive')
      .description('move messages from a dead-letter queue back to their source (or --to a queue): filtered, rate-limited, backed up, cancellable')
      .argument('[connection]', 'URL or saved connection (default: from the environment)')
      .argument('[dlq]', 'the dead-letter queue (name, id, or a plain SQS queue URL — alone, that URL is the connection too)')
      .option('--to <queue>', 'target queue (default: each message’s original source; Redis streams and lists record none: the target guessed from the name, orders-dlq → orders, needs --to or a yes at the prompt; a Redis list or stream that is absent because it is empty is created by the move, with a warning)')
      .option('--filter <expr>', 'select messages (repeatable; see below)', collect)
      .option('--include-non-retryable', 'move non-retryable failures too (default: they stay with their reason)')
      .option('--ids <ids>', 'move only these message ids (comma-separated)')
      .option('--state <state>', 'message state to redrive (default: failed where the queue has states, e.g. BullMQ)')
      .option('--rate <n>', 'at most N messages per second (0.01-1000000; bursts of at most one batch, which --rate caps at N)')
      .option('--batch <n>', 'messages per batch, 1-1000 (default 100)')
      .option('--limit <n>', 'examine at most N messages')
      .option('--dry-run', 'only show what would move where')
      .option('--dedupe-by-key', 'move one message per idempotency key')
      .option('--config <file>', 'project file with inspect rules, for the idempotency keys (default: queuescope.config.json/.yaml found upward)')
      .option('--include-pending', 'Redis streams: also move entries a consumer of a group read less than 60 s (--pending-min-idle) ago and has not XACKed (default: they stay, with a warning)')
      .option('--pending-min-idle <duration>', 'Redis streams: how long a pending entry must have been idle (since its last delivery, XPENDING) to move without --include-pending, 1ms to 168h (e.g. 30s, 10m, 1h; a bare number is seconds) (default: "60s")')
      .option('--native', 'require the broker’s native move (SQS move task, RabbitMQ shovel, BullMQ retryJobs)')
      .option('--no-native', 'never use the native move')
      .option('--backup <file>', 'backup snapshot to write before moving (default: in the config folder)')
      .option('--confirm-loop', 'allow a target that dead-letters straight back into the DLQ (or the DLQ itself)')
      .option('--accept-side-effects', 'read the DLQ (dry run too) even where reading it can make the broker move messages on to another queue (an SQS DLQ with its own RedrivePolicy); without it such a DLQ is refused, exit 5')
      .option('--max-body-bytes <n>', `body bytes read per message, up to ${MAX_REDRIVE_MAX_BODY_BYTES} (128 MiB; default ${DEFAULT_REDRIVE_MAX_BODY_BYTES}); larger bodies cannot move. Memory grows with it`)
      .option('-y, --yes', 'do not ask for confirmation')
      .addHelpText('after', REDRIVE_HELP),
  ).action(async (a1: string | undefined, a2: string | undefined, opts: RedriveOpts) => runRedriveCommand(ctx, a1, a2, opts));

  brokerConnectionOptions(
    program
      .command('reinject')
      .description('publish the messages of a snapshot (e.g. a redrive backup) to a queue')
      .argument('[connection]', 'URL or saved connection (default: from the environment)')
      .argument('[queue]', 'target queue (name or id)')
      .requiredOption('--from <snapshot>', 'snapshot file (.jsonl / .jsonl.gz)')
      .option('--rate <n>', 'at most N messages per second (0.01-1000000; bursts of at most one batch, which --rate caps at N)')
      .option('--batch <n>', 'messages per batch, 1-1000 (default 100)')
      .option('--include-not-moved', 'also publish the messages of a redrive backup that its redrive did not move (default: they are left out, with a warning naming them: they stayed in the DLQ, another client took them, or their outcome is unknown, so publishing them makes duplicates)')
      .option('--remainder <file>', 'where to write the messages not published, if any (default: next to the --from file, <name>.remainder-<time>.jsonl); never overwritten: an existing file is refused before publishing')
      .option('-y, --yes', 'do not ask for confirmation')
      .addHelpText('after', REINJECT_HELP),
  ).action(async (a1: string | undefined, a2: string | undefined, opts: CommonOpts & { from: string; rate?: string; batch?: string; yes?: boolean; includeNotMoved?: boolean; remainder?: string }) => {
    refuseSnapshot('reinject', SNAPSHOT_WHY.reinject, opts, 'redrive');
    const rate = positiveNumber(opts.rate, '--rate');
    checkRate(rate, '--rate');
    const batch = positiveNumber(opts.batch, '--batch', { integer: true, max: 1000 });
    const path = resolvePath(ctx.cwd, opts.from);
    const remainderPath = opts.remainder !== undefined ? resolvePath(ctx.cwd, opts.remainder) : null;
    // Refused before connecting or asking: a remainder never overwrites a file.
    if (remainderPath !== null) await checkRemainderPath(remainderPath);
    // Refused before connecting or asking while another re-inject of this file runs (the run itself
    // takes the lock in startReinject, so two that pass this check at once are still one at a time).
    const lockState = inspectSourceLock(defaultConfigDir(ctx.io.env), path);
    if (lockState.state === 'held') throw sourceLockedError(path, lockState);
    const { connection, queue } = splitPositionals(a1, a2, opts);
    await ctx.withAdapter(flagsOf(connection, opts), async (adapter, resolved) => {
      refuseSnapshot('reinject', SNAPSHOT_WHY.reinject, adapter, 'redrive');
      const env = envFor(ctx, adapter, resolved);
      // An empty Redis list/stream does not exist (e.g. the DLQ the redrive emptied): publishing creates it.
      const q =
        queue === undefined
          ? await resolveQueue(adapter, queue, resolved, ctx.signal)
          : await resolveReinjectTarget(env, path, queue, ctx.signal, (name) => resolveQueue(adapter, name, resolved, ctx.signal));
      if ('absentNote' in q && q.absentNote !== null) ctx.err(`warning: ${q.absentNote}.\n`);
      let count = 0;
      // Per queue section: what its header says the export wrote, and what the file holds (a cut file).
      const sections: { name: string; written: SnapshotHeaderLine['written']; held: number; backup: boolean }[] = [];
      // What an older file (no `written` record) did not record, e.g. the field order of Redis stream entries.
      const older = olderSnapshotCheck(env, q.id);
      for await (const item of readSnapshot(path, ctx.signal)) {
        older.see(item);
        if (item.type === 'header') sections[item.section] = { name: item.header.source.queue.name, written: item.header.written, held: 0, backup: isRedriveBackupHeader(item.header) };
        else {
          count++;
          const sec = sections[item.section];
          if (sec !== undefined) sec.held++;
        }
      }
      // A backup whose redrive moved its messages: they are in the target already (duplicates ahead).
      const prior = await priorUsesOfBackup(env, path, ctx.signal);
      // A re-inject of this file that was killed mid-run: it may have published part of it, and logged nothing.
      if (lockState.state === 'stale') prior.push(staleLockNote(path, lockState.holder, lockState.staleWhy ?? 'its process is gone'));
      // A file cut at a line boundary reads as a smaller, valid one: say that part of it is missing.
      for (const sec of sections) {
        if (sec.written === undefined) continue;
        if (sec.written === null && sec.backup) {
          // Written while the redrive ran, each batch before it moved: a killed run's backup holds what it read.
          prior.push(`${path} was not finished: the redrive of ${sec.name} that wrote it did not end (killed, crashed, or still running; its header has no message count), so the ${sec.held} message${sec.held === 1 ? '' : 's'} it holds are those the run read before it stopped, unless the file was also cut later, which cannot be checked`);
        } else if (sec.written === null) prior.push(`${path} was cut: the export of ${sec.name} never finished writing it (its header has no message count), so the ${sec.held} message${sec.held === 1 ? '' : 's'} it holds may be only the first ones; the rest are not published`);
        else if (sec.held < sec.written.messages) prior.push(`${path} was cut: it holds ${sec.held} of the ${sec.written.messages} messages its ${sec.backup ? 'redrive' : 'export'} wrote for ${sec.name}; only those ${sec.held} are published, the other ${sec.written.messages - sec.held} are not in this file`);
      }
      const olderNote = older.note(path);
      if (olderNote !== null) prior.push(olderNote);
      // A redrive backup also holds what its redrive backed up and then did not move: left out unless --include-not-moved.
      const selection = await reinjectSelection(env, path, opts.includeNotMoved === true, ctx.signal);
      prior.push(...selection.warnings);
      // Headers the target cannot carry (a Redis list element is the bare body; SQS refuses empty attribute values): said before asking.
      const loss = publishLossCheck(env, q.id);
      let ordinal = 0;
      for await (const item of readSnapshot(path, ctx.signal)) if (item.type === 'message' && !selection.skip(ordinal++)) loss.see(item.message);
      const lossNote = loss.note(path);
      if (lossNote !== null) prior.push(lossNote);
      const publishing = count - selection.leftOut;
      for (const w of prior) ctx.err(`warning: ${escapeForTerminal(w)}.\n`);
      if (opts.yes !== true) {
        const ok = await confirm(ctx, `Publish ${publishing} message${publishing === 1 ? '' : 's'} from ${cell(path, 200)} to ${cell(q.name, 80)}${selection.leftOut > 0 ? ` (${selection.leftOut} not moved by its redrive left out)` : ''}${prior.length > 0 ? ' despite the warning above' : ''}?`);
        if (ok !== true) {
          ctx.err(ok === null ? 'error: not publishing without confirmation: pass --yes (no terminal to ask on).\n' : 'Nothing was published.\n');
          ctx.setExitCode(EXIT.NOT_CONFIRMED);
          return;
        }
      }
      const ops = new OperationManager();
      const op = startReinject(ops, env, { path, targetQueueId: q.id, ratePerSecond: rate, ...(batch !== null ? { batchSize: batch } : {}), ...(opts.includeNotMoved === true ? { includeNotMoved: true } : {}), ...(remainderPath !== null ? { remainderPath } : {}) });
      const final = await waitWithProgress(ctx, ops, op.id, { label: 'reinject', ...(opts.json === true ? { json: true } : {}) });
      finish(ctx, final, opts.json === true, (r) => {
        const x = r as ReinjectResult;
        const left = x.leftOut > 0 ? ` ${x.leftOut} not moved by the redrive that wrote it ${x.leftOut === 1 ? 'was' : 'were'} left out (--include-not-moved publishes them).` : '';
        const held = x.heldBack > 0 ? ` ${escapeForTerminal(heldBackNote(x))}.` : '';
        const rest =
          x.remainder != null
            ? `Remainder: ${cell(x.remainder.path, 400)} holds the ${x.remainder.messages} message${x.remainder.messages === 1 ? '' : 's'} not published, in order (publish only ${x.remainder.messages === 1 ? 'it' : 'them'} with: queuescope reinject <connection> <queue> --from ${cell(x.remainder.path, 400)})\n`
            : x.remainderError != null
              ? `Remainder: not written (${cell(x.remainderError, 400)}); ${cell(x.path, 300)} still holds every message, the ${x.published} published now too\n`
              : '';
        const failedText = x.failed > 0 ? ` (${x.failed} failed${x.heldBack > 0 ? `, ${x.heldBack} of them held back` : ''})` : '';
        // A stale lock taken over (exit 7): the killed run may have published any of them.
        const dups = x.possibleDuplicates > 0 ? ` Possible duplicates: the earlier re-inject whose lock this run took over (see the warning above) may have published some of these ${x.possibleDuplicates} already; check ${cell(x.targetName, 120)} for messages that are there twice.` : '';
        // A cancelled run read only part of the file: say so, and how much the file holds.
        const head =
          final.status === 'cancelled'
            ? `Re-inject cancelled: published ${x.published} of the ${x.read} message${x.read === 1 ? '' : 's'} read so far (${cell(x.path, 300)} holds ${count}) into ${cell(x.targetName, 120)}${failedText}.`
            : `Re-injected ${x.published} of ${x.read} message${x.read === 1 ? '' : 's'} from ${cell(x.path, 300)} into ${cell(x.targetName, 120)}${failedText}.`;
        return `${head}${left}${held}${dups}\n${rest}`;
      }, 'Cancelled; messages published so far stay published, and the file is unchanged (see the counts and the remainder above).');
    });
  });

  program
    .command('history')
    .description('show the audit log of redrives, re-injects and other changes made by Queuescope (app and CLI)')
    .option('--limit <n>', 'entries to show, newest first, 1-1000', '20')
    .option('--before <n>', 'page: entries older than this index (printed as "next page")')
    .option('--action <action>', 'only this action (redrive, reinject, apply-visibility-timeout, …)')
    .option('--json', 'print JSON')
    .action(async (opts: { limit: string; before?: string; action?: string; json?: boolean }) => {
      const limit = positiveNumber(opts.limit, '--limit', { integer: true, max: 1000 }) ?? 20;
      const before = opts.before === undefined ? undefined : Number(opts.before);
      if (before !== undefined && (!Number.isInteger(before) || before < 0)) throw new QueuescopeError('INVALID_INPUT', `--before must be a whole number ≥ 0, got "${cell(opts.before, 40)}".`);
      const log = new AuditLog({ configDir: defaultConfigDir(ctx.io.env) });
      const page = await log.read({ limit, ...(before !== undefined ? { before } : {}), ...(opts.action !== undefined ? { action: opts.action } : {}) }, ctx.signal);
      if (opts.json === true) {
        ctx.out(toJson({ path: log.path, ...page }));
        return;
      }
      ctx.out(historyTable(page.entries));
      if (page.skippedLines > 0) ctx.err(`warning: ${page.skippedLines} unreadable line${page.skippedLines === 1 ? '' : 's'} in ${cell(log.path, 300)} skipped.\n`);
      if (page.nextBefore !== null) ctx.out(`next page: queuescope history --before ${page.nextBefore}\n`);
    });
}
