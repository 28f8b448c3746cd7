// What a newcomer meets first: the help, the README's tour, one-line errors from the flag parser,
// progress that tells how long, and output paths that are said for what they are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import { runCli } from '../../src/main.js';
import { runSynth } from '../../src/commands/synth.js';
import { transferText } from '../../src/commands/progress.js';
import { SYNTH_DEFAULTS } from '../../src/synth/synth.js';
import { packageRoot } from '../../src/addon/index.js';
import type { Io } from '../../src/terminal/io.js';

/** An Io whose stderr is a terminal, as a person at a shell has it. */
function ttyIo(): Io & { out: () => string; err: () => string } {
  let stdout = '';
  let stderr = '';
  return {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    env: {},
    cwd: process.cwd(),
    stderrIsTTY: true,
    color: false,
    out: () => stdout,
    err: () => stderr,
  };
}

test('the top-level help says what pack writes and that preflight checks every node', async () => {
  const r = await cli(['--help']);
  assert.equal(r.code, 0);
  const help = r.stdout.replace(/\s+/g, ' '); // as wrapped to the terminal's width
  assert.doesNotMatch(help, /one read per row/, 'the default sparse copy is two reads a row');
  assert.doesNotMatch(help, /this node/);
  assert.match(help, /pack copy this rank's Engram rows to node-local disk in the format its serving stack reads/);
  assert.match(help, /preflight check a recipe[^.]*every node/);
});

test('flag parser errors are one line in the form every spark error has', async () => {
  const unknown = await cli(['pack', '--bogus']);
  assert.equal(unknown.code, 2);
  assert.equal(unknown.stderr, "spark: unknown option '--bogus' (run spark pack --help)\n");
  const command = await cli(['no-such-command']);
  assert.equal(command.code, 2);
  assert.equal(command.stderr.split('\n').length, 2, 'one line and its newline');
  assert.match(command.stderr, /^spark: unknown command 'no-such-command' \(run spark --help\)\n$/);
  const missing = await cli(['preflight']);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /^spark: missing required argument 'recipe.toml'[^\n]*\n$/);
});

test('an empty item in a list of ids is an error, never dropped', async () => {
  const snap = makeSnapshot();
  const r = await cli(['rows', snap.dir, '--layer', '1', '--ids', '0,,5']);
  assert.equal(r.code, 2);
  assert.equal(r.stderr, "spark: --ids has an empty item at position 2 in '0,,5': remove the extra comma\n");
  const trailing = await cli(['rows', snap.dir, '--layer', '1', '--ids', '0,5,']);
  assert.match(trailing.stderr, /empty item at position 3/);
  assert.equal((await cli(['rows', snap.dir, '--layer', '1', '--ids', ' 0, 5'])).code, 0, 'spaces around ids are fine');
});

test('the README tour runs spark the way a fresh checkout can: npx spark (or after npm link)', () => {
  const readme = readFileSync(join(packageRoot(), 'README.md'), 'utf8');
  assert.match(readme, /npm link/);
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
  const bare = blocks.flatMap((b) => b.split('\n')).filter((l) => /(^|\| )spark /.test(l));
  assert.deepEqual(bare, [], 'no command line starts with a bare spark');
});

test('transfer progress has a percentage, a rate and an ETA', () => {
  assert.equal(
    transferText('verify', { bytesDone: 0, bytesTotal: 4 * 2 ** 30, seconds: 0.1 }),
    'verify: 0 B / 4.00 GiB 0%',
  );
  assert.equal(
    transferText('verify', { bytesDone: 2 ** 30, bytesTotal: 4 * 2 ** 30, seconds: 2 }),
    'verify: 1.00 GiB / 4.00 GiB 25%  512 MiB/s  ETA 0:06',
  );
  // A resumed pack: the rate is of what this run moved, not of what was there before.
  assert.match(
    transferText('pack', { bytesDone: 3 * 2 ** 30, bytesTotal: 4 * 2 ** 30, seconds: 1, moved: 2 ** 30 }),
    /75% {2}1\.00 GiB\/s {2}ETA 0:01$/,
  );
});

