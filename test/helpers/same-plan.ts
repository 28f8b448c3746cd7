// `spark launch --dry-run` against `spark launch` on fake nodes, for
// test/launch/launch-same-plan.test.ts and test/long/launch-same-plan-flags.test.ts: the dry
// run's plan, then a launch of the same inputs, and the check that each node's docker received
// exactly what the dry run printed.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from './cli.js';
import { fakeNodes, type FakeCall } from './fake-node.js';
import { healthServer } from './health-server.js';
import { hfCacheWith, writeCluster } from './launch-files.js';
import { tempDir } from './tmp.js';
import { readRecipe } from '../../src/recipes/index.js';
import { shJoin } from '../../src/remote/shell.js';

export interface NodeDoc {
  rank: number;
  host: string;
  argv: string[];
  env: Record<string, string>;
  container: string;
  commandLine: string;
}
export interface PlanDoc {
  nodes: NodeDoc[];
  notes: string[];
  model: { revision?: string; from?: string };
  [key: string]: unknown;
}

export const RECIPES = [
  ...readdirSync('recipes', { withFileTypes: true })
    .filter((d) => d.isDirectory() && readdirSync(join('recipes', d.name)).includes('recipe.toml'))
    .map((d) => join('recipes', d.name, 'recipe.toml')),
  ...readdirSync('test/fixtures/sparkrun').map((f) => join('test/fixtures/sparkrun', f)),
];
/** What npm test launches: one recipe of each stack from recipes/, and the overlay's sparkrun seed (the YAML reader); test:long launches the rest. */
export const ONE_OF_EACH = RECIPES.filter((r) => /sglang-(aiden16|mia)[/.]/.test(r));
// refs/main names another snapshot than the aiden16 recipe's SPARK_ENGRAM_DIR: the rule that
// picks one of the two must be the same on both sides.
export const MAIN = 'e'.repeat(40);
export const STABLE = 'f'.repeat(40);

export interface Case {
  recipe: string;
  flags: string[];
  /** Nodes beyond the recipe's required_nodes (they stay idle). */
  idle?: number;
  /** hf_cache as written in the cluster file: `~/…` is each node's home. */
  tildeCache?: boolean;
}

/** A cluster file for the case, and the home directory of this machine and of every node. */
async function clusterFor(c: Case): Promise<{ cluster: string; home: string }> {
  const { recipe } = await readRecipe(c.recipe);
  const hosts = Array.from({ length: recipe.requiredNodes + (c.idle ?? 0) }, (_, i) => `h${i + 1}`);
  const cache = hfCacheWith(recipe.model, MAIN, { main: MAIN, stable: STABLE });
  // With `~`, the cache is the home: the fake nodes share this machine's, so both sides know it.
  const home = c.tildeCache ? cache : tempDir('spark-home-');
  const fabric = hosts.map((_, i) => `10.77.0.${i + 1}`);
  return {
    cluster: writeCluster({ name: `same-${hosts.length}`, hosts, fabric, hfCache: c.tildeCache ? '~' : cache }),
    home,
  };
}

const started = (calls: FakeCall[], sub: string[]) =>
  calls.filter((c) => c.prog === 'docker' && sub.every((s, i) => c.argv[i] === s));

/** The node's plan once the launch has detected its GID index (the fake `spark gid` answers 3). */
function withDetectedGid(n: NodeDoc): NodeDoc {
  const at = n.argv.indexOf(`NODE_RANK=${n.rank}`) - 1;
  const argv = [...n.argv.slice(0, at), '-e', 'B12X_ROCE_GID_INDEX=3', ...n.argv.slice(at)];
  return { ...n, argv, env: { ...n.env, B12X_ROCE_GID_INDEX: '3' }, commandLine: shJoin(argv) };
}

/** The dry run's plan, then a launch of the same inputs on fake nodes: its plan and its calls. */
export async function bothSides(c: Case): Promise<{ dry: PlanDoc; run: PlanDoc; calls: FakeCall[]; docker: string }> {
  const fake = fakeNodes();
  const { cluster, home } = await clusterFor(c);
  const docker = join(fake.bin, 'docker');
  const env = fake.env({}, { HOME: home, SPARK_DOCKER: docker });
  // Healthy once every started node's log stream is up, as on a real boot (minutes, not ms).
  const following = () => started(fake.calls(), ['logs']).length;
  const health = await healthServer(0, () => following() > 0 && following() === started(fake.calls(), ['run']).length);
  try {
    const common = [c.recipe, '--cluster', cluster, '--json', '--health-url', health.url, ...c.flags];
    const dry = await cli(['launch', ...common, '--dry-run'], env);
    assert.equal(dry.code, 0, dry.stderr);
    // The fake nodes hold none of the recipes' files: preflight finds errors there, hence --force.
    const run = await cli(['launch', ...common, '--interval', '0.05', '--timeout', '20', '--force'], env);
    assert.equal(run.code, 0, run.stderr);
    return {
      dry: JSON.parse(dry.stdout) as PlanDoc,
      run: JSON.parse(run.stdout) as PlanDoc,
      calls: fake.calls(),
      docker,
    };
  } finally {
    await health.close();
  }
}

export function assertSamePlan(c: Case, { dry, run, calls, docker }: Awaited<ReturnType<typeof bothSides>>): void {
  const what = `${c.recipe} ${c.flags.join(' ')}`;
  const detects = dry.notes.some((n) => n.startsWith('B12X_ROCE_GID_INDEX is detected on each node at launch'));
  const expected = detects ? dry.nodes.map(withDetectedGid) : dry.nodes;
  const { healthy, seconds, preflight, notes: runNotes, nodes: runNodes, ...runRest } = run;
  const dryRest: Record<string, unknown> = { ...dry };
  delete dryRest.notes;
  delete dryRest.nodes;
  const dryNotes = dry.notes;
  assert.equal(healthy, true);
  assert.ok(typeof seconds === 'number' && typeof preflight === 'object');
  assert.deepEqual(runRest, dryRest, what);
  assert.deepEqual(runNodes, expected, what);
  // The dry run's notes add only what it assumed (its own home, no GID, the files' warnings).
  assert.deepEqual(
    runNotes,
    dryNotes.filter((n) => runNotes.includes(n)),
    what,
  );
  for (const n of expected) {
    const on = (sub: string[]) => started(calls, sub).filter((call) => call.host === n.host);
    assert.equal(n.argv[0], docker, `${what}: node ${n.rank} runs the launch's docker`);
    assert.deepEqual(
      on(['run']).map((call) => [docker, ...call.argv]),
      [n.argv],
      `${what}: node ${n.rank} docker run`,
    );
    assert.deepEqual(
      on(['rm']).map((call) => call.argv),
      [['rm', n.container]],
      `${what}: node ${n.rank} docker rm`,
    );
    assert.deepEqual(
      on(['container', 'inspect']).map((call) => call.argv.at(-1)),
      [n.container],
      `${what}: node ${n.rank} inspect`,
    );
    assert.deepEqual(
      on(['logs']).map((call) => call.argv),
      [['logs', '--follow', n.container]],
      `${what}: node ${n.rank} logs`,
    );
  }
  const runOn = new Set(started(calls, ['run']).map((call) => call.host));
  assert.deepEqual(
    [...runOn].sort(),
    expected.map((n) => n.host).sort(),
    `${what}: docker run on the planned nodes only`,
  );
}
