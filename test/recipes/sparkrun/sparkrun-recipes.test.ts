// sparkrun recipes of both runtimes, written here: command templates, defaults alone,
// {launch.*} interpolation, an unknown runtime, mods. Each with the findings preflight makes
// (rule, severity, file:line) and the argv `spark launch --dry-run --json` produces.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cli } from '../../helpers/cli.js';
import { REVISION, world } from '../../helpers/preflight.js';
import { HOME, SNAPSHOT, afterImage, dryRun, sparkrunFindings, yamlRecipe } from '../../helpers/sparkrun.js';
import { ShellSyntaxError, shellWords } from '../../../src/recipes/sparkrun/shell-words.js';

const SGLANG_TEMPLATE = (port: number) => `recipe_version: "2"
runtime: sglang
model: deepseek-ai/DeepSeek-V4.1-Flash
container: lmsysorg/sglang:dev-dsv41
defaults:
  port: ${port}
  tensor_parallel: 4
  gpu_memory_utilization: 0.8
  num_tokens: 5
  unused_knob: 7
command: |
  python3 -m sglang.launch_server \\
    --model-path {model} \\
    --tp-size {tensor_parallel} \\
    --mem-fraction-static {gpu_memory_utilization} \\
    --speculative-config '{"method":"dspark","k":{num_tokens}}' \\
    --served-model-name "dsv41 flash"
env:
  SPARK_ENGRAM_DIR: "{launch.model_path}"
  NODES: "{launch.num_nodes}"
  REV: "{launch.model_revision}"
  FRACTION: "{config.gpu_memory_utilization}"
  PACKED: "{launch.runtime_cache_dir}/engram"
  FROM_HOST: "$SPARKRUN_TEST_VALUE/x"
`;

test('SGLang with a command template: placeholders filled, {launch.*} resolved, the launcher adds the model and node flags', async () => {
  const w = await world();
  const file = yamlRecipe(w, 'sglang-template', SGLANG_TEMPLATE(w.servingPort));
  const plan = await dryRun(file, w.cluster, { SPARKRUN_TEST_VALUE: 'from-host' });
  assert.equal(plan.nodes.length, 4);
  const node1 = plan.nodes[1]!;
  assert.deepEqual(afterImage(node1.argv, 'lmsysorg/sglang:dev-dsv41'), [
    '-m',
    'sglang.launch_server',
    '--tp-size',
    '4',
    '--mem-fraction-static',
    '0.8',
    '--speculative-config',
    '{"method":"dspark","k":5}',
    '--served-model-name',
    'dsv41 flash',
    '--model-path',
    SNAPSHOT,
    '--nnodes',
    '4',
    '--node-rank',
    '1',
    '--dist-init-addr',
    `192.168.200.1:${w.distPort}`,
    '--host',
    '0.0.0.0',
    '--port',
    String(w.servingPort),
  ]);
  assert.equal(node1.argv[node1.argv.indexOf('--entrypoint') + 1], 'python3');
  assert.deepEqual(
    [
      node1.env.SPARK_ENGRAM_DIR,
      node1.env.NODES,
      node1.env.REV,
      node1.env.FRACTION,
      node1.env.PACKED,
      node1.env.FROM_HOST,
    ],
    [SNAPSHOT, '4', REVISION, '0.8', '/cache/runtime/engram', 'from-host/x'],
  );
  // {launch.runtime_cache_dir}: sparkrun's runtime cache, mounted where sparkrun mounts it.
  assert.ok(node1.argv.includes(`${HOME}/.cache/sparkrun/runtime-cache:/cache/runtime`), node1.argv.join(' '));

  assert.deepEqual(await sparkrunFindings(w, file, w.cluster, { SPARKRUN_TEST_VALUE: 'from-host' }), [
    {
      rule: 'sparkrun.defaults',
      severity: 'warn',
      where: 'R:10',
      message:
        'defaults.unused_knob is not named in command, so it reaches nothing (sparkrun does the same with a template)',
      fix: 'name it in command as {unused_knob}, or remove it',
    },
  ]);
  const unset = await sparkrunFindings(w, file, w.cluster);
  assert.deepEqual(
    unset.find((f) => f.rule === 'env.undefined-variable'),
    {
      rule: 'env.undefined-variable',
      severity: 'warn',
      where: 'R:24',
      message: '$SPARKRUN_TEST_VALUE in env.FROM_HOST is not set on this machine; it expands to an empty string',
      fix: 'set SPARKRUN_TEST_VALUE before running spark, or write the value into the recipe',
    },
  );
});

