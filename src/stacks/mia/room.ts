// The Mia stack: its library (librow_store.so, DSV41_*), the packs its own packer writes (shards
// under engram-l{L}-r{R}of{W}.bin with no manifest) and how spark reads and verifies them. The
// layout `spark pack` writes for it (dense) is spark-pack.json's, in the packed room.
import type { LocalCopy } from '../../engram/copy-ranges.js';
import { dirFormat, type Room } from '../room.js';
import { miaManifest, shardSplit, type MiaShardFile } from './mia-dir.js';

/** No manifest: rank and world from the shard names, ranges and N from their headers. */
function miaCopy(path: string, shards: MiaShardFile[]): LocalCopy {
  const m = miaManifest(path, shards);
  const layers = m.layers.map(({ layer, rows, start, end }) => ({ layer, rows, start, end }));
  const split = shardSplit(shards);
  const manifestPath = `${path}/${m.layers[0]!.file}`;
  const base = { kind: 'packed' as const, manifestPath, layers, named: { rank: m.rank, world: m.world } };
  if (split === 'unknown')
    return { ...base, unknown: `its ranges are no floor or front split's share of rank ${m.rank} of ${m.world}` };
  return { ...base, identity: { rank: m.rank, world: m.world, split, from: 'shards' } };
}

/** The variable the stack's reader takes its packs' directory from. */
export const MIA_PACKED_VAR = 'DSV41_PACKED_DIR';

export const miaRoom: Room = {
  name: 'mia',
  formats: [
    dirFormat({
      kind: 'mia',
      noun: 'pack',
      namesMaker: false,
      copy: async (path, local) => miaCopy(path, local.shards),
      openRows: async (path, local, options) =>
        (await import('../row-source.js')).openPacked(path, miaManifest(path, local.shards), options),
      verify: async (req, dir, local) => (await import('./verify-mia.js')).verifyMia(req, dir, local.shards),
      // The stack's own packer writes no manifest: nothing in it is spark's.
      namedFiles: () => [],
    }),
  ],
  layouts: [],
  stacks: [
    {
      name: 'mia',
      title: 'the Mia stack',
      envHint: 'DSV41_*',
      libraryFile: 'librow_store.so',
      imagePath: '/opt/dsv41/adapter/librow_store.so',
      layout: 'dense',
      dirEnv: MIA_PACKED_VAR,
      reads: 'packed shards',
      original: { reader: 'mia-pool', reads: ['packed'], source: 'packed' },
      preflight: async () => (await import('./preflight.js')).miaPreflight,
    },
  ],
};
