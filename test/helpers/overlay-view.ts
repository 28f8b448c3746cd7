// The serving overlay's view of SPARK_ENGRAM_DIR, written for tests from docs/serving-stacks.md's
// description of it ("The consumer") and nothing else, so spark's output is checked against
// what the overlay is documented to do, not against spark's own reader:
//
//   - the directory must hold model.safetensors.index.json, and each Engram layer's weight
//     AND scale must be mapped to one shard;
//   - a directory with engram-local.json is a sparse copy: its `layers` must be an object of
//     "L": [lo, hi] (half-open global rows) and its ranges win over the environment; extra
//     keys are ignored;
//   - otherwise SPARK_ENGRAM_ROWS gives the ranges: `L:lo:hi` entries, comma-separated, colons
//     only (anything else raises "expected LAYER:LO:HI entries"); without it, whole tables;
//   - row `id` of layer L is at 8 + header_len + data_offsets[0] + id * D (weight) and
//     8 + header_len + data_offsets[0] + id * D/32 (scale) of that shard, D = 256 on the real
//     model; ids the rank does not own come back as zeros.
import { closeSync, existsSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';

export type Ranges = Map<number, [number, number]>;

/** SPARK_ENGRAM_ROWS as the overlay parses it. */
export function parseEngramRows(value: string): Ranges {
  const out: Ranges = new Map();
  for (const entry of value.split(',')) {
    const m = /^(\d+):(\d+):(\d+)$/.exec(entry.trim());
    if (!m) throw new Error(`SPARK_ENGRAM_ROWS=${value}: expected LAYER:LO:HI entries`);
    const [layer, lo, hi] = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (lo > hi || out.has(layer)) throw new Error(`SPARK_ENGRAM_ROWS=${value}: bad entry ${entry}`);
    out.set(layer, [lo, hi]);
  }
  return out;
}

/** The start-up check across ranks: per layer, the ranges tile [0, N) exactly. */
export function checkTiling(perRank: Ranges[], rows: Map<number, number>): void {
  for (const [layer, n] of rows) {
    const spans = perRank.map((r, rank) => {
      const s = r.get(layer);
      if (!s) throw new Error(`rank ${rank} has no range for layer ${layer}`);
      return s;
    });
    spans.sort((a, b) => a[0] - b[0]);
    let at = 0;
    for (const [lo, hi] of spans) {
      if (lo !== at) throw new Error(`layer ${layer}: ${lo > at ? 'gap' : 'overlap'} at row ${at}`);
      at = hi;
    }
    if (at !== n) throw new Error(`layer ${layer}: ranges end at ${at}, the table has ${n} rows`);
  }
}

interface Column {
  shard: string;
  /** Absolute offset of row 0: 8 + header_len + data_offsets[0]. */
  base: number;
  width: number;
}

export interface OverlayTable {
  layer: number;
  rows: number;
  dim: number;
  lo: number;
  hi: number;
  weight: Column;
  scale: Column;
}

export interface OverlayView {
  /** Where the ranges came from. */
  rangesFrom: 'engram-local.json' | 'SPARK_ENGRAM_ROWS' | 'whole tables';
  tables: Map<number, OverlayTable>;
  /** Row `id` of `layer` as the overlay returns it: weight ‖ scale, zeros when not owned. */
  row(layer: number, id: number): Buffer;
  /** Rows [a, b) (all owned) read as two runs with the same arithmetic: weights, then scales. */
  run(layer: number, a: number, b: number): { weight: Buffer; scale: Buffer };
  close(): void;
}

function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8')) as unknown;
}

