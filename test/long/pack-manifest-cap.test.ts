// The manifest's size cap, one constant (MAX_MANIFEST_BYTES) for the writer and every reader:
// `spark pack` refuses, before it copies or creates anything, a --chunk-rows whose checksums
// would not fit; spark's readers and the Python reader accept a manifest of exactly the cap and
// refuse one byte more.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packEngram } from '../../src/stacks/pack-engram.js';
import { checkManifestSize, plannedRanges, sourceFiles, unitChunks } from '../../src/stacks/pack-plan.js';
import { planDense } from '../../src/stacks/packed/pack-packed.js';
import { planSparse } from '../../src/stacks/overlay/pack-sparse.js';
import { identifySources } from '../../src/pack/pack-io.js';
import { SparkError } from '../../src/errors/errors.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { readLocalDir } from '../../src/stacks/local-dir.js';
import { MAX_MANIFEST_BYTES } from '../../src/engram/manifest-fields.js';
import { packageRoot } from '../../src/addon/index.js';
import { cli } from '../helpers/cli.js';
import { makeFullSizeSnapshot, makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import { packRequest, rejects } from '../helpers/pack-request.js';
import { needs } from '../helpers/external-tool.js';
import { python3 } from '../helpers/python3.js';

const full = makeFullSizeSnapshot();
const fullTables = (await openSnapshot(full.dir)).engram;

test('MAX_MANIFEST_BYTES is 16 MiB, and the Python reader uses the same number', () => {
  assert.equal(MAX_MANIFEST_BYTES, 16 * 1024 * 1024);
  const py = readFileSync(join(packageRoot(), 'python', 'spark_engram_copy', 'checked.py'), 'utf8');
  assert.match(py, /^MAX_MANIFEST_BYTES = 16 << 20$/m);
});

test('spark pack --chunk-rows 2 on a full-size rank: exit 2 before anything is created, naming the size and a chunk size that fits', async () => {
  const out = join(tempDir(), 'copy');
  const r = await cli(['pack', full.dir, '--out', out, '--rank', '1', '--world', '4', '--chunk-rows', '2']);
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stdout, '');
  assert.match(
    r.stderr,
    /^spark: --chunk-rows: 96002857 checksum chunks for 192005713 rows would make the manifest at least 916 MiB, more than the 16\.0 MiB every reader of it accepts; use --chunk-rows 229 or more, or leave it out \(about 16 MiB of rows a chunk\)\n$/,
  );
  assert.equal(existsSync(out), false, 'nothing was created');
});

// The check alone, on the plan: none of these runs may get as far as copying a full-size rank.
for (const [layout, chunkRows] of [
  ['sparse', 150],
  ['dense', 120],
  ['page', 120],
] as const) {
  test(`${layout}: a chunk size just past the cap is measured on the manifest text itself and refused; the suggested one passes`, async () => {
    const req = packRequest(full.dir, fullTables, join(tempDir(), 'copy'), { layout, rank: 1, world: 4, chunkRows });
    const plan = async (rows: number) => {
      const r = { ...req, chunkRows: rows };
      const ranges = plannedRanges(r);
      const planner = layout === 'sparse' ? planSparse : planDense;
      return planner(r, ranges, await identifySources(sourceFiles(ranges, layout === 'sparse' ? r.index : undefined)));
    };
    // ~1.3-1.6M checksums: under the 10-bytes-a-checksum bound, over the cap once written out.
    const first = await plan(chunkRows);
    let refusal: SparkError | undefined;
    try {
      checkManifestSize(first);
    } catch (err) {
      refusal = err as SparkError;
    }
    assert.ok(refusal instanceof SparkError, 'refused');
    assert.equal(refusal.code, 'E_USAGE');
    const m =
      /^--chunk-rows: (\d+) checksum chunks for 192005713 rows would make the manifest ([\d.]+) MiB, more than the 16\.0 MiB every reader of it accepts; use --chunk-rows (\d+) or more/.exec(
        refusal.message,
      );
    assert.ok(m, refusal.message);
    assert.ok(Number(m[1]) * 10 <= MAX_MANIFEST_BYTES, 'measured on the text, not the bound');
    assert.ok(Number(m[2]) > 16 && Number(m[2]) < 40, refusal.message);
    const suggested = Number(m[3]);
    if (layout === 'page') assert.equal(suggested % 15, 0, 'whole pages');
    const fits = await plan(suggested);
    checkManifestSize(fits);
    assert.ok(
      Buffer.byteLength(fits.manifestText(unitChunks(fits).map((n) => new Array<number>(n).fill(0)))) <=
        MAX_MANIFEST_BYTES,
    );
  });
}

test('every reader accepts a manifest of exactly MAX_MANIFEST_BYTES and refuses one byte more (spark, Python)', async (t) => {
  if (!needs(t, 'numpy')) return;
  const snap = makeSnapshot();
  const tables = (await openSnapshot(snap.dir)).engram;
  const out = join(tempDir(), 'pack');
  await packEngram(packRequest(snap.dir, tables, out, { layout: 'dense', rank: 0, world: 2 }));
  const path = join(out, 'spark-pack.json');
  const text = readFileSync(path, 'utf8').trimEnd();
  const reader = join(packageRoot(), 'python', 'spark_engram_reader.py');
  const python = () =>
    spawnSync(python3(), [reader, out, '--layer', String(tables[0].layer), '--ids', '0'], { encoding: 'utf8' });
  // JSON allows trailing whitespace: pad to the cap.
  writeFileSync(path, text + ' '.repeat(MAX_MANIFEST_BYTES - Buffer.byteLength(text)));
  assert.equal((await readLocalDir(out)).kind, 'packed');
  const ok = python();
  assert.equal(ok.status, 0, ok.stderr);
  writeFileSync(path, text + ' '.repeat(MAX_MANIFEST_BYTES + 1 - Buffer.byteLength(text)));
  await rejects(readLocalDir(out), 'E_FILE_TOO_LARGE');
  const refused = python();
  assert.equal(refused.status, 2);
  assert.match(
    refused.stderr,
    new RegExp(
      `spark-pack.json: ${MAX_MANIFEST_BYTES + 1} bytes is more than the ${MAX_MANIFEST_BYTES} a manifest may have`,
    ),
  );
});
