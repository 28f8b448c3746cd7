// Stopping a launch's containers on every node (`spark launch --stop`, and after a failed
// launch). `docker stop` keeps the stopped container, so `docker logs` still shows why a boot
// failed; the next launch removes it before starting a new one.
import { SparkError } from '../errors/errors.js';
import type { Cluster } from '../recipes/index.js';
import { fanOut, type NodeJobResult } from '../remote/node-jobs.js';
import { checkedNamePrefix, containerName, containerPrefix } from './plan.js';
import { nodeArgv, type Tools } from '../remote/ssh.js';
import { shJoin } from '../remote/shell.js';

export interface StopTarget {
  rank: number;
  host: string;
  container: string;
}

export interface StopOutcome extends StopTarget {
  status: 'stopped' | 'not found' | 'failed';
  message?: string;
}

export function stopTargets(cluster: Cluster, namePrefix?: string): StopTarget[] {
  const prefix = namePrefix === undefined ? containerPrefix(cluster.name) : checkedNamePrefix(namePrefix);
  return cluster.nodes.map((n) => ({ rank: n.rank, host: n.host, container: containerName(prefix, n.rank) }));
}

function outcome(target: StopTarget, r: NodeJobResult): StopOutcome {
  if (r.code === 0) return { ...target, status: 'stopped' };
  const text = r.tail.join('\n');
  if (/no such container/i.test(text)) return { ...target, status: 'not found' };
  const message = r.tail.at(-1)?.trim() || (r.signal ? `killed by ${r.signal}` : `exit ${r.code}`);
  return { ...target, status: 'failed', message };
}

/** The local argv that stops one target's container (run by stopContainers, shown by a dry run). */
export function stopArgv(target: StopTarget, tools: Tools): string[] {
  return nodeArgv(target.host, [tools.docker, 'stop', target.container], tools);
}

/** `docker stop <name>` on each target at once; output is streamed with node prefixes. */
export async function stopContainers(
  targets: readonly StopTarget[],
  tools: Tools,
  env: NodeJS.ProcessEnv,
  write: (text: string) => void,
): Promise<StopOutcome[]> {
  const jobs = targets.map((t) => ({ rank: t.rank, host: t.host, argv: stopArgv(t, tools) }));
  // docker stop prints the name it stopped on stdout: keep it out of the stream.
  const results = await fanOut(jobs, { env, write, captureStdout: true });
  return targets.map((t, i) => outcome(t, results[i]!));
}

/** The command a person pastes to stop a launch's containers, quoted for sh. */
export function stopCommand(clusterFile: string, namePrefix?: string): string {
  return shJoin([
    'spark',
    'launch',
    '--stop',
    '--cluster',
    clusterFile,
    ...(namePrefix === undefined ? [] : ['--name', namePrefix]),
  ]);
}

/** "nodes 0, 1, 3" */
export function nodeList(ranks: readonly number[]): string {
  return ranks.length === 1 ? `node ${ranks[0]}` : `nodes ${ranks.join(', ')}`;
}

/** A sentence about a cleanup, for error messages. */
export function describeStops(outcomes: readonly StopOutcome[]): string {
  const stopped = outcomes.filter((o) => o.status !== 'failed').map((o) => o.rank);
  const failed = outcomes.filter((o) => o.status === 'failed');
  const parts: string[] = [];
  if (stopped.length > 0) parts.push(`stopped the containers on ${nodeList(stopped)}`);
  for (const f of failed) parts.push(`could not stop ${f.container} on node ${f.rank} (${f.host}): ${f.message}`);
  return parts.join('; ');
}

export function stopFailure(outcomes: readonly StopOutcome[]): SparkError | undefined {
  const failed = outcomes.filter((o) => o.status === 'failed');
  if (failed.length === 0) return undefined;
  const list = failed.map((f) => `node ${f.rank} (${f.host}): ${f.message}`).join('; ');
  return new SparkError(
    'E_NODE_FAILED',
    `could not stop ${failed.length} container(s): ${list}; check ssh and docker on those nodes`,
    {
      nodes: outcomes,
    },
  );
}