test("SGLang from defaults alone: sparkrun's flag table, and every key outside it passed as a flag with a finding", async () => {
  const w = await world();
  const file = yamlRecipe(
    w,
    'sglang-defaults',
    `runtime: sglang
model: deepseek-ai/DeepSeek-V4.1-Flash
container: lmsysorg/sglang:dev-dsv41
defaults:
  tensor_parallel: 4
  port: ${w.servingPort}
  gpu_memory_utilization: 0.8
  max_model_len: 524288
  trust_remote_code: true
  attention_backend: dsv4
  speculative_algorithm: DSPARK
`,
  );
  const plan = await dryRun(file, w.cluster);
  assert.deepEqual(afterImage(plan.nodes[0]!.argv, 'lmsysorg/sglang:dev-dsv41'), [
    '-m',
    'sglang.launch_server',
    '--mem-fraction-static',
    '0.8',
    '--context-length',
    '524288',
    '--trust-remote-code',
    '--attention-backend',
    'dsv4',
    '--speculative-algorithm',
    'DSPARK',
    '--model-path',
    SNAPSHOT,
    '--tp-size',
    '4',
    '--nnodes',
    '4',
    '--node-rank',
    '0',
    '--dist-init-addr',
    `192.168.200.1:${w.distPort}`,
    '--host',
    '0.0.0.0',
    '--port',
    String(w.servingPort),
  ]);
  const found = await sparkrunFindings(w, file, w.cluster);
  assert.deepEqual(
    found.map((f) => [f.rule, f.severity, f.where]),
    [
      ['sparkrun.defaults', 'warn', 'R:10'],
      ['sparkrun.defaults', 'warn', 'R:11'],
    ],
  );
  assert.match(
    found[0]!.message,
    /^defaults\.attention_backend is not in sparkrun's sglang flag table \(sparkrun 0\.2 drops such keys without a word\); spark passes it to the engine as --attention-backend$/,
  );
});

test("vLLM with a command template: the positional {model} is the launcher's snapshot; workers run --headless", async () => {
  const w = await world();
  const cluster = w.writeCluster({ nodes: 2 });
  const file = yamlRecipe(
    w,
    'vllm-template',
    `recipe_version: "2"
runtime: vllm-distributed
model: deepseek-ai/DeepSeek-V4.1-Flash
container: vllm/vllm-openai:v0.12.0
defaults:
  tensor_parallel: 2
  max_num_seqs: 6
command: |
  vllm serve {model} \\
      -tp {tensor_parallel} \\
      --max-num-seqs {max_num_seqs} \\
      --compilation-config '{"cudagraph_mode":"FULL_AND_PIECEWISE"}'
`,
  );
  const plan = await dryRun(file, cluster);
  const [head, worker] = plan.nodes.map((n) => afterImage(n.argv, 'vllm/vllm-openai:v0.12.0'));
  assert.deepEqual(head, [
    'serve',
    SNAPSHOT,
    '-tp',
    '2',
    '--max-num-seqs',
    '6',
    '--compilation-config',
    '{"cudagraph_mode":"FULL_AND_PIECEWISE"}',
    '--pipeline-parallel-size',
    '1',
    '--distributed-executor-backend',
    'mp',
    '--nnodes',
    '2',
    '--node-rank',
    '0',
    '--master-addr',
    '192.168.200.1',
    '--master-port',
    String(w.distPort),
    '--host',
    '0.0.0.0',
    '--port',
    '8000',
  ]);
  assert.ok(
    worker!.includes('--headless') &&
      worker!.includes('--node-rank') &&
      worker![worker!.indexOf('--node-rank') + 1] === '1',
  );
  assert.deepEqual(await sparkrunFindings(w, file, cluster), []);
});

