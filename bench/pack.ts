// Pack and verify throughput against what the disk does for a plain direct copy and a plain
// direct read of the same bytes, in the same run:
//
//   node dist/bench/pack.js --snapshot /path/to/snap [--dir /var/tmp/spark-pack-bench]
//        [--rank 0] [--world 4] [--threads 4] [--exact] [--rounds N]
//   (without --snapshot, a synthetic one is made in --dir at --vocab rows per head)
//
// Cases, once each, in this order (the outputs are removed as soon as they are measured, so
// the disk holds at most one rank's worth of output at a time):
//   fio copy      per table of the rank: a direct sequential read of its weight range and of
//                 its scale range (rounded out to 4 KiB) with, at the same time, a direct
//                 sequential write of as many bytes to a new file on the output filesystem
//                 (fio, direct=1, bs=8m, libaio, queue depth 4, end_fsync): a copy with reads
//                 and writes overlapped, without any checking
//   pack sparse   spark pack --layout sparse (the default): checksums, journal, fsyncs
//   pack dense    spark pack --layout dense
//   fio read      a direct sequential read of the dense pack's files (fio, direct=1, bs=8m)
//   verify        spark verify of the dense pack (every chunk checksum)
// Every read is O_DIRECT on both sides (spark's JSON says so, and the bench records it), so a
// source larger than the page cache stays cold without dropping caches on a shared machine;
// the page cache's growth over each spark command (/proc/meminfo Cached) is recorded too.
// --exact adds spark verify --source --full of the dense pack (reads everything again).
// --rounds N (default 1) repeats fio copy and pack dense N - 1 more times, back to back and in
// alternating order, so the dense ratio is also seen as N interleaved pairs on a shared disk.
// Writes bench/out/pack-*.json.
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { alignDown, alignUp, cachedBytes, requireFio, run, type CaseResult, type Range } from './lib/direct-io.js';
import { machineInfo } from './lib/processes.js';
import { openSnapshot } from '../src/engram/snapshot.js';
import { packRanges } from '../src/pack/pack-ranges.js';
import { packageRoot } from '../src/addon/index.js';
import { crc32Implementation } from '../src/addon/pack.js';

interface Args {
  snapshot?: string;
  dir: string;
  vocab: number;
  rank: number;
  world: number;
  threads: number;
  exact: boolean;
  rounds: number;
}

function parseArgs(argv: string[]): Args {
  const a: Args = {
    dir: '/var/tmp/spark-pack-bench',
    vocab: 200_000,
    rank: 0,
    world: 4,
    threads: 4,
    exact: false,
    rounds: 1,
  };
  for (let i = 0; i < argv.length; i++) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (k === '--exact') {
      a.exact = true;
      continue;
    }
    i++;
    if (k === '--snapshot') a.snapshot = v;
    else if (k === '--dir') a.dir = v;
    else if (k === '--vocab') a.vocab = Number(v);
    else if (k === '--rank') a.rank = Number(v);
    else if (k === '--world') a.world = Number(v);
    else if (k === '--threads') a.threads = Number(v);
    else if (k === '--rounds') a.rounds = Number(v);
    else throw new Error(`unknown argument ${k}`);
  }
  return a;
}

const bin = join(packageRoot(), 'dist', 'src', 'bin.js');
const spark = (...args: string[]): string[] => [process.execPath, bin, ...args];

/** fio: direct sequential reads of `ranges` and, at the same time, direct writes of as many bytes to new files in `outDir`. */
function fioCopy(ranges: Range[], outDir: string): string[] {
  const args = ['fio', '--output=/dev/null', '--direct=1', '--bs=8m', '--ioengine=libaio', '--iodepth=4'];
  ranges.forEach((r, i) => {
    const lo = alignDown(r.offset);
    // Never past the source's end: fio would extend a file too short for its read job.
    const size = Math.min(alignUp(r.offset + r.bytes), statSync(r.file).size) - lo;
    args.push(`--name=read${i}`, `--filename=${r.file}`, '--rw=read', `--offset=${lo}`, `--size=${size}`);
    args.push(
      `--name=write${i}`,
      `--filename=${join(outDir, `copy-${i}.bin`)}`,
      '--rw=write',
      `--size=${size}`,
      '--end_fsync=1',
    );
  });
  return args;
}

