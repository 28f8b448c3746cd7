// Every preflight rule, in the order the report and docs/preflight.md list them.
import type { Rule } from '../types.js';
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
import {
  identity as miaIdentity,
  oDirect as miaODirect,
  packs as miaPacks,
  residentScales as miaResidentScales,
} from './mia.js';
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

export const RULES: readonly Rule[] = [
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
  miaPacks,
  miaODirect,
  miaResidentScales,
  miaIdentity,
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
