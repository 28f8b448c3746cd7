// `spark synth`: a small (or full-size sparse) snapshot shaped like DeepSeek-V4.1-Flash, with
// the real tensor names, dtypes and shard placement, prime-rule row counts, header padding so
// the data is not 4 KiB aligned, and row bytes from synth-rows.ts that any reader can check.
import { ftruncateSync, mkdirSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { usageError } from '../errors/errors.js';
import { writeNewFile, writeNewFileWith } from '../files/new-file.js';
import type { EngramConfig } from '../engram/config.js';
import { engramSubTableSizes, prefixOffsets } from '../engram/primes.js';
import { fillRows, tableBytes } from './synth-rows.js';
import { writeRange } from './aligned-write.js';

export interface SynthOptions {
  dir: string;
  layers: number[];
  vocab: number;
  heads: number;
  maxNgram: number;
  dim: number;
  shards: number;
  seed: number;
  /** Full-size files with data only in probe windows (see probeWindows); the rest reads as zeros. */
  sparse: boolean;
}

export const SYNTH_DEFAULTS: Omit<SynthOptions, 'dir'> = {
  layers: [1, 14],
  vocab: 1000,
  heads: 8,
  maxNgram: 4,
  dim: 256,
  shards: 3,
  seed: 0,
  sparse: false,
};

export interface SynthResult {
  dir: string;
  files: { name: string; bytes: number }[];
  layers: { layer: number; rows: number; dim: number }[];
  bytes: number;
  seconds: number;
}

interface TensorSpec {
  name: string;
  dtype: string;
  shape: number[];
  bytes: number;
  /** Writes the tensor's data at file position `at`, telling `written` the bytes as they go. */
  write(fd: number, at: number, written: (bytes: number) => void): void;
}

/** Data starts at 664 bytes past a 4 KiB boundary in every shard, like the real checkpoint. */
const DATA_START_PHASE = 664;
const CHUNK_ROWS = 32768;
/** Rows written on each side of every probe point in sparse mode. */
const PROBE_HALF_WIDTH = 64;

export function synthEngramConfig(o: Omit<SynthOptions, 'dir'>): EngramConfig {
  return { layerIds: o.layers, maxNgram: o.maxNgram, heads: o.heads, headDim: o.dim, vocabSize: o.vocab };
}

/**
 * Row windows written in sparse mode: both ends of the table, every floor-split rank boundary
 * for 2, 3 and 4 ranks, and every (order, head) sub-table start, +-64 rows around each.
 */
export function probeWindows(rows: number, subTableSizes: number[]): [number, number][] {
  const points = new Set<number>([0, rows]);
  for (const w of [2, 3, 4]) for (let r = 1; r < w; r++) points.add(Math.floor((rows * r) / w));
  for (const off of prefixOffsets(subTableSizes)) points.add(off);
  const windows = [...points]
    .sort((a, b) => a - b)
    .map((p): [number, number] => [Math.max(0, p - PROBE_HALF_WIDTH), Math.min(rows, p + PROBE_HALF_WIDTH)]);
  const merged: [number, number][] = [];
  for (const w of windows) {
    const last = merged[merged.length - 1];
    if (last && w[0] <= last[1]) last[1] = Math.max(last[1], w[1]);
    else merged.push([...w]);
  }
  return merged.filter(([a, b]) => b > a);
}

function engramTensors(
  o: Omit<SynthOptions, 'dir'>,
  layer: number,
  rows: number,
  windows: [number, number][],
): TensorSpec[] {
  const dim = o.dim;
  const scaleCols = dim / 32;
  const weightBytes = rows * dim;
  const prefix = `layers.${layer}.engram`;
  // Weight and scale are written together chunk by chunk, so the scale tensor's writer is a no-op.
  const embedWeight: TensorSpec = {
    name: `${prefix}.embed.weight`,
    dtype: 'F8_E4M3',
    shape: [rows, dim],
    bytes: weightBytes,
    write(fd, at, written) {
      // A whole table (GBs) is written at disk speed, its aligned interior with O_DIRECT.
      if (!o.sparse) {
        // Writer threads build the same producer and fill their slots in parallel.
        const args = [layer, rows, dim, at, o.seed];
        const fill = { module: new URL('./synth-rows.js', import.meta.url).href, name: 'tableBytes', args };
        writeRange(fd, at, weightBytes + rows * scaleCols, tableBytes(layer, rows, dim, at, o.seed), {
          fill,
          onWritten: written,
        });
        return;
      }
      const weight = Buffer.allocUnsafeSlow(CHUNK_ROWS * dim);
      const scale = Buffer.allocUnsafeSlow(CHUNK_ROWS * scaleCols);
      for (const [lo, hi] of windows) {
        for (let start = lo; start < hi; start += CHUNK_ROWS) {
          const count = Math.min(CHUNK_ROWS, hi - start);
          fillRows(layer, start, count, dim, weight, scale, o.seed);
          writeAll(fd, weight.subarray(0, count * dim), at + start * dim);
          writeAll(fd, scale.subarray(0, count * scaleCols), at + weightBytes + start * scaleCols);
        }
      }
      written(weightBytes + rows * scaleCols); // the holes count as written: the table is whole
    },
  };
  const embedScale: TensorSpec = {
    name: `${prefix}.embed.scale`,
    dtype: 'F8_E8M0',
    shape: [rows, scaleCols],
    bytes: rows * scaleCols,
    write() {},
  };
  const small = (name: string, dtype: string, shape: number[], width: number): TensorSpec => {
    const bytes = shape.reduce((a, b) => a * b, 1) * width;
    return {
      name: `${prefix}.${name}`,
      dtype,
      shape,
      bytes,
      write: (fd, at, written) => written(writeAll(fd, patterned(bytes, name.length), at)),
    };
  };
  return [
    embedWeight,
    embedScale,
    small('wkv.weight', 'F8_E4M3', [64, dim], 1),
    small('wkv.scale', 'F8_E8M0', [64, scaleCols], 1),
    small('q_weight', 'BF16', [o.heads, 32], 2),
    small('k_weight', 'BF16', [o.heads, 32], 2),
  ];
}

/** Stand-ins for the rest of the model: enough tensors per shard that headers have a real size. */
function fillerTensors(shard: number): TensorSpec[] {
  const out: TensorSpec[] = [];
  for (let e = 0; e < 32; e++) {
    for (const part of ['w1', 'w2', 'w3']) {
      const base = `layers.${shard + 2}.ffn.experts.${e}.${part}`;
      out.push({
        name: `${base}.weight`,
        dtype: 'F8_E4M3',
        shape: [32, 64],
        bytes: 2048,
        write: (fd, at, written) => written(writeAll(fd, patterned(2048, e), at)),
      });
      out.push({
        name: `${base}.scale`,
        dtype: 'F8_E8M0',
        shape: [32, 2],
        bytes: 64,
        write: (fd, at, written) => written(writeAll(fd, patterned(64, e), at)),
      });
    }
  }
  return out;
}

function patterned(bytes: number, salt: number): Buffer {
  const b = Buffer.allocUnsafe(bytes);
  for (let i = 0; i < bytes; i++) b[i] = (i * 7 + salt * 13) & 0x7e;
  return b;
}

/** Writes all of `buf` at `position`; returns its length. */
function writeAll(fd: number, buf: Buffer, position: number): number {
  let done = 0;
  while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, position + done);
  return done;
}

