// Ctrl-C during a real `spark pack` of a synthetic snapshot, then the same command again
// (test/pack/pack-interrupt.test.ts, test/long/pack-interrupt-large.test.ts).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { binPath } from './cli.js';
import { makeSnapshot } from './synth.js';
import { tempDir } from './tmp.js';

export interface InterruptCase {
  /** The snapshot's vocabulary: rank 0 of 2 copies about 6 KB a row. */
  vocab: number;
  /** --rate-limit, in MB/s: the copy is still running when the interrupt comes. */
  rateMBs: number;
  /** SIGINT at this copying progress line (one a second). */
  atLine: number;
}

/**
 * SIGINT to `spark pack --rank 0 --world 2` at a progress line of its copy: one line saying the
 * work is kept and how to resume, the process ends by SIGINT, and the same command then resumes
 * (chunks kept) and verifies against the source.
 */
export async function interruptAndResume(o: InterruptCase): Promise<void> {
  const snap = makeSnapshot({ vocab: o.vocab, sparse: true });
  const out = join(tempDir(), 'pack');
  const argv = [
    binPath,
    'pack',
    snap.dir,
    '--out',
    out,
    '--rank',
    '0',
    '--world',
    '2',
    '--threads',
    '1',
    '--progress',
    '1',
    '--sync-every',
    '32',
    '--rate-limit',
    String(o.rateMBs),
  ];
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  // Interrupt at a progress line of the copy: chunks are durable by then (--sync-every 32 MiB)
  // and most of it is still to do.
  await new Promise<void>((resolve) => {
    child.on('exit', () => resolve()); // finished before it could be interrupted: fails below
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (
        (stderr.match(/pack (?:layer|shard) \S+ \(\d\/2\) copying/g) ?? []).length >= o.atLine &&
        child.exitCode === null
      ) {
        child.kill('SIGINT');
        resolve();
      }
    });
  });
  const { code, signal } = await ended;
  assert.equal(signal, 'SIGINT', `status ${code}, stderr: ${stderr}`);
  assert.equal(stdout, '');
  const last = stderr.trim().split('\n').at(-1)!;
  assert.equal(
    last,
    `spark pack: interrupted; the chunks written so far are kept: run the same spark pack command again to resume (into ${out})`,
  );

  const again = spawnSync(process.execPath, [...argv, '--json'], { encoding: 'utf8', timeout: 100_000 });
  assert.equal(again.status, 0, again.stderr);
  const summary = JSON.parse(again.stdout) as { resumed: boolean; noop: boolean; layers: { chunksKept: number }[] };
  assert.equal(summary.noop, false);
  assert.equal(summary.resumed, true, 'chunks of the interrupted run were kept');
  const verify = spawnSync(process.execPath, [binPath, 'verify', out, '--source', snap.dir, '--sample', '200'], {
    encoding: 'utf8',
    timeout: 100_000,
  });
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
}
