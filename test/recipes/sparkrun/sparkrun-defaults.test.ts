// A sparkrun recipe without a command: template, written for sparkrun 0.4 (the registry's
// DeepSeek-V4.1 recipe's shape): what each `defaults` key becomes on the engine's command line,
// the finding that says so, and the finding per mod with spark's command for a mod whose job
// spark does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REVISION, world } from '../../helpers/preflight.js';
import { SNAPSHOT, afterImage, dryRun, sparkrunFindings, yamlRecipe } from '../../helpers/sparkrun.js';

const IMAGE = 'lmsysorg/sglang:dev-dsv41';

const REGISTRY_LIKE = (port: number, extra = '') => `recipe_version: "2"
model: deepseek-ai/DeepSeek-V4.1-Flash
model_revision: ${REVISION}
runtime: sglang
container: ${IMAGE}
defaults:
  port: ${port}
  tensor_parallel: 4
  data_parallel: 1
  expert_parallel: 1
  max_total_tokens: 9400000
  revision: "{model_revision}"
  model_type: llm
  warmup_knob: 3
${extra}`;

test("defaults outside sparkrun's table: the engine's own flag (--dp-size, --ep-size), {model_revision} resolved, sparkrun's own keys and unknown keys not passed, each said", async () => {
  const w = await world();
  const file = yamlRecipe(w, 'registry-like', REGISTRY_LIKE(w.servingPort));
  const plan = await dryRun(file, w.cluster);
  assert.deepEqual(afterImage(plan.nodes[0]!.argv, IMAGE).slice(0, 12), [
    '-m',
    'sglang.launch_server',
    '--dp-size',
    '1',
    '--ep-size',
    '1',
    '--max-total-tokens',
    '9400000',
    '--revision',
    REVISION,
    '--model-path',
    SNAPSHOT,
  ]);
  const argv = plan.nodes[0]!.argv.join(' ');
  for (const never of ['--data-parallel', '--expert-parallel', '--model-type', '{model_revision}', '--warmup-knob'])
    assert.ok(!argv.split(' ').includes(never) && !argv.includes(never + ' '), `${never} in ${argv}`);

  const table = "is not in sparkrun's sglang flag table (sparkrun 0.2 drops such keys without a word)";
  assert.deepEqual(await sparkrunFindings(w, file, w.cluster), [
    {
      rule: 'sparkrun.defaults',
      severity: 'warn',
      where: 'R:9',
      message: `defaults.data_parallel ${table}; spark passes it to the engine as --dp-size (sglang's flag for it; --data-parallel is not one)`,
      fix: "check that the image's sglang takes --dp-size, or write the flag in a command: template",
    },
    {
      rule: 'sparkrun.defaults',
      severity: 'warn',
      where: 'R:10',
      message: `defaults.expert_parallel ${table}; spark passes it to the engine as --ep-size (sglang's flag for it; --expert-parallel is not one)`,
      fix: "check that the image's sglang takes --ep-size, or write the flag in a command: template",
    },
    {
      rule: 'sparkrun.defaults',
      severity: 'warn',
      where: 'R:11',
      message: `defaults.max_total_tokens ${table}; spark passes it to the engine as --max-total-tokens`,
      fix: "check that the image's sglang takes --max-total-tokens, or write the flag in a command: template",
    },
    {
      rule: 'sparkrun.defaults',
      severity: 'warn',
      where: 'R:12',
      message: `defaults.revision ${table}; spark passes it to the engine as --revision`,
      fix: "check that the image's sglang takes --revision, or write the flag in a command: template",
    },
    {
      rule: 'sparkrun.defaults',
      severity: 'warn',
      where: 'R:13',
      message:
        'defaults.model_type is read by sparkrun itself (the kind of model, llm or another, by which it picks the backend of `sglang serve`), not an engine flag; spark passes nothing for it',
      fix: 'remove it when the recipe is only launched by spark',
    },
    {
      rule: 'sparkrun.defaults',
      severity: 'warn',
      where: 'R:14',
      message:
        'defaults.warmup_knob: --warmup-knob is not a sglang flag spark knows, so spark does not pass it (sparkrun 0.2 drops it too)',
      fix: "write the flag the image's sglang takes in a command: template, or correct the key",
    },
  ]);
});

