// A sparkrun recipe (YAML, recipe_version "2") as the same typed Recipe a TOML recipe gives, so
// preflight and launch treat both alike. What maps, and how (docs/sparkrun.md):
//   runtime sglang / vllm / vllm-distributed   → engine
//   container                                  → docker_image
//   model, model_revision                      → model, and `--revision REV` in args
//   defaults.tensor_parallel / pipeline_parallel → the parallel shape; nodes = tp × pp
//   defaults.port                              → port
//   command (a template) or defaults           → entrypoint and args (recipe-command.ts, command.ts)
//   env                                        → env, interpolated (env.ts)
//   executor_config.shm_size / entrypoint / volumes → shm_size, the program, extra_mounts
//   {launch.runtime_cache_dir} in env          → the runtime cache mounted at /cache/runtime
// Everything else is reported (features.ts), never dropped without a word.
import { SparkError } from '../../errors/errors.js';
import { isTable, typeName } from '../fields.js';
import { locator } from '../located.js';
import { parseArgs } from '../args.js';
import { PRIVILEGED, shmOf } from '../container.js';
import { TP_FLAGS } from '../topology.js';
import { envKeyProblem } from '../env-key.js';
import { RECIPE_FIELDS, type Engine, type LoadedRecipe, type Mount, type Recipe, type RecipeField } from '../recipe.js';
import type { TomlPosition } from '../toml-positions.js';
import { renderValue, type LinedArg } from './command.js';
import { RUNTIME_CACHE_CONTAINER_PATH, RUNTIME_CACHE_HOST_DEFAULT, interpolate, usesRuntimeCache } from './env.js';
import {
  EXECUTOR_KEYS,
  INFORMATIONAL_KEYS,
  NOT_RUN,
  NOT_RUN_EXECUTOR,
  READ_KEYS,
  guessRuntime,
  runtimeChoice,
} from './features.js';
import { modFindings } from './mods.js';
import { parseYamlDocument } from './yaml-document.js';
import {
  commandFromDefaults,
  commandFromTemplate,
  placeholderValues,
  withEntrypoint,
  type RecipeRead,
} from './recipe-command.js';
export type { SparkrunReadOptions } from './recipe-reader.js';
import {
  type SparkrunReadOptions,
  Reader,
  diagnostic,
  notRunDiagnostic,
  launchValues,
  volumes,
} from './recipe-reader.js';

/** Parses a sparkrun recipe into the typed Recipe. Throws SparkError E_RECIPE (exit 2) on bad data. */
export async function parseSparkrunRecipe(
  source: string,
  file: string,
  options: SparkrunReadOptions,
): Promise<LoadedRecipe> {
  const at = readTop(source, file);
  const { r, top } = at;
  const defaults = r.map(top, ['defaults']);
  const command = r.string(top, ['command']);
  const { engine, runtimeLine } = readRuntime(at, command, defaults);
  const m = readModel(at, defaults);
  const values = placeholderValues(defaults, m.model, m.revision);
  const executor = r.map(top, ['executor_config']);
  const entrypoint = r.string(executor, ['executor_config', 'entrypoint']);
  const built =
    command !== undefined
      ? commandFromTemplate(at, command, defaults, values, m.model)
      : commandFromDefaults(at, engine, defaults, values, runtimeLine);
  const { args, programLine } = built;
  const program = withEntrypoint(r, entrypoint, built.program);
  if (m.revision !== undefined && !parseArgs(args.map((a) => a.text)).has('--revision')) {
    args.push(
      { text: '--revision', line: r.line('model_revision') },
      { text: m.revision, line: r.line('model_revision') },
    );
  }
  const nodes = nodeCount(at, args, m.tp, m.pp);
  const envTable = r.map(top, ['env']);
  const launch = await launchValues(m.model, m.revision, nodes, options);
  const env = readEnv(at, envTable, { file, defaults, launch, processEnv: options.env, diagnostics: at.diagnostics });
  const extraMounts = volumes(r, executor);
  runtimeCacheMount(at, envTable, extraMounts);
  // What spark does not do, one finding each (each mod its own); unknown keys by name.
  at.diagnostics.push(
    ...modFindings(top.mods, (i) => (i === undefined ? r.line('mods') : r.line('mods', i)), {
      file,
      model: m.model,
      ...(launch.modelRevision !== undefined ? { commit: launch.modelRevision } : {}),
      hfCache: options.hfCache ?? '~/.cache/huggingface',
      nodes,
      env,
      mounts: extraMounts,
    }),
  );
  topKeyFindings(at);
  const shmSize =
    executor.shm_size === undefined || executor.shm_size === null ? undefined : renderValue(executor.shm_size);
  executorKeyFindings(at, executor, shmSize);
  const recipe: Recipe = {
    file,
    engine,
    dockerImage: m.image,
    model: m.model,
    requiredNodes: nodes,
    pipelineParallelSize: m.pp,
    args: args.map((a) => a.text),
    extraMounts,
    env,
    entrypoint: program,
    locate: locator<Recipe, RecipeField>(
      RECIPE_FIELDS,
      positions(r, args, programLine, extraMounts, m.tp !== undefined),
    ),
  };
  setOptionalFields(at, recipe, { tp: m.tp, defaults, engine, shmSize });
  return { recipe, diagnostics: at.diagnostics };
}

