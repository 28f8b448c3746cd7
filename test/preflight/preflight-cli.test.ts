// `spark preflight` end to end: the users' recipes, a recipe that must fail, the report. The
// other variants that must fail: test/long/preflight-cli-variants.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bin, cli } from '../helpers/cli.js';
import { DSV41, edit, EUGR, MIA_ENV, world } from '../helpers/preflight.js';
import { args, errors, json, lineOf } from '../helpers/preflight-cli.js';

test('the dsv41 recipe with a complete DSV4.1-shaped snapshot: no error', async () => {
  const w = await world();
  const { code, report } = await json(args(w, w.recipe(w.dsv41Text)));
  assert.deepEqual(errors(report), []);
  assert.equal(code, 0);
  assert.equal(report.snapshot?.how, 'SPARK_ENGRAM_DIR');
  assert.equal(report.snapshot?.dir, w.snapshotDir);
  assert.deepEqual(report.node, { rank: 0, host: 'spark1' });
  for (const id of [
    'snapshot.complete',
    'snapshot.engram-tables',
    'parallel.tp-divides',
    'model.context-length',
    'snapshot.engram-dir',
    'engram.ranges-source',
    'fabric.hca',
    'node.ports',
  ]) {
    assert.ok(report.ran.includes(id), `${id} ran`);
  }
});

test('the dsv41 recipe verbatim: the one error is the wrapper script missing on this node', async () => {
  const w = await world();
  const { code, report } = await json(args(w, DSV41));
  assert.equal(code, 1);
  assert.deepEqual(
    errors(report).map((f) => [f.rule, f.where]),
    [['mounts.host-path', `${DSV41}:100`]],
  );
  assert.match(errors(report)[0]!.message, /\/home\/kilork\/aiden4x-launch\.sh/);
});

test('the eugr recipe and the mia-tp4 env pass as they are', async () => {
  const w = await world();
  const eugr = await json(args(w, w.recipe(w.eugrText), ['--cluster', w.writeCluster({ nodes: 2 })]));
  assert.deepEqual(errors(eugr.report), []);
  assert.equal(eugr.code, 0);
  // expandable_segments:True is on purpose on this vLLM stack: no finding.
  assert.ok(!eugr.report.ran.includes('alloc.expandable-segments'));
  const mia = await json(args(w, w.recipe(w.dsv41Text), ['--env', MIA_ENV]), { HOME: '/home/zurih' });
  assert.deepEqual(errors(mia.report), []);
});

/** Runs a variant, expects exit 1 and an error of `rule` whose message names `key`. */
test('the human report groups findings by severity, each with where and the fix', async () => {
  const w = await world();
  const text = edit(edit(w.eugrText, '"0.78"', '"0.80"'), '"--max-num-seqs", "6"', '"--max-num-seqs", "8"');
  const r = await cli(args(w, w.recipe(text), ['--cluster', w.writeCluster({ nodes: 2 })]));
  assert.equal(r.code, 1);
  const out = r.stdout;
  assert.match(out, /^preflight .*recipe\.toml: vllm-dsv4 \(family from model id\), 2 nodes; node 0 \(spark1\)$/m);
  const errorsAt = out.indexOf('ERRORS (1)');
  const warnAt = out.indexOf('WARNINGS (1)');
  assert.ok(errorsAt > 0 && warnAt > errorsAt, out);
  assert.match(
    out.slice(errorsAt, warnAt),
    /vllm\.cudagraph-capture: .*\n {4}at .*recipe\.toml:\d+\n {4}fix: set --max-cudagraph-capture-size 48/,
  );
  assert.match(out.slice(warnAt), /memory\.utilization-ceiling: --gpu-memory-utilization 0\.80 is above 0\.78/);
  assert.match(out, /^1 error, 1 warning, 0 notes; \d+ rules ran, \d+ not checked \(\d+ ms\)$/m);
});

test('exit codes: a warning alone is 0; a malformed recipe is 2 with one line naming file:line', async () => {
  const w = await world();
  const warnOnly = await cli(
    args(w, w.recipe(edit(w.eugrText, '"0.78"', '"0.80"')), ['--cluster', w.writeCluster({ nodes: 2 })]),
  );
  assert.equal(warnOnly.code, 0, warnOnly.stdout);
  assert.match(warnOnly.stdout, /WARNINGS \(1\)/);

  const bad = w.recipe(edit(w.dsv41Text, 'required_nodes = 4', 'required_nodes = "four"'));
  const r = bin(['preflight', bad]);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, '');
  assert.match(
    r.stderr,
    new RegExp(
      `^spark: ${bad.replace(/[.]/g, '\\.')}:\\d+: required_nodes must be an integer, got string; write it as required_nodes = 1\\n$`,
    ),
  );
  const j = bin(['preflight', bad, '--json']);
  assert.equal(j.code, 2);
  const e = JSON.parse(j.stderr) as { error: { code: string; key: string; line: number } };
  assert.equal(e.error.code, 'E_RECIPE');
  assert.equal(e.error.key, 'required_nodes');
  assert.equal(e.error.line, lineOf(readFileSync(bad, 'utf8'), 'required_nodes'));

  assert.equal((await cli(['preflight', join(w.root, 'missing.toml')])).code, 2);
  assert.equal((await cli(['preflight', bad, '--only', 'no.such-rule'])).code, 2);
  assert.equal((await cli(['preflight', DSV41, '--cluster', w.cluster, '--node-rank', '9'])).code, 2);
});

test('with --local on a host that is not in the cluster, node-local rules are reported as not checked', async () => {
  const w = await world();
  const { report } = await json([
    'preflight',
    w.recipe(w.dsv41Text),
    '--cluster',
    w.cluster,
    '--sysfs',
    w.sysfs,
    '--local',
  ]);
  assert.equal(report.node, null);
  const skipped = report.skipped.map((s) => s.rule);
  for (const id of ['mounts.host-path', 'fabric.hca', 'node.ports', 'snapshot.engram-dir'])
    assert.ok(skipped.includes(id), id);
  assert.ok(report.ran.includes('toml.swallowed-key'));
});

test('NODE_RANK picks the node; --skip and --only select rules', async () => {
  const w = await world();
  const file = w.recipe(w.dsv41Text);
  const { report } = await json(['preflight', file, '--cluster', w.cluster, '--sysfs', w.sysfs], { NODE_RANK: '2' });
  assert.deepEqual(report.node, { rank: 2, host: 'spark3' });
  assert.ok(!report.ran.includes('node.ports') || report.findings.every((f) => f.rule !== 'node.ports'));
  const only = await json([...args(w, file), '--only', 'fabric']);
  assert.deepEqual(only.report.ran.sort(), ['fabric.gid', 'fabric.hca', 'fabric.socket-ifname']);
  const skip = await json([...args(w, file), '--skip', 'fabric,node.ports']);
  assert.ok(!skip.report.ran.some((id) => id.startsWith('fabric.') || id === 'node.ports'));
});

test('without a snapshot, preflight reads no shard and takes well under a second', async () => {
  const w = await world();
  const { report } = await json(['preflight', EUGR, '--sysfs', w.sysfs, '--node-rank', '0']);
  assert.equal(report.snapshot, null);
  assert.ok(report.seconds < 0.5, `${report.seconds} s`);
});
