// Runs the rules that apply to a recipe and collects one report. With a cluster file (and no
// --local) every node that runs the recipe is asked for its facts over ssh, all at once, and
// the node rules run on each node's facts; otherwise this machine is the one node.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Io } from '../terminal/io.js';
import { SparkError, toSparkError, usageError } from '../errors/errors.js';
import { configFamily, hasFabricAddresses, engineFamilyOf } from '../recipes/index.js';
import { toolsFromEnv } from '../remote/ssh.js';
import { VERSION } from '../domain/version.js';
import { buildContext, forNode, type PreflightOptions } from './context.js';
import { collectFacts, localHello } from './facts/collect.js';
import { gatherNode } from './facts/remote.js';
import { buildRequest } from './facts/request.js';
import { nodeView } from '../preflight-api/view.js';
import { identifyNode } from '../preflight-api/node.js';
import { preflightRules } from './rules/index.js';
import { UNCHECKED_REASON } from '../preflight-api/rule.js';
import type {
  CheckedNode,
  Finding,
  LocalNode,
  NodeRef,
  PreflightContext,
  Rule,
  Severity,
  UncheckedRule,
} from '../preflight-api/types.js';

export interface PreflightReport {
  recipe: string;
  engine: string;
  stack: string;
  /** The model family the rules were chosen for, and where it came from. */
  family: { name: string; from: 'config.json' | 'model id' };
  world: number;
  cluster: string | null;
  /** `local`: this machine only; `cluster`: every node over ssh. */
  mode: 'local' | 'cluster';
  /** Local mode: the node the node rules ran on; null when this host is not in the cluster. */
  node: NodeRef | null;
  /** Every node looked at: how its facts came, or why they did not. */
  nodes: { rank: number | null; host: string; via: string | null; unreachable?: string; notes: string[] }[];
  snapshot: { dir: string; how: string } | null;
  findings: Finding[];
  counts: Record<Severity, number>;
  /** Rule ids that ran (on at least one node). */
  ran: string[];
  /** Rules that apply but could not run (on a node, or at all), and why. */
  skipped: { rule: string; reason: string; node?: NodeRef }[];
  seconds: number;
}

/** Default time one node may take to answer, hello and facts together. */
export const DEFAULT_NODE_TIMEOUT_MS = 30_000;

const ORDER: Record<Severity, number> = { error: 0, warn: 1, info: 2 };

/** Matches an id against --only/--skip entries: exact ids or `family.` / `family` prefixes. */
export function ruleSelected(id: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => id === p || id.startsWith(p.endsWith('.') ? p : p + '.'));
}

function validatePatterns(patterns: readonly string[] | undefined, flag: string, rules: readonly Rule[]): void {
  for (const p of patterns ?? []) {
    if (!rules.some((r) => ruleSelected(r.id, [p]))) {
      throw usageError(`${flag} ${p}: no such rule (rule ids are listed in docs/preflight.md)`);
    }
  }
}

export function appliesTo(rule: Rule, ctx: PreflightContext): boolean {
  if (!rule.engines.includes(ctx.recipe.engine)) return false;
  return rule.families === undefined || rule.families.includes(ctx.family);
}

/**
 * What a rule may fail on and still leave the others' findings worth reading: the environment
 * (EACCES on a mount, a FIFO where a file belongs) or bad input (a malformed config.json).
 * Anything else (a TypeError, an E_INTERNAL) is a bug in the rule.
 */
function isEnvironmentError(err: unknown): boolean {
  if (err instanceof SparkError) return err.code !== 'E_INTERNAL';
  const e = err as NodeJS.ErrnoException | undefined;
  return typeof e?.code === 'string' && typeof e.syscall === 'string';
}

type Outcome = { findings: Finding[] } | { skip: string } | { bug: unknown };

