// `spark recipe convert` changes no value: a value the other format cannot hold as it is, or
// one that reads back different from the converted file, is refused with one line naming it
// and its line (exit 2). Two guards: the values each format is known not to carry (a
// placeholder a template would fill, a ":" in a volume), with a reason; then the converted
// text read back by spark's own reader and compared field by field with the original.
import { SparkError } from '../../errors/errors.js';
import { argvForExec } from '../args.js';
import { parseRecipe, recipeKey, type LoadedRecipe, type Recipe, type RecipeField } from '../recipe.js';
import { parallelShape } from '../topology.js';
import { programEnd } from './command.js';
import { toSparkrunYaml, toToml } from './convert.js';
import { parseSparkrunRecipe } from './recipe.js';

export type RecipeFormat = 'toml' | 'yaml';

/** One value and where the recipe holds it. */
interface Place {
  field: RecipeField;
  /** An element of a list field, or a key of env. */
  part?: number | string;
  /** The value's name in messages: `args[3]`, `env.E1`, `extra_mounts[0].host`. */
  label: string;
}

interface Refusal extends Place {
  value: string;
  why: string;
}

/** `{key}` as a command: template fills it (see fillPlaceholders). */
const TEMPLATE_PLACEHOLDER = /\{[A-Za-z_][A-Za-z0-9_]*\}/;
/** `{config.KEY}` / `{launch.NAME}` as a sparkrun recipe's env fills it (see env.ts). */
const ENV_REFERENCE = /\{(config|launch)\.[A-Za-z_][A-Za-z0-9_]*\}/;
/** sparkrun repairs a backslash, blanks and a line break in a command into a continuation. */
const BROKEN_CONTINUATION = /\\[ \t]+\n/;
/** A UTF-16 surrogate without its pair: not a character, so no UTF-8 file (TOML) holds it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Every string value of a recipe, with its place. */
function* stringsOf(r: Recipe): Generator<Place & { value: string }> {
  const scalars = [
    'engine',
    'name',
    'dockerImage',
    'model',
    'parentModel',
    'distributedBackend',
    'shmSize',
    'dockerImageDir',
  ] as const;
  for (const field of scalars) {
    const v = r[field];
    if (typeof v === 'string') yield { field, label: recipeKey(field), value: v };
  }
  for (const field of ['entrypoint', 'args'] as const) {
    for (const [i, v] of (r[field] ?? []).entries())
      yield { field, part: i, label: `${recipeKey(field)}[${i}]`, value: v };
  }
  for (const [i, m] of r.extraMounts.entries()) {
    yield { field: 'extraMounts', part: i, label: `extra_mounts[${i}].host`, value: m.host };
    yield { field: 'extraMounts', part: i, label: `extra_mounts[${i}].container`, value: m.container };
  }
  for (const [k, v] of Object.entries(r.env)) {
    yield { field: 'env', part: k, label: `env key ${JSON.stringify(k)}`, value: k };
    yield { field: 'env', part: k, label: `env.${k}`, value: v };
  }
}

/** The first value a sparkrun recipe cannot hold as it is, with the reason. */
function unwritableInYaml(r: Recipe): Refusal | undefined {
  const program = r.entrypoint ?? [];
  for (const s of stringsOf(r)) {
    const command = s.field === 'args' || s.field === 'entrypoint';
    if (command && TEMPLATE_PLACEHOLDER.test(s.value)) {
      const p = TEMPLATE_PLACEHOLDER.exec(s.value)![0];
      return {
        ...s,
        why: `a command: template reads ${p} as a placeholder (sparkrun and spark fill it from defaults), and no escape survives both`,
      };
    }
    if (command && BROKEN_CONTINUATION.test(s.value))
      return {
        ...s,
        why: 'sparkrun rewrites a backslash followed by blanks and a line break anywhere in a command (into a line continuation)',
      };
    if (s.field === 'env' && s.label.startsWith('env.') && ENV_REFERENCE.test(s.value)) {
      const p = ENV_REFERENCE.exec(s.value)![0];
      return {
        ...s,
        why: `a sparkrun recipe's env reads ${p} as a value to fill in, and no escape survives both sparkrun and spark`,
      };
    }
    if (s.field === 'extraMounts' && s.value.includes(':'))
      return {
        ...s,
        why: 'executor_config.volumes writes a mount as host:container[:ro], which a ":" in a path breaks',
      };
  }
  const first = r.args[0];
  if (first !== undefined && !first.startsWith('-'))
    return {
      field: 'args',
      part: 0,
      label: 'args[0]',
      value: first,
      why: 'a command: template reads the words before the first flag as the program, so this argument would join it',
    };
  const end = programEnd(program);
  if (end >= 0)
    return {
      field: 'entrypoint',
      part: end,
      label: `entrypoint[${end}]`,
      value: program[end]!,
      why: 'a command: template ends the program at its first word starting with "-" (python3 -m aside), so the word would become an engine argument',
    };
  return undefined;
}

/** The first value a TOML file cannot hold. */
function unwritableInToml(r: Recipe): Refusal | undefined {
  for (const s of stringsOf(r)) {
    if (LONE_SURROGATE.test(s.value))
      return {
        ...s,
        why: 'it holds half of a UTF-16 surrogate pair, which is not a character: no TOML file can hold it',
      };
  }
  return undefined;
}

function refuse(r: Recipe, place: Place, what: string, fix: string): never {
  const line = place.part === undefined ? r.locate(place.field) : r.locate(place.field, place.part as never);
  throw new SparkError(
    'E_RECIPE',
    `${line === undefined ? r.file : `${r.file}:${line}`}: ${place.label} ${what}; ${fix}`,
    {
      path: r.file,
      key: place.label,
      ...(line !== undefined ? { line } : {}),
    },
  );
}

