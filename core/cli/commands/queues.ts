import type { Command } from 'commander';
import { connectionOptions, flagsOf, type CliContext, type CommonOpts } from '../context';
import { queuesTable, toJson } from '../format';

/** `queuescope queues [connection]`: the queues of a connection with depth, in-flight, consumers and dead-letter links. */
export function register(program: Command, ctx: CliContext): void {
  connectionOptions(
    program
      .command('queues')
      .description('list the queues of a connection with depth, in-flight, delayed, consumers and dead-letter links')
      .argument('[connection]', 'URL, snapshot file or saved connection (default: from the environment)')
      .option('--pattern <glob>', 'only queues whose name matches (* wildcard)'),
  ).action(async (connection: string | undefined, opts: CommonOpts & { pattern?: string }) => {
    await ctx.withAdapter(flagsOf(connection, opts), async (adapter) => {
      const queues = await adapter.listQueues(opts.pattern === undefined ? {} : { pattern: opts.pattern }, ctx.signal);
      ctx.out(opts.json === true ? toJson(queues) : queuesTable(queues, ctx.width));
      if (opts.json !== true) {
        // Why some counts are missing (RabbitMQ with management statistics off), once, not per row.
        const off = queues.find((q) => typeof q.config.managementStatistics === 'string');
        if (off !== undefined) ctx.err(`note: management statistics ${String(off.config.managementStatistics)}.\n`);
        const notRead = queues.filter((q) => typeof q.config.counts === 'string');
        if (notRead.length > 0) ctx.err(`note: ${notRead.length} queue${notRead.length === 1 ? '' : 's'} without counts: ${String(notRead[0]?.config.counts)}.\n`);
      }
    });
  });
}
