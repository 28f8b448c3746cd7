// Every CLI command, in the order `spark --help` lists them.
import type { Command } from 'commander';
import type { CliContext } from '../cli.js';
import { engramRangesCommand } from './engram-ranges.js';
import { gidCommand } from './gid.js';
import { preflightCommand } from './preflight.js';
import { synthCommand } from './synth.js';
import { wrapperCommand } from './wrapper.js';

export type CommandFactory = (ctx: CliContext) => Command;

export const commandFactories: CommandFactory[] = [synthCommand, engramRangesCommand, preflightCommand, gidCommand, wrapperCommand];
