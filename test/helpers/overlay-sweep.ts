// The overlay contract's sweep (test/stacks/overlay/overlay-contract.test.ts keeps world 3,
// test/long/overlay-contract-worlds.test.ts worlds 2 and 4): spark pack's sparse copies of every
// rank of a world under every split, read the way the serving overlay reads SPARK_ENGRAM_DIR
// (helpers/overlay-view.ts): rows byte-exact against the snapshot, unowned ids zero, the
// shards' names, apparent sizes and header bytes, the index verbatim, and the ranges tiling.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { packEngram } from '../../src/stacks/pack-engram.js';
import { packRanges } from '../../src/pack/pack-ranges.js';
import { INDEX_FILE, type openSnapshot } from '../../src/engram/snapshot.js';
import { synthRow } from '../../src/synth/synth-rows.js';
import type { PackTable } from '../../src/pack/pack-io.js';
import { checkTiling, openOverlayView, parseEngramRows, type OverlayView, type Ranges } from './overlay-view.js';
import type { makeSnapshot } from './synth.js';
import { tempDir } from './tmp.js';
import { packRequest } from './pack-request.js';

export const SPLITS = ['floor', 'front', 'heads'] as const;

type Snapshot = ReturnType<typeof makeSnapshot>;
type Opened = Awaited<ReturnType<typeof openSnapshot>>;

/** spark pack of rank `rank` of `world` under `split` into a new directory; its path. */
export async function packCopy(
  snapshotDir: string,
  opened: Opened,
  tables: PackTable[],
  rank: number,
  world: number,
  split: (typeof SPLITS)[number],
  layout = 'sparse',
): Promise<string> {
  const out = join(tempDir(), `r${rank}of${world}-${split}-${layout}`);
  const ranges = packRanges(tables, opened.config, rank, world, split);
  // chunkRows: a whole number of pages, for the page layout too.
  await packEngram(
    packRequest(snapshotDir, tables, out, { rank, world, split, ranges, layout, threads: 2, chunkRows: 15 * 300 }),
  );
  return out;
}

/** The overlay's SPARK_ENGRAM_ROWS value for a copy's manifest: `L:lo:hi`, comma-joined. */
export function rowsValue(copy: string): string {
  const layers = (
    JSON.parse(readFileSync(join(copy, 'engram-local.json'), 'utf8')) as { layers: Record<string, [number, number]> }
  ).layers;
  return Object.entries(layers)
    .map(([l, [lo, hi]]) => `${l}:${lo}:${hi}`)
    .join(',');
}

/** Every owned row byte-exact against the snapshot (as the overlay reads a snapshot), unowned ids zero. */
export function checkCopy(
  view: OverlayView,
  source: OverlayView,
  want: { layer: number; start: number; end: number }[],
  what: string,
): void {
  for (const w of want) {
    const t = view.tables.get(w.layer)!;
    assert.deepEqual([t.lo, t.hi], [w.start, w.end], `${what}: layer ${w.layer} range`);
    const got = view.run(w.layer, w.start, w.end);
    const exp = source.run(w.layer, w.start, w.end);
    assert.ok(got.weight.equals(exp.weight), `${what}: layer ${w.layer} weight rows differ`);
    assert.ok(got.scale.equals(exp.scale), `${what}: layer ${w.layer} scale rows differ`);
    const zero = Buffer.alloc(t.dim + t.dim / 32);
    for (const id of [w.start, w.end - 1, Math.floor((w.start + w.end) / 2)]) {
      if (id >= w.start && id < w.end)
        assert.ok(view.row(w.layer, id).equals(synthRow(w.layer, id, t.dim)), `${what}: layer ${w.layer} row ${id}`);
    }
    for (const id of [0, w.start - 1, w.end, t.rows - 1]) {
      if (id >= 0 && id < t.rows && (id < w.start || id >= w.end))
        assert.ok(view.row(w.layer, id).equals(zero), `${what}: unowned row ${id} is not zero`);
    }
  }
}

/** Every rank of each world under every split, packed and read as the overlay reads it. */
export async function sweepWorlds(snap: Snapshot, opened: Opened, worlds: number[]): Promise<void> {
  const source = openOverlayView(snap.dir);
  const rows = new Map(opened.engram.map((t) => [t.layer, t.rows]));
  try {
    for (const world of worlds) {
      for (const split of SPLITS) {
        const perRank: Ranges[] = [];
        for (let rank = 0; rank < world; rank++) {
          const copy = await packCopy(snap.dir, opened, opened.engram, rank, world, split);
          const what = `rank ${rank} of ${world} (${split})`;
          const view = openOverlayView(copy, { SPARK_ENGRAM_ROWS: '1:0:1,14:0:1' });
          try {
            assert.equal(
              view.rangesFrom,
              'engram-local.json',
              `${what}: the manifest's ranges win over the environment`,
            );
            checkCopy(view, source, packRanges(opened.engram, opened.config, rank, world, split), what);
          } finally {
            view.close();
          }
          // The same shard names, apparent sizes and header bytes; the index verbatim.
          assert.deepEqual(
            readdirSync(copy).sort(),
            [
              'engram-local.json',
              INDEX_FILE,
              'model-00002-of-00003.safetensors',
              'model-00003-of-00003.safetensors',
            ].sort(),
          );
          assert.ok(readFileSync(join(copy, INDEX_FILE)).equals(readFileSync(join(snap.dir, INDEX_FILE))));
          for (const f of snap.files.slice(1)) {
            assert.equal(statSync(join(copy, f.name)).size, f.bytes, `${what}: ${f.name} apparent size`);
            const len = Number(readFileSync(join(snap.dir, f.name)).readBigUInt64LE(0));
            assert.ok(
              readFileSync(join(copy, f.name))
                .subarray(0, 8 + len)
                .equals(readFileSync(join(snap.dir, f.name)).subarray(0, 8 + len)),
            );
          }
          perRank.push(parseEngramRows(rowsValue(copy)));
        }
        checkTiling(perRank, rows);
      }
    }
  } finally {
    source.close();
  }
}
