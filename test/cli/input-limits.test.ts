// The bounds on big input (docs/cli.md "Limits"): each case that used to cost seconds,
// gigabytes or the stack is now one line and exit 2, and the largest input allowed still works.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { parseRecipe } from '../../src/recipes/index.js';
import { TOML_LIMITS } from '../../src/recipes/toml-file.js';
import { ROWS_MAX_DEQUANT_IDS, ROWS_MAX_IDS } from '../../src/commands/rows.js';
import { decodeE4M3, decodeE8M0, dequantRowText } from '../../src/engram/dequant.js';
import { packageRoot } from '../../src/addon/index.js';
import { SparkError } from '../../src/errors/errors.js';
import { cli } from '../helpers/cli.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';

const RECIPE = join(packageRoot(), 'recipes', 'dsv41-flash-4x-sglang-packed', 'recipe.toml');
const base = readFileSync(RECIPE, 'utf8');

function refusal(fn: () => unknown): SparkError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof SparkError, String(err));
    return err;
  }
  assert.fail('expected a refusal');
}

test('TOML: 150,000 tables (which overflowed the stack) are one line, exit 2, refused by the file size', async () => {
  let text = base + '\n';
  for (let i = 0; i < 150_000; i++) text += `[t${i}]\na = 1\n`;
  const path = join(tempDir(), 'big.toml');
  writeFileSync(path, text);
  const r = await cli(['preflight', path]);
  assert.equal(r.code, 2);
  assert.equal(
    r.stderr,
    `spark: ${path}: ${Buffer.byteLength(text)} bytes, more than the 262144 a recipe or cluster file may be; is it the right file?\n`,
  );
});

test('TOML: more than 8,192 values under the size limit is refused naming the limit; 8,192 are read', () => {
  assert.deepEqual(TOML_LIMITS, { bytes: 256 << 10, values: 8192 });
  // Array elements count: a table of one key whose array brings the total to the limit, then one past it.
  const baseValues = countValues(base);
  const withArray = (n: number) => `${base}\n[spark_limit_probe]\nv = [${new Array(n).fill('1').join(',')}]\n`;
  const fits = withArray(TOML_LIMITS.values - baseValues - 2); // the table and its key are 2 values
  assert.ok(Buffer.byteLength(fits) <= TOML_LIMITS.bytes);
  parseRecipe(fits, 'r.toml');
  const e = refusal(() => parseRecipe(withArray(TOML_LIMITS.values - baseValues - 1), 'r.toml'));
  assert.equal(e.code, 'E_RECIPE');
  assert.equal(e.exitCode, 2);
  assert.equal(
    e.message,
    'r.toml: more than 8192 values (keys and array elements), far more than a recipe or cluster file holds; is it the right file?',
  );
});

/** The values of a TOML document as the limit counts them, through the parser spark uses. */
function countValues(text: string): number {
  let n = 0;
  const walk = (v: unknown): void => {
    const children = Array.isArray(v)
      ? v
      : v !== null && typeof v === 'object' && !(v instanceof Date)
        ? Object.values(v)
        : [];
    n += children.length;
    children.forEach(walk);
  };
  walk(parseToml(text));
  return n;
}

test('rows: more ids than a call reads is exit 2 before anything is read (65,536; 4,096 with --dequant)', async () => {
  assert.equal(ROWS_MAX_IDS, 65_536);
  assert.equal(ROWS_MAX_DEQUANT_IDS, 4_096);
  const snap = makeSnapshot();
  const ids = (n: number) => new Array(n).fill('1').join(',');
  const dq = await cli(['rows', snap.dir, '--layer', '1', '--ids', ids(4097), '--dequant']);
  assert.equal(dq.code, 2);
  assert.equal(
    dq.stderr,
    'spark: --ids: 4097 ids, more than the 4096 one call reads with --dequant (65536 without); ask for them in several calls\n',
  );
  const plain = await cli(['rows', snap.dir, '--layer', '1', '--ids', ids(65_537)]);
  assert.equal(plain.code, 2);
  assert.equal(
    plain.stderr,
    'spark: --ids: 65537 ids, more than the 65536 one call reads; ask for them in several calls\n',
  );
  const ok = await cli(['rows', snap.dir, '--layer', '1', '--ids', ids(4096), '--dequant', '--json']);
  assert.equal(ok.code, 0, ok.stderr);
  const doc = JSON.parse(ok.stdout) as { rows: { values: number[] }[] };
  assert.equal(doc.rows.length, 4096);
  assert.equal(doc.rows[4095].values.length, 256);
});

test('rows --dequant text: every (weight byte, scale byte) pair prints as 6 significant digits, as before the cache', () => {
  const cache: string[] = [];
  const row = new Uint8Array(33);
  for (let w = 0; w < 256; w++) {
    for (let s = 0; s < 256; s++) {
      row.fill(w, 0, 32);
      row[32] = s;
      const want = String(Number((decodeE4M3(w) * decodeE8M0(s)).toPrecision(6)));
      const got = dequantRowText(row, 32, cache).split(' ');
      assert.equal(got.length, 32);
      if (got[0] !== want || got[31] !== want) assert.fail(`weight ${w} scale ${s}: ${got[0]} != ${want}`);
    }
  }
});
