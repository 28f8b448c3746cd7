// The Mia stack's packs on one node, as its reader will find them at boot (docs/mia-stack.md):
// for this node's rank and the recipe's TP, the file each Engram layer's reader opens, and
// what the reader does with it: attach, abort (the rank dies at boot), or not see it (serving
// that layer from the checkpoint at two reads a row). Judged from the node's facts
// (facts/mia-dir.ts) with the one definition of the shard (engram/mia-shard.ts).
import { join } from 'node:path';
import { decodeMiaHeader, MIA_HEADER_BYTES, MIA_HEADER_FIELDS_BYTES, miaMismatch, miaShardBytes, miaShardName, parseMiaShardName, type MiaHeader } from '../engram/mia-shard.js';
import { rankRanges } from '../engram/ranges.js';
import { shJoin } from '../remote/shell.js';
import type { MiaDirFact, MiaFileFact } from './facts/mia-dir.js';
import { miaPackDir, type MiaPackDir } from './node-paths.js';
import { snapshotRows } from './rules/pack.js';
import type { PreflightContext } from './types.js';

/** The text a version-1 spark pack's `.bin` starts with (its JSON header block). */
const SPARK_V1_START = '{"format":"spark-engram-packed"';

/** One layer's pack for this rank: its name, the rows the reader expects, and the file found. */
export interface MiaExpected {
  layer: number;
  name: string;
  path: string;
  want: { layer: number; lo: number; hi: number; rows: number };
  file?: MiaFileFact;
}

export interface MiaNodePacks {
  dir: MiaPackDir;
  host: string;
  fact: MiaDirFact;
  rank: number;
  tp: number;
  expected: MiaExpected[];
  /** Candidate files that are no layer's pack for this rank and TP. */
  others: MiaFileFact[];
}

/** Why the reader aborts on a file: what it is, in words that follow its path. */
export type MiaAbortKind = 'not-a-file' | 'version-1' | 'truncated' | 'mismatch';

/** What the reader does with one layer's file. */
export type MiaVerdict =
  | { status: 'absent' }
  | { status: 'attaches'; header: MiaHeader; oversize: boolean }
  /** It opens the file and aborts (or, for what is no regular file, fails or blocks). */
  | { status: 'aborts'; kind: MiaAbortKind; why: string; header?: MiaHeader }
  | { status: 'unreadable' };

/** The node's packs for its rank, or why they cannot be judged here. */
export async function miaNodePacks(ctx: PreflightContext): Promise<MiaNodePacks | { skip: string } | { unmapped: MiaPackDir } | undefined> {
  const dir = miaPackDir(ctx);
  if (!dir) return undefined;
  if (dir.host === undefined) return { unmapped: dir };
  const fact = ctx.view!.miaDir();
  if (!fact) return { skip: `the node did not report ${dir.host}` };
  const rank = ctx.node?.rank ?? null;
  if (rank === null) return { skip: "this node's rank is unknown: pass --node-rank R (or --cluster)" };
  const tp = ctx.shape.tp;
  if (rank >= tp) return { skip: `node rank ${rank} holds no tensor-parallel rank of ${tp}` };
  const rows = await snapshotRows(ctx);
  if (!rows) return { skip: 'no snapshot with Engram tables to take the row counts from: pass --snapshot DIR' };
  const layers = [...rows].map(([layer, n]) => ({ layer, rows: n }));
  const expected = rankRanges(layers, rank, tp, 'floor').map((r): MiaExpected => {
    const name = miaShardName(r.layer, rank, tp);
    const file = fact.files.find((f) => f.name === name);
    return { layer: r.layer, name, path: join(dir.host!, name), want: { layer: r.layer, lo: r.start, hi: r.end, rows: r.rows }, ...(file ? { file } : {}) };
  });
  const others = fact.files.filter((f) => !expected.some((e) => e.name === f.name));
  return { dir, host: dir.host, fact, rank, tp, expected, others };
}

/** What the stack's reader does with the file expected for one layer. */
export function miaVerdict(e: MiaExpected): MiaVerdict {
  const f = e.file;
  if (!f || f.kind === 'missing') return { status: 'absent' };
  if (f.kind === 'dir') return { status: 'aborts', kind: 'not-a-file', why: 'is a directory, not a pack' };
  if (f.kind === 'other') return { status: 'aborts', kind: 'not-a-file', why: 'is not a regular file (a FIFO blocks the reader, a device is read as rows)' };
  if (f.head === undefined || f.size === undefined) return { status: 'unreadable' };
  const head = Buffer.from(f.head, 'hex');
  if (head.toString('latin1').startsWith(SPARK_V1_START)) {
    return { status: 'aborts', kind: 'version-1', why: 'is a spark pack of format version 1: a JSON header where the stack reads its binary one' };
  }
  if (head.length < MIA_HEADER_FIELDS_BYTES) {
    return { status: 'aborts', kind: 'truncated', why: `is truncated: ${f.size} bytes, shorter than the ${MIA_HEADER_BYTES}-byte header` };
  }
  const header = decodeMiaHeader(head);
  const want = miaShardBytes(e.want.lo, e.want.hi);
  // The header is checked first (as the reader does): a short file of the right header is truncated.
  const mismatch = miaMismatch(header, Math.max(f.size, want), e.want);
  if (mismatch) return { status: 'aborts', kind: 'mismatch', why: `is not layer ${e.layer}'s pack for this rank: ${mismatch}`, header };
  if (f.size < want) return { status: 'aborts', kind: 'truncated', why: `is truncated: ${f.size} bytes, shorter than the ${want} its rows need`, header };
  return { status: 'attaches', header, oversize: f.size > want };
}

/** The rank and world whose floor share of `rows` rows is [lo, hi), the smallest world first. */
export function floorShareOf(lo: number, hi: number, rows: number, maxWorld = 16): { rank: number; world: number } | undefined {
  for (let world = 1; world <= maxWorld; world++) {
    for (let rank = 0; rank < world; rank++) {
      if (Math.floor((rows * rank) / world) === lo && Math.floor((rows * (rank + 1)) / world) === hi) return { rank, world };
    }
  }
  return undefined;
}

/** The files of another rank or world in the directory, named with the rank and world their names say. */
export function describeOthers(others: readonly MiaFileFact[]): string {
  return others
    .map((f) => {
      const id = parseMiaShardName(f.name);
      return id ? `${f.name} (rank ${id.rank} of ${id.world})` : f.name;
    })
    .join(', ');
}

/** The snapshot the node serves, as the node sees it (for fix commands). */
function nodeSnapshot(ctx: PreflightContext): string {
  return ctx.view?.snapshot()?.dir ?? ctx.snapshotSource()?.dir ?? 'SNAPSHOT';
}

/** `spark pack` writing this node's packs in place, quoted for a shell. */
export function repackCommand(ctx: PreflightContext, p: MiaNodePacks, force: boolean): string {
  const argv = ['spark', 'pack', nodeSnapshot(ctx), '--out', p.host, '--rank', String(p.rank), '--world', String(p.tp), '--layout', 'dense'];
  return shJoin(force ? [...argv, '--force'] : argv);
}
