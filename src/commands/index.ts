// Every CLI command, in the order `spark --help` lists them. Only the command being run is
// imported: start-up stays close to Node's own (several commands run on every boot).
import type { Command } from 'commander';
import type { CliContext } from './context.js';

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
    name: 'pack',
    summary:
      "copy this rank's Engram rows to node-local disk in the format its serving stack reads (the overlay's sparse copy, the Mia stack's packed shards)",
    load: async () => (await import('./pack.js')).packCommand,
  },
  {
    name: 'verify',
    summary: 'check a packed directory: manifest, every checksum, and rows against the snapshot',
    load: async () => (await import('./verify.js')).verifyCommand,
  },
  {
    name: 'engram-ranges',
    summary: 'the Engram rows each rank owns (SPARK_ENGRAM_ROWS), or check that given ranges tile every table',
    load: async () => (await import('./engram-ranges.js')).engramRangesCommand,
  },
  {
    name: 'preflight',
    summary: 'check a recipe, its cluster and env files, the snapshot and every node (over ssh) before a boot',
    load: async () => (await import('./preflight.js')).preflightCommand,
  },
  {
    name: 'gid',
    summary: 'the RoCE GID index NCCL would pick per HCA (exit 1 if none, or if the HCAs disagree)',
    load: async () => (await import('./gid.js')).gidCommand,
  },
  {
    name: 'wrapper',
    summary: 'container entrypoint: set SPARK_ENGRAM_ROWS and B12X_ROCE_GID_INDEX for this rank, then exec the engine',
    load: async () => (await import('./wrapper.js')).wrapperCommand,
  },
  {
    name: 'rows',
    summary: 'read Engram rows at given ids through the row store',
    load: async () => (await import('./rows.js')).rowsCommand,
  },
  {
    name: 'engine-lib',
    summary: "spark's drop-in row library for a serving stack (overlay or mia): its path, or a copy to mount",
    load: async () => (await import('./engine-lib.js')).engineLibCommand,
  },
  {
    name: 'bench',
    summary: 'benchmarks: gather (row store against fio and a naive loop)',
    load: async () => (await import('./bench-gather.js')).benchCommand,
  },
  {
    name: 'launch',
    summary: 'run a recipe on a cluster: one container per node over ssh, then wait for the head to be healthy',
    load: async () => (await import('./launch.js')).launchCommand,
  },
  {
    name: 'recipe',
    summary: 'convert a recipe between spark TOML and sparkrun YAML',
    load: async () => (await import('./recipe.js')).recipeCommand,
  },
  {
    name: 'fanout',
    summary: 'run node-local work (install, pack, verify) on every node of a cluster at once over ssh',
    load: async () => (await import('./fanout.js')).fanoutCommand,
  },
  {
    name: 'bundle',
    summary: 'one file holding spark, its dependencies, the addon and the engine libraries, for fanout install',
    load: async () => (await import('./bundle.js')).bundleCommand,
  },
  {
    name: 'status',
    summary: "every node of a cluster at a glance: spark, the launch's container, health, engine-library stats",
    load: async () => (await import('./status.js')).statusCommand,
  },
  {
    name: 'logs',
    summary: "the launch's containers' logs from every node, merged in time order",
    load: async () => (await import('./logs.js')).logsCommand,
  },
];
