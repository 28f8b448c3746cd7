// `spark-pack.json`, the manifest of a packed directory (docs/packed-format.md, format
// versions 2 and 1): types, the file-name rule, where a row lives in a data file, and a strict
// reader. `spark pack` writes version 2 with these types; the row store, `spark verify` and
// `engram-ranges` read both here.
//
// Version 2: a dense data file IS the Mia stack's packed shard (stacks/mia/mia-shard.ts: its name
// and binary header); a page data file is named spark-page-l{L}-r{R}of{W}.rows, a name the
// Mia reader never opens, with the JSON header block. Version 1 (earlier spark): both layouts
// under the shard names with the JSON header block, on which the Mia reader aborts.
//
// Layout rules this reader enforces (the contract leaves stride's meaning in page layout open):
//   dense: row i (global id start + i) at dataOffset + i * stride, stride = rowBytes.
//   page:  floor(4096 / stride) rows per 4096-byte page, row i at
//          dataOffset + floor(i / perPage) * 4096 + (i mod perPage) * stride, stride = rowBytes.
import { existsSync } from 'node:fs';
import { readSmallText } from '../../files/small-file.js';
import { join } from 'node:path';
import { SparkError } from '../../errors/errors.js';
import type { PackLayout } from '../../domain/pack-layout.js';
import type { SplitRule } from '../../domain/split-rule.js';
import {
  arr,
  bad,
  int,
  manifestObject,
  MAX_MANIFEST_BYTES,
  obj,
  rankWorldSplit,
  sourceFiles,
  str,
  type RecordedSourceFile,
} from '../../engram/manifest-fields.js';
import { miaShardName } from '../mia/mia-shard.js';

/** The manifest of layouts dense and page (local-dir.ts tells it from a sparse copy's). */
export const PACK_MANIFEST_NAME = 'spark-pack.json';
/** The name version 1 packs were first written under (still read). */
export const MANIFEST_NAME = 'engram-local.json';
export const MANIFEST_FORMAT = 'spark-engram-packed';
/** The version spark writes. */
export const MANIFEST_VERSION = 2;
/** The versions spark reads. */
export type ManifestVersion = 1 | 2;
export const PACK_HEADER_BYTES = 4096;
export const PAGE_BYTES = 4096;

export interface PackChecksum {
  algorithm: string;
  /** Rows per checksummed chunk; values[k] covers local rows [k * chunkRows, (k + 1) * chunkRows). */
  chunkRows: number;
  values: string[];
}

export interface PackedLayer {
  layer: number;
  /** The whole table's row count N (all ranks). */
  rows: number;
  /** This rank's global ids [start, end). */
  start: number;
  end: number;
  /** Data file name, relative to the pack directory (packedFileName). */
  file: string;
  rowBytes: number;
  stride: number;
  dataOffset: number;
  weightDtype: string;
  scaleDtype: string;
  layout: PackLayout;
  checksum: PackChecksum;
}

export type PackedSourceFile = RecordedSourceFile;

export interface PackedManifest {
  format: typeof MANIFEST_FORMAT;
  version: ManifestVersion;
  rank: number;
  world: number;
  split: SplitRule;
  source: { snapshot: string; revision?: string; files: PackedSourceFile[] };
  layers: PackedLayer[];
}

/**
 * A layer's data file name: the Mia stack's shard name for dense (and for every layout of
 * version 1), a name the Mia reader never opens for page.
 */
export function packedFileName(
  layer: number,
  rank: number,
  world: number,
  layout: PackLayout,
  version: ManifestVersion = MANIFEST_VERSION,
): string {
  if (layout === 'dense' || version === 1) return miaShardName(layer, rank, world);
  return `spark-page-l${layer}-r${rank}of${world}.rows`;
}

/** Weight bytes per row (D) of a row of rowBytes = D + D/32. */
export function dimOfRowBytes(rowBytes: number): number {
  return (rowBytes / 33) * 32;
}

/** Rows per 4096-byte page in page layout. */
export function rowsPerPage(entry: Pick<PackedLayer, 'stride'>): number {
  return Math.floor(PAGE_BYTES / entry.stride);
}

/** Where a layer's rows sit in its data file. */
export type RowPlacement = Pick<PackedLayer, 'layout' | 'start' | 'dataOffset' | 'stride'>;

/** Byte offset of global id `id` in the layer's data file. */
export function packedRowOffset(entry: RowPlacement, id: number): number {
  const i = id - entry.start;
  if (entry.layout === 'dense') return entry.dataOffset + i * entry.stride;
  const per = rowsPerPage(entry);
  return entry.dataOffset + Math.floor(i / per) * PAGE_BYTES + (i % per) * entry.stride;
}

/** The size a complete data file has: header block plus rows (page layout: whole pages). */
export function packedFileBytes(entry: RowPlacement & Pick<PackedLayer, 'end'>): number {
  const n = entry.end - entry.start;
  if (entry.layout === 'dense') return entry.dataOffset + n * entry.stride;
  return entry.dataOffset + Math.ceil(n / rowsPerPage(entry)) * PAGE_BYTES;
}

/** A directory is a pack (or a sparse copy) when it holds a manifest (written last). */
export function isPackedDir(dir: string): boolean {
  return existsSync(join(dir, PACK_MANIFEST_NAME)) || existsSync(join(dir, MANIFEST_NAME));
}

