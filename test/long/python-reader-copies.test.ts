// spark's Python reader on every layer of a dense and a page pack and of both sparse-copy
// flavours, byte for byte (test/python/python-reader.test.ts keeps one layer of a dense pack and
// of spark's sparse copy in npm test). A long trial (npm run test:long): about twenty Python
// processes, each importing numpy.
import { test } from 'node:test';
import { makeSnapshot } from '../helpers/synth.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { needs } from '../helpers/external-tool.js';
import { checkPackedRows, checkSparseCopy, packed as packedOf } from '../helpers/python-reader.js';

const snap = makeSnapshot({ seed: 3 });
const tables = (await openSnapshot(snap.dir)).engram;
const packed = (layout: 'dense' | 'page'): Promise<string> => packedOf(snap.dir, tables, layout);

for (const layout of ['dense', 'page'] as const) {
  test(`the Python reader returns the packed rows byte for byte (${layout})`, async (t) => {
    if (!needs(t, 'numpy')) return;
    await checkPackedRows(await packed(layout), Infinity);
  });
}

for (const flavour of ['overlay', 'spark'] as const) {
  test(`the Python reader reads a sparse copy (${flavour === 'overlay' ? "the overlay tool's layout" : "spark's, with checksums"}) byte for byte`, (ctx) => {
    if (!needs(ctx, 'numpy')) return;
    checkSparseCopy(snap, flavour, 0, 2);
  });
}
