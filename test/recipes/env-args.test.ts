import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SparkError } from '../../src/errors/errors.js';
import {
  argvForExec,
  parseArgs,
  parseEnvFile,
  readEnvFile,
  readRecipe,
  type EnvFile,
} from '../../src/recipes/index.js';
import { EUGR, MIA_ENV, DSV41 } from '../helpers/preflight.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

/** `env`'s values of the keys `want` names, to compare with `want` in one assertion. */
function valuesOf(env: EnvFile, want: Record<string, string>): Record<string, string | undefined> {
  return Object.fromEntries(Object.keys(want).map((k) => [k, env.vars.get(k)?.value]));
}

/** Asserts that parsing `src` is refused with E_ENV_FILE (exit 2) in one line matching `re`. */
function refused(src: string, re: RegExp, env: NodeJS.ProcessEnv = {}): void {
  assert.throws(
    () => parseEnvFile(src, 'x.env', env),
    (e: unknown) =>
      e instanceof SparkError &&
      e.code === 'E_ENV_FILE' &&
      e.exitCode === 2 &&
      re.test(e.message) &&
      !e.message.includes('\n'),
  );
}

test('env files: comments, quotes, export, expansion against the file then the environment', () => {
  const src = [
    '# comment', //                                       1
    '', //                                                2
    'A=1', //                                             3
    'export B = two words  # trailing comment', //        4
    "C='$A literal # not a comment'", //                  5
    'D="x${A}y $B \\$A \\"q\\" \\n"', //                  6
    'E=$HOME/.ssh/id', //                                 7
    'F=${UNSET:-fallback}-${A-x}-${EMPTY:-e}-${EMPTY-f}', // 8
    'G=a#b', //                                           9
    'H="multi', //                                        10
    'line"', //                                           11
    'I=', //                                              12
    'A=3', //                                             13
    'J=$A$MISSING', //                                    14
  ].join('\n');
  const env = parseEnvFile(src, '.env', { HOME: '/home/u', A: 'from-env', EMPTY: '' });
  const want = {
    A: '3',
    B: 'two words',
    C: '$A literal # not a comment',
    D: 'x1y two words $A "q" \n',
    E: '/home/u/.ssh/id',
    F: 'fallback-1-e-',
    G: 'a#b',
    H: 'multi\nline',
    I: '',
    J: '3',
  };
  assert.deepEqual(valuesOf(env, want), want);
  assert.equal(env.vars.size, Object.keys(want).length);
  assert.deepEqual(
    env.entries.map((e) => [e.key, e.line]),
    [
      ['A', 3],
      ['B', 4],
      ['C', 5],
      ['D', 6],
      ['E', 7],
      ['F', 8],
      ['G', 9],
      ['H', 10],
      ['I', 12],
      ['A', 13],
      ['J', 14],
    ],
  );
  assert.equal(env.vars.get('A')?.line, 13);
  assert.deepEqual(
    env.diagnostics.map((d) => [d.kind, d.key, d.line]),
    [['undefined-variable', 'MISSING', 14]],
  );
});

test('env files: malformed lines are refused with file:line', () => {
  refused('A=1\nnot a line', /^x\.env:2: expected '=' after not/);
  refused('A=1\n=2', /^x\.env:2: expected KEY=value/);
  refused('A="open\nB=2', /^x\.env:1: A: the double quote opened here is never closed/);
  refused("A='x' y", /^x\.env:1: A: unexpected text after the closing quote/);
});