async function checkRule(rule: Rule, ctx: PreflightContext): Promise<Outcome> {
  try {
    const outcome = await rule.check(ctx);
    return Array.isArray(outcome) ? { findings: outcome } : { skip: outcome.skip };
  } catch (err) {
    // One rule that cannot read what it needs (EACCES on a mount, a malformed config.json)
    // must not hide the others' findings; it is reported as not checked, with the reason.
    // A bug is not "not checked": a green report would hide it.
    if (!isEnvironmentError(err)) return { bug: err };
    return { skip: `could not check: ${toSparkError(err).message.split('\n')[0]}` };
  }
}

/** A rule that failed with a bug: the run fails with E_INTERNAL (exit 3) naming it. */
function internalError(rule: Rule, bug: unknown): SparkError {
  const message = bug instanceof Error ? bug.message : String(bug);
  return new SparkError(
    'E_INTERNAL',
    `preflight rule ${rule.id} failed with an internal error (a bug in spark; please report it): ` +
      `${message.split('\n')[0]}; --skip ${rule.id} runs the other rules`,
    { rule: rule.id },
  );
}

/** This machine as the one node (local mode). */
async function checkThisNode(base: PreflightContext, options: PreflightOptions): Promise<CheckedNode[]> {
  const hints: Parameters<typeof identifyNode>[1] = {};
  if (options.nodeRank !== undefined) hints.rank = options.nodeRank;
  if (options.nodeRankFrom !== undefined) hints.rankFrom = options.nodeRankFrom;
  if (options.hostname !== undefined) hints.hostname = options.hostname;
  if (options.addresses !== undefined) hints.addresses = options.addresses;
  const node = identifyNode(base.cluster, hints);
  if (!node) return [];
  const ctx = forNode(base, node, { home: base.home, sysfs: base.sysfs });
  const request = buildRequest(ctx, { ...snapshotFlag(options, base.cwd), versions: false, docker: 'docker' });
  const facts = await collectFacts(request, localHello(base.home, VERSION), { via: 'local', dumpSysfs: false });
  return [{ node, view: nodeView(facts, request), sysfs: base.sysfs, notes: [] }];
}

/** Where the request says the node's snapshot is, when the command line or the launch says. */
function snapshotFlag(options: PreflightOptions, cwd: string): { snapshot?: string; served?: string } {
  if (options.snapshot !== undefined) return { snapshot: resolve(cwd, options.snapshot) };
  return options.servedSnapshot === undefined ? {} : { served: options.servedSnapshot };
}

/** Every node that runs the recipe, over ssh, all at once (cluster mode). */
async function checkNodes(
  base: PreflightContext,
  options: PreflightOptions,
  io: Io,
  scratch: string,
): Promise<CheckedNode[]> {
  const tools = toolsFromEnv(io.env, options.sparkBin);
  const sysfs = options.sysfs ?? '/sys';
  return Promise.all(
    (base.placement?.nodes ?? []).map(async (n): Promise<CheckedNode> => {
      const node: LocalNode = { rank: n.rank, host: n.host, clusterNode: n, how: 'cluster file' };
      const got = await gatherNode(
        n,
        (hello) =>
          buildRequest(forNode(base, node, { home: hello.home, sysfs }), {
            ...snapshotFlag(options, base.cwd),
            versions: true,
            docker: tools.docker,
          }),
        {
          tools,
          env: io.env,
          timeoutMs: options.nodeTimeoutMs ?? DEFAULT_NODE_TIMEOUT_MS,
          scratch: join(scratch, `node${n.rank}`),
        },
      );
      if (!got.ok) return { node, unreachable: got.unreachable, sysfs, notes: [] };
      return { node, view: nodeView(got.facts, got.request), sysfs: got.sysfsRoot ?? sysfs, notes: got.notes };
    }),
  );
}

/** The model family from config.json (this machine's snapshot, else a node's), else the model id. */
async function settleFamily(ctx: PreflightContext): Promise<void> {
  const config = await ctx.modelConfig().catch(() => undefined);
  const family = config ? configFamily(config.raw) : undefined;
  if (family) {
    ctx.family = family;
    ctx.familyFrom = 'config.json';
  }
}

