// Helpers every rule module uses: building findings and naming where they point.
import { at, ENGINES, type ArgFlag, type Engine, type EnvValue, type RecipeField } from '../recipes/index.js';
import { nodeLabel } from './node.js';
import type { Finding, PreflightContext, Rule, RuleMeta, Severity, UncheckedRule } from './types.js';

/** A rule as its module writes it: `engines` may be left out when the rule holds on every engine. */
export type RuleInput = Omit<Rule, 'engines'> & { engines?: readonly Engine[] };

export function defineRule(rule: RuleInput): Rule {
  return Object.assign(rule, { engines: rule.engines ?? ENGINES });
}

export interface FindingInput {
  message: string;
  where: string;
  fix?: string;
  severity?: Severity;
  node?: Finding['node'];
}

/** A finding of `rule`, with the rule's severity and fix unless given. */
export function finding(rule: Pick<RuleMeta, 'id' | 'severity' | 'fix'>, f: FindingInput): Finding {
  const out: Finding = {
    rule: rule.id,
    severity: f.severity ?? rule.severity,
    message: f.message,
    where: f.where,
    fix: f.fix ?? rule.fix,
  };
  if (f.node) out.node = f.node;
  return out;
}

/** `recipe.toml:LINE` of the key that writes a field of the recipe. */
export function whereField(ctx: PreflightContext, field: RecipeField): string {
  return at(ctx.recipe.file, ctx.recipe.locate(field));
}

/** `recipe.toml:LINE` of a flag inside args. */
export function whereArg(ctx: PreflightContext, flag: ArgFlag): string {
  return at(ctx.recipe.file, ctx.recipe.locate('args', flag.index));
}

/** `file:LINE` of the env value that won (recipe, cluster file or env file). */
export function whereEnv(value: EnvValue): string {
  return at(value.file, value.line);
}

/** Which source set an env value, for messages: `[env]`, `the cluster's [nccl]`, `the env file`. */
export function envSourceName(value: EnvValue): string {
  if (value.source === 'node') return "the node's [nodes.env]";
  return value.source === 'recipe'
    ? "the recipe's [env]"
    : value.source === 'cluster'
      ? "the cluster's [nccl]"
      : 'the env file';
}

/** `node 0 (spark1)` for the local node. */
export function whereNode(ctx: PreflightContext): string {
  return ctx.node ? nodeLabel(ctx.node) : 'this node';
}

/** Why a rule that applies could not run in this mode, in the report's words. */
export const UNCHECKED_REASON: Record<UncheckedRule['why'], string> = {
  'compares-nodes': 'it compares the nodes, and --local checks this node only',
  'fabric-addresses': "it needs every node's fabric address: sparkrun stores none, and --local asks no other node",
};
