// Preflight: checks a recipe (with its cluster and env files, the snapshot and every node, over
// ssh) against the failures that otherwise show up minutes into a boot. Rules: docs/preflight.md.
export { runPreflight, ruleSelected, appliesTo, DEFAULT_NODE_TIMEOUT_MS } from './runner.js';
export type { PreflightReport } from './runner.js';
export { buildContext, clusterMode } from './context.js';
export type { PreflightOptions } from './context.js';
export { formatReport } from './report.js';
export { RULES } from './rules/index.js';
export { identifyNode, nodeLabel } from './node.js';
export type {
  Finding,
  Severity,
  NodeRef,
  Rule,
  RuleMeta,
  RuleOutcome,
  RuleScope,
  PreflightContext,
  LocalNode,
  CheckedNode,
} from './types.js';
export type { NodeFacts, FactsRequest } from './facts/types.js';
export { SEVERITIES } from './types.js';
export type { SnapshotFacts, SnapshotSource } from './sources.js';
