// Recipes, env files and cluster files as typed, validated objects. `spark preflight` checks
// them; `spark launch` turns them into container commands. Formats: docs/recipes.md.
export { parseRecipe, RECIPE_KEYS, MOUNT_KEYS, ENGINES } from './recipe.js';
export { readRecipe, parseAnyRecipe } from './load.js';
export type { RecipeReadOptions } from './load.js';
export { fileFormat } from './format.js';
export { clusterSpec, openCluster } from './open-cluster.js';
export type { ClusterOpenOptions } from './open-cluster.js';
export type { Recipe, RecipeField, LoadedRecipe, Mount, Engine } from './recipe.js';
export {
  parseCluster,
  readCluster,
  nodeAddress,
  addressed,
  hasFabricAddresses,
  isAddressed,
  CLUSTER_KEYS,
  NODE_KEYS,
  DEFAULT_DIST_PORT,
  HF_CACHE_CONTAINER_PATH,
} from './cluster.js';
export { parallelShape, placement, servingPort, TP_FLAGS, PP_FLAGS } from './topology.js';
export type { ParallelShape, Placement, ShapeProblem, TopologyProblem } from './topology.js';
export type { AddressedNode, Cluster, ClusterNode, LoadedCluster } from './cluster.js';
export { parseEnvFile, readEnvFile, expand } from './env-file.js';
export type { EnvFile, EnvEntry } from './env-file.js';
export { parseArgs, argvForExec, unquote, BOOLEAN_FLAGS } from './args.js';
export type { ParsedArgs, ArgFlag } from './args.js';
export { effectiveEnv, envValues } from './environment.js';
export type { EffectiveEnv, EnvValue, EnvSourceKind } from './environment.js';
export { containerToHost, containerMounts, expandHome, hostPath, relativeHostProblem } from './paths.js';
export type { HostPath } from './paths.js';
export { engineFamilyOf, modelFamily, configFamily, ENGINE_FLAGS, defaultPort } from './model-family.js';
export type { EngineFamily, ModelFamily, EngineFlags } from './model-family.js';
export { parseDockerSize } from './units.js';
export { at } from './fields.js';
export type { FileDiagnostic } from './fields.js';
export {
  containerSettings,
  containerFlags,
  settingsFlags,
  programFlags,
  missingSourceOutcome,
  shmOf,
  CONTAINER_FLAGS,
  GPU_FLAGS,
  RDMA_FLAGS,
  PRIVILEGED,
} from './container.js';
export type { Bind, ContainerSettings, Shm } from './container.js';
