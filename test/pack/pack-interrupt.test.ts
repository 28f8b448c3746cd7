// Ctrl-C during `spark pack`: one line saying the work is kept and how to resume, the process
// ends by SIGINT (status 130 in a shell), and the same command then resumes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { binPath } from '../helpers/cli.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';

test(
  'Ctrl-C during a pack says it can be resumed, ends by SIGINT, and the re-run resumes',
  { timeout: 120_000 },
  async () => {
    // ~1.2 GB to copy for rank 0 of 2, held to 300 MB/s so the copy is still running at the
    // second progress line however fast the disk is (direct I/O copies it in about a second).
    const snap = makeSnapshot({ vocab: 200_000, sparse: true });
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
      '300',
    ];
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal })),
    );
    // Interrupt at the second progress line: a second into the copy, chunks are durable
    // (--sync-every 32 MiB) and most of it is still to do.
    await new Promise<void>((resolve) => {
      child.on('exit', () => resolve()); // finished before it could be interrupted: fails below
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (
          (stderr.match(/pack (?:layer|shard) \S+ \(\d\/2\) copying/g) ?? []).length >= 2 &&
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
  },
);
