// The engine command of a sparkrun recipe: from its command template, or from its defaults
// through sparkrun's flag table, with the executor's entrypoint in front (recipe.ts reads the
// rest of the recipe).
import { SparkError } from '../../errors/errors.js';
import type { FileDiagnostic } from '../fields.js';
import type { Engine } from '../recipe.js';
import { PROGRAMS, ShellSyntaxError, defaultsCommand, renderValue, templateCommand, type LinedArg } from './command.js';
import { SHAPE_KEYS, outcomeFinding } from './defaults-flags.js';
import { Reader, diagnostic } from './recipe-reader.js';
import { shellWords } from './shell-words.js';

export interface RecipeRead {
  file: string;
  r: Reader;
  top: Record<string, unknown>;
  diagnostics: FileDiagnostic[];
}

export function placeholderValues(
  defaults: Record<string, unknown>,
  model: string,
  revision: string | undefined,
): Map<string, string> {
  const values = new Map(Object.entries(defaults).map(([k, v]) => [k, renderValue(v)]));
  if (!values.has('model')) values.set('model', model);
  if (revision !== undefined && !values.has('model_revision')) values.set('model_revision', revision);
  return values;
}

export interface BuiltCommand {
  program: string[];
  programLine: number | undefined;
  args: LinedArg[];
}

/** The engine command from the recipe's command template, with a finding per unresolved or unused name. */
export function commandFromTemplate(
  { file, r, diagnostics }: RecipeRead,
  command: string,
  defaults: Record<string, unknown>,
  values: Map<string, string>,
  model: string,
): BuiltCommand {
  const firstLine = r.doc.textLine('command');
  let t: ReturnType<typeof templateCommand>;
  try {
    t = templateCommand(command, values, model, firstLine);
  } catch (err) {
    if (!(err instanceof ShellSyntaxError)) throw err;
    const line = firstLine === undefined ? undefined : firstLine + err.line;
    const where = line === undefined ? file : `${file}:${line}`;
    throw new SparkError(
      'E_RECIPE',
      `${where}: command: ${err.message}; write the engine command alone (its environment under env:)`,
      { path: file, key: 'command' },
    );
  }
  for (const key of t.unresolved) {
    diagnostics.push(
      diagnostic(
        file,
        firstLine,
        'sparkrun-defaults',
        'error',
        `command.{${key}}`,
        `command: {${key}} names no key of defaults and no top-level key spark answers (model, model_revision), so the engine would get it as written`,
        `add ${key} to defaults, or correct the name`,
      ),
    );
  }
  for (const key of Object.keys(defaults)) {
    if (t.used.has(key) || SHAPE_KEYS.has(key) || [...values.values()].some((v) => v.includes(`{${key}}`))) continue;
    diagnostics.push(
      diagnostic(
        file,
        r.line('defaults', key),
        'sparkrun-defaults',
        'warn',
        `defaults.${key}`,
        `defaults.${key} is not named in command, so it reaches nothing (sparkrun does the same with a template)`,
        `name it in command as {${key}}, or remove it`,
      ),
    );
  }
  return { program: t.program, args: t.args, programLine: t.programLine };
}

/** The engine command spark builds from the defaults when there is no template, with a finding per default it cannot pass. */
export function commandFromDefaults(
  { file, r, diagnostics }: RecipeRead,
  engine: Engine,
  defaults: Record<string, unknown>,
  values: Map<string, string>,
  runtimeLine: number | undefined,
): BuiltCommand {
  const built = defaultsCommand(engine, defaults, values, (key) => r.line('defaults', key));
  for (const o of built.outcomes) {
    const f = outcomeFinding(engine, o);
    if (f)
      diagnostics.push(
        diagnostic(
          file,
          r.line('defaults', o.key),
          'sparkrun-defaults',
          f.severity,
          `defaults.${o.key}`,
          f.message,
          f.fix,
        ),
      );
  }
  return { program: PROGRAMS[engine], programLine: runtimeLine, args: built.args };
}

/** executor_config.entrypoint's words before the program. */
export function withEntrypoint(r: Reader, entrypoint: string | undefined, program: string[]): string[] {
  if (entrypoint === undefined || entrypoint === '') return program;
  try {
    return [...shellWords(entrypoint).map((w) => w.text), ...program];
  } catch (err) {
    if (!(err instanceof ShellSyntaxError)) throw err;
    return r.fail(
      ['executor_config', 'entrypoint'],
      `executor_config.entrypoint: ${err.message}`,
      'write the program and its arguments alone',
    );
  }
}