test('env files: nested ${A:-${B:-x}}, the + and ? operators, CR-only line endings', () => {
  // Each line of the file beside the value it gives.
  const lines: [string, string][] = [
    ['A=${U1:-${U2:-x}}', 'x'],
    ['B=${U1:-${A}/${U2-${A}y}}', 'x/xy'],
    ['C="${U1:-{braces} in ${A:+alt}}"', '{braces in alt}'], // as sh reads it: the first bare '}' ends the word
    ['D=${EMPTY:+set}|${EMPTY+set}|${U1+set}|${A:?need A}', '|set||x'],
    ['E=${U1:-a\\}b}', 'a}b'],
  ];
  const env = parseEnvFile(lines.map(([line]) => line).join('\n'), '.env', { EMPTY: '' });
  assert.deepEqual(
    [...env.vars.values()].map((v) => v.value),
    lines.map(([, value]) => value),
  );
  assert.deepEqual(env.diagnostics, []);

  // A file saved with classic Mac line endings: three lines, not one value "1\rB=2\rC=3".
  const cr = parseEnvFile('A=1\rB=2\r# c\rC=$B', 'mac.env', {});
  assert.deepEqual(
    cr.entries.map((e) => [e.key, e.value, e.line]),
    [
      ['A', '1', 1],
      ['B', '2', 2],
      ['C', '2', 4],
    ],
  );
  const mixed = parseEnvFile('A=1\r\nB=2\rC=3\n', 'mixed.env', {});
  assert.deepEqual(
    mixed.entries.map((e) => [e.key, e.value, e.line]),
    [
      ['A', '1', 1],
      ['B', '2', 2],
      ['C', '3', 3],
    ],
  );
});

