// The --emit-sh script and `spark wrapper` compared on every copy of helpers/emit-sh-copy.ts at
// every rank of 4, each with no SPARK_ENGRAM_ROWS, a wrong one and the one Node exported. npm
// test compares two ranks of each (test/wrapper/emit-sh-copy.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { needs } from '../helpers/external-tool.js';
import { buildCopies, compare, script } from '../helpers/emit-sh-copy.js';

test("sh and Node agree on every copy, rank and preset: the manifest's ranges, or the same refusal", async (t) => {
  if (!needs(t, 'dash')) return;
  const compared = await compare(await script(), buildCopies(), () => ['0', '1', '2', '3']);
  assert.ok(compared > 150, `${compared} cases`);
});
