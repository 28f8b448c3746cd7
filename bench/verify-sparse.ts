// `spark verify` of a sparse copy against what the disk does for a plain direct sequential read
// of the same bytes, in the same run:
//
//   node dist/bench/verify-sparse.js --copy /path/to/sparse-copy [--threads 4] [--repeat 1]
//        [--before /other/build/dist/src/bin.js]
//   node dist/bench/verify-sparse.js --snapshot S --dir D [--rank 0] [--world 2] [--threads 4]
//        (packs rank/world of S as a sparse copy into D/sparse first, untimed, and keeps it)
//
// A sparse copy holds only the rank's rows of each table: verify reads, per layer, the weight
// bytes of rows [start, end) and their scale bytes (weight rows then scale rows of each chunk).
// Cases, in this order, `--repeat` times:
//   fio read   one direct sequential read of each of those byte ranges (rounded out to 4 KiB),
//              one after the other (fio, direct=1, libaio): bs=8m at queue depth 4 (what
//              bench/pack.ts calls a direct read), then bs=16m at queue depth 16 (deeper: on
//              this machine's virtual disk it reads faster, so the target is against the faster)
//   verify     spark verify COPY --threads N --json (every chunk checksum; the report's "io"
//              says whether it read O_DIRECT)
//   before     with --before: the same command run by another build of spark (say, the commit
//              before a change), so both are measured against the same fio reads
// "without start-up" compares fio's own runtime (its JSON) with spark's own "seconds".
// Before each case the copy's pages are dropped from the page cache (advice only: the files
// are never written), so a buffered reader starts cold as fio's direct read does; the page
// cache's growth over each spark command (/proc/meminfo Cached) is recorded too.
// Writes bench/out/verify-sparse-*.json.
import { closeSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { alignDown, alignUp, cachedBytes, requireFio, run, type CaseResult, type Range } from './lib/direct-io.js';
import { machineInfo } from './lib/processes.js';
import { openSnapshot } from '../src/engram/snapshot.js';
import { sparsePatterns } from '../src/stacks/row-source.js';
import { parseSparseManifest, SPARSE_MANIFEST_NAME } from '../src/stacks/overlay/sparse-manifest.js';
import { packageRoot } from '../src/addon/index.js';
import { crc32Implementation } from '../src/addon/pack.js';
import { dropCache } from '../src/addon/page-cache.js';

interface Args {
  copy?: string;
  snapshot?: string;
  dir: string;
  rank: number;
  world: number;
  threads: number;
  repeat: number;
  before?: string;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { dir: '/var/tmp/spark-verify-sparse-bench', rank: 0, world: 2, threads: 4, repeat: 1 };
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (k === '--copy') a.copy = v;
    else if (k === '--snapshot') a.snapshot = v;
    else if (k === '--dir') a.dir = v;
    else if (k === '--rank') a.rank = Number(v);
    else if (k === '--world') a.world = Number(v);
    else if (k === '--threads') a.threads = Number(v);
    else if (k === '--repeat') a.repeat = Number(v);
    else if (k === '--before') a.before = v;
    else throw new Error(`unknown argument ${k}`);
  }
  if ((a.copy === undefined) === (a.snapshot === undefined)) throw new Error('give --copy DIR or --snapshot S');
  return a;
}

const bin = join(packageRoot(), 'dist', 'src', 'bin.js');
const spark = (...args: string[]): string[] => [process.execPath, bin, ...args];
const sparkAt = (path: string, ...args: string[]): string[] => [process.execPath, path, ...args];

/** The byte ranges verify reads: per layer of the manifest, its weight rows and its scale rows. */
async function rangesOf(copy: string): Promise<Range[]> {
  const m = parseSparseManifest(readFileSync(join(copy, SPARSE_MANIFEST_NAME), 'utf8'));
  const tables = (await openSnapshot(copy, { engramOnly: true, ...sparsePatterns(m) })).engram;
  const out: Range[] = [];
  for (const r of m.layers) {
    const t = tables.find((x) => x.layer === r.layer);
    if (t === undefined || r.end <= r.start) continue;
    const sb = t.dim / 32;
    out.push({ file: t.weight.file, offset: t.weight.fileOffset + r.start * t.dim, bytes: (r.end - r.start) * t.dim });
    out.push({ file: t.scale.file, offset: t.scale.fileOffset + r.start * sb, bytes: (r.end - r.start) * sb });
  }
  return out;
}

/** fio: one direct sequential read per range (aligned out, never past the file's end), one after the other. */
function fioRead(ranges: Range[], bs: string, depth: number): string[] {
  const args = [
    'fio',
    '--output-format=json',
    '--direct=1',
    `--bs=${bs}`,
    '--ioengine=libaio',
    `--iodepth=${depth}`,
    '--readonly',
    '--rw=read',
  ];
  ranges.forEach((r, i) => {
    const lo = alignDown(r.offset);
    const size = Math.min(alignUp(r.offset + r.bytes), statSync(r.file).size) - lo;
    args.push(
      `--name=read${i}`,
      `--filename=${r.file}`,
      `--offset=${lo}`,
      `--size=${size}`,
      ...(i > 0 ? ['--stonewall'] : []),
    );
  });
  return args;
}

