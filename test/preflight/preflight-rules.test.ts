// Every rule, one fixture that passes and one that fails. Each case runs the rule alone
// (--only) against a world built in a temp dir (test/helpers/preflight.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { preflightRules } from '../../src/preflight/index.js';
import { edit, preflight, world, write } from '../helpers/preflight.js';
import { CASES } from '../helpers/rule-cases.js';
import { needsRoot } from '../helpers/external-tool.js';
import { type RuleCase, fullRange, tables, manifest, heldPorts } from '../helpers/rule-fixtures.js';

const RULES = await preflightRules();

const dottedSpec = (text: string) =>
  edit(
    text,
    /"--speculative-config", """\n'\{[^']*\}'""",/,
    '"--speculative-config.method", "dspark",\n    "--speculative-config.num_speculative_tokens", "5",',
  );

/** Mistakes the rules used to miss: each a rule's failing and passing fixture. */
const MISSED: (RuleCase & { name: string })[] = [
  {
    name: "vLLM's dotted --speculative-config.num_speculative_tokens in the capture-size rule",
    rule: 'vllm.cudagraph-capture',
    pass: (w) => w.options(w.recipe(dottedSpec(w.eugrText)), { cluster: w.writeCluster({ nodes: 2 }) }),
    fail: (w) =>
      w.options(w.recipe(edit(dottedSpec(w.eugrText), '"--max-num-seqs", "6"', '"--max-num-seqs", "8"')), {
        cluster: w.writeCluster({ nodes: 2 }),
      }),
    expect: /--max-cudagraph-capture-size 36 is below --max-num-seqs 8 × \(k\+1 = 6\) = 48/,
  },
  {
    name: "PyTorch's newer PYTORCH_ALLOC_CONF",
    rule: 'alloc.expandable-segments',
    pass: (w) =>
      w.options(
        w.recipe(
          edit(w.dsv41Text, 'CUDA_DEVICE_ORDER', 'PYTORCH_ALLOC_CONF = "expandable_segments:False"\nCUDA_DEVICE_ORDER'),
        ),
      ),
    fail: (w) =>
      w.options(
        w.recipe(
          edit(w.dsv41Text, 'CUDA_DEVICE_ORDER', 'PYTORCH_ALLOC_CONF = "expandable_segments:True"\nCUDA_DEVICE_ORDER'),
        ),
      ),
    expect: /^PYTORCH_ALLOC_CONF=expandable_segments:True \(from the recipe's \[env\]\) gives NaN logits/,
  },
  {
    name: 'SGLang --mem-fraction-static too high for unified memory',
    rule: 'memory.utilization-ceiling',
    pass: (w) =>
      w.options(w.recipe(edit(w.dsv41Text, '"--mem-fraction-static", "0.80"', '"--mem-fraction-static", "0.95"'))),
    fail: (w) =>
      w.options(w.recipe(edit(w.dsv41Text, '"--mem-fraction-static", "0.80"', '"--mem-fraction-static", "0.97"'))),
    expect: /^--mem-fraction-static 0\.97 is above 0\.95, the most measured to work on unified memory/,
  },
  {
    name: '--tp given only in args',
    rule: 'parallel.nodes',
    pass: (w) =>
      w.options(
        w.recipe(
          edit(
            edit(w.dsv41Text, 'tensor_parallel_size = 4\n', ''),
            '"--trust-remote-code",',
            '"--trust-remote-code", "--tp", "4",',
          ),
        ),
      ),
    fail: (w) =>
      w.options(w.recipe(edit(w.dsv41Text, '"--trust-remote-code",', '"--trust-remote-code", "--tp", "2",'))),
    expect: /^tensor_parallel_size = 4 but args sets --tp 2; the launcher appends --tp-size 4/,
    where: /recipe\.toml:\d+$/,
  },
];

/** Ports (and mounts) a failing fixture holds until its case is done. */

test('every rule on one machine has a passing and a failing fixture below (cluster rules: preflight-cluster.test.ts)', () => {
  assert.deepEqual(
    CASES.map((c) => c.rule).sort(),
    RULES.filter((r) => r.scope !== 'cluster')
      .map((r) => r.id)
      .sort(),
  );
});

for (const c of [...CASES, ...MISSED]) {
  test(`${'name' in c ? `${c.rule} (${c.name})` : c.rule}: passes on its good fixture, fails on its bad one`, async (t) => {
    if (c.mounts !== undefined && !needsRoot(t, c.mounts)) return;
    const w = await world();
    const rule = RULES.find((r) => r.id === c.rule)!;
    const good = await preflight({ ...(await c.pass(w)), only: [c.rule] }, c.env);
    assert.deepEqual(good.ran, [c.rule], `ran (skipped: ${JSON.stringify(good.skipped)})`);
    assert.deepEqual(
      good.findings.filter((f) => f.severity !== 'info'),
      [],
    );

    let bad: Awaited<ReturnType<typeof preflight>>;
    try {
      bad = await preflight({ ...(await c.fail(w)), only: [c.rule] }, c.env);
    } finally {
      await Promise.all(heldPorts.splice(0).map((h) => h.close()));
    }
    assert.deepEqual(bad.ran, [c.rule], `ran (skipped: ${JSON.stringify(bad.skipped)})`);
    const want = c.severity ?? rule.severity;
    const hit = bad.findings.find((f) => f.severity === want && c.expect.test(f.message));
    assert.ok(hit, `no ${want} matching ${c.expect} in ${JSON.stringify(bad.findings, null, 1)}`);
    assert.equal(hit.rule, c.rule);
    assert.ok(hit.fix.length > 0);
    if (c.where) assert.match(hit.where, c.where);
    if (rule.scope === 'local-node') assert.deepEqual(hit.node, { rank: 0, host: 'spark1' });
  });
}

test('model.context-length: VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 is honoured (a warning, not an error)', async () => {
  const w = await world();
  const long = edit(w.eugrText, '"--max-model-len", "1048576"', '"--max-model-len", "2M"');
  const opts = (text: string) => ({
    ...w.options(w.recipe(text), { cluster: w.writeCluster({ nodes: 2 }), snapshot: w.snapshotDir }),
    only: ['model.context-length'],
  });
  const refused = await preflight(opts(long));
  assert.deepEqual(
    refused.findings.map((f) => f.severity),
    ['error'],
  );
  assert.match(refused.findings[0]!.message, /--max-model-len 2M is above the model's max_position_embeddings 1048576/);
  const allowed = await preflight(
    opts(edit(long, 'HF_HUB_OFFLINE = "1"', 'HF_HUB_OFFLINE = "1"\nVLLM_ALLOW_LONG_MAX_MODEL_LEN = "1"')),
  );
  assert.deepEqual(
    allowed.findings.map((f) => f.severity),
    ['warn'],
  );
  assert.match(
    allowed.findings[0]!.message,
    /VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 \(.*recipe\.toml:\d+\) makes the engine accept it/,
  );
  const sglang = edit(w.dsv41Text, '"--context-length", "524288"', '"--context-length", "2M"');
  const sg = await preflight({
    ...w.options(
      w.recipe(
        edit(sglang, 'CUDA_DEVICE_ORDER', 'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN = "true"\nCUDA_DEVICE_ORDER'),
      ),
    ),
    only: ['model.context-length'],
  });
  assert.deepEqual(
    sg.findings.map((f) => f.severity),
    ['warn'],
  );
});

test("the model's identity comes from config.json, not its name", async () => {
  const w = await world();
  // A local path as the model: by its name no rule would know it is DeepSeek-V4.1.
  const renamed = edit(
    edit(w.dsv41Text, 'model = "deepseek-ai/DeepSeek-V4.1-Flash"', 'model = "/models/dsv41-native"'),
    /parent_model = .*\n/,
    '',
  );
  const text = edit(renamed, 'SPARK_ENGRAM_MODE', `SPARK_ENGRAM_ROWS = "${fullRange(w)}"\nSPARK_ENGRAM_MODE`);
  // Without a cluster file SPARK_ENGRAM_DIR maps nowhere: no config.json, so only the name is left.
  const byName = await preflight({ recipe: w.recipe(text), nodeRank: 0, sysfs: w.sysfs, only: ['engram.ranges-tile'] });
  assert.deepEqual(byName.family, { name: 'other', from: 'model id' });
  assert.deepEqual(byName.ran, []);
  // Through the cluster's hf_cache (or --snapshot), config.json says deepseek V4.1 with Engram tables.
  const byConfig = await preflight({ ...w.options(w.recipe(text)), only: ['engram.ranges-tile'] });
  assert.deepEqual(byConfig.family, { name: 'dsv41', from: 'config.json' });
  assert.equal(byConfig.stack, 'sglang-dsv41');
  assert.deepEqual(
    byConfig.findings.map((f) => f.rule),
    ['engram.ranges-tile'],
  );
});

test("a copy's row counts are checked against the node's snapshot", async () => {
  const w = await world();
  write(join(w.root, 'pack-rows', 'engram-local.json'), manifest(w, 0, 123));
  const r = await preflight({
    ...w.options(w.recipe(w.packedText), { packDir: join(w.root, 'pack-rows') }),
    only: ['pack.manifest'],
  });
  const rows = tables(w)[0]![1];
  const want = new RegExp(
    `engram-local\\.json: layer 1's table has 123 rows, the snapshot's has ${rows}: it was made from another checkpoint$`,
  );
  assert.ok(
    r.findings.some((f) => f.severity === 'error' && want.test(f.message)),
    JSON.stringify(r.findings, null, 1),
  );
});
