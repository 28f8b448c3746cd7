// The host paths node rules look at, named in one place: the request a node answers is built
// from these (preflight/facts/request.ts), and the rules read the answers by the same names.
import { join } from 'node:path';
import { hfModelDir } from '../engram/hf-cache.js';
import {
  HF_CACHE_CONTAINER_PATH,
  type EnvValue,
  type HostPath,
  containerSettings,
  type Bind,
  type ContainerSettings,
} from '../recipes/index.js';
import type { SnapshotCandidate } from './node-facts.js';
import type { PreflightContext } from './types.js';

export const INDEX_NAME = 'model.safetensors.index.json';
export const SINGLE_NAME = 'model.safetensors';

/** SPARK_ENGRAM_DIR and where it is on the node (undefined host: under no mount). */
export function engramDirOnNode(ctx: PreflightContext): { value: EnvValue; mapped?: HostPath } | undefined {
  const value = ctx.env.get('SPARK_ENGRAM_DIR');
  if (!value) return undefined;
  const mapped = ctx.toHost(value.value);
  return mapped ? { value, mapped } : { value };
}

/** The paths that tell what a directory is: itself, an index, a single model file, a copy's manifests. */
export function dirProbes(ctx: PreflightContext, dir: string): string[] {
  return [dir, join(dir, INDEX_NAME), join(dir, SINGLE_NAME), ...ctx.copyManifests.map((m) => join(dir, m))];
}

/** Whether the node's directory holds a node-local copy (the paths of dirProbes must have been requested). */
export function hasCopy(ctx: PreflightContext, dir: string): boolean {
  return ctx.copyManifests.some((m) => ctx.view!.path(join(dir, m)).kind === 'file');
}

/**
 * What a directory is on the node: a node-local copy (a sparse copy holds an index too), a
 * snapshot, missing, or neither (the paths of dirProbes must have been requested).
 */
export function dirKind(ctx: PreflightContext, dir: string): 'missing' | 'snapshot' | 'copy' | 'other' {
  const view = ctx.view!;
  if (dir.endsWith('.safetensors')) return view.path(dir).kind === 'file' ? 'snapshot' : 'missing';
  if (view.path(dir).kind === 'missing') return 'missing';
  if (hasCopy(ctx, dir)) return 'copy';
  if (view.path(join(dir, INDEX_NAME)).kind === 'file' || view.path(join(dir, SINGLE_NAME)).kind === 'file')
    return 'snapshot';
  return 'other';
}

/** Where this node's pack lives: --pack-dir, else SPARK_ENGRAM_DIR's host path through an extra_mount. */
export function packTarget(ctx: PreflightContext): { host: string; from: string; given: boolean } | undefined {
  if (ctx.packDir !== undefined) return { host: ctx.packDir, from: '--pack-dir', given: true };
  const e = engramDirOnNode(ctx);
  if (!e?.mapped || e.mapped.via.kind !== 'extra_mount') return undefined;
  return {
    host: e.mapped.host,
    from: `${e.value.file}${e.value.line !== undefined ? `:${e.value.line}` : ''}`,
    given: false,
  };
}

/**
 * The container the launch starts on this node, as settings (recipes/container.ts): the launch
 * plan's `docker run` flags are written from the same settings, so the container rules judge
 * what the launch does (its /dev/shm, its mounts and whether each must exist, its program).
 */
export function plannedContainer(ctx: PreflightContext): ContainerSettings {
  const c = ctx.cluster;
  return containerSettings(ctx.recipe, {
    hf: c?.hfCache !== undefined ? { hfCache: c.hfCache, file: c.file } : undefined,
    home: ctx.home,
  });
}

/** The container's binds whose host path the node can have (a relative one the launch refuses). */
export function nodeBinds(ctx: PreflightContext): (Bind & { source: string })[] {
  return plannedContainer(ctx).binds.filter((b): b is Bind & { source: string } => b.source !== undefined);
}

/** The script an entrypoint runs (`sh /x.sh`, `bash -c …` excluded, or `/x.sh` itself). */
export function wrapperScript(entrypoint: readonly string[] | undefined): string | undefined {
  if (!entrypoint || entrypoint.length === 0) return undefined;
  const [cmd, arg] = entrypoint;
  if (/(^|\/)(sh|bash|dash)$/.test(cmd!) && arg !== undefined && !arg.startsWith('-')) return arg;
  if (/\.sh$/.test(cmd!)) return cmd;
  return undefined;
}

/** The entrypoint's script on the node, when a mount brings it in. */
export function wrapperOnNode(ctx: PreflightContext): { script: string; host?: string } | undefined {
  const script = wrapperScript(plannedContainer(ctx).program);
  if (!script) return undefined;
  const mapped = ctx.toHost(script);
  return mapped ? { script, host: mapped.host } : { script };
}

/** The cluster's hf_cache on the node, when the container mounts one. */
export function hfCacheHost(ctx: PreflightContext): string | undefined {
  return nodeBinds(ctx).find((b) => b.from.kind === 'hf_cache')?.source;
}

/**
 * Where the node's snapshot may be, in the order preflight looks (see findSnapshotSource):
 * --snapshot, else the snapshot a launch serves, else SPARK_ENGRAM_DIR, else the cache's.
 */
export function snapshotCandidates(
  ctx: PreflightContext,
  given: { snapshot?: string; served?: string },
): SnapshotCandidate[] {
  if (given.snapshot !== undefined) return [{ dir: given.snapshot }];
  if (given.served !== undefined) return [{ dir: given.served }];
  const out: SnapshotCandidate[] = [];
  const e = engramDirOnNode(ctx);
  // A node-local copy there is some of the rows, not the model: the node skips it.
  if (e?.mapped) out.push({ dir: e.mapped.host, notCopy: true });
  const hf = hfCacheHost(ctx);
  if (hf !== undefined) out.push({ hfCache: hf, model: ctx.recipe.model, modelDir: hfModelDir(hf, ctx.recipe.model) });
  return out;
}

/** True when a path is under the Hugging Face cache mount (mapped only through a cluster's hf_cache). */
export function underHfCache(containerPath: string): boolean {
  return containerPath === HF_CACHE_CONTAINER_PATH || containerPath.startsWith(HF_CACHE_CONTAINER_PATH + '/');
}
