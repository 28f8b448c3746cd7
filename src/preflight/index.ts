// Preflight: checks a recipe (with its cluster and env files, the snapshot and every node, over
// ssh) against the failures that otherwise show up minutes into a boot. Rules: docs/preflight.md.
export { runPreflight, ruleSelected, appliesTo, DEFAULT_NODE_TIMEOUT_MS } from './runner.js';
export type { PreflightReport } from './runner.js';
export { buildContext, clusterMode } from './context.js';
export type { PreflightOptions } from './context.js';
export { formatReport } from './report.js';
export { preflightRules } from './rules/index.js';
export { identifyNode, nodeLabel } from '../preflight-api/node.js';
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
} from '../preflight-api/types.js';
export type { NodeFacts, FactsRequest } from '../preflight-api/node-facts.js';
export { SEVERITIES } from '../preflight-api/types.js';
export type { SnapshotFacts, SnapshotSource } from '../preflight-api/types.js';
