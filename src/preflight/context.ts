// Loads the files named on the command line into one PreflightContext. Parsing errors are
// thrown (exit 2); everything a rule reads later (config.json, snapshot headers) is loaded
// lazily and once, so a run that needs no snapshot reads none.
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { readModelConfig, type ModelConfig } from '../engram/config.js';
import { toSparkError, type SparkError } from '../errors.js';
import type { Io } from '../io.js';
import {
  containerToHost,
  effectiveEnv,
  modelFamily,
  parseArgs,
  readCluster,
  readEnvFile,
  readRecipe,
  type FileDiagnostic,
  type HostPath,
} from '../recipes/index.js';
import { identifyNode, type NodeHints } from './node.js';
import { hfSnapshotDir, isSnapshotPath, type SnapshotFacts, type SnapshotSource } from './sources.js';
import { openSnapshotFacts } from './snapshot-reader.js';
import { hasCopyManifest } from './local-copy.js';
import type { PreflightContext } from './types.js';

export interface PreflightOptions {
  recipe: string;
  cluster?: string;
  env?: string;
  snapshot?: string;
  /** This node's rank (--node-rank, else NODE_RANK). */
  nodeRank?: number;
  nodeRankFrom?: '--node-rank' | 'NODE_RANK';
  /** sysfs root, default /sys. */
  sysfs?: string;
  /** Host directory of this node's pack (default: SPARK_ENGRAM_DIR through its extra_mount). */
  packDir?: string;
  /** Run only these rules (ids or `family.` prefixes). */
  only?: string[];
  /** Skip these rules (ids or `family.` prefixes). */
  skip?: string[];
  /** For tests: how this host is named and addressed. */
  hostname?: string;
  addresses?: string[];
  home?: string;
}

export async function buildContext(options: PreflightOptions, io: Io): Promise<PreflightContext> {
  const { recipe, diagnostics: recipeDiagnostics } = await readRecipe(options.recipe);
  const loadedCluster = options.cluster === undefined ? undefined : await readCluster(options.cluster);
  const cluster = loadedCluster?.cluster;
  const envFile = options.env === undefined ? undefined : await readEnvFile(options.env, io.env);
  const hints: NodeHints = {};
  if (options.nodeRank !== undefined) hints.rank = options.nodeRank;
  if (options.nodeRankFrom !== undefined) hints.rankFrom = options.nodeRankFrom;
  if (options.hostname !== undefined) hints.hostname = options.hostname;
  if (options.addresses !== undefined) hints.addresses = options.addresses;
  const node = identifyNode(cluster, hints);
  const home = options.home ?? io.env.HOME ?? homedir();
  const env = effectiveEnv(recipe, cluster, envFile);
  const clusterDiagnostics: FileDiagnostic[] = [...(loadedCluster?.diagnostics ?? []), ...(envFile?.diagnostics ?? [])];

  const toHost = (containerPath: string): HostPath | undefined => containerToHost(containerPath, recipe, cluster, home, io.cwd);

  let source: SnapshotSource | undefined | null = null;
  const snapshotSource = (): SnapshotSource | undefined => {
    if (source !== null) return source;
    source = undefined;
    if (options.snapshot !== undefined) {
      source = { dir: resolve(io.cwd, options.snapshot), how: '--snapshot' };
    } else {
      const engramDir = env.get('SPARK_ENGRAM_DIR')?.value;
      const mapped = engramDir ? toHost(engramDir) : undefined;
      if (mapped && isSnapshotPath(mapped.host) && !hasCopyManifest(mapped.host)) {
        source = { dir: mapped.host, how: 'SPARK_ENGRAM_DIR' };
      } else if (cluster?.hfCache !== undefined) {
        const dir = hfSnapshotDir(resolve(io.cwd, cluster.hfCache), recipe.model);
        if (dir) source = { dir, how: 'hf_cache' };
      }
    }
    return source;
  };

  let config: Promise<ModelConfig | undefined> | undefined;
  let snapshot: Promise<{ facts: SnapshotFacts } | { error: SparkError } | undefined> | undefined;

  return {
    recipe,
    recipeDiagnostics,
    cluster,
    clusterDiagnostics,
    envFile,
    env,
    args: parseArgs(recipe.args),
    family: modelFamily(recipe),
    world: recipe.requiredNodes,
    node,
    packDir: options.packDir === undefined ? undefined : resolve(io.cwd, options.packDir),
    sysfs: options.sysfs ?? '/sys',
    home,
    cwd: io.cwd,
    toHost,
    snapshotSource,
    modelConfig() {
      config ??= (async () => {
        const src = snapshotSource();
        return src ? readModelConfig(src.dir) : undefined;
      })();
      return config;
    },
    snapshot() {
      snapshot ??= (async () => {
        const src = snapshotSource();
        if (!src) return undefined;
        try {
          return { facts: await openSnapshotFacts(src.dir) };
        } catch (err) {
          return { error: toSparkError(err) };
        }
      })();
      return snapshot;
    },
  };
}
