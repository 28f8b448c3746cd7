// The plan of the one-read layouts, dense and page (docs/packed-format.md): one data file per
// layer (dense: the Mia stack's shard engram-l{L}-r{R}of{W}.bin; page: spark-page-l{L}-r{R}of{W}.rows)
// and the manifest spark-pack.json.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { packLayer } from '../../addon/pack.js';
import { PACK_MANIFEST_NAME } from '../local-dir.js';
import { parseMiaShardName } from '../mia/mia-shard.js';
import {
  CHECKSUM_ALGORITHM,
  checksumHex,
  defaultChunkRows,
  headerBlock,
  layerGeometry,
  manifestText,
  MANIFEST_FORMAT,
  MANIFEST_VERSION,
  PACK_HEADER_BYTES,
  packedFileName,
  type PackedLayer,
  type PackedManifest,
} from './pack-format.js';
import { fileInfo, recordedChange, sourceFileEntry, sourceKey, type SourceIdentity } from '../../pack/pack-io.js';
import {
  recordedOrigin,
  type LayoutPlan,
  type PackDifference,
  type PackRequest,
  type PackUnit,
  type PlannedRange,
} from '../pack-plan.js';

export function planDense(req: PackRequest, ranges: PlannedRange[], sources: SourceIdentity[]): LayoutPlan {
  const layout = req.layout === 'page' ? 'page' : 'dense';
  const layers = ranges.map((p) => plannedLayer(req, layout, p));
  const ctx: DenseContext = { req, layout, layers, sources };
  const bytes = layers.reduce((s, l) => s + l.geometry.fileBytes, 0);
  return {
    manifestName: PACK_MANIFEST_NAME,
    files: layers.map((l) => l.entry.file),
    layers: layers.map(({ entry, geometry: g }) => ({
      layer: entry.layer,
      file: entry.file,
      start: entry.start,
      end: entry.end,
      bytes: g.count * entry.rowBytes,
      chunks: g.chunkCount,
    })),
    bytes,
    ...(layout === 'page' && layers.length > 0 ? { pageRows: layers[0].geometry.rowsPerPage } : {}),
    needsHoles: false,
    shardHeaders: new Map(layers.filter((l) => parseMiaShardName(l.entry.file)).map((l) => [l.entry.file, l.header])),
    wholeFiles: [],
    units: denseUnits(ctx),
    difference: (existing) => denseDifference(ctx, existing),
    space: () => ({
      files: layers.map((l) => ({ file: l.entry.file, bytes: l.geometry.fileBytes })),
      extra: layers.reduce((s, l) => s + 65536 + 16 * l.geometry.chunkCount, 0), // manifest share and journal
    }),
    finish(_dir, results) {
      return this.manifestText(results.map((r) => r.checksums));
    },
    manifestText: (checksums) => denseManifest(ctx, checksums),
  };
}

/** One layer of the pack: its manifest entry, geometry and file header. */
interface PlannedLayer {
  table: PlannedRange['table'];
  entry: PackedLayer;
  geometry: ReturnType<typeof layerGeometry>;
  header: ReturnType<typeof headerBlock>;
}

/** What every part of one dense or page plan reads. */
interface DenseContext {
  req: PackRequest;
  layout: 'dense' | 'page';
  layers: PlannedLayer[];
  sources: SourceIdentity[];
}

function plannedLayer(req: PackRequest, layout: 'dense' | 'page', { range: r, table }: PlannedRange): PlannedLayer {
  const rowBytes = table.dim + table.dim / 32;
  const entry: PackedLayer = {
    layer: r.layer,
    rows: table.rows,
    start: r.start,
    end: r.end,
    file: packedFileName(r.layer, req.rank, req.world, layout),
    rowBytes,
    stride: rowBytes,
    dataOffset: PACK_HEADER_BYTES,
    weightDtype: table.weight.dtype,
    scaleDtype: table.scale.dtype,
    layout,
    checksum: {
      algorithm: CHECKSUM_ALGORITHM,
      chunkRows: req.chunkRows ?? defaultChunkRows(layout, rowBytes),
      values: [],
    },
  };
  return {
    table,
    entry,
    geometry: layerGeometry(entry),
    header: headerBlock({ version: MANIFEST_VERSION, ...req }, entry),
  };
}

