// A sparkrun recipe's `mods:`, one finding each: spark runs no mods, so each is named with what
// running without it means, and a mod whose job spark does itself (packing the Mia stack's
// Engram rows) gets spark's command for that job.
import { posix } from 'node:path';
import { hfModelDir, hfSnapshotPath } from '../../engram/hf-cache.js';
import type { FileDiagnostic } from '../fields.js';
import type { Mount } from '../recipe.js';

/** What the finding for a mod can say about the recipe it is in. */
export interface ModContext {
  file: string;
  model: string;
  /** The pinned commit, when the recipe's model_revision is one (or the cache named it). */
  commit?: string;
  /** The nodes' Hugging Face cache, as the cluster gives it. */
  hfCache: string;
  nodes: number;
  /** The containers' environment, interpolated. */
  env: Record<string, string>;
  mounts: Mount[];
}

interface KnownMod {
  /** What the mod does in every container before the serve command. */
  does: string;
  /** spark's way to do the same, before the launch. */
  instead(ctx: ModContext): string;
}

/** The host directory a container path is mounted from, as the recipe writes it; undefined when no mount covers it. */
function hostDirOf(path: string, mounts: Mount[]): string | undefined {
  const target = posix.normalize(path);
  const mount = mounts
    .filter((m) => target === m.container || target.startsWith(m.container.replace(/\/?$/, '/')))
    .sort((a, b) => b.container.length - a.container.length)[0];
  return mount === undefined ? undefined : posix.join(mount.host, posix.relative(mount.container, target));
}

/** Mods whose job spark does itself. */
const KNOWN_MODS: Record<string, KnownMod> = {
  'dsv41-native-prepare': {
    does: "packs this rank's Engram rows into DSV41_PACKED_DIR in the Mia stack's dense layout (and checks the checkpoint) in every container before serving",
    instead(ctx) {
      const snapshot =
        ctx.commit !== undefined ? hfSnapshotPath(hfModelDir(ctx.hfCache, ctx.model), ctx.commit) : 'SNAPSHOT';
      const packed = ctx.env.DSV41_PACKED_DIR;
      const hostDir = packed !== undefined ? hostDirOf(packed, ctx.mounts) : undefined;
      const engramDir =
        hostDir ?? (packed !== undefined ? `the host directory mounted at ${packed}` : "the packs' host directory");
      return (
        `pack the rows on every node before the launch: spark fanout pack ${snapshot} --layout dense --env .env --cluster CLUSTER, ` +
        `with ENGRAM_DIR=${engramDir} and TP_SIZE=${ctx.nodes} in that .env (the stack reads the packs at DSV41_PACKED_DIR${packed !== undefined ? `=${packed}` : ''}); ` +
        'then remove dsv41-native-prepare from mods'
      );
    },
  },
};

const UNKNOWN_FIX =
  'bake what the mod installs into the image and prepare what it makes on the nodes (Engram rows: spark pack), point the recipe at them, and remove it from mods';

/** A mod's name: a string, or a map's `name`. */
function modName(m: unknown): string {
  if (typeof m === 'string') return m;
  if (m !== null && typeof m === 'object' && typeof (m as { name?: unknown }).name === 'string')
    return (m as { name: string }).name;
  return JSON.stringify(m);
}

/** One error finding per mod, on the mod's own line. */
export function modFindings(
  mods: unknown,
  lineOf: (index: number | undefined) => number | undefined,
  ctx: ModContext,
): FileDiagnostic[] {
  const list = Array.isArray(mods) ? mods : mods === undefined || mods === null ? [] : [mods];
  return list.map((m, i): FileDiagnostic => {
    const name = modName(m);
    const known = KNOWN_MODS[name];
    const line = lineOf(Array.isArray(mods) ? i : undefined);
    const message = known
      ? `mods: ${name} ${known.does}; spark runs no mods, so the containers start without it`
      : `mods: ${name}: sparkrun copies this mod into every container and runs its run.sh before the serve command; ` +
        'spark runs no mods, so the containers start without what it installs or prepares (a patched engine, packed Engram rows): ' +
        'a stack whose serving depends on it fails at boot or serves something else';
    return {
      kind: 'sparkrun-not-run',
      severity: 'error',
      file: ctx.file,
      ...(line !== undefined ? { line } : {}),
      key: Array.isArray(mods) ? `mods[${i}]` : 'mods',
      message,
      fix: known ? known.instead(ctx) : UNKNOWN_FIX,
    };
  });
}
