// spark-pack.json's packs: one data file per layer, one read per row. Layout dense is the Mia
// stack's packed shard byte for byte (what it attaches from DSV41_PACKED_DIR); layout page is
// spark's own (no row crosses a 4 KiB page), for spark's row store and the Python reader.
import type { LocalCopy } from '../../engram/copy-ranges.js';
import { dirFormat, type Room } from '../room.js';
import type { PackedManifest } from './packed-manifest.js';

function packedCopy(manifestPath: string, m: PackedManifest): LocalCopy {
  const layers = m.layers
    .map(({ layer, rows, start, end }) => ({ layer, rows, start, end }))
    .sort((a, b) => a.layer - b.layer);
  const copy: LocalCopy = {
    kind: 'packed',
    manifestPath,
    identity: { rank: m.rank, world: m.world, split: m.split, from: 'manifest' },
    layers,
  };
  if (m.source.revision !== undefined) copy.revision = m.source.revision;
  return copy;
}

const onePerRow = {
  kind: 'packed',
  copiesIndex: false,
  planner: async () => (await import('./pack-packed.js')).planDense,
} as const;

export const packedRoom: Room = {
  name: 'packed',
  formats: [
    dirFormat({
      kind: 'packed',
      noun: 'pack',
      namesMaker: false,
      copy: async (_path, local) => packedCopy(local.manifestPath, local.manifest),
      openRows: async (path, local, options) =>
        (await import('../row-source.js')).openPacked(path, local.manifest, options),
      verify: async (req, dir, local) =>
        (await import('./verify-packed.js')).verifyPackedDir(req, dir, local.manifest, local.manifestPath),
      namedFiles: (local) => local.manifest.layers.map((l) => l.file),
    }),
  ],
  layouts: [
    { name: 'dense', summary: "the Mia stack's packed shards", ...onePerRow, stack: 'mia', pageAligned: false },
    { name: 'page', summary: "spark's own row store", ...onePerRow, pageAligned: true },
  ],
  stacks: [],
};
