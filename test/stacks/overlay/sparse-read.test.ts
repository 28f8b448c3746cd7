// Sparse copies, spark's and the overlay tool's (written by test/helpers/sparse-copy.ts, not by
// spark's packer), read through `spark rows`, `spark verify` and `spark bench gather`: rows
// byte-exact inside the manifest's range, exit 2 outside it, holes refused or reported.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { PACK_MANIFEST_NAME } from '../../../src/stacks/local-dir.js';
import { packEngram } from '../../../src/stacks/pack-engram.js';
import { packRanges } from '../../../src/pack/pack-ranges.js';
import { openRowSource } from '../../../src/stacks/local-copy.js';
import { openSnapshot } from '../../../src/engram/snapshot.js';
import { synthRow } from '../../../src/synth/synth-rows.js';
import { cli } from '../../helpers/cli.js';
import {
  floorRange,
  INDEX,
  writeSparseCopy,
  type CopyRange,
  type SparseCopyOptions,
} from '../../helpers/sparse-copy.js';
import { makeSnapshot } from '../../helpers/synth.js';
import { tempDir } from '../../helpers/tmp.js';

const snap = makeSnapshot({ seed: 0 });
const ranges = snap.layers.map((l) => floorRange(l.layer, l.rows, 1, 2));
const FLAVOURS = ['overlay', 'spark'] as const;

function copyOf(flavour: 'overlay' | 'spark', extra: Partial<SparseCopyOptions> = {}) {
  const dir = join(tempDir(), `copy-${flavour}`);
  mkdirSync(dir);
  return writeSparseCopy(snap.dir, dir, { flavour, ranges, rank: 1, world: 2, chunkRows: 700, ...extra });
}

function patch(path: string, at: number, bytes: Buffer): void {
  const fd = openSync(path, 'r+');
  writeSync(fd, bytes, 0, bytes.length, at);
  closeSync(fd);
}

interface RowsReply {
  layer: number;
  source: string;
  rows: { id: number; weight: string; scale: string }[];
}

for (const flavour of FLAVOURS) {
  test(`spark rows reads a sparse copy (${flavour}) byte for byte inside its range, exit 2 naming the range outside it`, async () => {
    const copy = copyOf(flavour);
    for (const r of ranges) {
      const ids = [r.start, r.end - 1, r.start + 17, r.start + 17, Math.floor((r.start + r.end) / 2)];
      const res = await cli(['rows', copy.dir, '--layer', String(r.layer), '--ids', ids.join(','), '--json']);
      assert.equal(res.code, 0, res.stderr);
      const reply = JSON.parse(res.stdout) as RowsReply;
      assert.equal(reply.source, 'sparse');
      assert.deepEqual(
        reply.rows.map((x) => x.id),
        ids,
      );
      for (const row of reply.rows)
        assert.equal(
          row.weight + row.scale,
          synthRow(r.layer, row.id, 256).toString('hex'),
          `layer ${r.layer} id ${row.id}`,
        );
      for (const outside of [r.start - 1, r.end]) {
        const bad = await cli([
          'rows',
          copy.dir,
          '--layer',
          String(r.layer),
          '--ids',
          `${r.start},${outside}`,
          '--json',
        ]);
        assert.equal(bad.code, 2);
        const err = JSON.parse(bad.stderr).error;
        assert.equal(err.code, 'E_ROW_RANGE');
        assert.match(
          err.message,
          new RegExp(
            `row id ${outside} \\(batch index 1\\) is outside this sparse copy's range \\[${r.start}, ${r.end}\\) of layer ${r.layer}`,
          ),
        );
      }
    }
    // The row source reports the ranges it can read, through the same store the engine-facing tools use.
    const src = await openRowSource(copy.dir, { threads: 2 });
    try {
      assert.equal(src.kind, 'sparse');
      assert.deepEqual(
        src.tables.map((t) => [t.layer, t.start, t.end]),
        ranges.map((r) => [r.layer, r.start, r.end]),
      );
      assert.equal(src.sparse?.spark !== undefined, flavour === 'spark');
    } finally {
      await src.close();
    }
  });
}

