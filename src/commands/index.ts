// Every CLI command, in the order `spark --help` lists them. Only the command being run is
// imported: start-up stays close to Node's own (several commands run on every boot).
import type { Command } from 'commander';
import type { CliContext } from '../cli.js';

export type CommandFactory = (ctx: CliContext) => Command;

export interface CommandEntry {
  name: string;
  summary: string;
  load(): Promise<CommandFactory>;
}

export const commandEntries: CommandEntry[] = [
  {
    name: 'inspect',
    summary: 'validate a snapshot (index, every shard header, file sizes) and report its Engram tables',
    load: async () => (await import('./inspect.js')).inspectCommand,
  },
  {
    name: 'synth',
    summary: 'write a small DeepSeek-V4.1-shaped snapshot with checkable Engram rows',
    load: async () => (await import('./synth.js')).synthCommand,
  },
  {
    name: 'preflight',
    summary: 'check a recipe, its cluster and env files, the snapshot and this node before a boot',
    load: async () => (await import('./preflight.js')).preflightCommand,
  },
  {
    name: 'launch',
    summary: 'run a recipe on a cluster: one container per node over ssh, then wait for the head to be healthy',
    load: async () => (await import('./launch.js')).launchCommand,
  },
  {
    name: 'fanout',
    summary: 'run node-local work (pack, verify) on every node of a cluster at once over ssh',
    load: async () => (await import('./fanout.js')).fanoutCommand,
  },
];
