// A hostile output directory (helpers/pack-hostile.ts): a link planted at a name a new sparse
// pack writes is refused (exit 3, naming it) and its target left untouched, for the manifest,
// its temporary and a shard's .partial, the last two learned from a finished run.
// test/long/pack-hostile-names.test.ts plants one at every name, in every layout, new, resumed and forced.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fresh, hostile, learn } from '../helpers/pack-hostile.js';

test('a link at the names a new sparse pack writes is refused (exit 3, naming it) and its target is left untouched', async () => {
  const names = await learn(fresh('sparse'), false, 'sparse');
  const partial = [...names].find((n) => n.endsWith('.safetensors.partial'));
  assert.ok(partial, `no shard's .partial seen: ${[...names].join(' ')}`);
  assert.ok(names.has('engram-local.json.tmp'), `no manifest temporary seen: ${[...names].join(' ')}`);
  for (const n of ['engram-local.json', 'engram-local.json.tmp', partial]) await hostile(fresh('sparse'), n);
});