test('a sparse copy of one layer holds only that shard; other layers are exit 2, not zeros', async () => {
  const dir = join(tempDir(), 'one-layer');
  mkdirSync(dir);
  writeSparseCopy(snap.dir, dir, { flavour: 'overlay', ranges: [ranges[0]] });
  const ok = await cli(['rows', dir, '--layer', '1', '--ids', String(ranges[0].start), '--json']);
  assert.equal(ok.code, 0, ok.stderr);
  const other = await cli(['rows', dir, '--layer', '14', '--ids', String(ranges[1].start), '--json']);
  assert.equal(other.code, 2);
  assert.match(JSON.parse(other.stderr).error.message, /sparse copy.* has no Engram table for layer 14 \(it has 1\)/);
});

test('a directory with holes where the rows should be and no manifest is refused, not read as zeros', async () => {
  const copy = copyOf('overlay');
  unlinkSync(join(copy.dir, 'engram-local.json'));
  for (const argv of [
    ['rows', copy.dir, '--layer', '14', '--ids', String(ranges[1].start), '--json'],
    ['bench', 'gather', copy.dir, '--threads', '1', '--batch', '24', '--seconds', '1', '--json'],
  ]) {
    const r = await cli(argv);
    assert.equal(r.code, 2, `${argv[0]}: ${r.stderr}`);
    const err = JSON.parse(r.stderr).error;
    assert.equal(err.code, 'E_SNAPSHOT');
    assert.match(
      err.message,
      /layer (1|14): weight of row \d+ is a hole \(never written\) and the directory has no engram-local\.json/,
    );
  }
  // The full snapshot itself (no holes) reads as before.
  const full = await cli(['rows', snap.dir, '--layer', '14', '--ids', '0', '--json']);
  assert.equal(full.code, 0, full.stderr);
});

for (const flavour of FLAVOURS) {
  test(`a hole inside the range (${flavour}): rows refuses the layer at open, verify names the row`, async () => {
    const r = ranges[0];
    const skip = { layer: 1, from: r.start + 300, to: r.start + 1500 };
    const copy = copyOf(flavour, { skipWeightRows: skip });
    const rows = await cli(['rows', copy.dir, '--layer', '1', '--ids', String(r.start), '--json']);
    assert.equal(rows.code, 2);
    assert.match(
      JSON.parse(rows.stderr).error.message,
      new RegExp(`layer 1: weight of row \\d+ is a hole inside the copy's range \\[${r.start}, ${r.end}\\)`),
    );
    // The other layer has no hole and reads.
    assert.equal((await cli(['rows', copy.dir, '--layer', '14', '--ids', String(ranges[1].start)])).code, 0);
    const v = await cli(['verify', copy.dir, '--json']);
    assert.equal(v.code, 1, v.stderr);
    const report = JSON.parse(v.stdout);
    const hole = report.layers.find((l: { layer: number }) => l.layer === 1).hole;
    assert.equal(hole.column, 'weight');
    assert.ok(hole.row >= skip.from && hole.row < skip.to, `hole row ${hole.row}`);
    assert.match(
      v.stderr,
      new RegExp(
        `^spark verify: ${copy.tables[0].shard}: layer 1: row ${hole.row} \\(weight, byte \\d+\\) is a hole inside the copy's range`,
      ),
    );
  });
}

