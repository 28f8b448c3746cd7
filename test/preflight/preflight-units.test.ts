// The small functions behind the rules, on inputs the fixtures do not reach.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sharedRowsProblem } from '../../src/stacks/overlay/ranges-rules.js';
import { wrapperScript } from '../../src/preflight-api/node-paths.js';
import { expandableSegmentsOn } from '../../src/preflight/rules/alloc.js';
import { speculativeTokens } from '../../src/preflight/rules/cudagraph.js';
import { addressInRange } from '../../src/preflight/rules/cluster.js';
import { missingInterfaces, pinnedIndex } from '../../src/preflight/rules/fabric.js';
import { parseTokenCount } from '../../src/preflight/rules/model.js';
import { packBytesPerRank } from '../../src/preflight/rules/pack.js';
import { preflightRules, ruleSelected } from '../../src/preflight/index.js';
import { withStackRules } from '../../src/preflight/rules/index.js';
import { defineRule } from '../../src/preflight-api/rule.js';
import type { Rule, StackPreflight } from '../../src/preflight-api/types.js';
import { stackPreflights } from '../../src/stacks/registry.js';

const REAL = [
  { layer: 1, rows: 384_006_168 },
  { layer: 14, rows: 384_016_682 },
];

test('one SPARK_ENGRAM_ROWS for every rank: full range, partial range, bad grammar, one rank', () => {
  assert.match(
    sharedRowsProblem('1:0:384006168,14:0:384016682', 4, REAL)!,
    /same rows.*layer 1: row 0 is owned by rank 0 .* and rank 1 .*double-counts/,
  );
  assert.match(sharedRowsProblem('1:0:96001542,14:0:96004170', 4, REAL)!, /layer 1: row 0 is owned by rank 0/);
  assert.match(
    sharedRowsProblem('1:0:96001542,14:0:96004170', 1, REAL)!,
    /does not tile \[0, N\): layer 1: rows \[96001542, 384006168\) belong to no rank/,
  );
  assert.equal(sharedRowsProblem('1:0:384006168,14:0:384016682', 1, REAL), undefined);
  assert.match(sharedRowsProblem('14:0:5,1:0:5', 2)!, /ascending/);
  assert.match(sharedRowsProblem('1:5:0', 2)!, /1:5:0/);
});

test('wrapper scripts, allocator settings, speculative k, ranges, device lists, sizes', () => {
  assert.equal(wrapperScript(['sh', '/aiden4x-launch.sh']), '/aiden4x-launch.sh');
  assert.equal(wrapperScript(['/usr/bin/bash', '/x.sh', 'a']), '/x.sh');
  assert.equal(wrapperScript(['/run.sh']), '/run.sh');
  assert.equal(wrapperScript(['sh', '-c', 'exec x']), undefined);
  assert.equal(wrapperScript(['python3', '-m', 'sglang.launch_server']), undefined);

  assert.equal(expandableSegmentsOn('expandable_segments:True'), true);
  assert.equal(expandableSegmentsOn('max_split_size_mb:128, expandable_segments : true'), true);
  assert.equal(expandableSegmentsOn('expandable_segments:False'), false);
  assert.equal(expandableSegmentsOn('garbage_collection_threshold:0.6'), false);

  assert.equal(speculativeTokens({ method: 'dspark', num_speculative_tokens: 5 }), 5);
  assert.equal(speculativeTokens({ method: 'ngram' }), undefined);
  assert.equal(speculativeTokens('5'), undefined);

  assert.equal(addressInRange('192.168.200.4', '192.168.200.0/24'), true);
  assert.equal(addressInRange('192.168.201.4', '192.168.200.0/24'), false);
  assert.equal(addressInRange('10.0.33.3', '10.0.0.0/16'), true);
  assert.equal(addressInRange('fd00::1', '192.168.200.0/24'), false);
  assert.equal(addressInRange('192.168.200.4', 'nonsense'), undefined);

  assert.deepEqual(missingInterfaces('enp1s0f0np0,enP7', ['enp1s0f0np0', 'enP7s7'], false), []);
  assert.deepEqual(missingInterfaces('=enP7', ['enP7s7'], false), ['enP7']);
  assert.deepEqual(missingInterfaces('enP7', ['enP7s7'], true), ['enP7']);
  assert.deepEqual(missingInterfaces('^docker,lo', [], false), []);

  assert.deepEqual(pinnedIndex('3'), { index: 3 });
  assert.deepEqual(pinnedIndex(''), { index: 0, note: "'' is read as 0" });
  assert.deepEqual(pinnedIndex('3x'), { index: 3, note: "'3x' is read as 3" });

  assert.equal(parseTokenCount('524288'), 524288);
  assert.equal(parseTokenCount('128k'), 128_000);
  assert.equal(parseTokenCount('1M'), 1_048_576);
  assert.equal(parseTokenCount('auto'), undefined);

  // One rank's dense share of the real tables with 4 ranks: 47.2 GiB (docs/engram-tables.md).
  const bytes = packBytesPerRank([384_006_168, 384_016_682], 256, 4);
  assert.equal((bytes / 2 ** 30).toFixed(1), '47.2');

  assert.equal(ruleSelected('fabric.hca', ['fabric']), true);
  assert.equal(ruleSelected('fabric.hca', ['fabric.']), true);
  assert.equal(ruleSelected('fabricx.hca', ['fabric']), false);
  assert.equal(ruleSelected('fabric.hca', ['fabric.hca']), true);
});

test('a rule that cannot read what it needs is reported as not checked, and the others still run', async () => {
  const { world, preflight } = await import('../helpers/preflight.js');
  const { mkdirSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const w = await world();
  const dir = join(w.root, 'bad-config');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), '{not json');
  const r = await preflight(w.options(w.recipe(w.dsv41Text), { snapshot: dir, only: ['parallel', 'docker'] }));
  assert.deepEqual(r.ran.sort(), ['docker.shm-size', 'parallel.ep-size', 'parallel.nodes']);
  assert.deepEqual(
    r.skipped.map((s) => s.rule),
    ['parallel.tp-divides'],
  );
  assert.match(r.skipped[0]!.reason, /^could not check: .*config\.json: not valid JSON/);
});

test("each stack's preflight rules sit after the rule its room names, stacks in registry order", async () => {
  const rule = (id: string): Rule =>
    defineRule({ id, title: id, severity: 'info', scope: 'files', evidence: '', fix: '', check: () => [] });
  const [a, b, c, x, y, z] = ['own.a', 'own.b', 'own.c', 'one.x', 'two.y', 'two.z'].map(rule) as Rule[];
  const stacks: StackPreflight[] = [
    { rules: [{ after: 'own.b', rules: [x!] }] },
    {
      rules: [
        { after: 'own.b', rules: [y!] },
        { after: 'own.a', rules: [z!] },
      ],
    },
  ];
  assert.deepEqual(
    withStackRules([a!, b!, c!], stacks).map((r) => r.id),
    ['own.a', 'two.z', 'own.b', 'one.x', 'two.y', 'own.c'],
  );
  assert.throws(
    () => withStackRules([a!], [{ rules: [{ after: 'own.gone', rules: [x!] }] }]),
    /follow 'own.gone', which is no preflight rule/,
  );
  // The registry's stacks: every rule of each appears once in the list preflight runs.
  const all = (await preflightRules()).map((r) => r.id);
  const theirs = (await stackPreflights()).flatMap((s) => s.rules.flatMap((g) => g.rules.map((r) => r.id)));
  assert.ok(theirs.length > 0);
  for (const id of theirs) assert.equal(all.filter((x) => x === id).length, 1, id);
});
