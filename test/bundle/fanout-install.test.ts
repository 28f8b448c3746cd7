// spark fanout install on fake nodes (test/helpers/fanout-install.ts): what lands on each
// node, a node whose ssh fails, a copy cut short, and the dry run. A node whose install fails
// after the copy keeping its previous version: test/long/fanout-install-rollback.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { A, bundles, LIB, setup } from '../helpers/fanout-install.js';
import { tempDir } from '../helpers/tmp.js';
import { installScript, readBundle } from '../../src/bundle/install.js';

test('install on three nodes at once: each gets the tree, current, spark on PATH and the libraries; a node ssh cannot reach says so', async (t) => {
  if (!bundles) return t.skip('builds an x64 bundle');
  const s = setup({ 'spark2 ssh': { exit: 255, stderr: 'ssh: connect to host spark2 port 22: Connection refused\n' } });
  const r = await cli(['fanout', 'install', bundles.a, '--cluster', s.cluster, '--lib-dir', LIB, '--json'], s.env);
  assert.equal(r.code, 3, r.stderr);
  const err = JSON.parse(r.stderr.trim().split('\n').at(-1)!) as { error: { code: string; message: string } };
  assert.equal(err.error.code, 'E_NODE_FAILED');
  assert.match(
    err.error.message,
    /^install failed on 1 of 3 node\(s\): node 1 \(spark2\): ssh failed: ssh: connect to host spark2 port 22: Connection refused$/,
  );
  assert.match(r.stderr, /^1\s+spark2\s+failed/m);
  for (const h of ['spark1', 'spark3']) {
    assert.equal(s.version(h), `0.1.0+${A.slice(0, 12)}`, h);
    const share = join(s.homes.get(h)!, '.local', 'share', 'spark');
    assert.equal(readlinkSync(join(share, 'current')), `versions/0.1.0-${A.slice(0, 12)}-x64`);
    assert.deepEqual(readdirSync(share).sort(), ['current', 'versions'], 'no partial left');
    const manifest = JSON.parse(readFileSync(join(share, 'current', 'bundle.json'), 'utf8')) as { libs: string[] };
    for (const lib of manifest.libs)
      assert.deepEqual(
        readFileSync(join(s.libOf(h), lib.split('/').at(-1)!)),
        readFileSync(join(share, 'current', lib)),
      );
  }
  assert.equal(s.version('spark2'), undefined);
  // The bundle went through ssh's stdin: the destination after --, the script as sh -c's one argument.
  const ssh = s.fake.calls().filter((c) => c.prog === 'ssh');
  assert.equal(ssh.length, 3);
  for (const c of ssh) {
    const dd = c.argv.indexOf('--');
    assert.equal(c.argv[dd + 1], c.host);
    assert.match(c.argv[dd + 2]!, /^sh -c '/);
  }
});

test('a copy cut short: the node checks the size, changes nothing and removes what arrived', async (t) => {
  if (!bundles) return t.skip('builds an x64 bundle');
  const b = await readBundle(bundles.a);
  const home = tempDir('spark-home-cut-');
  const script = installScript(b, { libDir: join(home, 'lib') });
  const half = readFileSync(bundles.a).subarray(0, Math.floor(b.bytes / 2));
  const r = spawnSync('sh', ['-c', script], { input: half, env: { ...process.env, HOME: home }, encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(
    r.stderr,
    new RegExp(
      `install failed: received ${half.length} of ${b.bytes} bytes \\(the copy was cut\\); the previous version stays`,
    ),
  );
  assert.deepEqual(readdirSync(join(home, '.local', 'share', 'spark')), ['versions']);
  assert.equal(existsSync(join(home, 'lib')), false);
  // Bytes of the right size but not the bundle's: the sha256 says so.
  const bad = Buffer.from(readFileSync(bundles.a));
  bad[100] = bad[100]! ^ 1;
  const r2 = spawnSync('sh', ['-c', script], { input: bad, env: { ...process.env, HOME: home }, encoding: 'utf8' });
  assert.equal(r2.status, 1);
  assert.match(r2.stderr, /install failed: sha256 of what arrived is [0-9a-f]{64}, not [0-9a-f]{64}/);
});

test('--dry-run prints the plan and contacts no node; a file that is not a bundle is refused', async (t) => {
  if (!bundles) return t.skip('builds an x64 bundle');
  const s = setup();
  const r = await cli(['fanout', 'install', bundles.a, '--cluster', s.cluster, '--dry-run'], s.env);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /on each of 0 spark1, 1 spark2, 2 spark3, at once/);
  assert.match(r.stdout, /engine libraries to \/var\/lib\/spark\/lib/);
  assert.deepEqual(s.fake.calls(), []);
  const notBundle = join(tempDir('spark-notbundle-'), 'x.tgz');
  writeFileSync(notBundle, 'hello');
  const bad = await cli(['fanout', 'install', notBundle, '--cluster', s.cluster], s.env);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /not a spark bundle/);
});
