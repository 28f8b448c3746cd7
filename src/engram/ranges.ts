// Per-rank Engram row ranges: the SPARK_ENGRAM_ROWS grammar, the split rules applied to every
// layer of a checkpoint, and the tiling check. The serving overlay refuses to start unless the
// ranks' ranges tile [0, N) exactly per layer; a full range on every rank double-counts rows.
//
//   SPARK_ENGRAM_ROWS = entry ("," entry)*      entry = layer ":" lo ":" hi
//   decimal integers, lo <= hi, layers ascending and unique, half-open [lo, hi)
//
// That is the overlay's grammar, and the only one written. Read: also the form earlier versions
// wrote, layer ":" lo "-" hi, which the overlay rejects at install (so values are rewritten, and
// preflight flags it where it would reach the overlay).
import { SparkError, usageError } from '../errors/errors.js';
import { SPLIT_RULES, type RowRange, type SplitRule } from '../domain/split-rule.js';
import { tileHeads, tileRows } from '../addon/tiling.js';

export interface LayerRange {
  layer: number;
  start: number;
  end: number;
}

/** A range with its table's row count: the JSON shape `{layer, rows, start, end}`. */
export interface RankLayerRange extends LayerRange {
  rows: number;
}

/** What the split rules need of one Engram layer. `subTables` only for the heads split. */
export interface EngramLayerRows {
  layer: number;
  rows: number;
  /** (order, head) sub-table sizes in table order; their sum must equal `rows`. */
  subTables?: number[];
}

/** floor, front or heads; undefined is floor. `what` names the flag or variable in the error. */
export function parseSplit(text: string | undefined, what: string): SplitRule {
  const s = text ?? 'floor';
  if (!(SPLIT_RULES as readonly string[]).includes(s))
    throw usageError(`${what} must be floor, front or heads, got '${s}'`);
  return s as SplitRule;
}

/** `L:lo:hi` (the overlay's) or `L:lo-hi` (the old form, read only). */
const ENTRY = /^(\d+):(\d+)([:-])(\d+)$/;
const DASH_ENTRY = /^\d+:\d+-\d+$/;

function specError(what: string, value: string, variable: string): SparkError {
  return new SparkError(
    'E_ROWS_SPEC',
    `${variable} '${value}': ${what} (expected layer:lo:hi per layer, comma-separated, e.g. 1:0:96001542,14:0:96004170)`,
    { value },
  );
}

function decimal(text: string, what: string, value: string, variable: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw specError(`${what} ${text} is too large`, value, variable);
  return n;
}

/** Parses a SPARK_ENGRAM_ROWS value; errors (E_ROWS_SPEC, exit 2) name the entry and the rule broken. */
export function parseEngramRows(value: string, variable = 'SPARK_ENGRAM_ROWS'): LayerRange[] {
  if (value === '') throw specError('empty value', value, variable);
  const out: LayerRange[] = [];
  value.split(',').forEach((entry, i) => {
    const where = `entry ${i + 1} '${entry}'`;
    const m = ENTRY.exec(entry);
    if (!m) {
      const hint = /\s/.test(entry) ? ' (no spaces allowed)' : '';
      throw specError(`${where} is not layer:lo:hi${hint}`, value, variable);
    }
    const layer = decimal(m[1]!, 'layer', value, variable);
    const start = decimal(m[2]!, 'lo', value, variable);
    const end = decimal(m[4]!, 'hi', value, variable);
    if (start > end) throw specError(`${where}: lo ${start} is greater than hi ${end}`, value, variable);
    const prev = out[out.length - 1];
    if (prev && layer <= prev.layer) {
      const why = layer === prev.layer ? `repeats layer ${layer}` : `layer ${layer} comes after layer ${prev.layer}`;
      throw specError(`${where} ${why} (layers must be ascending and unique)`, value, variable);
    }
    out.push({ layer, start, end });
  });
  return out;
}

/** The entries of `value` written in the old `L:lo-hi` form, which the overlay rejects. */
export function dashEntries(value: string): string[] {
  return value.split(',').filter((e) => DASH_ENTRY.test(e));
}

/** The SPARK_ENGRAM_ROWS value for `ranges`, in the overlay's grammar (sorted by layer; layers must be unique). */
export function formatEngramRows(ranges: readonly LayerRange[]): string {
  return [...ranges]
    .sort((a, b) => a.layer - b.layer)
    .map((r) => `${r.layer}:${r.start}:${r.end}`)
    .join(',');
}

