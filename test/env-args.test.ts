import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SparkError } from '../src/errors.js';
import { argvForExec, parseArgs, parseEnvFile, readEnvFile, readRecipe } from '../src/recipes/index.js';
import { EUGR, MIA_ENV, DSV41 } from './helpers/preflight.js';

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
  const v = (k: string) => env.vars.get(k)?.value;
  assert.equal(v('A'), '3');
  assert.equal(v('B'), 'two words');
  assert.equal(v('C'), '$A literal # not a comment');
  assert.equal(v('D'), 'x1y two words $A "q" \n');
  assert.equal(v('E'), '/home/u/.ssh/id');
  assert.equal(v('F'), 'fallback-1-e-');
  assert.equal(v('G'), 'a#b');
  assert.equal(v('H'), 'multi\nline');
  assert.equal(v('I'), '');
  assert.equal(v('J'), '3');
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
  const bad = (src: string, re: RegExp) =>
    assert.throws(
      () => parseEnvFile(src, 'x.env', {}),
      (e: unknown) => e instanceof SparkError && e.code === 'E_ENV_FILE' && e.exitCode === 2 && re.test(e.message),
    );
  bad('A=1\nnot a line', /^x\.env:2: expected '=' after not/);
  bad('A=1\n=2', /^x\.env:2: expected KEY=value/);
  bad('A="open\nB=2', /^x\.env:1: A: the double quote opened here is never closed/);
  bad("A='x' y", /^x\.env:1: A: unexpected text after the closing quote/);
});

test('the mia-tp4 env file parses as it is', async () => {
  const env = await readEnvFile(MIA_ENV, { HOME: '/home/zurih' });
  assert.equal(env.entries.length, 81);
  assert.deepEqual(env.diagnostics, []);
  const v = (k: string) => env.vars.get(k)?.value;
  assert.equal(v('SSH_IDENTITY'), '/home/zurih/.ssh/id_ed25519_shared');
  assert.equal(v('NCCL_PROTO'), '^LL128');
  assert.equal(v('PYTORCH_CUDA_ALLOC_CONF'), 'expandable_segments:False');
  assert.equal(v('EXTRA_SGLANG_ARGS'), '--fp8-gemm-backend flashinfer_cutlass --watchdog-timeout 1800 --sleep-on-idle');
  assert.equal(v('BASE_IMAGE'), 'lmsysorg/sglang:dev-dsv41@sha256:3dbc313030a6ef2c5d7de8ecf48e9aece722694a82182cb618cc82b588816349');
  assert.equal(v('DSV41_PREFILL_EMPTY_CACHE_TOKENS'), '8192');
  const withoutHome = await readEnvFile(MIA_ENV, {});
  assert.deepEqual(
    withoutHome.diagnostics.map((d) => d.key),
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
  assert.equal(argv[i + 1], '{"method":"dspark","num_speculative_tokens":5,"draft_sample_method":"probabilistic","attention_backend":"B12X_MLA_SPARSE"}');
  assert.equal(argv.filter((x, j) => x !== recipe.args[j]).length, 3);
  assert.deepEqual(argvForExec(["--a='{\"k\":1}'", "'not json'", "'{bad'"]), ['--a={"k":1}', "'not json'", "'{bad'"]);
});
