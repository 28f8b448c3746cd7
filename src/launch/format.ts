// A launch plan for people (shell lines to run on each node) and for machines (JSON).
import type { LaunchPlan } from './plan.js';
import { shJoin, shLines } from '../remote/shell.js';

/** The JSON form: contract keys `nodes[].{rank, host, argv, env}`, plus what helps scripts. */
export function planJson(plan: LaunchPlan): Record<string, unknown> {
  return {
    recipe: plan.recipe,
    cluster: plan.cluster,
    engine: plan.engine,
    image: plan.image,
    world: plan.world,
    head: plan.head,
    rendezvous: plan.rendezvous,
    port: plan.port,
    model: plan.model,
    healthUrl: plan.healthUrl,
    notes: plan.notes,
    nodes: plan.nodes.map((n) => ({
      rank: n.rank,
      host: n.host,
      argv: n.argv,
      env: n.env,
      container: n.container,
      head: n.head,
      fabricAddr: n.fabricAddr,
      distAddr: n.distAddr,
      commandLine: shJoin(n.argv),
    })),
  };
}

export function formatPlan(plan: LaunchPlan): string {
  const head = plan.nodes[plan.head]!;
  const out: string[] = [
    `# ${plan.recipeName ?? plan.recipe} (${plan.recipe})`,
    `# on ${plan.clusterName} (${plan.cluster}): ${plan.world} node(s), head ${head.host}, ${plan.engine}, ${plan.image}`,
    plan.model.revision !== undefined
      ? `# model ${plan.model.id} @ ${plan.model.revision} (${plan.model.from}): ${plan.model.path}`
      : `# model ${plan.model.path}`,
    `# rendezvous ${plan.rendezvous}; health ${plan.healthUrl}`,
  ];
  for (const note of plan.notes) out.push(`# note: ${note}`);
  for (const n of plan.nodes) {
    // docker run -d --name NAME on the first line, then one option per line.
    out.push('', `# node ${n.rank}: run on ${n.host} (${n.distAddr})${n.head ? ', head' : ''}`, shLines(n.argv, 5));
  }
  return out.join('\n');
}
