// The overlay contract's sweep over worlds 2 and 4 (helpers/overlay-sweep.ts): every rank under
// every split, read as the serving overlay reads SPARK_ENGRAM_DIR. npm test runs world 3
// (test/stacks/overlay/overlay-contract.test.ts).
import { test } from 'node:test';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { makeSnapshot } from '../helpers/synth.js';
import { sweepWorlds } from '../helpers/overlay-sweep.js';

const snap = makeSnapshot();
const opened = await openSnapshot(snap.dir);

test('sparse copies of every rank of world 2 and 4, every split: the overlay reads the snapshot rows, zeros elsewhere, ranges that tile', async () => {
  await sweepWorlds(snap, opened, [2, 4]);
});
