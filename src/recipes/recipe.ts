// A recipe file: one serving stack (engine, image, model, parallelism, container command,
// mounts, environment) in TOML, as the users write them (see recipes/ and docs/recipes.md).
import { FieldReader, type FileDiagnostic } from './fields.js';
import { locator, type Locate } from './located.js';
import { parseTomlDocument } from './toml-file.js';
import { failIfSwallowed, findSwallowedKeys, swallowedDiagnostic, withoutSwallowed } from './swallowed.js';

export type Engine = 'sglang' | 'vllm';
export const ENGINES: readonly Engine[] = ['sglang', 'vllm'];

/** The TOML key of each field, in the order the docs list them (a sparkrun recipe's fields are
 * filed under the same keys). */
export const RECIPE_FIELDS = {
  engine: 'engine',
  name: 'name',
  dockerImage: 'docker_image',
  model: 'model',
  parentModel: 'parent_model',
  port: 'port',
  requiredNodes: 'required_nodes',
  tensorParallelSize: 'tensor_parallel_size',
  pipelineParallelSize: 'pipeline_parallel_size',
  distributedBackend: 'distributed_backend',
  shmSize: 'shm_size',
  dockerImageDir: 'docker_image_dir',
  entrypoint: 'entrypoint',
  args: 'args',
  extraMounts: 'extra_mounts',
  env: 'env',
} as const satisfies Record<Exclude<keyof Recipe, 'file' | 'locate'>, string>;

/** A field of the recipe that a key of the file writes. */
export type RecipeField = keyof typeof RECIPE_FIELDS;

/** The key that writes `field` in a recipe file. */
export function recipeKey(field: RecipeField): string {
  return RECIPE_FIELDS[field];
}

/** Top-level keys, in the order the docs list them. */
export const RECIPE_KEYS: readonly string[] = Object.values(RECIPE_FIELDS);

export const MOUNT_KEYS = ['host', 'container', 'read_only'] as const;

/** One bind mount into the container. */
export interface Mount {
  /** Host path as written (may start with `~`). */
  host: string;
  /** Absolute path inside the container. */
  container: string;
  readOnly: boolean;
  /** Line of the `[[extra_mounts]]` header (or of the inline table in `extra_mounts = [...]`). */
  line?: number;
}

export interface Recipe {
  /** The file as the user named it. */
  file: string;
  /** The line that wrote a field, an element of args or a key of env (for file:line in messages). */
  locate: Locate<Recipe, RecipeField>;
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
}

export interface LoadedRecipe {
  recipe: Recipe;
  /** Unknown keys (warn) and keys a table header swallowed (error). */
  diagnostics: FileDiagnostic[];
}

/**
 * `read_only = true` written below [env] (meant for the [[extra_mounts]] table above it) is not
 * fixed by quoting it: that makes an environment variable, and the mount stays read-write.
 */
function mountKeyFix(name: string): string | undefined {
  if (!(MOUNT_KEYS as readonly string[]).includes(name)) return undefined;
  return `${name} is a [[extra_mounts]] key: move it into its [[extra_mounts]] table, above the [env] header (quoted in [env] it would only set a variable ${name}, and the mount would not change)`;
}

/** Parses and validates recipe TOML. Throws SparkError E_RECIPE (exit 2) on wrong types. */
export function parseRecipe(source: string, file: string): LoadedRecipe {
  const document = parseTomlDocument(source, file, 'E_RECIPE');
  const swallowed = findSwallowedKeys(document.positions, {
    topLevel: RECIPE_KEYS,
    tables: { extra_mounts: MOUNT_KEYS },
  });
  const table = withoutSwallowed(document.table, swallowed);
  const diagnostics: FileDiagnostic[] = swallowed.map((loc) => swallowedDiagnostic(file, loc));
  const top = new FieldReader(file, table, '', document.positions.root, 'E_RECIPE');

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
    if (!container.startsWith('/'))
      m.fail('container', `${m.path('container')} must be an absolute path, got "${container}"`);
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
    env: top.envTable('env', mountKeyFix) ?? {},
    locate: locator<Recipe, RecipeField>(RECIPE_FIELDS, document.positions.root),
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
