// A sparkrun YAML recipe and the equivalent spark TOML recipe, side by side: every preflight
// rule gives the same findings (rule, severity, message, fix, node; `where` names each file's
// own line) and `spark launch --dry-run --json` the same per-node argv. The pairs: the users'
// seed recipes against their hand-written YAML translations (test/fixtures/sparkrun/), the
// broken variants the rule tests use (their YAML made by spark recipe convert), and each
// seed converted both ways.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAnyRecipe } from '../../../src/recipes/index.js';
import { toSparkrunYaml, toToml } from '../../../src/recipes/sparkrun/convert.js';
import type { Finding } from '../../../src/preflight/index.js';
import { cli } from '../../helpers/cli.js';
import { edit, preflight, world, write, type World } from '../../helpers/preflight.js';
import { seedYaml } from '../../helpers/sparkrun.js';

/** A finding with its recipe line replaced by a marker, after checking the line is in the file. */
function comparable(f: Finding, file: string): Omit<Finding, 'where'> & { where: string } {
  const lines = readFileSync(file, 'utf8').split('\n').length;
  let where = f.where;
  if (where.startsWith(`${file}:`)) {
    const line = Number(where.slice(file.length + 1));
    assert.ok(line >= 1 && line <= lines, `${f.rule}: line ${line} is not a line of ${file}`);
    where = 'RECIPE:line';
  } else if (where === file) {
    where = 'RECIPE';
  }
  // A message may name the recipe line too ("... (line 104)"): a line of this file, then a marker.
  const message = f.message.replace(/\(line (\d+)\)/g, (_m, n: string) => {
    assert.ok(Number(n) >= 1 && Number(n) <= lines, `${f.rule}: line ${n} in its message is not a line of ${file}`);
    return '(line RECIPE-line)';
  });
  return {
    ...f,
    where,
    message: message
      .split(`${file}:`)
      .map((part, i) => (i === 0 ? part : part.replace(/^\d+/, 'line')))
      .join('RECIPE:')
      .split(file)
      .join('RECIPE'),
  };
}

async function findings(w: World, file: string, cluster: string): Promise<ReturnType<typeof comparable>[]> {
  const report = await preflight(w.options(file, { cluster }));
  return report.findings.map((f) => comparable(f, file));
}

async function dryRunArgv(file: string, cluster: string): Promise<string[][]> {
  const r = await cli(['launch', file, '--cluster', cluster, '--dry-run', '--json'], { HOME: '/home/spark' });
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { nodes: { argv: string[] }[] }).nodes.map((n) => n.argv);
}

async function samePreflight(w: World, toml: string, yaml: string, nodes: number, name: string): Promise<void> {
  const cluster = nodes === 4 ? w.cluster : w.writeCluster({ nodes });
  const tomlFile = w.recipe(toml, `${name}-toml`);
  const yamlFile = write(join(w.root, 'recipes', `${name}-yaml`, 'recipe.yaml'), yaml);
  assert.deepEqual(
    await findings(w, yamlFile, cluster),
    await findings(w, tomlFile, cluster),
    `${name}: findings differ`,
  );
  assert.deepEqual(await dryRunArgv(yamlFile, cluster), await dryRunArgv(tomlFile, cluster), `${name}: argv differ`);
}

test('the seed recipes and their YAML translations: same findings, same argv', async () => {
  const w = await world();
  await samePreflight(w, w.dsv41Text, seedYaml(w, 'dsv41-flash-4x-sglang-aiden16'), 4, 'seed-dsv41');
  await samePreflight(w, w.eugrText, seedYaml(w, 'deepseek-v4-flash-eugr-agent'), 2, 'seed-eugr');
});

/**
 * The rule tests' broken variants of the seeds (test/preflight/preflight-rules.test.ts), one edit each.
 * Not here: a swallowed key (YAML has no table headers) and required_nodes ≠ tp × pp (a
 * sparkrun recipe has no node count of its own; the converter says so in a comment).
 */
