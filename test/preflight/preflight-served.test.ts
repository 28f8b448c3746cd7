// Preflight's honesty: a rule that throws because of a bug is an internal error (exit 3), not a
// quiet "not checked"; `spark launch` checks the very snapshot it serves; one resolver of the
// Hugging Face cache for launch, preflight and the snapshot reader.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SparkError } from '../../src/errors/errors.js';
import { hfModelDir, resolveRevision, revisionOfSnapshotDir } from '../../src/engram/hf-cache.js';
import { runPreflight } from '../../src/preflight/index.js';
import { defineRule } from '../../src/preflight-api/rule.js';
import { ENGINES } from '../../src/recipes/index.js';
import type { Rule } from '../../src/preflight-api/types.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { cli } from '../helpers/cli.js';
import { fakeNodes } from '../helpers/fake-node.js';
import { AIDEN16, REV, writeCluster } from '../helpers/launch-files.js';
import { quietIo, world } from '../helpers/preflight.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';

const OTHER = '0123456789abcdef0123456789abcdef01234567';

function throwingRule(id: string, err: unknown): Rule {
  return defineRule({
    id,
    title: 'throws',
    engines: ENGINES,
    severity: 'error',
    scope: 'files',
    evidence: 'test',
    fix: 'none',
    check() {
      throw err;
    },
  });
}

test('a rule that throws a bug is exit 3 naming the rule; environment errors stay "not checked"', async () => {
  const w = await world();
  const recipe = w.recipe(w.dsv41Text);
  const options = { recipe, cluster: w.cluster, nodeRank: 0, sysfs: w.sysfs };
  const eacces = Object.assign(new Error("EACCES: permission denied, open '/mnt/x'"), {
    code: 'EACCES',
    syscall: 'open',
    path: '/mnt/x',
  });
  const env = [
    throwingRule('t.eacces', eacces),
    throwingRule('t.config', new SparkError('E_CONFIG', '/snap/config.json: not valid JSON')),
  ];
  const report = await runPreflight(options, quietIo(), env);
  assert.deepEqual(report.ran, []);
  assert.deepEqual(
    report.skipped.map((s) => s.rule),
    ['t.eacces', 't.config'],
  );
  assert.match(report.skipped[0]!.reason, /^could not check: \/mnt\/x: permission denied: .* \(EACCES on open\)$/);

  for (const bug of [
    new TypeError("Cannot read properties of undefined (reading 'rank')"),
    new SparkError('E_INTERNAL', 'unreachable'),
    'a string',
  ]) {
    await assert.rejects(runPreflight(options, quietIo(), [...env, throwingRule('t.bug', bug)]), (e: SparkError) => {
      assert.equal(e.code, 'E_INTERNAL');
      assert.equal(e.exitCode, 3);
      assert.match(
        e.message,
        /^preflight rule t\.bug failed with an internal error \(a bug in spark; please report it\): .+; --skip t\.bug runs the other rules$/,
      );
      assert.equal(e.message.split('\n').length, 1);
      return true;
    });
  }
});

test('spark launch --revision X preflights snapshot X, the one it serves', async () => {
  // Two snapshots of the model: the recipe's SPARK_ENGRAM_DIR (REV, complete) and OTHER,
  // missing a shard. Serving OTHER must be checked as OTHER.
  const cache = tempDir('spark-hf-');
  const modelDir = hfModelDir(cache, 'deepseek-ai/DeepSeek-V4.1-Flash');
  makeSnapshot({ dir: join(modelDir, 'snapshots', REV) });
  makeSnapshot({ dir: join(modelDir, 'snapshots', OTHER) });
  mkdirSync(join(modelDir, 'refs'));
  writeFileSync(join(modelDir, 'refs', 'main'), REV);
  rmSync(join(modelDir, 'snapshots', OTHER, 'model-00001-of-00003.safetensors'));
  const cluster = writeCluster({
    name: 'served',
    hosts: ['s1', 's2', 's3', 's4'],
    fabric: ['192.168.200.11', '192.168.200.12', '192.168.200.13', '192.168.200.14'],
    hfCache: cache,
  });
  const fake = fakeNodes();
  const r = await cli(['launch', AIDEN16, '--cluster', cluster, '--revision', OTHER, '--timeout', '1'], fake.env());
  assert.equal(r.code, 1, r.stderr);
  assert.ok(r.stderr.includes(`snapshot: ${join(modelDir, 'snapshots', OTHER)} (from launch)`), r.stderr);
  assert.match(
    r.stderr,
    /snapshots\/0123456789abcdef0123456789abcdef01234567\/model-00001-of-00003\.safetensors: shard is missing/,
  );
  // Preflight asked every node about the served snapshot (ssh, docker image inspect); nothing started.
  assert.deepEqual(
    fake.calls().filter((c) => c.prog === 'docker' && c.argv[0] !== 'image'),
    [],
    'nothing started',
  );

  // Serving REV (the complete one) passes the same check.
  // (On this machine as node 0: the nodes s1-s4 exist only in the cluster file.)
  const ok = await cli([
    'preflight',
    AIDEN16,
    '--cluster',
    cluster,
    '--node-rank',
    '0',
    '--only',
    'snapshot.complete',
    '--json',
  ]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(JSON.parse(ok.stdout).snapshot.dir, join(modelDir, 'snapshots', REV));
  assert.deepEqual(JSON.parse(ok.stdout).ran, ['snapshot.complete']);
});

test('one revision resolver: pinned commits, refs, the only snapshot, bad refs', async () => {
  const cache = tempDir('spark-hf-');
  const modelDir = hfModelDir(cache, 'org/m');
  mkdirSync(join(modelDir, 'snapshots', OTHER), { recursive: true });
  // No refs at all: the only snapshot present.
  assert.deepEqual(await resolveRevision(modelDir), { revision: OTHER, from: 'only snapshot' });
  // A pinned commit is taken as is; a pinned ref must exist.
  assert.deepEqual(await resolveRevision(modelDir, { pinned: REV }), { revision: REV, from: 'pinned' });
  await assert.rejects(
    resolveRevision(modelDir, { pinned: 'v2' }),
    (e: SparkError) => e.code === 'E_SNAPSHOT' && e.message.includes('refs/v2 is not readable'),
  );
  await assert.rejects(resolveRevision(modelDir, { pinned: '../x' }), { code: 'E_USAGE' });
  mkdirSync(join(modelDir, 'refs'));
  writeFileSync(join(modelDir, 'refs', 'main'), `${REV}\n`);
  assert.deepEqual(await resolveRevision(modelDir), { revision: REV, from: 'refs', ref: 'refs/main' });
  writeFileSync(join(modelDir, 'refs', 'main'), 'dba1be0');
  await assert.rejects(
    resolveRevision(modelDir),
    (e: SparkError) => e.code === 'E_SNAPSHOT' && e.message.includes('not a commit hash'),
  );
  // A snapshot directory's revision: only a full commit under snapshots/.
  assert.equal(revisionOfSnapshotDir(join(modelDir, 'snapshots', OTHER)), OTHER);
  assert.equal(revisionOfSnapshotDir(join(modelDir, 'snapshots', 'dba1be0')), undefined);
  assert.equal(revisionOfSnapshotDir(join(cache, OTHER)), undefined);
  const snap = makeSnapshot({ dir: join(modelDir, 'snapshots', REV) });
  assert.equal((await openSnapshot(snap.dir)).revision, REV);
});