/** Writes one .safetensors file atomically (new-file.ts: renamed into place when complete). */
function writeShard(
  path: string,
  tensors: TensorSpec[],
  metadata: Record<string, string>,
  sparse: boolean,
  written: (bytes: number) => void,
): number {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.bytes] };
    offset += t.bytes;
  }
  const json = JSON.stringify(header);
  let dataStart = 8 + Buffer.byteLength(json);
  dataStart += (DATA_START_PHASE - (dataStart % 4096) + 4096) % 4096;
  const headerBytes = Buffer.alloc(dataStart, 0x20);
  headerBytes.writeBigUInt64LE(BigInt(dataStart - 8), 0);
  headerBytes.write(json, 8, 'utf8');
  writeNewFileWith(path, 0o644, (fd) => {
    writeAll(fd, headerBytes, 0);
    if (sparse) ftruncateSync(fd, dataStart + offset);
    let at = dataStart;
    for (const t of tensors) {
      t.write(fd, at, written);
      at += t.bytes;
    }
    ftruncateSync(fd, dataStart + offset);
  });
  return dataStart + offset;
}

export function validateSynthOptions(o: SynthOptions): void {
  if (o.dim <= 0 || o.dim % 32 !== 0) throw usageError(`--dim must be a positive multiple of 32, got ${o.dim}`);
  if (o.layers.length === 0) throw usageError('--layers needs at least one layer id');
  if (new Set(o.layers).size !== o.layers.length)
    throw usageError(`--layers has a repeated layer: ${o.layers.join(',')}`);
  if (o.maxNgram < 2) throw usageError(`--max-ngram must be at least 2, got ${o.maxNgram}`);
  if (o.heads < 1) throw usageError(`--heads must be at least 1, got ${o.heads}`);
  if (o.shards < o.layers.length) {
    throw usageError(
      `--shards must be at least the number of layers (${o.layers.length}): each layer's table has a shard of its own`,
    );
  }
  if (o.shards === 1 && o.layers.length !== 1) throw usageError('--shards 1 holds a single layer');
}

