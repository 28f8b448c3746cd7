// Preflight with a node-local copy on the node: the packed recipe boots from a sparse copy in
// its /engram mount; pack.manifest checks it was made for this node's rank of this world from
// this snapshot's tables (spark's manifest, or inferred for the overlay tool's), and a stale
// entrypoint baking the old layer:lo-hi form is caught. Each case is a fake node in a temp dir.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tileLayers } from '../../src/engram/ranges.js';
import type { Finding, PreflightReport } from '../../src/preflight/index.js';
import { edit, preflight, write, world, type World } from '../helpers/preflight.js';
import { writeSyntheticCopy, type SyntheticCopySpec } from '../helpers/sparse-copy.js';

/** The world snapshot's tables as config.json gives them. */
function tables(w: World, extra = 0): SyntheticCopySpec['tables'] {
  const cfg = JSON.parse(readFileSync(join(w.snapshotDir, 'config.json'), 'utf8')) as {
    text_config: { engram_num_embeddings: number[] };
  };
  return [1, 14].map((layer, i) => ({ layer, rows: cfg.text_config.engram_num_embeddings[i]! + extra, dim: 256 }));
}

/** The recipe's copy at the world's pack dir: rank r of `worldSize`, spark's manifest or the overlay tool's. */
function makeCopy(w: World, rank: number, o: { worldSize?: number; spark?: boolean; extra?: number } = {}): void {
  rmSync(w.packDir, { recursive: true, force: true });
  mkdirSync(w.packDir, { recursive: true });
  const t = tables(w, o.extra ?? 0);
  const worldSize = o.worldSize ?? 4;
  const ranges = tileLayers(
    t.map(({ layer, rows }) => ({ layer, rows })),
    worldSize,
    'floor',
  )[rank]!.map(({ layer, start, end }) => ({ layer, start, end }));
  writeSyntheticCopy(w.packDir, {
    tables: t,
    ranges,
    ...(o.spark === false ? {} : { spark: { rank, world: worldSize, split: 'floor' } }),
  });
}

const errors = (r: PreflightReport): Finding[] => r.findings.filter((f) => f.severity === 'error');
const manifestFindings = (r: PreflightReport): Finding[] => r.findings.filter((f) => f.rule === 'pack.manifest');

test("the packed recipe with rank 0's sparse copy in its mount: preflight passes every rule on node 0", async () => {
  const w = await world();
  makeCopy(w, 0);
  const report = await preflight(w.options(w.recipe(w.packedText)));
  assert.deepEqual(errors(report), []);
  for (const id of [
    'pack.manifest',
    'pack.free-space',
    'snapshot.engram-dir',
    'engram.ranges-source',
    'engram.rows-grammar',
    'mounts.host-path',
    'snapshot.complete',
  ]) {
    assert.ok(report.ran.includes(id), `${id} ran (skipped: ${JSON.stringify(report.skipped)})`);
  }
  // The model snapshot is the cluster's hf_cache one, not the sparse copy /engram maps to.
  assert.equal(report.snapshot?.dir, w.snapshotDir);
  assert.deepEqual(manifestFindings(report), []);
});

test('a copy made for another rank, world or checkpoint is an error naming what it is', async () => {
  const w = await world();
  const recipe = w.recipe(w.packedText);
  const manifest = join(w.packDir, 'engram-local.json');
  const cases: [() => void, RegExp][] = [
    [() => makeCopy(w, 1), /engram-local\.json: rank 1, this is node 0 \(spark1\)$/],
    [
      () => makeCopy(w, 1, { spark: false }),
      /engram-local\.json: rank 1 \(inferred from its ranges\), this is node 0 \(spark1\)$/,
    ],
    [
      () => makeCopy(w, 0, { worldSize: 2, spark: false }),
      /engram-local\.json: world 2 \(inferred from its ranges\), the recipe runs 4 ranks$/,
    ],
    [
      () => makeCopy(w, 0, { extra: 5 }),
      /engram-local\.json: layer 1's table has \d+ rows, the snapshot's has \d+: it was made from another checkpoint$/,
    ],
  ];
  for (const [make, message] of cases) {
    make();
    const report = await preflight({ ...w.options(recipe), only: ['pack.manifest'] });
    const found = errors(report);
    assert.ok(
      found.some((f) => message.test(f.message) && f.where === manifest),
      `${message}: ${JSON.stringify(found, null, 1)}`,
    );
  }
  // Made by the overlay's tool with a partition no split rule gives: nothing to check it against.
  rmSync(w.packDir, { recursive: true, force: true });
  mkdirSync(w.packDir);
  writeSyntheticCopy(w.packDir, {
    tables: tables(w),
    ranges: [
      { layer: 1, start: 0, end: 3 },
      { layer: 14, start: 0, end: 700 },
    ],
  });
  const custom = await preflight({ ...w.options(recipe), only: ['pack.manifest'] });
  assert.deepEqual(errors(custom), []);
  assert.match(
    manifestFindings(custom)[0]!.message,
    /rank and world unknown: its ranges 1:0:3,14:0:700 are no single rank's floor(, front or heads| or front) share/,
  );
  assert.equal(manifestFindings(custom)[0]!.severity, 'info');
});

