// The vocabulary of preflight: findings, rules and what a rule may look at.
import type {
  Cluster,
  ClusterNode,
  EffectiveEnv,
  Engine,
  EnvFile,
  FileDiagnostic,
  HostPath,
  ModelFamily,
  ParsedArgs,
  Recipe,
} from '../recipes/index.js';
import type { ModelConfig } from '../engram/config.js';
import type { SparkError } from '../errors.js';
import type { SnapshotFacts, SnapshotSource } from './sources.js';

export type Severity = 'error' | 'warn' | 'info';
export const SEVERITIES: readonly Severity[] = ['error', 'warn', 'info'];

/** The node a finding is about. */
export interface NodeRef {
  /** Rank in the cluster file; null when unknown (no cluster file and no --node-rank). */
  rank: number | null;
  host: string;
}

/** One problem (or note) found. The JSON form is exactly this object. */
export interface Finding {
  rule: string;
  severity: Severity;
  message: string;
  /** `file:line` of the key concerned, or the node (`node 1 (spark2)`), or a path. */
  where: string;
  fix: string;
  /** Set for findings about one node's filesystem, devices or ports. */
  node?: NodeRef;
}

/** What a rule looks at and which nodes it concerns. */
export type RuleScope =
  /** Only the recipe, cluster and env files: the same answer on every node. */
  | 'files'
  /** config.json or the snapshot's headers. */
  | 'snapshot'
  /** This node's filesystem, devices or ports: runs on the node it is about. */
  | 'local-node';

export interface RuleMeta {
  /** `family.name`, e.g. `engram.ranges-tile`. */
  id: string;
  /** One line: what the rule checks. */
  title: string;
  engines: readonly Engine[];
  /** Model families the rule applies to; undefined = every family. */
  families?: readonly ModelFamily[];
  /** The severity of its main finding. */
  severity: Severity;
  /** Lower-severity findings the rule also makes, in a sentence. */
  also?: string;
  /** Where the rule comes from: a seed file, a field report, an engine's behaviour. */
  evidence: string;
  /** The usual fix. */
  fix: string;
  scope: RuleScope;
}

/** A rule's answer: its findings (none = pass), or why it could not run here. */
export type RuleOutcome = Finding[] | { skip: string };

export interface Rule extends RuleMeta {
  check(ctx: PreflightContext): RuleOutcome | Promise<RuleOutcome>;
}

/** This node, when known: its rank (if any) and cluster entry (if any). */
export interface LocalNode extends NodeRef {
  clusterNode?: ClusterNode;
  /** How it was identified. */
  how: '--node-rank' | 'NODE_RANK' | 'hostname' | 'address' | 'no cluster file';
}

export interface PreflightContext {
  recipe: Recipe;
  recipeDiagnostics: FileDiagnostic[];
  cluster?: Cluster;
  clusterDiagnostics: FileDiagnostic[];
  envFile?: EnvFile;
  /** Container environment: cluster [nccl] < recipe [env] < --env file. */
  env: EffectiveEnv;
  args: ParsedArgs;
  family: ModelFamily;
  /** Ranks = nodes: required_nodes. */
  world: number;
  /** This node; undefined when a cluster file is given and this host is not in it. */
  node?: LocalNode;
  /** --pack-dir: where this node's pack is (or will be) written. */
  packDir?: string;
  /** sysfs root (default /sys). */
  sysfs: string;
  /** Home directory for `~` in host paths. */
  home: string;
  cwd: string;
  /** A container path as a host path on this node, through the recipe's mounts and hf_cache. */
  toHost(containerPath: string): HostPath | undefined;
  /** The snapshot to read config.json (and headers) from, if one resolves on this node. */
  snapshotSource(): SnapshotSource | undefined;
  modelConfig(): Promise<ModelConfig | undefined>;
  /** The snapshot's headers, read once; an error when they do not validate. */
  snapshot(): Promise<{ facts: SnapshotFacts } | { error: SparkError } | undefined>;
}
