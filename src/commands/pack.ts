// spark pack: copies this rank's Engram rows from the snapshot to a node-local directory: the
// overlay's sparse copy (the default), the Mia stack's packed shards (dense) or spark's page
// layout (docs/packed-format.md),
// resumably; a no-op when the directory already holds it.
import { Command } from 'commander';
import { join, resolve } from 'node:path';
import type { CliContext } from './context.js';
import { usageError } from '../errors/errors.js';
import type { CommandResult, Io } from '../terminal/io.js';
import type { PackProgressInfo, PackSummary } from '../stacks/pack-engram.js';
import { DEFAULT_LAYOUT, LAYOUTS, parseLayout } from '../stacks/registry.js';
import { parseSplit } from '../engram/ranges.js';
import { formatBytes } from '../terminal/format.js';
import { fromEnv, parseCount, parseRate, rankShareFlags, requireOption } from './options.js';
import { progressLine, progressLog, transferText, type ProgressLine } from './progress.js';
import { engramPatternFlags, patternsFromFlags, snapshotArgument } from './snapshot-args.js';
import { reportInterrupt } from './interrupt.js';
import { shJoin } from '../remote/shell.js';

/** Pack workers each hold ~2 chunks (~33 MiB): more than this buys no bandwidth. */
export const MAX_PACK_THREADS = 16;

export interface PackFlags {
  weightPattern?: string;
  scalePattern?: string;
  out?: string;
  rank?: string;
  world?: string;
  split?: string;
  threads?: string;
  layout?: string;
  chunkRows?: string;
  syncEvery?: string;
  rateLimit?: string;
  dropCache?: boolean;
  progress?: string;
  spaceCheck?: boolean;
  force?: boolean;
  json?: boolean;
}

export interface PackOptions {
  snapshot: string;
  out: string;
  rank: number;
  world: number;
  split: 'floor' | 'front' | 'heads';
  threads: number;
  /** A layout's name (stacks/registry.ts). */
  layout: string;
  chunkRows?: number;
  syncBytes?: number;
  /** Bytes per second read from the snapshot, at most. */
  rateLimit?: number;
  dropSourceCache: boolean;
  checkSpace: boolean;
  force: boolean;
  weightPattern?: RegExp;
  scalePattern?: RegExp;
  /** Plain progress lines every this many seconds even without a terminal (logs, fan-out). */
  progressSeconds?: number;
}

export function parsePackFlags(snapshot: string | undefined, f: PackFlags, io: Io): PackOptions {
  const snap = snapshotArgument(snapshot, io.env);
  if (f.out === undefined) throw usageError('--out DIR is required: the node-local directory to write the pack to');
  if (f.out.trim() === '') throw usageError('--out is empty: name the node-local directory to write the pack to');
  const world = parseCount(requireOption(f.world, io.env, '--world', 'SPARK_WORLD_SIZE'), '--world', 1, 1 << 20);
  const rank = parseCount(requireOption(f.rank, io.env, '--rank', 'NODE_RANK'), '--rank', 0);
  if (rank >= world) throw usageError(`rank ${rank} is outside the world of ${world} ranks (ranks are 0-${world - 1})`);
  const split = parseSplit(f.split, '--split');
  const layout = parseLayout(f.layout ?? DEFAULT_LAYOUT).name;
  const threadsText = fromEnv(f.threads, io.env, 'SPARK_ENGRAM_THREADS');
  const threads =
    threadsText === undefined ? 4 : Math.min(MAX_PACK_THREADS, parseCount(threadsText, '--threads', 1, 1024));
  const o: PackOptions = {
    snapshot: resolve(io.cwd, snap),
    out: resolve(io.cwd, f.out),
    rank,
    world,
    split,
    threads,
    layout,
    checkSpace: f.spaceCheck !== false,
    dropSourceCache: f.dropCache !== false,
    force: Boolean(f.force),
  };
  if (f.chunkRows !== undefined) o.chunkRows = parseCount(f.chunkRows, '--chunk-rows', 1, 1 << 24);
  if (f.syncEvery !== undefined) o.syncBytes = parseCount(f.syncEvery, '--sync-every', 1, 1 << 20) * 2 ** 20;
  if (f.rateLimit !== undefined) o.rateLimit = parseRate(f.rateLimit);
  if (f.progress !== undefined) o.progressSeconds = parseCount(f.progress, '--progress', 1, 86_400);
  return { ...o, ...patternsFromFlags(f) };
}

