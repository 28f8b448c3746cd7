// Benchmark inputs made by code: a synth snapshot (real data on disk, not sparse: holes would
// read without touching the device) and packed directories in both layouts built from the
// same documented row function, so every layout holds the same bytes.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { synthesize, SYNTH_DEFAULTS } from '../../src/synth/synth.js';
import { fillRows } from '../../src/synth/synth-rows.js';
import { packedFileName } from '../../src/stacks/packed/packed-manifest.js';
import { writeNewFileWith } from '../../src/files/new-file.js';

export function makeBenchSnapshot(dir: string, vocab: number, layers = [1]): string {
  if (!existsSync(join(dir, 'model.safetensors.index.json'))) {
    synthesize({ ...SYNTH_DEFAULTS, dir, vocab, layers, shards: layers.length + 1 });
  }
  return dir;
}

/** Rank 0 of 1 (the whole table) of one layer, dense or page layout. */
export function makeBenchPack(dir: string, layer: number, rows: number, layout: 'dense' | 'page', dim = 256): string {
  if (existsSync(join(dir, 'engram-local.json'))) return dir;
  mkdirSync(dir, { recursive: true });
  const rb = dim + dim / 32;
  const perPage = Math.floor(4096 / rb);
  const file = packedFileName(layer, 0, 1, layout, 1); // format version 1: the manifest below says so
  const chunkRows = perPage * 4096; // a whole number of pages
  const entry = {
    layer,
    rows,
    start: 0,
    end: rows,
    file,
    rowBytes: rb,
    stride: rb,
    dataOffset: 4096,
    weightDtype: 'F8_E4M3',
    scaleDtype: 'F8_E8M0',
    layout,
    checksum: { algorithm: 'sha256', chunkRows, values: [] as string[] },
  };
  writeNewFileWith(join(dir, file), 0o644, (fd) => {
    let at = 4096;
    const weight = Buffer.alloc(chunkRows * dim);
    const scale = Buffer.alloc(chunkRows * (dim / 32));
    for (let start = 0; start < rows; start += chunkRows) {
      const n = Math.min(chunkRows, rows - start);
      fillRows(layer, start, n, dim, weight, scale);
      const bytes = layout === 'dense' ? n * rb : Math.ceil(n / perPage) * 4096;
      const out = Buffer.alloc(bytes);
      for (let i = 0; i < n; i++) {
        const off = layout === 'dense' ? i * rb : Math.floor(i / perPage) * 4096 + (i % perPage) * rb;
        weight.copy(out, off, i * dim, (i + 1) * dim);
        scale.copy(out, off + dim, (i * dim) / 32, ((i + 1) * dim) / 32);
      }
      entry.checksum.values.push(createHash('sha256').update(out).digest('hex'));
      writeSync(fd, out, 0, out.length, at);
      at += out.length;
    }
    const header = Buffer.alloc(4096, 0x20);
    header.write(JSON.stringify(entry).slice(0, 4096));
    writeSync(fd, header, 0, 4096, 0);
  });
  const manifest = {
    format: 'spark-engram-packed',
    version: 1,
    rank: 0,
    world: 1,
    split: 'floor',
    source: { snapshot: 'synth', files: [] },
    layers: [entry],
  };
  writeFileSync(join(dir, 'engram-local.json'), JSON.stringify(manifest, null, 2));
  return dir;
}
