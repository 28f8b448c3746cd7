// Aiden's overlay: its library (libengram_rows.so, SPARK_ENGRAM_*), the sparse copy it reads from
// SPARK_ENGRAM_DIR (the snapshot's own files with this rank's rows and holes elsewhere), how spark
// packs, reads and verifies that copy.
import { copyRanges, inferIdentity, type LocalCopy } from '../../engram/copy-ranges.js';
import { engramSubTableSizes } from '../../engram/primes.js';
import type { EngramLayerRows } from '../../engram/ranges.js';
import { openSnapshot } from '../../engram/snapshot.js';
import { dirFormat, type Room } from '../room.js';
import type { SparseManifest } from './sparse-manifest.js';

/** A copy with spark's metadata says what it is; one the overlay's tools made is read from its own headers. */
async function sparseCopy(path: string, manifestPath: string, m: SparseManifest): Promise<LocalCopy> {
  if (m.spark) {
    const rows = new Map(m.spark.tables.map((t) => [t.layer, t.rows]));
    const layers = copyRanges(manifestPath, m.layers, rows);
    const { rank, world, split } = m.spark;
    const copy: LocalCopy = {
      kind: 'sparse',
      manifestPath,
      identity: { rank, world, split, from: 'manifest' },
      layers,
    };
    if (m.spark.source.revision !== undefined) copy.revision = m.spark.source.revision;
    return copy;
  }
  const snap = await openSnapshot(path, { engramOnly: true });
  const layers = copyRanges(manifestPath, m.layers, new Map(snap.engram.map((t) => [t.layer, t.rows])));
  let tables: EngramLayerRows[] = layers.map(({ layer, rows }) => ({ layer, rows }));
  const sizes = snap.config?.engram ? engramSubTableSizes(snap.config.engram) : undefined;
  if (sizes && tables.every((t) => sizes.has(t.layer)))
    tables = tables.map((t) => ({ ...t, subTables: sizes.get(t.layer)! }));
  const inferred = inferIdentity(layers, tables);
  const base = { kind: 'sparse' as const, manifestPath, layers };
  return 'unknown' in inferred ? { ...base, unknown: inferred.unknown } : { ...base, identity: inferred };
}

export const overlayRoom: Room = {
  name: 'overlay',
  formats: [
    dirFormat({
      kind: 'sparse',
      noun: 'sparse copy',
      namesMaker: true,
      copy: (path, local) => sparseCopy(path, local.manifestPath, local.manifest),
      openRows: async (path, local, options) =>
        (await import('../row-source.js')).openTwoColumn(path, local.manifest, options),
      verify: async (req, dir, local) => {
        const { verifySparse } = await import('./verify-sparse.js');
        const { checkSourceIdentity } = await import('../../pack/verify-source.js');
        const report = await verifySparse({ ...req, dir, manifest: local.manifest });
        await checkSourceIdentity(report, local.manifest.spark?.source, req);
        report.ok = report.problems.length === 0;
        return report;
      },
      // A copy made by the overlay's own tools names no files: they are not spark's to replace.
      namedFiles: ({ manifest: { spark } }) => (spark ? [...spark.shards.map((s) => s.name), spark.index.name] : []),
    }),
  ],
  layouts: [
    {
      name: 'sparse',
      summary: "the default: Aiden's overlay reads it",
      kind: 'sparse',
      copiesIndex: true,
      planner: async () => (await import('./pack-sparse.js')).planSparse,
      stack: 'overlay',
      pageAligned: false,
    },
  ],
  stacks: [
    {
      name: 'overlay',
      title: "Aiden's overlay",
      envHint: 'SPARK_ENGRAM_*',
      libraryFile: 'libengram_rows.so',
      imagePath: '/opt/dsv41-spark/overlay/libengram_rows.so',
      abiVersion: 3,
      layout: 'sparse',
      dirEnv: 'SPARK_ENGRAM_DIR',
      reads: 'a sparse copy',
      original: { reader: 'mmap', reads: ['snapshot', 'sparse'], source: 'snapshot' },
      preflight: async () => (await import('./preflight.js')).overlayPreflight,
    },
  ],
};
