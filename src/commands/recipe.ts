// `spark recipe convert <recipe>`: a sparkrun YAML recipe as spark TOML, or a spark TOML recipe
// as sparkrun YAML (docs/sparkrun.md). Both are read into the same typed recipe, so the
// converted file preflights and launches the same; what has no counterpart is a comment.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { Command, Option } from 'commander';
import type { CliContext } from './context.js';
import type { CommandResult, Io } from '../terminal/io.js';
import { usageError } from '../errors/errors.js';
import { writeNewFile } from '../files/new-file.js';
import { fileFormat, readRecipe } from '../recipes/index.js';
import { convertRecipe } from '../recipes/sparkrun/round-trip.js';
import { readTextFile } from '../recipes/toml-file.js';

export interface ConvertFlags {
  to?: 'toml' | 'yaml';
  out?: string;
  force?: boolean;
  json?: boolean;
}

export async function runConvert(file: string, flags: ConvertFlags, io: Io): Promise<CommandResult> {
  const from = fileFormat(await readTextFile(file, 'recipe'), file);
  const to = flags.to ?? (from === 'toml' ? 'yaml' : 'toml');
  if (to === from) throw usageError(`${file} is already ${from.toUpperCase()}; --to ${to} converts nothing`);
  const loaded = await readRecipe(file, { env: io.env });
  // Every value exact, or refused naming it (exit 2), before anything is written.
  const { text, warnings } = await convertRecipe(loaded, to, io.env.HOME ?? homedir());
  if (!flags.json) for (const w of warnings) io.stderr(`spark recipe convert: warning: ${w}\n`);
  if (flags.out !== undefined) {
    if (existsSync(flags.out) && !flags.force)
      throw usageError(`${flags.out} exists; choose another --out, or pass --force to replace it`);
    writeNewFile(flags.out, text);
  }
  const json = {
    from: { file, format: from },
    to: { format: to, file: flags.out ?? null },
    notes: loaded.diagnostics.length,
    warnings,
    text,
  };
  return { json, text: flags.out === undefined ? text.trimEnd() : `wrote ${flags.out} (${to})`, exitCode: 0 };
}

export function recipeCommand(ctx: CliContext): Command {
  const recipe = new Command('recipe').description(
    'work with recipe files: convert between spark TOML and sparkrun YAML',
  );
  recipe
    .command('convert')
    .description('write a sparkrun YAML recipe as spark TOML, or a spark TOML recipe as sparkrun YAML')
    .argument('<recipe>', 'the recipe to convert (its format is read from its content)')
    .addOption(new Option('--to <format>', 'the format to write (default: the other one)').choices(['toml', 'yaml']))
    .option('--out <file>', 'write the result to this file instead of stdout')
    .option('--force', 'with --out: replace an existing file')
    .option('--json', 'one JSON document: {from, to, notes, text}')
    .addHelpText(
      'after',
      `
What one format can say and the other cannot (mods, pre_exec, parent_model, …) is written as a
comment at the top of the result. The result preflights the same as the original: every value
comes back exactly when spark reads the result, or the conversion is refused (exit 2) naming
the value, its line and why (a {placeholder} a command: template would fill, a ":" in a volume
path). An unset $VAR in a sparkrun recipe's env is a warning and a comment.

Examples:
  spark recipe convert recipes/dsv41-flash-4x-sglang-aiden16/recipe.toml --out dsv41.yaml
  spark recipe convert ~/.config/sparkrun/recipes/my-recipe.yaml --to toml`,
    )
    .action(async (file: string, flags: ConvertFlags) => {
      ctx.emit(await runConvert(file, flags, ctx.io), Boolean(flags.json));
    });
  return recipe;
}
