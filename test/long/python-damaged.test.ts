// The Python reader on damaged inputs: every kind is one line on stderr and exit 2, never a
// traceback, a hang or a SIGBUS. Each case damages a fresh copy of a good pack or sparse copy.
// A long trial (npm run test:long): about thirty Python processes, each importing numpy, over a
// minute on 2 cores; the reader's good paths are checked in npm test (test/python/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
  openSync,
  writeSync,
  closeSync,
} from 'node:fs';
import { join } from 'node:path';
import { packEngram } from '../../src/stacks/pack-engram.js';
import { packRanges } from '../../src/pack/pack-ranges.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { packageRoot } from '../../src/addon/index.js';
import { floorRange, writeSparseCopy } from '../helpers/sparse-copy.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import { needs } from '../helpers/external-tool.js';
import { python3 } from '../helpers/python3.js';

const reader = join(packageRoot(), 'python', 'spark_engram_reader.py');
const snap = makeSnapshot({ seed: 5 });
const tables = (await openSnapshot(snap.dir)).engram;
const base = tempDir();
const goodPack = join(base, 'pack');
await packEngram({
  snapshotDir: snap.dir,
  tables,
  out: goodPack,
  rank: 1,
  world: 3,
  split: 'floor',
  ranges: packRanges(tables, undefined, 1, 3, 'floor'),
  layout: 'dense',
  threads: 2,
});
// The damage below is done to a pack under the name version 1 packs were first written with
// (engram-local.json, a layers array): the reader takes it as it takes spark-pack.json.
renameSync(join(goodPack, 'spark-pack.json'), join(goodPack, 'engram-local.json'));
const manifestOf = (dir: string) => JSON.parse(readFileSync(join(dir, 'engram-local.json'), 'utf8'));
const packFile = (dir: string): string => join(dir, manifestOf(dir).layers[0].file as string);
const packLayer = String(manifestOf(goodPack).layers[0].layer);
const packStart = String(manifestOf(goodPack).layers[0].start);
const ranges = snap.layers.map((l) => floorRange(l.layer, l.rows, 0, 2));

let n = 0;
function freshPack(): string {
  const dir = join(base, `p${n++}`);
  cpSync(goodPack, dir, { recursive: true });
  return dir;
}
function freshSparse(skip?: { layer: number; from: number; to: number }): string {
  const dir = join(base, `s${n++}`);
  mkdirSync(dir);
  writeSparseCopy(snap.dir, dir, { flavour: 'overlay', ranges, ...(skip ? { skipWeightRows: skip } : {}) });
  return dir;
}
const shardOf = (dir: string) => join(dir, `model-00002-of-00003.safetensors`);
function patch(path: string, at: number, bytes: Buffer): void {
  const fd = openSync(path, 'r+');
  writeSync(fd, bytes, 0, bytes.length, at);
  closeSync(fd);
}
const editManifest = (dir: string, edit: (m: Record<string, unknown>) => void): void => {
  const m = manifestOf(dir);
  edit(m);
  writeFileSync(join(dir, 'engram-local.json'), JSON.stringify(m));
};

interface Case {
  name: string;
  make: () => string;
  args?: string[];
  want: RegExp;
}

