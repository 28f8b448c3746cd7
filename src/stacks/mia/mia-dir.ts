// A directory of the Mia stack's packed shards (docs/packed-format.md, "The Mia stack's packed
// shard"), read the way spark reads any pack: every file under a shard name with its header
// and size, the `identity.json` receipt beside them when there is one, and, for the readers
// (rows, ranges, the wrapper, bench), the shards of one rank described as manifest entries.
//
// Nothing here trusts a file: a name that is a link, a FIFO or a directory is reported as the
// problem it is (opened O_NOFOLLOW|O_NONBLOCK, checked regular before reading), never read.
import { closeSync, constants, fstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { SparkError } from '../../errors/errors.js';
import type { SplitRule } from '../../domain/split-rule.js';
import { readJsonIfExists } from '../../files/read-optional.js';
import {
  decodeMiaHeader,
  MIA_HEADER_BYTES,
  MIA_MAGIC,
  miaShardBytes,
  parseMiaShardName,
  type MiaHeader,
} from './mia-shard.js';
import { floorShareOf, tileLayers, type EngramLayerRows } from '../../engram/ranges.js';
import type { PackedLayer, PackedManifest } from '../packed/packed-manifest.js';

/** The command that re-packs rank/world of a pack in dir as the Mia stack's shards (a finding's fix). */
export function repackCommand(dir: string, rank: number, world: number, layout = 'dense', split?: string): string {
  return `spark pack SNAPSHOT --out ${dir} --rank ${rank} --world ${world}${split && split !== 'floor' ? ` --split ${split}` : ''} --layout ${layout} --force`;
}

/** The checksum algorithm of an entry made from a shard: there are none to check. */
export const NO_CHECKSUMS = 'none';

/** The receipt the sparkrun registry's preparation writes beside the shards. */
export const MIA_IDENTITY_NAME = 'identity.json';

/** One file under a shard name: what its name says, what it holds, and what is wrong with it alone. */
export interface MiaShardFile {
  name: string;
  /** From the name. */
  layer: number;
  rank: number;
  world: number;
  /** Bytes; 0 when it could not be read. */
  size: number;
  /** Its first 4096 bytes decoded (absent: not a readable regular file of at least 48 bytes). */
  header?: MiaHeader & { zeroTail: boolean };
  /** Why the file is no complete shard of its own name, judged alone; absent when it is one. */
  problem?: string;
}

/** The header block and size of a shard file, or why it cannot be read (never through a link). */
export function readShardHead(path: string): { size: number; block: Buffer } | { problem: string } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return {
      problem:
        code === 'ELOOP' ? 'is a symbolic link' : code === 'ENOENT' ? 'is missing' : `cannot be opened (${code})`,
    };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { problem: 'is not a regular file' };
    const block = Buffer.alloc(Math.min(MIA_HEADER_BYTES, st.size));
    let got = 0;
    while (got < block.length) {
      const n = readSync(fd, block, got, block.length - got, got);
      if (n === 0) break;
      got += n;
    }
    return { size: st.size, block: block.subarray(0, got) };
  } catch (err) {
    return { problem: `cannot be read (${(err as NodeJS.ErrnoException).code})` };
  } finally {
    closeSync(fd);
  }
}

/** Whether a header block starts with the JSON text of spark's format version 1. */
export function isSparkV1Header(block: Buffer): boolean {
  return block.subarray(0, 40).toString('latin1').startsWith('{"format":"spark-engram-packed"');
}

/**
 * Why rows [lo, hi) of a table of `rows` rows cannot be rank `rank` of `world`'s under any
 * split the Mia stack uses, judged without the table's sub-table sizes (undefined: they can
 * be). The floor share (SGLang's reader) is; the vLLM lane's heads share needs config.json to
 * tell (shardSplit), but under every split rank 0's rows start at 0 and the last rank's end at
 * N, and another rank's floor share is a shard under the wrong name.
 */