/** Bytes of tensor data written so far, of the whole, for a progress line. */
export type SynthProgress = (p: { bytesDone: number; bytesTotal: number; seconds: number }) => void;

export function synthesize(o: SynthOptions, onProgress?: SynthProgress): SynthResult {
  validateSynthOptions(o);
  const began = performance.now();
  const layers = [...o.layers].sort((a, b) => a - b);
  const subTables = engramSubTableSizes(synthEngramConfig({ ...o, layers }));
  mkdirSync(o.dir, { recursive: true });

  const pad = (n: number) => String(n).padStart(5, '0');
  const names =
    o.shards === 1
      ? ['model.safetensors']
      : Array.from({ length: o.shards }, (_, i) => `model-${pad(i + 1)}-of-${pad(o.shards)}.safetensors`);
  const metadata = { format: 'pt', spark_synth_seed: String(o.seed) };
  const files: SynthResult['files'] = [];
  const weightMap: Record<string, string> = {};
  let totalTensorBytes = 0;
  const layerRows: SynthResult['layers'] = [];
  // Like the real checkpoint: the Engram layers occupy the last shards, one layer each.
  const firstEngramShard = o.shards - layers.length;
  // Every shard's tensors first, so progress knows the whole.
  const shards = names.map((name, i) => {
    if (i < firstEngramShard) return { name, tensors: fillerTensors(i) };
    const layer = layers[i - firstEngramShard];
    const sizes = subTables.get(layer) ?? [];
    const rows = sizes.reduce((a, b) => a + b, 0);
    const windows = o.sparse ? probeWindows(rows, sizes) : ([[0, rows]] as [number, number][]);
    layerRows.push({ layer, rows, dim: o.dim });
    return { name, tensors: engramTensors(o, layer, rows, windows) };
  });
  const bytesTotal = shards.reduce((a, s) => a + s.tensors.reduce((b, t) => b + t.bytes, 0), 0);
  let bytesDone = 0;
  const written = (n: number): void => {
    bytesDone += n;
    onProgress?.({ bytesDone, bytesTotal, seconds: (performance.now() - began) / 1000 });
  };
  for (const { name, tensors } of shards) {
    const bytes = writeShard(join(o.dir, name), tensors, metadata, o.sparse, written);
    files.push({ name, bytes });
    for (const t of tensors) {
      weightMap[t.name] = name;
      totalTensorBytes += t.bytes;
    }
  }

  const config = {
    architectures: ['DeepseekV4ForCausalLM'],
    model_type: 'deepseek_v4',
    spark_synth: { seed: o.seed, sparse: o.sparse },
    text_config: {
      hidden_size: 5120,
      num_attention_heads: 64,
      vocab_size: 129280,
      max_position_embeddings: 1048576,
      engram_layer_ids: layers,
      engram_num_embeddings: layerRows.map((l) => l.rows),
      engram_max_ngram_size: o.maxNgram,
      engram_n_heads: o.heads,
      engram_head_dim: o.dim,
      engram_vocab_size: o.vocab,
    },
  };
  writeJsonAtomic(join(o.dir, 'config.json'), config);
  if (o.shards > 1) {
    writeJsonAtomic(join(o.dir, 'model.safetensors.index.json'), {
      metadata: { total_size: totalTensorBytes },
      weight_map: weightMap,
    });
  }
  return {
    dir: o.dir,
    files,
    layers: layerRows,
    bytes: files.reduce((a, f) => a + f.bytes, 0),
    seconds: (performance.now() - began) / 1000,
  };
}

function writeJsonAtomic(path: string, value: unknown): void {
  writeNewFile(path, JSON.stringify(value, null, 2) + '\n');
}
