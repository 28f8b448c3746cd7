// What must agree across the nodes, read from every node at once: each node answered, runs the
// same image, the same NVIDIA driver, CUDA and kernel, the same spark, and keeps the same time.
// Each finding names the node that differs from the head.
import { nodeLabel } from '../../preflight-api/node.js';
import { defineRule, finding } from '../../preflight-api/rule.js';
import type { CheckedNode, PreflightContext } from '../../preflight-api/types.js';
import type { NodeFacts } from '../../preflight-api/node-facts.js';

const ref = (c: CheckedNode) => ({ rank: c.node.rank, host: c.node.host });

function answered(ctx: PreflightContext): CheckedNode[] {
  return ctx.checked.filter((c) => c.view);
}

/** The head's entry (else the first node that answered), against which the others are compared. */
function reference(ctx: PreflightContext): CheckedNode | undefined {
  const up = answered(ctx);
  return up.find((c) => c.node.rank === ctx.placement?.head.rank) ?? up[0];
}

export const reachable = defineRule({
  id: 'nodes.reachable',
  title: 'every node that runs the recipe answers over ssh in time',
  severity: 'error',
  scope: 'cluster',
  evidence:
    'The launch starts every node over ssh (BatchMode: no password prompt); a node that does not answer fails the ' +
    'launch, and its own checks cannot run. The others are still checked.',
  fix: 'make `ssh -o BatchMode=yes HOST true` work (keys, host key, the node up), or raise --node-timeout',
  check(ctx) {
    return ctx.checked
      .filter((c) => c.unreachable !== undefined)
      .map((c) =>
        finding(this, {
          message: `${nodeLabel(c.node)} did not answer: ${c.unreachable}; its node checks did not run`,
          where: nodeLabel(c.node),
          node: ref(c),
        }),
      );
  },
});

export const sameImage = defineRule({
  id: 'nodes.same-image',
  title: "the recipe's image is present on every node, with the same id (digest) everywhere",
  severity: 'error',
  also: 'warn when docker cannot be asked on a node',
  scope: 'cluster',
  evidence:
    'docker run pulls a missing image at launch (33.3 GB for the dsv41 overlay), and a tag pulled at different times ' +
    'can name different builds; ranks of different builds disagree at the first collective (docs/failures.md 8: ' +
    'images that differ across nodes).',
  fix: 'pull the same image on every node (docker pull IMAGE), or copy it (docker save IMAGE | ssh NODE docker load)',
  check(ctx) {
    const image = ctx.recipe.dockerImage;
    const head = reference(ctx);
    const idOf = (c: CheckedNode) => {
      const f = c.view!.image(image);
      return 'id' in f ? f.id : undefined;
    };
    const want = head ? idOf(head) : undefined;
    const out = [];
    for (const c of answered(ctx)) {
      const f = c.view!.image(image);
      if ('missing' in f) {
        out.push(
          finding(this, {
            message: `${image} is not on ${nodeLabel(c.node)}: docker would pull it at launch`,
            where: nodeLabel(c.node),
            node: ref(c),
          }),
        );
      } else if ('error' in f) {
        out.push(
          finding(this, {
            severity: 'warn',
            message: `could not ask docker on ${nodeLabel(c.node)} about ${image}: ${f.error}`,
            where: nodeLabel(c.node),
            node: ref(c),
          }),
        );
      } else if (want !== undefined && c !== head && f.id !== want) {
        out.push(
          finding(this, {
            message: `${image} on ${nodeLabel(c.node)} is ${short(f.id)}, on the head ${nodeLabel(head!.node)} ${short(want)}`,
            where: nodeLabel(c.node),
            node: ref(c),
          }),
        );
      }
    }
    return out;
  },
});

function short(id: string): string {
  return id.replace(/^(sha256:[0-9a-f]{12})[0-9a-f]+$/, '$1');
}

const VERSIONS: [keyof NodeFacts, string][] = [
  ['driver', 'NVIDIA driver'],
  ['cuda', 'CUDA'],
  ['kernel', 'kernel'],
];

