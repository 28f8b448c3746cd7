// `spark verify` of the Mia stack's own shards (a directory without spark-pack.json, its files
// under the stack's shard names): each shard's header against its name and its size exact,
// identity.json against the shards when present, the split their ranges are, and with
// --source every row (or a sample) against the snapshot. There are no checksums to check: the
// stack's packer writes none, and the report says so.
import { readdir } from 'node:fs/promises';
import type { PackedManifest } from '../packed/packed-manifest.js';
import { parseMiaShardName } from './mia-shard.js';
import {
  identityProblems,
  readMiaIdentity,
  repackCommand,
  shardEntry,
  shardSplit,
  type MiaShardFile,
} from './mia-dir.js';
import { withSubTables } from '../../engram/layer-source.js';
import { checkLayers } from '../packed/verify-layers.js';
import type { VerifyReport, VerifyRequest } from '../../pack/verify-report.js';

/** The split rules the stack's two lanes use: SGLang's floor, vLLM's heads. */
const STACK_SPLITS = new Set(['floor', 'heads']);

export async function verifyMia(req: VerifyRequest, dir: string, shards: MiaShardFile[]): Promise<VerifyReport> {
  const t0 = performance.now();
  const ranks = [...new Set(shards.map((s) => `${s.rank}/${s.world}`))];
  const one = ranks.length === 1 ? shards[0] : undefined;
  const report: VerifyReport = {
    dir,
    kind: 'packed',
    ok: true,
    ...(one ? { rank: one.rank, world: one.world } : {}),
    madeBy: 'another tool',
    checked: ['Mia shard headers against their names, and sizes (no spark-pack.json: no checksums to check)'],
    layers: [],
    problems: [],
    bytesRead: 0,
    seconds: 0,
  };
  for (const s of shards) {
    if (s.problem)
      report.problems.push(
        `${s.name}: layer ${s.layer}: ${s.problem}; re-pack it: ${repackCommand(dir, s.rank, s.world)}`,
      );
  }
  // A shard still being written (spark's packer and the stack's both write NAME.partial first).
  const partial = (await readdir(dir)).filter(
    (n) => n.endsWith('.partial') && parseMiaShardName(n.slice(0, -'.partial'.length)),
  );
  for (const n of partial) report.problems.push(`${n}: an interrupted pack: re-run the same pack command to finish it`);
  const identity = await readMiaIdentity(dir);
  if (identity) {
    report.checked.push('identity.json against the shards');
    report.problems.push(...identityProblems(identity, shards));
  }
  const sane = shards.filter((s) => !s.problem);
  if (one && sane.length === shards.length) checkSplit(req, dir, report, sane, one);
  if (req.source)
    report.checked.push(req.rows === 'full' ? 'every row against the source' : 'a sample of rows against the source');
  // The data pass: each sane shard read as a dense layer of format version 2, without checksums.
  const byRank = new Map<string, MiaShardFile[]>();
  for (const s of sane) byRank.set(`${s.rank}/${s.world}`, [...(byRank.get(`${s.rank}/${s.world}`) ?? []), s]);
  const problems = [...report.problems];
  for (const group of byRank.values()) {
    const m: PackedManifest = {
      format: 'spark-engram-packed',
      version: 2,
      rank: group[0]!.rank,
      world: group[0]!.world,
      split: 'floor', // not consulted by the data pass
      source: { snapshot: '', files: [] },
      layers: [...group].sort((a, b) => a.layer - b.layer).map(shardEntry),
    };
    report.problems = [];
    await checkLayers(req, dir, m, report, t0);
    problems.push(...report.problems);
  }
  report.problems = problems;
  report.ok = problems.length === 0;
  report.seconds = (performance.now() - t0) / 1000;
  return report;
}

/**
 * The split the shards' ranges are: floor and front from the headers alone; heads with the
 * source's config.json. The stack's reader takes floor or heads.
 */
function checkSplit(
  req: VerifyRequest,
  dir: string,
  report: VerifyReport,
  sane: MiaShardFile[],
  one: MiaShardFile,
): void {
  const config = req.source?.config;
  const tables = config?.engram
    ? withSubTables(
        sane.map((s) => ({ layer: s.layer, rows: s.header!.rows })),
        config,
        dir,
      )
    : [];
  const split = shardSplit(sane, tables);
  report.split = split;
  if (split === 'unknown') {
    report.checked.push(
      config?.engram
        ? 'the split (floor, front, heads)'
        : 'the split (floor, front; heads needs --source with config.json)',
    );
    if (config?.engram)
      report.problems.push(
        `${dir}: the shards' ranges are no floor or heads split's share of rank ${one.rank} of ${one.world}: the stack's reader aborts on them`,
      );
  } else if (!STACK_SPLITS.has(split)) {
    report.problems.push(
      `${dir}: the shards hold the ${split} split's rows; the stack's reader expects floor (SGLang) or heads (vLLM): ${repackCommand(dir, one.rank, one.world)}`,
    );
  }
}
