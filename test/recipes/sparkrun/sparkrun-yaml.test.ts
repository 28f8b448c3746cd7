// How spark reads YAML (sparkrun recipes, sparkrun clusters, sparkrun's config.yaml): merge keys
// as sparkrun's YAML 1.1 loader resolves them, one set of parse options for every file, and
// refusals (a duplicate key, a quoted `<<`) that name the key, the file and the line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseSparkrunCluster, readSparkrunSettings } from '../../../src/recipes/sparkrun/cluster.js';
import { parseYamlDocument } from '../../../src/recipes/sparkrun/yaml-document.js';
import { cli } from '../../helpers/cli.js';
import { world, write } from '../../helpers/preflight.js';
import { tempDir } from '../../helpers/tmp.js';

const HOME = '/home/spark';

/** A recipe whose defaults come from an anchored map through a merge key, one of them overridden. */
const MERGED = (port: number) => `recipe_version: "2"
runtime: sglang
model: deepseek-ai/DeepSeek-V4.1-Flash
container: lmsysorg/sglang:dev-dsv41
base: &base
  port: ${port}
  tensor_parallel: 2
  gpu_memory_utilization: 0.7
defaults:
  <<: *base
  gpu_memory_utilization: 0.8
`;

test('a merge key in defaults is resolved as sparkrun resolves it: 2 nodes, --tp-size 2, the own key wins, no "--<<"', async () => {
  const w = await world();
  const cluster = w.writeCluster({ nodes: 2 });
  const file = write(join(w.root, 'sparkrun', 'merged', 'recipe.yaml'), MERGED(w.servingPort));
  const r = await cli(['launch', file, '--cluster', cluster, '--dry-run', '--json'], { HOME });
  assert.equal(r.code, 0, r.stderr);
  const plan = JSON.parse(r.stdout) as { nodes: { argv: string[] }[] };
  assert.equal(plan.nodes.length, 2);
  const argv = plan.nodes[0]!.argv;
  const after = argv.slice(argv.indexOf('lmsysorg/sglang:dev-dsv41') + 1);
  assert.ok(!after.some((a) => a.includes('<<')), after.join(' '));
  assert.equal(after[after.indexOf('--tp-size') + 1], '2');
  assert.equal(after[after.indexOf('--mem-fraction-static') + 1], '0.8');
  assert.equal(after[after.indexOf('--port') + 1], String(w.servingPort));

  // A merged key is placed where the anchored map wrote it (line 7), an own key on its own line.
  const doc = parseYamlDocument(MERGED(1), 'r.yaml', 'E_RECIPE');
  const defaults = doc.root.keys.get('defaults')!;
  assert.deepEqual(
    [...defaults.keys].map(([k, p]) => [k, p.line]),
    [
      ['port', 6],
      ['tensor_parallel', 7],
      ['gpu_memory_utilization', 11],
    ],
  );
  assert.deepEqual(doc.value, {
    recipe_version: '2',
    runtime: 'sglang',
    model: 'deepseek-ai/DeepSeek-V4.1-Flash',
    container: 'lmsysorg/sglang:dev-dsv41',
    base: { port: 1, tensor_parallel: 2, gpu_memory_utilization: 0.7 },
    defaults: { port: 1, tensor_parallel: 2, gpu_memory_utilization: 0.8 },
  });
});

test('merge keys: a list of maps (the earlier wins), an own key before the merge still wins, nested merges', () => {
  const doc = parseYamlDocument(
    'a: &a {x: 1, y: 1}\nb: &b {<<: *a, y: 2, z: 2}\nc:\n  w: 0\n  x: 9\n  <<: [*b, {w: 5, v: 5}]\n',
    'm.yaml',
    'E_RECIPE',
  );
  assert.deepEqual((doc.value as Record<string, unknown>).c, { w: 0, x: 9, y: 2, z: 2, v: 5 });
  const c = doc.root.keys.get('c')!;
  assert.deepEqual([...c.keys].map(([k, p]) => [k, p.line]).sort(), [
    ['v', 6],
    ['w', 4],
    ['x', 5],
    ['y', 2],
    ['z', 2],
  ]);
});

