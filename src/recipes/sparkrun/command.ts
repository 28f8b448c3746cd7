// A sparkrun recipe's serve command as spark's container command and engine arguments: from
// its `command:` template (every `{key}` filled from `defaults` and `{model}`, then read as
// bash -c would, see shell-words.ts), or, without one, from `defaults` through the runtime's
// flag table, as sparkrun builds it (its flag names per runtime: docs/sparkrun.md).
//
// The model is the launcher's to give: a `{model}` where the engine takes its model (vLLM's
// positional, `--model-path` / `--model`) is left out, so spark passes the snapshot it resolves
// and pins, exactly as for a TOML recipe. A model written as a path stays.
import type { Engine } from '../recipe.js';
import { NEGATABLE, keyFate, type DefaultsOutcome } from './defaults-flags.js';
import { ShellSyntaxError, shellWords } from './shell-words.js';

/** The program a command-less recipe runs, per engine (sparkrun's generated commands). */
export const PROGRAMS: Record<Engine, string[]> = {
  sglang: ['python3', '-m', 'sglang.launch_server'],
  vllm: ['vllm', 'serve'],
};

/** One engine argument and the recipe line that wrote it. */
export interface LinedArg {
  text: string;
  line: number | undefined;
}

export interface ServeCommand {
  /** The container command (program words), e.g. `vllm serve`. */
  program: string[];
  args: LinedArg[];
}

/** A defaults value as text: YAML's true/false, numbers as written, maps and lists as JSON. */
export function renderValue(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
/** Stands for `{model}` until the words are split, so the launcher's model slot can be found. */
const MODEL = '\u{F0000}model\u{F0000}';

/**
 * Fills `{key}` from `values` until nothing changes (a default may name another); a `{…}`
 * holding a quote or another brace is JSON, not a placeholder. Returns the text and the keys used.
 */
export function fillPlaceholders(
  text: string,
  values: ReadonlyMap<string, string>,
): { text: string; used: Set<string>; unresolved: string[] } {
  const used = new Set<string>();
  let out = text;
  for (let round = 0; round < 10; round++) {
    const next = out.replace(PLACEHOLDER, (whole, key: string) => {
      const v = values.get(key);
      if (v === undefined) return whole;
      used.add(key);
      return v;
    });
    if (next === out) break;
    out = next;
  }
  const unresolved = [...new Set([...out.matchAll(PLACEHOLDER)].map((m) => m[1]!))];
  return { text: out, used, unresolved };
}

/** `python3 -m MODULE`: the interpreter's `-m` and its module belong to the program. */
const PYTHON = /(^|\/)python[0-9.]*$/;

/**
 * Where the engine's arguments start: at the first word starting with `-`, except the `-m` of
 * a Python interpreter (`python3 -m sglang.launch_server` is the program); -1 when none does.
 */
export function programEnd(words: readonly string[]): number {
  return words.findIndex((w, i) => w.startsWith('-') && !(w === '-m' && i > 0 && PYTHON.test(words[i - 1]!)));
}

/** Model flags whose `{model}` value the launcher replaces with the resolved snapshot. */
const MODEL_FLAGS = new Set(['--model-path', '--model']);

/**
 * The command template as program and arguments. `firstLine` is the file line of the
 * template's first text line. Throws ShellSyntaxError (line 0-based within the template).
 */
export function templateCommand(
  template: string,
  values: ReadonlyMap<string, string>,
  model: string,
  firstLine: number | undefined,
) {
  const withModel = new Map(values);
  withModel.set('model', MODEL);
  const filled = fillPlaceholders(template, withModel);
  const words = shellWords(filled.text);
  const lineOf = (w: { line: number }) => (firstLine === undefined ? undefined : firstLine + w.line);
  const flagAt = programEnd(words.map((w) => w.text));
  const programWords = flagAt < 0 ? words : words.slice(0, flagAt);
  const rest = flagAt < 0 ? [] : words.slice(flagAt);
  // `vllm serve {model}`: the positional model slot is the launcher's.
  const program = programWords.filter((w) => w.text !== MODEL).map((w) => w.text.split(MODEL).join(model));
  const args: LinedArg[] = [];
  for (let i = 0; i < rest.length; i++) {
    const w = rest[i]!;
    if (MODEL_FLAGS.has(w.text) && rest[i + 1]?.text === MODEL) {
      i++;
      continue;
    }
    const eq = w.text.indexOf('=');
    if (eq > 0 && MODEL_FLAGS.has(w.text.slice(0, eq)) && w.text.slice(eq + 1) === MODEL) continue;
    args.push({ text: w.text.split(MODEL).join(model), line: lineOf(w) });
  }
  const used = new Set(filled.used);
  used.delete('model');
  return {
    program,
    args,
    used,
    unresolved: filled.unresolved,
    programLine: programWords[0] ? lineOf(programWords[0]) : firstLine,
  };
}

export { ShellSyntaxError };

/**
 * Engine arguments from `defaults` (no template), in the order the recipe writes the keys; a
 * value's `{key}` placeholders are filled from `values` (defaults, then the model and its
 * revision), and a key whose value names one nothing answers is left out (its outcome says so).
 */
export function defaultsCommand(
  engine: Engine,
  defaults: Record<string, unknown>,
  values: ReadonlyMap<string, string>,
  lineOf: (key: string) => number | undefined,
): { args: LinedArg[]; outcomes: DefaultsOutcome[] } {
  const args: LinedArg[] = [];
  const outcomes: DefaultsOutcome[] = [];
  for (const [key, raw] of Object.entries(defaults)) {
    const fate = keyFate(engine, key);
    if ((fate.how !== 'mapped' && fate.how !== 'engine-flag') || raw === null) {
      outcomes.push(fate);
      continue;
    }
    const { flag } = fate;
    const line = lineOf(key);
    if (raw === true) args.push({ text: flag, line });
    else if (raw === false) {
      if (engine === 'vllm' && NEGATABLE.has(key)) args.push({ text: flag.replace(/^--/, '--no-'), line });
    } else {
      const filled = fillPlaceholders(renderValue(raw), values);
      if (filled.unresolved.length > 0) {
        outcomes.push({ key, how: 'unresolved', flag, placeholders: filled.unresolved });
        continue;
      }
      args.push({ text: flag, line }, { text: filled.text, line });
    }
    outcomes.push(fate);
  }
  return { args, outcomes };
}
