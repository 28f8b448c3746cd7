// Host paths the container mounts must exist on the node that runs it, and be what the
// container expects there (a file where it runs a script).
import { posix } from 'node:path';
import { at, relativeHostProblem, type Mount } from '../../recipes/index.js';
import { defineRule, finding, whereNode } from '../rule.js';
import { hfCacheHost, mountHost, wrapperScript } from '../node-paths.js';
import type { PreflightContext } from '../types.js';
import { shJoin } from '../../remote/shell.js';

/** Whether anything the container runs names a path inside the mount. */
export function mountReferenced(ctx: PreflightContext, mount: Mount): boolean {
  const inside = (s: string) => s === mount.container || s.startsWith(mount.container.replace(/\/$/, '') + '/');
  const words = [...(ctx.recipe.entrypoint ?? []), ...ctx.recipe.args, ...[...ctx.env.values()].map((v) => v.value)];
  return words.some((w) => w.split(/[=,:\s]/).some(inside));
}

export const hostPaths = defineRule({
  id: 'mounts.host-path',
  title: 'every extra_mounts host path (and the cluster hf_cache) exists on the node',
  severity: 'error',
  also: 'warn when nothing in the entrypoint, args or environment refers to the missing mount (a cache directory)',
  scope: 'local-node',
  evidence:
    'docker -v creates a missing host path as an empty root-owned directory, so a missing wrapper script becomes a ' +
    "directory and the entrypoint fails minutes into the boot (docs/failures.md 10; recipes/dsv41-flash-4x-sglang-aiden16's wrapper).",
  fix: 'create the path on that node (copy the script, mkdir the cache) or correct host = "…"',
  check(ctx) {
    const out = [];
    for (const m of ctx.recipe.extraMounts) {
      // What launch refuses, preflight reports in the same words (never resolved against this directory).
      const relative = relativeHostProblem(m.host);
      if (relative) {
        out.push(
          finding(this, {
            message: `extra_mounts host ${relative}`,
            where: at(ctx.recipe.file, m.line),
            fix: 'write the absolute path the file has on every node (or ~/…)',
          }),
        );
        continue;
      }
      const host = mountHost(ctx, m);
      if (ctx.view!.path(host).kind !== 'missing') continue;
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
    }
    const c = ctx.cluster;
    const hf = hfCacheHost(ctx);
    if (c && hf !== undefined && ctx.view!.path(hf).kind === 'missing') {
      out.push(
        finding(this, {
          message: `hf_cache ${c.hfCache} does not exist on ${whereNode(ctx)}: the container would see an empty Hugging Face cache`,
          where: at(c.file, c.locate('hfCache')),
          fix: 'mount the NAS (or create the cache) on that node, or correct hf_cache',
        }),
      );
    }
    return out;
  },
});

/** A mount the container uses as a file: the script its entrypoint runs, or a path with a file extension. */
export function meantAsFile(ctx: PreflightContext, m: Mount): boolean {
  const script = wrapperScript(ctx.recipe.entrypoint);
  if (script !== undefined && posix.normalize(script) === posix.normalize(m.container)) return true;
  return (
    /\.(sh|bash|py|json|toml|ya?ml|conf|cfg|txt|env)$/.test(m.container) ||
    /\.(sh|py|json|toml|ya?ml|conf|cfg|txt|env)$/.test(m.host)
  );
}

export const fileIsDirectory = defineRule({
  id: 'mounts.file-is-directory',
  title: 'a read-only mount meant as a file (the wrapper script) is a file on the node, not a directory',
  severity: 'error',
  scope: 'local-node',
  evidence:
    'docker -v once ran with the wrapper script missing and created its host path as an empty root-owned directory; ' +
    'the path then exists, so every later launch mounts a directory where `sh /aiden4x-launch.sh` expects a script ' +
    '(docs/failures.md 10; recipes/dsv41-flash-4x-sglang-aiden16 mounts its wrapper read-only).',
  fix: 'remove the directory docker created (sudo rmdir PATH) and copy the file there',
  check(ctx) {
    return ctx.recipe.extraMounts
      .filter((m) => m.readOnly && meantAsFile(ctx, m))
      .filter((m) => ctx.view!.path(mountHost(ctx, m)).kind === 'dir')
      .map((m) =>
        finding(this, {
          message:
            `extra_mounts host ${m.host} is a directory on ${whereNode(ctx)}, but the container uses ${m.container} as a file` +
            (wrapperScript(ctx.recipe.entrypoint) === m.container ? ' (the entrypoint runs it)' : ''),
          where: at(ctx.recipe.file, m.line),
          fix: `remove the directory on that node (${shJoin(['sudo', 'rmdir', mountHost(ctx, m)])}) and copy the file there`,
        }),
      );
  },
});
