// spark fanout install on fake nodes (fake ssh runs the real install script under sh, each
// host with its own $HOME and its own files under FAKE_ROOT): what lands on each node, a node
// whose ssh fails or whose install fails keeping its previous version, a copy cut short, and
// the dry run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { makeBundle } from '../helpers/bundle.js';
import { fakeNodes, type Behavior } from '../helpers/fake-node.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { installScript, readBundle } from '../../src/bundle/install.js';

const A = 'aaaaaaaaaaaa00000000000000000000000000aa';
const B = 'bbbbbbbbbbbb00000000000000000000000000bb';
const HOSTS = ['spark1', 'spark2', 'spark3'];
const ROOT = '/spark-fake-root';
const LIB = `${ROOT}/var/lib/spark/lib`;

const bundles =
  process.arch === 'x64' ? { a: makeBundle('x64', ['--commit', A]), b: makeBundle('x64', ['--commit', B]) } : undefined;

function setup(behavior: Behavior = {}) {
  const fake = fakeNodes();
  const dir = dirname(fake.bin);
  const homes = new Map<string, string>();
  for (const h of HOSTS) {
    const home = tempDir(`spark-home-${h}-`);
    fake.setHome(h, home);
    homes.set(h, home);
    mkdirSync(join(dir, 'hosts', h, 'root'), { recursive: true });
  }
  const cluster = join(tempDir('spark-install-cluster-'), 'c.toml');
  writeFileSync(
    cluster,
    `name = "three"\n` +
      HOSTS.map((h, i) => `[[nodes]]\nhost = "${h}"\nfabric_addr = "192.168.100.${i + 1}"\n`).join('\n'),
  );
  const env = fake.env(behavior, { FAKE_ROOT: ROOT });
  const version = (h: string) => {
    const link = join(homes.get(h)!, '.local', 'bin', 'spark');
    if (!existsSync(link)) return undefined;
    return spawnSync(link, ['--version'], { encoding: 'utf8' }).stdout.trim();
  };
  const libOf = (h: string) => join(dir, 'hosts', h, 'root', LIB.slice(ROOT.length + 1));
  return { fake, dir, homes, cluster, env, version, libOf };
}

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
