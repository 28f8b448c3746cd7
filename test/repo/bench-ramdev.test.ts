// bench/ramdev.py (the engine libraries on a RAM-backed block device) needs root for its tmpfs,
// loop device, ext4 mount and memory cgroups: without root it says so in one line and exits 3
// (environment), before it makes anything. The suite runs as root (as CI does), so the script's
// modules are loaded first (the interpreter and numpy may live where an unprivileged user cannot
// read) and the process then drops to uid 65534 and runs main().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../src/addon/index.js';
import { needs } from '../helpers/external-tool.js';

const SCRIPT = join(packageRoot(), 'bench', 'ramdev.py');
const AS_NOBODY = String.raw`
import importlib.util, os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]))
spec = importlib.util.spec_from_file_location("ramdev", sys.argv[1])
ramdev = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ramdev)
if os.geteuid() == 0:
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
sys.exit(ramdev.main(sys.argv[2:]))
`;

function leftovers(): string[] {
  return readdirSync(tmpdir()).filter((f) => f.startsWith('spark-ramdev-'));
}

test('bench/ramdev.py without root: exit 3, one line naming what it needs, nothing made', (t) => {
  if (!needs(t, 'numpy')) return;
  const before = leftovers();
  const r = spawnSync('python3', ['-c', AS_NOBODY, SCRIPT, '--rounds', '1'], { encoding: 'utf8' });
  assert.equal(r.status, 3, r.stderr);
  assert.equal(r.stdout, '');
  assert.equal(
    r.stderr,
    'bench/ramdev.py: needs root (it mounts a tmpfs, attaches a loop device, makes ext4 and memory cgroups); ' +
      'run it as root: sudo python3 bench/ramdev.py\n',
  );
  assert.deepEqual(leftovers(), before);
});

test('bench/ramdev.py: bad usage is exit 2 before the root check', (t) => {
  if (!needs(t, 'numpy')) return;
  const r = spawnSync('python3', ['-c', AS_NOBODY, SCRIPT, '--bound', 'none'], { encoding: 'utf8' });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /--bound a size/);
});