export const sameVersions = defineRule({
  id: 'nodes.same-versions',
  title: 'every node runs the same NVIDIA driver, CUDA and kernel versions',
  severity: 'error',
  also: 'warn when a node has no nvidia-smi to ask',
  scope: 'cluster',
  evidence:
    'NCCL and the CUDA graphs of the ranks must agree; a node left on another driver or kernel after an update ' +
    'fails the first collective or loads different kernels (docs/failures.md 8: kernel/driver mismatch across nodes).',
  fix: 'update the node that differs to the versions the others run (and reboot it)',
  check(ctx) {
    const head = reference(ctx);
    if (!head) return [];
    const out = [];
    for (const c of answered(ctx)) {
      const f = c.view!.facts;
      if (f.driver === undefined) {
        out.push(
          finding(this, {
            severity: 'warn',
            message: `nvidia-smi gave no driver version on ${nodeLabel(c.node)}`,
            where: nodeLabel(c.node),
            node: ref(c),
          }),
        );
      }
      if (c === head) continue;
      const differ = VERSIONS.filter(
        ([k]) => f[k] !== undefined && head.view!.facts[k] !== undefined && f[k] !== head.view!.facts[k],
      );
      if (differ.length === 0) continue;
      out.push(
        finding(this, {
          message:
            `${nodeLabel(c.node)} runs ${differ.map(([k, name]) => `${name} ${String(f[k])}`).join(', ')}; ` +
            `the head ${nodeLabel(head.node)} runs ${differ.map(([k, name]) => `${name} ${String(head.view!.facts[k])}`).join(', ')}`,
          where: nodeLabel(c.node),
          node: ref(c),
        }),
      );
    }
    return out;
  },
});

export const sameSpark = defineRule({
  id: 'nodes.same-spark',
  title: 'every node that has spark runs the same version of it',
  severity: 'error',
  also: 'warn for a node without spark when the others have it',
  scope: 'cluster',
  evidence:
    "spark computes each rank's Engram rows and GID index on its node (spark wrapper, spark gid, spark pack); " +
    'two versions may split the tables differently, and the overlay refuses ranges that do not tile.',
  fix: 'install the same spark on every node (npm install -g at the same version), or point --spark-bin at it',
  check(ctx) {
    const up = answered(ctx);
    const versions = [...new Set(up.map((c) => c.view!.facts.spark).filter((v): v is string => v !== undefined))];
    if (versions.length === 0) return [];
    const head = reference(ctx)!;
    const want = head.view!.facts.spark ?? versions[0]!;
    const out = [];
    for (const c of up) {
      const v = c.view!.facts.spark;
      if (v === undefined) {
        out.push(
          finding(this, {
            severity: 'warn',
            message: `spark is not installed on ${nodeLabel(c.node)} (the others run ${want})`,
            where: nodeLabel(c.node),
            node: ref(c),
          }),
        );
      } else if (v !== want) {
        out.push(
          finding(this, {
            message: `${nodeLabel(c.node)} runs spark ${v || '(no version)'}, the head runs ${want}`,
            where: nodeLabel(c.node),
            node: ref(c),
          }),
        );
      }
    }
    return out;
  },
});

/** Beyond this the node clocks are not kept in step (no NTP): an error. */
export const SKEW_ERROR_MS = 10_000;
/** Beyond this (plus the ssh round trip) logs across nodes no longer line up: a warning. */
export const SKEW_WARN_MS = 2_000;

/** The node clock's offset from this machine's, and how sure we are of it (half the round trip, plus 1 s for whole seconds). */
function offset(f: NodeFacts): { ms: number; error: number } {
  const mid = (f.sentMs + f.receivedMs) / 2;
  return { ms: f.clockMs - mid, error: (f.receivedMs - f.sentMs) / 2 + (f.clockMs % 1000 === 0 ? 1000 : 0) };
}

export const clockSkew = defineRule({
  id: 'nodes.clock-skew',
  title: "every node's clock agrees with the head's",
  severity: 'error',
  also: `warn above ${SKEW_WARN_MS / 1000} s`,
  scope: 'cluster',
  evidence:
    `Node clocks more than ${SKEW_ERROR_MS / 1000} s apart mean time sync is off: logs of one failed boot cannot be ` +
    'put in order across nodes, NFS attribute caching and TLS validity checks misjudge times.',
  fix: 'enable time sync on the node (timedatectl set-ntp true; chrony or systemd-timesyncd)',
  check(ctx) {
    const head = reference(ctx);
    if (!head) return [];
    const h = offset(head.view!.facts);
    const out = [];
    for (const c of answered(ctx)) {
      if (c === head) continue;
      const o = offset(c.view!.facts);
      const skew = Math.abs(o.ms - h.ms) - o.error - h.error;
      if (skew <= SKEW_WARN_MS) continue;
      out.push(
        finding(this, {
          severity: skew > SKEW_ERROR_MS ? 'error' : 'warn',
          message: `${nodeLabel(c.node)}'s clock is ${((o.ms - h.ms) / 1000).toFixed(1)} s off the head's (${nodeLabel(head.node)})`,
          where: nodeLabel(c.node),
          node: ref(c),
        }),
      );
    }
    return out;
  },
});
