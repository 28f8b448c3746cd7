// Every CLI command, in the order `spark --help` lists them.
import type { Command } from 'commander';
import type { CliContext } from '../cli.js';
import { inspectCommand } from './inspect.js';
import { packCommand } from './pack.js';
import { preflightCommand } from './preflight.js';
import { synthCommand } from './synth.js';
import { verifyCommand } from './verify.js';

export type CommandFactory = (ctx: CliContext) => Command;

export const commandFactories: CommandFactory[] = [inspectCommand, synthCommand, packCommand, verifyCommand, preflightCommand];
