// Builds the commander program. Command modules are small and import the addon lazily, so
// `spark --help` and `spark --version` never load native code.
import { Command, CommanderError } from 'commander';
import type { Io } from './terminal/io.js';
import type { CliContext } from './commands/context.js';
import { commandEntries } from './commands/index.js';
import { versionString } from './bundle/manifest.js';

/**
 * The program for one invocation: the command named in argv (or after `help`) is loaded in
 * full; the others are listed by name and summary only.
 */
export async function buildProgram(ctx: CliContext, argv: string[]): Promise<Command> {
  // Positional options: program options only before the command name, which lets
  // `spark wrapper` pass everything after the engine's name through untouched.
  const program = new Command('spark')
    .enablePositionalOptions()
    .description(
      'Engram row store, packer, range tiling and launch preflight for DeepSeek-V4.1-Flash on DGX Spark clusters.',
    )
    .version(versionString(), '-V, --version')
    .addHelpText(
      'after',
      `
Exit codes: 0 ok, 1 a check failed, 2 bad usage or input data, 3 environment or I/O error.
Every command takes --json for one machine-readable document on stdout.

Example:
  spark synth /tmp/snap && spark inspect /tmp/snap`,
    );
  const words = argv.filter((a) => !a.startsWith('-'));
  const wanted = words[0] === 'help' ? words[1] : words[0];
  for (const entry of commandEntries) {
    if (entry.name === wanted) program.addCommand((await entry.load())(ctx));
    else program.command(entry.name).description(entry.summary);
  }
  configureAll(program, ctx.io, argv.includes('--json'));
  return program;
}

/**
 * Output and exit behaviour for every command: errors throw instead of exiting. With --json,
 * commander's error text (and the help it prints after one) stays off stderr: the one JSON
 * error object goes there instead (main.ts).
 */
function configureAll(cmd: Command, io: Io, json: boolean): void {
  cmd.exitOverride();
  cmd.configureOutput({
    writeOut: (s) => io.stdout(s),
    writeErr: json ? () => {} : (s) => io.stderr(s),
    // commander's own errors (unknown option, missing argument) in the one-line form every
    // spark error has: `spark: what (the fix)`.
    outputError: (s, write) =>
      write(`spark: ${s.replace(/^error: /, '').trimEnd()} (run ${commandPath(cmd)} --help)\n`),
  });
  for (const sub of cmd.commands) configureAll(sub, io, json);
}

/** `spark pack`, for a subcommand's error line. */
function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/**
 * Help and version asked for are successes; everything else is bad usage, including help shown
 * because a command was missing (`spark bench`: commander's 'commander.help' with exit 1).
 */
export function commanderExitCode(err: CommanderError): 0 | 2 {
  if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
  return err.exitCode === 0 ? 0 : 2;
}

/** A commander failure as one line for the JSON error object. */
export function commanderMessage(err: CommanderError): string {
  if (err.code === 'commander.help') return 'a command is missing here (run with --help for the list)';
  return err.message.replace(/^error: /, '');
}