export async function readPackedManifest(dir: string): Promise<PackedManifest> {
  const path = join(dir, existsSync(join(dir, PACK_MANIFEST_NAME)) ? PACK_MANIFEST_NAME : MANIFEST_NAME);
  let text: string;
  try {
    text = await readSmallText(path, { what: 'manifest', maxBytes: MAX_MANIFEST_BYTES });
  } catch (err) {
    if (err instanceof SparkError) throw err; // a FIFO, a directory: already one line naming it
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw new SparkError(
        'E_FILE_NOT_FOUND',
        `${dir} is not a packed directory: no ${MANIFEST_NAME} (run spark pack)`,
        { path },
      );
    }
    throw new SparkError('E_IO', `cannot read ${path}: ${(err as Error).message}`, { path });
  }
  return parsePackedManifest(text, path);
}

/** Parses and checks every field; the first problem is one E_PACK_MANIFEST error naming the key. */
export function parsePackedManifest(text: string, path = MANIFEST_NAME): PackedManifest {
  const m = manifestObject(path, text);
  if (m.format !== MANIFEST_FORMAT) throw bad(path, 'format', `must be "${MANIFEST_FORMAT}"`);
  const version = m.version;
  if (version !== 1 && version !== 2) {
    throw bad(
      path,
      'version',
      `is ${JSON.stringify(version)}; this spark reads versions 1 and 2 (upgrade spark or re-pack)`,
    );
  }
  const { rank, world, split } = rankWorldSplit(path, '', m);
  const src = obj(path, 'source', m.source);
  const snapshot = str(path, 'source.snapshot', src.snapshot);
  const revision = src.revision === undefined ? undefined : str(path, 'source.revision', src.revision);
  const files = sourceFiles(path, 'source.files', src.files);
  const layers = arr(path, 'layers', m.layers).map((l, i) => parseLayer(path, `layers[${i}]`, l, version));
  if (layers.length === 0) throw bad(path, 'layers', 'is empty: a pack holds at least one layer');
  for (let i = 1; i < layers.length; i++) {
    if (layers[i].layer <= layers[i - 1].layer)
      throw bad(path, `layers[${i}].layer`, 'layers must be ascending and unique');
  }
  const out: PackedManifest = {
    format: MANIFEST_FORMAT,
    version,
    rank,
    world,
    split,
    source: { snapshot, files },
    layers,
  };
  if (revision !== undefined) out.source.revision = revision;
  return out;
}

function parseLayer(path: string, key: string, value: unknown, version: ManifestVersion): PackedLayer {
  const o = obj(path, key, value);
  const layer = int(path, `${key}.layer`, o.layer, 0);
  const rows = int(path, `${key}.rows`, o.rows, 1);
  const start = int(path, `${key}.start`, o.start, 0);
  const end = int(path, `${key}.end`, o.end, 0);
  if (start > end || end > rows)
    throw bad(path, `${key}`, `range [${start}, ${end}) is not inside the table [0, ${rows})`);
  const file = str(path, `${key}.file`, o.file);
  const suffix = version === 1 || o.layout === 'dense' ? '.bin' : '.rows';
  if (file.includes('/') || file.includes('\\') || file.startsWith('.') || !file.endsWith(suffix)) {
    throw bad(path, `${key}.file`, `'${file}' must be a plain ${suffix} file name inside the pack directory`);
  }
  const rowBytes = int(path, `${key}.rowBytes`, o.rowBytes, 33);
  if (rowBytes % 33 !== 0) throw bad(path, `${key}.rowBytes`, `${rowBytes} is not D + D/32 for a multiple-of-32 D`);
  const stride = int(path, `${key}.stride`, o.stride, 1);
  if (stride !== rowBytes) throw bad(path, `${key}.stride`, `must equal rowBytes (${rowBytes})`);
  const dataOffset = int(path, `${key}.dataOffset`, o.dataOffset, 0);
  if (dataOffset !== PACK_HEADER_BYTES) throw bad(path, `${key}.dataOffset`, `must be ${PACK_HEADER_BYTES}`);
  const layout = o.layout;
  if (layout !== 'dense' && layout !== 'page') throw bad(path, `${key}.layout`, 'must be dense or page');
  if (layout === 'page' && rowBytes > PAGE_BYTES)
    throw bad(path, `${key}.rowBytes`, 'is larger than a page: use the dense layout');
  const weightDtype = str(path, `${key}.weightDtype`, o.weightDtype);
  if (weightDtype !== 'F8_E4M3') throw bad(path, `${key}.weightDtype`, 'must be F8_E4M3');
  const scaleDtype = str(path, `${key}.scaleDtype`, o.scaleDtype);
  if (scaleDtype !== 'F8_E8M0') throw bad(path, `${key}.scaleDtype`, 'must be F8_E8M0');
  const c = obj(path, `${key}.checksum`, o.checksum);
  const algorithm = str(path, `${key}.checksum.algorithm`, c.algorithm);
  const chunkRows = int(path, `${key}.checksum.chunkRows`, c.chunkRows, 1);
  const values = arr(path, `${key}.checksum.values`, c.values).map((v, i) =>
    str(path, `${key}.checksum.values[${i}]`, v),
  );
  const chunks = Math.ceil((end - start) / chunkRows);
  if (values.length !== chunks) {
    throw bad(
      path,
      `${key}.checksum.values`,
      `has ${values.length} entries; ${end - start} rows in chunks of ${chunkRows} need ${chunks}`,
    );
  }
  return {
    layer,
    rows,
    start,
    end,
    file,
    rowBytes,
    stride,
    dataOffset,
    weightDtype,
    scaleDtype,
    layout,
    checksum: { algorithm, chunkRows, values },
  };
}
