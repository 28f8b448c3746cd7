// Preflight of spark's row libraries mounted over the stacks' own, on a fake cluster of 4 nodes:
// the sparklib recipe mounts each node's libengram_rows.so over the overlay's image path, and a
// second mount puts librow_store.so over the Mia stack's. The files are the real builds and
// broken ones; each case has its exact finding, on the node it concerns, whichever way the
// node's facts were gathered (the sh command, or spark on the node). One run here holds a
// failing case of each rule, two of its nodes answering through spark; each broken file alone,
// aarch64 nodes and the bounds are in test/long/preflight-engine-lib-scenarios.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../src/addon/index.js';
import { cli } from '../helpers/cli.js';
import { LIBRARIES } from '../helpers/engine-lib.js';
import { defaultHosts } from '../helpers/fake-cluster.js';
import { check, defaultLibs, dump, kinds, libs, on, place, RULES, SPARKLIB } from '../helpers/preflight-engine-lib.js';

test('the built libraries on every node: the four rules ran, no finding', async () => {
  const l = await defaultLibs();
  place(l, LIBRARIES);
  const r = await check(l);
  assert.deepEqual(r.findings, [], dump(r));
  assert.deepEqual(r.ran, RULES);
  assert.deepEqual(r.skipped, []);
});

test('one run with a failing case of each rule, on its own node, two nodes answering through spark', async () => {
  // spark2 and spark4 run spark, which reads their files itself; spark1 and spark3 answer the sh command.
  const l = await libs(defaultHosts().map((h, i) => (i % 2 === 1 ? { ...h, spark: 'real' as const } : h)));
  place(l, LIBRARIES);
  const overlay = (host: string) => join(l.realDir(host), 'libengram_rows.so');
  writeFileSync(overlay('spark1'), 'not a library\n');
  copyFileSync(LIBRARIES.mia, overlay('spark2'));
  // The same library with bytes appended past its sections: still a good ELF, another sha256.
  writeFileSync(
    join(l.realDir('spark3'), 'librow_store.so'),
    Buffer.concat([readFileSync(LIBRARIES.mia), Buffer.from('x')]),
  );
  // spark.node exports far more than the ABI, none of it the ABI's, and needs libstdc++.
  copyFileSync(join(packageRoot(), 'build', 'Release', 'spark.node'), overlay('spark4'));
  const r = await check(l);
  assert.deepEqual(
    r.nodes.map((n) => n.via),
    ['probe', 'spark', 'probe', 'spark'],
  );
  const copy = new RegExp(`^spark engine-lib --stack overlay --copy ${l.dir} on that node$`);
  on(
    r,
    'enginelib.file',
    0,
    new RegExp(
      `^${l.dir}/libengram_rows.so on node 0 \\(spark1\\) \\(mounted over /opt/dsv41-spark/overlay/libengram_rows.so\\) is not an ELF file`,
    ),
    copy,
  );
  on(r, 'enginelib.abi', 1, /is librow_store\.so, the other stack's library/, copy);
  on(
    r,
    'enginelib.same-build',
    2,
    /librow_store\.so on node 2 \(spark3\) \(mounted over \/opt\/dsv41\/adapter\/librow_store\.so\) is another build \(sha256 [0-9a-f]{12}…\) than on node 0 \(spark1\), node 1 \(spark2\), node 3 \(spark4\)/,
    new RegExp(`^spark engine-lib --stack mia --copy ${l.dir} on that node, with the spark`),
  );
  on(
    r,
    'enginelib.abi',
    3,
    /does not export engram_rows_abi_version, .*: the stack looks every ABI symbol up at import and fails; exports symbols beyond the ABI \(_ZN5spark.*\): not a build of native\/engine-libs\/overlay$/,
    copy,
  );
  on(r, 'enginelib.loads', 3, /needs libstdc\+\+\.so\.6/, copy);
  assert.deepEqual(
    kinds(r),
    [
      ['enginelib.file', 'error', 0],
      ['enginelib.abi', 'error', 1],
      ['enginelib.abi', 'error', 3],
      ['enginelib.loads', 'error', 3],
      ['enginelib.same-build', 'error', 2],
    ],
    dump(r),
  );
});

test('launch --dry-run shows the library mount on every node', async () => {
  const r = await cli(['launch', SPARKLIB, '--cluster', 'recipes/clusters/4node-switch.toml', '--dry-run'], {
    HOME: '/home/op',
  });
  assert.equal(r.code, 0, r.stderr);
  const mount =
    'type=bind,source=/var/lib/spark/lib/libengram_rows.so,target=/opt/dsv41-spark/overlay/libengram_rows.so,readonly';
  assert.equal(r.stdout.split(mount).length - 1, 4, r.stdout);
});
