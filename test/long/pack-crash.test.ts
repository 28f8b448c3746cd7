import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bin } from '../helpers/cli.js';
import { killTrials } from '../helpers/pack-process.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import { encodeMiaHeader, miaShardBytes, miaShardName, parseMiaShardName } from '../../src/stacks/mia/mia-shard.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { synthRow } from '../../src/synth/synth-rows.js';

// kill -9 of a real `spark pack --layout dense` at random moments, then the same command again:
// after every kill, each file under a Mia shard name (the names the Mia stack's reader opens,
// and aborts on when anything is off) is complete and correct, header, size and every row; the
// directory is either no pack yet or verifies completely; the resumed pack verifies against the
// source byte for byte. 20 trials; every third one also kills the resume before letting a third
// run finish.
const TRIALS = 20;
const snap = makeSnapshot({ vocab: 5000 });

function packArgs(out: string): string[] {
  return [
    'pack',
    snap.dir,
    '--out',
    out,
    '--layout',
    'dense',
    '--rank',
    '0',
    '--world',
    '1',
    '--chunk-rows',
    '1024',
    '--sync-every',
    '4',
    '--threads',
    '1',
    '--json',
  ];
}

function verifiesFully(out: string): void {
  const v = bin(['verify', out, '--source', snap.dir, '--full', '--json']);
  assert.equal(v.code, 0, v.stdout + v.stderr);
  assert.equal(JSON.parse(v.stdout).ok, true);
}

const tables = (await openSnapshot(snap.dir, { engramOnly: true })).engram;

/** Every file under a shard name in `out` is the whole, correct shard of rank 0 of 1. */
function shardsWhole(out: string, trial: number): void {
  if (!existsSync(out)) return;
  for (const name of readdirSync(out).filter((n) => parseMiaShardName(n))) {
    const t = tables.find((x) => miaShardName(x.layer, 0, 1) === name);
    assert.ok(t, `trial ${trial}: ${name} is no shard this pack writes`);
    const data = readFileSync(join(out, name));
    assert.equal(data.length, miaShardBytes(0, t.rows), `trial ${trial}: ${name} is ${data.length} bytes`);
    assert.ok(
      data
        .subarray(0, 4096)
        .equals(encodeMiaHeader({ layer: t.layer, lo: 0, hi: t.rows, rows: t.rows, rowBytes: 264 })),
      `trial ${trial}: ${name} header`,
    );
    for (let id = 0; id < t.rows; id++) {
      const at = 4096 + id * 264;
      if (!data.subarray(at, at + 264).equals(synthRow(t.layer, id, 256)))
        assert.fail(`trial ${trial}: ${name} row ${id} differs`);
    }
  }
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
        // No manifest: no pack yet, or (finished shards, nothing partial) the Mia stack's view of one.
        if (!existsSync(out)) assert.equal(v.code, 2, `trial ${i}: ${v.stderr}`);
        else if (v.code !== 0) assert.match(v.stderr, /not a pack|an interrupted pack/, `trial ${i}: ${v.stderr}`);
        return false;
      },
      afterAnyKill: async (out, i) => shardsWhole(out, i),
      afterResume: async (out, i) => {
        verifiesFully(out);
        shardsWhole(out, i);
      },
    },
    () => join(tempDir(), 'pack'),
  );
  t.diagnostic(
    `copy ${seen.copyMs.toFixed(0)} ms; killed ${seen.killed} of ${seen.attempts}, complete before the kill ${seen.complete}, resumes keeping chunks ${seen.resumedWithKept}`,
  );
  // The trials must have hit the interesting states, not only "killed before starting".
  assert.ok(seen.killed >= TRIALS / 2, `only ${seen.killed} of ${seen.attempts} runs were killed`);
  assert.ok(seen.resumedWithKept >= 3, `only ${seen.resumedWithKept} resumes kept journaled chunks`);
});
