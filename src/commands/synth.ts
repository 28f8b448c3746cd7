// `spark synth <dir>`: writes a DSV4.1-shaped synthetic snapshot (see src/synth/synth.ts).
import { Command } from 'commander';
import type { CliContext } from './context.js';
import {
  synthesize,
  SYNTH_DEFAULTS,
  validateSynthOptions,
  type SynthOptions,
  type SynthResult,
} from '../synth/synth.js';
import type { CommandResult, Io } from '../terminal/io.js';
import { parseCount, parseCountList } from './options.js';
import { formatBytes } from '../terminal/format.js';
import { progressLine, transferText } from './progress.js';
import { readdirSync } from 'node:fs';
import { usageError } from '../errors/errors.js';

interface SynthFlags {
  layers?: string;
  vocab?: string;
  heads?: string;
  maxNgram?: string;
  dim?: string;
  shards?: string;
  seed?: string;
  sparse?: boolean;
  json?: boolean;
}

export function parseSynthFlags(dir: string, f: SynthFlags): SynthOptions {
  const d = SYNTH_DEFAULTS;
  return {
    dir,
    layers: f.layers === undefined ? d.layers : parseCountList(f.layers, '--layers', 0, 100_000),
    vocab: f.vocab === undefined ? d.vocab : parseCount(f.vocab, '--vocab', 1, 2 ** 40),
    heads: f.heads === undefined ? d.heads : parseCount(f.heads, '--heads', 1, 1024),
    maxNgram: f.maxNgram === undefined ? d.maxNgram : parseCount(f.maxNgram, '--max-ngram', 2, 64),
    dim: f.dim === undefined ? d.dim : parseCount(f.dim, '--dim', 32, 65536),
    shards: f.shards === undefined ? d.shards : parseCount(f.shards, '--shards', 1, 100_000),
    seed: f.seed === undefined ? d.seed : parseCount(f.seed, '--seed', 0, 0xffffffff),
    sparse: Boolean(f.sparse),
  };
}

/** synth writes a new snapshot: it never replaces files in a directory that has any. */
function refuseOccupied(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    if (code === 'ENOTDIR')
      throw usageError(`${dir} exists and is not a directory; pick a new directory for the snapshot`, { path: dir });
    throw err;
  }
  if (names.length > 0) {
    throw usageError(
      `${dir} is not empty (${names.length} entr${names.length === 1 ? 'y' : 'ies'}, e.g. ${names.sort()[0]}); ` +
        'synth writes a new snapshot: remove the directory or pick another',
      { path: dir },
    );
  }
}

export function runSynth(options: SynthOptions, io?: Io): CommandResult {
  validateSynthOptions(options);
  refuseOccupied(options.dir);
  // A full-size snapshot takes a while: a progress line on a terminal.
  const line = io?.stderrIsTTY ? progressLine(io) : undefined;
  let result: SynthResult;
  try {
    let shownAt = -Infinity;
    result = synthesize(
      options,
      line
        ? (p) => {
            if (p.bytesDone < p.bytesTotal && p.seconds - shownAt < 0.1) return; // ten updates a second at most
            shownAt = p.seconds;
            line.update(transferText('synth', p));
          }
        : undefined,
    );
  } finally {
    line?.done();
  }
  const lines = [
    `wrote ${result.files.length} shards, ${formatBytes(result.bytes)}${options.sparse ? ' (sparse)' : ''} to ${result.dir} in ${result.seconds.toFixed(2)} s`,
    ...result.layers.map((l) => `  layer ${l.layer}: ${l.rows} rows x ${l.dim}`),
  ];
  return { json: result, text: lines.join('\n'), exitCode: 0 };
}

export function synthCommand(ctx: CliContext): Command {
  return new Command('synth')
    .description('write a small DeepSeek-V4.1-shaped snapshot with checkable Engram rows')
    .argument('<dir>', 'directory to write: new or empty (created if missing)')
    .option('--layers <list>', 'Engram layer ids', '1,14')
    .option('--vocab <n>', 'engram_vocab_size: sub-table primes start above it', String(SYNTH_DEFAULTS.vocab))
    .option('--heads <n>', 'engram_n_heads', String(SYNTH_DEFAULTS.heads))
    .option('--max-ngram <n>', 'engram_max_ngram_size (orders 2..n)', String(SYNTH_DEFAULTS.maxNgram))
    .option('--dim <n>', 'engram_head_dim: weight bytes per row (multiple of 32)', String(SYNTH_DEFAULTS.dim))
    .option('--shards <k>', 'number of shards; the Engram layers take the last ones', String(SYNTH_DEFAULTS.shards))
    .option('--seed <s>', 'varies every row byte (recorded in config.json)', String(SYNTH_DEFAULTS.seed))
    .option(
      '--sparse',
      'full-size sparse files: only probe windows around table ends, rank and head boundaries hold data',
    )
    .option('--json', 'print a JSON summary')
    .addHelpText(
      'after',
      `
Row bytes are a documented function of (layer, row, seed): see docs/synth.md.

Examples:
  spark synth /tmp/snap                                   # ~14 MB, 3 shards
  spark synth /tmp/big --vocab 200000 --shards 48          # ~2.5 GB
  spark synth /tmp/full --vocab 16000000 --shards 48 --sparse   # real row counts, sparse`,
    )
    .action((dir: string, flags: SynthFlags) => {
      ctx.emit(runSynth(parseSynthFlags(dir, flags), ctx.io), Boolean(flags.json));
    });
}
