import { Option, type Command } from 'commander';
import { QueuescopeError, type PeekOptions } from '../../../shared/domain';
import { snapshotCompletenessNote, snapshotCutReason } from '../../inspect/inspect';
import { assertPeekAllowed } from '../../services/export';
import { connectionOptions, flagsOf, resolveQueue, splitPositionals, type CliContext, type CommonOpts } from '../context';
import { cell, escapeForTerminal, peekTable, toJson } from '../format';

const HELP = `
A snapshot file that does not hold what its writer recorded in its header (cut short at a line
boundary, or never finished: an export that stopped, the backup of a redrive that was killed or
is still running) is read as it is, with a warning on stderr: how many of the messages
written it holds, or that it was never finished. The exit code stays 0 (for a CI gate use
inspect --fail-on: it exits 9).`;

/** `queuescope peek [connection] [queue]`: messages of a queue, stating what a peek changes where it changes something. */
export function register(program: Command, ctx: CliContext): void {
  connectionOptions(
    program
      .command('peek')
      .description('show messages of a queue without consuming them (states what a peek changes where it changes something)')
      .argument('[connection]', 'URL, snapshot file or saved connection (default: from the environment)')
      .argument('[queue]', 'queue name or id, or a plain SQS queue URL — alone, that URL is the connection too (optional for a snapshot with one queue)')
      .addOption(new Option('--state <state>', 'message state to read (e.g. BullMQ failed, stream pending)'))
      .option('--limit <n>', 'messages to show, 1-1000', '20')
      .option('--cursor <cursor>', 'continue from a cursor printed by a previous peek')
      .option('--newest', 'start from the newest message (where the broker can)')
      .option('--accept-side-effects', 'read even where a peek can move messages to a dead-letter queue')
      .addHelpText('after', HELP),
  ).action(async (a1: string | undefined, a2: string | undefined, opts: CommonOpts & { state?: string; limit: string; cursor?: string; newest?: boolean; acceptSideEffects?: boolean }) => {
    const limit = Number(opts.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new QueuescopeError('INVALID_INPUT', `--limit must be a whole number from 1 to 1000, got "${cell(opts.limit, 40)}".`);
    const { connection, queue } = splitPositionals(a1, a2, opts);
    await ctx.withAdapter(flagsOf(connection, opts), async (adapter, resolved) => {
      const q = await resolveQueue(adapter, queue, resolved, ctx.signal);
      if (!q.capabilities.canPeekNonDestructively && q.capabilities.peekSideEffects.length > 0) {
        ctx.err(`note: peeking ${cell(q.name)} changes it:\n${q.capabilities.peekSideEffects.map((s) => `  - ${escapeForTerminal(s.description)}\n`).join('')}`);
      }
      assertPeekAllowed(q, opts.acceptSideEffects);
      const options: PeekOptions = {
        limit,
        ...(opts.cursor !== undefined ? { cursor: opts.cursor } : {}),
        ...(opts.newest === true ? { direction: 'newest' as const } : {}),
        ...(opts.state !== undefined ? { state: opts.state } : {}),
        ...(opts.acceptSideEffects === true ? { acceptSideEffects: true } : {}),
      };
      const page = await adapter.peek(q.id, options, ctx.signal);
      // A snapshot cut short reads as a smaller whole one: say so (the adapter's check, as inspect, queues and reinject do), also with --json.
      const cut = snapshotCutReason(adapter, q);
      if (cut !== null) ctx.err(`warning: ${cell(q.name)}: ${escapeForTerminal(cut)}\n`);
      const note = snapshotCompletenessNote(adapter, q);
      if (note !== null) ctx.err(`note: ${escapeForTerminal(note)}\n`);
      if (opts.json === true) ctx.out(toJson(page));
      else {
        ctx.out(peekTable(page, ctx.width));
        // With --cursor: the queue moved since the page the cursor came from (a Redis list popped/pushed).
        if (page.moved !== undefined) ctx.err(`${page.moved.realigned ? 'note' : 'warning'}: ${escapeForTerminal(page.moved.note)}\n`);
        if (page.sideEffects.length > 0) ctx.err(`side effects of this peek:\n${page.sideEffects.map((e) => `  - ${escapeForTerminal(e)}\n`).join('')}`);
      }
    });
  });
}