function summaryText(s: PackSummary): string {
  const head = `rank ${s.rank} of ${s.world} (${s.split} split, ${s.layout} layout) in ${s.out}`;
  if (s.noop) return `already complete: ${head} holds this pack; nothing to do`;
  const rate = s.seconds > 0 ? ` (${formatBytes(s.bytesWritten / s.seconds)}/s)` : '';
  const apparent = s.apparentBytes !== undefined ? ` (apparent size ${formatBytes(s.apparentBytes)})` : '';
  const lines = [
    `packed ${head}: ${s.layers.length} layers, ${formatBytes(s.bytes)}${apparent} in ${s.seconds.toFixed(2)} s${rate}`,
  ];
  for (const l of s.layers)
    lines.push(
      `  layer ${l.layer}: rows ${l.start}:${l.end} -> ${l.file} (${formatBytes(l.bytes)}, ${l.chunks} chunk${l.chunks === 1 ? '' : 's'})`,
    );
  for (const f of s.files) {
    const kept = f.chunksKept > 0 ? `${f.chunksKept} chunks kept from an interrupted run` : '';
    const redo = f.chunksRejected > 0 ? `${f.chunksRejected} failed their re-check and were copied again` : '';
    const fresh = f.journalDiscarded ? 'an interrupted run with other inputs was discarded' : '';
    const notes = [kept, redo, fresh].filter((x) => x !== '');
    if (notes.length > 0) lines.push(`  ${f.file}: ${notes.join('; ')}`);
  }
  if (s.io.write !== 'none') {
    const how = (m: string): string =>
      m === 'direct' ? 'O_DIRECT' : 'buffered, pages dropped behind (the filesystem refused O_DIRECT)';
    lines.push(`  read ${how(s.io.read)}; written ${how(s.io.write)}`);
  }
  if (s.removed.length > 0) lines.push(`  removed the replaced pack's ${s.removed.length} file(s)`);
  lines.push(`check it: ${shJoin(['spark', 'verify', s.out])}`);
  return lines.join('\n');
}

function progressText(p: PackProgressInfo): string {
  return transferText(`pack ${p.unit} (${p.unitIndex + 1}/${p.unitCount}) ${p.phase}`, { ...p, moved: p.bytesCopied });
}

export async function runPack(o: PackOptions, io: Io): Promise<CommandResult> {
  const { openSnapshot, INDEX_FILE } = await import('../engram/snapshot.js');
  const { packRanges } = await import('../pack/pack-ranges.js');
  const { packEngram } = await import('../stacks/pack-engram.js');
  const snapshot = await openSnapshot(o.snapshot, {
    engramOnly: true,
    ...(o.weightPattern ? { weightPattern: o.weightPattern } : {}),
    ...(o.scalePattern ? { scalePattern: o.scalePattern } : {}),
  });
  const ranges = packRanges(snapshot.engram, snapshot.config, o.rank, o.world, o.split);
  const line: ProgressLine | undefined = io.stderrIsTTY
    ? progressLine(io)
    : o.progressSeconds !== undefined
      ? progressLog(io, o.progressSeconds)
      : undefined;
  let summary: PackSummary;
  try {
    summary = await packEngram({
      snapshotDir: snapshot.dir,
      ...(snapshot.revision ? { revision: snapshot.revision } : {}),
      ...(snapshot.kind === 'index' ? { index: join(snapshot.dir, INDEX_FILE) } : {}),
      tables: snapshot.engram,
      out: o.out,
      rank: o.rank,
      world: o.world,
      split: o.split,
      ranges,
      layout: o.layout,
      threads: o.threads,
      ...(o.chunkRows !== undefined ? { chunkRows: o.chunkRows } : {}),
      ...(o.syncBytes !== undefined ? { syncBytes: o.syncBytes } : {}),
      checkSpace: o.checkSpace,
      force: o.force,
      dropSourceCache: o.dropSourceCache,
      ...(o.rateLimit !== undefined ? { rateLimit: o.rateLimit } : {}),
      ...(line ? { onProgress: (p: PackProgressInfo) => line.update(progressText(p)) } : {}),
    });
  } finally {
    line?.done();
  }
  return { json: summary, text: summaryText(summary), exitCode: 0 };
}

