// A recipe file: one serving stack (engine, image, model, parallelism, container command,
// mounts, environment) in TOML, as the users write them (see recipes/ and docs/recipes.md).
import { FieldReader, type FileDiagnostic } from './fields.js';
import { parseTomlDocument, readTextFile, type TomlDocument } from './toml-file.js';
import { failIfSwallowed, findSwallowedKeys, swallowedDiagnostic, withoutSwallowed } from './swallowed.js';

export type Engine = 'sglang' | 'vllm';
export const ENGINES: readonly Engine[] = ['sglang', 'vllm'];

/** One bind mount into the container. */
export interface Mount {
  /** Host path as written (may start with `~`). */
  host: string;
  /** Absolute path inside the container. */
  container: string;
  readOnly: boolean;
  /** Line of the `[[extra_mounts]]` header. */
  line?: number;
}

export interface Recipe {
  /** The file as the user named it. */
  file: string;
  engine: Engine;
  /** Display name. */
  name?: string;
  dockerImage: string;
  /** Hugging Face model id, e.g. `deepseek-ai/DeepSeek-V4.1-Flash`. */
  model: string;
  parentModel?: string;
  /** Serving port (the launcher appends `--port`). */
  port?: number;
  /** Nodes the stack needs: one rank per node. Default 1. */
  requiredNodes: number;
  tensorParallelSize?: number;
  /** Default 1. */
  pipelineParallelSize: number;
  distributedBackend?: string;
  /** Docker `--shm-size` value as written, e.g. `32gb` (see parseDockerSize). */
  shmSize?: string;
  dockerImageDir?: string;
  /** Container command; undefined means the image's own entrypoint. */
  entrypoint?: string[];
  /** Engine arguments, verbatim (see parseArgs for the flag view). */
  args: string[];
  extraMounts: Mount[];
  /** The recipe's [env], verbatim. */
  env: Record<string, string>;
  /** Where each key was written (for file:line in messages). */
  document: TomlDocument;
}

export interface LoadedRecipe {
  recipe: Recipe;
  /** Unknown keys (warn) and keys a table header swallowed (error). */
  diagnostics: FileDiagnostic[];
}

/** Top-level keys, in the order the docs list them. */
export const RECIPE_KEYS = [
  'engine',
  'name',
  'docker_image',
  'model',
  'parent_model',
  'port',
  'required_nodes',
  'tensor_parallel_size',
  'pipeline_parallel_size',
  'distributed_backend',
  'shm_size',
  'docker_image_dir',
  'entrypoint',
  'args',
  'extra_mounts',
  'env',
] as const;

export const MOUNT_KEYS = ['host', 'container', 'read_only'] as const;

export async function readRecipe(path: string): Promise<LoadedRecipe> {
  return parseRecipe(await readTextFile(path, 'recipe'), path);
}

/** Parses and validates recipe TOML. Throws SparkError E_RECIPE (exit 2) on wrong types. */
export function parseRecipe(source: string, file: string): LoadedRecipe {
  const document = parseTomlDocument(source, file, 'E_RECIPE');
  const swallowed = findSwallowedKeys(document, { topLevel: RECIPE_KEYS, tables: { extra_mounts: MOUNT_KEYS } });
  const table = withoutSwallowed(document.table, swallowed);
  const diagnostics: FileDiagnostic[] = swallowed.map((loc) => swallowedDiagnostic(file, loc));
  const top = new FieldReader(file, table, '', document.locations, 'E_RECIPE');

  const required = (key: string, example: string): string => {
    failIfSwallowed(top, key, swallowed);
    return top.requiredString(key, example);
  };

  const engine = required('engine', 'engine = "sglang" or "vllm"');
  if (!(ENGINES as readonly string[]).includes(engine)) {
    top.fail('engine', `engine must be "sglang" or "vllm", got "${engine}"`);
  }
  const extraMounts = top.tableArray('extra_mounts').map((m): Mount => {
    diagnostics.push(...m.unknownKeys(MOUNT_KEYS, '[[extra_mounts]] table'));
    const container = m.requiredString('container', 'container = "/path/in/container"');
    if (!container.startsWith('/')) m.fail('container', `${m.path('container')} must be an absolute path, got "${container}"`);
    const mount: Mount = {
      host: m.requiredString('host', 'host = "/path/on/host"'),
      container,
      readOnly: m.boolean('read_only') ?? false,
    };
    if (m.headerLine !== undefined) mount.line = m.headerLine;
    return mount;
  });

  const recipe: Recipe = {
    file,
    engine: engine as Engine,
    dockerImage: required('docker_image', 'docker_image = "repo/image:tag"'),
    model: required('model', 'model = "org/name"'),
    requiredNodes: top.integer('required_nodes', 1, 64) ?? 1,
    pipelineParallelSize: top.integer('pipeline_parallel_size', 1, 64) ?? 1,
    args: top.stringArray('args') ?? [],
    extraMounts,
    env: top.stringMap('env') ?? {},
    document,
  };
  const optional = {
    name: top.string('name'),
    parentModel: top.string('parent_model'),
    port: top.integer('port', 1, 65535),
    tensorParallelSize: top.integer('tensor_parallel_size', 1, 64),
    distributedBackend: top.string('distributed_backend'),
    shmSize: top.string('shm_size'),
    dockerImageDir: top.string('docker_image_dir'),
    entrypoint: top.stringArray('entrypoint'),
  };
  for (const [k, v] of Object.entries(optional)) {
    if (v !== undefined) (recipe as unknown as Record<string, unknown>)[k] = v;
  }
  diagnostics.push(...top.unknownKeys(RECIPE_KEYS, 'recipe'));
  return { recipe, diagnostics };
}

/** The line a recipe key was written on (`args`, `env.X`, `extra_mounts[0].host`). */
export function recipeLine(recipe: Recipe, path: string): number | undefined {
  return recipe.document.locations.get(path)?.line;
}

/** The line of args[index], when the scanner saw it. */
export function argLine(recipe: Recipe, index: number): number | undefined {
  const loc = recipe.document.locations.get('args');
  return loc?.elementLines?.[index] ?? loc?.line;
}
