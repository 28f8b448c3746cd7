// The exit codes docs/cli.md promises (0 ok, 1 a check failed, 2 bad usage or input, 3 the
// environment), case by case for the ones that were wrong, each as a real process with --json:
// the code, the error object on stderr, and a one-line message naming what is wrong.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { toSparkError, withPath } from '../../src/errors/errors.js';
import { binPath } from '../helpers/cli.js';
import { recordingEngine } from '../helpers/engine.js';
import { makeSnapshot } from '../helpers/synth.js';
import { mountTmpfs } from '../helpers/tmpfs.js';
import { tempDir } from '../helpers/tmp.js';
import { needs, needsRoot } from '../helpers/external-tool.js';

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function run(argv: string[], env: NodeJS.ProcessEnv = {}, file = process.execPath, pre: string[] = [binPath]): Run {
  const began = Date.now();
  const r = spawnSync(file, [...pre, ...argv], {
    encoding: 'utf8',
    timeout: 60_000,
    input: '',
    env: { ...process.env, ...env },
  });
  assert.equal(r.signal, null, `${argv.join(' ')} hung`);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, ms: Date.now() - began };
}

interface Case {
  name: string;
  /** Builds the situation; returns the spark arguments (and env). */
  setup(): { argv: string[]; env?: NodeJS.ProcessEnv; cleanup?: () => void };
  exit: 0 | 1 | 2 | 3;
  /** The JSON error code on stderr (omitted for a check failure that is not an error object). */
  code?: string;
  message?: RegExp;
  /** Extra checks on the run. */
  also?(r: Run): void;
  /** Do not append --json (the human output is checked, or argv places --json itself). */
  asIs?: boolean;
  /** The setup mounts a file system (root only): what it mounts, for the skip line. */
  mounts?: string;
}

const snapshot = (() => {
  let s: ReturnType<typeof makeSnapshot> | undefined;
  return () => (s ??= makeSnapshot());
})();

/** A copy of the shared snapshot to damage. */
function damagedSnapshot(damage: (dir: string) => void): string {
  const s = makeSnapshot();
  damage(s.dir);
  return s.dir;
}

const SHARD = 'model-00001-of-00003.safetensors';

/** A 30 s bench gather writing its chart to `svg`: a bad path must fail before the run. */
const longGatherWithSvg = (svg: string) => [
  ...['bench', 'gather', snapshot().dir, '--seconds', '30', '--threads', '1', '--batch', '24'],
  ...['--svg', svg],
];

