// The Engram rows a node's rules expect of each layer: the snapshot's own headers when the node
// could open it, else what config.json promises.
import { engramSubTableSizes } from '../engram/primes.js';
import type { ModelConfig } from '../engram/config.js';
import type { PreflightContext } from './types.js';

/** Rows per Engram layer the config promises: engram_num_embeddings, else the prime rule. */
export function expectedEngramRows(config: ModelConfig): Map<number, number> | undefined {
  const e = config.engram;
  if (!e) return undefined;
  if (e.numEmbeddings) return new Map(e.layerIds.map((l, i) => [l, e.numEmbeddings![i]!]));
  const sizes = engramSubTableSizes(e);
  return new Map([...sizes].map(([l, s]) => [l, s.reduce((a, b) => a + b, 0)]));
}

/** Row counts per layer of the snapshot the engine loads on this node: its headers, else config.json. */
export async function snapshotRows(ctx: PreflightContext): Promise<Map<number, number> | undefined> {
  const s = ctx.view!.snapshot();
  if (s && 'facts' in s) return new Map(s.facts.engram.map((t) => [t.layer, t.rows]));
  const config = await ctx.modelConfig().catch(() => undefined);
  return config ? expectedEngramRows(config) : undefined;
}