test("a SPARK_ENGRAM_ROWS beside a copy must be its manifest's ranges; the old form is flagged too", async () => {
  const w = await world();
  makeCopy(w, 0);
  const rows = tileLayers(
    tables(w).map(({ layer, rows }) => ({ layer, rows })),
    4,
    'floor',
  )[0]!;
  const own = rows.map((r) => `${r.layer}:${r.start}:${r.end}`).join(',');
  const run = async (value: string) =>
    preflight({
      ...w.options(
        w.recipe(edit(w.packedText, 'SPARK_ENGRAM_MODE', `SPARK_ENGRAM_ROWS = "${value}"\nSPARK_ENGRAM_MODE`)),
      ),
      only: ['pack.manifest', 'engram.rows-grammar'],
    });
  assert.deepEqual(errors(await run(own)), []);
  const other = errors(await run(own.replace(/:(\d+),/, (_m, hi: string) => `:${Number(hi) - 1},`)));
  assert.equal(other.length, 1);
  assert.match(
    other[0]!.message,
    /^SPARK_ENGRAM_ROWS='1:0:\d+,14:0:\d+' \(set in the recipe's \[env\]\) disagrees with .*engram-local\.json, which gives 1:0:\d+,14:0:\d+: the overlay serves only the copy's rows/,
  );
  const dashed = errors(await run(own.replace(/:(\d+):/g, ':$1-')));
  assert.deepEqual(
    dashed.map((f) => f.rule),
    ['engram.rows-grammar'],
    'the same ranges in the old form: only the grammar is wrong',
  );
});

test('an entrypoint generated by an older --emit-sh (layer:lo-hi baked in) is caught before the boot', async () => {
  const w = await world();
  const script = write(
    join(w.root, 'old-wrapper.sh'),
    '#!/bin/sh\ncase $NODE_RANK in\n  0) spark_rows=\'1:0-250,14:0-252\' ;;\nesac\nexport SPARK_ENGRAM_ROWS="$spark_rows"\nexec "$@"\n',
  );
  const recipe = w.recipe(edit(w.dsv41Text, join(w.root, 'aiden4x-launch.sh'), script));
  const report = await preflight({ ...w.options(recipe), only: ['engram.ranges-source'] });
  const found = errors(report);
  assert.equal(found.length, 1);
  assert.match(
    found[0]!.message,
    /^the entrypoint aiden4x-launch\.sh \(.*old-wrapper\.sh\) exports SPARK_ENGRAM_ROWS values in the old layer:lo-hi form \('1:0-250,14:0-252'\), which the overlay rejects/,
  );
  assert.match(found[0]!.fix, /^regenerate it: spark wrapper --emit-sh --snapshot <snapshot> --world 4 --out /);
  const fresh = write(
    join(w.root, 'new-wrapper.sh'),
    '#!/bin/sh\ncase $NODE_RANK in\n  0) spark_rows=\'1:0:250,14:0:252\' ;;\nesac\nexport SPARK_ENGRAM_ROWS="$spark_rows"\nexec "$@"\n',
  );
  const ok = await preflight({
    ...w.options(w.recipe(edit(w.dsv41Text, join(w.root, 'aiden4x-launch.sh'), fresh))),
    only: ['engram.ranges-source'],
  });
  assert.deepEqual(errors(ok), []);
});