/**
 * One SPARK_ENGRAM_ROWS value per rank, from text as people paste it: separate arguments, the
 * lines of `spark engram-ranges --all`, or the lines of the overlay's engram_partition.py
 * (`rank R: 1:lo:hi 14:lo:hi`, entries space-separated, then a parenthesised note). Per line:
 * a `rank R:` prefix names the rank (it must be the line's position); a parenthesised line is a
 * note and skipped; entries separated by spaces belong to one rank, unless a token holds a
 * comma, in which case each token is one rank's whole value.
 */
export function parseRankValues(texts: readonly string[], variable = 'SPARK_ENGRAM_ROWS'): LayerRange[][] {
  const out: LayerRange[][] = [];
  for (const text of texts) {
    for (const raw of text.split(/\r?\n/)) {
      let line = raw.trim();
      if (line === '' || /^\(.*\)$/.test(line)) continue;
      const prefix = /^rank\s+(\d+)\s*:\s*/.exec(line);
      if (prefix) {
        if (Number(prefix[1]) !== out.length) {
          throw specError(
            `line '${line}' names rank ${prefix[1]} where rank ${out.length} comes (one line per rank, in rank order)`,
            line,
            variable,
          );
        }
        line = line.slice(prefix[0].length);
      }
      const tokens = line.split(/\s+/).filter((t) => t !== '');
      const values = prefix || !tokens.some((t) => t.includes(',')) ? [tokens.join(',')] : tokens;
      for (const v of values) out.push(parseEngramRows(v, `rank ${out.length}'s ${variable}`));
    }
  }
  return out;
}

function tileLayer(layer: EngramLayerRows, world: number, split: SplitRule): RowRange[] {
  if (split !== 'heads') return tileRows(layer.rows, world, split);
  if (!layer.subTables) {
    throw new SparkError(
      'E_CONFIG',
      `layer ${layer.layer}: the heads split needs the sub-table sizes from config.json (engram_* keys in text_config); ` +
        'put config.json next to the shards or use --split floor',
    );
  }
  try {
    return tileHeads(layer.subTables, layer.rows, world);
  } catch (err) {
    const e = err as { code?: string; message?: string };
    if (e.code === 'E_ENGRAM_ROWS') throw new SparkError('E_ENGRAM_ROWS', `layer ${layer.layer}: ${e.message}`);
    throw err;
  }
}

/** Every rank's ranges: result[rank] lists the layers in ascending order. */
export function tileLayers(layers: readonly EngramLayerRows[], world: number, split: SplitRule): RankLayerRange[][] {
  const sorted = [...layers].sort((a, b) => a.layer - b.layer);
  const perRank: RankLayerRange[][] = Array.from({ length: world }, () => []);
  for (const layer of sorted) {
    tileLayer(layer, world, split).forEach((r, rank) => {
      perRank[rank]!.push({ layer: layer.layer, rows: layer.rows, start: r.start, end: r.end });
    });
  }
  return perRank;
}

/**
 * The rank and world whose floor share of a table of `rows` rows is [lo, hi), the smallest
 * world first (up to `maxWorld`): whose rows a shard holds when they are not its own rank's.
 */
export function floorShareOf(
  lo: number,
  hi: number,
  rows: number,
  maxWorld = 16,
): { rank: number; world: number } | undefined {
  for (let world = 1; world <= maxWorld; world++) {
    for (let rank = 0; rank < world; rank++) {
      if (Math.floor((rows * rank) / world) === lo && Math.floor((rows * (rank + 1)) / world) === hi)
        return { rank, world };
    }
  }
  return undefined;
}

/** One rank's ranges, ascending by layer. */
export function rankRanges(
  layers: readonly EngramLayerRows[],
  rank: number,
  world: number,
  split: SplitRule,
): RankLayerRange[] {
  if (!Number.isInteger(rank) || rank < 0 || rank >= world) {
    throw new SparkError('E_USAGE', `rank ${rank} is outside the world of ${world} ranks (ranks are 0-${world - 1})`);
  }
  return tileLayers(layers, world, split)[rank]!;
}

export type TilingProblemKind = 'gap' | 'overlap' | 'out-of-range' | 'unknown-layer';

export interface TilingProblem {
  layer: number;
  kind: TilingProblemKind;
  /** The first row concerned. */
  row: number;
  /** The ranks concerned, ascending. */
  ranks: number[];
  message: string;
}

export interface LayerTiling {
  layer: number;
  rows: number;
  ok: boolean;
  problem?: TilingProblem;
}

export interface TilingReport {
  ok: boolean;
  world: number;
  layers: LayerTiling[];
  /** The first problem, in layer order. */
  problem?: TilingProblem;
}

interface Owned {
  rank: number;
  start: number;
  end: number;
}

const span = (o: Owned): string => `[${o.start}, ${o.end})`;

