// The checkpoint on each node: every shard present at the size its header implies, the Engram
// tables the config promises, and the same revision everywhere.
import { defineRule, finding, whereNode } from '../../preflight-api/rule.js';
import { nodeLabel } from '../../preflight-api/node.js';
import { expectedEngramRows } from '../../preflight-api/rows.js';
import type { PreflightContext, SnapshotFacts } from '../../preflight-api/types.js';

const NO_SNAPSHOT = 'no snapshot on this node: pass --snapshot DIR (or --cluster with hf_cache)';

export const complete = defineRule({
  id: 'snapshot.complete',
  title: 'every shard the index names is present on the node, with the size its header implies',
  severity: 'error',
  scope: 'local-node',
  evidence:
    'A missing or truncated shard fails the load minutes into the boot (docs/failures.md 7); the reader checks each ' +
    "file's size against its header's data_offsets. A NAS mounted on every node can still be missing or stale on one.",
  fix: 'finish or repeat the download (huggingface-cli download <model> --revision <rev>) so every shard is complete',
  check(ctx) {
    const s = ctx.view!.snapshot();
    if (!s) return { skip: NO_SNAPSHOT };
    if ('facts' in s) return [];
    // Engram table errors come after every header and size checked out; snapshot.engram-tables
    // reports them when the stack serves Engram rows.
    if (isEngramError(s.error.code) && engramTablesApply(ctx)) return [];
    const path = typeof s.error.details.path === 'string' ? s.error.details.path : s.dir;
    return [finding(this, { message: `${s.error.message} [${s.error.code}] on ${whereNode(ctx)}`, where: path })];
  },
});

function isEngramError(code: string): boolean {
  return code.startsWith('E_ENGRAM_');
}

function engramTablesApply(ctx: PreflightContext): boolean {
  return ctx.family === 'dsv41' && ctx.env.has('SPARK_ENGRAM_DIR');
}

/** Problems between the tables a snapshot holds and the rows the config promises. */
export function engramTableProblems(facts: SnapshotFacts, expected: Map<number, number> | undefined): string[] {
  if (facts.engram.length === 0) return [`no Engram tables (layers.L.engram.embed.weight/.scale) in ${facts.dir}`];
  if (!expected) return [];
  const problems: string[] = [];
  for (const [layer, rows] of expected) {
    const t = facts.engram.find((x) => x.layer === layer);
    if (!t) problems.push(`layer ${layer}'s Engram table is missing from ${facts.dir}`);
    else if (t.rows !== rows)
      problems.push(`layer ${layer}'s Engram table has ${t.rows} rows, config.json says ${rows}`);
  }
  return problems;
}

export const engramTables = defineRule({
  id: 'snapshot.engram-tables',
  title: "with SPARK_ENGRAM_DIR set, the node's snapshot holds every Engram table config.json names",
  families: ['dsv41'],
  severity: 'error',
  scope: 'local-node',
  evidence:
    'The overlay serves Engram rows from SPARK_ENGRAM_DIR; layers 1 and 14 of V4.1-Flash hold 384,006,168 and ' +
    '384,016,682 rows (docs/engram-tables.md; recipes/dsv41-flash-4x-sglang-aiden16).',
  fix: 'point SPARK_ENGRAM_DIR at the complete V4.1 snapshot (or a pack made from it)',
  async check(ctx) {
    if (!engramTablesApply(ctx)) return [];
    const s = ctx.view!.snapshot();
    if (!s) return { skip: NO_SNAPSHOT };
    if (!('facts' in s)) {
      if (!isEngramError(s.error.code)) return { skip: 'the snapshot does not validate (see snapshot.complete)' };
      const path = typeof s.error.details.path === 'string' ? s.error.details.path : s.dir;
      return [finding(this, { message: `${s.error.message} [${s.error.code}]`, where: path })];
    }
    const config = await ctx.modelConfig();
    const expected = config ? expectedEngramRows(config) : undefined;
    return engramTableProblems(s.facts, expected).map((message) => finding(this, { message, where: s.facts.dir }));
  },
});

export const sameRevision = defineRule({
  id: 'snapshot.same-revision',
  title: 'every node that reads the model has the same snapshot revision',
  severity: 'error',
  scope: 'cluster',
  evidence:
    'Each node resolves the model in its own cache (refs/main, or a copy of the NAS); ranks that load different revisions ' +
    'hold weights that do not belong together and the all-reduce sums them (docs/engram-tables.md: the public revision is dba1be0a…).',
  fix: "download the head's revision on that node (huggingface-cli download <model> --revision <rev>), or pass --revision to the launch",
  check(ctx) {
    const head = ctx.checked.find((c) => c.node.rank === ctx.placement?.head.rank);
    const revOf = (c: (typeof ctx.checked)[number]) => {
      const s = c.view?.snapshot();
      return s && 'facts' in s ? s.facts.revision : undefined;
    };
    const want = head ? revOf(head) : undefined;
    if (!head || want === undefined) return [];
    return ctx.checked
      .filter((c) => c !== head && revOf(c) !== undefined && revOf(c) !== want)
      .map((c) =>
        finding(this, {
          message: `${nodeLabel(c.node)} has revision ${revOf(c)} of the model, the head ${nodeLabel(head.node)} has ${want}`,
          where: nodeLabel(c.node),
          node: { rank: c.node.rank, host: c.node.host },
        }),
      );
  },
});