/** What a conversion may differ in: what the converted file's header notes (see convert.ts). */
function noted(a: Recipe, to: RecipeFormat) {
  const shape = parallelShape(a);
  return {
    requiredNodes: to === 'yaml' && a.requiredNodes !== shape.tp * shape.pp,
    entrypoint: a.entrypoint === undefined,
    distributedBackend: to === 'yaml' && a.engine !== 'vllm',
  };
}

interface Difference extends Place {
  before: unknown;
  after: unknown;
}

/** The first field the re-read recipe has otherwise than the original, undefined when none. */
function difference(a: Recipe, b: Recipe, to: RecipeFormat): Difference | undefined {
  const skip = noted(a, to);
  const same = (x: unknown, y: unknown) => JSON.stringify(x) === JSON.stringify(y);
  for (const field of ['engine', 'name', 'dockerImage', 'model', 'port', 'shmSize'] as const) {
    if (!same(a[field], b[field])) return { field, label: recipeKey(field), before: a[field], after: b[field] };
  }
  if (!skip.distributedBackend && !same(a.distributedBackend, b.distributedBackend))
    return {
      field: 'distributedBackend',
      label: recipeKey('distributedBackend'),
      before: a.distributedBackend,
      after: b.distributedBackend,
    };
  if (!skip.requiredNodes && a.requiredNodes !== b.requiredNodes)
    return {
      field: 'requiredNodes',
      label: recipeKey('requiredNodes'),
      before: a.requiredNodes,
      after: b.requiredNodes,
    };
  const [sa, sb] = [parallelShape(a), parallelShape(b)];
  if (sa.tp !== sb.tp || sa.pp !== sb.pp)
    return {
      field: 'tensorParallelSize',
      label: 'the parallel shape (tp × pp)',
      before: `${sa.tp} × ${sa.pp}`,
      after: `${sb.tp} × ${sb.pp}`,
    };
  const list = (field: 'entrypoint' | 'args', x: string[], y: string[]): Difference | undefined => {
    const i = [...Array(Math.max(x.length, y.length)).keys()].find((n) => x[n] !== y[n]);
    return i === undefined
      ? undefined
      : { field, part: i, label: `${recipeKey(field)}[${i}]`, before: x[i], after: y[i] };
  };
  if (!skip.entrypoint) {
    const d = list('entrypoint', a.entrypoint ?? [], b.entrypoint ?? []);
    if (d) return d;
  }
  // A YAML command holds what the engine is given: shell quotes around JSON are the TOML's way to write the same.
  const exec = (r: Recipe) => (to === 'yaml' ? argvForExec(r.args) : r.args);
  const args = list('args', exec(a), exec(b));
  if (args) return args;
  for (let i = 0; i < Math.max(a.extraMounts.length, b.extraMounts.length); i++) {
    const [x, y] = [a.extraMounts[i], b.extraMounts[i]];
    const view = (m: typeof x) =>
      m === undefined ? undefined : { host: m.host, container: m.container, read_only: m.readOnly };
    if (!same(view(x), view(y)))
      return { field: 'extraMounts', part: i, label: `extra_mounts[${i}]`, before: view(x), after: view(y) };
  }
  for (const k of new Set([...Object.keys(a.env), ...Object.keys(b.env)])) {
    if (a.env[k] !== b.env[k]) return { field: 'env', part: k, label: `env.${k}`, before: a.env[k], after: b.env[k] };
  }
  return undefined;
}

const NAME: Record<RecipeFormat, string> = { toml: 'spark TOML recipe', yaml: 'sparkrun recipe' };

export interface Converted {
  text: string;
  /** What the reader substituted for values it could not resolve here (an unset $VAR), one line each. */
  warnings: string[];
}

/**
 * The recipe in the other format, every value exact. Throws SparkError E_RECIPE (exit 2)
 * naming the first value that would change, and why.
 */
export async function convertRecipe(loaded: LoadedRecipe, to: RecipeFormat, home: string): Promise<Converted> {
  const r = loaded.recipe;
  const fix = `spark recipe convert changes no value: write it another way, or keep the recipe as a ${NAME[to === 'yaml' ? 'toml' : 'yaml']}`;
  const problem = to === 'yaml' ? unwritableInYaml(r) : unwritableInToml(r);
  if (problem)
    refuse(r, problem, `${JSON.stringify(problem.value)} cannot be written in a ${NAME[to]}: ${problem.why}`, fix);
  const text = to === 'yaml' ? toSparkrunYaml(loaded) : toToml(loaded);
  let back: Recipe;
  try {
    back =
      to === 'yaml'
        ? (await parseSparkrunRecipe(text, r.file, { env: {}, home })).recipe
        : parseRecipe(text, r.file).recipe;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new SparkError('E_RECIPE', `${r.file}: the converted ${NAME[to]} does not read back (${why}); ${fix}`, {
      path: r.file,
    });
  }
  const d = difference(r, back, to);
  const show = (v: unknown) => (v === undefined ? 'nothing' : JSON.stringify(v));
  if (d) refuse(r, d, `${show(d.before)} would come back from the ${NAME[to]} as ${show(d.after)}`, fix);
  const warnings = loaded.diagnostics
    .filter((x) => x.kind === 'undefined-variable')
    .map(
      (x) =>
        `${x.file}${x.line !== undefined ? `:${x.line}` : ''}: ${x.message}; the ${NAME[to]} gets that value (${x.fix}, then convert again)`,
    );
  return { text, warnings };
}
