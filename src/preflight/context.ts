// Loads the files named on the command line into one PreflightContext, and derives the view of
// one node from it (that node's environment, home, sysfs and facts). Parsing errors are thrown
// (exit 2); config.json is read lazily and once, from this machine's snapshot when one resolves
// here, else from the first node that reported one.
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { parseModelConfig, readModelConfig, type ModelConfig } from '../engram/config.js';
import type { Io } from '../terminal/io.js';
import { SparkError } from '../errors/errors.js';
import {
  containerToHost,
  effectiveEnv,
  modelFamily,
  parallelShape,
  parseArgs,
  placement,
  openCluster,
  readEnvFile,
  readRecipe,
  type FileDiagnostic,
  type HostPath,
} from '../recipes/index.js';
import type { NodeView } from '../preflight-api/view.js';
import { findSnapshotSource, isSnapshotPath } from './sources.js';
import { stackPreflights } from '../stacks/registry.js';
import { COPY_MANIFESTS } from '../stacks/local-dir.js';
import type { CheckedNode, LocalNode, PreflightContext, SnapshotSource } from '../preflight-api/types.js';

export interface PreflightOptions {
  recipe: string;
  cluster?: string;
  env?: string;
  snapshot?: string;
  /** This node's rank (--node-rank, else NODE_RANK); implies local. */
  nodeRank?: number;
  nodeRankFrom?: '--node-rank' | 'NODE_RANK';
  /** Check this machine only, even with a cluster file (--local). */
  local?: boolean;
  /** spark on the nodes (--spark-bin, else SPARK_REMOTE_BIN, else spark). */
  sparkBin?: string;
  /** The most one node may take to answer (ms). */
  nodeTimeoutMs?: number;
  /** sysfs root, default /sys (on every node). */
  sysfs?: string;
  /** Host directory of this node's pack (default: SPARK_ENGRAM_DIR through its extra_mount). */
  packDir?: string;
  /** Run only these rules (ids or `family.` prefixes). */
  only?: string[];
  /** Skip these rules (ids or `family.` prefixes). */
  skip?: string[];
  /** The snapshot `spark launch` resolved and will serve (host path): checked instead of refs/main. */
  servedSnapshot?: string;
  /** For tests: how this host is named and addressed. */
  hostname?: string;
  addresses?: string[];
  home?: string;
}

/** Whether the run checks every node over ssh (a cluster file, no --local, no rank given). */
export function clusterMode(options: PreflightOptions): boolean {
  return options.cluster !== undefined && !options.local && options.nodeRank === undefined;
}

export async function buildContext(options: PreflightOptions, io: Io): Promise<PreflightContext> {
  const loadedCluster =
    options.cluster === undefined
      ? undefined
      : await openCluster(options.cluster, {
          env: io.env,
          cwd: io.cwd,
          // A local run checks this node only: a sparkrun cluster's nodes are not asked for their fabric addresses.
          askNodes: clusterMode(options),
          ...(options.sysfs !== undefined ? { sysfs: options.sysfs } : {}),
        });
  const cluster = loadedCluster?.cluster;
  const home = options.home ?? io.env.HOME ?? homedir();
  const { recipe, diagnostics: recipeDiagnostics } = await readRecipe(options.recipe, {
    env: io.env,
    home,
    ...(cluster?.hfCache !== undefined ? { hfCache: cluster.hfCache } : {}),
  });
  const envFile = options.env === undefined ? undefined : await readEnvFile(options.env, io.env);
  const env = effectiveEnv(recipe, cluster, envFile);
  const clusterDiagnostics: FileDiagnostic[] = [...(loadedCluster?.diagnostics ?? []), ...(envFile?.diagnostics ?? [])];
  const mode = clusterMode(options) ? 'cluster' : 'local';

  // In cluster mode --snapshot and the served snapshot are paths on the nodes: this machine reads
  // config.json there only when it sees the same path (a NAS mounted here too).
  const seenHere = (p: string | undefined) =>
    p !== undefined && (mode === 'local' || isSnapshotPath(resolve(io.cwd, p)));
  const source = await findSnapshotSource({
    ...(seenHere(options.snapshot) ? { snapshot: options.snapshot! } : {}),
    ...(options.servedSnapshot !== undefined ? { served: options.servedSnapshot } : {}),
    ...(cluster?.hfCache !== undefined ? { hfCache: cluster.hfCache } : {}),
    model: recipe.model,
    env,
    toHost: (containerPath) => containerToHost(containerPath, recipe, cluster, home, io.cwd),
    home,
    cwd: io.cwd,
  });
  const snapshotSource = (): SnapshotSource | undefined => source;

  let config: Promise<ModelConfig | undefined> | undefined;
  const stacks = await stackPreflights();
  const ctx: PreflightContext = {
    recipe,
    recipeDiagnostics,
    cluster,
    clusterDiagnostics,
    envFile,
    env,
    args: parseArgs(recipe.args),
    family: modelFamily(recipe),
    familyFrom: 'model id',
    world: recipe.requiredNodes,
    shape: parallelShape(recipe),
    mode,
    checked: [],
    unchecked: [],
    packDir: options.packDir === undefined ? undefined : resolve(io.cwd, options.packDir),
    sysfs: options.sysfs ?? '/sys',
    home,
    cwd: io.cwd,
    toHost: (containerPath: string): HostPath | undefined =>
      containerToHost(containerPath, recipe, cluster, home, io.cwd),
    snapshotSource,
    modelConfig() {
      config ??= (async () => {
        const src = snapshotSource();
        const local = src ? await readModelConfig(src.dir) : undefined;
        return local ?? configFromNodes(ctx.checked);
      })();
      return config;
    },
    copyManifests: COPY_MANIFESTS,
    stacks,
  };
  if (cluster) ctx.placement = placement(recipe, cluster);
  return ctx;
}

/** config.json as the nodes reported it: the head's first, then the others in rank order. */
function configFromNodes(checked: readonly CheckedNode[]): ModelConfig | undefined {
  for (const c of [...checked].sort((a, b) => (a.node.rank ?? 0) - (b.node.rank ?? 0))) {
    const snap = c.view?.facts.snapshot;
    if (snap?.config === undefined) continue;
    const path = `${c.node.host}:${snap.dir.replace(/\/[^/]+\.safetensors$/, '')}/config.json`;
    let raw: unknown;
    try {
      raw = JSON.parse(snap.config);
    } catch (err) {
      throw new SparkError('E_CONFIG', `${path}: not valid JSON (${(err as Error).message})`, { path });
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw new SparkError('E_CONFIG', `${path}: expected a JSON object`, { path });
    return parseModelConfig(raw as Record<string, unknown>, path);
  }
  return undefined;
}

/** The context of one node: its environment (with [nodes.env]), home, sysfs and facts. */
export function forNode(
  base: PreflightContext,
  node: LocalNode,
  at: { home: string; sysfs: string; view?: NodeView },
): PreflightContext {
  const { recipe, cluster } = base;
  const rank = node.rank ?? undefined;
  const env = cluster && rank !== undefined ? effectiveEnv(recipe, cluster, base.envFile, rank) : base.env;
  const ctx: PreflightContext = {
    ...base,
    env,
    node,
    home: at.home,
    sysfs: at.sysfs,
    toHost: (containerPath: string) => containerToHost(containerPath, recipe, cluster, at.home, base.cwd),
  };
  if (at.view) ctx.view = at.view;
  else delete ctx.view;
  return ctx;
}
