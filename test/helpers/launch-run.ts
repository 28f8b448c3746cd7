// spark launch on four fake nodes (helpers/fake-node.ts): the cluster, the flags that make a
// launch fast, what the fake docker received, and a launch expected to fail.
import { cli, type CliRun } from './cli.js';
import { healthServer } from './health-server.js';
import { fakeNodes, type Behavior, type FakeCall } from './fake-node.js';
import { AIDEN16, REV, writeCluster } from './launch-files.js';

export interface LaunchDoc {
  nodes: { rank: number; host: string; argv: string[]; env: Record<string, string>; container: string }[];
  healthy: boolean;
}

export const HOSTS4 = ['n1', 'n2', 'n3', 'n4'];
export const cluster4 = () =>
  writeCluster({
    name: 'fake4',
    hosts: HOSTS4,
    fabric: ['192.168.200.11', '192.168.200.12', '192.168.200.13', '192.168.200.14'],
    hfCache: '/nonexistent/hf',
  });
export const FAST = ['--revision', REV, '--interval', '0.05', '--timeout', '120'];
// The fake nodes hold none of the recipes' files, so preflight (which now asks every node)
// finds errors on them; the launches here are about what happens after it, hence --force.
// preflight-cluster.test.ts checks nodes that pass.
export const FORCED = [...FAST, '--force'];

export const runs = (calls: FakeCall[]) => calls.filter((c) => c.prog === 'docker' && c.argv[0] === 'run');
export const byHost = (calls: FakeCall[], sub: string) =>
  new Map(calls.filter((c) => c.prog === 'docker' && c.argv[0] === sub).map((c) => [c.host, c]));

/** A launch on the four nodes of cluster4() whose /health never answers 200: its result and the calls made. */
export async function failing(
  behavior: Behavior,
  extra: string[] = [],
  during?: (fake: ReturnType<typeof fakeNodes>) => Promise<void>,
) {
  const fake = fakeNodes();
  const health = await healthServer(-1);
  try {
    const pending = cli(
      ['launch', AIDEN16, '--cluster', cluster4(), '--health-url', health.url, ...FORCED, ...extra],
      fake.env(behavior),
    );
    if (during) await during(fake);
    const r: CliRun = await pending;
    return { r, calls: fake.calls() };
  } finally {
    await health.close();
  }
}
