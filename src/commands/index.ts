// Every CLI command, in the order `spark --help` lists them. Each module is loaded only when
// needed: `spark engram-ranges` and `spark wrapper` run on every rank's boot path and should not
// pay for loading the preflight rules or the synthesizer (tens of milliseconds).
import type { Command } from 'commander';
import type { CliContext } from '../cli.js';

export type CommandFactory = (ctx: CliContext) => Command;

export const commandLoaders: [name: string, load: () => Promise<CommandFactory>][] = [
  ['inspect', async () => (await import('./inspect.js')).inspectCommand],
  ['synth', async () => (await import('./synth.js')).synthCommand],
  ['engram-ranges', async () => (await import('./engram-ranges.js')).engramRangesCommand],
  ['preflight', async () => (await import('./preflight.js')).preflightCommand],
  ['gid', async () => (await import('./gid.js')).gidCommand],
  ['wrapper', async () => (await import('./wrapper.js')).wrapperCommand],
];

/** The named command's factory when argv starts with a command name; otherwise all (help, errors). */
export async function loadCommandFactories(argv: readonly string[]): Promise<CommandFactory[]> {
  const named = commandLoaders.filter(([name]) => name === argv[0]);
  return Promise.all((named.length > 0 ? named : commandLoaders).map(([, load]) => load()));
}