test("vLLM from defaults alone: -tp is the launcher's, false turns a default-on flag off, model_revision pins the snapshot", async () => {
  const w = await world();
  const cluster = w.writeCluster({ nodes: 2 });
  const file = yamlRecipe(
    w,
    'vllm-defaults',
    `runtime: vllm
model: deepseek-ai/DeepSeek-V4.1-Flash
model_revision: ${REVISION}
container: vllm/vllm-openai:v0.12.0
defaults:
  tensor_parallel: 2
  gpu_memory_utilization: 0.78
  enable_prefix_caching: false
`,
  );
  const plan = await dryRun(file, cluster);
  assert.deepEqual(afterImage(plan.nodes[0]!.argv, 'vllm/vllm-openai:v0.12.0').slice(0, 7), [
    'serve',
    SNAPSHOT,
    '--gpu-memory-utilization',
    '0.78',
    '--no-enable-prefix-caching',
    '--revision',
    REVISION,
  ]);
  assert.deepEqual(await sparkrunFindings(w, file, cluster), []);
});

test('an unknown runtime, or one spark does not launch, is one line naming the file and line (exit 2)', async () => {
  const w = await world();
  for (const [runtime, why] of [
    ['llama-cpp', /spark launches SGLang and vLLM only, not llama-cpp/],
    ['sglangg', /"sglangg" is not a sparkrun runtime spark knows/],
  ] as const) {
    const file = yamlRecipe(w, `runtime-${runtime}`, `model: org/model\nruntime: ${runtime}\ncontainer: img:1\n`);
    for (const argv of [
      ['preflight', file],
      ['launch', file, '--cluster', w.cluster, '--dry-run', '--json'],
    ]) {
      const r = await cli(argv, { HOME });
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      const message = argv.includes('--json')
        ? (JSON.parse(r.stderr) as { error: { message: string } }).error.message
        : r.stderr.replace(/^spark: /, '');
      assert.ok(message.startsWith(`${file}:2: runtime ${runtime}: `), message);
      assert.match(message, why);
    }
  }
});

test('mods, pre_exec and Ray: one finding each, and what running without a mod means', async () => {
  const w = await world();
  const file = yamlRecipe(
    w,
    'mods',
    `recipe_version: "2"
runtime: sglang
model: deepseek-ai/DeepSeek-V4.1-Flash
container: lmsysorg/sglang:dev-dsv41
defaults:
  tensor_parallel: 4
  port: ${w.servingPort}
mods:
  - dsv41-engram-pack
pre_exec:
  - pip install b12x
post_exec:
  - curl localhost:30000/health
builder: docker
env:
  DSV41_PACKED_DIR: "{launch.runtime_cache_dir}/engram"
`,
  );
  const found = await sparkrunFindings(w, file, w.cluster);
  assert.deepEqual(
    found.map((f) => [f.rule, f.severity, f.where]),
    [
      ['sparkrun.not-run', 'error', 'R:9'],
      ['sparkrun.not-run', 'error', 'R:10'],
      ['sparkrun.not-run', 'warn', 'R:12'],
      ['sparkrun.not-run', 'warn', 'R:14'],
    ],
  );
  assert.match(
    found[0]!.message,
    /^mods: dsv41-engram-pack: sparkrun copies this mod into every container and runs its run\.sh before the serve command; spark runs no mods, so the containers start without what it installs or prepares .*a stack whose serving depends on it fails at boot or serves something else$/,
  );
  // Preflight fails (exit 1), so a launch refuses; the dry run still shows the plan.
  assert.equal(
    (
      await cli(['preflight', file, '--cluster', w.cluster, '--local', '--node-rank', '0', '--only', 'sparkrun'], {
        HOME,
      })
    ).code,
    1,
  );
  const plan = await dryRun(file, w.cluster);
  assert.equal(plan.nodes[0]!.env.DSV41_PACKED_DIR, '/cache/runtime/engram');

  const ray = yamlRecipe(
    w,
    'ray',
    `model: deepseek-ai/DeepSeek-V4.1-Flash\ncontainer: img:1\nruntime: vllm-ray\ndefaults:\n  tensor_parallel: 4\n`,
  );
  const rayFound = await sparkrunFindings(w, ray, w.cluster);
  assert.deepEqual(
    rayFound.map((f) => [f.rule, f.severity, f.where]),
    [['sparkrun.not-run', 'error', 'R:3']],
  );
  assert.match(rayFound[0]!.message, /^runtime vllm-ray: this runtime starts a Ray cluster/);
});

