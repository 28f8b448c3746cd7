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
import type { ParallelShape, Placement } from '../recipes/index.js';
import type { NodeView } from './view.js';
import type { ReaderDirRequest } from './node-facts.js';

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
  /** Only the recipe, cluster and env files (and each node's environment from them). */
  | 'files'
  /** The model's config.json. */
  | 'snapshot'
  /** One node's filesystem, devices, ports or snapshot: runs once per node, on its facts. */
  | 'local-node'
  /** Every node at once: what must agree across the cluster. */
  | 'cluster';

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
  /**
   * The rule reads every node's fabric address: with --local, a sparkrun cluster (which stores
   * none, and whose nodes are then not asked) leaves it unable to run.
   */
  needsFabricAddresses?: boolean;
}

/** A rule that applies but cannot run in this run's mode, and why (see runner.ts, uncheckedRules). */
export interface UncheckedRule {
  rule: string;
  /** `compares-nodes`: a cluster rule under --local; `fabric-addresses`: no fabric addresses are known. */
  why: 'compares-nodes' | 'fabric-addresses';
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
  how: '--node-rank' | 'NODE_RANK' | 'hostname' | 'address' | 'no cluster file' | 'cluster file';
}

/** A node preflight looked at: its facts, or why it could not reach it. */
export interface CheckedNode {
  node: LocalNode;
  view?: NodeView;
  /** Why the node gave no facts (ssh failed, no answer in time). */
  unreachable?: string;
  /** The sysfs root its rules read: this machine's, or the node's rebuilt here. */
  sysfs: string;
  /** How its facts were gathered, and anything worth knowing about that. */
  notes: string[];
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
  /** Where the family came from: the checkpoint's config.json, else the recipe's model id. */
  familyFrom: 'config.json' | 'model id';
  /** Ranks = nodes: required_nodes. */
  world: number;
  /** tp and pp, as the launcher computes them. */
  shape: ParallelShape;
  /** The nodes that run the recipe (with a cluster file). */
  placement?: Placement;
  /** `local`: this machine only; `cluster`: every node over ssh. */
  mode: 'local' | 'cluster';
  /** The node a node rule looks at; undefined when a cluster file is given and this host is not in it. */
  node?: LocalNode;
  /** That node's facts (node rules only). */
  view?: NodeView;
  /** Every node looked at (cluster rules). */
  checked: CheckedNode[];
  /** The rules that apply but cannot run in this mode (set by the runner before any rule runs). */
  unchecked: UncheckedRule[];
  /** --pack-dir: where this node's pack is (or will be) written. */
  packDir?: string;
  /** sysfs root (default /sys). */
  sysfs: string;
  /** Home directory for `~` in host paths. */
  home: string;
  cwd: string;
  /** A container path as a host path on this node, through the recipe's mounts and hf_cache. */
  toHost(containerPath: string): HostPath | undefined;
  /** The snapshot to read config.json from on this machine, if one resolves here. */
  snapshotSource(): SnapshotSource | undefined;
  /** The model's config.json: from this machine's snapshot, else from a node's. */
  modelConfig(): Promise<ModelConfig | undefined>;
  /** The files whose presence makes a directory a node-local copy (each copy format's manifest). */
  copyManifests: readonly string[];
  /** What each serving stack adds: the rules are run from the rule list, the reader directories asked of each node. */
  stacks: readonly StackPreflight[];
}

export interface SnapshotSource {
  /** Host directory (or single .safetensors file). */
  dir: string;
  /** How it was found: the --snapshot flag, the snapshot `spark launch` resolved and serves,
   *  the recipe's SPARK_ENGRAM_DIR through its mounts, or the model id under the cluster's
   *  hf_cache (refs/main, else its only snapshot). */
  how: '--snapshot' | 'launch' | 'SPARK_ENGRAM_DIR' | 'hf_cache';
}

/** What the snapshot rules need from an opened snapshot. */
export interface SnapshotFacts {
  dir: string;
  revision?: string;
  shards: number;
  engram: { layer: number; rows: number; dim: number; rowBytes: number }[];
}

/**
 * What a serving stack adds to preflight (its room's `preflight` entry): the rules only it
 * needs, and the directory its reader opens files from, which each node then reports.
 */
export interface StackPreflight {
  /** Its rules, each group run (and listed in the report and docs) after the preflight rule it names. */
  rules: readonly { after: string; rules: readonly Rule[] }[];
  /** The stack's reader directory on this node, as the recipe sets it; undefined when it sets none. */
  readerDir?(ctx: PreflightContext): ReaderDirRequest | undefined;
}