test('a placeholder nothing answers is an error naming the key and the placeholder, never a literal argument', async () => {
  const w = await world();
  const typo = yamlRecipe(
    w,
    'revision-typo',
    REGISTRY_LIKE(w.servingPort).replace('"{model_revision}"', '"{model_rev}"').replace('  warmup_knob: 3\n', ''),
  );
  const argv = afterImage((await dryRun(typo, w.cluster)).nodes[0]!.argv, IMAGE);
  assert.ok(!argv.some((a) => a.includes('{')), argv.join(' '));
  // The pin still reaches the engine: the launcher passes model_revision itself.
  assert.equal(argv.filter((a) => a === '--revision').length, 1);
  assert.equal(argv[argv.indexOf('--revision') + 1], REVISION);
  const errors = (await sparkrunFindings(w, typo, w.cluster)).filter((f) => f.severity === 'error');
  assert.deepEqual(errors, [
    {
      rule: 'sparkrun.defaults',
      severity: 'error',
      where: 'R:12',
      message:
        'defaults.revision: {model_rev} names no key of defaults and no top-level key spark answers (model, model_revision), so spark passes neither --revision nor its value',
      fix: 'add model_rev to defaults (or the top level), or correct the placeholder',
    },
  ]);

  // Without model_revision, {model_revision} is answered by nothing either.
  const unpinned = yamlRecipe(
    w,
    'revision-unpinned',
    REGISTRY_LIKE(w.servingPort).replace(`model_revision: ${REVISION}\n`, ''),
  );
  const found = (await sparkrunFindings(w, unpinned, w.cluster)).filter((f) => f.severity === 'error');
  assert.deepEqual(
    found.map((f) => [f.where, f.message.split(':')[0]]),
    [['R:11', 'defaults.revision']],
  );

  // In a template, the same is an error too (the word stays: a template is not cut apart).
  const template = yamlRecipe(
    w,
    'template-unanswered',
    `model: deepseek-ai/DeepSeek-V4.1-Flash\nruntime: sglang\ncontainer: ${IMAGE}\ndefaults:\n  tensor_parallel: 4\n  port: ${w.servingPort}\ncommand: |\n  python3 -m sglang.launch_server --revision {model_revision}\n`,
  );
  assert.deepEqual(
    (await sparkrunFindings(w, template, w.cluster)).map((f) => [f.severity, f.where, f.message]),
    [
      [
        'error',
        'R:8',
        'command: {model_revision} names no key of defaults and no top-level key spark answers (model, model_revision), so the engine would get it as written',
      ],
    ],
  );
});

test('vLLM: data_parallel is --data-parallel-size, random_seed is --seed, expert_parallel has no vLLM flag and is not passed', async () => {
  const w = await world();
  const cluster = w.writeCluster({ nodes: 2 });
  const file = yamlRecipe(
    w,
    'vllm-parallel',
    `runtime: vllm\nmodel: deepseek-ai/DeepSeek-V4.1-Flash\nmodel_revision: ${REVISION}\ncontainer: vllm/vllm-openai:v0.12.0\ndefaults:\n  tensor_parallel: 2\n  data_parallel: 1\n  random_seed: 7\n  expert_parallel: 2\n`,
  );
  const argv = afterImage((await dryRun(file, cluster)).nodes[0]!.argv, 'vllm/vllm-openai:v0.12.0');
  assert.deepEqual(argv.slice(0, 8), [
    'serve',
    SNAPSHOT,
    '--data-parallel-size',
    '1',
    '--seed',
    '7',
    '--revision',
    REVISION,
  ]);
  assert.ok(!argv.includes('--expert-parallel') && !argv.includes('--enable-expert-parallel'), argv.join(' '));
  const found = await sparkrunFindings(w, file, cluster);
  assert.deepEqual(
    found.map((f) => [f.where, f.message]),
    [
      [
        'R:7',
        "defaults.data_parallel is not in sparkrun's vllm flag table (sparkrun 0.2 drops such keys without a word); spark passes it to the engine as --data-parallel-size (vllm's flag for it; --data-parallel is not one)",
      ],
      [
        'R:8',
        "defaults.random_seed is not in sparkrun's vllm flag table (sparkrun 0.2 drops such keys without a word); spark passes it to the engine as --seed (vllm's flag for it; --random-seed is not one)",
      ],
      [
        'R:9',
        'defaults.expert_parallel: vLLM has no expert-parallel size flag (--enable-expert-parallel makes it tensor × data parallel), so spark does not pass it (sparkrun 0.2 drops it too)',
      ],
    ],
  );
});

test("mods: one finding per mod, naming it; dsv41-native-prepare's job is spark's: spark fanout pack --layout dense --env", async () => {
  const w = await world();
  const file = yamlRecipe(
    w,
    'native-prepare',
    REGISTRY_LIKE(
      w.servingPort,
      `mods:\n  - dsv41-native-prepare\n  - my-engine-patch\nenv:\n  DSV41_PACKED_DIR: "{launch.runtime_cache_dir}/engram/v1/{launch.model_revision}"\n`,
    ),
  );
  const found = (await sparkrunFindings(w, file, w.cluster)).filter((f) => f.rule === 'sparkrun.not-run');
  assert.deepEqual(found, [
    {
      rule: 'sparkrun.not-run',
      severity: 'error',
      where: 'R:16',
      message:
        "mods: dsv41-native-prepare packs this rank's Engram rows into DSV41_PACKED_DIR in the Mia stack's dense layout (and checks the checkpoint) in every container before serving; spark runs no mods, so the containers start without it",
      fix:
        `pack the rows on every node before the launch: spark fanout pack ${w.hfCache}/hub/models--deepseek-ai--DeepSeek-V4.1-Flash/snapshots/${REVISION} --layout dense --env .env --cluster CLUSTER, ` +
        `with ENGRAM_DIR=~/.cache/sparkrun/runtime-cache/engram/v1/${REVISION} and TP_SIZE=4 in that .env ` +
        `(the stack reads the packs at DSV41_PACKED_DIR=/cache/runtime/engram/v1/${REVISION}); then remove dsv41-native-prepare from mods`,
    },
    {
      rule: 'sparkrun.not-run',
      severity: 'error',
      where: 'R:17',
      message:
        'mods: my-engine-patch: sparkrun copies this mod into every container and runs its run.sh before the serve command; spark runs no mods, so the containers start without what it installs or prepares (a patched engine, packed Engram rows): a stack whose serving depends on it fails at boot or serves something else',
      fix: 'bake what the mod installs into the image and prepare what it makes on the nodes (Engram rows: spark pack), point the recipe at them, and remove it from mods',
    },
  ]);
});