const readPack = ['--layer', packLayer, '--ids', packStart];
const readSparse = ['--layer', '1', '--ids', String(ranges[0].start)];
const cases: Case[] = [
  {
    name: 'truncated manifest',
    make: () => {
      const d = freshPack();
      const p = join(d, 'engram-local.json');
      truncateSync(p, 100);
      return d;
    },
    want: /engram-local\.json: the manifest is not valid JSON/,
  },
  {
    name: 'manifest of the wrong type (a list)',
    make: () => {
      const d = freshPack();
      writeFileSync(join(d, 'engram-local.json'), '[1, 2]');
      return d;
    },
    want: /engram-local\.json must be a JSON object/,
  },
  {
    name: 'manifest field of the wrong type',
    make: () => {
      const d = freshPack();
      editManifest(d, (m) => (m.rank = '1'));
      return d;
    },
    want: /rank must be a whole number >= 0, got '1'/,
  },
  {
    name: 'manifest not UTF-8',
    make: () => {
      const d = freshPack();
      writeFileSync(join(d, 'engram-local.json'), Buffer.from([0x7b, 0xff, 0xfe, 0x7d]));
      return d;
    },
    want: /the manifest is not valid UTF-8 \(byte 1\)/,
  },
  {
    name: 'zero row bytes',
    make: () => {
      const d = freshPack();
      editManifest(d, (m) => ((m.layers as { rowBytes: number }[])[0].rowBytes = 0));
      return d;
    },
    want: /rowBytes must be a whole number >= 33, got 0/,
  },
  {
    name: 'checksum values not a list',
    make: () => {
      const d = freshPack();
      editManifest(d, (m) => ((m.layers as { checksum: { values: unknown } }[])[0].checksum.values = 'abc'));
      return d;
    },
    want: /checksum\.values must be a list/,
  },
  {
    name: 'missing data file',
    make: () => {
      const d = freshPack();
      unlinkSync(packFile(d));
      return d;
    },
    want: /\.bin: is missing/,
  },
  {
    name: 'truncated data file',
    make: () => {
      const d = freshPack();
      const f = packFile(d);
      truncateSync(f, 5000);
      return d;
    },
    want: /5000 bytes, the layout implies/,
  },
  // A dense data file of version 2 is the Mia stack's shard: its binary header is checked field by field.
  {
    name: 'shard header of another magic',
    make: () => {
      const d = freshPack();
      patch(packFile(d), 0, Buffer.from('{{{{'));
      return d;
    },
    want: /Mia shard header says magic=0x31344e457b7b7b7b, expected 0x31344e4531565344/,
  },
  {
    name: 'shard header of another range',
    make: () => {
      const d = freshPack();
      patch(packFile(d), 16, Buffer.from([0x07]));
      return d;
    },
    want: /Mia shard header says lo=\d+, expected \d+/,
  },
  {
    name: 'shard header with bytes after its fields',
    make: () => {
      const d = freshPack();
      patch(packFile(d), 4000, Buffer.from([1]));
      return d;
    },
    want: /header bytes 48-4095 are not zero/,
  },
  {
    name: 'manifest is a FIFO',
    make: () => {
      const d = freshPack();
      unlinkSync(join(d, 'engram-local.json'));
      spawnSync('mkfifo', [join(d, 'engram-local.json')]);
      return d;
    },
    want: /engram-local\.json: is not a regular file/,
  },
  // (Without a manifest, finished shards are read as the Mia stack's own: mia-contract.test.ts.)
  {
    name: 'no manifest, only partial files',
    make: () => {
      const d = freshPack();
      const f = packFile(d);
      rmSync(join(d, 'engram-local.json'));
      renameSync(f, `${f}.partial`);
      for (const n of readdirSync(d)) if (n.endsWith('.bin')) rmSync(join(d, n));
      return d;
    },
    want: /has neither spark-pack\.json nor engram-local\.json/,
  },
  {
    name: '--ids not a number',
    make: freshPack,
    args: ['--layer', packLayer, '--ids', `${packStart},x`],
    want: /--ids must be comma-separated whole numbers >= 0, got 'x'/,
  },
  { name: '--ids negative', make: freshPack, args: ['--layer', packLayer, '--ids', '-3'], want: /--ids/ },
  {
    name: '--ids empty',
    make: freshPack,
    args: ['--layer', packLayer, '--ids', ''],
    want: /--ids must be comma-separated whole numbers >= 0, got ''/,
  },
  {
    name: '--layer not a number',
    make: freshPack,
    args: ['--layer', 'one', '--ids', '1'],
    want: /argument --layer: invalid int value: 'one' \(see --help\)/,
  },
  {
    name: 'a layer the copy does not hold',
    make: freshPack,
    args: ['--layer', '7', '--ids', '1'],
    want: /layer 7 is not in this copy/,
  },
  {
    name: 'sparse: missing index',
    make: () => {
      const d = freshSparse();
      unlinkSync(join(d, 'model.safetensors.index.json'));
      return d;
    },
    args: readSparse,
    want: /model\.safetensors\.index\.json: is missing/,
  },
  {
    name: 'sparse: index names a path out of the copy',
    make: () => {
      const d = freshSparse();
      const p = join(d, 'model.safetensors.index.json');
      writeFileSync(
        p,
        readFileSync(p, 'utf8').replaceAll(
          '"model-00002-of-00003.safetensors"',
          '"../model-00002-of-00003.safetensors"',
        ),
      );
      return d;
    },
    args: readSparse,
    want: /must be a plain file name inside the directory/,
  },
  {
    name: 'sparse: layers entry of the wrong type',
    make: () => {
      const d = freshSparse();
      editManifest(d, (m) => ((m.layers as Record<string, unknown>)['1'] = 5));
      return d;
    },
    args: readSparse,
    want: /layers\.1 must be \[lo, hi\]/,
  },
  {
    name: 'sparse: truncated shard (no SIGBUS)',
    make: () => {
      const d = freshSparse();
      truncateSync(shardOf(d), 20000);
      return d;
    },
    args: readSparse,
    want: /20000 bytes, the tables it holds need \d+ \(truncated\)/,
  },
  {
    name: 'sparse: shard header not UTF-8',
    make: () => {
      const d = freshSparse();
      patch(shardOf(d), 10, Buffer.from([0xff]));
      return d;
    },
    args: readSparse,
    want: /the safetensors header is not valid UTF-8 \(byte 2\)/,
  },
  {
    name: 'sparse: shard header not JSON',
    make: () => {
      const d = freshSparse();
      patch(shardOf(d), 8, Buffer.from('['));
      return d;
    },
    args: readSparse,
    want: /the safetensors header is not valid JSON/,
  },
  {
    name: 'sparse: header length past the file',
    make: () => {
      const d = freshSparse();
      const b = Buffer.alloc(8);
      b.writeBigUInt64LE(1n << 40n);
      patch(shardOf(d), 0, b);
      return d;
    },
    args: readSparse,
    want: /header length 1099511627776 is past the file/,
  },
  {
    name: 'sparse: a hole inside the range',
    make: () => freshSparse({ layer: 1, from: ranges[0].start + 40, to: ranges[0].start + 1100 }),
    args: readSparse,
    want: /layer 1: weight of row \d+ is a hole inside the copy's range/,
  },
  {
    name: 'sparse: an id outside the range',
    make: freshSparse,
    args: ['--layer', '1', '--ids', String(ranges[0].end)],
    want: new RegExp(`id ${ranges[0].end} is outside this copy's range \\[${ranges[0].start}, ${ranges[0].end}\\)`),
  },
];

