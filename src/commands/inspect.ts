// `spark inspect <snapshot>`: validates the index and every shard header (and each file's size
// against its header), then reports shards, tensor counts and the Engram tables.
import { Command } from 'commander';
import type { CliContext } from './context.js';
import { openSnapshot, type Snapshot, type TensorRef } from '../engram/snapshot.js';
import type { CommandResult } from '../terminal/io.js';
import { formatBytes, table } from '../terminal/format.js';
import { engramPatternFlags, patternsFromFlags, snapshotArgument, type PatternFlags } from './snapshot-args.js';

interface InspectFlags extends PatternFlags {
  json?: boolean;
  tensors?: boolean;
}

function tensorJson(t: TensorRef) {
  return { tensor: t.name, file: t.fileName, dtype: t.dtype, shape: t.shape, fileOffset: t.fileOffset };
}

export function inspectReport(snap: Snapshot, listTensors: boolean): CommandResult {
  const bytes = snap.shards.reduce((a, s) => a + s.bytes, 0);
  const json: Record<string, unknown> = {
    snapshot: snap.dir,
    kind: snap.kind,
    ...(snap.revision ? { revision: snap.revision } : {}),
    shards: snap.shards.map((s) => ({ file: s.fileName, bytes: s.bytes, tensors: s.tensors })),
    tensors: snap.tensors.size,
    bytes,
    engram: snap.engram.map((e) => ({
      layer: e.layer,
      rows: e.rows,
      dim: e.dim,
      rowBytes: e.rowBytes,
      weight: tensorJson(e.weight),
      scale: tensorJson(e.scale),
    })),
  };
  if (listTensors) {
    json.tensorList = [...snap.tensors.values()]
      .sort((a, b) => a.fileName.localeCompare(b.fileName) || a.fileOffset - b.fileOffset)
      .map((t) => ({ ...tensorJson(t), bytes: t.bytes }));
  }
  const lines = [
    `${snap.dir}: ${snap.shards.length} shard${snap.shards.length === 1 ? '' : 's'}, ${snap.tensors.size} tensors, ` +
      `${formatBytes(bytes)}${snap.revision ? `, revision ${snap.revision}` : ''}; every header valid and every size as its header implies`,
  ];
  if (snap.engram.length === 0) {
    lines.push('no Engram tables (expected layers.L.engram.embed.weight / .scale)');
  } else {
    lines.push('', 'Engram tables:');
    lines.push(
      table(
        ['layer', 'rows', 'dim', 'row bytes', 'table', 'weight @ offset', 'scale @ offset'],
        snap.engram.map((e) => [
          e.layer,
          e.rows,
          e.dim,
          e.rowBytes,
          formatBytes(e.weight.bytes + e.scale.bytes),
          `${e.weight.fileName} @ ${e.weight.fileOffset}`,
          `${e.scale.fileName} @ ${e.scale.fileOffset}`,
        ]),
      ),
    );
  }
  if (listTensors) {
    lines.push('', 'Tensors:');
    lines.push(
      table(
        ['tensor', 'dtype', 'shape', 'file', 'offset'],
        (json.tensorList as ReturnType<typeof tensorJson>[]).map((t) => [
          t.tensor,
          t.dtype,
          `[${t.shape.join(', ')}]`,
          t.file,
          t.fileOffset,
        ]),
      ),
    );
  }
  return { json, text: lines.join('\n'), exitCode: 0 };
}

export function inspectCommand(ctx: CliContext): Command {
  const cmd = new Command('inspect')
    .description('validate a snapshot (index, every shard header, file sizes) and report its Engram tables')
    .argument('[snapshot]', 'snapshot directory or .safetensors file (default: $SPARK_ENGRAM_DIR)')
    .option('--tensors', 'also list every tensor with its dtype, shape, file and offset')
    .option('--json', 'print one JSON document');
  engramPatternFlags(cmd)
    .addHelpText(
      'after',
      `
A missing or truncated shard, or any malformed header, is exit 2 naming the file.

Example:
  spark inspect ~/.cache/huggingface/hub/models--deepseek-ai--DeepSeek-V4.1-Flash/snapshots/<rev> --json`,
    )
    .action(async (snapshotArg: string | undefined, flags: InspectFlags) => {
      const dir = snapshotArgument(snapshotArg, ctx.io.env);
      const snap = await openSnapshot(dir, patternsFromFlags(flags));
      ctx.emit(inspectReport(snap, Boolean(flags.tensors)), Boolean(flags.json));
    });
  return cmd;
}
