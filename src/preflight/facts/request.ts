// The request one node answers: every path, text, free-space figure, port and image the node
// rules will read for that node (named by preflight-api/node-paths.ts, which the rules use too).
import {
  dirProbes,
  engramDirOnNode,
  nodeBinds,
  packTarget,
  snapshotCandidates,
  wrapperOnNode,
} from '../../preflight-api/node-paths.js';
import { headPorts } from '../rules/ports.js';
import { engineLibMounts } from '../rules/engine-lib.js';
import type { PreflightContext } from '../../preflight-api/types.js';
import { FACTS_VERSION, type FactsRequest } from '../../preflight-api/node-facts.js';

export interface RequestOptions {
  /** --snapshot: the snapshot directory as the node sees it. */
  snapshot?: string;
  /** The snapshot a launch serves (its host path on the nodes). */
  served?: string;
  /** Ask for the image id, driver and CUDA versions (cluster mode: they are compared across nodes). */
  versions: boolean;
  docker: string;
}

export function buildRequest(ctx: PreflightContext, options: RequestOptions): FactsRequest {
  const paths = new Set<string>();
  const texts = new Set<string>();
  const free = new Set<string>();
  for (const b of nodeBinds(ctx)) paths.add(b.source);
  const engram = engramDirOnNode(ctx);
  if (engram?.mapped) for (const p of dirProbes(ctx, engram.mapped.host)) paths.add(p);
  const pack = packTarget(ctx);
  if (pack) {
    for (const p of dirProbes(ctx, pack.host)) paths.add(p);
    free.add(pack.host);
  }
  const wrapper = wrapperOnNode(ctx);
  if (wrapper?.host !== undefined) {
    paths.add(wrapper.host);
    texts.add(wrapper.host);
  }
  // One reader directory a node: the first stack whose variable the recipe sets.
  const readerDir = ctx.stacks.map((s) => s.readerDir?.(ctx)).find((r) => r !== undefined);
  const libs = engineLibMounts(ctx).map((l) => l.host);
  return {
    version: FACTS_VERSION,
    paths: [...paths],
    texts: [...texts],
    free: [...free],
    ports: headPorts(ctx).map((p) => p.port),
    images: options.versions ? [ctx.recipe.dockerImage] : [],
    docker: options.docker,
    sysfs: ctx.sysfs,
    procNet: '/proc/net',
    snapshot: snapshotCandidates(ctx, options),
    ...(pack ? { copyDir: pack.host } : {}),
    ...(readerDir ? { readerDir } : {}),
    ...(libs.length > 0 ? { engineLibs: [...new Set(libs)] } : {}),
  };
}
