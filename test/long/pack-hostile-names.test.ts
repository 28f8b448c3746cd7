// A hostile output directory: a link planted at every name a pack creates, renames onto or
// removes, in every layout, for a new, a resumed and a forced (--force) pack. Every run must
// refuse (exit 3, naming the link) and leave every link's target as it was. The names are not
// listed by hand: they are learned by watching real runs (helpers/pack-hostile.ts), so a name
// added to the packer later is covered too. npm test plants a few (test/pack/pack-hostile.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fresh, hostile, killedState, learn, replacing, resumed } from '../helpers/pack-hostile.js';

test('a link at any name a pack writes is refused (exit 3, naming it) and its target is left untouched', async (t) => {
  const seen: string[] = [];
  for (const layout of ['sparse', 'dense', 'page']) {
    const finished = await learn(fresh(layout), false, layout);
    const killed = await learn(fresh(layout), true, layout);
    // Both manifest names are read (and so refused as links) by every run.
    const names = new Set([...finished, ...killed, 'engram-local.json', 'spark-pack.json']);
    for (const n of names) await hostile(fresh(layout), n);
    for (const n of killed) {
      if (existsSync(join(killedState.get(layout)!, n))) await hostile(resumed(layout), n);
    }
    seen.push(`${layout}: ${[...names].sort().join(' ')}`);
  }
  const replaced = await learn(replacing, false, 'sparse');
  for (const n of replaced) await hostile(replacing, n);
  seen.push(`--force: ${[...replaced].sort().join(' ')}`);
  t.diagnostic(seen.join('\n'));
  // The learning runs saw what the packer is known to create; a run that saw less proves little.
  const all = seen.join(' ');
  for (const n of [
    '.spark-hole-probe',
    'model-00003-of-00003.safetensors.partial',
    'model-00003-of-00003.safetensors.journal',
    'engram-local.json.tmp',
    'model.safetensors.index.json.tmp',
    'engram-l14-r0of2.bin.partial',
    'spark-pack.json.tmp',
    'spark-pack.json.replaced',
  ]) {
    assert.ok(all.includes(n), `no run was seen creating ${n}`);
  }
});
