// spark launch: recipe + cluster file -> one container per node, started over ssh; and
// node-local work (pack, verify) fanned out to every node. Reference: docs/launch.md.
export { buildPlan, checkedNamePrefix, containerPrefix, urlHost } from './plan.js';
export { containerFlags, CONTAINER_FLAGS } from '../recipes/index.js';
export type { LaunchPlan, NodePlan, PlanInput, PlanOptions } from './plan.js';
export { engineArgs, isServeCommand, recipeModelArg } from '../recipes/engine-args.js';
export type { NodeTopology, EngineArgs } from '../recipes/engine-args.js';
export { resolveSnapshot, recipeRevision, revisionInPath, readLocalText } from './snapshot.js';
export type { ModelSnapshot, ReadText, ResolveOptions } from './snapshot.js';
export { shQuote, shJoin, shLines } from '../remote/shell.js';
export {
  toolsFromEnv,
  nodeCommand,
  nodeArgv,
  isLocalHost,
  capture,
  killGroup,
  DEFAULT_SSH_OPTIONS,
} from '../remote/ssh.js';
export type { Tools, Captured } from '../remote/ssh.js';
export { startFanOut, fanOut, describeEnd, nodePrefix } from '../remote/node-jobs.js';
export type { NodeJob, NodeJobResult, FanOutOptions, FanOutRun } from '../remote/node-jobs.js';
export { waitForHealth, probe, formatDuration } from './health.js';
export type { HealthOptions, HealthResult } from './health.js';
export { planDryRun, runLaunch, startCommandLine } from './run-launch.js';
export type { LaunchRequest, LaunchResult } from './run-launch.js';
export { prepareLaunch, loadInputs } from './prepare.js';
export type { PlanRequest, LaunchInputs, NodeFacts } from './prepare.js';
export { askNodesFacts, thisMachineFacts } from './facts.js';
export type { AskRequest } from './facts.js';
export { stopArgv, stopCommand, stopContainers, stopTargets, describeStops, stopFailure } from './stop.js';
export type { StopTarget, StopOutcome } from './stop.js';
export { gidQuery, probeGids, probeHomes } from './probe.js';
export { runNodeTasks, nodeTaskArgv } from './node-tasks.js';
export type { NodeTaskKind, NodeTaskRequest, NodeTaskOutcome, NodeTaskReport } from './node-tasks.js';
export { planJson, formatPlan } from './format.js';
