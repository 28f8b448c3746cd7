// librow_store.so, the Mia stack's row library built from native/core, checked through Python
// ctypes as the stack calls it (test/engine-libs/mia_check.py).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { engineFixtures, LIBRARIES, runCheck } from '../helpers/engine-lib.js';
import { needs } from '../helpers/external-tool.js';

const fixtures = await engineFixtures();

test('librow_store.so: the Mia ABI through ctypes (checkpoint and packed rows, aborts, stats, pool, callers)', (t) => {
  if (!needs(t, 'numpy')) return;
  const r = runCheck('mia_check.py', LIBRARIES.mia, fixtures);
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  for (const name of [
    'checkpoint_rows',
    'packed_rows',
    'aborts',
    'count_zero',
    'known_stats',
    'pool_threads',
    'two_callers',
    'ram_mode',
    'open_close_loop',
    'stats_line',
    'drm_fallback',
  ]) {
    assert.match(r.stdout, new RegExp(`^ok ${name}$`, 'm'));
  }
});