for (const flavour of FLAVOURS) {
  test(`spark verify on a sparse copy (${flavour}): clean, then a changed header byte, index byte and row byte`, async () => {
    const copy = copyOf(flavour);
    const ok = await cli(['verify', copy.dir, '--json']);
    assert.equal(ok.code, 0, ok.stderr);
    const report = JSON.parse(ok.stdout);
    assert.equal(report.kind, 'sparse');
    assert.equal(report.madeBy, flavour === 'spark' ? 'spark' : 'another tool');
    const chunks = ranges.map((r) => (flavour === 'spark' ? Math.ceil((r.end - r.start) / 700) : 0));
    assert.deepEqual(
      report.layers.map((l: { chunks: { total: number; checked: number } }) => [l.chunks.total, l.chunks.checked]),
      chunks.map((c) => [c, c]),
    );
    if (flavour === 'overlay')
      assert.ok(report.checked.some((c: string) => /^no checksums: the copy was made by another tool/.test(c)));
    const text = await cli(['verify', copy.dir]);
    assert.match(
      text.stdout,
      flavour === 'spark'
        ? /^ok: rank 1 of 2 in .* \(sparse copy made by spark; /
        : /^ok: sparse copy made by another tool in /,
    );
    const full = await cli(['verify', copy.dir, '--source', snap.dir, '--full', '--json']);
    assert.equal(full.code, 0, full.stderr);
    assert.deepEqual(
      JSON.parse(full.stdout).layers.map((l: { rows: { compared: number } }) => l.rows.compared),
      ranges.map((r) => r.end - r.start),
    );

    const shard = copy.tables[1].shard;
    const shardPath = join(copy.dir, shard);
    const headerText = readFileSync(shardPath).subarray(0, 4096).toString('latin1');
    const headerAt = headerText.indexOf('"pt"') + 2; // __metadata__ format "pt" -> "pT": still valid JSON
    patch(shardPath, headerAt, Buffer.from('T'));
    const indexPath = join(copy.dir, INDEX);
    const indexText = readFileSync(indexPath, 'utf8');
    const indexAt = indexText.indexOf('total_size') + 14;
    writeFileSync(
      indexPath,
      indexText.slice(0, indexAt) + String((Number(indexText[indexAt]) + 1) % 10) + indexText.slice(indexAt + 1),
    );
    const rowId = ranges[1].end - 1; // the last row: every sample holds it
    patch(
      shardPath,
      copy.tables[1].weightOffset + rowId * 256 + 100,
      Buffer.from([synthRow(14, rowId, 256)[100] ^ 0x21]),
    );

    for (const mode of ['--full', '--sample']) {
      const bad = await cli([
        'verify',
        copy.dir,
        '--source',
        snap.dir,
        mode,
        ...(mode === '--sample' ? ['5'] : []),
        '--json',
      ]);
      assert.equal(bad.code, 1, bad.stderr);
      const problems = JSON.parse(bad.stdout).problems as string[];
      assert.ok(problems.includes(`${INDEX}: differs from the source's at byte ${indexAt}`), problems.join('\n'));
      assert.ok(
        problems.includes(`${shard}: header bytes differ from the source's at byte ${headerAt}`),
        problems.join('\n'),
      );
      assert.ok(
        problems.some((p) => p.startsWith(`${shard}: layer 14: row ${rowId} differs from the source`)),
        problems.join('\n'),
      );
    }
    const alone = await cli(['verify', copy.dir, '--json']);
    if (flavour === 'spark') {
      assert.equal(alone.code, 1);
      const problems = JSON.parse(alone.stdout).problems as string[];
      assert.ok(
        problems.some((p) => p.startsWith(`${INDEX}: `) && p.endsWith('the index was changed')),
        problems.join('\n'),
      );
      assert.ok(
        problems.some((p) => p.startsWith(`${shard}: header bytes (0-`) && p.includes('fail their checksum')),
        problems.join('\n'),
      );
      const k = Math.floor((rowId - ranges[1].start) / 700);
      assert.ok(
        problems.some((p) =>
          p.startsWith(
            `${shard}: layer 14: chunk ${k} (rows ${ranges[1].start + k * 700}-${rowId}) fails its checksum`,
          ),
        ),
        problems.join('\n'),
      );
    } else {
      // Without checksums and without --source there is nothing to catch a changed byte with: it says so.
      assert.equal(alone.code, 0);
      assert.ok(JSON.parse(alone.stdout).checked.some((c: string) => c.includes('give --source SNAPSHOT')));
    }
  });
}

test('spark verify refuses data files that link out of the copy (exit 1, not read)', async () => {
  const copy = copyOf('spark');
  const outside = join(tempDir(), 'elsewhere.safetensors');
  const shard = copy.tables[0].shard;
  renameSync(join(copy.dir, shard), outside);
  symlinkSync(outside, join(copy.dir, shard));
  const r = await cli(['verify', copy.dir, '--json']);
  assert.equal(r.code, 1);
  assert.deepEqual(JSON.parse(r.stdout).problems, [
    `${shard}: links outside the copy (to ${outside}); refusing to read it: make the copy again with real files`,
  ]);
  assert.equal(JSON.parse(r.stdout).bytesRead, 0);
  // A link that stays inside the directory is the copy's own file.
  const inside = copyOf('overlay');
  const name = inside.tables[0].shard;
  renameSync(join(inside.dir, name), join(inside.dir, 'real.bin'));
  symlinkSync('real.bin', join(inside.dir, name));
  assert.equal((await cli(['verify', inside.dir])).code, 0);
});

test('spark verify --full without --source is a usage error', async () => {
  const copy = copyOf('spark');
  const r = await cli(['verify', copy.dir, '--full']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--full compares every row with the snapshot: give --source SNAPSHOT/);
});

test('ranges that do not match the shard header: a manifest range past the table is exit 2 for rows, exit 1 for verify', async () => {
  const copy = copyOf('overlay');
  const path = join(copy.dir, 'engram-local.json');
  const m = JSON.parse(readFileSync(path, 'utf8'));
  const r: CopyRange = ranges[1];
  m.layers['14'] = [r.start, r.end + 5];
  writeFileSync(path, JSON.stringify(m));
  const rows = await cli(['rows', copy.dir, '--layer', '14', '--ids', String(r.start), '--json']);
  assert.equal(rows.code, 2);
  assert.match(
    JSON.parse(rows.stderr).error.message,
    new RegExp(`layers\\.14 \\[${r.start}, ${r.end + 5}\\) is not inside the table \\[0, ${r.end}\\)`),
  );
  const v = await cli(['verify', copy.dir]);
  assert.equal(v.code, 1);
  assert.match(v.stderr, /layer 14: the range .* is not inside the table/);
});

test('dense and page packs whose manifest is spark-pack.json: rows and verify read them; a data file linked out fails verify', async () => {
  const tables = (await openSnapshot(snap.dir)).engram;
  for (const layout of ['dense', 'page'] as const) {
    const out = join(tempDir(), `pack-${layout}`);
    await packEngram({
      snapshotDir: snap.dir,
      tables,
      out,
      rank: 0,
      world: 2,
      split: 'floor',
      ranges: packRanges(tables, undefined, 0, 2, 'floor'),
      layout,
      threads: 2,
    });
    if (existsSync(join(out, 'engram-local.json')))
      renameSync(join(out, 'engram-local.json'), join(out, PACK_MANIFEST_NAME));
    const m = JSON.parse(readFileSync(join(out, PACK_MANIFEST_NAME), 'utf8'));
    const e = m.layers[1];
    const rows = await cli(['rows', out, '--layer', String(e.layer), '--ids', `${e.start},${e.end - 1}`, '--json']);
    assert.equal(rows.code, 0, rows.stderr);
    const reply = JSON.parse(rows.stdout) as RowsReply;
    assert.equal(reply.source, 'packed');
    for (const row of reply.rows) assert.equal(row.weight + row.scale, synthRow(e.layer, row.id, 256).toString('hex'));
    const v = await cli(['verify', out, '--source', snap.dir, '--full', '--json']);
    assert.equal(v.code, 0, v.stderr);
    assert.equal(JSON.parse(v.stdout).kind, 'packed');
    const elsewhere = join(tempDir(), e.file);
    renameSync(join(out, e.file), elsewhere);
    symlinkSync(elsewhere, join(out, e.file));
    const linked = await cli(['verify', out, '--json']);
    assert.equal(linked.code, 1);
    assert.deepEqual(JSON.parse(linked.stdout).problems, [
      `${e.file}: layer ${e.layer}: links outside the copy (to ${elsewhere}); refusing to read it: make the copy again with real files`,
    ]);
  }
});
