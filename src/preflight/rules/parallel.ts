// Parallelism against the cluster and the model: one rank per node, and TP must divide the
// dimensions it splits.
import { at, ENGINES } from '../../recipes/index.js';
import { defineRule, finding, whereKey } from '../rule.js';
import type { PreflightContext } from '../types.js';

/** Tensor-parallel size: the recipe's key (what the launcher passes), else 1. */
export function tensorParallel(ctx: PreflightContext): number {
  return ctx.recipe.tensorParallelSize ?? 1;
}

export const nodes = defineRule({
  id: 'parallel.nodes',
  title: 'tensor_parallel_size × pipeline_parallel_size = required_nodes = the nodes in the cluster',
  engines: ENGINES,
  severity: 'error',
  also: 'warn when the cluster has more nodes than the recipe needs',
  scope: 'files',
  evidence:
    'These stacks run one rank per node (one GB10 GPU each); the eugr recipe says to bump tensor_parallel_size and ' +
    'required_nodes together for 3 nodes (seed: eugr agent recipe; domain.md failure 6).',
  fix: 'make tensor_parallel_size × pipeline_parallel_size equal required_nodes',
  check(ctx) {
    const out = [];
    const tp = tensorParallel(ctx);
    const pp = ctx.recipe.pipelineParallelSize;
    if (tp * pp !== ctx.world) {
      out.push(
        finding(this, {
          message: `tensor_parallel_size ${tp} × pipeline_parallel_size ${pp} = ${tp * pp} ranks, but required_nodes = ${ctx.world} (one rank per node)`,
          where: whereKey(ctx, ctx.recipe.tensorParallelSize === undefined ? 'required_nodes' : 'tensor_parallel_size'),
        }),
      );
    }
    const c = ctx.cluster;
    if (c && c.nodes.length !== ctx.world) {
      const fewer = c.nodes.length < ctx.world;
      out.push(
        finding(this, {
          severity: fewer ? 'error' : 'warn',
          message: `the recipe needs ${ctx.world} nodes and cluster ${c.name} has ${c.nodes.length}${fewer ? '' : ` (the first ${ctx.world} would run it)`}`,
          where: at(c.file, c.nodes[c.nodes.length - 1]?.line),
          fix: fewer ? 'use a cluster file with enough nodes, or a recipe for fewer nodes' : 'use a cluster file listing exactly the nodes to use',
        }),
      );
    }
    return out;
  },
});

export const tpDivides = defineRule({
  id: 'parallel.tp-divides',
  title: 'TP divides the attention heads, hidden size and vocabulary of config.json',
  engines: ENGINES,
  severity: 'error',
  scope: 'snapshot',
  evidence:
    'Heads 64, hidden 5120 and vocab 129280 are not divisible by 3; TP=3 needs the padding adapter ' +
    'adapter/tp3_pad.py (seed: mia-tp4 env).',
  fix: 'use a TP that divides them (1, 2 or 4 for DeepSeek-V4), or an image with a padding adapter and --skip parallel.tp-divides',
  async check(ctx) {
    const config = await ctx.modelConfig();
    if (!config) return { skip: 'no config.json: pass --snapshot DIR (or --cluster with hf_cache)' };
    const tp = tensorParallel(ctx);
    const dims: [string, number | undefined][] = [
      ['num_attention_heads', config.numAttentionHeads],
      ['hidden_size', config.hiddenSize],
      ['vocab_size', config.vocabSize],
    ];
    const bad = dims.filter(([, v]) => v !== undefined && v % tp !== 0).map(([k, v]) => `${k} ${v}`);
    if (bad.length === 0) return [];
    return [
      finding(this, {
        message: `tensor_parallel_size ${tp} does not divide ${bad.join(', ')} (${config.path})`,
        where: whereKey(ctx, 'tensor_parallel_size'),
      }),
    ];
  },
});
