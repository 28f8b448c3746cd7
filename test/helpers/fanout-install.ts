// spark fanout install on three fake nodes (fake ssh runs the real install script under sh,
// each host with its own $HOME and its own files under FAKE_ROOT): two x64 bundles, the
// cluster, and where to look on each node.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { makeBundle } from './bundle.js';
import { fakeNodes, type Behavior } from './fake-node.js';
import { tempDir } from './tmp.js';

export const A = 'aaaaaaaaaaaa00000000000000000000000000aa';
export const B = 'bbbbbbbbbbbb00000000000000000000000000bb';
export const HOSTS = ['spark1', 'spark2', 'spark3'];
export const ROOT = '/spark-fake-root';
export const LIB = `${ROOT}/var/lib/spark/lib`;

/** Two bundles of different commits; none where the host cannot build an x64 bundle. */
export const bundles =
  process.arch === 'x64' ? { a: makeBundle('x64', ['--commit', A]), b: makeBundle('x64', ['--commit', B]) } : undefined;

export function setup(behavior: Behavior = {}) {
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
