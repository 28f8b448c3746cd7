// Pack and verify throughput against plain sequential I/O of the same bytes on the same disk,
// in the same run, cold page cache before every timed command (root: drop_caches).
//
//   node dist/bench/pack.js [--dir /var/tmp/spark-pack-bench] [--vocab 200000] [--rounds 3]
//
// Cases per round, alternating so drift on a shared machine hits all alike:
//   copy        dd of each layer's weight and scale ranges into one file, conv=fsync
//   direct copy dd with O_DIRECT reads and writes of the same ranges (rounded out to 4 KiB) to
//               the same offsets of files of the shards' names and sizes: the sparse layout's
//               bytes, copied the plainest fast way
//   pack sparse spark pack --layout sparse (the default): fsyncs, checksums, journal
//   pack dense  spark pack (fsyncs its files too), both layers
//   pack page   the same with --layout page
//   read pack   dd of the dense pack's data files to /dev/null (and fio, 4 streams, where installed)
//   verify      spark verify (every chunk checksum) of the dense pack
//   read both   dd of the dense pack and of the source ranges to /dev/null
//   verify full spark verify --source --full (reads the pack and the source)
// Every pack is also checked byte for byte (verify --full exit 0). Writes bench/out/pack-*.json.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { machineInfo } from './lib/processes.js';
import { openSnapshot } from '../src/engram/snapshot.js';
import { packageRoot } from '../src/native/index.js';
import { crc32Implementation } from '../src/native/pack.js';
import { checkSparseCopy } from '../test/helpers/sparse-check.js';

interface Args {
  dir: string;
  vocab: number;
  rounds: number;
  threads: number;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { dir: '/var/tmp/spark-pack-bench', vocab: 200_000, rounds: 3, threads: 4 };
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (k === '--dir') a.dir = v;
    else if (k === '--vocab') a.vocab = Number(v);
    else if (k === '--rounds') a.rounds = Number(v);
    else if (k === '--threads') a.threads = Number(v);
    else throw new Error(`unknown argument ${k}`);
  }
  return a;
}

const bin = join(packageRoot(), 'dist', 'src', 'bin.js');
const spark = (...args: string[]): string[] => [process.execPath, bin, ...args];

function dropCaches(): boolean {
  try {
    execFileSync('sync');
    writeFileSync('/proc/sys/vm/drop_caches', '3');
    return true;
  } catch {
    return false;
  }
}