test("a sparkrun cluster file and sparkrun's config.yaml resolve merge keys too (one set of parse options)", async () => {
  const cluster = parseSparkrunCluster(
    'x-common: &common\n  user: alice\n  transfer_interface: mgmt\nname: lab\n<<: *common\nhosts:\n  - spark1\n  - spark2\n',
    '/c/lab.yaml',
  );
  assert.deepEqual(
    cluster.hosts.map((h) => h.host),
    ['alice@spark1', 'alice@spark2'],
  );
  assert.equal(cluster.transferInterface, 'mgmt');
  assert.deepEqual(
    cluster.diagnostics.map((d) => d.key),
    ['x-common'],
  );

  const home = tempDir('spark-yaml-home-');
  write(
    join(home, '.config', 'sparkrun', 'config.yaml'),
    'shared: &shared\n  user: bob\nssh:\n  <<: *shared\n  key: ~/.ssh/id\nhf_cache_dir: /mnt/hf\n',
  );
  assert.deepEqual(await readSparkrunSettings(home), { sshUser: 'bob', hfCacheDir: '/mnt/hf' });

  // The one place YAML is parsed: every reader goes through parseYamlDocument and its options.
  const sources = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
    );
  const parsers = sources('src').filter((f) => /from 'yaml'/.test(readFileSync(f, 'utf8')));
  assert.deepEqual(parsers, [join('src', 'recipes', 'sparkrun', 'yaml-document.ts')]);
});

const HEAD = 'recipe_version: "2"\nruntime: sglang\nmodel: org/model\ncontainer: img:1\n';

test('a refused key names itself, its file and its line (exit 2)', async () => {
  const dir = tempDir('spark-yaml-keys-');
  const cases: [string, string, string][] = [
    [
      'duplicate',
      `${HEAD}defaults:\n  port: 30000\n  tensor_parallel: 4\n  port: 30001\n`,
      ':8: invalid YAML: the key defaults.port is written twice (lines 6 and 8); map keys must be unique: keep one',
    ],
    [
      'duplicate-top',
      `${HEAD}model: other/model\n`,
      ':5: invalid YAML: the key model is written twice (lines 3 and 5); map keys must be unique: keep one',
    ],
    [
      'duplicate-number-and-string',
      `${HEAD}metadata:\n  1: a\n  "1": b\n`,
      ':7: invalid YAML: the key metadata.1 is written twice (lines 6 and 7); map keys must be unique: keep one',
    ],
    [
      'duplicate-quoted',
      `${HEAD}env:\n  A: x\n  "A": y\n`,
      ':7: invalid YAML: the key env.A is written twice (lines 6 and 7); map keys must be unique: keep one',
    ],
    [
      'quoted-merge',
      `${HEAD}defaults:\n  "<<": {port: 1}\n`,
      ':6: invalid YAML: the key defaults.<< is quoted, so sparkrun reads a key named "<<", not a merge; write <<: *anchor unquoted to merge a map, or rename the key',
    ],
    [
      'merge-scalar',
      `${HEAD}defaults:\n  <<: 5\n`,
      ':6: invalid YAML: the merge key defaults.<< must name a map (<<: *anchor) or a list of them (<<: [*a, *b])',
    ],
    [
      'merge-nowhere',
      `${HEAD}defaults:\n  <<: *nowhere\n`,
      ':6: invalid YAML: Unresolved alias: nowhere; define the anchor &nowhere above it, or write the value out',
    ],
    [
      'duplicate-flow',
      `${HEAD}defaults: {port: 1, port: 2}\n`,
      ':5: invalid YAML: the key defaults.port is written twice (both on line 5); map keys must be unique: keep one',
    ],
    [
      'list-key',
      `${HEAD}? [1, 2]\n: x\n`,
      ':5: invalid YAML: a key must be a plain word or a quoted string, not a list or a map',
    ],
  ];
  for (const [name, text, expected] of cases) {
    const file = write(join(dir, `${name}.yaml`), text);
    const r = await cli(['preflight', file], { HOME });
    assert.equal(r.code, 2, `${name}: ${r.stderr}`);
    assert.equal(r.stderr, `spark: ${file}${expected}\n`, name);
  }
});
