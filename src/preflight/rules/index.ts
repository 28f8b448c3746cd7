// Every preflight rule, in the order the report and docs/preflight.md list them: preflight's
// own, with each serving stack's rules (its room's `preflight` entry) after the rule each
// group names.
import type { Rule, StackPreflight } from '../../preflight-api/types.js';
import { stackPreflights } from '../../stacks/registry.js';
import { expandableSegments } from './alloc.js';
import { jsonValue, launcherOwned } from './args.js';
import { fabricRange, localOnly } from './cluster.js';
import { sglangGraphBs, vllmCapture } from './cudagraph.js';
import { shmSize } from './docker.js';
import {
  abi as engineLibAbi,
  file as engineLibFile,
  loads as engineLibLoads,
  sameBuild as engineLibSameBuild,
} from './engine-lib.js';
import { gid, hca, socketIfname } from './fabric.js';
import { composeOnly, swallowedKey, undefinedVariable, unknownKey } from './files.js';
import { utilizationCeiling } from './memory.js';
import { contextLength, snapshotMatches } from './model.js';
import { fileIsDirectory, hostPaths } from './mounts.js';
import { clockSkew, reachable, sameImage, sameSpark, sameVersions } from './nodes.js';
import { sparkVersion } from './spark-version.js';
import { freeSpace, manifest } from './pack.js';
import { epSize, nodes, tpDivides } from './parallel.js';
import { ports } from './ports.js';
import { route, subnet } from './rendezvous.js';
import { defaultsReach, notRun } from './sparkrun.js';
import { complete, engramTables, sameRevision } from './snapshot.js';

/** Preflight's own rules: what every stack shares. */
const OWN_RULES: readonly Rule[] = [
  // the files
  swallowedKey,
  unknownKey,
  undefinedVariable,
  composeOnly,
  notRun,
  defaultsReach,
  jsonValue,
  launcherOwned,
  // the stack
  vllmCapture,
  sglangGraphBs,
  utilizationCeiling,
  expandableSegments,
  shmSize,
  nodes,
  epSize,
  fabricRange,
  subnet,
  localOnly,
  // the model
  tpDivides,
  contextLength,
  snapshotMatches,
  // each node
  complete,
  engramTables,
  freeSpace,
  manifest,
  hostPaths,
  fileIsDirectory,
  engineLibFile,
  engineLibAbi,
  engineLibLoads,
  hca,
  gid,
  socketIfname,
  ports,
  // across the nodes
  reachable,
  route,
  sameImage,
  sameVersions,
  sameSpark,
  sparkVersion,
  sameRevision,
  engineLibSameBuild,
  clockSkew,
];

/** Every rule: preflight's own with each stack's (registry order) in their place. */
export async function preflightRules(): Promise<readonly Rule[]> {
  return withStackRules(OWN_RULES, await stackPreflights());
}

/** `own` with each stack's groups of rules after the rule each names; a name that is no rule of `own` is a bug. */
export function withStackRules(own: readonly Rule[], stacks: readonly StackPreflight[]): Rule[] {
  const after = new Map<string, Rule[]>();
  for (const group of stacks.flatMap((s) => s.rules)) {
    if (!own.some((r) => r.id === group.after))
      throw new Error(`a stack's preflight rules follow '${group.after}', which is no preflight rule`);
    after.set(group.after, [...(after.get(group.after) ?? []), ...group.rules]);
  }
  return own.flatMap((r) => [r, ...(after.get(r.id) ?? [])]);
}