/** Drops the ranges' pages from the page cache (POSIX_FADV_DONTNEED through a read-only descriptor). */
function evict(ranges: Range[]): void {
  for (const r of ranges) {
    const fd = openSync(r.file, 'r');
    try {
      dropCache(fd, alignDown(r.offset), alignUp(r.offset + r.bytes) - alignDown(r.offset));
    } finally {
      closeSync(fd);
    }
  }
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  requireFio();
  let copy = a.copy;
  if (copy === undefined) {
    mkdirSync(a.dir, { recursive: true });
    copy = join(a.dir, 'sparse');
    // Resumes or no-ops when the copy is already there and complete.
    run(
      spark(
        'pack',
        a.snapshot!,
        '--out',
        copy,
        '--rank',
        String(a.rank),
        '--world',
        String(a.world),
        '--layout',
        'sparse',
        '--json',
      ),
    );
  }
  const ranges = await rangesOf(copy);
  const bytes = ranges.reduce((n, r) => n + r.bytes, 0);
  const load = [loadavg()];
  const cases: CaseResult[] = [];
  const measure = (name: string, argv: string[]): CaseResult => {
    evict(ranges);
    const before = cachedBytes();
    const r = run(argv);
    const c: CaseResult = { name, bytes, seconds: r.seconds, mbPerSec: bytes / 1e6 / r.seconds };
    if (argv[0] === process.execPath) {
      const doc = JSON.parse(r.stdout) as { seconds: number; io?: unknown; ok: boolean };
      c.innerSeconds = doc.seconds;
      c.io = doc.io;
      c.ok = doc.ok;
      c.cacheGrowthBytes = cachedBytes() - before;
    } else {
      const doc = JSON.parse(r.stdout) as { jobs: { read: { runtime: number } }[] };
      c.innerSeconds = doc.jobs.reduce((n, j) => n + j.read.runtime, 0) / 1000; // stonewalled: one after the other
    }
    cases.push(c);
    process.stderr.write(
      `${name}: ${r.seconds.toFixed(2)} s, ${c.mbPerSec.toFixed(0)} MB/s${c.io ? ` io ${JSON.stringify(c.io)}` : ''}\n`,
    );
    return c;
  };
  const pairs: { read: CaseResult; deep: CaseResult; verify: CaseResult; before?: CaseResult }[] = [];
  const verifyArgs = ['verify', copy, '--threads', String(a.threads), '--json'];
  for (let i = 0; i < a.repeat; i++) {
    const read = measure('fio direct read, bs 8m, qd 4', fioRead(ranges, '8m', 4));
    const deep = measure('fio direct read, bs 16m, qd 16', fioRead(ranges, '16m', 16));
    const verify = measure('spark verify (checksums)', spark(...verifyArgs));
    if (verify.ok !== true) throw new Error(`spark verify ${copy} found problems: the copy is damaged`);
    const before =
      a.before !== undefined
        ? measure('spark verify (checksums), --before build', sparkAt(a.before, ...verifyArgs))
        : undefined;
    pairs.push({ read, deep, verify, ...(before ? { before } : {}) });
  }
  load.push(loadavg());

  const median = (v: number[]): number => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)];
  const fastest = (p: { read: CaseResult; deep: CaseResult }, inner = false): number =>
    inner ? Math.min(p.read.innerSeconds!, p.deep.innerSeconds!) : Math.min(p.read.seconds, p.deep.seconds);
  const ratio = (pick: (p: (typeof pairs)[number]) => CaseResult | undefined, inner: boolean): number | undefined => {
    const v = pairs.flatMap((p) => {
      const c = pick(p);
      return c ? [fastest(p, inner) / (inner ? c.innerSeconds! : c.seconds)] : [];
    });
    return v.length > 0 ? median(v) : undefined;
  };
  const result = {
    machine: { ...machineInfo(), crc32: crc32Implementation(), loadavgBefore: load[0], loadavgAfter: load[1] },
    copy,
    ranges,
    threads: a.threads,
    bytes,
    cases,
    // Against the faster of the two fio reads of the same repetition.
    ratios: { verifyVsFioRead: ratio((p) => p.verify, false), beforeVsFioRead: ratio((p) => p.before, false) },
    ratiosWithoutStartup: {
      verifyVsFioRead: ratio((p) => p.verify, true),
      beforeVsFioRead: ratio((p) => p.before, true),
    },
    target: 0.9,
  };
  const outDir = join(packageRoot(), 'bench', 'out');
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `verify-sparse-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
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
  process.stdout.write(
    `${lines.join('\n')}\n\nratios to the faster fio read (throughput, median of ${a.repeat}): ${JSON.stringify(result.ratios)}\n`,
  );
  process.stdout.write(`without start-up: ${JSON.stringify(result.ratiosWithoutStartup)}\n`);
  process.stdout.write(
    `load average before ${load[0].map((x) => x.toFixed(2)).join(' ')}, after ${load[1].map((x) => x.toFixed(2)).join(' ')}\nwrote ${file}\n`,
  );
}

await main();
