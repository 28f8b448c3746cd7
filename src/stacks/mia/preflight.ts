// The Mia stack's packed shards on each node (docs/mia-stack.md): wherever DSV41_PACKED_DIR is
// set, the file each Engram layer's reader opens for this node's rank must be one it attaches
// (it aborts the rank on anything else under that name), on a filesystem that takes O_DIRECT
// (else it silently serves from the checkpoint), without pinning scale rows the packs already
// hold, and with an identity.json receipt, if any, that agrees with the packs. Judged from the
// node's facts (its reader directory, which miaPreflight asks each node for) with the one
// definition of the shard (mia-shard.ts).
import { join } from 'node:path';
import { formatBytes } from '../../terminal/format.js';
import { shJoin } from '../../remote/shell.js';
import { floorShareOf, rankRanges } from '../../engram/ranges.js';
import { defineRule, envSourceName, finding, whereEnv, whereNode } from '../../preflight-api/rule.js';
import { snapshotRows } from '../../preflight-api/rows.js';
import type { ReaderDirFact, ReaderFileFact } from '../../preflight-api/node-facts.js';
import type { Finding, PreflightContext, RuleOutcome, StackPreflight } from '../../preflight-api/types.js';
import {
  decodeMiaHeader,
  MIA_HEADER_BYTES,
  MIA_HEADER_FIELDS_BYTES,
  miaMismatch,
  miaShardBytes,
  miaShardName,
  parseMiaShardName,
  type MiaHeader,
} from './mia-shard.js';
import { miaPackDir, type MiaPackDir } from './pack-dir.js';

/** The sparkrun registry's receipt beside the packs. */
const MIA_IDENTITY_NAME = 'identity.json';
/** The names the stack's reader opens: `engram-l{L}-r{R}of{TP}.bin` (it parses them further). */
const MIA_SHARD_GLOB = 'engram-l*-r*of*.bin';

/** The text a version-1 spark pack's `.bin` starts with (its JSON header block). */
const SPARK_V1_START = '{"format":"spark-engram-packed"';

/** One layer's pack for this rank: its name, the rows the reader expects, and the file found. */
interface MiaExpected {
  layer: number;
  name: string;
  path: string;
  want: { layer: number; lo: number; hi: number; rows: number };
  file?: ReaderFileFact;
}

interface MiaNodePacks {
  dir: MiaPackDir;
  host: string;
  fact: ReaderDirFact;
  rank: number;
  tp: number;
  expected: MiaExpected[];
  /** Candidate files that are no layer's pack for this rank and TP. */
  others: ReaderFileFact[];
}

/** What the reader does with one layer's file. */
type MiaVerdict =
  | { status: 'absent' }
  | { status: 'attaches'; header: MiaHeader; oversize: boolean }
  /** It opens the file and aborts (or, for what is no regular file, fails or blocks); `why` follows the file's path. */
  | { status: 'aborts'; why: string; header?: MiaHeader }
  | { status: 'unreadable' };

/** The node's packs for its rank, or why they cannot be judged here. */
async function miaNodePacks(
  ctx: PreflightContext,
): Promise<MiaNodePacks | { skip: string } | { unmapped: MiaPackDir } | undefined> {
  const dir = miaPackDir(ctx);
  if (!dir) return undefined;
  if (dir.host === undefined) return { unmapped: dir };
  // The node lists one reader directory: this stack's, unless another stack's came first.
  const fact = ctx.view!.request.readerDir?.dir === dir.host ? ctx.view!.readerDir() : undefined;
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
    return {
      layer: r.layer,
      name,
      path: join(dir.host!, name),
      want: { layer: r.layer, lo: r.start, hi: r.end, rows: r.rows },
      ...(file ? { file } : {}),
    };
  });
  const others = fact.files.filter((f) => !expected.some((e) => e.name === f.name));
  return { dir, host: dir.host, fact, rank, tp, expected, others };
}

/** What the stack's reader does with the file expected for one layer. */
function miaVerdict(e: MiaExpected): MiaVerdict {
  const f = e.file;
  if (!f || f.kind === 'missing') return { status: 'absent' };
  if (f.kind === 'dir') return { status: 'aborts', why: 'is a directory, not a pack' };
  if (f.kind === 'other')
    return { status: 'aborts', why: 'is not a regular file (a FIFO blocks the reader, a device is read as rows)' };
  if (f.head === undefined || f.size === undefined) return { status: 'unreadable' };
  const head = Buffer.from(f.head, 'hex');
  if (head.toString('latin1').startsWith(SPARK_V1_START)) {
    return {
      status: 'aborts',
      why: 'is a spark pack of format version 1: a JSON header where the stack reads its binary one',
    };
  }
  if (head.length < MIA_HEADER_FIELDS_BYTES) {
    return { status: 'aborts', why: `is truncated: ${f.size} bytes, shorter than the ${MIA_HEADER_BYTES}-byte header` };
  }
  const header = decodeMiaHeader(head);
  const want = miaShardBytes(e.want.lo, e.want.hi);
  // The header is checked first (as the reader does): a short file of the right header is truncated.
  const mismatch = miaMismatch(header, Math.max(f.size, want), e.want);
  if (mismatch) return { status: 'aborts', why: `is not layer ${e.layer}'s pack for this rank: ${mismatch}`, header };
  if (f.size < want)
    return { status: 'aborts', why: `is truncated: ${f.size} bytes, shorter than the ${want} its rows need`, header };
  return { status: 'attaches', header, oversize: f.size > want };
}