test('synth shows progress on a terminal and ends on the whole', () => {
  const io = ttyIo();
  runSynth({ ...SYNTH_DEFAULTS, dir: join(tempDir(), 'snap') }, io);
  const lines = io
    .err()
    .split('\r')
    .filter((l) => l.startsWith('synth: '));
  assert.ok(lines.length >= 1, io.err());
  assert.match(lines.at(-1)!, /^synth: [\d.]+ MiB \/ [\d.]+ MiB 100%/);
  assert.ok(io.err().endsWith('\r\x1b[K'), 'the line is cleared before the report');
});

test('verify shows a percentage on a terminal', async () => {
  const snap = makeSnapshot();
  const out = join(tempDir(), 'copy');
  assert.equal((await cli(['pack', snap.dir, '--out', out, '--rank', '0', '--world', '2'])).code, 0);
  const io = ttyIo();
  assert.equal(await runCli(['verify', out, '--source', snap.dir, '--full'], io), 0, io.err());
  assert.match(io.err(), /\rverify: [\d.]+ [KM]iB \/ [\d.]+ [KM]iB 100%/);
});

test('an output path is said for what it is: a dangling link, a file, a virtual file system', async () => {
  const snap = makeSnapshot();
  const dir = tempDir();
  symlinkSync(join(dir, 'nowhere'), join(dir, 'link'));
  const link = await cli(['pack', snap.dir, '--out', join(dir, 'link'), '--rank', '0', '--world', '2']);
  assert.equal(link.code, 2);
  assert.equal(
    link.stderr,
    `spark: ${join(dir, 'link')} is a symbolic link to ${join(dir, 'nowhere')}, which does not exist: create that directory, or remove the link and give a real directory\n`,
  );
  writeFileSync(join(dir, 'file'), '');
  const file = await cli(['pack', snap.dir, '--out', join(dir, 'file'), '--rank', '0', '--world', '2']);
  assert.equal(file.code, 2);
  assert.match(file.stderr, /file/);
  const started = performance.now();
  const proc = await cli(['pack', snap.dir, '--out', '/proc/spark-x/y', '--rank', '0', '--world', '2']);
  assert.ok(performance.now() - started < 10_000, 'refused at once, not after spinning');
  assert.equal(proc.code, 3);
  assert.match(
    proc.stderr,
    /^spark: \/proc\/spark-x: cannot create a directory there: \/proc exists but refuses new entries/,
  );
  assert.doesNotMatch(proc.stderr, /chunks/);
  mkdirSync(join(dir, 'made'));
  assert.equal(
    (await cli(['pack', snap.dir, '--out', join(dir, 'made', 'a', 'b'), '--rank', '0', '--world', '2'])).code,
    0,
    'missing parents are made',
  );
});

test("bench gather's footer explains the cold? mark only when a case has it, beside the WARNING it points at", async () => {
  const snap = makeSnapshot();
  const base = [
    'bench',
    'gather',
    snap.dir,
    '--threads',
    '1',
    '--batch',
    '24',
    '--seconds',
    '1',
    '--no-fio',
    '--no-naive',
    '--variants',
    'snapshot',
  ];
  const warm = await cli(base);
  assert.equal(warm.code, 0, warm.stderr);
  assert.doesNotMatch(warm.stdout, /cold\?|WARNING/);
  assert.match(
    warm.stdout,
    /psync IOPS: fio with one blocking reader per thread, NOT the ceiling\. See `spark bench gather --help`\./,
  );
  const cold = await cli([...base, '--cold']); // a snapshot this small fits in the page cache: not cold
  assert.equal(cold.code, 0, cold.stderr);
  assert.match(cold.stdout, /^WARNING: cold cases read through the page cache are NOT cold/m);
  assert.match(cold.stdout, / cold\? /);
  assert.match(cold.stdout, /cold\?: this case may have read from the page cache \(see the WARNING above\)\./);
});