const BROKEN: { name: string; seed: 'dsv41' | 'eugr'; from: string; to: string; nodes?: number }[] = [
  {
    name: 'port in args',
    seed: 'dsv41',
    from: '"--trust-remote-code",',
    to: '"--trust-remote-code",\n    "--port", "30001",',
  },
  {
    name: 'cuda graph bs',
    seed: 'dsv41',
    from: '"--cuda-graph-max-bs-decode", "16"',
    to: '"--cuda-graph-max-bs-decode", "8"',
  },
  { name: 'no shm', seed: 'dsv41', from: 'shm_size = "32gb"\n', to: '' },
  {
    name: 'addr range',
    seed: 'dsv41',
    from: 'NCCL_IB_ADDR_RANGE = "192.168.200.0/24"',
    to: 'NCCL_IB_ADDR_RANGE = "192.168.20.0/24"',
  },
  { name: 'context', seed: 'dsv41', from: '"--context-length", "524288"', to: '"--context-length", "2M"' },
  {
    name: 'engram dir',
    seed: 'dsv41',
    from: 'snapshots/dba1be0a40aa45a94ad051997016db3960a90277',
    to: 'snapshots/0000000000000000000000000000000000000000',
  },
  {
    name: 'hca',
    seed: 'dsv41',
    from: 'NCCL_IB_HCA = "rocep1s0f0,roceP2p1s0f0"',
    to: 'NCCL_IB_HCA = "rocep1s0f0,roceP9p1s0f0"',
  },
  { name: 'gid', seed: 'dsv41', from: 'NCCL_NET = "IB"', to: 'NCCL_NET = "IB"\nNCCL_IB_GID_INDEX = "5"' },
  { name: 'ifname', seed: 'dsv41', from: 'NCCL_SOCKET_IFNAME = "enp1s0f0np0"', to: 'NCCL_SOCKET_IFNAME = "enp9s0"' },
  { name: 'ep size', seed: 'dsv41', from: '"--ep-size", "4"', to: '"--ep-size", "3"' },
  {
    name: 'alloc',
    seed: 'dsv41',
    from: 'CUDA_DEVICE_ORDER',
    to: 'PYTORCH_ALLOC_CONF = "expandable_segments:True"\nCUDA_DEVICE_ORDER',
  },
  {
    name: 'mem fraction',
    seed: 'dsv41',
    from: '"--mem-fraction-static", "0.80"',
    to: '"--mem-fraction-static", "0.97"',
  },
  { name: 'max seqs', seed: 'eugr', from: '"--max-num-seqs", "6"', to: '"--max-num-seqs", "8"', nodes: 2 },
  {
    name: 'gpu util',
    seed: 'eugr',
    from: '"--gpu-memory-utilization", "0.78"',
    to: '"--gpu-memory-utilization", "0.92"',
    nodes: 2,
  },
  { name: 'bad json', seed: 'eugr', from: '"B12X_MLA_SPARSE"}\'', to: '"B12X_MLA_SPARSE"\'', nodes: 2 },
];

for (const b of BROKEN) {
  test(`broken variant (${b.name}): the TOML and its sparkrun YAML give the same findings and argv`, async () => {
    const w = await world();
    const toml = edit(b.seed === 'dsv41' ? w.dsv41Text : w.eugrText, b.from, b.to);
    const yaml = toSparkrunYaml(await parseAnyRecipe(toml, 'recipe.toml'));
    await samePreflight(w, toml, yaml, b.nodes ?? (b.seed === 'dsv41' ? 4 : 2), `broken-${b.name.replace(/ /g, '-')}`);
  });
}

test('spark recipe convert both ways: each seed preflights the same after a round trip', async () => {
  const w = await world();
  for (const [seed, nodes, name] of [
    [w.dsv41Text, 4, 'dsv41'],
    [w.eugrText, 2, 'eugr'],
  ] as const) {
    const yaml = toSparkrunYaml(await parseAnyRecipe(seed, 'recipe.toml'));
    await samePreflight(w, seed, yaml, nodes, `convert-${name}`);
    const back = toToml(await parseAnyRecipe(yaml, 'recipe.yaml'));
    await samePreflight(w, back, yaml, nodes, `convert-back-${name}`);
  }
  const fixture = seedYaml(w, 'dsv41-flash-4x-sglang-aiden16');
  await samePreflight(w, toToml(await parseAnyRecipe(fixture, 'recipe.yaml')), fixture, 4, 'convert-fixture');
});

test('spark recipe convert writes what has no counterpart as a comment', async () => {
  const w = await world();
  const yaml = toSparkrunYaml(await parseAnyRecipe(w.dsv41Text, 'recipe.toml'));
  assert.match(
    yaml,
    /^# - parent_model = "deepseek-ai\/DeepSeek-V4\.1-Flash" \(spark reads it to tell the model family/m,
  );
  const withMods = `${seedYaml(w, 'deepseek-v4-flash-eugr-agent').replace('runtime: vllm', 'runtime: vllm-distributed')}mods:\n  - engram-pack\npost_exec:\n  - echo up\n`;
  const toml = toToml(await parseAnyRecipe(withMods, 'recipe.yaml'));
  assert.match(toml, /^# - line \d+: mods: engram-pack: sparkrun copies this mod into every container/m);
  assert.match(toml, /^# - line \d+: post_exec: sparkrun runs these commands/m);
  // The comments are comments: the result is a recipe spark reads.
  assert.equal((await parseAnyRecipe(toml, 'r.toml')).recipe.engine, 'vllm');
});

test('spark recipe convert on the command line: --out writes a new file (never over one without --force), the same format is refused', async () => {
  const w = await world();
  const toml = w.recipe(w.eugrText, 'cli-convert');
  const out = join(w.root, 'cli-convert.yaml');
  const r = await cli(['recipe', 'convert', toml, '--out', out]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim(), `wrote ${out} (yaml)`);
  assert.equal(readFileSync(out, 'utf8'), toSparkrunYaml(await parseAnyRecipe(w.eugrText, toml)));
  const again = await cli(['recipe', 'convert', toml, '--out', out]);
  assert.equal(again.code, 2);
  assert.match(again.stderr, /exists; choose another --out, or pass --force/);
  assert.equal((await cli(['recipe', 'convert', toml, '--out', out, '--force'])).code, 0);
  const same = await cli(['recipe', 'convert', out, '--to', 'yaml']);
  assert.equal(same.code, 2);
  assert.match(same.stderr, /is already YAML; --to yaml converts nothing/);
  const json = await cli(['recipe', 'convert', out, '--json']);
  const doc = JSON.parse(json.stdout) as { from: { format: string }; to: { format: string }; text: string };
  assert.deepEqual([doc.from.format, doc.to.format], ['yaml', 'toml']);
  assert.match(doc.text, /^engine = "vllm"$/m);
});