/** The files of another rank or world in the directory, named with the rank and world their names say. */
function describeOthers(others: readonly ReaderFileFact[]): string {
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
function repackCommand(ctx: PreflightContext, p: MiaNodePacks, force: boolean): string {
  const argv = [
    'spark',
    'pack',
    nodeSnapshot(ctx),
    '--out',
    p.host,
    '--rank',
    String(p.rank),
    '--world',
    String(p.tp),
    '--layout',
    'dense',
  ];
  return shJoin(force ? [...argv, '--force'] : argv);
}

const SERVES_FROM_CHECKPOINT = 'the stack then serves its rows from the checkpoint, two reads a row instead of one';

/** The node's packs, or the outcome a rule returns when there are none to look at. */
async function packsOrOutcome(ctx: PreflightContext): Promise<MiaNodePacks | RuleOutcome> {
  const p = await miaNodePacks(ctx);
  if (!p) return [];
  if ('unmapped' in p)
    return { skip: `${p.unmapped.from} is under no mount: no host directory to check (see mia.packs)` };
  return p;
}

const isPacks = (p: MiaNodePacks | RuleOutcome): p is MiaNodePacks => !Array.isArray(p) && !('skip' in p);

export const packs = defineRule({
  id: 'mia.packs',
  title: "each Engram layer's packed shard for this node's rank is one the Mia stack's reader attaches",
  engines: ['sglang'],
  families: ['dsv41'],
  severity: 'error',
  also: "warn when a layer has no pack (or only another rank's or world's), or a pack is larger than its rows; info when there are no packs at all",
  scope: 'local-node',
  evidence:
    'The Mia stack opens DSV41_PACKED_DIR/engram-l{L}-r{R}of{TP}.bin for each layer and aborts the rank at boot when its ' +
    'magic, layer, rows [lo, hi) of the floor split, table rows N or row bytes differ, or the file is shorter than its rows; ' +
    "spark's format-1 packs carry a JSON header under these names (docs/mia-stack.md).",
  fix: 'spark pack SNAPSHOT --out DIR --rank R --world TP --layout dense --force on that node (or spark fanout pack --layout dense)',
  async check(ctx) {
    const found = await miaNodePacks(ctx);
    if (found && 'unmapped' in found) {
      const v = found.unmapped.value;
      return [
        finding(this, {
          severity: 'info',
          message: `DSV41_PACKED_DIR=${v.value} (set in ${envSourceName(v)}) is under no mount of the recipe, and no ENGRAM_DIR is mounted at /engram: the container sees no packs there on ${whereNode(ctx)}, and ${SERVES_FROM_CHECKPOINT}`,
          where: whereEnv(v),
          fix: 'mount the host directory holding the packs at DSV41_PACKED_DIR ([[extra_mounts]]), or set ENGRAM_DIR to it in the env file',
        }),
      ];
    }
    const p = await packsOrOutcome(ctx);
    if (!isPacks(p)) return p;
    const node = whereNode(ctx);
    const out = [];
    const absent: string[] = [];
    for (const e of p.expected) {
      const v = miaVerdict(e);
      if (v.status === 'absent') absent.push(e.name);
      else if (v.status === 'unreadable') {
        out.push(
          finding(this, {
            severity: 'warn',
            message: `${e.path} on ${node} could not be read to check its header`,
            where: e.path,
            fix: 'make it readable, then run preflight again',
          }),
        );
      } else if (v.status === 'aborts') {
        out.push(abortFinding(this, ctx, p, e, v));
      } else if (v.oversize) {
        out.push(
          finding(this, {
            severity: 'warn',
            message: `${e.path} on ${node} is ${e.file!.size} bytes, more than the ${miaShardBytes(e.want.lo, e.want.hi)} its rows need: the stack reads it, the sparkrun registry's checker refuses it`,
            where: e.path,
            fix: `re-pack it: ${repackCommand(ctx, p, true)}`,
          }),
        );
      }
    }
    if (absent.length > 0) out.push(absentFinding(this, ctx, p, absent));
    return out;
  },
});

type RuleHead = Parameters<typeof finding>[0];

/** A pack the Mia stack's reader would abort on (or cannot attach): whose rows it holds, what happens, the fix. */
function abortFinding(
  rule: RuleHead,
  ctx: PreflightContext,
  p: MiaNodePacks,
  e: MiaExpected,
  v: Extract<MiaVerdict, { status: 'aborts' }>,
): Finding {
  const node = whereNode(ctx);
  const share =
    v.header && (v.header.lo !== e.want.lo || v.header.hi !== e.want.hi)
      ? floorShareOf(v.header.lo, v.header.hi, v.header.rows)
      : undefined;
  const whose = share ? ` (rank ${share.rank} of ${share.world}'s rows; this is rank ${p.rank} of ${p.tp})` : '';
  // A file that cannot be opened with O_DIRECT is never opened at all: no abort yet.
  const unseen = e.file?.direct === false;
  const fate = unseen
    ? ': the reader would abort on it, and does not only because its filesystem refuses O_DIRECT (see mia.o-direct)'
    : e.file?.kind !== 'file'
      ? ": the Mia stack's reader cannot attach it, and the rank fails or hangs at boot"
      : ": the Mia stack's reader aborts on it, and the rank dies at boot";
  return finding(rule, {
    ...(unseen ? { severity: 'warn' as const } : {}),
    message: `${e.path} on ${node} ${v.why}${whose}${fate}`,
    where: e.path,
    fix:
      e.file?.kind === 'file'
        ? `re-pack it: ${repackCommand(ctx, p, true)}`
        : `remove it (${shJoin(['rm', '-r', e.path])}), then: ${repackCommand(ctx, p, false)}`,
  });
}

/** This rank's packs missing from the directory: none at all (info), or some (warn), naming other ranks' packs there. */
function absentFinding(rule: RuleHead, ctx: PreflightContext, p: MiaNodePacks, absent: string[]): Finding {
  const node = whereNode(ctx);
  const strays = p.others.filter((f) => parseMiaShardName(f.name));
  const noneAtAll = absent.length === p.expected.length;
  if (noneAtAll && strays.length === 0) {
    return finding(rule, {
      severity: 'info',
      message: `no packs for rank ${p.rank} of ${p.tp} in ${p.host} on ${node} (${p.dir.from}): ${SERVES_FROM_CHECKPOINT}`,
      where: p.host,
      fix: `pack them: ${repackCommand(ctx, p, false)} (every node at once: spark fanout pack --layout dense)`,
    });
  }
  const also =
    strays.length > 0 ? `; the directory holds ${describeOthers(strays)}: packed for another rank or world` : '';
  return finding(rule, {
    severity: 'warn',
    message: `${absent.join(' and ')} ${absent.length > 1 ? 'are' : 'is'} missing from ${p.host} on ${node}${also}: ${SERVES_FROM_CHECKPOINT}`,
    where: join(p.host, absent[0]!),
    fix: `pack rank ${p.rank} of ${p.tp} there: ${repackCommand(ctx, p, false)}`,
  });
}

export const oDirect = defineRule({
  id: 'mia.o-direct',
  title: "the filesystem holding this node's Mia packs accepts O_DIRECT",
  engines: ['sglang'],
  families: ['dsv41'],
  severity: 'warn',
  scope: 'local-node',
  evidence:
    "The Mia stack's reader opens a pack with O_DIRECT only; where the filesystem refuses it the pack looks absent and every " +
    'row is read from the checkpoint, two reads a row, without an error (docs/mia-stack.md).',
  fix: 'put the packs on a local filesystem that takes O_DIRECT (ext4 or xfs on the NVMe; ramfs, tmpfs before Linux 6.6 and some FUSE and network filesystems refuse it) and mount that',
  async check(ctx) {
    const p = await packsOrOutcome(ctx);
    if (!isPacks(p)) return p;
    const refused = p.expected.filter((e) => e.file?.kind === 'file' && e.file.direct === false);
    if (refused.length === 0) return [];
    return [
      finding(this, {
        message:
          `${refused.map((e) => e.name).join(' and ')} in ${p.host} on ${whereNode(ctx)} cannot be opened with O_DIRECT: ` +
          `the Mia stack's reader sees no pack there and ${SERVES_FROM_CHECKPOINT}, silently`,
        where: refused[0]!.path,
      }),
    ];
  },
});

/** Values of DSV41_RESIDENT_SCALES the stack reads as off. */
const SCALES_OFF = ['0', 'off', 'false'];

export const residentScales = defineRule({
  id: 'mia.resident-scales',
  title: 'DSV41_RESIDENT_SCALES is off where Mia packs are attached',
  engines: ['sglang'],
  families: ['dsv41'],
  severity: 'warn',
  scope: 'local-node',
  evidence:
    'With DSV41_RESIDENT_SCALES not 0, off or false (its default is on) the Mia stack pins every owned scale row in memory ' +
    '(8 bytes a row, ~0.77 GB per layer per rank at TP4), even when a pack already gives weight and scale in one read; ' +
    'on GB10 that memory is GPU memory (docs/mia-stack.md).',
  fix: "set DSV41_RESIDENT_SCALES=0 in the env file (or the recipe's [env])",
  async check(ctx) {
    const p = await packsOrOutcome(ctx);
    if (!isPacks(p)) return p;
    const attached = p.expected.filter((e) => e.file?.direct !== false && miaVerdict(e).status === 'attaches');
    if (attached.length === 0) return [];
    const v = ctx.env.get('DSV41_RESIDENT_SCALES');
    if (v && SCALES_OFF.includes(v.value)) return [];
    const pinned = attached.reduce((a, e) => a + (e.want.hi - e.want.lo) * 8, 0);
    const setting = v
      ? `DSV41_RESIDENT_SCALES=${v.value} (set in ${envSourceName(v)}) is not 0, off or false`
      : 'DSV41_RESIDENT_SCALES is not set, and the stack pins by default';
    return [
      finding(this, {
        message:
          `${setting}: with the packs in ${p.host} attached on ${whereNode(ctx)} the stack still pins rank ${p.rank}'s scale rows, ` +
          `${formatBytes(pinned)} of GPU memory for nothing (8 bytes a row of layer ${attached.map((e) => e.layer).join(' and ')})`,
        where: v ? whereEnv(v) : p.host,
      }),
    ];
  },
});

interface Identity {
  format?: unknown;
  tp?: unknown;
  rows?: unknown;
}

export const identity = defineRule({
  id: 'mia.identity',
  title: "an identity.json beside this node's Mia packs agrees with them (format, tp, rows)",
  engines: ['sglang'],
  families: ['dsv41'],
  severity: 'warn',
  scope: 'local-node',
  evidence:
    'The sparkrun registry\'s preparation step writes identity.json (format "DSV41EN1", tp, rows per layer) beside the packs ' +
    'and refuses a directory of packs without a matching one; a stale receipt means the packs changed after it (docs/mia-stack.md).',
  fix: "remove the stale identity.json (the registry's preparation writes a new one), or re-pack for the receipt's tp",
  async check(ctx) {
    const p = await packsOrOutcome(ctx);
    if (!isPacks(p)) return p;
    const text = p.fact.receipt;
    const present = p.expected.filter((e) => e.file?.kind === 'file');
    if (text === undefined || present.length === 0) return [];
    const path = join(p.host, MIA_IDENTITY_NAME);
    const node = whereNode(ctx);
    let doc: Identity;
    try {
      doc = JSON.parse(text) as Identity;
      if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error('not a JSON object');
    } catch (err) {
      return [
        finding(this, { message: `${path} on ${node} is not a JSON object (${(err as Error).message})`, where: path }),
      ];
    }
    const problems: string[] = [];
    if (doc.format !== 'DSV41EN1') problems.push(`format ${JSON.stringify(doc.format)}, the packs are "DSV41EN1"`);
    if (doc.tp !== p.tp) problems.push(`tp ${JSON.stringify(doc.tp)}, the packs here are for tp ${p.tp}`);
    const rows = typeof doc.rows === 'object' && doc.rows !== null ? (doc.rows as Record<string, unknown>) : {};
    for (const e of p.expected) {
      const v = miaVerdict(e);
      const n = 'header' in v && v.header ? v.header.rows : e.want.rows;
      if (rows[String(e.layer)] !== n)
        problems.push(
          `rows of layer ${e.layer} ${JSON.stringify(rows[String(e.layer)])}, the ${'header' in v && v.header ? "pack's header says" : 'snapshot has'} ${n}`,
        );
    }
    if (problems.length === 0) return [];
    return [
      finding(this, {
        message: `${path} on ${node} disagrees with the packs beside it: ${problems.join('; ')}; the sparkrun registry's preparation refuses such a directory`,
        where: path,
        fix: `remove it (${shJoin(['rm', path])}) if these packs are the ones to serve, or re-pack for its tp`,
      }),
    ];
  },
});

/** The Mia stack's part of preflight: its packs' directory listed on each node, and the rules that read it. */
export const miaPreflight: StackPreflight = {
  rules: [{ after: 'pack.manifest', rules: [packs, oDirect, residentScales, identity] }],
  readerDir(ctx) {
    const host = miaPackDir(ctx)?.host;
    return host === undefined
      ? undefined
      : { dir: host, glob: MIA_SHARD_GLOB, headBytes: MIA_HEADER_FIELDS_BYTES, receipt: MIA_IDENTITY_NAME };
  },
};
