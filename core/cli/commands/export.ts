import { resolve as resolvePath } from 'node:path';
import type { Command } from 'commander';
import { defaultInspectState } from '../../../shared/api/inspect-scope';
import { QueuescopeError } from '../../../shared/domain';
import { assertPeekAllowed, EXPORT_MAX_BODY_BYTES, exportQueue, MAX_EXPORT_MAX_BODY_BYTES } from '../../services/export';
import { MAX_SNAPSHOT_LINE_BYTES } from '../../snapshot/format';
import { EXIT } from '../exit-codes';
import { OperationManager } from '../../services/operations';
import { connectionOptions, flagsOf, resolveQueue, splitPositionals, throwOperationFailure, waitWithProgress, type CliContext, type CommonOpts } from '../context';
import { cell, escapeForTerminal, toJson } from '../format';

/** `queuescope export [connection] [queue] --out FILE`: a queue's messages to a JSONL snapshot. */
export function register(program: Command, ctx: CliContext): void {
  connectionOptions(
    program
      .command('export')
      .description('write the messages of a queue to a snapshot file (JSON Lines, see the snapshot format)')
      .argument('[connection]', 'URL, snapshot file or saved connection (default: from the environment)')
      .argument('[queue]', 'queue name or id (optional for a snapshot with one queue)')
      .requiredOption('--out <file>', 'snapshot file to write (.jsonl, or .jsonl.gz to compress)')
      .option('--state <state>', 'message state to export (e.g. BullMQ failed; a live BullMQ queue without it: its waiting jobs, the header saying "state waiting" and stderr naming the jobs of its other states left out)')
      .option('--ids <ids>', 'export only these message ids (comma-separated)')
      .option('--page-size <n>', 'messages per read, 1-1000', '500')
      .option('--max-body-bytes <n>', `write bodies up to N bytes whole (default ${String(EXPORT_MAX_BODY_BYTES)}, 8 MiB; at most ${String(MAX_EXPORT_MAX_BODY_BYTES)}, 128 MiB); longer ones are written cut. Memory grows with it (× --page-size)`)
      .option('--force', 'replace --out if it exists')
      .option('--accept-side-effects', 'export even where reading can move messages to a dead-letter queue')
      .addHelpText(
        'after',
        `\nBodies over --max-body-bytes (default ${String(EXPORT_MAX_BODY_BYTES)} bytes, 8 MiB) are written cut (body.truncated): the file\n` +
          'does not hold them whole and reinject refuses them. They are counted and named on stderr (--json: truncatedBodies,\n' +
          'truncatedIds), the export is partial, and the exit code is 7; export again with a higher --max-body-bytes.\n' +
          `A message whose line would be longer than ${String(MAX_SNAPSHOT_LINE_BYTES)} bytes (256 MiB, the longest line a snapshot reader\n` +
          'accepts) is not written: it is listed, the export is partial, and the exit code is 7.\n' +
          'Any other partial export (the queue changed while it was read, --ids not all found, a queue deeper than the\n' +
          'broker lets a peek read) also says why on stderr ("warning: the export is partial: …"; --json: partial, reason)\n' +
          'and exits 7: the file is not the whole queue.',
      ),
  ).action(
    async (
      a1: string | undefined,
      a2: string | undefined,
      opts: CommonOpts & { out: string; state?: string; ids?: string; pageSize: string; maxBodyBytes?: string; force?: boolean; acceptSideEffects?: boolean },
    ) => {
      const pageSize = Number(opts.pageSize);
      if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) throw new QueuescopeError('INVALID_INPUT', `--page-size must be a whole number from 1 to 1000, got "${cell(opts.pageSize, 40)}".`);
      const maxBodyBytes = opts.maxBodyBytes === undefined ? undefined : Number(opts.maxBodyBytes);
      if (maxBodyBytes !== undefined && (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 1 || maxBodyBytes > MAX_EXPORT_MAX_BODY_BYTES)) {
        throw new QueuescopeError('INVALID_INPUT', `--max-body-bytes must be a whole number of bytes from 1 to ${String(MAX_EXPORT_MAX_BODY_BYTES)} (128 MiB), got "${cell(opts.maxBodyBytes, 40)}".`);
      }
      const ids = opts.ids?.split(',').map((s) => s.trim()).filter((s) => s !== '');
      const { connection, queue } = splitPositionals(a1, a2, opts);
      await ctx.withAdapter(flagsOf(connection, opts), async (adapter, resolved) => {
        const q = await resolveQueue(adapter, queue, resolved, ctx.signal);
        if (!q.capabilities.canPeekNonDestructively && q.capabilities.peekSideEffects.length > 0) {
          ctx.err(`note: reading ${cell(q.name)} changes it:\n${q.capabilities.peekSideEffects.map((s) => `  - ${escapeForTerminal(s.description)}\n`).join('')}`);
        }
        assertPeekAllowed(q, opts.acceptSideEffects);
        // No --state on a live BullMQ queue: its waiting jobs (the adapter's default, as inspect
        // reads them), named in the file's header, the summary and a note listing the jobs left out.
        const bullmqDefault = opts.state === undefined && q.kind === 'bullmq' && defaultInspectState(q) === 'waiting';
        const state = bullmqDefault ? 'waiting' : opts.state;
        const leftOut = bullmqDefault ? bullmqJobsNotExported(q.counts) : {};
        const path = resolvePath(ctx.cwd, opts.out);
        const ops = new OperationManager();
        const op = ops.start('export', `Export ${q.name} to ${path}`, async (opCtx) => ({
          ...(await exportQueue(
            adapter,
            q.id,
            {
              path,
              connection: resolved.label,
              pageSize,
              overwrite: opts.force === true,
              ...(state !== undefined ? { state } : {}),
              ...(ids !== undefined ? { messageIds: ids } : {}),
              ...(maxBodyBytes !== undefined ? { maxBodyBytes } : {}),
              ...(opts.acceptSideEffects === true ? { acceptSideEffects: true } : {}),
            },
            opCtx,
          )),
        }));
        const final = await waitWithProgress(ctx, ops, op.id, { label: 'export', ...(opts.json === true ? { json: true } : {}) });
        if (final.status === 'cancelled') throw new QueuescopeError('CANCELLED', `Export cancelled; ${path} was not written.`);
        if (final.status === 'failed') throwOperationFailure(final, 'The export failed.');
        const r = final.result ?? {};
        // Messages left out because no reader could read their line back: the file is not the queue.
        const notWritten = typeof r.notWrittenCount === 'number' ? r.notWrittenCount : 0;
        // Bodies cut at the read limit: the file is no backup of them (reinject refuses them).
        const truncated = typeof r.truncatedBodies === 'number' ? r.truncatedBodies : 0;
        // Any other reason the file is not the whole queue (it changed while read, chosen ids not
        // found, the peek window, a cursor loop): also partial, so a script never takes it for a backup.
        if (notWritten > 0 || truncated > 0 || r.partial === true) ctx.setExitCode(EXIT.PARTIAL);
        if (opts.json === true) ctx.out(toJson({ ...r, ...(state !== undefined ? { state } : {}), ...(bullmqDefault ? { statesNotExported: leftOut } : {}) }));
        else {
          ctx.out(`Exported ${String(r.messages)} message${r.messages === 1 ? '' : 's'} of ${cell(q.name)}${state !== undefined ? ` (state ${cell(state, 40)})` : ''} to ${cell(path, 300)} (${String(r.bytes)} bytes)${truncated > 0 ? `, ${String(truncated)} of them with the body cut` : ''}.\n`);
          // The queue moved while it was read (a Redis list popped/pushed between pages): re-aligned, or lines may be missing or doubled.
          for (const n of Array.isArray(r.notes) ? (r.notes as unknown[]) : []) if (typeof n === 'string') ctx.err(`note: ${escapeForTerminal(n)}\n`);
          for (const n of Array.isArray(r.notWritten) ? (r.notWritten as unknown[]) : []) {
            const reason = (n as { reason?: unknown } | null)?.reason;
            if (typeof reason === 'string') ctx.err(`error: ${escapeForTerminal(reason)}\n`);
          }
          const unexported = bullmqUnexportedNote(q.name, leftOut);
          if (unexported !== null) ctx.err(`note: ${escapeForTerminal(unexported)}\n`);
          if (r.partial === true) ctx.err(`warning: the export is partial: ${escapeForTerminal(typeof r.reason === 'string' ? r.reason : '')}\n`);
        }
      });
    },
  );
}

