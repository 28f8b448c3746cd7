// The other scenarios of the Mia stack's preflight on a fake cluster of 4 nodes, beside the
// representatives npm test runs (test/stacks/mia/preflight.test.ts): no packs at all, packs the
// reader does not look for, each kind of pack the reader aborts on, resident scales set each
// way, no O_DIRECT with a damaged pack, identity.json's fields, and spark on the nodes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { renameSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { miaShardName } from '../../src/stacks/mia/mia-shard.js';
import { formatBytes } from '../../src/terminal/format.js';
import { edit, REVISION } from '../helpers/preflight.js';
import { defaultHosts } from '../helpers/fake-cluster.js';
import { writeMiaPack, writeVersion1Shard } from '../helpers/mia-pack.js';
import { check, defaultMia, dump, esc, kinds, mia, on, packAll, path } from '../helpers/preflight-mia.js';

test('no packs at all: one note per node that the stack serves from the checkpoint, nothing worse', async () => {
  const m = await defaultMia();
  for (const h of m.c.hosts) rmSync(m.realDir(h.name), { recursive: true, force: true });
  const r = await check(m);
  assert.deepEqual(
    kinds(r),
    [0, 1, 2, 3].map((n) => ['mia.packs', 'info', n]),
    dump(r),
  );
  const f = r.findings[1]!;
  assert.equal(
    f.message,
    `no packs for rank 1 of 4 in ${m.nodeDir} on node 1 (spark2) (DSV41_PACKED_DIR=/engram through the mount of ${m.nodeDir}): the stack then serves its rows from the checkpoint, two reads a row instead of one`,
  );
  // The snapshot as the node reported it (the fake ssh runs the probe under the host's own root).
  assert.match(
    f.fix,
    new RegExp(
      `^pack them: spark pack \\S+/snapshots/${REVISION} --out ${esc(m.nodeDir)} --rank 1 --world 4 --layout dense \\(every node at once: spark fanout pack --layout dense\\)$`,
    ),
  );
});

test('packs the reader does not look for (another world, another rank, a layer missing): a warning on that node', async () => {
  const m = await defaultMia();
  await packAll(m);
  const redo = async (host: string, ...packs: Parameters<typeof writeMiaPack>[2][]) => {
    rmSync(m.realDir(host), { recursive: true });
    for (const o of packs) await writeMiaPack(m.realDir(host), m.snapshot, o);
  };
  await redo('spark1', { rank: 0, world: 2 });
  await redo('spark2', { rank: 0, world: 4 });
  await redo('spark3', { rank: 2, world: 4, layers: [1] });
  const r = await check(m);
  assert.deepEqual(
    kinds(r),
    [0, 1, 2].map((n) => ['mia.packs', 'warn', n]),
    dump(r),
  );
  on(
    r,
    'mia.packs',
    'warn',
    0,
    new RegExp(
      `^engram-l1-r0of4\\.bin and engram-l14-r0of4\\.bin are missing from ${esc(m.nodeDir)} on node 0 \\(spark1\\); the directory holds ` +
        'engram-l1-r0of2\\.bin \\(rank 0 of 2\\), engram-l14-r0of2\\.bin \\(rank 0 of 2\\): packed for another rank or world: the stack then serves its rows from the checkpoint, two reads a row instead of one$',
    ),
  );
  const rank = on(
    r,
    'mia.packs',
    'warn',
    1,
    /^engram-l1-r1of4\.bin and engram-l14-r1of4\.bin are missing from .* on node 1 \(spark2\); the directory holds engram-l1-r0of4\.bin \(rank 0 of 4\), engram-l14-r0of4\.bin \(rank 0 of 4\): packed for another rank or world: /,
  );
  assert.match(
    rank.fix,
    new RegExp(`^pack rank 1 of 4 there: spark pack \\S+ --out ${esc(m.nodeDir)} --rank 1 --world 4 --layout dense$`),
  );
  const layer = on(
    r,
    'mia.packs',
    'warn',
    2,
    /^engram-l14-r2of4\.bin is missing from .* on node 2 \(spark3\): the stack then serves its rows from the checkpoint/,
  );
  assert.equal(layer.where, path(m, 14, 2));
});

