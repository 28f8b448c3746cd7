// spark on every node is the spark of this machine: the one `spark fanout install` put there
// from this machine's bundle. A bundled spark names its commit (`0.1.0+<commit>`); a checkout
// or an npm install names the package version only, and then only that is compared.
import { baseVersion, versionString } from '../../bundle/manifest.js';
import { nodeLabel } from '../../preflight-api/node.js';
import { defineRule, finding } from '../../preflight-api/rule.js';

/** Whether a node's `spark --version` is this machine's (`local`): the same version, and the same commit when both name one. */
export function sameSparkAs(local: string, node: string): boolean {
  if (baseVersion(local) !== baseVersion(node)) return false;
  const [, a] = local.split('+');
  const [, b] = node.split('+');
  return a === undefined || b === undefined || a === b;
}

export const sparkVersion = defineRule({
  id: 'nodes.spark-version',
  title: 'spark on every node is the version this machine runs',
  severity: 'error',
  scope: 'cluster',
  evidence:
    'This machine plans the launch (ranks, Engram rows, the wrapper line) and the nodes run spark wrapper, spark gid ' +
    'and spark pack with their own copy; a node left on an older bundle after an install that failed there splits ' +
    'rows or reads packs by other rules than the plan assumed.',
  fix: "install this machine's bundle on the node: spark bundle --out spark.tgz && spark fanout install spark.tgz --cluster FILE",
  check(ctx) {
    const local = versionString();
    const out = [];
    for (const c of ctx.checked) {
      const v = c.view?.facts.spark;
      if (v === undefined || sameSparkAs(local, v)) continue;
      out.push(
        finding(this, {
          message: `${nodeLabel(c.node)} runs spark ${v || '(no version)'}, this machine runs ${local}`,
          where: nodeLabel(c.node),
          node: { rank: c.node.rank, host: c.node.host },
        }),
      );
    }
    return out;
  },
});
