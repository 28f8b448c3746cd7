// Runs the rules that apply to a recipe and collects one report.
import type { Io } from '../io.js';
import { SparkError, toSparkError, usageError } from '../errors.js';
import { stackOf } from '../recipes/index.js';
import { buildContext, type PreflightOptions } from './context.js';
import { RULES } from './rules/index.js';
import type { Finding, NodeRef, PreflightContext, Rule, Severity } from './types.js';

export interface PreflightReport {
  recipe: string;
  engine: string;
  stack: string;
  world: number;
  cluster: string | null;
  /** The node the node-local rules ran on; null when this host is not in the cluster. */
  node: NodeRef | null;
  snapshot: { dir: string; how: string } | null;
  findings: Finding[];
  counts: Record<Severity, number>;
  /** Rule ids that ran. */
  ran: string[];
  /** Rules that apply but could not run here, and why. */
  skipped: { rule: string; reason: string }[];
  seconds: number;
}

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

/** `rules` is for tests; the CLI runs RULES. */
export async function runPreflight(options: PreflightOptions, io: Io, rules: readonly Rule[] = RULES): Promise<PreflightReport> {
  const began = performance.now();
  validatePatterns(options.only, '--only', rules);
  validatePatterns(options.skip, '--skip', rules);
  const ctx = await buildContext(options, io);
  const selected = rules.filter(
    (r) =>
      appliesTo(r, ctx) &&
      (options.only === undefined || ruleSelected(r.id, options.only)) &&
      !ruleSelected(r.id, options.skip ?? []),
  );
  const skipped: PreflightReport['skipped'] = [];
  const ran: string[] = [];
  const nodeRef: NodeRef | null = ctx.node ? { rank: ctx.node.rank, host: ctx.node.host } : null;
  const outcomes = await Promise.all(
    selected.map(async (rule) => {
      if (rule.scope === 'local-node' && !ctx.node) {
        return { rule, skip: `this host is not a node of ${ctx.cluster?.file}: run preflight there, or pass --node-rank` };
      }
      try {
        const outcome = await rule.check(ctx);
        return Array.isArray(outcome) ? { rule, findings: outcome } : { rule, skip: outcome.skip };
      } catch (err) {
        // One rule that cannot read what it needs (EACCES on a mount, a malformed config.json)
        // must not hide the others' findings; it is reported as not checked, with the reason.
        // A bug is not "not checked": a green report would hide it.
        if (!isEnvironmentError(err)) return { rule, bug: err };
        return { rule, skip: `could not check: ${toSparkError(err).message.split('\n')[0]}` };
      }
    }),
  );
  const bug = outcomes.find((o) => o.bug !== undefined);
  if (bug) {
    const message = bug.bug instanceof Error ? bug.bug.message : String(bug.bug);
    throw new SparkError(
      'E_INTERNAL',
      `preflight rule ${bug.rule.id} failed with an internal error (a bug in spark; please report it): ` +
        `${message.split('\n')[0]}; --skip ${bug.rule.id} runs the other rules`,
      { rule: bug.rule.id },
    );
  }
  const findings: Finding[] = [];
  for (const o of outcomes) {
    if (o.skip !== undefined) {
      skipped.push({ rule: o.rule.id, reason: o.skip });
      continue;
    }
    ran.push(o.rule.id);
    for (const f of o.findings ?? []) {
      if (o.rule.scope !== 'files' && nodeRef && !f.node) f.node = nodeRef;
      findings.push(f);
    }
  }
  // Stable: by severity, then rule order, then as each rule listed them.
  findings.sort((a, b) => ORDER[a.severity] - ORDER[b.severity]);
  const counts: Record<Severity, number> = { error: 0, warn: 0, info: 0 };
  for (const f of findings) counts[f.severity]++;
  const src = ctx.snapshotSource();
  return {
    recipe: ctx.recipe.file,
    engine: ctx.recipe.engine,
    stack: stackOf(ctx.recipe),
    world: ctx.world,
    cluster: ctx.cluster?.file ?? null,
    node: nodeRef,
    snapshot: src ? { dir: src.dir, how: src.how } : null,
    findings,
    counts,
    ran,
    skipped,
    seconds: (performance.now() - began) / 1000,
  };
}