test('packs the reader aborts on (wrong world, wrong rank, truncated, version 1, a FIFO): an error on that node naming the file and the fix', async () => {
  const m = await defaultMia();
  await packAll(m);
  const n1 = m.rows.get(1)!;
  const n14 = m.rows.get(14)!;
  // node 0: layer 1 holds rank 0 of 2's rows under rank 0 of 4's name.
  await writeMiaPack(m.realDir('spark1'), m.snapshot, { rank: 0, world: 2, nameWorld: 4, layers: [1] });
  // node 1: layer 14 holds rank 0's rows under rank 1's name.
  await writeMiaPack(m.realDir('spark2'), m.snapshot, { rank: 0, world: 4, nameRank: 1, layers: [14] });
  // node 2: layer 14 is 100 bytes short, layer 1 shorter than the header.
  const short = join(m.realDir('spark3'), miaShardName(14, 2, 4));
  const size = statSync(short).size;
  truncateSync(short, size - 100);
  truncateSync(join(m.realDir('spark3'), miaShardName(1, 2, 4)), 20);
  // node 3: layer 1 is a version-1 spark pack, layer 14 a FIFO (the probe must not block on it).
  writeVersion1Shard(join(m.realDir('spark4'), miaShardName(1, 3, 4)), {
    layer: 1,
    rank: 3,
    world: 4,
    start: Math.floor((n1 * 3) / 4),
    end: n1,
    total: n1,
  });
  const fifo = join(m.realDir('spark4'), miaShardName(14, 3, 4));
  rmSync(fifo);
  execFileSync('mkfifo', [fifo]);

  const r = await check(m);
  assert.deepEqual(
    kinds(r),
    [0, 1, 2, 2, 3, 3].map((n) => ['mia.packs', 'error', n]),
    dump(r),
  );
  const abort = ": the Mia stack's reader aborts on it, and the rank dies at boot$";
  const world = on(
    r,
    'mia.packs',
    'error',
    0,
    new RegExp(
      `^${esc(path(m, 1, 0))} on node 0 \\(spark1\\) is not layer 1's pack for this rank: rows \\[0, ${Math.floor(n1 / 2)}\\), expected \\[0, ${Math.floor(n1 / 4)}\\) \\(rank 0 of 2's rows; this is rank 0 of 4\\)${abort}`,
    ),
  );
  assert.equal(world.where, path(m, 1, 0));
  assert.match(
    world.fix,
    new RegExp(
      `^re-pack it: spark pack \\S+/snapshots/${REVISION} --out ${esc(m.nodeDir)} --rank 0 --world 4 --layout dense --force$`,
    ),
  );
  on(
    r,
    'mia.packs',
    'error',
    1,
    new RegExp(
      `^${esc(path(m, 14, 1))} on node 1 \\(spark2\\) is not layer 14's pack for this rank: rows \\[0, ${Math.floor(n14 / 4)}\\), expected \\[${Math.floor(n14 / 4)}, ${Math.floor(n14 / 2)}\\) \\(rank 0 of 4's rows; this is rank 1 of 4\\)${abort}`,
    ),
  );
  const node2 = r.findings.filter((f) => f.node?.rank === 2).map((f) => f.message);
  assert.ok(
    node2.some((msg) =>
      new RegExp(
        `^${esc(path(m, 14, 2))} on node 2 \\(spark3\\) is truncated: ${size - 100} bytes, shorter than the ${size} its rows need${abort}`,
      ).test(msg),
    ),
    dump(r),
  );
  assert.ok(
    node2.some((msg) =>
      new RegExp(
        `^${esc(path(m, 1, 2))} on node 2 \\(spark3\\) is truncated: 20 bytes, shorter than the 4096-byte header${abort}`,
      ).test(msg),
    ),
    dump(r),
  );
  const node3 = r.findings.filter((f) => f.node?.rank === 3);
  const v1 = node3.find((f) => f.where === path(m, 1, 3))!;
  assert.match(
    v1.message,
    new RegExp(
      `^${esc(path(m, 1, 3))} on node 3 \\(spark4\\) is a spark pack of format version 1: a JSON header where the stack reads its binary one${abort}`,
    ),
  );
  assert.match(
    v1.fix,
    new RegExp(
      `^re-pack it: spark pack \\S+/snapshots/${REVISION} --out ${esc(m.nodeDir)} --rank 3 --world 4 --layout dense --force$`,
    ),
  );
  const pipe = node3.find((f) => f.where === path(m, 14, 3))!;
  assert.match(
    pipe.message,
    /engram-l14-r3of4\.bin on node 3 \(spark4\) is not a regular file \(a FIFO blocks the reader, a device is read as rows\): the Mia stack's reader cannot attach it, and the rank fails or hangs at boot$/,
  );
  assert.match(pipe.fix, /^remove it \(rm -r \S+engram-l14-r3of4\.bin\), then: spark pack /);
});

test('resident scales on while packs are attached: a warning where they are on (set, or unset: the default), none where off', async () => {
  const m = await defaultMia();
  await packAll(m);
  // The recipe without the key; node 0 and 1 set it off their two other ways, node 2 sets it on, node 3 leaves the default.
  const unset = edit(m.recipeText, 'DSV41_RESIDENT_SCALES = "0"\n', '');
  const r = await check(m, unset, {
    spark1: { DSV41_RESIDENT_SCALES: 'off' },
    spark2: { DSV41_RESIDENT_SCALES: 'false' },
    spark3: { DSV41_RESIDENT_SCALES: '1' },
  });
  assert.deepEqual(
    kinds(r),
    [2, 3].map((n) => ['mia.resident-scales', 'warn', n]),
    dump(r),
  );
  const owned = [1, 14].reduce(
    (a, l) => a + Math.floor((m.rows.get(l)! * 3) / 4) - Math.floor((m.rows.get(l)! * 2) / 4),
    0,
  );
  const set = on(
    r,
    'mia.resident-scales',
    'warn',
    2,
    new RegExp(
      `^DSV41_RESIDENT_SCALES=1 \\(set in the node's \\[nodes\\.env\\]\\) is not 0, off or false: with the packs in ${esc(m.nodeDir)} attached on node 2 \\(spark3\\) the stack still pins rank 2's scale rows, ` +
        `${esc(formatBytes(owned * 8))} of GPU memory for nothing \\(8 bytes a row of layer 1 and 14\\)$`,
    ),
  );
  assert.match(set.where, /cluster-fake-\d+\.toml:\d+$/);
  assert.equal(set.fix, "set DSV41_RESIDENT_SCALES=0 in the env file (or the recipe's [env])");
  on(r, 'mia.resident-scales', 'warn', 3, /^DSV41_RESIDENT_SCALES is not set, and the stack pins by default: /);
});