export function notRankRange(lo: number, hi: number, rows: number, rank: number, world: number): string | undefined {
  if (!Number.isSafeInteger(world) || rank >= world)
    return `its name says rank ${rank} of ${world}, which is no rank (ranks are 0 to the world size - 1)`;
  // The floor split, N*R//W .. N*(R+1)//W, for this one rank (exact: the name may say any world).
  const floorAt = (r: number): number => Number((BigInt(rows) * BigInt(r)) / BigInt(world));
  if (lo === floorAt(rank) && hi === floorAt(rank + 1)) return undefined;
  const share = floorShareOf(lo, hi, rows);
  const whose = share ? `rank ${share.rank} of ${share.world}'s floor share` : '';
  const range = `header rows [${lo}, ${hi})`;
  if (rank === 0 && lo !== 0)
    return `${range} start at ${lo}, but rank 0's rows start at 0 under every split${whose ? ` (they are ${whose})` : ''}`;
  if (rank === world - 1 && hi !== rows)
    return `${range} end at ${hi}, but the last rank's rows end at the table's ${rows} under every split${whose ? ` (they are ${whose})` : ''}`;
  if (whose) return `${range} are ${whose}, not rank ${rank} of ${world}'s: another rank's shard under this name`;
  return undefined;
}

/** What is wrong with a shard judged by its name and itself alone (header sane, size exact). */
function selfProblem(
  name: { layer: number; rank: number; world: number },
  size: number,
  block: Buffer,
): { header?: MiaShardFile['header']; problem?: string } {
  if (block.length < 48) return { problem: `is ${size} bytes, shorter than a header` };
  const h = decodeMiaHeader(block);
  const header = {
    magic: h.magic,
    layer: h.layer,
    lo: h.lo,
    hi: h.hi,
    rows: h.rows,
    rowBytes: h.rowBytes,
    zeroTail: h.zeroTail,
  };
  if (h.magic !== MIA_MAGIC) {
    const why = isSparkV1Header(block) ? 'a JSON header of spark format version 1' : `magic 0x${h.magic.toString(16)}`;
    return { header, problem: `has ${why}, not the Mia shard header` };
  }
  if (h.unsafe.length > 0) return { header, problem: `header field ${h.unsafe[0]} is out of range` };
  if (h.layer !== name.layer) return { header, problem: `header says layer ${h.layer}, its name ${name.layer}` };
  if (h.lo > h.hi || h.hi > h.rows)
    return { header, problem: `header rows [${h.lo}, ${h.hi}) are not inside a table of ${h.rows}` };
  const notOwn = notRankRange(h.lo, h.hi, h.rows, name.rank, name.world);
  if (notOwn) return { header, problem: notOwn };
  if (h.rowBytes < 33 || h.rowBytes % 33 !== 0)
    return { header, problem: `header row bytes ${h.rowBytes} are no D + D/32` };
  if (!h.zeroTail) return { header, problem: 'header bytes 48-4095 are not zero' };
  const need = miaShardBytes(h.lo, h.hi, h.rowBytes);
  if (size < need) return { header, problem: `is ${size} bytes, shorter than the ${need} its rows need (truncated)` };
  if (size > need) return { header, problem: `is ${size} bytes, more than the ${need} its rows take` };
  return { header };
}

/** Every file under a shard name in `dir`, ascending by name. */
export function scanMiaShards(dir: string): MiaShardFile[] {
  const out: MiaShardFile[] = [];
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return out; // unlistable: no shards spark can see (its readers say what is wrong with the path)
  }
  for (const name of names) {
    const id = parseMiaShardName(name);
    if (!id) continue;
    const head = readShardHead(join(dir, name));
    if ('problem' in head) {
      out.push({ name, ...id, size: 0, problem: head.problem });
      continue;
    }
    out.push({ name, ...id, size: head.size, ...selfProblem(id, head.size, head.block) });
  }
  return out;
}

/** identity.json as the registry's preparation writes it (the fields spark checks). */
export interface MiaIdentity {
  format?: unknown;
  tp?: unknown;
  revision?: unknown;
  rows?: Record<string, unknown>;
}

export async function readMiaIdentity(dir: string): Promise<MiaIdentity | undefined> {
  const doc = await readJsonIfExists(join(dir, MIA_IDENTITY_NAME), 'E_PACK_MANIFEST', { what: 'identity receipt' });
  if (doc === undefined) return undefined;
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new SparkError('E_PACK_MANIFEST', `${join(dir, MIA_IDENTITY_NAME)}: not a JSON object`, {
      path: join(dir, MIA_IDENTITY_NAME),
    });
  }
  return doc as MiaIdentity;
}

