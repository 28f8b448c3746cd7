// spark engram-ranges on a full-size DSV4.1-shaped snapshot, beside
// test/commands/engram-ranges-snapshot.test.ts: the wrapper (Node) and the emitted sh script
// export the rows engram-ranges gives, for each of the four ranks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bin } from '../helpers/cli.js';
import { recordingEngine } from '../helpers/engine.js';
import { makeFullSizeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import { needs } from '../helpers/external-tool.js';

const full = makeFullSizeSnapshot();

test('the wrapper and the emitted sh script give the same rows as spark engram-ranges for every rank', async (t) => {
  if (!needs(t, 'dash')) return;
  const out = join(tempDir(), 'w.sh');
  const emitted = bin(['wrapper', '--emit-sh', '--snapshot', full.dir, '--world', '4', '--out', out]);
  assert.equal(emitted.code, 0, emitted.stderr);
  for (let rank = 0; rank < 4; rank++) {
    const expected = bin(['engram-ranges', full.dir, '--rank', String(rank), '--world', '4']).stdout.trim();
    const env = { NODE_RANK: String(rank), SPARK_ENGRAM_DIR: full.dir };
    for (const run of ['node', 'sh'] as const) {
      const engine = recordingEngine();
      const argv = [engine.path, '--nnodes', '4'];
      const r =
        run === 'node'
          ? bin(['wrapper', '--', ...argv], { env: { ...env, RECORD: engine.record } })
          : (({ status, stdout, stderr }) => ({ code: status, stdout, stderr }))(
              spawnSync('/usr/bin/dash', [out, ...argv], {
                encoding: 'utf8',
                env: { PATH: process.env.PATH, ...env, RECORD: engine.record },
              }),
            );
      assert.equal(r.code, 0, `${run} rank ${rank}: ${r.stderr}`);
      assert.match(readFileSync(engine.record, 'utf8'), new RegExp(`^rows=${expected}$`, 'm'), `${run} rank ${rank}`);
    }
  }
  const refused = bin(['wrapper', '--', 'true', '--nnodes', '4'], {
    env: { NODE_RANK: '2', SPARK_ENGRAM_DIR: full.dir, SPARK_ENGRAM_ROWS: '1:0:384006168,14:0:384016682' },
  });
  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    /^spark: SPARK_ENGRAM_ROWS='1:0:384006168,14:0:384016682' is not rank 2 of 4's floor range .*a full range on every rank double-counts/,
  );
});