/** The contexts file rules run in: one per node environment (a node's [nodes.env] may differ). */
function fileContexts(base: PreflightContext): PreflightContext[] {
  if (base.mode === 'cluster') {
    return (base.placement?.nodes ?? []).map((n) =>
      forNode(base, { rank: n.rank, host: n.host, how: 'cluster file' }, { home: base.home, sysfs: base.sysfs }),
    );
  }
  const one = base.checked[0];
  return [one ? forNode(base, one.node, { home: base.home, sysfs: base.sysfs }) : base];
}

/**
 * The rules that apply but cannot run in this mode. With --local: the cluster rules (they
 * compare the nodes' facts, and there is one node), and the rules that read every node's
 * fabric address when none are known (a sparkrun cluster, whose nodes --local does not ask).
 */
export function uncheckedRules(ctx: PreflightContext, rules: readonly Rule[]): UncheckedRule[] {
  if (ctx.mode === 'cluster') return [];
  const noAddresses = ctx.cluster !== undefined && !hasFabricAddresses(ctx.cluster);
  return rules.flatMap((r): UncheckedRule[] => {
    if (r.scope === 'cluster') return [{ rule: r.id, why: 'compares-nodes' }];
    if (r.needsFabricAddresses && noAddresses) return [{ rule: r.id, why: 'fabric-addresses' }];
    return [];
  });
}

/** `rules` is for tests; the CLI runs every rule (preflightRules). */
export async function runPreflight(
  options: PreflightOptions,
  io: Io,
  given?: readonly Rule[],
): Promise<PreflightReport> {
  const began = performance.now();
  const rules = given ?? (await preflightRules());
  validatePatterns(options.only, '--only', rules);
  validatePatterns(options.skip, '--skip', rules);
  const ctx = await buildContext(options, io);
  const scratch = ctx.mode === 'cluster' ? mkdtempSync(join(tmpdir(), 'spark-preflight-')) : undefined;
  try {
    ctx.checked =
      scratch !== undefined ? await checkNodes(ctx, options, io, scratch) : await checkThisNode(ctx, options);
    await settleFamily(ctx);
    return await runRules(ctx, options, rules, began);
  } finally {
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  }
}

async function runRules(
  ctx: PreflightContext,
  options: PreflightOptions,
  rules: readonly Rule[],
  began: number,
): Promise<PreflightReport> {
  const applicable = rules.filter((r) => appliesTo(r, ctx) && !ruleSelected(r.id, options.skip ?? []));
  ctx.unchecked = uncheckedRules(ctx, applicable);
  const wanted = applicable.filter((r) => options.only === undefined || ruleSelected(r.id, options.only));
  const selected = wanted.filter((r) => !ctx.unchecked.some((u) => u.rule === r.id));
  const findings: Finding[] = [];
  const seen = new Set<string>();
  const ran = new Set<string>();
  // A cluster rule under --local is no loss (there is one node), as before; a rule that lacks
  // the fabric addresses is one that would have run, so the report says why it did not.
  const skipped: PreflightReport['skipped'] = ctx.unchecked
    .filter((u) => u.why === 'fabric-addresses' && wanted.some((r) => r.id === u.rule))
    .map((u) => ({ rule: u.rule, reason: UNCHECKED_REASON[u.why] }));
  const add = (f: Finding) => {
    const key = JSON.stringify([f.rule, f.severity, f.message, f.where, f.node]);
    if (!seen.has(key)) findings.push(f);
    seen.add(key);
  };
  const reachable = ctx.checked.filter((c) => c.view);
  let bug: SparkError | undefined;
  await Promise.all(
    selected.map(async (rule) => {
      if (rule.scope === 'local-node') {
        if (reachable.length === 0) {
          const why =
            ctx.mode === 'cluster'
              ? 'no node answered (see nodes.reachable)'
              : `this host is not a node of ${ctx.cluster?.file}: run preflight without --local to check every node, or pass --node-rank`;
          skipped.push({ rule: rule.id, reason: why });
          return;
        }
        for (const c of reachable) {
          const ref: NodeRef = { rank: c.node.rank, host: c.node.host };
          const o = await checkRule(
            rule,
            forNode(ctx, c.node, { home: c.view!.facts.home, sysfs: c.sysfs, view: c.view! }),
          );
          if ('bug' in o) bug ??= internalError(rule, o.bug);
          else if ('skip' in o) skipped.push({ rule: rule.id, reason: o.skip, node: ref });
          else {
            ran.add(rule.id);
            for (const f of o.findings) add(f.node ? f : { ...f, node: ref });
          }
        }
        return;
      }
      const contexts = rule.scope === 'files' ? fileContexts(ctx) : [ctx];
      const outcomes = await Promise.all(contexts.map((c) => checkRule(rule, c)));
      const failed = outcomes.find((o): o is { bug: unknown } => 'bug' in o);
      if (failed) {
        bug ??= internalError(rule, failed.bug);
        return;
      }
      const done = outcomes.filter((o): o is { findings: Finding[] } => 'findings' in o);
      if (done.length === 0) {
        skipped.push({ rule: rule.id, reason: (outcomes[0] as { skip: string }).skip });
        return;
      }
      ran.add(rule.id);
      for (const o of done) for (const f of o.findings) add(f);
    }),
  );
  if (bug) throw bug;
  return preflightReport(ctx, { rules, selected, findings, skipped, ran, began });
}

