// What verify checks of a manifest beyond the strict reader (stacks/packed/packed-manifest.ts): each data
// file named as the format names it, each layer's range equal to what the split it claims
// gives this rank, chunk sizes the layout allows, and checksums in the format's own notation.
// Returns one line per problem (empty: sane).
import type { ModelConfig } from '../../engram/config.js';
import { CHECKSUM_ALGORITHM, packedFileName, layerGeometry } from './pack-format.js';
import { packRanges } from '../../pack/pack-ranges.js';
import type { PackedManifest } from './packed-manifest.js';

export function checkManifest(m: PackedManifest, config?: ModelConfig): string[] {
  const out: string[] = [];
  // The heads split's ranges follow from config.json: checkable only with the source.
  const split = m.split !== 'heads' || config !== undefined;
  const wanted = split ? packRanges(m.layers, config, m.rank, m.world, m.split, 'the source snapshot') : [];
  for (const [i, l] of m.layers.entries()) {
    const name = `layer ${l.layer}`;
    const file = packedFileName(l.layer, m.rank, m.world, l.layout, m.version);
    if (l.file !== file) out.push(`${name}: file '${l.file}' should be '${file}'`);
    if (l.checksum.algorithm !== CHECKSUM_ALGORITHM)
      out.push(`${name}: checksum algorithm '${l.checksum.algorithm}' is not ${CHECKSUM_ALGORITHM}`);
    const g = layerGeometry(l);
    if (l.layout === 'page' && l.checksum.chunkRows % g.rowsPerPage !== 0) {
      out.push(
        `${name}: checksum.chunkRows ${l.checksum.chunkRows} is not a multiple of the ${g.rowsPerPage} rows per page`,
      );
    }
    const bad = l.checksum.values.findIndex((v) => !/^[0-9a-f]{8}$/.test(v));
    if (bad >= 0)
      out.push(`${name}: checksum.values[${bad}] '${l.checksum.values[bad]}' is not 8 lowercase hex digits`);
    const w = wanted[i];
    if (w && (w.start !== l.start || w.end !== l.end)) {
      out.push(
        `${name}: range [${l.start}, ${l.end}) is not rank ${m.rank} of ${m.world} under the ${m.split} split ([${w.start}, ${w.end}))`,
      );
    }
  }
  return out;
}
