// The scripts spark makes of its .sh files, for the inputs test/remote/sh-files.test.ts does not
// make (it makes one of each kind): each passes shellcheck and dash -n.
import { test } from 'node:test';
import { emitWrapperSh } from '../../src/wrapper/emit-sh.js';
import { tileLayers } from '../../src/engram/ranges.js';
import { helloScript, probeScript } from '../../src/preflight/facts/probe-sh.js';
import { factsRequest } from '../helpers/facts-request.js';
import { needs } from '../helpers/external-tool.js';
import { checkMade, LAYERS } from '../helpers/sh-files.js';

test('every other script spark makes of them passes shellcheck and dash -n', (t) => {
  if (!needs(t, 'shellcheck', 'dash')) return;
  checkMade({
    'entrypoint, 1 rank front, a path with spaces and a quote': emitWrapperSh({
      world: 1,
      split: 'front',
      source: "/my models/it's",
      ranks: tileLayers(LAYERS, 1, 'front'),
    }),
    'entrypoint, 3 ranks of one table': emitWrapperSh({
      world: 3,
      split: 'front',
      source: '/m',
      ranks: tileLayers(LAYERS.slice(0, 1), 3, 'front'),
    }),
    'hello, a spark path with a space': helloScript('/opt/my spark/bin/spark'),
    'probe, an empty request': probeScript(factsRequest({})),
  });
});
