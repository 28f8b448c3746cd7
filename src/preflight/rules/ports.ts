// Ports the head node will listen on must be free there (the node's facts say: a bind test
// with spark, the listening sockets of /proc/net/tcp with the sh probe).
import { DEFAULT_DIST_PORT, defaultPort, servingPort } from '../../recipes/index.js';
import { defineRule, finding, whereNode } from '../../preflight-api/rule.js';
import type { PreflightContext } from '../../preflight-api/types.js';

/** The ports this node listens on: the serving port and the rendezvous port, on the head only. */
export function headPorts(ctx: PreflightContext): { port: number; what: string }[] {
  const isHead = ctx.placement
    ? ctx.node?.rank === ctx.placement.head.rank
    : ctx.node?.rank === null || ctx.node?.rank === 0;
  if (!isHead) return [];
  const serving = servingPort(ctx.recipe);
  const dist = ctx.cluster?.distPort ?? DEFAULT_DIST_PORT;
  return [
    {
      port: serving,
      what: `the serving port${serving === defaultPort(ctx.recipe.engine) && ctx.recipe.port === undefined ? ` (${ctx.recipe.engine} default)` : ''}`,
    },
    { port: dist, what: 'the rendezvous port (--dist-init-addr)' },
  ];
}

export const ports = defineRule({
  id: 'node.ports',
  title: 'the serving and rendezvous ports are free on the head node',
  severity: 'error',
  also: 'warn when the port is privileged and preflight may not bind it',
  scope: 'local-node',
  evidence:
    'The head binds the serving port and the --dist-init-addr port (recipes/dsv41-flash-4x-sglang-aiden16: port 30000, :25000); a ' +
    'leftover container holding either fails the boot (docs/failures.md 8).',
  fix: 'stop whatever holds the port (docker ps; ss -ltnp), or change port / dist_port',
  check(ctx) {
    const wanted = headPorts(ctx);
    if (wanted.length === 0) return [];
    const results = wanted.map((w) => ({ ...w, state: ctx.view!.port(w.port) }));
    return results
      .filter((r) => r.state !== 'free')
      .map((r) =>
        finding(this, {
          severity: r.state === 'in-use' ? 'error' : 'warn',
          message:
            r.state === 'in-use'
              ? `port ${r.port}, ${r.what}, is in use on ${whereNode(ctx)}`
              : `port ${r.port}, ${r.what}, needs privileges to bind on ${whereNode(ctx)}`,
          where: whereNode(ctx),
        }),
      );
  },
});