/** What every step of reading one recipe reads from and reports into. */
/** The YAML map at the top of the file, and a recipe_version spark reads. */
function readTop(source: string, file: string): RecipeRead {
  const doc = parseYamlDocument(source, file, 'E_RECIPE');
  if (!isTable(doc.value)) {
    throw new SparkError(
      'E_RECIPE',
      `${file}: a sparkrun recipe is a YAML map (model:, runtime:, container:, …), got ${typeName(doc.value)}; write one key per line`,
      { path: file },
    );
  }
  const top = doc.value;
  const r: Reader = new Reader(file, doc, top);
  const version = top.recipe_version === undefined ? '2' : String(top.recipe_version);
  if (version !== '2' && version !== '1')
    r.fail(['recipe_version'], `recipe_version "${version}" is not one spark reads`, 'write recipe_version: "2"');
  return { file, r, top, diagnostics: [] };
}

/** The engine the runtime (written or guessed) runs, and the line it is reported on. */
function readRuntime(
  { file, top, diagnostics, ...at }: RecipeRead,
  command: string | undefined,
  defaults: Record<string, unknown>,
): { engine: Engine; runtimeLine: number | undefined } {
  const r: Reader = at.r; // typed here, so that r.fail() (never) narrows what follows
  const runtime = guessRuntime(top, command, defaults.distributed_executor_backend);
  const choice = runtimeChoice(runtime);
  if (choice.kind === 'unsupported') {
    r.fail(
      ['runtime'],
      `runtime ${runtime}: ${choice.why}`,
      'use runtime: sglang or vllm, or launch this recipe with sparkrun',
    );
  }
  // A runtime guessed from other keys is reported on the line of the key it was guessed from.
  const runtimeLine =
    r.line('runtime') ??
    r.line('mods') ??
    r.line('build_args') ??
    r.line('recipe_version') ??
    r.line('defaults', 'distributed_executor_backend') ??
    r.line('command') ??
    r.line('model');
  if (choice.kind === 'engine-not-as-written')
    diagnostics.push(notRunDiagnostic(file, runtimeLine, `runtime ${runtime}`, choice.notRun));
  return { engine: choice.engine, runtimeLine };
}

/** model, container, model_revision and the parallel shape the defaults give. */
function readModel({ r, top }: RecipeRead, defaults: Record<string, unknown>) {
  const model =
    r.string(top, ['model']) ?? r.fail(['model'], 'model is missing at the top level', 'add model: org/name');
  const image =
    r.string(top, ['container']) ??
    r.fail(
      ['container'],
      'container is missing: spark has no default image per runtime',
      'add container: repo/image:tag',
    );
  const revision =
    top.model_revision === undefined || top.model_revision === null ? undefined : renderValue(top.model_revision);
  const tp = r.count(defaults, ['defaults', 'tensor_parallel']);
  const pp = r.count(defaults, ['defaults', 'pipeline_parallel']) ?? 1;
  return { model, image, revision, tp, pp };
}

/**
 * Placeholder values: every default as text, then what the recipe's own top-level keys answer
 * (a default of the same name wins, as in sparkrun).
 */
