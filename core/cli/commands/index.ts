import type { Command } from 'commander';
import type { CliContext } from '../context';
import * as audit from './audit';
import * as connections from './connections';
import * as exportCommand from './export';
import * as inspect from './inspect';
import * as peek from './peek';
import * as queues from './queues';
import * as redrive from './redrive';
import * as tune from './tune';
import * as watch from './watch';

/** A CLI command module: adds itself (with its options, help and action) to the program. */
export interface CliCommandModule {
  register(program: Command, ctx: CliContext): void;
}

/**
 * The CLI's commands, in the order `--help` lists them. One file per command; add a command by
 * adding its module here.
 */
export const COMMANDS: readonly CliCommandModule[] = [connections, queues, peek, exportCommand, inspect, audit, tune, redrive, watch];