export function packCommand(ctx: CliContext): Command {
  const head = new Command('pack')
    .description(
      "copy this rank's Engram rows to a node-local directory (the overlay's sparse copy, the Mia stack's packed shards, or spark's page layout)",
    )
    .argument('[snapshot]', 'snapshot directory or .safetensors file (default SPARK_ENGRAM_DIR)')
    .option('--out <dir>', 'node-local directory to write (created if missing)');
  const cmd = rankShareFlags(head)
    .option('--layout <l>', LAYOUTS.map((l) => `${l.name} (${l.summary})`).join(', '))
    .option(
      '--threads <n>',
      `copy workers (default SPARK_ENGRAM_THREADS, else 4; at most ${MAX_PACK_THREADS} are used)`,
    )
    .option('--chunk-rows <n>', 'rows per checksum chunk (default ~16 MiB of rows)')
    .option(
      '--sync-every <MiB>',
      'make progress durable every this many MiB (default 1024) or 2 s; lost work on a crash is at most that',
    )
    .option(
      '--rate-limit <MB/s>',
      'read at most this many MB (10^6 bytes) per second from the snapshot (several nodes packing from one NAS)',
    )
    .option(
      '--no-drop-cache',
      "keep the snapshot's pages in the page cache (by default they are dropped behind the copy: page cache is GPU memory)",
    )
    .option(
      '--progress <seconds>',
      'without a terminal, print a progress line every this many seconds (logs, spark fanout)',
    )
    .option('--no-space-check', 'skip the free-space check (for filesystems that misreport free space)')
    .option(
      '--force',
      'replace a complete pack in --out that differs from this one (its files are removed once the new manifest is written)',
    )
    .option('--json', 'print a JSON summary (bytes, seconds, layers)')
    .addHelpText(
      'after',
      `
Layouts, and who reads each (docs/packed-format.md):
  sparse  Aiden's overlay (SPARK_ENGRAM_DIR): the index, and the shards holding the Engram
          tables under their own names and sizes, this rank's rows at their original offsets,
          holes elsewhere (~47 GiB allocated per rank of 4); needs a filesystem that keeps
          holes (ext4, xfs, btrfs).
  dense   the Mia stack (DSV41_PACKED_DIR): its packed shards engram-l{L}-r{R}of{W}.bin byte
          for byte (4096-byte binary header, rows weight+scale back to back), which its reader
          attaches at boot; the floor split unless --split heads (its vLLM lane). spark's
          rows, verify, bench and wrapper read them too.
  page    spark's own row store and Python reader: spark-page-l{L}-r{R}of{W}.rows, one
          aligned 4 KiB read per row; names no serving stack opens.
Metadata and checksums go in spark-pack.json (dense, page), written last.
Interrupted (Ctrl-C, killed, disk full, I/O error)? Run the same command again: finished
chunks are re-checked and kept; Ctrl-C says so and ends with status 130 (128 + SIGINT). Re-running on a complete directory is a no-op. Check with spark verify.
--out may not be the snapshot or inside it. spark never writes through a link in --out.
Exit codes: 0 ok, 2 bad usage or snapshot, 3 disk full, I/O error, a link in --out, a
filesystem without holes, or the snapshot changed.

Examples:
  spark pack /models/dsv41 --out /engram --rank 0 --world 4
  spark pack /mnt/nas/dsv41 --out /engram --rank 1 --world 4 --rate-limit 600
  spark pack /models/dsv41 --out /engram --rank 2 --world 4 --layout dense   # DSV41_PACKED_DIR=/engram
  NODE_RANK=2 SPARK_WORLD_SIZE=4 spark pack /models/dsv41 --out /engram-page --layout page`,
    )
    .action(async (snapshot: string | undefined, flags: PackFlags) => {
      const options = parsePackFlags(snapshot, flags, ctx.io);
      const again = `interrupted; the chunks written so far are kept: run the same spark pack command again to resume (into ${options.out})`;
      const stop = reportInterrupt(ctx.io, Boolean(flags.json), 'pack', again);
      try {
        ctx.emit(await runPack(options, ctx.io), Boolean(flags.json));
      } finally {
        stop();
      }
    });
  return engramPatternFlags(cmd);
}
