// A safetensors header of 1,000,000 tensors: refused after the 262,144th, one line naming the
// file and the limit (npm test has the file one tensor over the cap: test/cli/input-limits.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { writeManyTensors } from '../helpers/safetensors.js';
import { tempDir } from '../helpers/tmp.js';

test('safetensors: a header of 1,000,000 tensors is refused after the 262,144th, one line naming the file and the limit', async () => {
  const big = writeManyTensors(join(tempDir(), 'big.safetensors'), 1_000_000);
  const r = await cli(['inspect', big]);
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    new RegExp(
      `^spark: ${big}: the header lists more than 262145 entries; spark reads at most 262144 tensors from one file \\(a checkpoint shard lists a few thousand\\) \\(at byte \\d+\\)\\n$`,
    ),
  );
});