export function openOverlayView(dir: string, env: { SPARK_ENGRAM_ROWS?: string } = {}): OverlayView {
  const indexPath = join(dir, 'model.safetensors.index.json');
  if (!existsSync(indexPath)) throw new Error(`${dir}: no model.safetensors.index.json`);
  const weightMap = (readJson(indexPath) as { weight_map: Record<string, string> }).weight_map;
  let ranges: Ranges | undefined;
  let rangesFrom: OverlayView['rangesFrom'] = 'whole tables';
  const manifestPath = join(dir, 'engram-local.json');
  if (existsSync(manifestPath)) {
    const layers = (readJson(manifestPath) as { layers?: unknown }).layers;
    if (typeof layers !== 'object' || layers === null || Array.isArray(layers)) {
      throw new Error(`${manifestPath}: layers must be an object of "L": [lo, hi]`);
    }
    ranges = new Map();
    for (const [k, v] of Object.entries(layers)) {
      if (!Array.isArray(v) || v.length !== 2) throw new Error(`${manifestPath}: layers.${k} must be [lo, hi]`);
      ranges.set(Number(k), [Number(v[0]), Number(v[1])]);
    }
    rangesFrom = 'engram-local.json';
  } else if (env.SPARK_ENGRAM_ROWS !== undefined) {
    ranges = parseEngramRows(env.SPARK_ENGRAM_ROWS);
    rangesFrom = 'SPARK_ENGRAM_ROWS';
  }
  const layerIds = new Set<number>();
  for (const name of Object.keys(weightMap)) {
    const m = /^(?:model\.)?layers\.(\d+)\.engram\.embed\.weight$/.exec(name);
    if (m) layerIds.add(Number(m[1]));
  }
  const fds = new Map<string, number>();
  const headers = new Map<
    string,
    { len: number; json: Record<string, { shape: number[]; data_offsets: [number, number] }> }
  >();
  const shardHeader = (shard: string) => {
    let h = headers.get(shard);
    if (!h) {
      const fd = openSync(join(dir, shard), 'r');
      fds.set(shard, fd);
      const len8 = Buffer.alloc(8);
      readSync(fd, len8, 0, 8, 0);
      const len = Number(len8.readBigUInt64LE(0));
      const text = Buffer.alloc(len);
      readSync(fd, text, 0, len, 8);
      h = { len, json: JSON.parse(text.toString('utf8')) as never };
      headers.set(shard, h);
    }
    return h;
  };
  const tables = new Map<number, OverlayTable>();
  for (const layer of [...layerIds].sort((a, b) => a - b)) {
    const find = (suffix: string): string => {
      for (const name of [`layers.${layer}.engram.embed.${suffix}`, `model.layers.${layer}.engram.embed.${suffix}`]) {
        if (weightMap[name] !== undefined) return name;
      }
      throw new Error(`layer ${layer}: no ${suffix} in the index`);
    };
    const [w, s] = [find('weight'), find('scale')];
    if (weightMap[w] !== weightMap[s]) throw new Error(`layer ${layer}: weight and scale must be in one shard`);
    const shard = weightMap[w];
    const h = shardHeader(shard);
    const [rows, dim] = h.json[w].shape;
    const col = (name: string, width: number): Column => ({
      shard,
      base: 8 + h.len + h.json[name].data_offsets[0],
      width,
    });
    const [lo, hi] = ranges?.get(layer) ?? [0, rows];
    if (ranges && !ranges.has(layer)) continue;
    tables.set(layer, { layer, rows, dim, lo, hi, weight: col(w, dim), scale: col(s, dim / 32) });
  }
  const pread = (c: Column, id: number, count: number): Buffer => {
    const b = Buffer.alloc(count * c.width);
    let got = 0;
    while (got < b.length) {
      const n = readSync(fds.get(c.shard)!, b, got, b.length - got, c.base + id * c.width + got);
      if (n === 0) throw new Error(`${c.shard}: ends before row ${id}`);
      got += n;
    }
    return b;
  };
  const table = (layer: number): OverlayTable => {
    const t = tables.get(layer);
    if (!t) throw new Error(`layer ${layer} is not served from ${dir}`);
    return t;
  };
  return {
    rangesFrom,
    tables,
    row(layer, id) {
      const t = table(layer);
      if (id < t.lo || id >= t.hi) return Buffer.alloc(t.dim + t.dim / 32);
      return Buffer.concat([pread(t.weight, id, 1), pread(t.scale, id, 1)]);
    },
    run(layer, a, b) {
      const t = table(layer);
      if (a < t.lo || b > t.hi || a > b) throw new Error(`rows [${a}, ${b}) are not all owned ([${t.lo}, ${t.hi}))`);
      return { weight: pread(t.weight, a, b - a), scale: pread(t.scale, a, b - a) };
    },
    close() {
      for (const fd of fds.values()) closeSync(fd);
      fds.clear();
    },
  };
}
