import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { bin } from './helpers/cli.js';
import { killTrials } from './helpers/pack-process.js';
import { makeSnapshot } from './helpers/synth.js';
import { tempDir } from './helpers/tmp.js';

// kill -9 of a real `spark pack` at random moments, then the same command again: the directory
// must either be refused by verify (no manifest) or verify completely, and the resumed pack
// must verify against the source byte for byte. 20 trials; every third one also kills the
// resume before letting a third run finish.
const TRIALS = 20;
const snap = makeSnapshot({ vocab: 5000 });

function packArgs(out: string): string[] {
  return ['pack', snap.dir, '--out', out, '--layout', 'dense', '--rank', '0', '--world', '1', '--chunk-rows', '1024', '--sync-every', '4', '--threads', '1', '--json'];
}

function verifiesFully(out: string): void {
  const v = bin(['verify', out, '--source', snap.dir, '--full', '--json']);
  assert.equal(v.code, 0, v.stdout + v.stderr);
  assert.equal(JSON.parse(v.stdout).ok, true);
}

test(`kill -9 at ${TRIALS} random points, then resume: verify refuses or passes, and the resumed pack verifies --full`, async (t) => {
  // Kill points: from the start of the copy to near the end of a whole pack, so
  // most land in the copy of either layer, some in the final syncs, renames and the manifest.
  const seen = await killTrials(
    {
      trials: TRIALS,
      packArgs,
      async afterKill(out, i) {
        const v = bin(['verify', out]);
        if (existsSync(join(out, 'spark-pack.json'))) {
          assert.equal(v.code, 0, `trial ${i}: a directory with a manifest must be complete: ${v.stderr}`);
          verifiesFully(out);
          return true;
        }
        assert.equal(v.code, existsSync(out) ? 1 : 2, `trial ${i}: ${v.stderr}`);
        if (existsSync(out)) assert.match(v.stderr, /not a pack/);
        return false;
      },
      afterResume: async (out) => verifiesFully(out),
    },
    () => join(tempDir(), 'pack'),
  );
  t.diagnostic(`copy ${seen.copyMs.toFixed(0)} ms; killed ${seen.killed}, complete before the kill ${seen.complete}, resumes keeping chunks ${seen.resumedWithKept}`);
  // The trials must have hit the interesting states, not only "killed before starting".
  assert.ok(seen.killed >= TRIALS / 2, `only ${seen.killed} of ${TRIALS} runs were killed`);
  assert.ok(seen.resumedWithKept >= 3, `only ${seen.resumedWithKept} resumes kept journaled chunks`);
});