/** The report: findings by severity then rule order, counts, every node and what ran or was skipped. */
function preflightReport(
  ctx: PreflightContext,
  r: {
    rules: readonly Rule[];
    selected: Rule[];
    findings: Finding[];
    skipped: PreflightReport['skipped'];
    ran: Set<string>;
    began: number;
  },
): PreflightReport {
  const { rules, selected, findings, skipped, ran, began } = r;
  // Stable: by severity, then rule order, then as each rule listed them.
  const order = new Map(rules.map((r, i) => [r.id, i]));
  findings.sort((a, b) => ORDER[a.severity] - ORDER[b.severity] || order.get(a.rule)! - order.get(b.rule)!);
  skipped.sort((a, b) => order.get(a.rule)! - order.get(b.rule)!);
  const counts: Record<Severity, number> = { error: 0, warn: 0, info: 0 };
  for (const f of findings) counts[f.severity]++;
  const src = ctx.snapshotSource() ?? headSnapshot(ctx);
  const local = ctx.mode === 'local' ? ctx.checked[0] : undefined;
  return {
    recipe: ctx.recipe.file,
    engine: ctx.recipe.engine,
    stack: engineFamilyOf(ctx.recipe, ctx.family),
    family: { name: ctx.family, from: ctx.familyFrom },
    world: ctx.world,
    cluster: ctx.cluster?.file ?? null,
    mode: ctx.mode,
    node: local ? { rank: local.node.rank, host: local.node.host } : null,
    nodes: ctx.checked.map((c) => ({
      rank: c.node.rank,
      host: c.node.host,
      via: c.view?.facts.via ?? null,
      ...(c.unreachable !== undefined ? { unreachable: c.unreachable } : {}),
      notes: c.notes,
    })),
    snapshot: src ? { dir: src.dir, how: src.how } : null,
    findings,
    counts,
    ran: selected.map((r) => r.id).filter((id) => ran.has(id)),
    skipped,
    seconds: (performance.now() - began) / 1000,
  };
}

/** The snapshot the head (else the first node) reported, when this machine has none. */
function headSnapshot(ctx: PreflightContext): { dir: string; how: string } | undefined {
  const c = ctx.checked.find((x) => x.view?.facts.snapshot);
  return c ? { dir: c.view!.facts.snapshot!.dir, how: `node ${c.node.rank} (${c.node.host})` } : undefined;
}
