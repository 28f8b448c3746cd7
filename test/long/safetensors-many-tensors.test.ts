// Safetensors headers of hundreds of thousands of tensors through the CLI: one over the cap
// (262,146 entries, __metadata__ allowed for) and 1,000,000, each refused in one line naming the
// file and the limit, and a header of exactly 262,144 tensors read. Seconds of header writing
// each; npm test holds the parser's caps in native/test/safetensors_test.cc.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readHeaders } from '../../src/addon/safetensors.js';
import { cli } from '../helpers/cli.js';
import { writeManyTensors } from '../helpers/safetensors.js';
import { tempDir } from '../helpers/tmp.js';

/** The message for a header of more tensors than the cap, `file` named. */
const tooManyTensors = (file: string) =>
  new RegExp(
    `^spark: ${file}: the header lists more than 262145 entries; spark reads at most 262144 tensors from one file \\(a checkpoint shard lists a few thousand\\) \\(at byte \\d+\\)\\n$`,
  );

test('safetensors: a header of 262,146 entries (one over the bound, __metadata__ allowed for) is refused, one line naming the file and the limit; one of 262,144 tensors is read', async () => {
  const dir = tempDir();
  const over = writeManyTensors(join(dir, 'over.safetensors'), 262_146);
  const r = await cli(['inspect', over]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, tooManyTensors(over));
  const [atCap] = await readHeaders([writeManyTensors(join(dir, 'cap.safetensors'), 262_144)]);
  assert.equal(atCap.tensors.length, 262_144);
});

test('safetensors: a header of 1,000,000 tensors is refused after the 262,144th, one line naming the file and the limit', async () => {
  const big = writeManyTensors(join(tempDir(), 'big.safetensors'), 1_000_000);
  const r = await cli(['inspect', big]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, tooManyTensors(big));
});