function run(argv: string[]): { ms: number; stdout: string } {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 28 });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr.toString().slice(0, 500)}`);
  return { ms, stdout: r.stdout.toString() };
}

/** dd with O_DIRECT of [offset, offset + bytes) of `file`, rounded out to 4 KiB, to the same offset of `out`. */
function ddDirect(file: string, offset: number, bytes: number, out: string): string[] {
  const lo = Math.floor(offset / 4096) * 4096;
  const hi = Math.ceil((offset + bytes) / 4096) * 4096;
  return ['dd', `if=${file}`, `of=${out}`, 'bs=8M', 'iflag=direct,skip_bytes,count_bytes', 'oflag=direct,seek_bytes', `skip=${lo}`, `seek=${lo}`, `count=${hi - lo}`, 'conv=notrunc,fsync', 'status=none'];
}

/** dd of [offset, offset + bytes) of `file`, appended to `out` (or to /dev/null). */
function dd(file: string, offset: number, bytes: number, out: string, fsync: boolean): string[] {
  const args = ['dd', `if=${file}`, `of=${out}`, 'bs=8M', 'iflag=skip_bytes,count_bytes', `skip=${offset}`, `count=${bytes}`, 'status=none'];
  if (out !== '/dev/null') args.push('oflag=append', `conv=notrunc${fsync ? ',fsync' : ''}`);
  return args;
}

function sh(commands: string[][]): string[] {
  const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
  return ['sh', '-c', commands.map((c) => c.map(quote).join(' ')).join(' && ')];
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  mkdirSync(a.dir, { recursive: true });
  const snap = join(a.dir, 'snap');
  const marker = join(snap, `.bench-vocab-${a.vocab}`);
  if (!existsSync(marker)) {
    rmSync(snap, { recursive: true, force: true });
    run(spark('synth', snap, '--vocab', String(a.vocab), '--shards', '48'));
    writeFileSync(marker, '');
  }
  const s = await openSnapshot(snap, { engramOnly: true });
  const tables = s.engram;
  const bytes = tables.reduce((sum, t) => sum + t.rows * t.rowBytes, 0);
  const snapshotBytes = s.shards.reduce((sum, f) => sum + f.bytes, 0);
  const copy = join(a.dir, 'copy.bin');
  const direct = join(a.dir, 'copy-direct');
  const sparse = join(a.dir, 'pack-sparse');
  const dense = join(a.dir, 'pack-dense');
  const page = join(a.dir, 'pack-page');
  const copyCmd = sh(tables.flatMap((t) => [dd(t.weight.file, t.weight.fileOffset, t.rows * t.dim, copy, false), dd(t.scale.file, t.scale.fileOffset, t.rows * (t.dim / 32), copy, true)]));
  // The same bytes as the sparse copy, at the same offsets of files of the same names and sizes.
  const shards = [...new Map(tables.map((t) => [t.weight.fileName, t.weight.file])).entries()];
  const directCmd = sh([
    ['mkdir', '-p', direct],
    ...shards.map(([name, file]) => ['truncate', '-s', String(statSync(file).size), join(direct, name)]),
    ...tables.flatMap((t) => [
      ddDirect(t.weight.file, t.weight.fileOffset, t.rows * t.dim, join(direct, t.weight.fileName)),
      ddDirect(t.scale.file, t.scale.fileOffset, t.rows * (t.dim / 32), join(direct, t.scale.fileName)),
    ]),
  ]);
  const packCmd = (out: string, layout: string): string[] =>
    spark('pack', snap, '--out', out, '--rank', '0', '--world', '1', '--layout', layout, '--threads', String(a.threads), '--json');
  const denseFiles = (): string[] => tables.map((t) => join(dense, `engram-l${t.layer}-r0of1.bin`));
  const readPack = (): string[] => sh(denseFiles().map((f) => dd(f, 0, statSync(f).size, '/dev/null', false)));
  const readBoth = (): string[] =>
    sh([...denseFiles().map((f) => dd(f, 0, statSync(f).size, '/dev/null', false)), ...tables.map((t) => dd(t.weight.file, t.weight.fileOffset, t.rows * t.rowBytes, '/dev/null', false))]);
  // fio, where installed: 4 parallel sequential streams per file, what the disk gives readers
  // that do not depend on one stream's readahead. A reference beside dd, not the bar.
  const haveFio = spawnSync('fio', ['--version']).status === 0;
  const fioRead = (): string[] =>
    sh(
      denseFiles().map((f) => {
        const quarter = Math.ceil(statSync(f).size / 4 / 4096) * 4096;
        return ['fio', '--name=read', `--filename=${f}`, '--readonly', '--rw=read', '--bs=8m', '--numjobs=4', `--size=${quarter}`, `--offset_increment=${quarter}`, '--group_reporting', '--output=/dev/null'];
      }),
    );
  const cases: { name: string; bytes: () => number; argv: () => string[]; before?: () => void }[] = [
    { name: 'copy (dd, conv=fsync)', bytes: () => bytes, argv: () => copyCmd, before: () => rmSync(copy, { force: true }) },
    { name: 'direct copy (dd O_DIRECT, same offsets)', bytes: () => bytes, argv: () => directCmd, before: () => rmSync(direct, { recursive: true, force: true }) },
    { name: 'spark pack --layout sparse', bytes: () => bytes, argv: () => packCmd(sparse, 'sparse'), before: () => rmSync(sparse, { recursive: true, force: true }) },
    { name: 'spark pack --layout dense', bytes: () => bytes, argv: () => packCmd(dense, 'dense'), before: () => rmSync(dense, { recursive: true, force: true }) },
    { name: 'spark pack --layout page', bytes: () => bytes, argv: () => packCmd(page, 'page'), before: () => rmSync(page, { recursive: true, force: true }) },
    { name: 'read pack (dd to /dev/null)', bytes: () => denseFiles().reduce((n, f) => n + statSync(f).size, 0), argv: readPack },
    ...(haveFio ? [{ name: 'read pack (fio, 4 streams)', bytes: () => denseFiles().reduce((n, f) => n + statSync(f).size, 0), argv: fioRead }] : []),
    { name: 'spark verify (checksums)', bytes: () => denseFiles().reduce((n, f) => n + statSync(f).size, 0), argv: () => spark('verify', dense, '--threads', String(a.threads), '--json') },
    { name: 'read pack + source (dd)', bytes: () => 2 * bytes, argv: readBoth },
    { name: 'spark verify --source --full', bytes: () => 2 * bytes, argv: () => spark('verify', dense, '--source', snap, '--full', '--threads', String(a.threads), '--json') },
  ];
  const times = cases.map(() => [] as number[]);
  // The commands' own time (JSON "seconds"): without node's start-up, which is a constant
  // ~0.2-0.4 s on this machine, not a cost per byte.
  const inner = cases.map(() => [] as number[]);
  let cold = true;
  for (let r = 0; r < a.rounds; r++) {
    cases.forEach((c, i) => {
      c.before?.();
      cold = dropCaches() && cold;
      const res = run(c.argv());
      times[i].push(res.ms);
      if (c.argv()[0] === process.execPath) inner[i].push(1000 * (JSON.parse(res.stdout) as { seconds: number }).seconds);
      process.stderr.write(`round ${r + 1}: ${c.name}: ${times[i][times[i].length - 1].toFixed(0)} ms\n`);
    });
  }
  // Byte-exact check of both one-read layouts against the source (spark verify), and of the
  // sparse copy through the overlay's view with every chunk checksum recomputed (it throws).
  const exact = [dense, page].map((dir) => JSON.parse(run(spark('verify', dir, '--source', snap, '--full', '--json')).stdout) as { ok: boolean });
  const sparseChecked = checkSparseCopy(sparse, snap);
  const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[xs.length >> 1];
  const rows = cases.map((c, i) => ({
    name: c.name,
    bytes: c.bytes(),
    medianMs: median(times[i]),
    mbPerSec: c.bytes() / 1e6 / (median(times[i]) / 1000),
    allMs: times[i],
    ...(inner[i].length > 0 ? { innerMedianMs: median(inner[i]), innerMbPerSec: c.bytes() / 1e6 / (median(inner[i]) / 1000) } : {}),
  }));
  const at = (name: string): number => cases.findIndex((c) => c.name.startsWith(name));
  const ratio = (num: string, den: string): number => median(times[at(num)].map((t, r) => times[at(den)][r] / t));
  const innerRatio = (num: string, den: string): number => median(inner[at(num)].map((t, r) => times[at(den)][r] / t));
  const result = {
    machine: { ...machineInfo(), crc32: crc32Implementation() },
    cold,
    snapshot: { dir: snap, bytes: snapshotBytes, vocab: a.vocab, layers: tables.map((t) => ({ layer: t.layer, rows: t.rows })) },
    packBytes: bytes,
    threads: a.threads,
    rounds: a.rounds,
    cases: rows,
    ratios: {
      packSparseVsDirectCopy: ratio('spark pack --layout sparse', 'direct copy'),
      packDenseVsCopy: ratio('spark pack --layout dense', 'copy'),
      packPageVsCopy: ratio('spark pack --layout page', 'copy'),
      verifyVsRead: ratio('spark verify (checksums)', 'read pack (dd'),
      verifyFullVsRead: ratio('spark verify --source', 'read pack + source'),
      ...(haveFio ? { verifyVsFio: ratio('spark verify (checksums)', 'read pack (fio') } : {}),
    },
    ratiosWithoutStartup: {
      packSparseVsDirectCopy: innerRatio('spark pack --layout sparse', 'direct copy'),
      packDenseVsCopy: innerRatio('spark pack --layout dense', 'copy'),
      packPageVsCopy: innerRatio('spark pack --layout page', 'copy'),
      verifyVsRead: innerRatio('spark verify (checksums)', 'read pack (dd'),
      verifyFullVsRead: innerRatio('spark verify --source', 'read pack + source'),
      ...(haveFio ? { verifyVsFio: innerRatio('spark verify (checksums)', 'read pack (fio') } : {}),
    },
    byteExact: { dense: exact[0].ok, page: exact[1].ok, sparse: sparseChecked.rows > 0 },
  };
  const outDir = join(packageRoot(), 'bench', 'out');
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `pack-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  const lines = ['| case | bytes | median s | MB/s | without start-up: s, MB/s |', '|---|---|---|---|---|'];
  for (const r of rows) {
    const own = r.innerMedianMs !== undefined ? `${(r.innerMedianMs / 1000).toFixed(2)}, ${r.innerMbPerSec!.toFixed(0)}` : '';
    lines.push(`| ${r.name} | ${r.bytes} | ${(r.medianMs / 1000).toFixed(2)} | ${r.mbPerSec.toFixed(0)} | ${own} |`);
  }
  process.stdout.write(`${lines.join('\n')}\n\nratios (throughput, median of per-round ratios): ${JSON.stringify(result.ratios)}\n`);
  process.stdout.write(`without node start-up: ${JSON.stringify(result.ratiosWithoutStartup)}\n`);
  process.stdout.write(`byte-exact (verify --source --full): ${JSON.stringify(result.byteExact)}; cold cache: ${cold}\nwrote ${file}\n`);
}

await main();
