// Host paths the container mounts must exist on the node that runs it.
import { existsSync } from 'node:fs';
import { at, ENGINES, hostPath, type Mount } from '../../recipes/index.js';
import { defineRule, finding, whereNode } from '../rule.js';
import type { PreflightContext } from '../types.js';

/** Whether anything the container runs names a path inside the mount. */
export function mountReferenced(ctx: PreflightContext, mount: Mount): boolean {
  const inside = (s: string) => s === mount.container || s.startsWith(mount.container.replace(/\/$/, '') + '/');
  const words = [...(ctx.recipe.entrypoint ?? []), ...ctx.recipe.args, ...[...ctx.env.values()].map((v) => v.value)];
  return words.some((w) => w.split(/[=,:\s]/).some(inside));
}

export const hostPaths = defineRule({
  id: 'mounts.host-path',
  title: 'every extra_mounts host path (and the cluster hf_cache) exists on this node',
  engines: ENGINES,
  severity: 'error',
  also: 'warn when nothing in the entrypoint, args or environment refers to the missing mount (a cache directory)',
  scope: 'local-node',
  evidence:
    'docker -v creates a missing host path as an empty root-owned directory, so a missing wrapper script becomes a ' +
    "directory and the entrypoint fails minutes into the boot (domain.md failure 10; seed: dsv41 recipe's wrapper).",
  fix: 'create the path on this node (copy the script, mkdir the cache) or correct host = "…"',
  check(ctx) {
    const out = [];
    ctx.recipe.extraMounts.forEach((m) => {
      const host = hostPath(m.host, ctx.home, ctx.cwd);
      if (existsSync(host)) return;
      const used = mountReferenced(ctx, m);
      out.push(
        finding(this, {
          severity: used ? 'error' : 'warn',
          message:
            `extra_mounts host ${m.host} (${host}) does not exist on ${whereNode(ctx)}` +
            (used
              ? `; the container uses ${m.container}, which docker would mount as an empty directory`
              : '; docker would create it as an empty root-owned directory'),
          where: at(ctx.recipe.file, m.line),
        }),
      );
    });
    const c = ctx.cluster;
    if (c?.hfCache !== undefined && !existsSync(hostPath(c.hfCache, ctx.home, ctx.cwd))) {
      out.push(
        finding(this, {
          message: `hf_cache ${c.hfCache} does not exist on ${whereNode(ctx)}: the container would see an empty Hugging Face cache`,
          where: at(c.file, c.document.locations.get('hf_cache')?.line),
          fix: 'mount the NAS (or create the cache) on this node, or correct hf_cache',
        }),
      );
    }
    return out;
  },
});
