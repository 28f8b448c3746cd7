// Host paths the container mounts must exist on the node that runs it, and be what the
// container expects there (a file where it runs a script). The mounts are the launch plan's
// own (plannedContainer): whether docker refuses a missing source (--mount) or creates it as an
// empty directory (-v) is the plan's choice, and the finding says what that launch would do.
import { posix } from 'node:path';
import { at, missingSourceOutcome, type Bind } from '../../recipes/index.js';
import { defineRule, finding, whereNode } from '../../preflight-api/rule.js';
import { nodeBinds, plannedContainer, wrapperScript } from '../../preflight-api/node-paths.js';
import type { PreflightContext } from '../../preflight-api/types.js';
import { shJoin } from '../../remote/shell.js';

/** Whether anything the container runs names a path inside the bind's container path. */
export function mountReferenced(ctx: PreflightContext, bind: Pick<Bind, 'target'>): boolean {
  const inside = (s: string) => s === bind.target || s.startsWith(bind.target.replace(/\/$/, '') + '/');
  const words = [
    ...(plannedContainer(ctx).program ?? []),
    ...ctx.recipe.args,
    ...[...ctx.env.values()].map((v) => v.value),
  ];
  return words.some((w) => w.split(/[=,:\s]/).some(inside));
}

export const hostPaths = defineRule({
  id: 'mounts.host-path',
  title: 'every host path the container mounts (extra_mounts and the cluster hf_cache) exists on the node',
  severity: 'error',
  also: 'warn when a writable extra_mount is missing and nothing in the entrypoint, args or environment refers to it (a cache directory docker creates)',
  scope: 'local-node',
  evidence:
    'The launch mounts hf_cache and every read-only extra_mount with --mount, which refuses to start the container when the ' +
    'host path is missing, and a writable extra_mount with -v, which creates a missing host path as an empty root-owned ' +
    'directory: a missing wrapper script then becomes a directory and the entrypoint fails minutes into the boot ' +
    "(docs/failures.md 10; recipes/dsv41-flash-4x-sglang-aiden16's wrapper).",
  fix: 'create the path on that node (copy the script, mkdir the cache) or correct host = "…"',
  check(ctx) {
    const out = [];
    for (const b of plannedContainer(ctx).binds) {
      const where = at(b.at.file, b.at.line);
      // What launch refuses, preflight reports in the same words (never resolved against this directory).
      if (b.source === undefined) {
        out.push(
          finding(this, {
            message: `${b.key} ${b.problem!}`,
            where,
            fix: 'write the absolute path the file has on every node (or ~/…)',
          }),
        );
        continue;
      }
      if (ctx.view!.path(b.source).kind !== 'missing') continue;
      if (b.from.kind === 'hf_cache') {
        out.push(
          finding(this, {
            message: `hf_cache ${b.written} (${b.source}) does not exist on ${whereNode(ctx)}: ${missingSourceOutcome(b)}`,
            where: at(b.at.file, ctx.cluster?.locate('hfCache')),
            fix: 'mount the NAS (or create the cache) on that node, or correct hf_cache',
          }),
        );
        continue;
      }
      const used = mountReferenced(ctx, b);
      out.push(
        finding(this, {
          severity: b.mustExist || used ? 'error' : 'warn',
          message:
            `extra_mounts host ${b.written} (${b.source}) does not exist on ${whereNode(ctx)}: ${missingSourceOutcome(b)}` +
            (used && !b.mustExist ? `, and the container uses ${b.target}, which would be that empty directory` : ''),
          where,
        }),
      );
    }
    return out;
  },
});

/** A bind the container uses as a file: the script its program runs, or a path with a file extension. */
export function meantAsFile(ctx: PreflightContext, b: Bind & { source: string }): boolean {
  const script = wrapperScript(plannedContainer(ctx).program);
  if (script !== undefined && posix.normalize(script) === posix.normalize(b.target)) return true;
  return (
    /\.(sh|bash|py|json|toml|ya?ml|conf|cfg|txt|env)$/.test(b.target) ||
    /\.(sh|py|json|toml|ya?ml|conf|cfg|txt|env)$/.test(b.source)
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
    const script = wrapperScript(plannedContainer(ctx).program);
    return nodeBinds(ctx)
      .filter((b) => b.from.kind === 'extra_mount' && b.readOnly && meantAsFile(ctx, b))
      .filter((b) => ctx.view!.path(b.source).kind === 'dir')
      .map((b) =>
        finding(this, {
          message:
            `extra_mounts host ${b.written} is a directory on ${whereNode(ctx)}, but the container uses ${b.target} as a file` +
            (script === b.target ? ' (the entrypoint runs it)' : ''),
          where: at(b.at.file, b.at.line),
          fix: `remove the directory on that node (${shJoin(['sudo', 'rmdir', b.source])}) and copy the file there`,
        }),
      );
  },
});
