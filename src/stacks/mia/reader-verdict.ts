// What the Mia stack's serving reader would make of a directory, for verify and preflight.
//
//   packDirVerdict(dir, expect?) -> Promise<PackDirVerdict>
//
//   dir      a pack directory (a path on this machine).
//   expect   optional, what the serving rank expects of each layer, when the caller knows it:
//              rows    N of each layer's table (the snapshot's shape[0]); default: the N the
//                      shard's own header says (then only the split of its own N is checked);
//              ranges  [lo, hi) of each layer (e.g. the heads split's, for the vLLM lane);
//                      default: the floor split of N for the rank and world its name says,
//                      which is what the stack's SGLang reader computes.
//
//   kind     'spark-v2-dense' | 'spark-v2-page' | 'spark-v1' (spark-pack.json or the first
//            engram-local.json, by format version and layout), 'mia-native' (shards without
//            a manifest: the stack's own packer, or an interrupted spark pack), 'sparse' (the
//            overlay's copy), 'none'.
//   shards   every file under a name the Mia reader opens (engram-l{L}-r{R}of{W}.bin):
//            miaReader 'attach' | 'abort' | 'unknown' (a link or a non-regular file: spark does
//            not open it), `why` when not 'attach', and exactSize (the registry's checker wants
//            the size exact; the reader accepts a longer file).
//   split    for 'spark-v2-dense' the manifest's; for 'mia-native' the split whose share the
//            shards' ranges are ('floor', 'front', or 'unknown': the heads split cannot be
//            told from the headers alone).
//   fix      set when any shard aborts or the pack is version 1: the command that re-packs it.
//
// A malformed manifest throws the reader's E_PACK_MANIFEST error.
import { join } from 'node:path';
import type { SplitRule } from '../../domain/split-rule.js';
import { readLocalDir } from '../local-dir.js';
import { readShardHead, repackCommand, scanMiaShards, shardSplit } from './mia-dir.js';
import { decodeMiaHeader, MIA_MAGIC, miaMismatch, miaShardBytes } from './mia-shard.js';
import type { PackedManifest } from '../packed/packed-manifest.js';
import { rankRanges } from '../../engram/ranges.js';

export type PackDirKind = 'spark-v2-dense' | 'spark-v2-page' | 'spark-v1' | 'mia-native' | 'sparse' | 'none';

export interface ShardVerdict {
  file: string;
  layer: number;
  rank: number;
  world: number;
  miaReader: 'attach' | 'abort' | 'unknown';
  why?: string;
  exactSize: boolean;
}

export interface PackDirVerdict {
  dir: string;
  kind: PackDirKind;
  split?: SplitRule | 'unknown';
  shards: ShardVerdict[];
  fix?: string;
}

export interface PackExpectation {
  rows?: ReadonlyMap<number, number>;
  ranges?: ReadonlyMap<number, readonly [number, number]>;
}

/** verify's finding for a version 1 pack, whatever else is right with it. */
export function miaAbortsOnV1(dir: string, m: PackedManifest): string {
  const files = m.layers.map((l) => l.file).join(', ');
  return (
    `${dir} is a spark pack of format version 1: the Mia stack's reader aborts the serving process on its ${files} ` +
    `(a JSON header where it wants its binary one); re-pack it: ${repackCommand(dir, m.rank, m.world, m.layers[0]?.layout, m.split)}`
  );
}

function judge(
  dir: string,
  file: string,
  id: { layer: number; rank: number; world: number },
  expect: PackExpectation,
): ShardVerdict {
  const base = { file, ...id };
  const head = readShardHead(join(dir, file));
  if ('problem' in head) return { ...base, miaReader: 'unknown', why: `${file} ${head.problem}`, exactSize: false };
  if (head.block.length < 48)
    return {
      ...base,
      miaReader: 'abort',
      why: `${file} is ${head.size} bytes, shorter than its header`,
      exactSize: false,
    };
  const h = decodeMiaHeader(head.block);
  // Not the shard header at all (a version 1 JSON block, say): its fields mean nothing.
  if (h.magic !== MIA_MAGIC || h.unsafe.length > 0) {
    return {
      ...base,
      miaReader: 'abort',
      why: `${file}: ${miaMismatch(h, head.size, { layer: id.layer, lo: 0, hi: 0, rows: 0 }) ?? 'header out of range'}`,
      exactSize: false,
    };
  }
  const rows = expect.rows?.get(id.layer) ?? h.rows;
  const range = expect.ranges?.get(id.layer);
  const [lo, hi] =
    range ??
    (() => {
      const r = rankRanges([{ layer: id.layer, rows }], id.rank, id.world, 'floor')[0]!;
      return [r.start, r.end] as const;
    })();
  const why = miaMismatch(h, head.size, { layer: id.layer, lo, hi, rows });
  const exactSize = head.size === miaShardBytes(lo, hi);
  return why === undefined
    ? { ...base, miaReader: 'attach', exactSize }
    : { ...base, miaReader: 'abort', why: `${file}: ${why}`, exactSize };
}

export async function packDirVerdict(dir: string, expect: PackExpectation = {}): Promise<PackDirVerdict> {
  const local = await readLocalDir(dir);
  const files = local.kind === 'none' ? [] : scanMiaShards(dir);
  const shards = files.map((f) => judge(dir, f.name, f, expect));
  const verdict: PackDirVerdict = { dir, kind: 'none', shards };
  if (local.kind === 'packed') {
    const m = local.manifest;
    verdict.kind = m.version === 1 ? 'spark-v1' : (`spark-v2-${m.layers[0]?.layout ?? 'dense'}` as const);
    verdict.split = m.split;
    if (m.version === 1 || shards.some((s) => s.miaReader === 'abort'))
      verdict.fix = repackCommand(dir, m.rank, m.world, m.layers[0]?.layout, m.split);
  } else if (local.kind === 'mia') {
    verdict.kind = 'mia-native';
    const ranks = new Set(files.map((f) => `${f.rank}/${f.world}`));
    verdict.split = ranks.size === 1 ? shardSplit(files) : 'unknown';
    const bad = shards.find((s) => s.miaReader === 'abort');
    if (bad) verdict.fix = repackCommand(dir, bad.rank, bad.world);
  } else {
    verdict.kind = local.kind;
  }
  return verdict;
}
