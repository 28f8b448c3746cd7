// spark recipe convert changes no value: every value comes back exactly after TOML → YAML → TOML
// (and YAML → TOML), or the conversion is refused with one line naming the value and its line
// (exit 2). Checked on the values that broke it (braces, a newline, an unset $VAR) and on many
// generated strings with a fixed seed (braces, $, quotes, backslashes, line breaks, control
// characters, unicode), compared here field by field, apart from the converter's own check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as tomlStringify } from 'smol-toml';
import { stringify as yamlStringify } from 'yaml';
import { SparkError } from '../../src/errors/errors.js';
import { argvForExec, parseAnyRecipe, type Recipe } from '../../src/recipes/index.js';
import { convertRecipe } from '../../src/recipes/sparkrun/round-trip.js';
import { cli } from '../helpers/cli.js';
import { write } from '../helpers/preflight.js';
import { rng } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';

const HOME = '/home/spark';

const BASE = `engine = "sglang"
docker_image = "img:1"
model = "deepseek-ai/DeepSeek-V4.1-Flash"
port = 30000
required_nodes = 2
tensor_parallel_size = 2
entrypoint = ["python3", "-m", "sglang.launch_server"]
`;

test('a brace a sparkrun reader would fill is refused, naming the value and its line (exit 2), not changed', async () => {
  const dir = tempDir('spark-convert-braces-');
  const cases: [string, string, string][] = [
    ['args = ["--a", "{port}"]\n', 'args[1] "{port}"', '{port}'],
    ['args = ["--served-model-name", "x-{model}"]\n', 'args[1] "x-{model}"', '{model}'],
    ['args = []\n[env]\nE1 = "{config.port}"\n', 'env.E1 "{config.port}"', '{config.port}'],
    ['args = []\n[env]\nE2 = "n={launch.num_nodes}"\n', 'env.E2 "n={launch.num_nodes}"', '{launch.num_nodes}'],
  ];
  for (const [i, [tail, named, placeholder]] of cases.entries()) {
    const file = write(join(dir, `r${i}.toml`), BASE + tail);
    const out = join(dir, `r${i}.yaml`);
    const r = await cli(['recipe', 'convert', file, '--out', out], { HOME });
    assert.equal(r.code, 2, r.stderr);
    const line = BASE.split('\n').length - 1 + tail.split('\n').length - 1;
    assert.equal(r.stderr.split('\n').length, 2, r.stderr);
    assert.ok(
      r.stderr.startsWith(`spark: ${file}:${line}: ${named} cannot be written in a sparkrun recipe: `),
      r.stderr,
    );
    assert.ok(r.stderr.includes(placeholder), r.stderr);
    assert.throws(() => readFileSync(out), /ENOENT/, 'nothing is written');
  }
});

test('what else a sparkrun recipe would read differently is refused, naming it: a positional first argument, a flag in the entrypoint, a ":" in a mount, the HF path sparkrun moves', async () => {
  const dir = tempDir('spark-convert-other-');
  const head = 'engine = "vllm"\ndocker_image = "i:1"\nmodel = "m/m"\n';
  const cases: [string, string][] = [
    [
      'entrypoint = ["vllm", "serve"]\nargs = ["/models/x", "--tp", "2"]\n',
      ':5: args[0] "/models/x" cannot be written in a sparkrun recipe: a command: template reads the words before the first flag as the program',
    ],
    [
      'args = ["--tp", "2"]\nentrypoint = ["bash", "-c", "x"]\n',
      ':5: entrypoint[1] "-c" cannot be written in a sparkrun recipe: a command: template ends the program at its first word starting with "-"',
    ],
    [
      'entrypoint = ["vllm", "serve"]\n[[extra_mounts]]\nhost = "/a"\ncontainer = "/c:d"\n',
      ':5: extra_mounts[0].container "/c:d" cannot be written in a sparkrun recipe: executor_config.volumes writes a mount as host:container[:ro]',
    ],
    [
      'entrypoint = ["vllm", "serve"]\n[env]\nX = "/cache/huggingface/hub"\n',
      ':6: env.X "/cache/huggingface/hub" would come back from the sparkrun recipe as "/root/.cache/huggingface/hub"',
    ],
  ];
  for (const [i, [tail, expected]] of cases.entries()) {
    const file = write(join(dir, `r${i}.toml`), head + tail);
    const r = await cli(['recipe', 'convert', file], { HOME });
    assert.equal(r.code, 2, r.stderr);
    assert.ok(r.stderr.startsWith(`spark: ${file}${expected}`), r.stderr);
    assert.equal(r.stdout, '');
  }
});