const CASES: Case[] = [
  {
    name: 'a shard that is a directory is exit 2, like a missing shard',
    setup: () => ({ argv: ['inspect', damagedSnapshot((d) => (rmSync(join(d, SHARD)), mkdirSync(join(d, SHARD))))] }),
    exit: 2,
    code: 'E_NOT_A_FILE',
    message: /model-00001-of-00003\.safetensors: is a directory, expected a \.safetensors file/,
  },
  {
    name: 'a shard that is a FIFO is exit 2, at once',
    setup: () => ({
      argv: ['inspect', damagedSnapshot((d) => (rmSync(join(d, SHARD)), execFileSync('mkfifo', [join(d, SHARD)])))],
    }),
    exit: 2,
    code: 'E_NOT_A_FILE',
    message: /model-00001-of-00003\.safetensors: is a named pipe \(FIFO\)/,
  },
  {
    name: '--out under a read-only mount is exit 3, advised to use a writable path (not to free space)',
    mounts: 'mounts a read-only tmpfs',
    setup: () => {
      const ro = join(tempDir(), 'ro');
      mkdirSync(ro);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', ro]);
      return {
        argv: ['pack', snapshot().dir, '--out', join(ro, 'pack'), '--rank', '0', '--world', '2'],
        cleanup: () => execFileSync('umount', [ro]),
      };
    },
    exit: 3,
    code: 'E_IO',
    message: /\/ro\/pack: the file system is read-only: use a writable path .*\(EROFS on mkdir\)$/,
    also: (r) => assert.doesNotMatch(r.stderr, /free space/),
  },
  {
    name: '--out that is a read-only mount itself (and nearly full) is exit 3 read-only, not "not enough free space"',
    mounts: 'mounts a read-only tmpfs',
    setup: () => {
      const ro = join(tempDir(), 'ro');
      mkdirSync(ro);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=64k', 'tmpfs', ro]);
      return {
        argv: ['pack', snapshot().dir, '--out', ro, '--rank', '0', '--world', '2'],
        cleanup: () => execFileSync('umount', [ro]),
      };
    },
    exit: 3,
    code: 'E_IO',
    message: /\/ro: the file system is read-only: use a writable path .*\(EROFS on access\)$/,
    also: (r) => assert.doesNotMatch(r.stderr, /free space/),
  },
  {
    name: '--out that is an existing file: exit 2 naming it, not a raw EEXIST',
    setup: () => {
      const file = join(tempDir(), 'not-a-dir');
      writeFileSync(file, 'x');
      return { argv: ['pack', snapshot().dir, '--out', file, '--rank', '0', '--world', '2'] };
    },
    exit: 2,
    code: 'E_USAGE',
    message: /^--out \S*not-a-dir: \S*not-a-dir exists and is not a directory$/,
  },
  {
    name: 'gid --roce-version 3 is bad usage (2), before any sysfs is read',
    setup: () => ({ argv: ['gid', '--hca', 'mlx5_0', '--roce-version', '3', '--sysfs', '/nonexistent'] }),
    exit: 2,
    code: 'E_USAGE',
    message: /^--roce-version must be 1 or 2, got '3'$/,
  },
  {
    name: 'spark bench with no subcommand is exit 2',
    setup: () => ({ argv: ['bench'] }),
    exit: 2,
    asIs: true,
    also: (r) => assert.match(r.stderr, /Usage: spark bench/),
  },
  {
    name: 'spark with no command is exit 2',
    setup: () => ({ argv: [] }),
    exit: 2,
    asIs: true,
    also: (r) => assert.match(r.stderr, /Usage: spark/),
  },
  {
    name: 'verify --full without --source is exit 2',
    setup: () => ({ argv: ['verify', tempDir(), '--full'] }),
    exit: 2,
    code: 'E_USAGE',
    message: /^--full compares every row with the snapshot: give --source SNAPSHOT$/,
  },
  {
    name: "commander's unknown option with --json: the JSON error object on stderr",
    setup: () => ({ argv: ['inspect', snapshot().dir, '--bogus'] }),
    exit: 2,
    code: 'E_USAGE',
    message: /^unknown option '--bogus'$/,
  },
  {
    name: "commander's missing argument with --json: the JSON error object on stderr",
    setup: () => ({ argv: ['preflight'] }),
    exit: 2,
    code: 'E_USAGE',
    message: /^missing required argument 'recipe\.toml'$/,
  },
  {
    name: "commander's option without its value, with --json: the JSON error object on stderr",
    setup: () => ({ argv: ['rows', snapshot().dir, '--json', '--ids', '0', '--layer'] }),
    exit: 2,
    asIs: true,
    code: 'E_USAGE',
    message: /^option '--layer <L>' argument missing$/,
  },
  {
    name: 'bench gather --variants packed on a snapshot is exit 2 (results are labelled with what was read)',
    setup: () => ({
      argv: [
        'bench',
        'gather',
        snapshot().dir,
        '--variants',
        'packed',
        '--seconds',
        '1',
        '--threads',
        '1',
        '--batch',
        '24',
      ],
    }),
    exit: 2,
    code: 'E_USAGE',
    message: /^--variants packed cannot be measured on a snapshot: it takes snapshot, snapshot\+scales, overlay$/,
  },
  {
    name: 'a bad --svg path fails before the run, not after it',
    setup: () => ({
      argv: longGatherWithSvg('/nonexistent/dir/gather.svg'),
    }),
    exit: 2,
    code: 'E_USAGE',
    message: /^--svg \/nonexistent\/dir\/gather\.svg: \/nonexistent\/dir is not a directory$/,
    also: (r) => assert.ok(r.ms < 15_000, `took ${r.ms} ms: the 30 s run happened first`),
  },
  {
    name: '--svg naming a directory fails before the run',
    setup: () => ({
      argv: longGatherWithSvg(tempDir()),
    }),
    exit: 2,
    code: 'E_USAGE',
    message: /^--svg .*: exists and is not a regular file/,
  },
  {
    name: 'an empty weight_map is blamed on the index, not on config.json',
    setup: () => ({
      argv: [
        'inspect',
        damagedSnapshot((d) =>
          writeFileSync(join(d, 'model.safetensors.index.json'), '{"metadata": {}, "weight_map": {}}'),
        ),
      ],
    }),
    exit: 2,
    code: 'E_INDEX_JSON',
    message:
      /model\.safetensors\.index\.json: "weight_map" is empty, so the index names no tensors; download the index again$/,
  },
  {
    name: 'synth into a full disk: exit 3 naming the file it was writing',
    mounts: 'mounts a 256 KiB tmpfs to fill',
    setup: () => {
      const fs = mountTmpfs(256 << 10);
      return { argv: ['synth', join(fs.dir, 'snap')], cleanup: () => fs.unmount() };
    },
    exit: 3,
    code: 'E_NO_SPACE',
    message:
      /\/snap\/model-0000\d-of-00003\.safetensors: no space left on the device: free space there, or use another disk \(ENOSPC on write\)$/,
  },
];

for (const c of CASES) {
  test(`exit ${c.exit}: ${c.name}`, { timeout: 90_000 }, (t) => {
    if (c.mounts !== undefined && !needsRoot(t, c.mounts)) return;
    const { argv, env, cleanup } = c.setup();
    let r: Run;
    try {
      r = run(c.asIs ? argv : [...argv, '--json'], env);
    } finally {
      cleanup?.();
    }
    assert.equal(r.status, c.exit, r.stderr);
    if (c.code !== undefined) {
      const lines = r.stderr.trim().split('\n');
      const err = (JSON.parse(lines.at(-1)!) as { error: { code: string; message: string } }).error;
      assert.equal(err.code, c.code, err.message);
      if (c.message) assert.match(err.message, c.message);
      assert.ok(!err.message.includes('\n'), 'one line');
      assert.equal(r.stdout, '', 'no JSON document on stdout for a failure');
    }
    c.also?.(r);
  });
}

