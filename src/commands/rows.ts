// `spark rows <snapshot|copy> --layer L --ids I[,I…]`: reads rows through the row store (from a
// snapshot, a sparse copy or a dense/page pack) and prints their bytes (with --dequant, values).
import { Command } from 'commander';
import type { CliContext } from './context.js';
import { dequantRow, dequantRowText } from '../engram/dequant.js';
import { type RowSourceKind, type SnapshotOpener } from '../stacks/row-source.js';
import { openRowSource } from '../stacks/local-copy.js';
import { usageError } from '../errors/errors.js';
import type { CommandResult, Io } from '../terminal/io.js';
import { threadsFromEnv } from '../addon/row-store.js';
import { fromEnv, parseCount, parseCountList } from './options.js';

/**
 * Ids one call may ask for: 65,536 rows (the serving overlay's own cap per gather, 17 MB of
 * rows), and with --dequant 4,096 (a million values: ~1.5 s and ~180 MB to print, where 65,000
 * took 10-28 s and up to 1.4 GB). Ask in several calls for more.
 */
export const ROWS_MAX_IDS = 65_536;
export const ROWS_MAX_DEQUANT_IDS = 4_096;

export interface RowsOptions {
  source: string;
  layer: number;
  ids: number[];
  dequant: boolean;
  threads?: number;
  direct?: boolean;
  openSnapshot?: SnapshotOpener;
}

export interface RowsReply {
  layer: number;
  /** What was read: a snapshot, a sparse copy (engram-local.json) or a dense/page pack. */
  source: RowSourceKind;
  rows: { id: number; weight: string; scale: string; values?: number[] }[];
}

export async function runRows(o: RowsOptions, io: Io): Promise<CommandResult> {
  const threads = Math.min(o.threads ?? threadsFromEnv(io.env), Math.max(1, o.ids.length));
  const src = await openRowSource(o.source, {
    layers: [o.layer],
    threads,
    direct: o.direct,
    openSnapshot: o.openSnapshot,
  });
  try {
    const table = src.tables[0];
    const out = await src.store.gather(o.layer, o.ids);
    const reply: RowsReply = { layer: o.layer, source: src.kind, rows: [] };
    const held = src.kind === 'snapshot' ? '' : `, this copy holds [${table.start}, ${table.end})`;
    const valueText: string[] = [];
    const lines = [
      `layer ${o.layer} (${src.kind}, ${table.rows} rows of ${table.dim} + ${table.dim / 32} bytes${held}):`,
    ];
    o.ids.forEach((id, i) => {
      const row = out.subarray(i * table.rowBytes, (i + 1) * table.rowBytes);
      const entry: RowsReply['rows'][number] = {
        id,
        weight: row.subarray(0, table.dim).toString('hex'),
        scale: row.subarray(table.dim).toString('hex'),
      };
      lines.push(`row ${id}`, `  weight ${entry.weight}`, `  scale  ${entry.scale}`);
      if (o.dequant) {
        entry.values = dequantRow(row, table.dim);
        lines.push(`  values ${dequantRowText(row, table.dim, valueText)}`);
      }
      reply.rows.push(entry);
    });
    return { json: reply, text: lines.join('\n'), exitCode: 0 };
  } finally {
    await src.close();
  }
}

interface RowsFlags {
  layer?: string;
  ids?: string;
  dequant?: boolean;
  threads?: string;
  direct?: boolean;
  json?: boolean;
}

export function parseRowsFlags(source: string | undefined, f: RowsFlags, env: NodeJS.ProcessEnv): RowsOptions {
  const src = fromEnv(source, env, 'SPARK_ENGRAM_DIR');
  if (src === undefined) throw usageError('give a snapshot or packed directory (or set SPARK_ENGRAM_DIR)');
  if (f.layer === undefined) throw usageError('--layer is required, e.g. --layer 1');
  if (f.ids === undefined) throw usageError('--ids is required, e.g. --ids 0,17,384006167');
  const ids = parseCountList(f.ids, '--ids');
  const max = f.dequant ? ROWS_MAX_DEQUANT_IDS : ROWS_MAX_IDS;
  if (ids.length > max) {
    throw usageError(
      `--ids: ${ids.length} ids, more than the ${max} one call reads${f.dequant ? ` with --dequant (${ROWS_MAX_IDS} without)` : ''}; ask for them in several calls`,
    );
  }
  return {
    source: src,
    layer: parseCount(f.layer, '--layer', 0, 0xffffffff),
    ids,
    dequant: Boolean(f.dequant),
    threads: f.threads === undefined ? undefined : parseCount(f.threads, '--threads', 1, 1024),
    direct: Boolean(f.direct),
  };
}

export function rowsCommand(ctx: CliContext): Command {
  return new Command('rows')
    .description('read Engram rows at given ids through the row store')
    .argument('[source]', 'snapshot (dir or .safetensors), sparse copy or packed directory; default $SPARK_ENGRAM_DIR')
    .option('--layer <L>', 'Engram layer id')
    .option('--ids <list>', 'comma-separated global row ids')
    .option('--dequant', 'also print the D decoded values (F8_E4M3 x 2^(e-127) per 32 columns)')
    .option('--threads <n>', 'reader threads (default $SPARK_ENGRAM_THREADS, else 64; capped at the id count)')
    .option('--direct', 'packed directories: O_DIRECT reads (falls back when the filesystem refuses)')
    .option('--json', 'print {layer, rows: [{id, weight, scale, values?}]}')
    .addHelpText(
      'after',
      `
At most ${ROWS_MAX_IDS} ids a call, ${ROWS_MAX_DEQUANT_IDS} with --dequant (exit 2 beyond). An id outside the table (or outside a sparse copy's or pack's range) is exit 2 naming the id and
the range: a copy never answers for rows it does not hold. A directory whose tables have holes
and no engram-local.json (a sparse copy that lost its manifest) is refused, not read as zeros.

Examples:
  spark rows /models/dsv41 --layer 1 --ids 0,96001542,384006167 --json
  spark rows /nvme/engram-pack --layer 14 --ids 100 --dequant`,
    )
    .action(async (source: string | undefined, flags: RowsFlags) => {
      ctx.emit(await runRows(parseRowsFlags(source, flags, ctx.io.env), ctx.io), Boolean(flags.json));
    });
}
