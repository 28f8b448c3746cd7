// One table of RoCE GID cases (test/fixtures/gid-choice.json) run against every implementation
// of the choice: `spark wrapper` (src/net/gid.ts) and the --emit-sh script's scan
// (src/wrapper/gid-scan.sh) under sh, dash and bash. Each must give every case's exit code and
// exported B12X_ROCE_GID_INDEX.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runEmitSh } from '../../src/commands/wrapper.js';
import type { LayerLoader } from '../../src/wrapper/plan.js';
import { packageRoot } from '../../src/addon/index.js';
import { buildSysfs, type FakePort } from '../helpers/sysfs.js';
import { outcome, quietIo, viaNode, viaSh } from '../helpers/wrapper-outcome.js';
import { tempDir } from '../helpers/tmp.js';
import { needs } from '../helpers/external-tool.js';
import { distinctShells } from '../helpers/shells.js';

interface GidCase {
  tree: string | null;
  env: Record<string, string>;
  code: number;
  gid?: string;
}

interface GidTable {
  ports: Record<string, FakePort>;
  trees: Record<string, Record<string, Record<string, string>>>;
  cases: GidCase[];
}

const TABLE = JSON.parse(readFileSync(join(packageRoot(), 'test', 'fixtures', 'gid-choice.json'), 'utf8')) as GidTable;
// dash and bash, and /bin/sh when it is neither (helpers/shells.ts).
const SHELLS = distinctShells(['/usr/bin/dash', '/bin/bash', '/bin/sh']);
const load: LayerLoader = async (dir) => ({ kind: 'snapshot', path: dir, layers: [{ layer: 1, rows: 1000 }] });

function sysfsOf(tree: string): string {
  const ports = TABLE.trees[tree];
  assert.ok(ports, `no tree ${tree}`);
  const devices = Object.fromEntries(
    Object.entries(ports).map(([hca, byPort]) => [
      hca,
      Object.fromEntries(
        Object.entries(byPort).map(([port, name]) => [
          Number(port),
          TABLE.ports[name] ?? assert.fail(`no port ${name}`),
        ]),
      ),
    ]),
  );
  return buildSysfs(devices);
}

test('every GID case gives the same exit code and index from the Node wrapper and the sh script in each shell', async (t) => {
  if (!needs(t, 'dash')) return;
  const script = join(tempDir(), 'spark-wrapper.sh');
  await runEmitSh({ snapshot: '/snap', world: '1', out: script }, quietIo({}), load);
  const trees = new Map(Object.keys(TABLE.trees).map((t) => [t, sysfsOf(t)]));
  assert.ok(TABLE.cases.length >= 30);
  for (const c of TABLE.cases) {
    const sysfs = c.tree === null ? join(tempDir(), 'no-sysfs') : trees.get(c.tree)!;
    const env = { NODE_RANK: '0', SPARK_WORLD_SIZE: '1', SPARK_SYSFS: sysfs, ...c.env };
    const what = `${c.tree} ${JSON.stringify(c.env)}`;
    const node = await viaNode([], env, load);
    assert.equal(node.code, c.code, `Node, ${what}`);
    if (c.gid !== undefined) assert.equal(node.gid, c.gid, `Node, ${what}`);
    for (const shell of SHELLS) {
      const sh = viaSh(shell, script, [], env);
      assert.deepEqual(outcome(sh), node, `${shell}, ${what}: sh and Node differ (${sh.stderr})`);
    }
  }
});
