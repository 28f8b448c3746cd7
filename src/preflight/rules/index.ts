// Every preflight rule, in the order the report and docs/preflight.md list them: preflight's
// own, with each serving stack's rules (its room's `preflight` entry) after the copy rules
// they build on.
import type { Rule } from '../../preflight-api/types.js';
import { stackPreflights } from '../../stacks/registry.js';
import { expandableSegments } from './alloc.js';
import { jsonValue, launcherOwned } from './args.js';
import { fabricRange, localOnly } from './cluster.js';
import { sglangGraphBs, vllmCapture } from './cudagraph.js';
import { shmSize } from './docker.js';
import { rangesSource, rangesTile } from './engram.js';
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
import { rowsGrammar } from './rows-grammar.js';
import { defaultsReach, notRun } from './sparkrun.js';
import { complete, engramDir, engramTables, sameRevision } from './snapshot.js';

/** Preflight's own rules up to the node-local copy's, which the stacks' rules build on. */
const BEFORE_STACKS: readonly Rule[] = [
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
  rowsGrammar,
  rangesTile,
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
  engramDir,
  rangesSource,
  freeSpace,
  manifest,
];

/** Preflight's own rules after the stacks': the node's mounts, libraries and fabric, then across the nodes. */
const AFTER_STACKS: readonly Rule[] = [
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

/** Every rule, with the stacks' in their place. */
export async function preflightRules(): Promise<readonly Rule[]> {
  const own = (await stackPreflights()).flatMap((s) => s.rules);
  return [...BEFORE_STACKS, ...own, ...AFTER_STACKS];
}