/** BullMQ states besides `waiting`, live ones first (the order of inspect's note), then failed and completed. */
const BULLMQ_OTHER_STATES = ['prioritized', 'delayed', 'paused', 'active', 'waiting-children', 'failed', 'completed'] as const;

/**
 * The jobs of a live BullMQ queue that an export without `--state` (its `waiting` jobs) leaves out:
 * count per other state holding any, from `QueueSummary.counts` (BullMQ `getJobCounts`), in
 * {@link BULLMQ_OTHER_STATES} order; empty when there are none.
 */
export function bullmqJobsNotExported(counts: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of BULLMQ_OTHER_STATES) if ((counts[s] ?? 0) > 0) out[s] = counts[s] ?? 0;
  return out;
}

/**
 * The stderr note of an export of the live BullMQ queue `queueName` without `--state`: it wrote the
 * waiting jobs; `leftOut` ({@link bullmqJobsNotExported}) were not written, and the `--state` that
 * exports each. Null when nothing was left out.
 */
export function bullmqUnexportedNote(queueName: string, leftOut: Record<string, number>): string | null {
  const states = Object.keys(leftOut);
  if (states.length === 0) return null;
  const n = Object.values(leftOut).reduce((a, b) => a + b, 0);
  return `${cell(queueName, 120)}: exported its waiting jobs (the default --state); ${states.map((s) => `${String(leftOut[s] ?? 0)} ${s}`).join(', ')} ${n === 1 ? 'job was' : 'jobs were'} not exported: ${states.map((s) => `--state ${s}`).join(', ')} ${states.length === 1 ? 'exports' : 'export'} ${n === 1 ? 'it' : 'them'} (one state per file).`;
}