/** Where identity.json disagrees with the shards (one line each; empty: it agrees or says nothing). */
export function identityProblems(identity: MiaIdentity, shards: readonly MiaShardFile[]): string[] {
  const out: string[] = [];
  if (identity.format !== undefined && identity.format !== 'DSV41EN1')
    out.push(`identity.json: format is ${JSON.stringify(identity.format)}, not "DSV41EN1"`);
  for (const s of shards) {
    if (identity.tp !== undefined && identity.tp !== s.world)
      out.push(`identity.json: tp is ${JSON.stringify(identity.tp)}, ${s.name} is of ${s.world}`);
    const rows = identity.rows?.[String(s.layer)];
    if (rows !== undefined && s.header && rows !== s.header.rows)
      out.push(`identity.json: rows.${s.layer} is ${JSON.stringify(rows)}, ${s.name}'s header says ${s.header.rows}`);
  }
  return out;
}

/**
 * Which split a rank's shards are: the split rule whose share of every table (N from the
 * headers) is exactly their ranges. `tables` may add sub-table sizes (config.json) for the
 * heads split; without them heads cannot be told and 'unknown' is the honest answer.
 */
export function shardSplit(
  shards: readonly MiaShardFile[],
  tables: readonly EngramLayerRows[] = [],
): SplitRule | 'unknown' {
  const first = shards[0];
  if (!first || shards.some((s) => !s.header)) return 'unknown';
  const layers = shards.map((s) => ({
    layer: s.layer,
    rows: s.header!.rows,
    subTables: tables.find((t) => t.layer === s.layer)?.subTables,
  }));
  const splits: SplitRule[] = layers.every((l) => l.subTables) ? ['floor', 'front', 'heads'] : ['floor', 'front'];
  for (const split of splits) {
    try {
      const mine = tileLayers(layers, first.world, split)[first.rank];
      if (mine && shards.every((s, i) => mine[i]!.start === s.header!.lo && mine[i]!.end === s.header!.hi))
        return split;
    } catch {
      // sub-table sizes that do not describe these tables: that split cannot say
    }
  }
  return 'unknown';
}

/**
 * The shards of the one rank `dir` holds, as a version 2 dense manifest without checksums, for
 * the readers; a problem with any shard, or shards of several ranks, is one E_PACK_MISMATCH
 * line naming the file and the fix.
 */
export function miaManifest(dir: string, shards: readonly MiaShardFile[]): PackedManifest {
  const ranks = [...new Set(shards.map((s) => `${s.rank} of ${s.world}`))];
  if (ranks.length !== 1) {
    throw new SparkError(
      'E_PACK_MISMATCH',
      `${dir} holds Mia shards of ranks ${ranks.join(', ')}: point at a directory with one rank's shards`,
      { path: dir },
    );
  }
  const bad = shards.find((s) => s.problem);
  if (bad) {
    throw new SparkError(
      'E_PACK_MISMATCH',
      `${join(dir, bad.name)} ${bad.problem}: the Mia stack's reader aborts on it; re-pack it: ${repackCommand(dir, bad.rank, bad.world)}`,
      { path: join(dir, bad.name) },
    );
  }
  const layers = [...shards].sort((a, b) => a.layer - b.layer).map(shardEntry);
  const split = shardSplit(shards);
  return {
    format: 'spark-engram-packed',
    version: 2,
    rank: shards[0]!.rank,
    world: shards[0]!.world,
    // Not consulted for these shards (layer-source.ts says what is known of their split);
    // one matching neither floor nor front can only be the vLLM lane's heads split.
    split: split === 'unknown' ? 'heads' : split,
    source: { snapshot: '', files: [] },
    layers,
  };
}

/** A sane shard (no `problem`) as the manifest entry of a dense layer without checksums. */
export function shardEntry(s: MiaShardFile): PackedLayer {
  const h = s.header!;
  return {
    layer: s.layer,
    rows: h.rows,
    start: h.lo,
    end: h.hi,
    file: s.name,
    rowBytes: h.rowBytes,
    stride: h.rowBytes,
    dataOffset: MIA_HEADER_BYTES,
    weightDtype: 'F8_E4M3',
    scaleDtype: 'F8_E8M0',
    layout: 'dense',
    checksum: { algorithm: NO_CHECKSUMS, chunkRows: Math.max(1, h.hi - h.lo), values: [] },
  };
}
