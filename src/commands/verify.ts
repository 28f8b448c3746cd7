// spark verify: checks a node-local copy (a sparse copy, spark's or the overlay tool's, or a
// dense/page pack): the manifest, every checksum it has and, with --source, the rows (all with
// --full, else a sample) and the copied header and index bytes against the snapshot.
import { Command } from 'commander';
import { resolve } from 'node:path';
import type { CliContext } from './context.js';
import { usageError } from '../errors/errors.js';
import type { CommandResult, Io } from '../terminal/io.js';
import type { VerifyReport, VerifyRowsMode } from '../pack/verify-report.js';
import { formatBytes } from '../terminal/format.js';
import { fromEnv, parseCount } from './options.js';
import { progressLine, transferText } from './progress.js';
import { copyNoun } from '../stacks/registry.js';

export const DEFAULT_SAMPLE = 1000;
const MAX_VERIFY_THREADS = 64;

export interface VerifyFlags {
  source?: string;
  full?: boolean;
  sample?: string;
  threads?: string;
  json?: boolean;
}

export interface VerifyOptions {
  dir: string;
  source?: string;
  rows: VerifyRowsMode;
  sample: number;
  threads: number;
}

export function parseVerifyFlags(dir: string, f: VerifyFlags, io: Io): VerifyOptions {
  if (f.full && f.sample !== undefined)
    throw usageError('--full and --sample exclude each other: all rows, or a sample of them');
  if (f.sample !== undefined && f.source === undefined)
    throw usageError('--sample compares rows with the snapshot: give --source SNAPSHOT');
  if (f.full && f.source === undefined)
    throw usageError('--full compares every row with the snapshot: give --source SNAPSHOT');
  const threadsText = fromEnv(f.threads, io.env, 'SPARK_ENGRAM_THREADS');
  const o: VerifyOptions = {
    dir: resolve(io.cwd, dir),
    rows: f.source === undefined ? 'none' : f.full ? 'full' : 'sample',
    sample: f.sample === undefined ? DEFAULT_SAMPLE : parseCount(f.sample, '--sample', 1, 1 << 30),
    threads:
      threadsText === undefined ? 4 : Math.min(MAX_VERIFY_THREADS, parseCount(threadsText, '--threads', 1, 1024)),
  };
  if (f.source !== undefined) o.source = resolve(io.cwd, f.source);
  return o;
}

function reportText(r: VerifyReport): string {
  const lines: string[] = [];
  for (const l of r.layers) {
    const rows = l.rows ? `, ${l.rows.compared} rows compared` : '';
    const chunks = l.chunks.total > 0 ? `${l.chunks.checked}/${l.chunks.total} chunks` : 'no checksums';
    lines.push(`  layer ${l.layer}: ${l.file} rows ${l.start}-${l.end}: ${l.ok ? 'ok' : 'BAD'} (${chunks}${rows})`);
  }
  const rate = r.seconds > 0 ? `, ${formatBytes(r.bytesRead / r.seconds)}/s` : '';
  const tail = `${formatBytes(r.bytesRead)} read in ${r.seconds.toFixed(2)} s${rate}`;
  const what = copyNoun(r.kind, r.madeBy);
  const whose = r.rank !== undefined ? `rank ${r.rank} of ${r.world} in ${r.dir} (${what}; ` : `${what} in ${r.dir} (`;
  const checked = `  checked: ${r.checked.join('; ')}`;
  if (r.ok) return [`ok: ${whose}${tail})`, checked, ...lines].join('\n');
  return [`FAILED: ${whose}${tail})`, ...r.problems.map((p) => `  ${p}`), checked, ...lines].join('\n');
}

export async function runVerify(o: VerifyOptions, io: Io): Promise<CommandResult> {
  const { verifyPack } = await import('../stacks/verify.js');
  let source: Parameters<typeof verifyPack>[0]['source'];
  if (o.source !== undefined) {
    const { openSnapshot } = await import('../engram/snapshot.js');
    const snap = await openSnapshot(o.source, { engramOnly: true });
    source = { snapshotDir: snap.dir, tables: snap.engram, ...(snap.config ? { config: snap.config } : {}) };
  }
  const line = io.stderrIsTTY ? progressLine(io) : undefined;
  let report: VerifyReport;
  try {
    report = await verifyPack({
      dir: o.dir,
      rows: o.rows,
      sample: o.sample,
      threads: o.threads,
      ...(source ? { source } : {}),
      ...(line
        ? {
            onProgress: (p: { bytesDone: number; bytesTotal: number; seconds: number }) =>
              line.update(transferText('verify', p)),
          }
        : {}),
    });
  } finally {
    line?.done();
  }
  if (!report.ok) io.stderr(`spark verify: ${report.problems[0]}\n`);
  return { json: report, text: reportText(report), exitCode: report.ok ? 0 : 1 };
}

export function verifyCommand(ctx: CliContext): Command {
  return new Command('verify')
    .description(
      'check a node-local copy (sparse, dense or page): manifest, every checksum, and rows against the snapshot',
    )
    .argument(
      '<dir>',
      "the copy (holding engram-local.json or spark-pack.json, or the Mia stack's own engram-l*-r*of*.bin shards)",
    )
    .option('--source <snapshot>', 'the snapshot it was packed from: compare rows with it')
    .option('--full', 'with --source: compare every row')
    .option(
      '--sample <n>',
      `with --source: compare n random rows per layer plus the first and last (default ${DEFAULT_SAMPLE})`,
    )
    .option('--threads <n>', 'parallel readers (default SPARK_ENGRAM_THREADS, else 4)')
    .option('--json', 'print the report as JSON')
    .addHelpText(
      'after',
      `
Exit 1 when anything is wrong, naming the file, the layer and the first bad chunk or row. A
sparse copy is checked for holes inside its range (a hole reads as zeros: corruption), its
header and index bytes, and its chunk checksums when spark made it; a copy made by another
tool (the overlay's engram_local.py) has none, and the report says so: give --source to
compare its rows, header and index bytes with the snapshot. Data files that are links out of
the directory fail the check and are not read. A directory without a manifest is refused (an
interrupted pack) unless it holds the Mia stack's shards: then each header is checked against
its name, its size exact, identity.json against them, the split their ranges are (heads needs
--source), and with --source the rows; they carry no checksums, and the report says so. A
pack of format version 1 fails: the Mia stack's reader aborts on its files; re-pack it with
spark pack SNAPSHOT --out DIR --rank R --world W --layout dense --force. Where the snapshot the
copy was made from exists at its recorded path, each source shard's size, mtime, inode, ctime
and header CRC-32 are compared with what the manifest recorded (a shard rewritten in place
fails the check); --source --full compares every row instead.

Examples:
  spark verify /engram
  spark verify /engram --source /models/dsv41 --full`,
    )
    .action(async (dir: string, flags: VerifyFlags) => {
      ctx.emit(await runVerify(parseVerifyFlags(dir, flags, ctx.io), ctx.io), Boolean(flags.json));
    });
}