test('exit 3 both ways: the --emit-sh script and the Node wrapper with an engine that cannot run', (t) => {
  if (!needs(t, 'dash')) return;
  const snap = snapshot();
  const script = join(tempDir(), 'spark-wrapper.sh');
  const emitted = run(['wrapper', '--emit-sh', '--snapshot', snap.dir, '--world', '2', '--out', script]);
  assert.equal(emitted.status, 0, emitted.stderr);
  const env = { NODE_RANK: '0', SPARK_WORLD_SIZE: '2', SPARK_SKIP_GID: '1', SPARK_ENGRAM_DIR: snap.dir };
  for (const engine of ['no-such-engine-xyz', '/nonexistent/bin/python3']) {
    const sh = run([engine, '--port', '1'], env, '/usr/bin/dash', [script]);
    assert.equal(sh.status, 3, sh.stderr);
    assert.match(
      sh.stderr,
      /^spark wrapper: cannot run the engine .*no-such-engine-xyz|^spark wrapper: cannot run the engine \/nonexistent\/bin\/python3/m,
    );
    const node = run(['wrapper', '--', engine, '--port', '1'], env);
    assert.equal(node.status, 3, node.stderr);
    assert.match(node.stderr, /cannot run the engine/);
  }
  // A file that exists but is not executable is the same failure.
  const notExec = join(tempDir(), 'engine');
  writeFileSync(notExec, '#!/bin/sh\n');
  chmodSync(notExec, 0o644);
  assert.equal(run([notExec], env, '/usr/bin/dash', [script]).status, 3);
  // The script still runs a real engine.
  const engine = recordingEngine();
  const ok = run([engine.path, '--x'], { ...env, RECORD: engine.record }, '/usr/bin/dash', [script]);
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(readFileSync(engine.record, 'utf8'), /--x/);
});

test('raw Node errors become one line naming the path, with advice that fits the errno', () => {
  const errno = (code: string, syscall: string, message: string, path?: string) =>
    Object.assign(new Error(`${code}: ${message}, ${syscall}`), { code, syscall, ...(path ? { path } : {}) });
  // A failed write names no file; withPath supplies the one being written.
  const enospc = toSparkError(
    withPath(errno('ENOSPC', 'write', 'no space left on device'), '/engram/engram-local.json.tmp'),
  );
  assert.equal(enospc.code, 'E_NO_SPACE');
  assert.equal(enospc.exitCode, 3);
  assert.equal(
    enospc.message,
    '/engram/engram-local.json.tmp: no space left on the device: free space there, or use another disk (ENOSPC on write)',
  );
  for (const code of ['EROFS', 'EACCES', 'EPERM']) {
    const e = toSparkError(errno(code, 'open', 'x', '/ro/f'));
    assert.equal(e.exitCode, 3);
    assert.doesNotMatch(e.message, /free space/);
    assert.match(e.message, new RegExp(`^/ro/f: .* \\(${code} on open\\)$`));
  }
  assert.equal(toSparkError(errno('EISDIR', 'read', 'illegal operation on a directory', '/d')).code, 'E_NOT_A_FILE');
  // withPath keeps a path Node did give, and leaves non-errno values alone.
  const given = errno('EIO', 'open', 'i/o error', '/a');
  assert.equal(
    toSparkError(withPath(given, '/b')).message,
    '/a: input/output error: the disk or network file system failed (EIO on open)',
  );
  assert.equal(withPath('x', '/b'), 'x');
  // "Invalid string length" is a size problem, said so, not a usage error.
  const big = toSparkError(new RangeError('Invalid string length'));
  assert.equal(big.code, 'E_INTERNAL');
  assert.match(big.message, /far larger than expected/);
});

test('a manifest with rows = 2^60 is reported as out of range, not as "not a whole number"', () => {
  const snap = snapshot();
  const out = join(tempDir(), 'pack');
  assert.equal(run(['pack', snap.dir, '--out', out, '--rank', '0', '--world', '2']).status, 0);
  const path = join(out, 'engram-local.json');
  writeFileSync(path, readFileSync(path, 'utf8').replace(/"rows": \d+/, '"rows": 1152921504606846976'));
  for (const argv of [
    ['verify', out],
    ['rows', out, '--layer', '1', '--ids', '0'],
  ]) {
    const r = run([...argv, '--json']);
    assert.equal(r.status, argv[0] === 'verify' ? 1 : 2, r.stderr);
    assert.match(r.stderr, /engram-local\.json: spark\.tables\[0\]\.rows is larger than 2\^53 - 1/);
  }
});