function fioRead(files: string[]): string[] {
  const args = [
    'fio',
    '--output=/dev/null',
    '--direct=1',
    '--bs=8m',
    '--ioengine=libaio',
    '--iodepth=4',
    '--readonly',
    '--rw=read',
  ];
  // One job after the other (stonewall): a sequential read of each file, as verify reads them.
  files.forEach((f, i) =>
    args.push(`--name=read${i}`, `--filename=${f}`, `--size=${statSync(f).size}`, ...(i > 0 ? ['--stonewall'] : [])),
  );
  return args;
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  requireFio();
  mkdirSync(a.dir, { recursive: true });
  let snap = a.snapshot;
  if (snap === undefined) {
    snap = join(a.dir, 'snap');
    const marker = join(snap, `.bench-vocab-${a.vocab}`);
    if (!existsSync(marker)) {
      rmSync(snap, { recursive: true, force: true });
      run(spark('synth', snap, '--vocab', String(a.vocab), '--shards', '48'));
      writeFileSync(marker, '');
    }
  }
  const s = await openSnapshot(snap, { engramOnly: true });
  const ranges = packRanges(s.engram, undefined, a.rank, a.world, 'floor');
  const rows: Range[] = [];
  for (const t of s.engram) {
    const r = ranges.find((x) => x.layer === t.layer);
    if (r === undefined || r.end <= r.start) continue;
    rows.push({ file: t.weight.file, offset: t.weight.fileOffset + r.start * t.dim, bytes: (r.end - r.start) * t.dim });
    rows.push({
      file: t.scale.file,
      offset: t.scale.fileOffset + r.start * (t.dim / 32),
      bytes: (r.end - r.start) * (t.dim / 32),
    });
  }
  const bytes = rows.reduce((n, r) => n + r.bytes, 0);
  const load = [loadavg()];
  const cases: CaseResult[] = [];
  const measure = (name: string, argv: string[], caseBytes: number): CaseResult => {
    const before = cachedBytes();
    const r = run(argv);
    const c: CaseResult = { name, bytes: caseBytes, seconds: r.seconds, mbPerSec: caseBytes / 1e6 / r.seconds };
    if (argv[0] === process.execPath) {
      const doc = JSON.parse(r.stdout) as { seconds: number; io?: unknown };
      c.innerSeconds = doc.seconds;
      c.io = doc.io;
      c.cacheGrowthBytes = cachedBytes() - before;
    }
    cases.push(c);
    process.stderr.write(
      `${name}: ${r.seconds.toFixed(2)} s, ${c.mbPerSec.toFixed(0)} MB/s${c.io ? ` io ${JSON.stringify(c.io)}` : ''}\n`,
    );
    return c;
  };
  const out = (name: string): string => join(a.dir, name);
  const packArgs = (dir: string, layout: string): string[] =>
    spark(
      'pack',
      snap,
      '--out',
      dir,
      '--rank',
      String(a.rank),
      '--world',
      String(a.world),
      '--layout',
      layout,
      '--threads',
      String(a.threads),
      '--json',
    );

  rmSync(out('fio-copy'), { recursive: true, force: true });
  mkdirSync(out('fio-copy'));
  const copy = measure('fio direct copy', fioCopy(rows, out('fio-copy')), bytes);
  rmSync(out('fio-copy'), { recursive: true, force: true });

  rmSync(out('pack-sparse'), { recursive: true, force: true });
  const sparse = measure('spark pack --layout sparse', packArgs(out('pack-sparse'), 'sparse'), bytes);
  rmSync(out('pack-sparse'), { recursive: true, force: true });

  rmSync(out('pack-dense'), { recursive: true, force: true });
  const dense = measure('spark pack --layout dense', packArgs(out('pack-dense'), 'dense'), bytes);
  const denseFiles = s.engram
    .map((t) => join(out('pack-dense'), `engram-l${t.layer}-r${a.rank}of${a.world}.bin`))
    .filter((f) => existsSync(f));
  const packBytes = denseFiles.reduce((n, f) => n + statSync(f).size, 0);
  const read = measure('fio direct read of the dense pack', fioRead(denseFiles), packBytes);
  const verify = measure(
    'spark verify (checksums)',
    spark('verify', out('pack-dense'), '--threads', String(a.threads), '--json'),
    packBytes,
  );
  let exact: boolean | undefined;
  if (a.exact) {
    const r = run(spark('verify', out('pack-dense'), '--source', snap, '--full', '--json'));
    exact = (JSON.parse(r.stdout) as { ok: boolean }).ok;
  }
  rmSync(out('pack-dense'), { recursive: true, force: true });
  // More (fio copy, pack dense) pairs, order alternating: the first pair is the one above.
  const pairs = [{ fio: copy.seconds, dense: dense.seconds }];
  for (let r = 1; r < a.rounds; r++) {
    const fioOnce = (): number => {
      mkdirSync(out('fio-copy'));
      const t = measure(`fio direct copy (round ${r + 1})`, fioCopy(rows, out('fio-copy')), bytes).seconds;
      rmSync(out('fio-copy'), { recursive: true, force: true });
      return t;
    };
    const denseOnce = (): number => {
      const t = measure(
        `spark pack --layout dense (round ${r + 1})`,
        packArgs(out('pack-dense'), 'dense'),
        bytes,
      ).seconds;
      rmSync(out('pack-dense'), { recursive: true, force: true });
      return t;
    };
    if (r % 2 === 1) {
      const d = denseOnce();
      pairs.push({ fio: fioOnce(), dense: d });
    } else {
      const f = fioOnce();
      pairs.push({ fio: f, dense: denseOnce() });
    }
  }
  load.push(loadavg());

  const ratio = (num: CaseResult, den: CaseResult, inner = false): number =>
    den.seconds / (inner && num.innerSeconds ? num.innerSeconds : num.seconds);
  const result = {
    machine: { ...machineInfo(), crc32: crc32Implementation(), loadavgBefore: load[0], loadavgAfter: load[1] },
    snapshot: {
      dir: snap,
      bytes: s.shards.reduce((n, f) => n + f.bytes, 0),
      tables: s.engram.map((t) => ({ layer: t.layer, rows: t.rows })),
    },
    rank: a.rank,
    world: a.world,
    threads: a.threads,
    bytes,
    cases,
    ratios: {
      packSparseVsFioCopy: ratio(sparse, copy),
      packDenseVsFioCopy: ratio(dense, copy),
      verifyVsFioRead: ratio(verify, read),
    },
    ratiosWithoutStartup: {
      packSparseVsFioCopy: ratio(sparse, copy, true),
      packDenseVsFioCopy: ratio(dense, copy, true),
      verifyVsFioRead: ratio(verify, read, true),
    },
    denseVsFioCopyRounds: pairs.map((p) => ({ ...p, ratio: p.fio / p.dense })),
    targets: { pack: 0.95, verify: 0.9 },
    ...(exact !== undefined ? { byteExactDense: exact } : {}),
  };
  const outDir = join(packageRoot(), 'bench', 'out');
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `pack-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  const lines = [
    '| case | bytes | s | MB/s | without start-up s | io | page cache growth |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const c of cases) {
    const growth = c.cacheGrowthBytes !== undefined ? `${(c.cacheGrowthBytes / 2 ** 20).toFixed(0)} MiB` : '';
    lines.push(
      `| ${c.name} | ${c.bytes} | ${c.seconds.toFixed(2)} | ${c.mbPerSec.toFixed(0)} | ${c.innerSeconds?.toFixed(2) ?? ''} | ${c.io ? JSON.stringify(c.io) : ''} | ${growth} |`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n\nratios (throughput): ${JSON.stringify(result.ratios)}\n`);
  process.stdout.write(`without node start-up: ${JSON.stringify(result.ratiosWithoutStartup)}\n`);
  process.stdout.write(
    `dense vs fio copy per round: ${result.denseVsFioCopyRounds.map((p) => p.ratio.toFixed(3)).join(' ')}\n`,
  );
  process.stdout.write(
    `load average before ${load[0].map((x) => x.toFixed(2)).join(' ')}, after ${load[1].map((x) => x.toFixed(2)).join(' ')}\nwrote ${file}\n`,
  );
}

await main();
