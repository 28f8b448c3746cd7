import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { packEngram } from '../../src/stacks/pack-engram.js';
import { packRanges } from '../../src/pack/pack-ranges.js';
import { INDEX_FILE, openSnapshot } from '../../src/engram/snapshot.js';
import { synthRow } from '../../src/synth/synth-rows.js';
import { openOverlayView } from '../helpers/overlay-view.js';
import { safetensorsHeader } from '../helpers/sparse-check.js';
import { makeFullSizeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';

// The full-size 48-shard DSV4.1-shaped snapshot (real row counts, sparse files). A whole rank's
// copy allocates ~47 GiB (scripts/check-fullsize.ts does that once by hand); here the same
// properties on the rows the synthetic snapshot holds: 64 rows at each end of rank 1 of 4's
// ranges, and the last 64 rows of the tables (rank 3), whose weight offsets pass 2^36.
const full = makeFullSizeSnapshot();
const opened = await openSnapshot(full.dir);
const tables = opened.engram;
const SHARDS = ['model-00047-of-00048.safetensors', 'model-00048-of-00048.safetensors'];

test('full-size snapshot: sparse copies keep the 48-shard names, apparent sizes and headers; rows at both range ends and past 2^36 are exact', async () => {
  assert.deepEqual(
    tables.map((t) => t.rows),
    [384006168, 384016682],
  );
  const rank1 = packRanges(tables, opened.config, 1, 4, 'floor');
  const rank3 = packRanges(tables, opened.config, 3, 4, 'floor');
  assert.deepEqual(
    rank1.map((r) => [r.start, r.end]),
    [
      [96001542, 192003084],
      [96004170, 192008341],
    ],
  );
  const windows = {
    'rank 1 of 4, first rows': rank1.map((r) => ({ layer: r.layer, start: r.start, end: r.start + 64 })),
    'rank 1 of 4, last rows': rank1.map((r) => ({ layer: r.layer, start: r.end - 64, end: r.end })),
    'rank 3 of 4, last rows': rank3.map((r) => ({ layer: r.layer, start: r.end - 64, end: r.end })),
  };
  let past36 = 0;
  for (const [what, ranges] of Object.entries(windows)) {
    const out = join(tempDir(), 'copy');
    const s = await packEngram({
      snapshotDir: full.dir,
      index: join(full.dir, INDEX_FILE),
      tables,
      out,
      rank: 1,
      world: 4,
      split: 'floor',
      ranges,
      layout: 'sparse',
      threads: 2,
    });
    assert.deepEqual(readdirSync(out).sort(), ['engram-local.json', INDEX_FILE, ...SHARDS].sort(), what);
    for (const name of SHARDS) {
      const st = statSync(join(out, name));
      assert.equal(st.size, statSync(join(full.dir, name)).size, `${what}: ${name} apparent size`);
      assert.ok(
        safetensorsHeader(join(out, name)).equals(safetensorsHeader(join(full.dir, name))),
        `${what}: ${name} header bytes`,
      );
      // Allocated: the header, 64 rows of weight and of scale, rounded out to blocks.
      assert.ok(st.blocks * 512 <= 64 * 1024, `${what}: ${name} allocates ${st.blocks * 512} bytes`);
    }
    assert.equal(
      s.apparentBytes,
      SHARDS.reduce((a, n) => a + statSync(join(full.dir, n)).size, 0),
    );
    const view = openOverlayView(out);
    try {
      for (const r of ranges) {
        const t = view.tables.get(r.layer)!;
        for (let id = r.start; id < r.end; id++) {
          assert.ok(view.row(r.layer, id).equals(synthRow(r.layer, id, 256)), `${what}: layer ${r.layer} row ${id}`);
          if (t.weight.base + id * 256 > 2 ** 36) past36++;
          if (t.scale.base + id * 8 > 2 ** 36) past36++;
        }
        assert.ok(
          view.row(r.layer, r.start - 1).equals(Buffer.alloc(264)),
          `${what}: row ${r.start - 1} is not owned: zeros`,
        );
      }
    } finally {
      view.close();
    }
  }
  // Every scale row sits past 2^36 (~98 GB in): 3 windows x 2 layers x 64 rows; of the weight
  // rows, the last rank's last 64 per layer do too (~98 GB in).
  assert.equal(past36, 3 * 2 * 64 + 2 * 64);
});