function checkLayer(
  layer: number,
  rows: number,
  owned: Owned[],
  missing: number[],
  world: number,
): TilingProblem | undefined {
  const problem = (kind: TilingProblemKind, row: number, ranks: number[], what: string): TilingProblem => ({
    layer,
    kind,
    row,
    ranks: [...new Set(ranks)].sort((a, b) => a - b),
    message: `layer ${layer}: ${what}`,
  });
  const noEntry =
    missing.length > 0
      ? `; ${missing.map((r) => `rank ${r}`).join(', ')} ${missing.length === 1 ? 'names' : 'name'} no range for layer ${layer}`
      : '';
  const sorted = owned.filter((o) => o.end > o.start).sort((a, b) => a.start - b.start || a.end - b.end);
  let cursor = 0;
  let last: Owned | undefined;
  for (const o of sorted) {
    if (o.start >= rows) break;
    if (o.start > cursor) {
      const before = last ? `rank ${last.rank} ends at ${cursor}` : 'no range starts at 0';
      return problem(
        'gap',
        cursor,
        [...(last ? [last.rank] : []), o.rank],
        `rows [${cursor}, ${o.start}) belong to no rank (${before}, rank ${o.rank} starts at ${o.start}${noEntry})`,
      );
    }
    if (o.start < cursor && last) {
      const full = world > 1 && owned.length === world && owned.every((x) => x.start === 0 && x.end === rows);
      const hint = full ? '; a full range on every rank double-counts every row in the all-reduce' : '';
      return problem(
        'overlap',
        o.start,
        [last.rank, o.rank],
        `row ${o.start} is owned by rank ${last.rank} ${span(last)} and rank ${o.rank} ${span(o)}${hint}`,
      );
    }
    if (o.end > cursor) {
      cursor = o.end;
      last = o;
    }
  }
  if (cursor < rows) {
    const after = last ? `the last range, rank ${last.rank}'s, ends at ${cursor}` : 'no rank names a range';
    return problem(
      'gap',
      cursor,
      last ? [last.rank] : [],
      `rows [${cursor}, ${rows}) belong to no rank (${after}; the table has ${rows} rows${noEntry})`,
    );
  }
  const beyond = owned
    .filter((o) => o.end > rows || o.start > rows)
    .sort((a, b) => Math.max(a.start, rows) - Math.max(b.start, rows))[0];
  if (beyond) {
    const row = Math.max(beyond.start, rows);
    return problem(
      'out-of-range',
      row,
      [beyond.rank],
      `row ${row} is out of range (rank ${beyond.rank} has ${span(beyond)}; the table has ${rows} rows, [0, ${rows}))`,
    );
  }
  return undefined;
}

/**
 * Checks that per layer the ranks' ranges tile [0, N) exactly. `specs[r]` is rank r's ranges.
 * `tables` gives N per layer (from the checkpoint); without it N is the largest end named, so
 * only gaps and overlaps can be found.
 */
export function checkTiling(
  specs: readonly (readonly LayerRange[])[],
  tables?: readonly { layer: number; rows: number }[],
): TilingReport {
  const world = specs.length;
  const rowsOf = new Map<number, number>();
  if (tables) {
    for (const t of tables) rowsOf.set(t.layer, t.rows);
  } else {
    for (const spec of specs) for (const r of spec) rowsOf.set(r.layer, Math.max(rowsOf.get(r.layer) ?? 0, r.end));
  }
  const layers: LayerTiling[] = [];
  const known = [...rowsOf.keys()].sort((a, b) => a - b);
  const unknown = [...new Set(specs.flatMap((s) => s.map((r) => r.layer)))]
    .filter((l) => !rowsOf.has(l))
    .sort((a, b) => a - b);
  for (const layer of [...known, ...unknown].sort((a, b) => a - b)) {
    const rows = rowsOf.get(layer);
    if (rows === undefined) {
      const ranks = specs.flatMap((s, rank) => (s.some((r) => r.layer === layer) ? [rank] : []));
      const message = `layer ${layer}: not an Engram layer of this checkpoint (its layers: ${known.join(', ') || 'none'}), named by rank ${ranks.join(', rank ')}`;
      layers.push({ layer, rows: 0, ok: false, problem: { layer, kind: 'unknown-layer', row: 0, ranks, message } });
      continue;
    }
    const owned: Owned[] = [];
    const missing: number[] = [];
    specs.forEach((spec, rank) => {
      const r = spec.find((x) => x.layer === layer);
      if (r) owned.push({ rank, start: r.start, end: r.end });
      else missing.push(rank);
    });
    const problem = checkLayer(layer, rows, owned, missing, world);
    layers.push(problem ? { layer, rows, ok: false, problem } : { layer, rows, ok: true });
  }
  const problem = layers.find((l) => l.problem)?.problem;
  return problem ? { ok: false, world, layers, problem } : { ok: true, world, layers };
}