test('no O_DIRECT on a node: a warning naming the silent cost; a damaged pack there is a warning, not an abort', async () => {
  const m = await defaultMia();
  await packAll(m);
  m.c.setODirect('spark2', false);
  m.c.setODirect('spark3', false);
  truncateSync(join(m.realDir('spark3'), miaShardName(1, 2, 4)), 5000);
  try {
    const r = await check(m);
    assert.deepEqual(
      kinds(r),
      [
        ['mia.packs', 'warn', 2],
        ['mia.o-direct', 'warn', 1],
        ['mia.o-direct', 'warn', 2],
      ],
      dump(r),
    );
    const f = on(
      r,
      'mia.o-direct',
      'warn',
      1,
      new RegExp(
        `^engram-l1-r1of4\\.bin and engram-l14-r1of4\\.bin in ${esc(m.nodeDir)} on node 1 \\(spark2\\) cannot be opened with O_DIRECT: the Mia stack's reader sees no pack there and the stack then serves its rows from the checkpoint, two reads a row instead of one, silently$`,
      ),
    );
    assert.equal(f.where, path(m, 1, 1));
    on(
      r,
      'mia.packs',
      'warn',
      2,
      /is truncated: 5000 bytes, .*: the reader would abort on it, and does not only because its filesystem refuses O_DIRECT \(see mia\.o-direct\)$/,
    );
  } finally {
    m.c.setODirect('spark2', true);
    m.c.setODirect('spark3', true);
  }
});

test('an identity.json that disagrees with the packs beside it: a warning naming each field; one that agrees: none', async () => {
  const m = await defaultMia();
  await packAll(m);
  const rows = Object.fromEntries([...m.rows].map(([l, n]) => [String(l), n]));
  for (const h of m.c.hosts)
    writeFileSync(
      join(m.realDir(h.name), 'identity.json'),
      JSON.stringify({ format: 'DSV41EN1', tp: 4, revision: REVISION, rows }),
    );
  writeFileSync(
    join(m.realDir('spark3'), 'identity.json'),
    JSON.stringify({ format: 'DSV41EN1', tp: 3, rows: { ...rows, 14: 5 } }),
  );
  writeFileSync(join(m.realDir('spark4'), 'identity.json'), '{"format": "DSV41EN1", "tp": 4,');
  const r = await check(m);
  assert.deepEqual(
    kinds(r),
    [2, 3].map((n) => ['mia.identity', 'warn', n]),
    dump(r),
  );
  on(
    r,
    'mia.identity',
    'warn',
    2,
    new RegExp(
      `^${esc(join(m.nodeDir, 'identity.json'))} on node 2 \\(spark3\\) disagrees with the packs beside it: tp 3, the packs here are for tp 4; rows of layer 14 5, the pack's header says ${m.rows.get(14)}; the sparkrun registry's preparation refuses such a directory$`,
    ),
  );
  on(r, 'mia.identity', 'warn', 3, /identity\.json on node 3 \(spark4\) is not a JSON object \(/);
});

test('spark on the nodes answers alike: good packs pass, a renamed world-2 pack aborts its rank', async () => {
  const m = await mia(defaultHosts().map((h) => ({ ...h, spark: 'real' as const })));
  await packAll(m);
  renameSync(join(m.realDir('spark2'), miaShardName(1, 1, 4)), join(m.realDir('spark2'), 'moved-away'));
  await writeMiaPack(m.realDir('spark2'), m.snapshot, { rank: 1, world: 2, nameWorld: 4, layers: [1] });
  const r = await check(m);
  assert.deepEqual(
    r.nodes.map((n) => n.via),
    ['spark', 'spark', 'spark', 'spark'],
  );
  // spark opens the files itself here: the test machine's filesystem decides O_DIRECT, on every node alike.
  const direct = r.findings.filter((f) => f.rule === 'mia.o-direct');
  assert.ok(direct.length === 0 || direct.length === 4, dump(r));
  const others = r.findings.filter((f) => f.rule !== 'mia.o-direct');
  const severity = direct.length === 0 ? 'error' : 'warn';
  assert.deepEqual(kinds({ ...r, findings: others }), [['mia.packs', severity, 1]], dump(r));
  assert.match(
    others[0]!.message,
    /engram-l1-r1of4\.bin on node 1 \(spark2\) is not layer 1's pack for this rank: rows \[\d+, \d+\), expected \[\d+, \d+\) \(rank 1 of 2's rows; this is rank 1 of 4\)/,
  );
});