test('an argument holding a newline (and control characters, a YAML 1.1 line break) converts to a YAML spark reads back exactly', async () => {
  const dir = tempDir('spark-convert-newline-');
  const args = ['--c', 'x\ny', '--d', 'it\'s \\ "q" é', '--e', '  lead\n\ttab\u0001\u0085\u2028 ', '--f', 'z'];
  const toml = write(join(dir, 'r.toml'), BASE + tomlStringify({ args }) + '\n');
  const yaml = join(dir, 'r.yaml');
  const r = await cli(['recipe', 'convert', toml, '--out', yaml], { HOME });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim(), `wrote ${yaml} (yaml)`);
  const back = await cli(['recipe', 'convert', yaml, '--json'], { HOME });
  assert.equal(back.code, 0, back.stderr);
  const again = await parseAnyRecipe((JSON.parse(back.stdout) as { text: string }).text, 'again.toml');
  assert.deepEqual(again.recipe.args, args);
  // The YAML's own findings name lines of the file: the text keeps its lines.
  const yamlText = readFileSync(yaml, 'utf8');
  const loaded = await parseAnyRecipe(yamlText, yaml);
  const lines = yamlText.split('\n');
  assert.match(lines[loaded.recipe.locate('args', 2)! - 1]!, /--d /);
  assert.match(lines[loaded.recipe.locate('args', 4)! - 1]!, /^\s+--e ' {2}lead\\n\\$/);
  assert.match(lines[loaded.recipe.locate('args', 6)! - 1]!, /^\s+--f z"$/);
});

test('an unset $VAR in a sparkrun recipe converted to TOML is a warning on stderr and a comment naming it', async () => {
  const dir = tempDir('spark-convert-unset-');
  const yaml = write(
    join(dir, 'r.yaml'),
    'model: m/m\nruntime: sglang\ncontainer: i:1\ndefaults:\n  tensor_parallel: 2\nenv:\n  E3: "$SPARK_CONVERT_UNSET"\n',
  );
  const r = await cli(['recipe', 'convert', yaml], { HOME });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stderr,
    `spark recipe convert: warning: ${yaml}:7: $SPARK_CONVERT_UNSET in env.E3 is not set on this machine; it expands to an empty string; the spark TOML recipe gets that value (set SPARK_CONVERT_UNSET before running spark, or write the value into the recipe, then convert again)\n`,
  );
  assert.match(r.stdout, /^# - line 7: \$SPARK_CONVERT_UNSET in env\.E3 is not set on this machine/m);
  assert.match(r.stdout, /^E3 = ""$/m);
});

// ---- generated values ----

/** Pieces strings are made of: the characters each format escapes or reads specially. */
const PIECES = [
  'a',
  'Z9',
  ' ',
  '  ',
  '\t',
  '\n',
  '\r\n',
  '"',
  "'",
  '\\',
  '\\n',
  '$',
  '$HOME',
  '${X:-y}',
  '\\$',
  '#',
  ' #c',
  ':',
  '=',
  ',',
  '{',
  '}',
  '{"k":1}',
  '[1]',
  '-',
  '--x',
  'é',
  '中文',
  '😀',
  '\u0001',
  '\u001b',
  '\u007f',
  '\u0085',
  '\u00a0',
  '\u2028',
  '\u2029',
  '\ufeff',
  '/cache/huggingface',
  // What a reader fills in, rarer than the rest.
  '{port}',
  '{config.port}',
  '{launch.num_nodes}',
  '\\ \n',
];

function generated(next: () => number, maxPieces: number): string {
  let s = '';
  const n = Math.floor(next() * (maxPieces + 1));
  for (let i = 0; i < n; i++) {
    // Plain letters half the time, so most strings convert and the round trip is exercised.
    s += next() < 0.5 ? 'ab'[Math.floor(next() * 2)] : PIECES[Math.floor(next() * PIECES.length)];
  }
  return s;
}

/** What the engine and the containers get: the fields a conversion must keep. */
function kept(r: Recipe) {
  return {
    engine: r.engine,
    name: r.name,
    dockerImage: r.dockerImage,
    model: r.model,
    port: r.port,
    shmSize: r.shmSize,
    entrypoint: r.entrypoint,
    args: argvForExec(r.args),
    mounts: r.extraMounts.map((m) => [m.host, m.container, m.readOnly]),
    env: r.env,
  };
}

/** Why a TOML value cannot be a sparkrun recipe's, by what sparkrun's readers do to it. */
function unwritable(r: Recipe): boolean {
  const command = [...(r.entrypoint ?? []), ...r.args];
  return (
    command.some((v) => /\{[A-Za-z_]\w*\}/.test(v) || /\\[ \t]+\n/.test(v)) ||
    Object.values(r.env).some(
      (v) => /\{(config|launch)\.[A-Za-z_]\w*\}/.test(v) || /(^|[\s:=,])\/cache\/huggingface(?=\/|$|[\s:,])/.test(v),
    ) ||
    r.extraMounts.some((m) => m.host.includes(':') || m.container.includes(':'))
  );
}

test('TOML → YAML → TOML over 400 generated recipes (seed 8): every value back exactly, or refused naming it', async () => {
  const next = rng(8);
  let converted = 0;
  let refused = 0;
  for (let n = 0; n < 400; n++) {
    const doc: Record<string, unknown> = {
      engine: next() < 0.5 ? 'sglang' : 'vllm',
      name: generated(next, 4),
      docker_image: `img${generated(next, 2)}:1`,
      model: `org/m${generated(next, 2)}`,
      port: 30000,
      required_nodes: 2,
      tensor_parallel_size: 2,
      entrypoint: next() < 0.5 ? ['python3', '-m', 'sglang.launch_server'] : ['vllm', 'serve'],
      args: ['--a', generated(next, 5), '--b', generated(next, 5), '--c', generated(next, 3)],
      shm_size: `${1 + Math.floor(next() * 64)}gb`,
      extra_mounts: [
        { host: `/h${generated(next, 2)}`, container: `/c${generated(next, 2)}`, read_only: next() < 0.5 },
      ],
      env: { E1: generated(next, 5), E2: generated(next, 5), E3: generated(next, 3) },
    };
    const source = tomlStringify(doc);
    const original = await parseAnyRecipe(source, `gen${n}.toml`);
    let yaml: string;
    try {
      yaml = (await convertRecipe(original, 'yaml', HOME)).text;
    } catch (err) {
      assert.ok(err instanceof SparkError && err.exitCode === 2, `case ${n}: ${String(err)}`);
      // Refused only what a sparkrun reader would change, naming the value and its line.
      assert.ok(unwritable(original.recipe), `case ${n} refused without cause: ${err.message}\n${source}`);
      assert.match(
        err.message,
        new RegExp(`^gen${n}\\.toml:\\d+: (args\\[\\d\\]|env\\.E\\d|entrypoint\\[\\d\\]|extra_mounts\\[0\\]\\.\\w+) `),
      );
      refused++;
      continue;
    }
    assert.ok(!unwritable(original.recipe), `case ${n} converted what a reader would change:\n${source}\n${yaml}`);
    const viaYaml = await parseAnyRecipe(yaml, `gen${n}.yaml`, { env: {} });
    assert.deepEqual(kept(viaYaml.recipe), kept(original.recipe), `case ${n} (yaml):\n${source}\n${yaml}`);
    const toml = (await convertRecipe(viaYaml, 'toml', HOME)).text;
    const back = await parseAnyRecipe(toml, `gen${n}.back.toml`);
    assert.deepEqual(kept(back.recipe), kept(original.recipe), `case ${n} (back):\n${source}\n${toml}`);
    converted++;
  }
  // Both outcomes are exercised, and most recipes convert.
  assert.ok(converted > 200 && refused > 20, `${converted} converted, ${refused} refused`);
});

/** A word as bash -c reads it back, for writing templates here. */
const quoted = (w: string) => `'${w.replace(/'/g, `'\\''`)}'`;

test('YAML → TOML over 300 generated sparkrun recipes (seed 9): the TOML reads back to what spark read from the YAML', async () => {
  const next = rng(9);
  for (let n = 0; n < 300; n++) {
    // Words without placeholders or `\ ` line breaks: what a template fills or repairs is the reader's business.
    const word = () =>
      generated(next, 4)
        .replace(/[{}]/g, '')
        .replace(/\\[ \t]*\n/g, '');
    const source = yamlStringify({
      model: `org/m${generated(next, 2)}`,
      runtime: next() < 0.5 ? 'sglang' : 'vllm',
      container: `img${generated(next, 2)}:1`,
      metadata: { description: generated(next, 4) },
      defaults: { tensor_parallel: 2, port: 30000 },
      executor_config: { shm_size: `${1 + Math.floor(next() * 64)}gb` },
      command: `python3 -m sglang.launch_server --a ${quoted(word())} --b ${quoted(word())}`,
      env: { E1: generated(next, 5), E2: generated(next, 5), E3: `$SPARK_GEN_${n % 2}` },
    });
    const processEnv = { SPARK_GEN_0: generated(next, 3) };
    const original = await parseAnyRecipe(source, `gen${n}.yaml`, { env: processEnv });
    const { text, warnings } = await convertRecipe(original, 'toml', HOME);
    const back = await parseAnyRecipe(text, `gen${n}.toml`);
    assert.deepEqual(kept(back.recipe), kept(original.recipe), `case ${n}:\n${source}\n${text}`);
    // Each unset one is said, on stderr's line and in a comment.
    const unset = original.diagnostics.filter((d) => d.kind === 'undefined-variable');
    assert.equal(warnings.length, unset.length, `case ${n}: ${warnings.join('\n')}`);
    assert.equal(warnings.filter((w) => w.includes('$SPARK_GEN_1 ')).length, n % 2, `case ${n}`);
    if (n % 2 === 1) assert.match(text, /^# - line \d+: \$SPARK_GEN_1 in env\.E3 is not set on this machine/m);
  }
});