test(`the Python reader: ${cases.length} kinds of damaged input, each one line and exit 2`, (t) => {
  if (!needs(t, 'numpy')) return;
  assert.ok(new Set(cases.map((c) => c.name)).size >= 11);
  for (const c of cases) {
    const dir = c.make();
    const r = spawnSync(python3(), [reader, dir, ...(c.args ?? readPack)], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.error, undefined, `${c.name}: ${r.error?.message}`);
    assert.equal(r.signal, null, `${c.name}: killed by ${r.signal}`);
    assert.equal(r.status, 2, `${c.name}: exit ${r.status}, stderr ${r.stderr}`);
    assert.match(r.stderr, /^spark_engram_reader: [^\n]+\n$/, `${c.name}: not one line: ${r.stderr}`);
    assert.match(r.stderr, c.want, c.name);
    assert.doesNotMatch(r.stderr, /Traceback/, c.name);
    assert.equal(r.stdout, '', c.name);
  }
});

test('the Python reader reads a pack whose manifest is spark-pack.json', (t) => {
  if (!needs(t, 'numpy')) return;
  const d = freshPack();
  renameSync(join(d, 'engram-local.json'), join(d, 'spark-pack.json'));
  const r = spawnSync(python3(), [reader, d, ...readPack], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const doc = JSON.parse(r.stdout);
  assert.equal(doc.source, 'packed');
  assert.equal(doc.rows[0].id, Number(packStart));
});

test("the Python reader --verify: a hole inside a sparse copy's range fails the check (exit 1), naming the row", (t) => {
  if (!needs(t, 'numpy')) return;
  const d = freshSparse({ layer: 1, from: ranges[0].start + 40, to: ranges[0].start + 1100 });
  const r = spawnSync(python3(), [reader, d, '--verify'], { encoding: 'utf8' });
  assert.equal(r.status, 1, r.stderr);
  assert.match(
    r.stderr,
    /^spark_engram_reader: .*model-00002-of-00003\.safetensors: layer 1: weight of row \d+ is a hole inside the copy's range/,
  );
  assert.equal(JSON.parse(r.stdout).ok, false);
});
