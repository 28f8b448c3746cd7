import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { bin, binPath } from './helpers/cli.js';
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

/**
 * Runs `spark pack`. With `killAfterMs`, SIGKILLs it that long after the first layer's
 * .partial file appears (the copy has begun), unless it exited first; `copyMs` is the time
 * from that moment to the exit.
 */
function runPack(out: string, killAfterMs?: number): Promise<{ code: number | null; signal: string | null; stdout: string; copyMs: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, ...packArgs(out)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let began: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.resume();
    const partial = join(out, 'engram-l1-r0of1.bin.partial');
    const watch = setInterval(() => {
      if (began !== undefined || !existsSync(partial)) return;
      began = performance.now();
      if (killAfterMs !== undefined) timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    }, 1);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearInterval(watch);
      if (timer) clearTimeout(timer);
      resolve({ code, signal, stdout, copyMs: began === undefined ? 0 : performance.now() - began });
    });
  });
}

function verifiesFully(out: string): void {
  const v = bin(['verify', out, '--source', snap.dir, '--full', '--json']);
  assert.equal(v.code, 0, v.stdout + v.stderr);
  assert.equal(JSON.parse(v.stdout).ok, true);
}

test(`kill -9 at ${TRIALS} random points, then resume: verify refuses or passes, and the resumed pack verifies --full`, async (t) => {
  // Kill points: from the start of the copy to near the end of a whole pack, so
  // most land in the copy of either layer, some in the final syncs, renames and the manifest.
  const reference = await runPack(join(tempDir(), 'pack'));
  assert.equal(reference.code, 0);
  assert.ok(reference.copyMs > 0, 'the copy was not seen starting');
  const killAt = (): number => Math.random() * reference.copyMs * 0.9;
  let killed = 0;
  let resumedWithKept = 0;
  let complete = 0;
  for (let i = 0; i < TRIALS; i++) {
    const out = join(tempDir(), 'pack');
    const first = await runPack(out, killAt());
    if (first.signal === 'SIGKILL') killed++;
    const v = bin(['verify', out]);
    if (existsSync(join(out, 'spark-pack.json'))) {
      assert.equal(v.code, 0, `trial ${i}: a directory with a manifest must be complete: ${v.stderr}`);
      verifiesFully(out);
      complete++;
    } else {
      assert.equal(v.code, existsSync(out) ? 1 : 2, `trial ${i}: ${v.stderr}`);
      if (existsSync(out)) assert.match(v.stderr, /not a pack/);
    }
    if (i % 3 === 2) await runPack(out, killAt());
    const resumed = await runPack(out);
    assert.equal(resumed.code, 0, `trial ${i}: resume failed`);
    const summary = JSON.parse(resumed.stdout) as { noop: boolean; files: { chunksKept: number }[] };
    if (summary.files.some((l) => l.chunksKept > 0)) resumedWithKept++;
    verifiesFully(out);
  }
  t.diagnostic(`copy ${reference.copyMs.toFixed(0)} ms; killed ${killed}, complete before the kill ${complete}, resumes keeping chunks ${resumedWithKept}`);
  // The trials must have hit the interesting states, not only "killed before starting".
  assert.ok(killed >= TRIALS / 2, `only ${killed} of ${TRIALS} runs were killed`);
  assert.ok(resumedWithKept >= 3, `only ${resumedWithKept} resumes kept journaled chunks`);
});