test("a command only a shell could run, and sparkrun's HF cache path, are said", async () => {
  const w = await world();
  const piped = yamlRecipe(
    w,
    'piped',
    `model: m/m\nruntime: sglang\ncontainer: i:1\ncommand: |\n  python3 -m sglang.launch_server \\\n    --port 1 | tee log\n`,
  );
  const r = await cli(['preflight', piped], { HOME });
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /piped\/recipe\.yaml:6: command: the operator '\|', which only a shell interprets; spark runs the command without one/,
  );

  const hf = yamlRecipe(
    w,
    'hf-path',
    `model: deepseek-ai/DeepSeek-V4.1-Flash\nruntime: sglang\ncontainer: i:1\ndefaults:\n  tensor_parallel: 4\nenv:\n  X: /cache/huggingface/hub/x\n`,
  );
  const plan = await dryRun(hf, w.cluster);
  assert.equal(plan.nodes[0]!.env.X, '/root/.cache/huggingface/hub/x');
  const found = await sparkrunFindings(w, hf, w.cluster);
  assert.deepEqual(
    found.map((f) => [f.rule, f.severity, f.where]),
    [['sparkrun.defaults', 'warn', 'R:7']],
  );
  assert.match(
    found[0]!.message,
    /names \/cache\/huggingface, where sparkrun mounts the Hugging Face cache; spark mounts it at \/root\/\.cache\/huggingface/,
  );
});

test('command words as bash -c splits them: continuations (blanks after the backslash too), quotes, escapes, comments', () => {
  const text = 'vllm serve \\  \n  --a "x y" \\\n  --b \'{"k": "v w"}\' --c a\\ b # a comment\n  --d "q\\"t\\$" \'\'\n';
  assert.deepEqual(shellWords(text), [
    { text: 'vllm', line: 0 },
    { text: 'serve', line: 0 },
    { text: '--a', line: 1 },
    { text: 'x y', line: 1 },
    { text: '--b', line: 2 },
    { text: '{"k": "v w"}', line: 2 },
    { text: '--c', line: 2 },
    { text: 'a b', line: 2 },
    { text: '--d', line: 3 },
    { text: 'q"t$', line: 3 },
    { text: '', line: 3 },
  ]);
  for (const shell of ['a $HOME', 'a "$(id)"', 'a `id`', 'a && b', 'a > f', "a 'open"])
    assert.throws(() => shellWords(shell), ShellSyntaxError, shell);
});

test('an env key that is not a variable name is one line (exit 2)', async () => {
  const w = await world();
  const file = yamlRecipe(w, 'bad-env-key', 'model: m/m\nruntime: sglang\ncontainer: i:1\nenv:\n  "A=B": x\n');
  const r = await cli(['preflight', file], { HOME });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /bad-env-key\/recipe\.yaml:5: env key "A=B" is not an environment variable name/);
});

test('a runtime sparkrun would guess (mods without a runtime: eugr-vllm) is a finding on the line it was guessed from', async () => {
  const w = await world();
  const file = yamlRecipe(
    w,
    'guessed',
    'model: deepseek-ai/DeepSeek-V4.1-Flash\ncontainer: i:1\ndefaults:\n  tensor_parallel: 4\nmods:\n  - patch\n',
  );
  const found = await sparkrunFindings(w, file, w.cluster);
  assert.deepEqual(
    found.map((f) => [f.rule, f.severity, f.where]),
    [
      ['sparkrun.not-run', 'error', 'R:5'],
      ['sparkrun.not-run', 'error', 'R:6'],
    ],
  );
  assert.match(found[0]!.message, /^runtime eugr-vllm: /);
  assert.match(found[1]!.message, /^mods: patch: /);
});