test('env files: NUL bytes and broken expansions are refused at read time, naming file:line', () => {
  refused('A=1\nB=x\0y\n', /^x\.env:2: contains a NUL byte/);
  refused('A=1\nB="\0"', /^x\.env:2: contains a NUL byte/);
  refused('A=${U:-${B:-x}', /^x\.env:1: \$\{U:-…: the '\$\{' is never closed/);
  refused('A=${U:?set U first}', /^x\.env:1: \$\{U:\?…\}: U is not set: set U first$/);
  refused('A=${EMPTY:?}', /^x\.env:1: \$\{EMPTY:\?…\}: EMPTY is empty$/, { EMPTY: '' });
  refused('A=${1}', /^x\.env:1: '\$\{' must be followed by a variable name/);
  refused('A=${U/x/y}', /^x\.env:1: \$\{U: expected '\}' or one of/);
});

test('a NUL byte in an env file is a preflight error naming the file, not a failure at launch', async () => {
  const file = join(tempDir(), 'nul.env');
  writeFileSync(file, 'NCCL_DEBUG=WARN\nDSV41_IO_THREADS=9\x006\n');
  const r = await cli(['preflight', DSV41, '--env', file, '--json']);
  assert.equal(r.code, 2, r.stderr);
  const err = JSON.parse(r.stderr).error;
  assert.equal(err.code, 'E_ENV_FILE');
  assert.equal(
    err.message,
    `${file}:2: contains a NUL byte, which no environment variable can hold; is this a text file?`,
  );
});

test('the mia-tp4 env file parses as it is', async () => {
  const env = await readEnvFile(MIA_ENV, { HOME: '/home/zurih' });
  assert.equal(env.entries.length, 81);
  // The file configures its start script too: those keys would reach every container for nothing.
  assert.ok(env.diagnostics.every((d) => d.kind === 'compose-only' && d.severity === 'warn'));
  assert.deepEqual(
    env.diagnostics
      .map((d) => d.key)
      .filter((k) => ['TP_SIZE', 'NNODES', 'PORT', 'SSH_IDENTITY', 'HEAD_IP', 'IMAGE'].includes(k)),
    ['HEAD_IP', 'SSH_IDENTITY', 'IMAGE', 'PORT', 'NNODES', 'TP_SIZE'],
  );
  assert.ok(!env.diagnostics.some((d) => /^(NCCL|DSV41|SGLANG|PYTORCH|GLOO)_/.test(d.key)));
  const want = {
    SSH_IDENTITY: '/home/zurih/.ssh/id_ed25519_shared',
    NCCL_PROTO: '^LL128',
    PYTORCH_CUDA_ALLOC_CONF: 'expandable_segments:False',
    EXTRA_SGLANG_ARGS: '--fp8-gemm-backend flashinfer_cutlass --watchdog-timeout 1800 --sleep-on-idle',
    BASE_IMAGE: 'lmsysorg/sglang:dev-dsv41@sha256:3dbc313030a6ef2c5d7de8ecf48e9aece722694a82182cb618cc82b588816349',
    DSV41_PREFILL_EMPTY_CACHE_TOKENS: '8192',
  };
  assert.deepEqual(valuesOf(env, want), want);
  const withoutHome = await readEnvFile(MIA_ENV, {});
  assert.deepEqual(
    withoutHome.diagnostics.filter((d) => d.kind === 'undefined-variable').map((d) => d.key),
    ['HOME', 'HOME', 'HOME', 'HOME'],
  );
});

test('args: values, =values, booleans, dotted flags, quoted JSON, negative numbers', async () => {
  const { recipe } = await readRecipe(EUGR);
  const a = parseArgs(recipe.args);
  assert.equal(a.number('--max-num-seqs'), 6);
  assert.equal(a.string('--max-model-len'), '1048576');
  assert.equal(a.get('--enable-prefix-caching')?.value, true);
  assert.equal(a.get('--trust-remote-code')?.value, true);
  assert.equal(a.number('--gpu-memory-utilization'), 0.78);
  assert.deepEqual(a.dotted('--default-chat-template-kwargs'), { thinking: 'true', reasoning_effort: 'high' });
  const spec = a.get('--speculative-config')!;
  assert.ok(typeof spec.raw === 'string' && spec.raw.startsWith("'{"));
  assert.deepEqual(a.json('--speculative-config'), {
    method: 'dspark',
    num_speculative_tokens: 5,
    draft_sample_method: 'probabilistic',
    attention_backend: 'B12X_MLA_SPARSE',
  });
  assert.deepEqual(a.json('--compilation-config'), { cudagraph_mode: 'FULL_AND_PIECEWISE', custom_ops: ['all'] });
  assert.equal(recipe.args[spec.index], '--speculative-config');
  assert.equal(a.flags.length, 25); // 19 with a value + 4 booleans + 2 dotted = 44 arguments
  assert.deepEqual(a.positionals, []);

  const b = parseArgs(['model', '--x', '-1', '--y=a=b', '--flag', '--z', "'{bad'", '-tp', '2', '--x', '5']);
  assert.deepEqual(b.positionals, [{ value: 'model', index: 0 }]);
  assert.equal(b.number('--x'), 5);
  assert.equal(b.all('--x').length, 2);
  assert.equal(b.all('--x')[0]?.value, '-1');
  assert.equal(b.string('--y'), 'a=b');
  assert.equal(b.get('--flag')?.value, true);
  assert.equal(b.get('--z')?.json?.ok, false);
  assert.equal(b.number('-tp'), 2);
  assert.equal(b.has('--nope'), false);

  const { recipe: d } = await readRecipe(DSV41);
  const s = parseArgs(d.args);
  assert.equal(s.number('--cuda-graph-max-bs-decode'), 16);
  assert.equal(s.get('--enable-decoder-swa-bounded-replay')?.value, true);
  assert.equal(s.string('--speculative-algorithm'), 'DSPARK');
});

test('argvForExec unwraps shell-quoted JSON and leaves everything else alone', async () => {
  const { recipe } = await readRecipe(EUGR);
  const argv = argvForExec(recipe.args);
  const i = recipe.args.indexOf('--speculative-config');
  assert.equal(
    argv[i + 1],
    '{"method":"dspark","num_speculative_tokens":5,"draft_sample_method":"probabilistic","attention_backend":"B12X_MLA_SPARSE"}',
  );
  assert.equal(argv.filter((x, j) => x !== recipe.args[j]).length, 3);
  assert.deepEqual(argvForExec(['--a=\'{"k":1}\'', "'not json'", "'{bad'"]), ['--a={"k":1}', "'not json'", "'{bad'"]);
});
