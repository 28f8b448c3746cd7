// Preflight of the Mia stack's packed shards on a fake cluster of 4 nodes (one rank each, TP 4):
// the Mia recipe mounts each node's own pack directory at /engram (DSV41_PACKED_DIR). The
// shards are written by the test's own writer (test/helpers/mia-pack.ts) from the layout
// docs/mia-stack.md gives; each fixture has its exact finding, on the node it concerns. One run
// here holds a failing case of each rule; each fixture alone, and spark on the nodes, are in
// test/long/preflight-mia-scenarios.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, constants, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { miaShardName } from '../../../src/stacks/mia/mia-shard.js';
import { edit, MIA_ENV, preflight, REVISION, world, write } from '../../helpers/preflight.js';
import { writeMiaPack } from '../../helpers/mia-pack.js';
import { check, defaultMia, dump, esc, kinds, MIA_RULES, on, packAll, path } from '../../helpers/preflight-mia.js';

test('a good pack on every node: the four Mia rules ran on each node, no finding', async () => {
  const m = await defaultMia();
  await packAll(m);
  const r = await check(m);
  assert.deepEqual(r.findings, [], dump(r));
  assert.deepEqual(r.ran, MIA_RULES);
  assert.deepEqual(r.skipped, []);
});

test('one run with a failing case of each Mia rule, each on its own node', async () => {
  const m = await defaultMia();
  await packAll(m);
  const n1 = m.rows.get(1)!;
  // node 0: layer 1 holds rank 0 of 2's rows under rank 0 of 4's name (the reader aborts).
  await writeMiaPack(m.realDir('spark1'), m.snapshot, { rank: 0, world: 2, nameWorld: 4, layers: [1] });
  // node 1: no O_DIRECT; node 2: resident scales on in its [nodes.env]; node 3: an identity.json
  // that disagrees with its packs.
  m.c.setODirect('spark2', false);
  const rows = Object.fromEntries([...m.rows].map(([l, n]) => [String(l), n]));
  writeFileSync(
    join(m.realDir('spark4'), 'identity.json'),
    JSON.stringify({ format: 'DSV41EN1', tp: 3, revision: REVISION, rows }),
  );
  try {
    const r = await check(m, m.recipeText, { spark3: { DSV41_RESIDENT_SCALES: '1' } });
    assert.deepEqual(
      kinds(r),
      [
        ['mia.packs', 'error', 0],
        ['mia.o-direct', 'warn', 1],
        ['mia.resident-scales', 'warn', 2],
        ['mia.identity', 'warn', 3],
      ],
      dump(r),
    );
    const packs = on(
      r,
      'mia.packs',
      'error',
      0,
      new RegExp(
        `^${esc(path(m, 1, 0))} on node 0 \\(spark1\\) is not layer 1's pack for this rank: rows \\[0, ${Math.floor(n1 / 2)}\\), expected \\[0, ${Math.floor(n1 / 4)}\\) \\(rank 0 of 2's rows; this is rank 0 of 4\\): the Mia stack's reader aborts on it, and the rank dies at boot$`,
      ),
    );
    assert.match(
      packs.fix,
      new RegExp(
        `^re-pack it: spark pack \\S+/snapshots/${REVISION} --out ${esc(m.nodeDir)} --rank 0 --world 4 --layout dense --force$`,
      ),
    );
    on(
      r,
      'mia.o-direct',
      'warn',
      1,
      /^engram-l1-r1of4\.bin and engram-l14-r1of4\.bin in .* on node 1 \(spark2\) cannot be opened with O_DIRECT: /,
    );
    const scales = on(
      r,
      'mia.resident-scales',
      'warn',
      2,
      /^DSV41_RESIDENT_SCALES=1 \(set in the node's \[nodes\.env\]\) is not 0, off or false: .* on node 2 \(spark3\) the stack still pins rank 2's scale rows, /,
    );
    assert.match(scales.where, /cluster-fake-\d+\.toml:\d+$/);
    on(
      r,
      'mia.identity',
      'warn',
      3,
      new RegExp(
        `^${esc(join(m.nodeDir, 'identity.json'))} on node 3 \\(spark4\\) disagrees with the packs beside it: tp 3, the packs here are for tp 4; the sparkrun registry's preparation refuses such a directory$`,
      ),
    );
  } finally {
    m.c.setODirect('spark2', true);
    rmSync(join(m.realDir('spark4'), 'identity.json'));
  }
});

test("--node-rank on one node with the stack's .env: DSV41_PACKED_DIR=/engram is ENGRAM_DIR on the host", async () => {
  const w = await world();
  const engram = join(w.root, 'dsv41-engram');
  rmSync(engram, { recursive: true, force: true });
  const env = edit(readFileSync(MIA_ENV, 'utf8'), 'ENGRAM_DIR=$HOME/dsv41-engram', `ENGRAM_DIR=${engram}`);
  const options = w.options(w.recipe(w.dsv41Text), { env: write(join(w.root, 'mia-local.env'), env), only: ['mia'] });
  const none = await preflight(options);
  assert.deepEqual(
    none.findings.map((f) => [f.rule, f.severity, f.where]),
    [['mia.packs', 'info', engram]],
    JSON.stringify(none.findings),
  );
  assert.match(
    none.findings[0]!.message,
    new RegExp(
      `^no packs for rank 0 of 4 in ${esc(engram)} on node 0 \\(spark1\\) \\(ENGRAM_DIR=${esc(engram)} \\(\\S+mia-local\\.env:\\d+\\), mounted at /engram\\): `,
    ),
  );
  await writeMiaPack(engram, w.snapshotDir, { rank: 0, world: 4 });
  const good = await preflight(options);
  // This machine's filesystem decides O_DIRECT here: the warning is there exactly when it refuses it.
  const refuses = (() => {
    try {
      closeSync(openSync(join(engram, miaShardName(1, 0, 4)), constants.O_RDONLY | constants.O_DIRECT));
      return false;
    } catch {
      return true;
    }
  })();
  assert.deepEqual(
    good.findings.map((f) => f.rule),
    refuses ? ['mia.o-direct'] : [],
  );
  assert.deepEqual(good.ran, MIA_RULES);
});
