// libengram_rows.so, the overlay stack's row library built from native/core, checked through
// Python ctypes as the stack calls it (test/engine-libs/overlay_check.py).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { engineFixtures, LIBRARIES, runCheck } from '../helpers/engine-lib.js';
import { needs } from '../helpers/external-tool.js';

const fixtures = await engineFixtures();

test('libengram_rows.so: ABI v3 semantics through ctypes (rows, zeros, stats, threads, prefetch, release, callers)', (t) => {
  if (!needs(t, 'numpy')) return;
  const r = runCheck('overlay_check.py', LIBRARIES.overlay, fixtures);
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  for (const name of [
    'abi',
    'snapshot_rows',
    'sparse_rows',
    'large_batch',
    'count_zero',
    'known_stats',
    'open_errors',
    'thread_counts',
    'two_callers',
    'prefetch_return',
    'resident_release',
    'open_close_loop',
    'stats_line',
  ]) {
    assert.match(r.stdout, new RegExp(`^ok ${name}$`, 'm'));
  }
});
