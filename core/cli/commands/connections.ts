import type { Command } from 'commander';
import type { CliContext } from '../context';
import { EXIT_CODES_HELP } from '../exit-codes';
import { connectionsTable, toJson } from '../format';

/** `queuescope connections`: the connections saved in the app, without secrets. */
export function register(program: Command, ctx: CliContext): void {
  program
    .command('connections')
    .description('list the connections saved in the app (without secrets)')
    .option('--json', 'print JSON (ConnectionProfile[])')
    .addHelpText('after', `${EXIT_CODES_HELP}\n`)
    .action(async (opts: { json?: boolean }) => {
      const profiles = await ctx.loadProfiles();
      ctx.out(opts.json === true ? toJson(profiles) : connectionsTable(profiles));
    });
}