/** Nodes: tp × pp; a tp the template writes as a flag counts when defaults has none. */
function nodeCount({ file, r, top, diagnostics }: RecipeRead, args: LinedArg[], tp: number | undefined, pp: number) {
  const written = parseArgs(args.map((a) => a.text));
  const argTp = TP_FLAGS.map((f) => written.number(f)).find((n) => n !== undefined);
  const minNodes = r.count(top, ['min_nodes']);
  const maxNodes = r.count(top, ['max_nodes']);
  const shapeTp = tp ?? argTp;
  const nodes = shapeTp !== undefined ? shapeTp * pp : (minNodes ?? pp);
  if ((minNodes !== undefined && nodes < minNodes) || (maxNodes !== undefined && nodes > maxNodes)) {
    diagnostics.push(
      diagnostic(
        file,
        r.line(minNodes !== undefined && nodes < minNodes ? 'min_nodes' : 'max_nodes'),
        'sparkrun-not-run',
        'error',
        'min_nodes',
        `the recipe runs on tensor_parallel × pipeline_parallel = ${nodes} node(s), outside min_nodes ${minNodes ?? 1} … max_nodes ${maxNodes ?? '∞'}`,
        'make defaults.tensor_parallel × pipeline_parallel fall inside min_nodes and max_nodes',
      ),
    );
  }
  return nodes;
}

/** env: interpolated with what spark resolves. */
function readEnv(
  { r }: RecipeRead,
  envTable: Record<string, unknown>,
  ctx: Parameters<typeof interpolate>[0],
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, raw] of Object.entries(envTable)) {
    if (raw !== null && typeof raw === 'object')
      r.fail(['env', key], `env.${key} must be a string or number, got ${typeName(raw)}`, `write it as ${key}: "…"`);
    const keyProblem = envKeyProblem(key); // the one rule of src/recipes/env-key.ts
    if (keyProblem)
      r.fail(['env', key], `env key ${keyProblem}`, 'use letters, digits and _ (not starting with a digit)');
    env[key] = interpolate(ctx, key, raw, r.line('env', key));
  }
  return env;
}

/** The runtime cache mounted where env names {launch.runtime_cache_dir}, or an error when runtime_cache is off. */
function runtimeCacheMount(
  { file, r, top, diagnostics }: RecipeRead,
  envTable: Record<string, unknown>,
  mounts: Mount[],
) {
  const cacheTable = top.runtime_cache;
  if (!usesRuntimeCache(Object.values(envTable).map((v) => renderValue(v)))) return;
  const off = cacheTable === false || (isTable(cacheTable) && cacheTable.enabled === false);
  if (off) {
    diagnostics.push(
      diagnostic(
        file,
        r.line('runtime_cache'),
        'sparkrun-defaults',
        'error',
        'runtime_cache',
        'env names {launch.runtime_cache_dir}, but runtime_cache turns the cache off, so nothing is mounted there',
        'turn runtime_cache on, or stop naming it in env',
      ),
    );
    return;
  }
  const dir = isTable(cacheTable) && typeof cacheTable.dir === 'string' ? cacheTable.dir : RUNTIME_CACHE_HOST_DEFAULT;
  mounts.push({
    host: dir,
    container: RUNTIME_CACHE_CONTAINER_PATH,
    readOnly: false,
    ...(r.line('runtime_cache') !== undefined ? { line: r.line('runtime_cache')! } : {}),
  });
}

/** A finding per top-level key spark does not run, and per key it does not know. */
function topKeyFindings({ file, r, top, diagnostics }: RecipeRead): void {
  for (const key of Object.keys(top)) {
    if (key === 'mods') continue;
    const n = NOT_RUN[key];
    if (n) diagnostics.push(notRunDiagnostic(file, r.line(key), key, n));
    else if (
      !(READ_KEYS as readonly string[]).includes(key) &&
      !(INFORMATIONAL_KEYS as readonly string[]).includes(key)
    ) {
      diagnostics.push(
        diagnostic(
          file,
          r.line(key),
          'unknown-key',
          'warn',
          key,
          `unknown key ${key} in the sparkrun recipe (ignored; sparkrun would sweep it into its runtime config)`,
          `remove it or correct the spelling; spark reads ${READ_KEYS.join(', ')}`,
        ),
      );
    }
  }
}

/** A finding per executor_config key spark does not run (unless it asks for what spark does anyway) or know. */
function executorKeyFindings(
  { file, r, diagnostics }: RecipeRead,
  executor: Record<string, unknown>,
  shmSize: string | undefined,
): void {
  for (const key of Object.keys(executor)) {
    const n = NOT_RUN_EXECUTOR[key];
    if (n) {
      if (!asSparkRuns(key, executor[key], shmSize))
        diagnostics.push(notRunDiagnostic(file, r.line('executor_config', key), `executor_config.${key}`, n));
    } else if (!(EXECUTOR_KEYS as readonly string[]).includes(key)) {
      diagnostics.push(
        diagnostic(
          file,
          r.line('executor_config', key),
          'unknown-key',
          'warn',
          `executor_config.${key}`,
          `unknown key executor_config.${key} (ignored)`,
          `spark reads ${EXECUTOR_KEYS.join(', ')}`,
        ),
      );
    }
  }
}

