// `npm run check:fullsize`: a whole rank's sparse copy of the full-size DSV4.1-shaped snapshot,
// made by the real CLI and checked without spark's reader. Too large for `npm test` (the copy
// allocates ~47 GiB for rank 1 of 4); test/stacks/pack-fullsize.test.ts checks the same properties on
// the rows at the range ends.
//
//   node dist/scripts/check-fullsize.js [--dir /var/tmp/spark-fullsize] [--rank 1] [--world 4] [--keep]
//
// Checks: the copy has the 48-shard snapshot's Engram shard names, apparent sizes and header
// bytes, the index verbatim; the rows at both ends of the rank's ranges (the snapshot's data
// windows) byte-exact through the overlay's view; rows past 2^36; the first and last chunk
// checksum of each layer recomputed; allocated bytes within 0.1% of the bytes the pack holds.
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statfsSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { packRanges } from '../src/pack/pack-ranges.js';
import { INDEX_FILE, openSnapshot } from '../src/engram/snapshot.js';
import { parseSparseManifest } from '../src/stacks/overlay/sparse-manifest.js';
import { synthRow } from '../src/synth/synth-rows.js';
import { packageRoot } from '../src/addon/index.js';
import { crc32 } from '../src/addon/pack.js';
import { openOverlayView } from '../test/helpers/overlay-view.js';
import { safetensorsHeader } from '../test/helpers/sparse-check.js';

const args = process.argv.slice(2);
const arg = (name: string, fallback: string): string => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const root = arg('--dir', '/var/tmp/spark-fullsize');
const rank = Number(arg('--rank', '1'));
const world = Number(arg('--world', '4'));
const keep = args.includes('--keep');
const spark = join(packageRoot(), 'dist', 'src', 'bin.js');
const gib = (n: number): string => `${(n / 2 ** 30).toFixed(2)} GiB`;
const problems: string[] = [];
const check = (ok: boolean, what: string): void => {
  if (!ok) problems.push(what);
};

function run(argv: string[]): { code: number; stdout: string; stderr: string; seconds: number } {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [spark, ...argv], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return { code: r.status ?? 128, stdout: r.stdout, stderr: r.stderr, seconds: (performance.now() - t0) / 1000 };
}

mkdirSync(root, { recursive: true });
const snap = join(root, 'snapshot');
if (!existsSync(join(snap, INDEX_FILE))) {
  rmSync(snap, { recursive: true, force: true });
  const s = run(['synth', snap, '--vocab', '16000000', '--shards', '48', '--sparse']);
  if (s.code !== 0) throw new Error(`spark synth failed: ${s.stderr}`);
}
const opened = await openSnapshot(snap);
const ranges = packRanges(opened.engram, opened.config, rank, world, 'floor');
const rankBytes = ranges.reduce((a, r) => a + (r.end - r.start) * 264, 0);
const fs = statfsSync(root);
if (fs.bavail * fs.bsize < rankBytes * 1.05) {
  process.stderr.write(
    `not enough room in ${root}: the copy needs ${gib(rankBytes)}, ${gib(fs.bavail * fs.bsize)} are free\n`,
  );
  process.exit(3);
}
const out = join(root, `copy-r${rank}of${world}`);
rmSync(out, { recursive: true, force: true });
const packed = run(['pack', snap, '--out', out, '--rank', String(rank), '--world', String(world), '--json']);
if (packed.code !== 0) throw new Error(`spark pack failed (${packed.code}): ${packed.stderr}`);
const summary = JSON.parse(packed.stdout) as { bytes: number; apparentBytes: number; seconds: number };

