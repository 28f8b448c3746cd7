// spark fanout install on fake nodes, the rest of test/bundle/fanout-install.test.ts: a node
// whose install fails after the copy (its lib directory or its bin directory cannot be made)
// keeps the version it had, and the others move on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { A, B, bundles, LIB, setup } from '../helpers/fanout-install.js';

test('a node whose install fails keeps the version it had and says why; the others move on', async (t) => {
  if (!bundles) return t.skip('builds an x64 bundle');
  const s = setup();
  const first = await cli(['fanout', 'install', bundles.a, '--cluster', s.cluster, '--lib-dir', LIB], s.env);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /3 of 3 node\(s\) run spark 0\.1\.0\+aaaaaaaaaaaa/);
  // spark3's lib dir cannot be made (a file is in the way): its install fails after the copy.
  const blocked = s.libOf('spark3');
  const libs = readdirSync(blocked);
  for (const l of libs) spawnSync('rm', [join(blocked, l)]);
  spawnSync('rmdir', [blocked]);
  writeFileSync(blocked, 'in the way');
  const second = await cli(['fanout', 'install', bundles.b, '--cluster', s.cluster, '--lib-dir', LIB], s.env);
  assert.equal(second.code, 3);
  assert.match(second.stderr, /node 2 \(spark3\): cannot create \S+lib; the previous version stays/);
  assert.equal(s.version('spark1'), `0.1.0+${B.slice(0, 12)}`);
  assert.equal(s.version('spark2'), `0.1.0+${B.slice(0, 12)}`);
  assert.equal(s.version('spark3'), `0.1.0+${A.slice(0, 12)}`);
  // The summary table names the previous version of the nodes that moved.
  assert.match(second.stderr, /^0\s+spark1\s+installed\s+0\.1\.0\+bbbbbbbbbbbb\s+0\.1\.0-aaaaaaaaaaaa-x64/m);
});

test('a node whose new spark cannot be put on PATH: current points back and the lib directory keeps its libraries', async (t) => {
  if (!bundles) return t.skip('builds an x64 bundle');
  const s = setup();
  const first = await cli(['fanout', 'install', bundles.a, '--cluster', s.cluster, '--lib-dir', LIB], s.env);
  assert.equal(first.code, 0, first.stderr);
  const lib = s.libOf('spark2');
  const inodes = () => readdirSync(lib).map((f) => `${f} ${statSync(join(lib, f)).ino}`);
  const before = inodes();
  // spark2's bin directory is a file: the switch to B is made, then undone.
  const bin = join(s.homes.get('spark2')!, '.local', 'bin');
  spawnSync('rm', ['-r', bin]);
  writeFileSync(bin, 'in the way');
  const second = await cli(['fanout', 'install', bundles.b, '--cluster', s.cluster, '--lib-dir', LIB], s.env);
  assert.equal(second.code, 3, second.stderr);
  assert.match(second.stderr, /node 1 \(spark2\): cannot create \S+bin; the previous version stays/);
  assert.match(readlinkSync(join(s.homes.get('spark2')!, '.local', 'share', 'spark', 'current')), /-aaaaaaaaaaaa-x64$/);
  // The same files, not replaced (each rename would be a new inode), and nothing staged left.
  assert.deepEqual(inodes(), before);
  assert.equal(s.version('spark1'), `0.1.0+${B.slice(0, 12)}`);
});