/** tensor_parallel, port, the vLLM backend, shm_size and the name, where the recipe gives them. */
function setOptionalFields(
  at: RecipeRead,
  recipe: Recipe,
  o: { tp: number | undefined; defaults: Record<string, unknown>; engine: Engine; shmSize: string | undefined },
): void {
  const r: Reader = at.r; // typed here, so that r.fail() (never) narrows what follows
  if (o.tp !== undefined) recipe.tensorParallelSize = o.tp;
  const port = o.defaults.port;
  if (port !== undefined) {
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
      r.fail(
        ['defaults', 'port'],
        `defaults.port must be a port number, got ${JSON.stringify(port)}`,
        'write it as port: 30000',
      );
    }
    recipe.port = port;
  }
  const backend = o.defaults.distributed_executor_backend;
  if (o.engine === 'vllm' && typeof backend === 'string') recipe.distributedBackend = backend;
  if (o.shmSize !== undefined) recipe.shmSize = o.shmSize;
  const name =
    isTable(at.top.metadata) && typeof at.top.metadata.description === 'string'
      ? at.top.metadata.description
      : undefined;
  if (name !== undefined) recipe.name = name;
}

/**
 * Whether an executor_config setting spark does not read asks for what spark's container gets
 * anyway (recipes/container.ts): `privileged: false`, or an `ipc` that matches the /dev/shm the
 * recipe's shm_size gives (`host` without shm_size). Those are no step spark leaves out.
 */
function asSparkRuns(key: string, value: unknown, shmSize: string | undefined): boolean {
  if (key === 'privileged') return value === PRIVILEGED;
  if (key === 'ipc') return (value === 'host') === (shmOf({ shmSize }).kind === 'host');
  return false;
}

/** Positions in the shape the locator reads: each field's YAML line under its TOML key. */
function positions(
  r: Reader,
  args: LinedArg[],
  programLine: number | undefined,
  mounts: Mount[],
  tpWritten: boolean,
): TomlPosition {
  const at = (line: number | undefined): TomlPosition | undefined =>
    line === undefined ? undefined : { line, keys: new Map(), items: [] };
  const root: TomlPosition = { line: 0, keys: new Map(), items: [] };
  const set = (key: string, p: TomlPosition | undefined) => {
    if (p) root.keys.set(key, p);
  };
  set('engine', at(r.line('runtime')));
  set('docker_image', at(r.line('container')));
  set('model', at(r.line('model')));
  set('port', at(r.line('defaults', 'port')));
  set('required_nodes', at(r.line('defaults', 'tensor_parallel') ?? r.line('min_nodes')));
  if (tpWritten) set('tensor_parallel_size', at(r.line('defaults', 'tensor_parallel')));
  set('pipeline_parallel_size', at(r.line('defaults', 'pipeline_parallel')));
  set('distributed_backend', at(r.line('defaults', 'distributed_executor_backend')));
  set('shm_size', at(r.line('executor_config', 'shm_size')));
  set('entrypoint', at(programLine));
  const argsAt = at(r.line('command') ?? r.line('defaults')) ?? { line: 0, keys: new Map(), items: [] };
  argsAt.items = args.map((a) => ({ line: a.line ?? argsAt.line, keys: new Map(), items: [] }));
  root.keys.set('args', argsAt);
  const envAt = at(r.line('env'));
  if (envAt) {
    for (const key of Object.keys(r.map(r.top, ['env']))) {
      const line = r.line('env', key);
      if (line !== undefined) envAt.keys.set(key, { line, keys: new Map(), items: [] });
    }
    root.keys.set('env', envAt);
  }
  const mountsAt = at(r.line('executor_config', 'volumes') ?? r.line('runtime_cache'));
  if (mountsAt) {
    mountsAt.items = mounts.map((m) => ({ line: m.line ?? mountsAt.line, keys: new Map(), items: [] }));
    root.keys.set('extra_mounts', mountsAt);
  }
  return root;
}