/** One unit per layer: its data file, copied natively; the resume key names the sources' identities. */
function denseUnits({ layout, layers, sources }: DenseContext): PackUnit[] {
  const sourceOf = (name: string): object => sourceKey(sources.find((s) => s.name === name)!);
  return layers.map(({ table, entry, geometry: g, header }) => ({
    file: entry.file,
    label: `layer ${entry.layer}`,
    layers: [entry.layer],
    bytes: g.dataBytes,
    start: (c) => {
      const key = JSON.stringify({
        format: MANIFEST_FORMAT,
        version: MANIFEST_VERSION,
        header: createHash('sha256').update(header).digest('hex'),
        weight: { offset: table.weight.fileOffset, ...sourceOf(table.weight.fileName) },
        scale: { offset: table.scale.fileOffset, ...sourceOf(table.scale.fileName) },
      });
      return packLayer({
        ...c, // dir, threads and the tuning pack.ts chose, passed through as they are
        name: entry.file,
        key,
        weight: { path: table.weight.file, offset: table.weight.fileOffset },
        scale: { path: table.scale.file, offset: table.scale.fileOffset },
        start: entry.start,
        rows: g.count,
        dim: g.dim,
        layout,
        chunkRows: entry.checksum.chunkRows,
        header,
      });
    },
  }));
}

/** What an existing pack in the target directory is to this plan: the same, stale, or another pack. */
async function denseDifference(
  { req, layout, layers, sources }: DenseContext,
  existing: Parameters<LayoutPlan['difference']>[0],
): Promise<PackDifference> {
  const conflict = (why: string) => ({ kind: 'conflict' as const, why });
  // A pack without spark's manifest: an interrupted one of spark's is resumed (its journals
  // prove its files spark's); another tool's (the Mia stack's own) is refused without
  // --force before any work (pack-owner.ts).
  // Shards without a manifest (local-dir.ts): an interrupted pack's, or the Mia stack's own.
  if (!('manifest' in existing)) return { kind: 'stale', why: 'it holds shards without spark-pack.json' };
  if (existing.kind !== 'packed') return conflict('it is a sparse copy');
  const m = existing.manifest;
  if (m.rank !== req.rank || m.world !== req.world) return conflict(`it is rank ${m.rank} of ${m.world}`);
  if (m.split !== req.split) return conflict(`it uses the ${m.split} split`);
  if (m.layers.length !== layers.length) return conflict(`it holds ${m.layers.length} layers`);
  for (const [i, l] of layers.entries()) {
    const e = m.layers[i];
    if (e.layer !== l.entry.layer || e.start !== l.entry.start || e.end !== l.entry.end)
      return conflict(`its layer ${e.layer} range is [${e.start}, ${e.end})`);
    if (e.layout !== layout) return conflict(`it uses the ${e.layout} layout`);
    if (req.chunkRows !== undefined && e.checksum.chunkRows !== req.chunkRows)
      return conflict(`it uses ${e.checksum.chunkRows} rows per chunk`);
  }
  const before = new Map(m.source.files.map((f) => [f.name, f]));
  for (const f of sources) {
    const old = before.get(f.name);
    const why = old ? recordedChange(old, f) : 'not among the files it was packed from';
    if (why !== '') return conflict(`the snapshot file ${f.name} changed since it was packed: ${why}`);
  }
  // Same pack, earlier format (the Mia reader aborts on its files): written again.
  if (m.version !== MANIFEST_VERSION) return { kind: 'stale', why: `it is format version ${m.version}` };
  for (const l of layers) {
    const st = await fileInfo(join(existing.dir, l.entry.file));
    if (!st || st.size !== l.geometry.fileBytes)
      return { kind: 'stale', why: `its data file ${l.entry.file} is missing or cut short` };
  }
  // Version 1 as first shipped named its manifest engram-local.json, which the overlay reads
  // as a sparse copy's: written again under the new name.
  if (existing.manifestPath !== join(existing.dir, PACK_MANIFEST_NAME))
    return { kind: 'stale', why: 'its manifest has the name the overlay reserves' };
  return { kind: 'same' };
}

/** spark-pack.json with each layer's chunk checksums. */
function denseManifest({ req, layers, sources }: DenseContext, checksums: number[][]): string {
  for (const [i, c] of checksums.entries()) layers[i].entry.checksum.values = c.map(checksumHex);
  const doc: PackedManifest = {
    format: MANIFEST_FORMAT,
    version: MANIFEST_VERSION,
    ...recordedOrigin(req, sources.map(sourceFileEntry)),
    layers: layers.map((l) => l.entry),
  };
  return manifestText(doc);
}