// Names, apparent sizes, header bytes, index.
const shards = [...new Set(opened.engram.map((t) => t.weight.fileName))].sort();
check(
  JSON.stringify(readdirSync(out).sort()) === JSON.stringify(['engram-local.json', INDEX_FILE, ...shards].sort()),
  `files: ${readdirSync(out).join(' ')}`,
);
check(readFileSync(join(out, INDEX_FILE)).equals(readFileSync(join(snap, INDEX_FILE))), 'the index is not verbatim');
let allocated = 0;
for (const f of readdirSync(out)) allocated += statSync(join(out, f)).blocks * 512;
for (const name of shards) {
  check(statSync(join(out, name)).size === statSync(join(snap, name)).size, `${name}: apparent size`);
  check(safetensorsHeader(join(out, name)).equals(safetensorsHeader(join(snap, name))), `${name}: header bytes`);
}

// Rows at both ends of each range (where the synthetic snapshot holds data), and past 2^36.
const view = openOverlayView(out);
let rowsChecked = 0;
let past36 = 0;
for (const r of ranges) {
  const t = view.tables.get(r.layer)!;
  check(t.lo === r.start && t.hi === r.end, `layer ${r.layer}: the manifest says [${t.lo}, ${t.hi})`);
  for (const id of [...Array(64).keys()].flatMap((i) => [r.start + i, r.end - 1 - i])) {
    check(view.row(r.layer, id).equals(synthRow(r.layer, id, 256)), `layer ${r.layer}: row ${id} differs`);
    rowsChecked++;
    if (t.scale.base + id * 8 >= 2 ** 36) past36++;
    if (t.weight.base + id * 256 >= 2 ** 36) past36++;
  }
  check(
    view.row(r.layer, r.start - 1).equals(Buffer.alloc(264)) && view.row(r.layer, r.end).equals(Buffer.alloc(264)),
    `layer ${r.layer}: unowned rows are not zero`,
  );
}
view.close();

// The first and last chunk checksum of each layer, recomputed from the copy.
const m = parseSparseManifest(readFileSync(join(out, 'engram-local.json'), 'utf8'));
for (const t of m.spark!.tables) {
  const r = m.layers.find((l) => l.layer === t.layer)!;
  const fd = openSync(join(out, t.shard), 'r');
  for (const k of [0, t.checksum.values.length - 1]) {
    const a = r.start + k * t.checksum.chunkRows;
    const n = Math.min(r.end, a + t.checksum.chunkRows) - a;
    const w = Buffer.alloc(n * 256);
    const s = Buffer.alloc(n * 8);
    readSync(fd, w, 0, w.length, t.weightOffset + a * 256);
    readSync(fd, s, 0, s.length, t.scaleOffset + a * 8);
    check(
      crc32(s, crc32(w)).toString(16).padStart(8, '0') === t.checksum.values[k],
      `layer ${t.layer}: chunk ${k} checksum`,
    );
  }
  closeSync(fd);
}
check(
  Math.abs(allocated - summary.bytes) <= summary.bytes * 0.001,
  `allocated ${allocated} bytes, the pack holds ${summary.bytes}`,
);

const result = {
  command: `spark pack ${snap} --out ${out} --rank ${rank} --world ${world}`,
  ok: problems.length === 0,
  problems,
  rankRowBytes: rankBytes,
  packBytes: summary.bytes,
  allocatedBytes: allocated,
  apparentBytes: summary.apparentBytes,
  packSeconds: summary.seconds,
  mbPerSec: summary.bytes / 1e6 / summary.seconds,
  rowsChecked,
  rowReadsPast2to36: past36,
};
writeFileSync(join(root, `check-fullsize-r${rank}of${world}.json`), JSON.stringify(result, null, 2) + '\n');
process.stdout.write(
  `${result.ok ? 'ok' : 'FAILED'}: rank ${rank} of ${world}: ${gib(allocated)} allocated for ${gib(summary.bytes)} held ` +
    `(rows ${gib(rankBytes)}), apparent ${gib(summary.apparentBytes)}; packed in ${summary.seconds.toFixed(0)} s ` +
    `(${result.mbPerSec.toFixed(0)} MB/s); ${rowsChecked} rows checked, ${past36} row reads past 2^36\n` +
    problems.map((p) => `  ${p}\n`).join(''),
);
if (!keep) rmSync(out, { recursive: true, force: true });
process.exitCode = result.ok ? 0 : 1;
