// Container paths back to host paths: a recipe names files as the container sees them
// (SPARK_ENGRAM_DIR=/root/.cache/huggingface/hub/...), preflight checks them on the host.
import { homedir } from 'node:os';
import { isAbsolute, posix, resolve } from 'node:path';
import type { Cluster } from './cluster.js';
import { HF_CACHE_CONTAINER_PATH } from './cluster.js';
import type { Mount, Recipe } from './recipe.js';

/** `~` and `~/x` → the home directory (docker -v paths are expanded by the launching shell). */
export function expandHome(path: string, home: string = homedir()): string {
  if (path === '~') return home;
  if (path.startsWith('~/')) return posix.join(home, path.slice(2));
  return path;
}

/**
 * Why a host path written in a recipe or cluster file cannot be used on a node, or undefined:
 * a relative path names a different place on every node (and to the launcher, nowhere), so
 * launch refuses it and preflight reports it the same way.
 */
export function relativeHostProblem(path: string): string | undefined {
  if (posix.isAbsolute(expandHome(path, '/home'))) return undefined;
  return `"${path}" is relative, which a node cannot resolve; write an absolute path or one starting with ~/`;
}

export interface HostPath {
  /** Absolute host path. */
  host: string;
  /** The mount that maps it: one of the recipe's extra_mounts, or the cluster's hf_cache. */
  via: { kind: 'extra_mount'; mount: Mount } | { kind: 'hf_cache'; hfCache: string };
}

/** Every mount the launcher sets up: the recipe's extra_mounts plus the cluster's hf_cache. */
export function containerMounts(recipe: Recipe, cluster?: Cluster): HostPath['via'][] {
  const vias: HostPath['via'][] = recipe.extraMounts.map((mount) => ({ kind: 'extra_mount' as const, mount }));
  if (cluster?.hfCache !== undefined) vias.push({ kind: 'hf_cache', hfCache: cluster.hfCache });
  return vias;
}

/**
 * The host path behind a container path, through the longest matching mount; undefined when
 * no mount covers it (the path lives inside the image). `base` resolves relative host paths.
 */
export function containerToHost(
  containerPath: string,
  recipe: Recipe,
  cluster: Cluster | undefined,
  home: string = homedir(),
  base: string = process.cwd(),
): HostPath | undefined {
  const target = posix.normalize(containerPath);
  let best: { len: number; hp: HostPath } | undefined;
  for (const via of containerMounts(recipe, cluster)) {
    const inContainer = posix.normalize(via.kind === 'hf_cache' ? HF_CACHE_CONTAINER_PATH : via.mount.container);
    const hostRoot = via.kind === 'hf_cache' ? via.hfCache : via.mount.host;
    const rel = relativeInside(inContainer, target);
    if (rel === undefined) continue;
    if (best && best.len >= inContainer.length) continue;
    const root = expandHome(hostRoot, home);
    const host = rel === '' ? resolve(base, root) : resolve(base, root, rel);
    best = { len: inContainer.length, hp: { host, via } };
  }
  return best?.hp;
}

/** The part of `path` below `root` ('' for root itself), or undefined when outside it. */
function relativeInside(root: string, path: string): string | undefined {
  if (path === root) return '';
  const prefix = root.endsWith('/') ? root : root + '/';
  return path.startsWith(prefix) ? path.slice(prefix.length) : undefined;
}

/** A host path as docker -v would use it: `~` expanded, relative paths against `base`. */
export function hostPath(path: string, home: string = homedir(), base: string = process.cwd()): string {
  const p = expandHome(path, home);
  return isAbsolute(p) ? p : resolve(base, p);
}
